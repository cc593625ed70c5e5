//! The objects the engine judges (desired ones, and those only an open intent wants), each
//! with the kind whose watcher lists it and its live copy.
//!
//! One entry per object holds all of it, so an object's key is stored once here (shared
//! with the desired state and the drift index through an `Arc`), and its live copy is
//! [`Packed`]: a watch event is compared with the object it brings, and only re-evaluations
//! (a commit, an intent, a CRD or autoscaler change, an expired rule) unpack the copy.
//!
//! Objects are found by hash: every watch event looks its object up here two or three
//! times, and with many objects the key comparisons of a B-tree search would weigh on the
//! engine's thread. What is listed for people or re-evaluated is sorted by key.

use super::outputs::{Identified, LiveIdentity};
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_watch::packed::{Packed, Packing, Samples};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One judged object.
#[derive(Debug)]
struct Tracked {
    kind: Arc<TypeKey>,
    /// `None`: not seen live (yet, or deleted).
    live: Option<Packed>,
}

/// A tracked object's kind and key, shared with the tracked set.
pub type KindAndKey = (Arc<TypeKey>, Arc<ObjectKey>);

/// Every judged object.
#[derive(Debug, Default)]
pub struct TrackedSet {
    objects: HashMap<Arc<ObjectKey>, Tracked>,
    /// What the live copies are packed with (the watchers' too).
    packing: Packing,
}

impl TrackedSet {
    /// An empty set whose live copies `packing` packs.
    pub fn new(packing: Packing) -> TrackedSet {
        TrackedSet {
            objects: HashMap::new(),
            packing,
        }
    }

    /// What the live copies are packed with.
    pub fn packing(&self) -> &Packing {
        &self.packing
    }

    /// Judges exactly `wanted` from now on; live copies of objects still wanted are kept.
    /// Returns the objects no longer tracked, and those newly tracked with their kind.
    pub fn replace(
        &mut self,
        wanted: impl IntoIterator<Item = (Arc<ObjectKey>, Arc<TypeKey>)>,
    ) -> (Vec<ObjectKey>, Vec<KindAndKey>) {
        let mut before = std::mem::take(&mut self.objects);
        let mut added = Vec::new();
        for (key, kind) in wanted {
            let live = match before.remove(&*key) {
                Some(old) => old.live,
                None => {
                    added.push((kind.clone(), key.clone()));
                    None
                }
            };
            self.objects.insert(key, Tracked { kind, live });
        }
        let mut removed: Vec<ObjectKey> = before.into_keys().map(|k| (*k).clone()).collect();
        removed.sort_unstable();
        (removed, added)
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.objects.contains_key(key)
    }

    /// The kind whose watcher lists `key`, if tracked.
    pub fn kind(&self, key: &ObjectKey) -> Option<&Arc<TypeKey>> {
        self.objects.get(key).map(|t| &t.kind)
    }

    /// The shared key of `key`, if tracked (what the index keeps).
    pub fn shared_key(&self, key: &ObjectKey) -> Option<Arc<ObjectKey>> {
        self.objects.get_key_value(key).map(|(k, _)| k.clone())
    }

    /// Keeps `live` as the live copy of `key` (`None`: it is gone), if `key` is tracked;
    /// whether it had a live copy before (`None`: not tracked).
    pub fn set_live(&mut self, key: &ObjectKey, live: Option<Packed>) -> Option<bool> {
        let tracked = self.objects.get_mut(key)?;
        Some(std::mem::replace(&mut tracked.live, live).is_some())
    }

    /// Repacks live copies packed before the newest dictionary, on every core; how many were.
    pub fn repack(&mut self) -> usize {
        self.packing.repack_all(
            self.objects
                .values_mut()
                .filter_map(|t| t.live.as_mut())
                .collect(),
        )
    }

    /// The live copy of `key`, unpacked (`None`: not seen live, or not tracked).
    pub fn live(&self, key: &ObjectKey) -> Option<Value> {
        let live = self.objects.get(key)?.live.as_ref()?;
        Some(self.packing.unpack(live))
    }

    /// What identifies the live copy of `key` in an Event (`None`: not seen live, or not
    /// tracked), read without unpacking the copy into a tree.
    pub fn live_identity(&self, key: &ObjectKey) -> Option<LiveIdentity> {
        let live = self.objects.get(key)?.live.as_ref()?;
        Some(self.packing.unpack_as::<Identified>(live).metadata)
    }

