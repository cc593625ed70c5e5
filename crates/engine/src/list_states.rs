//! Where the list of each watched kind stands. Only a completed list says which objects
//! exist, so it decides which comparisons count: an object whose kind was never listed is
//! not judged (it would look missing), and an object a re-list did not return is gone even
//! if its deletion was never seen (watch history compacted while disconnected).
//!
//! One [`ListState`] per kind, stepped by [`ListState::step`] on the watcher's events, in
//! the manner of kube-runtime's `watcher` state machine. Messages of a replaced watcher are
//! told apart by [`WatcherId`] and dropped.
//!
//! Beside it, per kind: whether its watch is healthy ([`Health`]: failing from the first
//! failed attempt until the server answers again), and the highest resourceVersion the
//! server reported since the kind's last list, so a server whose state went back (an etcd
//! restore) is noticed and the kind listed afresh ([`Lists::position`]).

use super::index::WatchHealth;
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_watch::{WatchControl, WatcherId};
use jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The list lifecycle of one kind.
#[derive(Debug, Clone, PartialEq)]
enum ListState {
    /// A first watcher resolves the kind; nothing is known yet.
    Resolving,
    /// The first list is under way.
    Listing { seen: HashSet<ObjectKey> },
    /// The cluster does not serve the kind: none of its objects exist.
    NotServed,
    /// Listed; watch events keep the live copies current.
    Listed,
    /// A new watcher replaces one that had listed: objects keep being judged on their live
    /// copies, except `waiting` ones (desired since the last list), which the old list passed
    /// over.
    Restarting { waiting: BTreeSet<ObjectKey> },
    /// A list after the first (a new watcher, or `410 Gone` on resume); objects not `seen`
    /// by its end are gone.
    Relisting {
        seen: HashSet<ObjectKey>,
        waiting: BTreeSet<ObjectKey>,
    },
}

/// What a watcher reports, as far as the list lifecycle cares.
#[derive(Debug, Clone, Copy)]
pub enum ListEvent<'a> {
    /// A (re-)list starts.
    Init,
    /// An object was listed or changed.
    Seen(&'a ObjectKey),
    /// The (re-)list ended.
    Done,
    /// Discovery: the kind is not served.
    NotServed,
}

impl ListState {
    /// One step. Returns the objects that exist when the event ends a list.
    fn step(self, event: ListEvent) -> (ListState, Option<HashSet<ObjectKey>>) {
        use ListState::*;
        match (self, event) {
            (NotServed, ListEvent::NotServed) => (NotServed, None),
            (_, ListEvent::NotServed) => (NotServed, Some(HashSet::new())),
            (Resolving | Listing { .. }, ListEvent::Init) => (
                Listing {
                    seen: HashSet::new(),
                },
                None,
            ),
            (Listed | NotServed, ListEvent::Init) => (
                Relisting {
                    seen: HashSet::new(),
                    waiting: BTreeSet::new(),
                },
                None,
            ),
            (Restarting { waiting } | Relisting { waiting, .. }, ListEvent::Init) => (
                Relisting {
                    seen: HashSet::new(),
                    waiting,
                },
                None,
            ),
            (Listing { mut seen }, ListEvent::Seen(key)) => {
                seen.insert(key.clone());
                (Listing { seen }, None)
            }
            (Relisting { mut seen, waiting }, ListEvent::Seen(key)) => {
                seen.insert(key.clone());
                (Relisting { seen, waiting }, None)
            }
            (Listing { seen } | Relisting { seen, .. }, ListEvent::Done) => (Listed, Some(seen)),
            // Watch events between lists, or a watcher breaking protocol: nothing to learn.
            (state, ListEvent::Seen(_) | ListEvent::Done) => (state, None),
        }
    }

    /// `waiting` became desired since the kind was listed. Returns the new state and whether
    /// the watcher must list again, because a list it already delivered passed them over.
    fn await_relist(self, waiting: BTreeSet<ObjectKey>) -> (ListState, bool) {
        use ListState::*;
        match self {
            // Nothing delivered yet, or nothing exists: the next list will do.
            Resolving => (Resolving, false),
            NotServed => (NotServed, false),
            Restarting { waiting: mut w } => {
                w.extend(waiting);
                (Restarting { waiting: w }, false)
            }
            Listing { .. } => (Resolving, true),
            Listed => (Restarting { waiting }, true),
            Relisting { waiting: mut w, .. } => {
                w.extend(waiting);
                (Restarting { waiting: w }, true)
            }
        }
    }

