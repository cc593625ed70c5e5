//! Unmanaged coverage (`[unmanaged]`): live objects of covered kinds that no source desires
//! become `unmanaged` entries, and the covered objects a source owns are counted for
//! `driftd_coverage_ratio`.
//!
//! The count is kept as live copies come and go: counting anew at the end of every burst of
//! watch events would be a pass over every tracked object per burst.

use crate::coverage::{Change, Coverage};
use crate::index::SharedIndex;
use crate::stale_config::StaleConfigs;
use driftd_config::{Config, ConfigError};
use driftd_core::report::DriftClass;
use driftd_k8s::{ObjectKey, TypeKey};
use jiff::Timestamp;
use serde_json::Value;

/// See the module documentation.
pub(super) struct Unmanaged {
    pub(super) coverage: Coverage,
    /// Of the tracked objects with a live copy, how many are of a covered kind and
    /// namespace (`driftd_coverage_ratio`'s numerator).
    owned_covered: usize,
}

impl Unmanaged {
    pub(super) fn new(config: &Config) -> Result<Unmanaged, ConfigError> {
        Ok(Unmanaged {
            coverage: Coverage::new(&config.unmanaged)?,
            owned_covered: 0,
        })
    }

    /// The count of covered objects a source owns; `None`: coverage is off.
    pub(super) fn owned_covered(&self) -> Option<usize> {
        self.coverage.is_on().then_some(self.owned_covered)
    }

    /// An object of covered `kind` that no source tracks is `live` now (`None`: deleted):
    /// its `unmanaged` entry (carrying its pods on stale config) comes or goes.
    pub(super) fn covered_changed(
        &mut self,
        kind: &TypeKey,
        key: ObjectKey,
        live: Option<&Value>,
        now: Timestamp,
        stale_configs: &StaleConfigs,
        index: &SharedIndex,
    ) {
        let change = match live {
            Some(object) => self.coverage.observe(kind, &key, object, now),
            None if self.coverage.forget(&key) => Change::Removed,
            None => Change::None,
        };
        match change {
            Change::Added(mut entry) => {
                entry.stale_config = stale_configs.note(&key).cloned().map(Box::new);
                index.write().unwrap().upsert(key, *entry);
            }
            Change::Removed => withdraw(index, &key),
            Change::None => {}
        }
    }

    /// Tracked `key` got or lost its live copy.
    pub(super) fn live_changed(&mut self, key: &ObjectKey, was_live: bool, now_live: bool) {
        if was_live != now_live && self.coverage.covers_key(key) {
            match now_live {
                true => self.owned_covered += 1,
                false => self.owned_covered -= 1,
            }
        }
    }

    /// Counts the covered objects a source owns anew, of the tracked ones `live`.
    pub(super) fn recount<'a>(&mut self, live: impl Iterator<Item = &'a ObjectKey>) {
        self.owned_covered = self.coverage.owned(live).unwrap_or(0);
    }

    /// `key` is tracked now (desired, or being deployed): it is no longer unmanaged.
    pub(super) fn now_tracked(&mut self, key: &ObjectKey, index: &SharedIndex) {
        if self.coverage.forget(key) {
            withdraw(index, key);
        }
    }

    /// A list of covered `kind` ended with `listed` existing: the others' entries go.
    pub(super) fn listed(
        &mut self,
        kind: &TypeKey,
        listed: &std::collections::HashSet<ObjectKey>,
        index: &SharedIndex,
    ) {
        for key in self.coverage.retain_listed(kind, listed) {
            withdraw(index, &key);
        }
    }
}

/// Withdraws the entry of `key` if it is an `unmanaged` one.
fn withdraw(index: &SharedIndex, key: &ObjectKey) {
    let mut index = index.write().unwrap();
    if index
        .get(key)
        .is_some_and(|e| e.class == DriftClass::Unmanaged)
    {
        index.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::DriftIndex;
    use driftd_config::UnmanagedConfig;
    use serde_json::json;
    use std::sync::{Arc, RwLock};
    use std::time::Duration;

    fn covering_config_maps() -> Unmanaged {
        let config = Config {
            unmanaged: UnmanagedConfig {
                kinds: vec!["ConfigMap".into()],
                namespaces: vec!["shop".into()],
            },
            ..Config::default()
        };
        Unmanaged::new(&config).unwrap()
    }

    fn cm(name: &str) -> (ObjectKey, Value) {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": name, "namespace": "shop"}});
        (ObjectKey::of(&object).unwrap(), object)
    }

    #[test]
    fn a_stray_object_comes_and_goes_as_unmanaged_and_leaves_when_a_source_takes_it() {
        let mut unmanaged = covering_config_maps();
        let index: SharedIndex = Arc::new(RwLock::new(DriftIndex::new(100)));
        let stale = StaleConfigs::new(false, Duration::from_secs(60), b"k", Vec::new());
        let kind = unmanaged.coverage.kinds().next().unwrap().clone();
        let (key, object) = cm("stray");
        let now = Timestamp::UNIX_EPOCH;
        unmanaged.covered_changed(&kind, key.clone(), Some(&object), now, &stale, &index);
        let class = index.read().unwrap().get(&key).map(|e| e.class);
        assert_eq!(class, Some(DriftClass::Unmanaged));
        unmanaged.now_tracked(&key, &index);
        assert!(index.read().unwrap().get(&key).is_none(), "committed now");

        let (other, object) = cm("other");
        unmanaged.covered_changed(&kind, other.clone(), Some(&object), now, &stale, &index);
        unmanaged.covered_changed(&kind, other.clone(), None, now, &stale, &index);
        assert!(index.read().unwrap().get(&other).is_none(), "deleted");
    }

    #[test]
    fn owned_covered_follows_live_copies_of_covered_objects_only() {
        let mut unmanaged = covering_config_maps();
        let (a, _) = cm("a");
        let secret = ObjectKey::of(&json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "shop"}}))
        .unwrap();
        assert_eq!(unmanaged.owned_covered(), Some(0));
        unmanaged.live_changed(&a, false, true);
        unmanaged.live_changed(&secret, false, true);
        unmanaged.live_changed(&a, true, true);
        assert_eq!(
            unmanaged.owned_covered(),
            Some(1),
            "one covered ConfigMap is live"
        );
        unmanaged.live_changed(&a, true, false);
        assert_eq!(unmanaged.owned_covered(), Some(0));
        unmanaged.recount([a.clone(), secret].iter());
        assert_eq!(unmanaged.owned_covered(), Some(1));
        assert_eq!(
            Unmanaged::new(&Config::default()).unwrap().owned_covered(),
            None
        );
    }
}
