//! Publishing a judged entry: the index, the settle tracker and the "since" of drift; and
//! the episodes that settled drift opens and keeps current (`episodes`).

use super::stale_config_feed;
use crate::clock::Clock;
use crate::index::SharedIndex;
use crate::last_seen::LastSeen;
use crate::settle::{Drift, Settling};
use crate::stale_config::StaleConfigs;
use crate::tracked::TrackedSet;
use driftd_core::report::{DriftClass, DriftEntry};
use driftd_k8s::ObjectKey;
use driftd_store::{EpisodeEnd, Store, StoreError};
use jiff::Timestamp;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What publishing a judged entry changes: the settle tracker and the "since" of drift. A
/// part of its own, holding its own handles on the index and the clock, so that the entries
/// of a burst are published while the rest of it is still being judged (`judge_held`):
/// publishing changes none of what judging reads.
pub(super) struct Publication {
    pub(super) settling: Settling,
    /// Class and first-seen time of episodes still open at start, so a restart keeps "since".
    pub(super) open_since: HashMap<ObjectKey, (DriftClass, Timestamp)>,
    pub(super) index: SharedIndex,
    pub(super) clock: Arc<dyn Clock>,
    /// More settled states are due than the last step took (`settle_some`).
    pub(super) backlog: bool,
    /// The minute's `last_seen` update of open episodes.
    pub(super) last_seen: LastSeen,
    /// How the drift of objects now in sync ended, decided by the comparison that found
    /// them in sync and taken when that state settles (`settle_some`): `committed` if that
    /// comparison was against a newer revision than the last drifting one, else `reverted`
    /// (the live object changed), with the top-level fields the drift was at (who wrote
    /// them last reverted it). Dropped as soon as the object drifts again.
    pub(super) endings: HashMap<ObjectKey, (EpisodeEnd, Vec<String>)>,
}

/// The top-level fields of RFC 6901 `paths` (`/spec/replicas` -> `spec`), each once.
fn top_level_fields(paths: &[String]) -> Vec<String> {
    let mut fields: Vec<String> = Vec::new();
    for path in paths {
        let Some(first) = path.strip_prefix('/').and_then(|p| p.split('/').next()) else {
            continue;
        };
        // RFC 6901 escapes: `~1` is `/`, `~0` is `~`.
        let field = first.replace("~1", "/").replace("~0", "~");
        if !fields.contains(&field) {
            fields.push(field);
        }
    }
    fields
}

impl Publication {
    /// Publishes to `index`; episodes an earlier run left open are taken over from `store`,
    /// so their drift keeps its "since" and is not announced again.
    pub(super) fn new(
        store: &Store,
        settle: Duration,
        index: SharedIndex,
        clock: Arc<dyn Clock>,
    ) -> Result<Publication, StoreError> {
        let mut settling = Settling::new(settle);
        let mut open_since = HashMap::new();
        for episode in store.open_episodes()? {
            let class = episode.class.parse().unwrap_or(DriftClass::Modified);
            open_since.insert(episode.key.clone(), (class, episode.first_seen));
            settling.restore(episode.key, Drift::new(class, &episode.paths));
        }
        Ok(Publication {
            settling,
            open_since,
            index,
            clock,
            backlog: false,
            last_seen: LastSeen::default(),
            endings: HashMap::new(),
        })
    }

    /// See [`Engine::publish_entry`]; `tracked` shares the entry's key, `stale_configs`
    /// adds the pods running on stale config.
    pub(super) fn publish(
        &mut self,
        tracked: &TrackedSet,
        stale_configs: &StaleConfigs,
        key: &ObjectKey,
        mut entry: DriftEntry,
    ) {
        stale_config_feed::decorate(stale_configs, key, &mut entry);
        let mut index = self.index.write().unwrap();
        entry.since = match entry.class {
            DriftClass::InSync => {
                self.open_since.remove(key);
                None
            }
            // An object drifts since it drifts in this class: an edit that becomes an
            // unfinished deploy's (`uncommitted`) is a new episode, not the old one's.
            class => index
                .get(key)
                .filter(|e| e.class == class)
                .and_then(|e| e.since)
                .or_else(|| {
                    self.open_since
                        .get(key)
                        .filter(|(c, _)| *c == class)
                        .map(|(_, since)| *since)
                })
                .or_else(|| Some(self.clock.wall())),
        };
        match index.get(key) {
            Some(was) if entry.class == DriftClass::InSync && was.class != DriftClass::InSync => {
                let how = match entry.revision != was.revision {
                    true => EpisodeEnd::Committed,
                    false => EpisodeEnd::Reverted,
                };
                self.endings
                    .insert(key.clone(), (how, top_level_fields(&was.paths())));
            }
            _ if entry.class != DriftClass::InSync => {
                self.endings.remove(key);
            }
            _ => {}
        }
        let observed =
            (entry.class != DriftClass::InSync).then(|| Drift::new(entry.class, &entry.paths()));
        let shared = tracked
            .shared_key(key)
            .unwrap_or_else(|| Arc::new(key.clone()));
        index.upsert(shared.clone(), entry);
        drop(index);
        self.settling.observe(&shared, observed, self.clock.now());
    }
}
