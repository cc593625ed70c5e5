//! The desired state as the engine compares against it: the newest revision of every source,
//! read from the store when someone commits, each object prepared for comparison once.

use super::crds::{group_kind, is_custom, GroupKind};
use driftd_core::diff::{ClusterFacts, Differ, PreparedDesired};
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_store::{DesiredObject, RevisionInfo, Store, StoreError};
use jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One desired object with what comparisons need.
#[derive(Debug)]
pub struct Desired {
    pub object: DesiredObject,
    /// The kind whose watcher lists it.
    pub kind: TypeKey,
    /// Made once per commit rather than on every watch event.
    pub prepared: PreparedDesired,
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
    objects: HashMap<ObjectKey, Desired>,
    by_kind: BTreeMap<TypeKey, BTreeSet<ObjectKey>>,
    /// Every source with the commit time of its newest revision.
    sources: BTreeMap<String, Timestamp>,
    /// The newest revision of every source (number, author, message): what the drift page
    /// shows people.
    revisions: Vec<RevisionInfo>,
}

impl DesiredSet {
    /// Loads the desired state if another connection committed since the last load; objects
    /// are prepared with `facts` (the CRDs known so far: see [`DesiredSet::reprepare`]).
    pub fn poll(
        &mut self,
        store: &Store,
        facts: &ClusterFacts,
    ) -> Result<Option<DesiredChange>, StoreError> {
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
        let change = self.load(store, facts)?;
        self.data_version = Some(version);
        self.newest = newest;
        Ok(change)
    }

    /// Loads the desired state; `None` when it is what was loaded last (the first load always
    /// counts as a change, an empty state included).
    pub fn load(
        &mut self,
        store: &Store,
        facts: &ClusterFacts,
    ) -> Result<Option<DesiredChange>, StoreError> {
        let state = store.desired_state()?;
        let sources: BTreeMap<String, Timestamp> = state
            .revisions
            .iter()
            .map(|r| (r.source.clone(), r.committed_at))
            .collect();
        let unchanged = self.loaded
            && sources == self.sources
            && state.objects.len() == self.objects.len()
            && state
                .objects
                .iter()
                .all(|o| self.objects.get(&o.key).is_some_and(|d| d.object == *o));
        self.loaded = true;
        if unchanged {
            return Ok(None);
        }
        let mut objects = HashMap::with_capacity(state.objects.len());
        let mut by_kind: BTreeMap<TypeKey, BTreeSet<ObjectKey>> = BTreeMap::new();
        let mut change = DesiredChange::default();
        for object in state.objects {
            let kind = TypeKey {
                api_version: object.api_version.clone(),
                kind: object.key.kind.clone(),
            };
            let prepared = match self.objects.remove(&object.key) {
                Some(old) if old.object == object => old.prepared,
                Some(_) => Differ::prepare_with(&object.object, object.previous.as_ref(), facts),
                None => {
                    change.added.push((kind.clone(), object.key.clone()));
                    Differ::prepare_with(&object.object, object.previous.as_ref(), facts)
                }
            };
            by_kind
                .entry(kind.clone())
                .or_default()
                .insert(object.key.clone());
            objects.insert(
                object.key.clone(),
                Desired {
                    object,
                    kind,
                    prepared,
                },
            );
        }
        // What is left of the old objects is no longer desired.
        change.removed = self.objects.drain().map(|(key, _)| key).collect();
        change.removed.sort();
        change.added.sort();
        self.objects = objects;
        self.by_kind = by_kind;
        self.sources = sources;
        self.revisions = state.revisions;
        Ok(Some(change))
    }

    /// Prepares the objects of `kinds` again, by the CRDs `facts` know now (a CRD was
    /// committed, changed or learnt from the cluster). Returns them.
    pub fn reprepare(
        &mut self,
        kinds: &BTreeSet<GroupKind>,
        facts: &ClusterFacts,
    ) -> Vec<ObjectKey> {
        if kinds.is_empty() {
            return Vec::new();
        }
        let mut keys = Vec::new();
        for (type_key, objects) in &self.by_kind {
            if !is_custom(type_key) || !kinds.contains(&group_kind(type_key)) {
                continue;
            }
            for key in objects {
                if let Some(d) = self.objects.get_mut(key) {
                    d.prepared =
                        Differ::prepare_with(&d.object.object, d.object.previous.as_ref(), facts);
                    keys.push(key.clone());
                }
            }
        }
        keys
    }

    /// The committed CustomResourceDefinitions.
    pub fn crds(&self) -> impl Iterator<Item = &serde_json::Value> {
        self.by_kind
            .iter()
            .filter(|(t, _)| t.kind == "CustomResourceDefinition")
            .flat_map(|(_, keys)| keys)
            .filter_map(|k| self.objects.get(k))
            .map(|d| &d.object.object)
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
    pub fn typed_keys(&self) -> impl Iterator<Item = (&ObjectKey, &TypeKey)> {
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
            set.load(&store, &ClusterFacts::default()).unwrap(),
            Some(DesiredChange::default()),
            "the first load counts, even empty"
        );
        assert_eq!(set.load(&store, &ClusterFacts::default()).unwrap(), None);

        commit(&mut store, "shop", &(cm("a", "1") + &cm("b", "1")));
        let change = set.load(&store, &ClusterFacts::default()).unwrap().unwrap();
        let names: Vec<&str> = change.added.iter().map(|(_, k)| k.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(set.sources().contains_key("shop"));
        let kind = &set.get(&change.added[0].1).unwrap().kind;
        assert_eq!(set.typed_keys().filter(|(_, t)| *t == kind).count(), 2);

        commit(&mut store, "shop", &(cm("a", "2") + &cm("c", "1")));
        let change = set.load(&store, &ClusterFacts::default()).unwrap().unwrap();
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
        assert!(set
            .poll(&reader, &ClusterFacts::default())
            .unwrap()
            .is_some());
        assert!(set
            .poll(&reader, &ClusterFacts::default())
            .unwrap()
            .is_none());
        commit(&mut writer, "shop", &cm("a", "1"));
        assert_eq!(
            set.poll(&reader, &ClusterFacts::default())
                .unwrap()
                .unwrap()
                .added
                .len(),
            1
        );
    }
}