    /// Whether a comparison of `key` counts. A first list judges each object as it comes
    /// (only what it has not seen by its end waits, to be found missing): the object is a
    /// tree at hand then, where judging at the end would unpack every copy just packed.
    fn judges(&self, key: &ObjectKey) -> bool {
        match self {
            ListState::Listed | ListState::NotServed => true,
            ListState::Listing { seen } => seen.contains(key),
            ListState::Restarting { waiting } | ListState::Relisting { waiting, .. } => {
                !waiting.contains(key)
            }
            ListState::Resolving => false,
        }
    }

    /// Whether the kind was listed at least once (readiness).
    fn listed_once(&self) -> bool {
        !matches!(self, ListState::Resolving | ListState::Listing { .. })
    }
}

/// Whether the watch of one kind works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// The server has not answered yet (the first list is under way).
    Unknown,
    /// The last attempt succeeded.
    Healthy,
    /// Every attempt since `since` failed: what is known of the kind may be stale.
    Failing { since: Timestamp },
}

impl Health {
    /// A list or watch attempt failed at `now`; an outage keeps its first failure's time.
    fn failed(self, now: Timestamp) -> Health {
        match self {
            Health::Failing { since } => Health::Failing { since },
            Health::Unknown | Health::Healthy => Health::Failing { since: now },
        }
    }
}

#[derive(Debug)]
struct Watched {
    watcher: WatcherId,
    state: ListState,
    health: Health,
    /// When the server last answered for this kind.
    last_event: Option<Timestamp>,
    /// The highest resourceVersion the server reported since the kind's last list began
    /// (compared only when it is an integer, as etcd-backed ones are).
    position: Option<u64>,
}

impl Watched {
    fn new(watcher: WatcherId) -> Watched {
        Watched {
            watcher,
            state: ListState::Resolving,
            health: Health::Unknown,
            last_event: None,
            position: None,
        }
    }
}

/// Where a resourceVersion the engine is told about comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// The server's own: a list's, a bookmark's, or its current one asked before a watch
    /// resumes.
    Server,
    /// An object's in a watch event: the server's position only between lists (a listed
    /// object's resourceVersion is when it last changed).
    Event,
}

/// The watched kinds and their list lifecycles; starts and stops their watchers.
#[derive(Debug, Default)]
pub struct Lists {
    kinds: BTreeMap<TypeKey, Watched>,
}

impl Lists {
    /// Watches exactly `wanted`: starts watchers for new kinds, stops the others.
    pub fn sync(&mut self, wanted: &BTreeSet<TypeKey>, control: &mut impl WatchControl) {
        self.kinds.retain(|kind, _| {
            let keep = wanted.contains(kind);
            if !keep {
                control.stop(kind);
            }
            keep
        });
        for kind in wanted {
            if !self.kinds.contains_key(kind) {
                let watcher = control.start(kind);
                self.kinds.insert(kind.clone(), Watched::new(watcher));
            }
        }
    }

    /// Objects of `kind` that matter now (newly desired, or newly unowned) but that a list
    /// already delivered may have passed over: restarts the watcher if needed, and keeps
    /// `waiting` from being judged until the next list ends.
    pub fn relist(
        &mut self,
        kind: &TypeKey,
        waiting: BTreeSet<ObjectKey>,
        control: &mut impl WatchControl,
    ) {
        let Some(watched) = self.kinds.get_mut(kind) else {
            return;
        };
        let state = std::mem::replace(&mut watched.state, ListState::Resolving);
        let (state, restart) = state.await_relist(waiting);
        watched.state = state;
        if restart {
            watched.watcher = control.start(kind);
        }
    }

    /// Lists every listed kind again (a periodic re-list): whatever a watch missed (a
    /// server whose state went back to lower resourceVersions sends nothing newer than a
    /// client's position) is found by the list. Objects keep being judged on their live
    /// copies meanwhile, so readiness does not drop, and each watcher lists in place
    /// ([`WatchControl::relist`]), so their changes keep coming while every kind lists.
    /// Returns how many kinds re-list.
    pub fn relist_listed(&mut self, control: &mut impl WatchControl) -> usize {
        let mut count = 0;
        for (kind, watched) in &mut self.kinds {
            if watched.state == ListState::Listed {
                watched.state = ListState::Restarting {
                    waiting: BTreeSet::new(),
                };
                watched.watcher = control.relist(kind);
                count += 1;
            }
        }
        count
    }

    /// Whether `watcher` is the current watcher of `kind` (else its messages are stale).
    pub fn is_current(&self, kind: &TypeKey, watcher: WatcherId) -> bool {
        self.kinds.get(kind).is_some_and(|w| w.watcher == watcher)
    }

