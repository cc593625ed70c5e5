//! The desired state as the engine compares against it: the newest revision of every source,
//! read from the store when someone commits.
//!
//! Memory follows the desired state, so each object is kept small: its manifest
//! (and its previous revision's) as [`Packed`] bytes, its source and kind shared with every
//! other object of that source and kind. A comparison unpacks the manifest and prepares it
//! (`Differ::prepare_with`) on the spot: that costs about what the comparison itself does,
//! where keeping the prepared tree cost ten times the manifest's text per object.

use super::crds::GroupKind;
use driftd_core::par;
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_store::{DesiredText, RevisionInfo, Store, StoreError};
use driftd_watch::packed::{self, Packed, Packing, Samples};
use jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// One desired object with what comparisons need.
#[derive(Debug, Clone)]
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
    /// The manifest as committed, unpacked by `packing` (its set's).
    pub fn manifest(&self, packing: &Packing) -> Value {
        packing.unpack(&self.manifest)
    }

    /// The object as the source's previous revision had it (fields removed since are
    /// drift), if it was there.
    pub fn previous(&self, packing: &Packing) -> Option<Value> {
        self.previous.as_ref().map(|p| packing.unpack(p))
    }

    /// Whether `other` is the same desired object, whichever dictionary packed each.
    fn same(&self, other: &Desired, packing: &Packing) -> bool {
        self.source == other.source
            && self.revision == other.revision
            && self.kind == other.kind
            && packing.same(&self.manifest, &other.manifest)
            && match (&self.previous, &other.previous) {
                (Some(a), Some(b)) => packing.same(a, b),
                (a, b) => a.is_none() && b.is_none(),
            }
    }

    pub fn api_version(&self) -> &str {
        &self.kind.api_version
    }
}

/// Desired objects read and packed together: enough to spread over the cores, few enough
/// that their texts stay small next to the packed state (a few MB).
const PACKED_TOGETHER: usize = 1024;

/// A desired state being loaded, one run of stored objects at a time.
struct Loaded {
    /// One shared copy of every source name and kind.
    names: HashMap<String, Arc<str>>,
    kinds: HashMap<TypeKey, Arc<TypeKey>>,
    objects: HashMap<Arc<ObjectKey>, Desired>,
    by_kind: BTreeMap<TypeKey, usize>,
}

/// A stored object packed (by whichever thread packed it; its texts freed there).
struct PackedText {
    source: String,
    revision: i64,
    key: ObjectKey,
    api_version: String,
    manifest: Packed,
    previous: Option<Packed>,
}

impl Loaded {
    fn with_capacity(objects: usize) -> Self {
        Loaded {
            names: HashMap::new(),
            kinds: HashMap::new(),
            objects: HashMap::with_capacity(objects),
            by_kind: BTreeMap::new(),
        }
    }

    /// Packs `run` on every core and takes it in; keys already in `shared` stay shared (the
    /// index keeps the first one it got). Objects of the custom kinds in `cluster_scoped`
    /// lose the namespace they were committed with (see [`DesiredSet::learn_scope`]).
    fn take(
        &mut self,
        packing: &Packing,
        run: Vec<DesiredText>,
        shared: &HashMap<Arc<ObjectKey>, Desired>,
        scopes: &HashMap<GroupKind, bool>,
    ) {
        let run = par::map_owned(run, packed::PER_THREAD, |object| PackedText {
            manifest: packing.pack_text(&object.body),
            previous: object
                .previous
                .as_deref()
                .map(|text| packing.pack_text(text)),
            source: object.source,
            revision: object.revision,
            key: object.key,
            api_version: object.api_version,
        });
        for mut object in run {
            if object.key.namespace.is_some()
                && scopes.get(&(object.key.group.clone(), object.key.kind.clone())) == Some(&false)
            {
                object.key.namespace = None;
                if self.objects.contains_key(&object.key) {
                    tracing::warn!(object = %object.key, "two committed objects become one once their kind is known to be cluster-scoped; the first is compared");
                    continue;
                }
            }
            let kind = TypeKey {
                api_version: object.api_version,
                kind: object.key.kind.clone(),
            };
            *self.by_kind.entry(kind.clone()).or_default() += 1;
            let kind = self
                .kinds
                .entry(kind)
                .or_insert_with_key(|k| Arc::new(k.clone()))
                .clone();
            let source = self
                .names
                .entry(object.source)
                .or_insert_with_key(|s| Arc::from(s.as_str()))
                .clone();
            let desired = Desired {
                source,
                revision: object.revision,
                kind,
                manifest: object.manifest,
                previous: object.previous,
            };
            let key = match shared.get_key_value(&object.key) {
                Some((key, _)) => key.clone(),
                None => Arc::new(object.key),
            };
            self.objects.insert(key, desired);
        }
    }
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
    /// Custom kinds the cluster serves, with their scope (namespaced): a custom resource
    /// committed without its CRD is keyed as namespaced until discovery tells.
    scopes: HashMap<GroupKind, bool>,
    /// What the manifests are packed with.
    packing: Packing,
}

