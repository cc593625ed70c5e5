//! The drift index: everything the engine publishes as state. `/drift` queries it and
//! `/metrics` renders its families from it at scrape time, as kube-state-metrics renders
//! from its store.

use driftd_core::report::{DriftClass, DriftEntry, DriftFilter, ScopeNote, StaleKind, StaleLock};
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_store::RevisionInfo;
use jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};

mod pages;
mod token;

pub use pages::{
    Page, PageError, DEFAULT_PAGE_SIZE, INCONSISTENT_CONTINUE, MAX_PAGE_SIZE, MAX_SNAPSHOTS,
    MAX_SNAPSHOT_KEYS, SNAPSHOT_TTL,
};

/// The current drift of every desired object whose kind has been listed, unmanaged objects,
/// and the facts the metrics report beside them.
#[derive(Debug)]
pub struct DriftIndex {
    /// Keys shared with the engine's own maps (one copy per object). Found by hash: every
    /// watch event's judgement looks its entry up, and at 100,000 objects the key
    /// comparisons of a B-tree search were a tenth of the engine's thread.
    /// Entries are boxed, so the table's spare slots cost a pointer rather than 300 bytes;
    /// the box is reused when an entry is replaced.
    entries: HashMap<Arc<ObjectKey>, Box<DriftEntry>>,
    /// Keys of the entries that are not `in_sync`: what `/drift` lists by default, found
    /// without walking every in-sync object. These key sets are hashed too (a query sorts
    /// what it answers): a B-tree insert was 6% of serve's CPU while edits made objects
    /// drift.
    not_in_sync: HashSet<Arc<ObjectKey>>,
    /// Keys by namespace (`""`: cluster-scoped), for `/drift?namespace=`. Without these a
    /// filtered `/drift` walked every entry: at 100,000 objects, polls of one namespace
    /// took most of `driftd serve`'s CPU (`perf`: `DriftFilter::matches` first).
    by_namespace: HashMap<String, HashSet<Arc<ObjectKey>>>,
    ready: bool,
    /// Every source in the store, with the commit time of its newest revision.
    sources: BTreeMap<String, Timestamp>,
    /// The newest revision of every source, for the drift page.
    revisions: Vec<RevisionInfo>,
    /// Covered live objects a source owns; `None` while coverage is off.
    owned_covered: Option<usize>,
    rules_expired: usize,
    series: SeriesSlots,
    /// Intents by source and state (`pending`, ...): open ones and recently ended ones.
    intents: BTreeMap<(String, &'static str), usize>,
    /// Stale deploy locks, and whether every holder was listed and lock folder scanned.
    locks: Vec<StaleLock>,
    locks_ready: bool,
    /// How the watch of every watched kind stands, in kind order.
    watch_health: Vec<WatchHealth>,
    /// Custom kinds (group, kind) whose scope nothing tells yet: `/drift`'s `scope`.
    unresolved_scopes: BTreeSet<(String, String)>,
    /// Snapshots of the lists `/drift` is paging through ([`pages`]). A mutex, so pages are
    /// answered under the index's read lock; the engine's writes reach it without locking.
    pages: Mutex<pages::Snapshots>,
}

/// How the watch of one kind stands: what `driftd_watch_healthy`, the last-event
/// timestamp and the `stale` marks of `/drift` are made of.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchHealth {
    pub kind: TypeKey,
    /// True once the server answered, until an attempt fails.
    pub healthy: bool,
    /// The first failed attempt of the current outage (`None` while healthy, and before
    /// the first answer).
    pub unhealthy_since: Option<Timestamp>,
    /// When the server last answered for this kind (a list, a watch opened, an event).
    pub last_event: Option<Timestamp>,
}

/// Which drifting objects get per-object metric series: at most `cap`, first come first
/// served, so a series does not move between objects from one scrape to the next.
#[derive(Debug)]
struct SeriesSlots {
    cap: usize,
    holders: BTreeSet<Arc<ObjectKey>>,
    /// Drifting objects (slot or not).
    drifting: usize,
    /// Drifts that started while every slot was taken.
    omitted: u64,
}

/// Whether an entry is a drift of a desired object (unmanaged objects have no source and no
/// per-object series).
fn drifting(entry: &DriftEntry) -> bool {
    !matches!(entry.class, DriftClass::InSync | DriftClass::Unmanaged)
}