    /// The server answered for `kind` at `now` (a list, a watch opened, an event): its
    /// watch is healthy. Returns the outage this ends, if one: since when it failed.
    pub fn answered(&mut self, kind: &TypeKey, now: Timestamp) -> Option<Timestamp> {
        let watched = self.kinds.get_mut(kind)?;
        watched.last_event = Some(now);
        let ended = match watched.health {
            Health::Failing { since } => Some(since),
            Health::Unknown | Health::Healthy => None,
        };
        watched.health = Health::Healthy;
        ended
    }

    /// An attempt to list or watch `kind` failed at `now` (whatever the watcher retries
    /// later). Returns true if this starts an outage.
    pub fn failed(&mut self, kind: &TypeKey, now: Timestamp) -> bool {
        let Some(watched) = self.kinds.get_mut(kind) else {
            return false;
        };
        let starts = !matches!(watched.health, Health::Failing { .. });
        watched.health = watched.health.failed(now);
        starts
    }

    /// The server reported `resource_version` for `kind`. If it is lower than one reported
    /// since the kind's last list began, the server's state went back (an etcd restore:
    /// a watch resumed from a position the server has not reached yet is accepted and
    /// stays silent until it does, so changes in between would never arrive): the watcher
    /// is restarted and lists afresh. Returns true then.
    ///
    /// resourceVersions are opaque strings by the API conventions; etcd-backed ones are
    /// integers that only grow, so two are compared only when both parse as `u64`.
    pub fn position(
        &mut self,
        kind: &TypeKey,
        resource_version: &str,
        source: Position,
        control: &mut impl WatchControl,
    ) -> bool {
        let Some(watched) = self.kinds.get_mut(kind) else {
            return false;
        };
        if source == Position::Event && watched.state != ListState::Listed {
            return false; // a listed object's version, not the server's position
        }
        let Ok(rv) = resource_version.parse::<u64>() else {
            return false;
        };
        match watched.position {
            Some(highest) if rv < highest => {
                let state = std::mem::replace(&mut watched.state, ListState::Resolving);
                watched.state = state.await_relist(BTreeSet::new()).0;
                watched.position = None;
                watched.watcher = control.start(kind);
                true
            }
            _ => {
                watched.position = Some(rv.max(watched.position.unwrap_or(0)));
                false
            }
        }
    }

    /// How the watch of every watched kind stands, in kind order.
    pub fn health(&self) -> Vec<WatchHealth> {
        self.kinds
            .iter()
            .map(|(kind, w)| WatchHealth {
                kind: kind.clone(),
                healthy: w.health == Health::Healthy,
                unhealthy_since: match w.health {
                    Health::Failing { since } => Some(since),
                    Health::Unknown | Health::Healthy => None,
                },
                last_event: w.last_event,
            })
            .collect()
    }

    /// Steps the lifecycle of `kind`; returns the objects that exist when a list ended.
    pub fn step(&mut self, kind: &TypeKey, event: ListEvent) -> Option<HashSet<ObjectKey>> {
        let watched = self.kinds.get_mut(kind)?;
        if matches!(event, ListEvent::Init) {
            // A fresh list is the truth whatever its resourceVersion.
            watched.position = None;
        }
        let state = std::mem::replace(&mut watched.state, ListState::Resolving);
        let (state, done) = state.step(event);
        watched.state = state;
        done
    }

    /// Whether a comparison of `key`, of `kind`, counts.
    pub fn judges(&self, kind: &TypeKey, key: &ObjectKey) -> bool {
        self.kinds.get(kind).is_some_and(|w| w.state.judges(key))
    }

    /// Whether a list of `kind` delivered objects the engine took in: only then may it have
    /// passed over objects that matter now ([`Lists::relist`] does nothing otherwise).
    pub fn delivered(&self, kind: &TypeKey) -> bool {
        self.kinds
            .get(kind)
            .is_some_and(|w| !matches!(w.state, ListState::Resolving | ListState::NotServed))
    }

    /// The objects of `kind` a re-list under way does not judge as they come (desired since
    /// the last list): the only listed ones to judge when it ends.
    pub fn waiting(&self, kind: &TypeKey) -> BTreeSet<ObjectKey> {
        match self.kinds.get(kind).map(|w| &w.state) {
            Some(ListState::Restarting { waiting } | ListState::Relisting { waiting, .. }) => {
                waiting.clone()
            }
            _ => BTreeSet::new(),
        }
    }

    /// Whether `kind` is watched and was listed at least once.
    pub fn listed_once(&self, kind: &TypeKey) -> bool {
        self.kinds.get(kind).is_some_and(|w| w.state.listed_once())
    }

