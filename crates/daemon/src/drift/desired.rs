//! The desired state as the engine compares against it: the newest revision of every source,
//! read from the store when someone commits.
//!
//! Memory follows the desired state, so each object is kept small (issue #11): its manifest
//! (and its previous revision's) as [`Packed`] bytes, its source and kind shared with every
//! other object of that source and kind. A comparison unpacks the manifest and prepares it
//! (`Differ::prepare_with`) on the spot: that costs about what the comparison itself does,
//! where keeping the prepared tree cost ten times the manifest's text per object.

use super::packed::{Packed, Samples};
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_store::{RevisionInfo, Store, StoreError};
use jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One desired object with what comparisons need.
#[derive(Debug, Clone, PartialEq)]
pub struct Desired {
    pub source: Arc<str>,
    /// The id of the revision that desires it.
    pub revision: i64,
    /// The kind whose watcher lists it.
    pub kind: Arc<TypeKey>,
    manifest: Packed,
    /// The object as the source's previous revision had it, if it was there.
    previous: Option<Packed>,
}

impl Desired {
    /// The manifest as committed.
    pub fn manifest(&self) -> Value {
        self.manifest.unpack()
    }

    /// The object as the source's previous revision had it (fields removed since are
    /// drift), if it was there.
    pub fn previous(&self) -> Option<Value> {
        self.previous.as_ref().map(Packed::unpack)
    }

    pub fn api_version(&self) -> &str {
        &self.kind.api_version
    }
}

/// What a load changed.
#[derive(Debug, Default, PartialEq)]
pub struct DesiredChange {
    /// Objects no longer desired.
    pub removed: Vec<ObjectKey>,
    /// Objects newly desired, with their kind.
    pub added: Vec<(TypeKey, ObjectKey)>,
}

/// The current desired state.
#[derive(Debug, Default)]
pub struct DesiredSet {
    /// `PRAGMA data_version` at the last load: tells whether another connection committed.
    data_version: Option<i64>,
    /// The newest revision id of every source at the last poll: revisions are immutable, so
    /// while these stand the desired state does (intent renewals bump `data_version` too).
    newest: Vec<(String, Option<i64>)>,
    loaded: bool,
    /// By key, shared with the tracked objects and the drift index.
    objects: HashMap<Arc<ObjectKey>, Desired>,
    /// How many objects of every kind are desired.
    by_kind: BTreeMap<TypeKey, usize>,
    /// Every source with the commit time of its newest revision.
    sources: BTreeMap<String, Timestamp>,
    /// The newest revision of every source (number, author, message): what the drift page
    /// shows people.
    revisions: Vec<RevisionInfo>,
}

impl DesiredSet {
    /// Loads the desired state if another connection committed since the last load.
    pub fn poll(&mut self, store: &Store) -> Result<Option<DesiredChange>, StoreError> {
        let version = store.data_version()?;
        if self.data_version == Some(version) {
            return Ok(None);
        }
        // Another write (an intent renewed, a drift episode) is not a commit: one cheap
        // query tells.
        let newest: Vec<(String, Option<i64>)> = store
            .sources()?
            .into_iter()
            .map(|s| (s.name, s.latest.map(|r| r.id)))
            .collect();
        if self.loaded && newest == self.newest {
            self.data_version = Some(version);
            return Ok(None);
        }
        let change = self.load(store)?;
        self.data_version = Some(version);
        self.newest = newest;
        Ok(change)
    }

    /// Loads the desired state; `None` when it is what was loaded last (the first load always
    /// counts as a change, an empty state included).
    pub fn load(&mut self, store: &Store) -> Result<Option<DesiredChange>, StoreError> {
        // One shared copy of every source name and kind.
        let mut names: HashMap<String, Arc<str>> = HashMap::new();
        let mut kinds: HashMap<TypeKey, Arc<TypeKey>> = HashMap::new();
        let mut objects = HashMap::with_capacity(self.objects.len());
        let mut by_kind: BTreeMap<TypeKey, usize> = BTreeMap::new();
        // Object by object, packed from the stored text as read: the state is never held
        // whole, nor parsed (the comparison parses the one it needs).
        let revisions = store.each_desired_object(|object| {
            let kind = TypeKey {
                api_version: object.api_version,
                kind: object.key.kind.clone(),
            };
            *by_kind.entry(kind.clone()).or_default() += 1;
            let kind = kinds
                .entry(kind)
                .or_insert_with_key(|k| Arc::new(k.clone()))
                .clone();
            let source = names
                .entry(object.source)
                .or_insert_with_key(|s| Arc::from(s.as_str()))
                .clone();
            let desired = Desired {
                source,
                revision: object.revision,
                kind,
                manifest: Packed::from_text(&object.body),
                previous: object.previous.as_deref().map(Packed::from_text),
            };
            // The key already shared stays shared (the index keeps the first one it got).
            let key = match self.objects.get_key_value(&object.key) {
                Some((key, _)) => key.clone(),
                None => Arc::new(object.key),
            };
            objects.insert(key, desired);
        })?;
        let sources: BTreeMap<String, Timestamp> = revisions
            .iter()
            .map(|r| (r.source.clone(), r.committed_at))
            .collect();
        let unchanged = self.loaded && sources == self.sources && objects == self.objects;
        self.loaded = true;
        if unchanged {
            return Ok(None);
        }
        let mut change = DesiredChange {
            removed: self
                .objects
                .keys()
                .filter(|k| !objects.contains_key(*k))
                .map(|k| (**k).clone())
                .collect(),
            added: objects
                .iter()
                .filter(|(k, _)| !self.objects.contains_key(*k))
                .map(|(k, d)| ((*d.kind).clone(), (**k).clone()))
                .collect(),
        };
        change.removed.sort();
        change.added.sort();
        self.objects = objects;
        self.by_kind = by_kind;
        self.sources = sources;
        self.revisions = revisions;
        Ok(Some(change))
    }