impl DriftIndex {
    /// An empty index whose per-object series are capped at `max_object_series`.
    pub fn new(max_object_series: usize) -> DriftIndex {
        DriftIndex {
            entries: HashMap::new(),
            not_in_sync: HashSet::new(),
            by_namespace: HashMap::new(),
            ready: false,
            sources: BTreeMap::new(),
            revisions: Vec::new(),
            owned_covered: None,
            rules_expired: 0,
            intents: BTreeMap::new(),
            locks: Vec::new(),
            locks_ready: false,
            watch_health: Vec::new(),
            unresolved_scopes: BTreeSet::new(),
            pages: Mutex::new(pages::Snapshots::new()),
            series: SeriesSlots {
                cap: max_object_series,
                holders: BTreeSet::new(),
                drifting: 0,
                omitted: 0,
            },
        }
    }

    /// Sets the entry of `key`, returning the previous one.
    pub fn upsert(
        &mut self,
        key: impl Into<Arc<ObjectKey>>,
        entry: DriftEntry,
    ) -> Option<DriftEntry> {
        let key = key.into();
        let now = drifting(&entry);
        let in_sync = entry.class == DriftClass::InSync;
        let old = match self.entries.get_mut(&key) {
            Some(held) => Some(std::mem::replace(&mut **held, entry)),
            None => {
                self.entries.insert(key.clone(), Box::new(entry));
                None
            }
        };
        self.snapshots().preserve(&key, old.as_ref());
        // The not-in-sync set changes only when the entry goes in or out of sync.
        if old.as_ref().map(|old| old.class == DriftClass::InSync) != Some(in_sync) {
            if in_sync {
                self.not_in_sync.remove(&key);
            } else {
                self.not_in_sync.insert(key.clone());
            }
        }
        if old.is_none() {
            self.by_namespace
                .entry(key.namespace.clone().unwrap_or_default())
                .or_default()
                .insert(key.clone());
        }
        let was = old.as_ref().is_some_and(drifting);
        match (was, now) {
            (false, true) => self.drift_started(key),
            (true, false) => self.drift_ended(&key),
            _ => {}
        }
        old
    }

    pub fn remove(&mut self, key: &ObjectKey) -> Option<DriftEntry> {
        let old = *self.entries.remove(key)?;
        self.snapshots().preserve(key, Some(&old));
        self.not_in_sync.remove(key);
        let namespace = key.namespace.as_deref().unwrap_or_default();
        if let Some(keys) = self.by_namespace.get_mut(namespace) {
            keys.remove(key);
            if keys.is_empty() {
                self.by_namespace.remove(namespace);
            }
        }
        if drifting(&old) {
            self.drift_ended(key);
        }
        Some(old)
    }

    fn drift_started(&mut self, key: Arc<ObjectKey>) {
        let series = &mut self.series;
        series.drifting += 1;
        if series.holders.len() < series.cap {
            series.holders.insert(key);
        } else {
            series.omitted += 1;
        }
    }

    /// Frees the slot of `key`, if it had one, for the longest-drifting object without one.
    fn drift_ended(&mut self, key: &ObjectKey) {
        let series = &mut self.series;
        series.drifting -= 1;
        if !series.holders.remove(key) || series.holders.len() == series.drifting {
            return; // no slot freed, or nobody waits for one
        }
        // Drifting entries are among the not-in-sync ones: at a million objects with 5%
        // drifting, a walk of every entry here took tens of milliseconds per freed slot.
        let entries = &self.entries;
        let next = self
            .not_in_sync
            .iter()
            .filter(|k| !series.holders.contains(&***k))
            .filter_map(|k| Some((entries.get(&**k).filter(|e| drifting(e))?.since, k)))
            .min()
            .map(|(_, k)| k.clone());
        series.holders.extend(next);
    }

    /// The custom kinds whose scope nothing tells yet (no committed CRD, not served).
    pub fn set_unresolved_scopes(&mut self, kinds: BTreeSet<(String, String)>) {
        self.unresolved_scopes = kinds;
    }

    fn scope_of(&self, entry: &DriftEntry) -> Option<ScopeNote> {
        if self.unresolved_scopes.is_empty() {
            return None;
        }
        let group = driftd_k8s::kinds::split_api_version(&entry.api_version).0;
        self.unresolved_scopes
            .contains(&(group.to_string(), entry.kind.clone()))
            .then_some(ScopeNote::Unresolved)
    }

    pub fn get(&self, key: &ObjectKey) -> Option<&DriftEntry> {
        self.entries.get(key).map(|entry| &**entry)
    }