    /// Whether every watched kind has sent objects or was listed: a sample of what was
    /// listed so far then has every kind in it.
    pub fn each_kind_begun(&self) -> bool {
        self.kinds.values().all(|w| match &w.state {
            ListState::Listing { seen } => !seen.is_empty(),
            state => state.listed_once(),
        })
    }

    /// Whether every watched kind was listed at least once.
    pub fn all_listed(&self) -> bool {
        self.kinds.values().all(|w| w.state.listed_once())
    }

    pub fn contains(&self, kind: &TypeKey) -> bool {
        self.kinds.contains_key(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        crate::test_support::configmap("shop", name)
    }

    fn keys(names: &[&str]) -> HashSet<ObjectKey> {
        names.iter().map(|n| key(n)).collect()
    }

    fn run(mut state: ListState, events: &[ListEvent]) -> (ListState, Vec<HashSet<ObjectKey>>) {
        let mut done = Vec::new();
        for event in events {
            let (next, ended) = state.step(*event);
            state = next;
            done.extend(ended);
        }
        (state, done)
    }

    #[test]
    fn a_first_list_judges_what_it_saw_and_nothing_else_until_it_ends() {
        let (a, b) = (key("a"), key("b"));
        assert!(!ListState::Resolving.judges(&a));
        let (state, done) = run(
            ListState::Resolving,
            &[ListEvent::Init, ListEvent::Seen(&a)],
        );
        assert!(state.judges(&a) && !state.listed_once());
        assert!(!state.judges(&b), "not seen yet: not missing yet");
        let (state, done2) = run(state, &[ListEvent::Seen(&b), ListEvent::Done]);
        assert!(done.is_empty());
        assert_eq!(done2, vec![keys(&["a", "b"])]);
        assert_eq!(state, ListState::Listed);
        assert!(state.judges(&a));
    }

    #[test]
    fn a_relist_keeps_judging_and_ends_with_what_it_saw() {
        let a = key("a");
        let (state, _) = run(ListState::Listed, &[ListEvent::Init, ListEvent::Seen(&a)]);
        assert!(
            state.judges(&key("b")),
            "judged on the last live copy meanwhile"
        );
        let (state, done) = run(state, &[ListEvent::Done]);
        assert_eq!(done, vec![keys(&["a"])], "b was not re-listed: gone");
        assert_eq!(state, ListState::Listed);
    }

    #[test]
    fn not_served_ends_with_nothing_once() {
        let (state, done) = run(
            ListState::Listed,
            &[ListEvent::NotServed, ListEvent::NotServed],
        );
        assert_eq!(done, vec![HashSet::new()], "the retry says nothing new");
        assert!(state.judges(&key("a")) && state.listed_once());
        // The CRD appears later: a normal list.
        let a = key("a");
        let (state, done) = run(
            state,
            &[ListEvent::Init, ListEvent::Seen(&a), ListEvent::Done],
        );
        assert_eq!((state, done), (ListState::Listed, vec![keys(&["a"])]));
    }

    #[test]
    fn new_objects_of_a_listed_kind_wait_for_a_new_list() {
        let (state, restart) = ListState::Listed.await_relist([key("new")].into());
        assert!(restart);
        assert!(!state.judges(&key("new")));
        assert!(state.judges(&key("old")));
        // More arrive before the new watcher listed: no second restart.
        let (state, restart) = state.await_relist([key("newer")].into());
        assert!(!restart);
        let new = key("new");
        let (state, done) = run(
            state,
            &[ListEvent::Init, ListEvent::Seen(&new), ListEvent::Done],
        );
        assert_eq!(done, vec![keys(&["new"])]);
        assert!(state.judges(&key("newer")));

        // During a first list the list restarts; before any, nothing to do.
        let listing = ListState::Listing { seen: keys(&["a"]) };
        assert_eq!(
            listing.await_relist([key("b")].into()),
            (ListState::Resolving, true)
        );
        assert_eq!(
            ListState::Resolving.await_relist([key("b")].into()),
            (ListState::Resolving, false)
        );
    }

    /// Records what the engine asked of its watchers.
    #[derive(Default)]
    struct Control {
        last: u64,
        log: Vec<String>,
    }

    impl WatchControl for Control {
        fn start(&mut self, kind: &TypeKey) -> WatcherId {
            self.last += 1;
            self.log.push(format!("start {}", kind.kind));
            WatcherId(self.last)
        }

        fn relist(&mut self, kind: &TypeKey) -> WatcherId {
            self.log.push(format!("relist {}", kind.kind));
            WatcherId(self.last)
        }

        fn stop(&mut self, kind: &TypeKey) {
            self.log.push(format!("stop {}", kind.kind));
        }

        fn start_pods_named(&mut self, name: &str) -> WatcherId {
            self.last += 1;
            self.log.push(format!("start pods {name}"));
            WatcherId(self.last)
        }

        fn stop_pods_named(&mut self, name: &str) {
            self.log.push(format!("stop pods {name}"));
        }
    }

    #[test]
    fn sync_starts_and_stops_watchers_and_a_restart_makes_old_messages_stale() {
        let cm = TypeKey {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        let svc = TypeKey {
            api_version: "v1".into(),
            kind: "Service".into(),
        };
        let mut control = Control::default();
        let mut lists = Lists::default();
        lists.sync(&[cm.clone(), svc.clone()].into(), &mut control);
        assert!(!lists.all_listed());
        for kind in [&cm, &svc] {
            lists.step(kind, ListEvent::Init);
            lists.step(kind, ListEvent::Done);
        }
        assert!(lists.all_listed());
        lists.sync(&[cm.clone()].into(), &mut control);
        assert_eq!(
            control.log,
            ["start ConfigMap", "start Service", "stop Service"]
        );
        assert!(lists.is_current(&cm, WatcherId(1)));
        lists.relist(&cm, [key("new")].into(), &mut control);
        assert!(!lists.is_current(&cm, WatcherId(1)));
        assert!(lists.is_current(&cm, WatcherId(3)));
        assert!(lists.all_listed(), "a re-list is not an outage");
        assert!(!lists.judges(&cm, &key("new")) && lists.judges(&cm, &key("old")));
        assert!(!lists.judges(&svc, &key("old")), "not watched");
        assert_eq!(
            lists.waiting(&cm),
            [key("new")].into(),
            "only what the re-list waits for is judged when it ends"
        );
        lists.step(&cm, ListEvent::Init);
        lists.step(&cm, ListEvent::Done);
        assert!(lists.waiting(&cm).is_empty(), "listed: nothing waits");
    }

    #[test]
    fn a_periodic_relist_lists_in_place_and_counts_changes_made_meanwhile_as_seen() {
        let cm = TypeKey {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
        };
        let mut control = Control::default();
        let mut lists = Lists::default();
        lists.sync(&[cm.clone()].into(), &mut control);
        lists.step(&cm, ListEvent::Init);
        lists.step(&cm, ListEvent::Seen(&key("a")));
        lists.step(&cm, ListEvent::Seen(&key("b")));
        lists.step(&cm, ListEvent::Done);
        assert_eq!(lists.relist_listed(&mut control), 1);
        assert_eq!(control.log, ["start ConfigMap", "relist ConfigMap"]);
        assert!(
            lists.is_current(&cm, WatcherId(1)),
            "the running watcher lists: its changes still count"
        );
        assert!(lists.judges(&cm, &key("a")) && lists.all_listed());
        lists.step(&cm, ListEvent::Init);
        // A change the watch delivers while the list goes on, and an object it listed.
        lists.step(&cm, ListEvent::Seen(&key("b")));
        assert!(lists.judges(&cm, &key("b")), "judged as it comes");
        lists.step(&cm, ListEvent::Seen(&key("c")));
        let done = lists.step(&cm, ListEvent::Done);
        assert_eq!(
            done,
            Some(keys(&["b", "c"])),
            "a was neither listed nor changed: gone"
        );
        assert_eq!(
            lists.relist_listed(&mut Control::default()),
            1,
            "listed again"
        );
    }

    #[test]
    fn each_kind_has_begun_once_every_kind_sent_objects_or_was_listed() {
        let kind = |name: &str| TypeKey {
            api_version: "v1".into(),
            kind: name.into(),
        };
        let (cm, svc, empty) = (kind("ConfigMap"), kind("Service"), kind("Secret"));
        let mut lists = Lists::default();
        lists.sync(
            &[cm.clone(), svc.clone(), empty.clone()].into(),
            &mut Control::default(),
        );
        assert!(!lists.each_kind_begun(), "nothing listed yet");
        lists.step(&cm, ListEvent::Init);
        lists.step(&cm, ListEvent::Seen(&key("a")));
        lists.step(&svc, ListEvent::Init);
        lists.step(&empty, ListEvent::Init);
        lists.step(&empty, ListEvent::Done);
        assert!(!lists.each_kind_begun(), "Services listing, none sent yet");
        lists.step(&svc, ListEvent::Seen(&key("b")));
        assert!(lists.each_kind_begun());
        assert!(!lists.all_listed(), "begun is not listed");
    }
}
