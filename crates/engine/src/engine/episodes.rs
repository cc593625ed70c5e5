//! The engine's side of drift episodes: a drift state that held for the settle time is
//! recorded in the store and announced as an Event, and open episodes are kept current.

use super::Engine;
use super::SETTLE_BATCH;
use crate::outputs::Announcement;
use crate::outputs::Outputs;
use crate::settle::Report;
use driftd_core::par;
use driftd_core::report::DriftClass;
use driftd_core::report::DriftEntry;
use driftd_store::{Changer, Ending, EpisodeEnd, EpisodeWrite};

/// The field manager driftd applies with (`driftd reconcile`, `driftd apply`, remediation):
/// a revert it wrote last is driftd's.
const DRIFTD_MANAGER: &str = "driftd";

/// How a drift that ended `how` is recorded, `by` the live object's last writer: a revert
/// driftd's field manager wrote is `reconciled` (the store makes it `remediated` when its
/// remediation applied the object).
fn ending_of(how: EpisodeEnd, by: Option<&str>) -> Ending<'_> {
    match (how, by) {
        (EpisodeEnd::Reverted, Some(DRIFTD_MANAGER)) => Ending {
            how: EpisodeEnd::Reconciled,
            by,
        },
        (how, by) => Ending { how, by },
    }
}
use driftd_watch::WatchControl;

