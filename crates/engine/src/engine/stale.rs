//! The engine's side of stale locks: it keeps the holder pods watched, judges every lock
//! when something it depends on changed (intents, a holder pod's watch event, a Pulumi
//! scan, time), announces locks that became stale, releases automatically what
//! `locks.auto_release_after` allows while this replica leads, and publishes `/locks`.
//!
//! An automatic release is written where the intent lives: this replica's database for a
//! local intent, the cluster log (through `serve`'s writer, [`ClusterRelease`]) for one
//! that came from it, which every replica then imports.

use super::Engine;
use crate::holders::Holders;
use crate::locks::local::LocalHolders;
use crate::locks::release::{ClusterRelease, ClusterReleased, ReleaseOutcome};
use crate::locks::{self, FoundLock, Judged};
use crate::outputs::LockAnnouncement;
use crate::outputs::Outputs;
use crate::Leadership;
use driftd_config::Config;
use driftd_core::report::LockKind;
use driftd_watch::WatchControl;
use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::mpsc;

/// Stale-lock state and settings.
pub(super) struct LockState {
    pub(super) holders: Holders,
    /// Holders that are processes of this host.
    pub(super) local: LocalHolders,
    pulumi_dirs: Vec<PathBuf>,
    /// The last scan's lock files; `None` before the first.
    pulumi: Option<Vec<FoundLock>>,
    scan_period: Duration,
    max_lock_age: Duration,
    auto_release_after: Option<Duration>,
    /// Stale locks already logged, by kind and id.
    seen: BTreeSet<(LockKind, String)>,
    /// Stale locks announced while this replica led: a replica that becomes leader
    /// announces those it had not (Events are the leader's to publish).
    announced: BTreeSet<(LockKind, String)>,
    /// Intents whose automatic release failed: left to people.
    release_failed: BTreeSet<i64>,
    /// Where releases of the cluster log's intents are asked for (`None`: nowhere, they
    /// are left to people), and where the answers come until the run loop takes them.
    release_requests: Option<mpsc::UnboundedSender<ClusterRelease>>,
    release_answers: Option<mpsc::UnboundedReceiver<ClusterReleased>>,
    /// Releases asked of the cluster log and not answered yet, with the lock they free.
    releasing: BTreeMap<i64, Judged>,
    /// Leader-only work (automatic releases) asks it.
    pub(super) leadership: Leadership,
    /// Who this replica is in the history it writes (`driftd/<identity>`).
    pub(super) actor: String,
}

impl LockState {
    pub(super) fn new(config: &Config) -> LockState {
        LockState {
            holders: Holders::default(),
            pulumi_dirs: config.pulumi.lock_roots(),
            pulumi: None,
            scan_period: config.pulumi.scan_period(),
            max_lock_age: config.pulumi.max_lock_age,
            auto_release_after: config.locks.auto_release_after,
            seen: BTreeSet::new(),
            announced: BTreeSet::new(),
            release_failed: BTreeSet::new(),
            local: LocalHolders::of_this_host(),
            release_requests: None,
            release_answers: None,
            releasing: BTreeMap::new(),
            leadership: Leadership::always(),
            actor: "driftd".into(),
        }
    }

    pub(super) fn scan_period(&self) -> Duration {
        self.scan_period
    }