    /// The field manager that wrote the live copy of `key` last among those owning one of
    /// the top-level `fields` (all, if none is given): the newest `managedFields` time,
    /// `status` writes left out. Who reverted a drift at those fields, as far as the object
    /// tells: a controller that wrote elsewhere since (an annotation, say) is not taken for
    /// it. Read without unpacking the copy into a tree.
    pub fn last_writer(&self, key: &ObjectKey, fields: &[String]) -> Option<String> {
        let live = self.objects.get(key)?.live.as_ref()?;
        let written = self.packing.unpack_as::<crate::outputs::Written>(live);
        written
            .metadata
            .managed_fields
            .into_iter()
            .filter(|e| e.subresource != "status" && !e.manager.is_empty())
            .filter(|e| {
                fields.is_empty()
                    || fields
                        .iter()
                        .any(|f| driftd_core::diff::managed::sets_top_level(&e.fields_v1, f))
            })
            .max_by(|a, b| a.time.cmp(&b.time))
            .map(|e| e.manager)
    }

    /// Bytes of the live copies held (what the packing dictionary saves on).
    pub fn packed_bytes(&self) -> usize {
        self.objects
            .values()
            .filter_map(|t| t.live.as_ref())
            .map(Packed::len)
            .sum()
    }

    /// Every tracked key, in order.
    pub fn keys(&self) -> Vec<Arc<ObjectKey>> {
        self.keys_of(|_| true)
    }

