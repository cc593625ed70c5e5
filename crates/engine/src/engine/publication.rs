//! Publishing a judged entry: the index, the settle tracker and the "since" of drift.

use super::stale_config_feed;
use crate::clock::Clock;
use crate::index::SharedIndex;
use crate::settle::{Drift, Settling};
use crate::stale_config::StaleConfigs;
use crate::tracked::TrackedSet;
use driftd_core::report::{DriftClass, DriftEntry};
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use std::collections::HashMap;
use std::sync::Arc;

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
}

impl Publication {
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