impl DesiredSet {
    /// An empty set whose manifests `packing` packs.
    pub fn new(packing: Packing) -> DesiredSet {
        DesiredSet {
            packing,
            ..DesiredSet::default()
        }
    }

    /// What the manifests are packed with: [`Desired::manifest`] unpacks with it.
    pub fn packing(&self) -> &Packing {
        &self.packing
    }

    /// Loads the desired state if another connection committed since the last load; true if
    /// it changed. What changed is what the tracked set finds when it is replaced: listing
    /// it here too would cost a copy and a sort of every key at a first load.
    pub fn poll(&mut self, store: &Store) -> Result<bool, StoreError> {
        let version = store.data_version()?;
        if self.data_version == Some(version) {
            return Ok(false);
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
            return Ok(false);
        }
        let change = self.load(store)?;
        self.data_version = Some(version);
        self.newest = newest;
        Ok(change)
    }

    /// Loads the desired state; false when it is what was loaded last (the first load always
    /// counts as a change, an empty state included).
    pub fn load(&mut self, store: &Store) -> Result<bool, StoreError> {
        let mut loaded = Loaded::with_capacity(self.objects.len());
        // Read in runs, each packed from the stored text on every core: the state is never
        // held whole, nor parsed (the comparison parses the one it needs), and the engine's
        // thread is not the one that packs it, so the watchers start sooner.
        let mut run = Vec::with_capacity(PACKED_TOGETHER);
        let revisions = store.each_desired_object(|object| {
            run.push(object);
            if run.len() == PACKED_TOGETHER {
                loaded.take(
                    &self.packing,
                    std::mem::take(&mut run),
                    &self.objects,
                    &self.scopes,
                );
            }
        })?;
        loaded.take(&self.packing, run, &self.objects, &self.scopes);
        let Loaded {
            objects, by_kind, ..
        } = loaded;
        let sources: BTreeMap<String, Timestamp> = revisions
            .iter()
            .map(|r| (r.source.clone(), r.committed_at))
            .collect();
        let unchanged = self.loaded
            && sources == self.sources
            && objects.len() == self.objects.len()
            && objects.iter().all(|(key, new)| {
                self.objects
                    .get(key)
                    .is_some_and(|old| old.same(new, &self.packing))
            });
        self.loaded = true;
        if unchanged {
            return Ok(false);
        }
        self.objects = objects;
        self.by_kind = by_kind;
        self.sources = sources;
        self.revisions = revisions;
        Ok(true)
    }

    /// Discovery says the cluster serves custom kind `kind` with this scope. True when the
    /// keys of its committed objects change with it (a cluster-scoped kind's objects were
    /// keyed with the namespace they were committed with, or the other way round): the
    /// caller loads the desired state again.
    pub fn learn_scope(&mut self, kind: GroupKind, namespaced: bool) -> bool {
        let before = self.scopes.insert(kind.clone(), namespaced);
        let of_kind = |k: &&Arc<ObjectKey>| k.group == kind.0 && k.kind == kind.1;
        match (before, namespaced) {
            (Some(false), false) | (Some(true) | None, true) => false,
            (_, false) => self
                .objects
                .keys()
                .filter(of_kind)
                .any(|k| k.namespace.is_some()),
            // Served cluster-scoped before, namespaced now (its CRD made anew): the keys
            // they were committed with come back.
            (Some(false), true) => self.objects.keys().any(|k| of_kind(&k)),
        }
    }

    /// Whether discovery told the scope of custom kind `kind`.
    pub fn scope_known(&self, kind: &GroupKind) -> bool {
        self.scopes.contains_key(kind)
    }

    /// The next [`DesiredSet::poll`] loads again, whatever was committed.
    pub fn reload_needed(&mut self) {
        self.data_version = None;
        self.loaded = false;
    }