    /// The tracked keys whose kind passes `filter`, in order.
    pub fn keys_of(&self, filter: impl Fn(&TypeKey) -> bool) -> Vec<Arc<ObjectKey>> {
        let mut keys: Vec<Arc<ObjectKey>> = self
            .objects
            .iter()
            .filter(|(_, t)| filter(&t.kind))
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Every tracked object, in key order.
    fn sorted(&self) -> Vec<(&Arc<ObjectKey>, &Tracked)> {
        let mut objects: Vec<_> = self.objects.iter().collect();
        objects.sort_unstable_by(|a, b| a.0.cmp(b.0));
        objects
    }

    /// The kinds of tracked objects (with repeats).
    pub fn kinds(&self) -> impl Iterator<Item = &TypeKey> {
        self.objects.values().map(|t| &*t.kind)
    }

    /// Adds the texts of up to about `limit` live copies to `samples`, for training the
    /// packing dictionary: from every kind in proportion to how many of its objects are
    /// tracked, spread evenly over the copies held (so a kind whose list came last is not
    /// left out).
    pub fn sample(&self, limit: usize, samples: &mut Samples) {
        let mut by_kind: BTreeMap<&TypeKey, (usize, Vec<&Packed>)> = BTreeMap::new();
        for (_, tracked) in self.sorted() {
            let (count, held) = by_kind.entry(&tracked.kind).or_default();
            *count += 1;
            held.extend(tracked.live.as_ref());
        }
        let total = self.objects.len().max(1);
        for (count, held) in by_kind.into_values() {
            let wanted = (limit * count).div_ceil(total).min(held.len());
            for i in 0..wanted {
                samples.add(&self.packing, held[i * held.len() / wanted]);
            }
        }
    }

    /// Keys of the tracked objects that exist live.
    pub fn live_keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.objects
            .iter()
            .filter(|(_, t)| t.live.is_some())
            .map(|(k, _)| &**k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    fn cm(name: &str) -> (Arc<ObjectKey>, Arc<TypeKey>) {
        let key = crate::test_support::configmap("shop", name);
        let kind = TypeKey {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        (Arc::new(key), Arc::new(kind))
    }

    fn packed(set: &TrackedSet, value: Value) -> Option<Packed> {
        Some(set.packing().pack(&value))
    }

    #[test]
    fn replacing_keeps_the_live_copies_of_objects_still_wanted() {
        let mut set = TrackedSet::default();
        let (removed, added) = set.replace([cm("a"), cm("b")]);
        assert!(removed.is_empty());
        assert_eq!(added.len(), 2);
        let a = cm("a").0;
        assert_eq!(set.live(&a), None);
        set.set_live(&a, packed(&set, json!({"data": {"k": "1"}})));
        set.set_live(&cm("z").0, packed(&set, json!({})));
        assert!(!set.contains(&cm("z").0), "untracked objects get no copy");
        assert_eq!(set.live(&a), Some(json!({"data": {"k": "1"}})));
        assert_eq!(set.live_keys().count(), 1);

        let (removed, added) = set.replace([cm("a"), cm("c")]);
        assert_eq!(removed, [(*cm("b").0).clone()]);
        assert_eq!(
            added
                .iter()
                .map(|(_, k)| k.name.as_str())
                .collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(set.live(&a), Some(json!({"data": {"k": "1"}})));
        set.set_live(&a, None);
        assert_eq!(set.live(&a), None);
        assert_eq!(set.keys().len(), 2);
    }

    #[test]
    fn keys_and_removed_objects_come_in_key_order() {
        let mut set = TrackedSet::default();
        let names: Vec<String> = (0..50).rev().map(|i| format!("cm-{i:02}")).collect();
        set.replace(names.iter().map(|n| cm(n)));
        let listed: Vec<String> = set.keys().iter().map(|k| k.name.clone()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(listed, sorted);
        let (removed, _) = set.replace([cm("cm-07")]);
        let removed: Vec<&str> = removed.iter().map(|k| k.name.as_str()).collect();
        let expected: Vec<&str> = sorted
            .iter()
            .map(String::as_str)
            .filter(|n| *n != "cm-07")
            .collect();
        assert_eq!(removed, expected);
    }

    #[test]
    fn the_live_identity_is_the_copys_uid_and_resource_version() {
        let mut set = TrackedSet::default();
        set.replace([cm("a"), cm("b")]);
        let (a, b) = (cm("a").0, cm("b").0);
        set.set_live(
            &a,
            packed(&set, json!({
                "metadata": {"name": "a", "uid": "u-1", "resourceVersion": "42", "labels": {"x": "y"}},
                "data": {"uid": "not this one"},
            })),
        );
        set.set_live(&b, packed(&set, json!({"data": {}})));
        let identity = |uid: Option<&str>, rv: Option<&str>| LiveIdentity {
            uid: uid.map(str::to_string),
            resource_version: rv.map(str::to_string),
        };
        assert_eq!(
            set.live_identity(&a),
            Some(identity(Some("u-1"), Some("42")))
        );
        assert_eq!(set.live_identity(&b), Some(identity(None, None)));
        set.set_live(&a, None);
        assert_eq!(set.live_identity(&a), None, "gone live: no identity");
    }

    #[test]
    fn the_training_sample_has_every_kind_in_proportion() {
        let secret = |name: &str| {
            let mut key = crate::test_support::configmap("shop", name);
            key.kind = "Secret".into();
            let kind = TypeKey {
                api_version: "v1".into(),
                kind: "Secret".into(),
            };
            (Arc::new(key), Arc::new(kind))
        };
        let mut set = TrackedSet::default();
        let configmaps: Vec<_> = (0..300).map(|i| cm(&format!("c{i:03}"))).collect();
        let secrets: Vec<_> = (0..100).map(|i| secret(&format!("s{i:03}"))).collect();
        set.replace(configmaps.iter().chain(&secrets).cloned());
        // Every ConfigMap is held, and only the first 20 Secrets (their list came late).
        for (key, _) in &configmaps {
            set.set_live(
                key,
                packed(&set, json!({"kind": "ConfigMap", "n": key.name})),
            );
        }
        for (key, _) in &secrets[..20] {
            set.set_live(key, packed(&set, json!({"kind": "Secret", "n": key.name})));
        }
        let mut sample = Samples::default();
        set.sample(40, &mut sample);
        let kinds: Vec<Value> = sample
            .texts()
            .map(|t| serde_json::from_slice::<Value>(t).unwrap()["kind"].clone())
            .collect();
        let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
        assert_eq!(count("ConfigMap"), 30, "three quarters of the objects");
        assert_eq!(count("Secret"), 10, "a quarter, from the 20 held");
        let names: BTreeSet<String> = sample
            .texts()
            .map(|t| serde_json::from_slice::<Value>(t).unwrap()["n"].to_string())
            .collect();
        assert_eq!(names.len(), 40, "no copy twice");
        assert!(
            names.contains("\"c290\""),
            "spread over all the copies held"
        );
        let mut none = Samples::default();
        set.sample(0, &mut none);
        assert_eq!(none.len(), 0);
    }
}