    /// The paging snapshots, from the write side (no lock taken: `&mut self` is exclusive).
    fn snapshots(&mut self) -> &mut pages::Snapshots {
        self.pages
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every entry matching `filter`, in list order (source, kind, namespace, name,
    /// apiVersion); those of a kind whose watch is failing are marked `stale`. `/drift`
    /// answers in pages ([`DriftIndex::page`]); this is the whole list at once.
    pub fn query(&self, filter: &DriftFilter) -> Vec<DriftEntry> {
        let stale = self.stale_set();
        let mut out: Vec<&DriftEntry> = self
            .candidates(filter)
            .filter_map(|key| self.get(key))
            .filter(|e| filter.matches(e))
            .collect();
        out.sort_unstable_by(|a, b| token::order(a).cmp(&token::order(b)));
        out.into_iter().map(|e| self.answered(e, &stale)).collect()
    }

    /// The smallest set of keys that holds every entry `filter` matches; `matches` decides.
    fn candidates<'a>(
        &'a self,
        filter: &DriftFilter,
    ) -> Box<dyn Iterator<Item = &'a Arc<ObjectKey>> + 'a> {
        match (&filter.namespace, filter.class) {
            (Some(namespace), _) => {
                Box::new(self.by_namespace.get(namespace).into_iter().flatten())
            }
            (None, Some(DriftClass::InSync)) => Box::new(self.entries.keys()),
            (None, _) => Box::new(self.not_in_sync.iter()),
        }
    }

    /// Every entry, in no particular order.
    pub fn entries(&self) -> impl Iterator<Item = &DriftEntry> {
        self.entries.values().map(|entry| &**entry)
    }

    /// The drifting entries that have per-object series (see `metrics.max_object_series`).
    pub fn series_holders(&self) -> impl Iterator<Item = &DriftEntry> {
        self.series.holders.iter().filter_map(|key| self.get(key))
    }

    /// Drifts that started while every per-object series slot was taken.
    pub fn series_omitted(&self) -> u64 {
        self.series.omitted
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True once the desired state is loaded and every watcher finished its first list.
    pub fn ready(&self) -> bool {
        self.ready
    }

    pub fn set_ready(&mut self, ready: bool) {
        self.ready = ready;
    }

    pub fn sources(&self) -> &BTreeMap<String, Timestamp> {
        &self.sources
    }

    pub fn set_sources(&mut self, sources: BTreeMap<String, Timestamp>) {
        self.sources = sources;
    }

    /// The newest revision of every source (number, author, message, commit time).
    pub fn revisions(&self) -> &[RevisionInfo] {
        &self.revisions
    }

    pub fn set_revisions(&mut self, revisions: Vec<RevisionInfo>) {
        self.revisions = revisions;
    }

    /// Covered live objects a source owns; `None` while coverage is off.
    pub fn owned_covered(&self) -> Option<usize> {
        self.owned_covered
    }

    pub fn set_owned_covered(&mut self, owned: Option<usize>) {
        self.owned_covered = owned;
    }

    /// Ignore rules past their expiry.
    pub fn rules_expired(&self) -> usize {
        self.rules_expired
    }

    pub fn set_rules_expired(&mut self, count: usize) {
        self.rules_expired = count;
    }

    /// Intents by (source, state).
    pub fn intents(&self) -> &BTreeMap<(String, &'static str), usize> {
        &self.intents
    }

    pub fn set_intents(&mut self, counts: BTreeMap<(String, &'static str), usize>) {
        self.intents = counts;
    }

    /// Stale deploy locks, ordered by kind, source and id.
    pub fn locks(&self) -> &[StaleLock] {
        &self.locks
    }

    /// False while a holder pod was not listed or a lock folder not scanned yet.
    pub fn locks_ready(&self) -> bool {
        self.locks_ready
    }

    pub fn set_locks(&mut self, locks: Vec<StaleLock>, ready: bool) {
        self.locks = locks;
        self.locks_ready = ready;
    }
}

impl DriftIndex {
    /// How the watch of every watched kind stands.
    pub fn watch_health(&self) -> &[WatchHealth] {
        &self.watch_health
    }

    pub fn set_watch_health(&mut self, health: Vec<WatchHealth>) {
        self.watch_health = health;
    }

    /// The kinds whose watch is failing, with since when (`/drift`'s `stale`).
    pub fn stale_kinds(&self) -> Vec<StaleKind> {
        self.watch_health
            .iter()
            .filter_map(|h| {
                Some(StaleKind {
                    api_version: h.kind.api_version.clone(),
                    kind: h.kind.kind.clone(),
                    since: h.unhealthy_since?,
                })
            })
            .collect()
    }
}

/// Read access for HTTP handlers and metrics; the engine holds the write side.
pub type SharedIndex = Arc<RwLock<DriftIndex>>;

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, class: DriftClass, since_secs: i64) -> (ObjectKey, DriftEntry) {
        let key = crate::test_support::configmap("shop", name);
        let since = Timestamp::from_second(since_secs).unwrap();
        let entry = crate::test_support::entry("shop", &key, class, since);
        (key, entry)
    }

    fn holders(index: &DriftIndex) -> Vec<&str> {
        index.series_holders().map(|e| e.name.as_str()).collect()
    }

    #[test]
    fn series_slots_go_first_come_and_a_freed_one_to_the_longest_drifting() {
        let mut index = DriftIndex::new(2);
        for (name, since) in [("a", 10), ("b", 20), ("c", 30), ("d", 25)] {
            let (k, e) = entry(name, DriftClass::Modified, since);
            index.upsert(k, e);
        }
        assert_eq!(holders(&index), ["a", "b"]);
        assert_eq!(index.series_omitted(), 2);
        // Re-evaluated, or another class: the same drift, not counted again.
        let (k, e) = entry("c", DriftClass::Missing, 30);
        index.upsert(k, e);
        let (k, e) = entry("a", DriftClass::Missing, 10);
        index.upsert(k, e);
        assert_eq!(index.series_omitted(), 2);
        assert_eq!(holders(&index), ["a", "b"]);

        let (k, e) = entry("b", DriftClass::InSync, 0);
        index.upsert(k, e);
        assert_eq!(holders(&index), ["a", "d"], "d drifts longer than c");
        index.remove(&entry("a", DriftClass::InSync, 0).0);
        assert_eq!(holders(&index), ["c", "d"]);
        let (k, e) = entry("e", DriftClass::Unmanaged, 5);
        index.upsert(k, e);
        assert_eq!(
            holders(&index),
            ["c", "d"],
            "unmanaged objects have no series"
        );
        assert_eq!(index.series_omitted(), 2);
    }

    #[test]
    fn queries_answer_what_a_walk_of_every_entry_answers() {
        let mut index = DriftIndex::new(10);
        let classes = [
            DriftClass::InSync,
            DriftClass::Modified,
            DriftClass::Missing,
            DriftClass::Unmanaged,
        ];
        let mut keys = Vec::new();
        for i in 0..60 {
            let namespace = ["shop", "web", "db"][i % 3];
            let mut key = crate::test_support::configmap(namespace, &format!("cm-{i}"));
            if i % 10 == 0 {
                key.kind = "Namespace".into();
                key.namespace = None;
            }
            let mut e =
                crate::test_support::entry("team", &key, classes[i % 4], Timestamp::UNIX_EPOCH);
            if key.namespace.is_none() {
                e.namespace = None;
            }
            index.upsert(key.clone(), e);
            keys.push(key);
        }
        // Entries change class and go away: the key sets follow.
        for (i, key) in keys.iter().enumerate().step_by(7) {
            let mut e = index.get(key).unwrap().clone();
            e.class = classes[(i + 1) % 4];
            index.upsert(key.clone(), e);
        }
        for key in keys.iter().skip(5).step_by(11) {
            index.remove(key);
        }
        let walk = |filter: &DriftFilter| -> Vec<String> {
            let mut names: Vec<String> = index
                .entries()
                .filter(|e| filter.matches(e))
                .map(|e| e.name.clone())
                .collect();
            names.sort();
            names
        };
        let mut checked = 0;
        for namespace in [None, Some(""), Some("shop"), Some("web"), Some("nowhere")] {
            for class in [None].into_iter().chain(classes.map(Some)) {
                let filter = DriftFilter {
                    namespace: namespace.map(str::to_string),
                    class,
                    ..DriftFilter::default()
                };
                let mut got: Vec<String> =
                    index.query(&filter).into_iter().map(|e| e.name).collect();
                got.sort();
                assert_eq!(got, walk(&filter), "{filter:?}");
                checked += got.len();
            }
        }
        assert!(checked > 60, "the filters matched something");
        // The key sets hold what is there, nothing that left.
        let not_in_sync = index
            .entries()
            .filter(|e| e.class != DriftClass::InSync)
            .count();
        assert_eq!(index.not_in_sync.len(), not_in_sync);
        let by_namespace: usize = index.by_namespace.values().map(HashSet::len).sum();
        assert_eq!(by_namespace, index.len());
    }
}