    /// Adds the texts of up to `limit` manifests, spread evenly, to `samples`: what the
    /// packing dictionary is trained from when too few objects exist live to train it from
    /// their copies.
    pub fn sample(&self, limit: usize, samples: &mut Samples) {
        let all: Vec<&Desired> = self.objects.values().collect();
        let wanted = limit.min(all.len());
        for i in 0..wanted {
            samples.add(&self.packing, &all[i * all.len() / wanted].manifest);
        }
    }

    /// Bytes of the packed manifests (and previous revisions) held.
    pub fn packed_bytes(&self) -> usize {
        self.objects
            .values()
            .map(|d| d.manifest.len() + d.previous.as_ref().map_or(0, Packed::len))
            .sum()
    }

    /// Repacks manifests packed before the newest dictionary, on every core; how many were.
    pub fn repack(&mut self) -> usize {
        let previous = self
            .objects
            .values_mut()
            .filter_map(|d| d.previous.as_mut())
            .collect();
        self.packing.repack_all(previous);
        self.packing
            .repack_all(self.objects.values_mut().map(|d| &mut d.manifest).collect())
    }

    /// The committed CustomResourceDefinitions.
    pub fn crds(&self) -> Vec<Value> {
        self.objects
            .values()
            .filter(|d| d.kind.kind == "CustomResourceDefinition")
            .map(|d| d.manifest(&self.packing))
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

    fn names(set: &DesiredSet) -> Vec<String> {
        let mut names: Vec<String> = set.typed_keys().map(|(k, _)| k.name.clone()).collect();
        names.sort();
        names
    }

    #[test]
    fn a_load_reads_the_newest_revisions_and_says_whether_they_changed() {
        let mut store = Store::open_in_memory().unwrap();
        let mut set = DesiredSet::default();
        assert!(
            set.load(&store).unwrap(),
            "the first load counts, even empty"
        );
        assert!(!set.load(&store).unwrap());

        commit(&mut store, "shop", &(cm("a", "1") + &cm("b", "1")));
        assert!(set.load(&store).unwrap());
        assert_eq!(names(&set), ["a", "b"]);
        assert!(set.sources().contains_key("shop"));
        let kinds: Vec<&TypeKey> = set.kinds().collect();
        assert_eq!(kinds.len(), 1);
        assert_eq!(
            set.typed_keys().filter(|(_, t)| ***t == *kinds[0]).count(),
            2
        );

        commit(&mut store, "shop", &(cm("a", "2") + &cm("c", "1")));
        assert!(set.load(&store).unwrap());
        assert_eq!(names(&set), ["a", "c"]);
        assert!(!set.load(&store).unwrap(), "nothing new was committed");
        assert_eq!(set.len(), 2);
        assert!(!set.has_scalable());
    }

    #[test]
    fn a_state_of_many_runs_loads_whole_with_each_previous_revision() {
        // More objects than one run packed together, so runs and threads meet.
        let count = PACKED_TOGETHER * 2 + packed::PER_THREAD + 7;
        let state = |value: &str| {
            (0..count)
                .map(|i| cm(&format!("c{i}"), value))
                .collect::<String>()
        };
        let mut store = Store::open_in_memory().unwrap();
        commit(&mut store, "shop", &state("1"));
        commit(&mut store, "shop", &state("2"));
        let mut set = DesiredSet::default();
        assert!(set.load(&store).unwrap());
        assert_eq!(set.len(), count);
        for (key, _) in set.typed_keys() {
            let desired = set.get(key).unwrap();
            assert_eq!(
                desired.manifest(set.packing())["data"]["k"],
                "2",
                "{}",
                key.name
            );
            assert_eq!(
                desired.previous(set.packing()).unwrap()["data"]["k"],
                "1",
                "{}",
                key.name
            );
            assert_eq!(
                desired.manifest(set.packing())["metadata"]["name"],
                key.name.as_str()
            );
        }
    }

    #[test]
    fn poll_reads_only_after_another_connection_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driftd.db");
        let mut writer = Store::open(&path).unwrap();
        let reader = Store::open(&path).unwrap();
        let mut set = DesiredSet::default();
        assert!(set.poll(&reader).unwrap());
        assert!(!set.poll(&reader).unwrap());
        commit(&mut writer, "shop", &cm("a", "1"));
        assert!(set.poll(&reader).unwrap());
        assert_eq!(names(&set), ["a"]);
    }
}