/// Who changed an entry's drifting fields: each field manager its changes cite, with the
/// person an audit event named for that manager's write, and whoever deleted a missing
/// object (no manager).
pub(super) fn changers(entry: &DriftEntry) -> Vec<Changer> {
    let people = entry.who.as_deref().map_or(&[][..], Vec::as_slice);
    let person = |manager: &str, changed_at: &Option<String>| {
        let of_manager = || people.iter().filter(|w| w.manager == manager);
        of_manager()
            .find(|w| w.changed_at == *changed_at)
            .or_else(|| of_manager().next())
            .map(|w| w.user.username.clone())
    };
    let mut changers: Vec<Changer> = entry
        .changes
        .writers()
        .into_iter()
        .map(|(manager, changed_at)| Changer {
            user: person(&manager, &changed_at),
            manager,
            changed_at,
        })
        .collect();
    changers.extend(
        people
            .iter()
            .filter(|w| w.manager.is_empty())
            .map(|w| Changer {
                manager: String::new(),
                changed_at: None,
                user: Some(w.user.username.clone()),
            }),
    );
    changers
}

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// Records (episodes) and announces (Events) every drift state that held for the
    /// settle time.
    pub fn settle_due(&mut self) {
        while self.settle_some() {}
    }

    /// Records and announces at most [`SETTLE_BATCH`] settled states, the longest-held
    /// first, their episodes in one transaction; true if more may be due. The run loop takes
    /// the rest in turns with watch events, so a wave of drift settling at once (a big edit,
    /// a reload) cannot hold `/drift` back for seconds.
    pub(super) fn settle_some(&mut self) -> bool {
        let reports = self
            .publication
            .settling
            .due(self.clock.now(), SETTLE_BATCH);
        if reports.is_empty() {
            return false;
        }
        let more = reports.len() == SETTLE_BATCH;
        let now = self.clock.wall();
        // A state is due only if no comparison since said otherwise, so the entry holds the
        // paths the report's drift stands for. The index is only read here, and only this
        // thread writes it: the entries are read in place rather than copied.
        let index = self.publication.index.read().unwrap();
        let settled: Vec<(Report, &DriftEntry, Vec<String>)> = reports
            .into_iter()
            .filter_map(|report| {
                let entry = index.get(&report.key)?;
                let paths = entry.paths();
                Some((report, entry, paths))
            })
            .collect();
        // Who changed the drifting fields, from the entries' changes; who ended a drift, from
        // the live copy (one unpack per resolved state). Both on every core: a wave of drift
        // settles a thousand at a time.
        let who: Vec<Vec<Changer>> =
            par::map_ordered(&settled, |(report, entry, _)| match report.drift {
                Some(_) => changers(entry),
                None => Vec::new(),
            });
        let pending_endings = &mut self.publication.endings;
        let endings: Vec<Option<(EpisodeEnd, Vec<String>)>> = settled
            .iter()
            .map(|(report, _, _)| {
                let ending = pending_endings.remove(&report.key);
                report
                    .drift
                    .is_none()
                    .then(|| ending.unwrap_or((EpisodeEnd::Reverted, Vec::new())))
            })
            .collect();
        let tracked = &self.wanted.tracked;
        let mut enders = par::map_ordered(
            &settled.iter().zip(&endings).collect::<Vec<_>>(),
            |((report, _, _), ending)| match ending {
                Some((EpisodeEnd::Reverted, fields)) => tracked.last_writer(&report.key, fields),
                _ => None,
            },
        );
        // A commit ended it: by the revision's author.
        for (((_, entry, _), ending), ender) in settled.iter().zip(&endings).zip(&mut enders) {
            if let Some((EpisodeEnd::Committed, _)) = ending {
                *ender = index
                    .revisions()
                    .iter()
                    .find(|r| r.id == entry.revision && r.source == entry.source)
                    .map(|r| r.author.clone());
            }
        }
        let writes: Vec<EpisodeWrite> = settled
            .iter()
            .zip(&who)
            .zip(endings.iter().zip(&enders))
            .map(
                |(((Report { key, drift }, entry, paths), who), (ending, by))| match drift {
                    Some(drift) => EpisodeWrite::Drifting {
                        key,
                        source: &entry.source,
                        class: drift.class.as_str(),
                        at: entry.since.unwrap_or(now),
                        paths,
                        who,
                        replaced: match drift.class {
                            DriftClass::Missing => EpisodeEnd::Deleted,
                            _ => EpisodeEnd::ClassChanged,
                        },
                    },
                    None => EpisodeWrite::Resolved {
                        key,
                        at: now,
                        ending: ending_of(
                            ending
                                .as_ref()
                                .map_or(EpisodeEnd::Reverted, |(how, _)| *how),
                            by.as_deref(),
                        ),
                    },
                },
            )
            .collect();
        match self.store.write_episodes(&writes) {
            Ok(changes) => self.outputs.episodes(&changes),
            Err(err) => {
                let what = if writes
                    .iter()
                    .any(|w| matches!(w, EpisodeWrite::Drifting { .. }))
                {
                    "cannot record drift episode"
                } else {
                    "cannot close drift episode"
                };
                tracing::error!(episodes = writes.len(), error = %err, "{what}");
                self.outputs.store_error(what, &err);
            }
        }
        drop(writes);
        // Each identity unpacks a live copy: on every core, off this thread's serial path (a
        // wave of drift settles a thousand at a time).
        let identities = par::map_ordered(&settled, |(report, _, _)| {
            tracked.live_identity(&report.key)
        });
        for ((Report { key, drift }, entry, paths), live) in settled.iter().zip(&identities) {
            let live = live.as_ref();
            match drift {
                Some(drift) => {
                    tracing::info!(object = %key, class = drift.class.as_str(), paths = ?paths, "drift detected");
                    self.outputs.announce(Announcement::Detected, entry, live);
                }
                None => {
                    tracing::info!(object = %key, "drift resolved");
                    self.outputs.announce(Announcement::Resolved, entry, live);
                }
            }
        }
        more
    }

    /// Starts moving `last_seen` of every open episode to now ([`LastSeen`]; the run loop
    /// calls it every minute and steps it in turns with watch events).
    pub(super) fn start_touching(&mut self) {
        self.publication.last_seen.start(self.clock.wall());
    }

    /// Moves `last_seen` of the next open episodes; true if more are left.
    pub(super) fn touch_some(&mut self) -> bool {
        self.publication
            .last_seen
            .step(&self.store)
            .unwrap_or_else(|err| {
                tracing::error!(error = %err, "cannot update drift episodes");
                self.outputs
                    .store_error("cannot update drift episode", &err);
                false
            })
    }
}