    /// The answers of the cluster log's writer, for the run loop to wait on.
    pub(super) fn take_release_answers(
        &mut self,
    ) -> Option<mpsc::UnboundedReceiver<ClusterReleased>> {
        self.release_answers.take()
    }
}

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// Intents that came from the cluster log are released there: through `requests`,
    /// answered on `answers` (see [`ClusterRelease`]). Without it they are left to people.
    pub fn with_cluster_releases(
        mut self,
        requests: mpsc::UnboundedSender<ClusterRelease>,
        answers: mpsc::UnboundedReceiver<ClusterReleased>,
    ) -> Self {
        self.locks.release_requests = Some(requests);
        self.locks.release_answers = Some(answers);
        self
    }

    /// Reads the Pulumi lock folders (of `pulumi.state_dirs` and `pulumi.lock_dirs`) and
    /// judges locks again.
    pub fn scan_pulumi_locks(&mut self) {
        if self.locks.pulumi_dirs.is_empty() {
            return;
        }
        let found = locks::scan_pulumi(&self.locks.pulumi_dirs);
        if self.locks.pulumi.as_ref() != Some(&found) {
            tracing::debug!(locks = found.len(), "Pulumi lock files scanned");
        }
        self.locks.pulumi = Some(found);
        self.refresh_locks();
    }

    /// Judges every lock: watches the holder pods the locks name, releases what may be
    /// released automatically, announces locks that became stale, publishes `/locks`.
    pub(super) fn refresh_locks(&mut self) {
        let now = self.clock.wall();
        let pulumi = self.locks.pulumi.as_deref().unwrap_or_default();
        let names = locks::holder_names(
            self.wanted.intents.open().iter().map(|o| &o.info),
            pulumi.iter().map(|f| &f.lock),
        );
        self.locks.holders.sync(&names, &mut self.watching.watches);
        let locking = self.wanted.intents.open().iter().map(|o| &o.info);
        let locking = locking.filter(|i| i.state.holds_lock());
        self.locks
            .local
            .refresh(locking.map(|i| (i.holder.as_str(), i.created_at)), now);
        let (holders, local) = (&self.locks.holders, &self.locks.local);
        let mut judged: Vec<Judged> = self
            .wanted
            .intents
            .open()
            .iter()
            .filter_map(|o| locks::judge_intent(&o.info, holders, local, now))
            .collect();
        judged.extend(pulumi.iter().filter_map(|f| {
            locks::judge_pulumi(&f.lock, &f.path, holders, now, self.locks.max_lock_age)
        }));

        if self.locks.auto_release_after.is_some() && self.locks.leadership.is_leader() {
            let due: Vec<Judged> = judged
                .iter()
                .filter(|j| locks::auto_releases(j, now, self.locks.auto_release_after))
                .filter(|j| {
                    j.releasable.is_some_and(|id| {
                        !self.locks.release_failed.contains(&id)
                            && !self.locks.releasing.contains_key(&id)
                    })
                })
                .cloned()
                .collect();
            let mut released_here = false;
            for judged in due {
                released_here |= self.auto_release(judged);
            }
            if released_here {
                // Judged again from the intents as released (this replica's own write does
                // not move its data_version).
                return self.reload_intents();
            }
        }

        let current: BTreeSet<(LockKind, String)> = judged
            .iter()
            .map(|j| (j.lock.kind, j.lock.id.clone()))
            .collect();
        let leading = self.locks.leadership.is_leader();
        for j in &judged {
            let key = (j.lock.kind, j.lock.id.clone());
            if !self.locks.seen.contains(&key) {
                tracing::warn!(kind = %j.lock.kind, source = %j.lock.source, id = %j.lock.id,
                    holder = %j.lock.holder, reason = %j.lock.reason, release = %j.lock.release,
                    "stale lock");
            }
            if leading && self.locks.announced.insert(key) {
                self.outputs
                    .announce_lock(LockAnnouncement::Stale, &j.lock, j.pod.as_ref());
            }
        }
        self.locks.announced.retain(|key| current.contains(key));
        self.locks.seen = current;
        let ready = self.locks.holders.all_listed()
            && (self.locks.pulumi_dirs.is_empty() || self.locks.pulumi.is_some());
        judged.sort_by(|a, b| {
            (a.lock.kind, &a.lock.source, &a.lock.id).cmp(&(
                b.lock.kind,
                &b.lock.source,
                &b.lock.id,
            ))
        });
        self.publication
            .index
            .write()
            .unwrap()
            .set_locks(judged.into_iter().map(|j| j.lock).collect(), ready);
    }

    /// Releases the intent of `judged` (its holder pod is gone, the lock old enough) and
    /// records that this replica did; true when it was released in this database (an intent
    /// of the cluster log is released there, and comes back through the import).
    fn auto_release(&mut self, judged: Judged) -> bool {
        let Some(id) = judged.releasable else {
            return false;
        };
        let after = self
            .locks
            .auto_release_after
            .and_then(|d| jiff::SignedDuration::try_from(d).ok())
            .map(locks::friendly)
            .unwrap_or_default();
        let reason = format!(
            "{}; released automatically: older than {after} (locks.auto_release_after)",
            judged.lock.reason
        );
        let from_cluster = self
            .wanted
            .intents
            .open()
            .iter()
            .any(|o| o.info.id == id && o.info.cluster);
        if from_cluster {
            return self.ask_cluster_release(judged, id, reason);
        }
        match self
            .store
            .auto_release_intent(id, &self.locks.actor, &reason)
        {
            Ok(_) => {
                tracing::warn!(intent = id, source = %judged.lock.source, holder = %judged.lock.holder,
                    actor = %self.locks.actor, %reason, "stale lock released automatically");
                self.announce_released(&judged);
                true
            }
            Err(err) => {
                tracing::error!(intent = id, error = %err, "cannot release stale lock; leaving it to people");
                self.outputs
                    .store_error("cannot release a stale lock", &err);
                self.locks.release_failed.insert(id);
                false
            }
        }
    }

    /// Asks the cluster log's writer to release intent `id`; always false (nothing changed
    /// here yet).
    fn ask_cluster_release(&mut self, judged: Judged, id: i64, reason: String) -> bool {
        let request = ClusterRelease {
            id,
            actor: self.locks.actor.clone(),
            reason,
        };
        let sent = self
            .locks
            .release_requests
            .as_ref()
            .is_some_and(|requests| requests.send(request).is_ok());
        if sent {
            tracing::info!(intent = id, source = %judged.lock.source,
                "releasing stale lock {id} in the cluster log");
            self.locks.releasing.insert(id, judged);
        } else {
            tracing::error!(intent = id, source = %judged.lock.source,
                "cannot release stale lock {id}: it is held in the cluster log, which this \
                 replica does not write; leaving it to people ({})", judged.lock.release);
            self.locks.release_failed.insert(id);
        }
        false
    }

    /// The cluster log's writer answered a [`ClusterRelease`].
    pub fn cluster_released(&mut self, answer: ClusterReleased) {
        let Some(judged) = self.locks.releasing.remove(&answer.id) else {
            return;
        };
        let id = answer.id;
        match answer.outcome {
            ReleaseOutcome::Released => {
                tracing::warn!(intent = id, source = %judged.lock.source, holder = %judged.lock.holder,
                    actor = %self.locks.actor, "stale lock released automatically in the cluster log");
                self.announce_released(&judged);
            }
            ReleaseOutcome::NotPending(why) => {
                // Its end (or renewal) reaches this replica through the import.
                tracing::info!(intent = id, "stale lock {id} not released: {why}");
                self.locks.release_failed.insert(id);
            }
            ReleaseOutcome::Failed(why) => {
                tracing::error!(intent = id, error = %why,
                    "cannot release stale lock {id} in the cluster log; leaving it to people");
                self.locks.release_failed.insert(id);
            }
        }
    }

    fn announce_released(&mut self, judged: &Judged) {
        let what = LockAnnouncement::Released {
            actor: self.locks.actor.clone(),
        };
        self.outputs
            .announce_lock(what, &judged.lock, judged.pod.as_ref());
    }
}