    /// Adds the texts of up to `limit` manifests, spread evenly, to `samples`: what the
    /// packing dictionary is trained from when too few objects exist live to train it from
    /// their copies.
    pub fn sample(&self, limit: usize, samples: &mut Samples) {
        let all: Vec<&Desired> = self.objects.values().collect();
        let wanted = limit.min(all.len());
        for i in 0..wanted {
            samples.add(&all[i * all.len() / wanted].manifest);
        }
    }

    /// Bytes of the packed manifests (and previous revisions) held.
    pub fn packed_bytes(&self) -> usize {
        self.objects
            .values()
            .map(|d| d.manifest.len() + d.previous.as_ref().map_or(0, Packed::len))
            .sum()
    }

    /// Repacks manifests packed before the newest dictionary; how many were.
    pub fn repack(&mut self) -> usize {
        let mut count = 0;
        for desired in self.objects.values_mut() {
            if let Some(newer) = desired.manifest.repacked() {
                desired.manifest = newer;
                count += 1;
            }
            if let Some(newer) = desired.previous.as_ref().and_then(Packed::repacked) {
                desired.previous = Some(newer);
            }
        }
        count
    }

    /// The committed CustomResourceDefinitions.
    pub fn crds(&self) -> Vec<Value> {
        self.objects
            .values()
            .filter(|d| d.kind.kind == "CustomResourceDefinition")
            .map(Desired::manifest)
            .collect()
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&Desired> {
        self.objects.get(key)
    }

    pub fn contains(&self, key: &ObjectKey) -> bool {
        self.objects.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Every desired object with the kind whose watcher lists it.
    pub fn typed_keys(&self) -> impl Iterator<Item = (&Arc<ObjectKey>, &Arc<TypeKey>)> {
        self.objects.iter().map(|(key, d)| (key, &d.kind))
    }

    /// The kinds desired objects are of.
    pub fn kinds(&self) -> impl Iterator<Item = &TypeKey> {
        self.by_kind.keys()
    }

    /// Whether an object a HorizontalPodAutoscaler may scale is desired.
    pub fn has_scalable(&self) -> bool {
        self.by_kind
            .keys()
            .any(|t| driftd_k8s::SCALABLE_KINDS.contains(&t.kind.as_str()))
    }

    /// Every source, with the commit time of its newest revision.
    pub fn sources(&self) -> &BTreeMap<String, Timestamp> {
        &self.sources
    }

    /// The newest revision of every source, by source name.
    pub fn revisions(&self) -> &[RevisionInfo] {
        &self.revisions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::commit;

    fn cm(name: &str, value: &str) -> String {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: shop}}\ndata: {{k: \"{value}\"}}\n---\n")
    }

    #[test]
    fn a_load_says_what_was_added_and_removed() {
        let mut store = Store::open_in_memory().unwrap();
        let mut set = DesiredSet::default();
        assert_eq!(
            set.load(&store).unwrap(),
            Some(DesiredChange::default()),
            "the first load counts, even empty"
        );
        assert_eq!(set.load(&store).unwrap(), None);

        commit(&mut store, "shop", &(cm("a", "1") + &cm("b", "1")));
        let change = set.load(&store).unwrap().unwrap();
        let names: Vec<&str> = change.added.iter().map(|(_, k)| k.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(set.sources().contains_key("shop"));
        let kind = &set.get(&change.added[0].1).unwrap().kind;
        assert_eq!(set.typed_keys().filter(|(_, t)| *t == kind).count(), 2);

        commit(&mut store, "shop", &(cm("a", "2") + &cm("c", "1")));
        let change = set.load(&store).unwrap().unwrap();
        assert_eq!(
            change
                .removed
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
        assert_eq!(
            change
                .added
                .iter()
                .map(|(_, k)| k.name.as_str())
                .collect::<Vec<_>>(),
            ["c"]
        );
        assert_eq!(set.len(), 2);
        assert!(!set.has_scalable());
    }

    #[test]
    fn poll_reads_only_after_another_connection_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driftd.db");
        let mut writer = Store::open(&path).unwrap();
        let reader = Store::open(&path).unwrap();
        let mut set = DesiredSet::default();
        assert!(set.poll(&reader).unwrap().is_some());
        assert!(set.poll(&reader).unwrap().is_none());
        commit(&mut writer, "shop", &cm("a", "1"));
        assert_eq!(set.poll(&reader).unwrap().unwrap().added.len(), 1);
    }
}
