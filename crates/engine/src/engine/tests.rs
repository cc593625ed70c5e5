//! The engine driven as the run loop drives it, without a cluster: watch messages in, a
//! clock moved by hand, an in-memory store; what it publishes read back from the index, the
//! recorded outputs and the store's episodes.

use super::*;
use crate::clock::ManualClock;
use crate::index::DriftIndex;
use crate::outputs::Announcement;
use crate::test_support::{commit, watch_apply};
use driftd_core::report::{DriftFilter, ScopeNote};
use driftd_watch::{WatchError, WatcherId};
use serde_json::json;
use std::sync::RwLock;

const SETTLE: Duration = Duration::from_secs(5);

/// The watchers the engine asked for.
#[derive(Debug, Default)]
struct Watches {
    last: u64,
    running: BTreeMap<TypeKey, WatcherId>,
    /// Holder pod watchers by pod name.
    pods: BTreeMap<String, WatcherId>,
    /// `start Kind` / `stop Kind`, in order.
    log: Vec<String>,
    /// The kinds whose watchers pack the copies the engine keeps, as last told.
    copies: BTreeSet<TypeKey>,
}

impl WatchControl for Watches {
    fn start(&mut self, kind: &TypeKey) -> WatcherId {
        self.last += 1;
        let verb = if self.running.contains_key(kind) {
            "restart"
        } else {
            "start"
        };
        self.log.push(format!("{verb} {}", kind.kind));
        self.running.insert(kind.clone(), WatcherId(self.last));
        WatcherId(self.last)
    }

    fn stop(&mut self, kind: &TypeKey) {
        self.log.push(format!("stop {}", kind.kind));
        self.running.remove(kind);
    }

    fn start_pods_named(&mut self, name: &str) -> WatcherId {
        self.last += 1;
        self.log.push(format!("start pods {name}"));
        self.pods.insert(name.to_string(), WatcherId(self.last));
        WatcherId(self.last)
    }

    fn stop_pods_named(&mut self, name: &str) {
        self.log.push(format!("stop pods {name}"));
        self.pods.remove(name);
    }

    fn keep_copies_of(&mut self, kinds: &BTreeSet<TypeKey>) {
        self.copies = kinds.clone();
    }
}

/// What the engine published besides the index.
#[derive(Debug, Default)]
struct Recorded {
    /// `Detected ConfigMap/a`, in order.
    announcements: Vec<String>,
    /// The name and live uid each drift announcement was about, in order.
    identities: Vec<(String, Option<String>)>,
    watch_events: BTreeMap<String, u64>,
    watch_errors: BTreeMap<String, u64>,
    comparisons: usize,
    /// `what: error` of failed store operations.
    store_errors: Vec<String>,
    /// `opened web/modified`, `closed web/modified 30s reverted`, in order.
    episodes: Vec<String>,
}

impl Outputs for Recorded {
    fn watch_event(&mut self, kind: &TypeKey) {
        *self.watch_events.entry(kind.kind.clone()).or_default() += 1;
    }

    fn watch_error(&mut self, kind: &TypeKey, _error: &WatchError) {
        *self.watch_errors.entry(kind.kind.clone()).or_default() += 1;
    }

    fn compared(&mut self, _took: Duration) {
        self.comparisons += 1;
    }

    fn announce(
        &mut self,
        announcement: Announcement,
        entry: &DriftEntry,
        live: Option<&crate::LiveIdentity>,
    ) {
        self.identities
            .push((entry.name.clone(), live.and_then(|l| l.uid.clone())));
        self.announcements.push(match entry.class {
            DriftClass::Uncommitted => format!("Uncommitted {}/{}", entry.kind, entry.name),
            _ => format!("{announcement:?} {}/{}", entry.kind, entry.name),
        });
    }

    fn announce_lock(
        &mut self,
        what: crate::LockAnnouncement,
        lock: &driftd_core::report::StaleLock,
        pod: Option<&crate::PodRef>,
    ) {
        let on = pod.map_or("-".to_string(), |p| format!("{}/{}", p.namespace, p.name));
        self.announcements
            .push(format!("{what:?} {} {} on {on}", lock.kind, lock.id));
    }

    fn store_error(&mut self, what: &str, error: &StoreError) {
        self.store_errors.push(format!("{what}: {error}"));
    }

    fn episodes(&mut self, changes: &driftd_store::EpisodeChanges) {
        for closed in &changes.closed {
            self.episodes.push(format!(
                "closed {}/{} {}s {}",
                closed.source,
                closed.class,
                closed.seconds(),
                closed.ended.as_str()
            ));
        }
        for opened in &changes.opened {
            self.episodes
                .push(format!("opened {}/{}", opened.source, opened.class));
        }
    }
}

struct Harness {
    engine: Engine<Watches, Recorded>,
    clock: Arc<ManualClock>,
    index: SharedIndex,
}

/// Off in tests not about it: it adds four watched kinds (`tests/stale_config_through_engine.rs`).
fn config() -> Config {
    Config {
        settle_seconds: SETTLE.as_secs_f64(),
        stale_config: driftd_config::StaleConfigConfig {
            enabled: false,
            ..Default::default()
        },
        ..Config::default()
    }
}

fn kind(api_version: &str, kind: &str) -> TypeKey {
    TypeKey {
        api_version: api_version.into(),
        kind: kind.into(),
    }
}

fn configmaps() -> TypeKey {
    kind("v1", "ConfigMap")
}

/// Desired ConfigMap `name` in namespace `shop` with `data.k = value`.
fn cm(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: shop}}\ndata: {{k: \"{value}\"}}\n---\n"
    )
}

fn objects(yaml: &str) -> Vec<Value> {
    crate::test_support::parse(yaml)
        .into_iter()
        .map(|o| o.object)
        .collect()
}

/// The objects of `yaml` as kube-apiserver would serve them after creating them.
fn live(yaml: &str) -> Vec<Value> {
    objects(yaml)
        .into_iter()
        .map(|mut o| {
            let api_version = o["apiVersion"].as_str().unwrap().to_string();
            let kind = o["kind"].as_str().unwrap().to_string();
            driftd_k8s::defaults::apply(&api_version, &kind, &mut o);
            o
        })
        .collect()
}

fn one(yaml: &str) -> Value {
    live(yaml).remove(0)
}

impl Harness {
    fn new(store: Store, config: &Config, wall: &str) -> Harness {
        let clock = Arc::new(ManualClock::new(wall.parse().unwrap()));
        let index = Arc::new(RwLock::new(DriftIndex::new(100)));
        let engine = Engine::new(
            store,
            config,
            index.clone(),
            Packing::new(),
            Watches::default(),
            Recorded::default(),
            clock.clone(),
        )
        .unwrap();
        Harness {
            engine,
            clock,
            index,
        }
    }

    /// A fresh engine over an empty in-memory store; the desired state is loaded.
    fn start(config: &Config) -> Harness {
        Harness::start_with(config, "")
    }

    /// A fresh engine over an in-memory store where `shop` has `yaml` committed (unless
    /// empty); the desired state is loaded.
    fn start_with(config: &Config, yaml: &str) -> Harness {
        let mut store = Store::open_in_memory().unwrap();
        if !yaml.is_empty() {
            commit(&mut store, "shop", yaml);
        }
        let mut h = Harness::new(store, config, "2026-11-30T10:00:00Z");
        h.load();
        h
    }

    /// Loads the desired state as the run loop's poll does when someone committed (a commit
    /// through the engine's own connection does not move `data_version`).
    fn load(&mut self) {
        if self.engine.wanted.desired.load(&self.engine.store).unwrap() {
            self.engine.desired_loaded();
            self.engine.tracking_changed();
        }
    }

    /// Commits `yaml` as the whole of `source` and loads it.
    fn commit(&mut self, source: &str, yaml: &str) {
        commit(&mut self.engine.store, source, yaml);
        self.load();
    }

    fn watcher(&self, kind: &TypeKey) -> WatcherId {
        *self
            .engine
            .watching
            .watches
            .running
            .get(kind)
            .unwrap_or_else(|| panic!("no watcher for {kind}"))
    }

    fn message(&self, kind: &TypeKey, event: WatchEvent) -> WatchMessage {
        WatchMessage {
            type_key: kind.clone(),
            watcher: self.watcher(kind),
            event,
        }
    }

    /// Delivers events of the current watcher of `kind` as one batch.
    fn send(&mut self, kind: &TypeKey, events: Vec<WatchEvent>) {
        let messages: Vec<WatchMessage> =
            events.into_iter().map(|e| self.message(kind, e)).collect();
        self.engine.handle(messages);
    }

    /// A complete (re-)list of `kind` returning `objects`.
    fn list(&mut self, kind: &TypeKey, objects: Vec<Value>) {
        let mut events = vec![WatchEvent::Init];
        events.extend(objects.into_iter().map(watch_apply));
        events.push(WatchEvent::InitDone);
        self.send(kind, events);
    }

    fn apply(&mut self, object: Value) {
        let kind = kind_of(&object);
        self.send(&kind, vec![watch_apply(object)]);
    }

    fn delete(&mut self, object: Value) {
        let kind = kind_of(&object);
        self.send(&kind, vec![WatchEvent::Delete(object)]);
    }

    /// Moves the clock and reports what settled, as the settle tick does.
    fn advance(&mut self, by: Duration) {
        self.clock.advance(by);
        self.engine.settle_due();
    }

    fn entry(&self, kind: &str, name: &str) -> Option<DriftEntry> {
        let index = self.index.read().unwrap();
        let entry = index
            .entries()
            .find(|e| e.kind == kind && e.name == name)
            .cloned();
        entry
    }

    fn class(&self, name: &str) -> Option<DriftClass> {
        self.entry("ConfigMap", name).map(|e| e.class)
    }

    fn announced(&self) -> Vec<String> {
        self.engine.outputs.announcements.clone()
    }

    fn ready(&self) -> bool {
        self.index.read().unwrap().ready()
    }

    fn open_episodes(&self) -> Vec<(String, String)> {
        self.engine
            .store
            .open_episodes()
            .unwrap()
            .into_iter()
            .map(|e| (e.key.name, e.class))
            .collect()
    }
}

fn kind_of(object: &Value) -> TypeKey {
    kind(
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
    )
}

fn paths(entry: &DriftEntry) -> Vec<String> {
    entry.paths()
}

#[test]
fn objects_are_judged_once_their_kind_is_listed() {
    assert!(
        Harness::start(&config()).ready(),
        "nothing desired: nothing to wait for"
    );
    let mut h = Harness::start_with(&config(), &(cm("a", "1") + &cm("b", "1")));
    assert_eq!(h.engine.watching.watches.log, ["start ConfigMap"]);
    assert!(!h.ready());
    assert!(h.class("a").is_none(), "not listed yet: no verdict");

    h.list(&configmaps(), live(&cm("a", "1")));
    assert_eq!(h.class("a"), Some(DriftClass::InSync));
    assert_eq!(h.class("b"), Some(DriftClass::Missing));
    assert!(h.ready());
    assert_eq!(h.engine.outputs.watch_events["ConfigMap"], 1);
}

#[test]
fn a_relist_with_an_object_gone_judges_on_the_last_live_copies_until_it_ends() {
    let mut h = Harness::start_with(&config(), &(cm("a", "1") + &cm("b", "1") + &cm("c", "1")));
    h.list(
        &configmaps(),
        live(&(cm("a", "1") + &cm("b", "1") + &cm("c", "1"))),
    );

    // The watcher re-lists (a reconnect); meanwhile `a` was changed and `b` deleted.
    h.send(
        &configmaps(),
        vec![WatchEvent::Init, watch_apply(one(&cm("a", "2")))],
    );
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
    assert_eq!(
        h.class("b"),
        Some(DriftClass::InSync),
        "a re-list under way must not make objects look missing"
    );
    assert_eq!(h.class("c"), Some(DriftClass::InSync));

    h.send(
        &configmaps(),
        vec![watch_apply(one(&cm("c", "1"))), WatchEvent::InitDone],
    );
    assert_eq!(
        h.class("b"),
        Some(DriftClass::Missing),
        "not re-listed: gone"
    );
    assert_eq!(h.class("c"), Some(DriftClass::InSync));
    assert!(h.ready());
    h.advance(SETTLE);
    assert_eq!(
        h.announced(),
        ["Detected ConfigMap/a", "Detected ConfigMap/b"],
        "Events only for what changed"
    );
}

/// A wave of drift settles in one step, its live identities read on several threads: each
/// Event is about its own object's live copy.
#[test]
fn a_wave_of_settled_drift_announces_each_object_with_its_own_identity() {
    let n = 700;
    let yaml: String = (0..n).map(|i| cm(&format!("c{i}"), "1")).collect();
    let mut h = Harness::start_with(&config(), &yaml);
    let drifted: Vec<Value> = (0..n)
        .map(|i| {
            let mut o = one(&cm(&format!("c{i}"), "2"));
            o["metadata"]["uid"] = json!(format!("uid-{i}"));
            o
        })
        .collect();
    h.list(&configmaps(), drifted);
    h.advance(SETTLE);
    let identities = &h.engine.outputs.identities;
    assert_eq!(identities.len(), n, "{identities:?}");
    for (name, uid) in identities {
        let i = name.strip_prefix('c').unwrap();
        assert_eq!(uid.as_deref(), Some(format!("uid-{i}").as_str()), "{name}");
    }
}

#[test]
fn a_deletion_hidden_by_compaction_is_found_by_the_relist() {
    let mut h = Harness::start_with(&config(), &(cm("a", "1") + &cm("b", "1")));
    h.list(&configmaps(), live(&(cm("a", "1") + &cm("b", "1"))));

    // The watch fails; while it is down `b` is deleted and the history compacted, so no
    // DELETED event ever comes: the resume gets 410 Gone and the watcher lists again.
    h.send(
        &configmaps(),
        vec![WatchEvent::Error(WatchError::NoResourceVersion)],
    );
    assert_eq!(h.engine.outputs.watch_errors["ConfigMap"], 1);
    assert_eq!(
        h.class("b"),
        Some(DriftClass::InSync),
        "an error alone says nothing"
    );
    h.list(&configmaps(), live(&cm("a", "1")));
    assert_eq!(h.class("b"), Some(DriftClass::Missing));
    assert_eq!(h.class("a"), Some(DriftClass::InSync));

    h.advance(SETTLE);
    assert_eq!(h.announced(), ["Detected ConfigMap/b"]);
    assert_eq!(
        h.open_episodes(),
        [("b".to_string(), "missing".to_string())]
    );
}

#[test]
fn a_kind_that_stops_being_served_has_no_objects() {
    let widgets = kind("example.com/v1", "Widget");
    let widget = |name: &str| {
        format!("apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}, namespace: shop}}\nspec: {{size: 1}}\n---\n")
    };
    let mut h = Harness::start_with(&config(), &(widget("w") + &cm("a", "1")));
    h.list(&configmaps(), live(&cm("a", "1")));
    assert!(!h.ready(), "the Widget watcher has not answered yet");

    // No CRD yet: the cluster's CRDs list empty, and discovery says the kind is not
    // served, which is an answer.
    h.list(&crate::crds::crd_kind(), vec![]);
    h.send(&widgets, vec![WatchEvent::NotServed]);
    assert!(h.ready());
    assert_eq!(h.entry("Widget", "w").unwrap().class, DriftClass::Missing);

    // The CRD is installed: a normal list.
    h.list(&widgets, live(&widget("w")));
    assert_eq!(h.entry("Widget", "w").unwrap().class, DriftClass::InSync);

    // ...and removed: every Widget is gone at once; the retries change nothing more.
    h.send(&widgets, vec![WatchEvent::NotServed]);
    assert_eq!(h.entry("Widget", "w").unwrap().class, DriftClass::Missing);
    let comparisons = h.engine.outputs.comparisons;
    h.send(&widgets, vec![WatchEvent::NotServed]);
    assert_eq!(h.engine.outputs.comparisons, comparisons);
    assert_eq!(h.class("a"), Some(DriftClass::InSync));
}

#[test]
fn a_flip_within_the_settle_time_makes_no_event_pair() {
    let mut h = Harness::start(&config());
    h.commit("shop", &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "1")));

    // A controller flips a field and puts it back: /drift shows it while it lasts...
    h.apply(one(&cm("a", "2")));
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
    h.advance(SETTLE / 2);
    h.apply(one(&cm("a", "1")));
    assert_eq!(h.class("a"), Some(DriftClass::InSync));
    // ...but it never held for the settle time: no Event, no episode.
    h.advance(SETTLE * 10);
    assert!(h.announced().is_empty());
    assert!(h.open_episodes().is_empty());

    // A change that holds is announced once, however often it is seen again.
    h.apply(one(&cm("a", "3")));
    let since = h.entry("ConfigMap", "a").unwrap().since;
    assert_eq!(since, Some("2026-11-30T10:00:52.5Z".parse().unwrap()));
    h.advance(SETTLE - Duration::from_millis(1));
    h.apply(one(&cm("a", "3")));
    assert!(h.announced().is_empty());
    h.advance(Duration::from_millis(1));
    assert_eq!(h.announced(), ["Detected ConfigMap/a"]);
    h.advance(SETTLE);
    h.apply(one(&cm("a", "3")));
    assert_eq!(
        h.entry("ConfigMap", "a").unwrap().since,
        since,
        "since stays"
    );

    // Put back for good: resolved, once it held.
    h.apply(one(&cm("a", "1")));
    h.advance(SETTLE);
    assert_eq!(
        h.announced(),
        ["Detected ConfigMap/a", "Resolved ConfigMap/a"]
    );
    assert!(h.open_episodes().is_empty());
}

#[test]
fn a_commit_that_adds_and_removes_kinds_starts_and_stops_watchers() {
    let service = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{port: 80}]}\n---\n";
    let secret = "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: shop}\ndata: {password: cGFzcw==}\n---\n";
    let mut h = Harness::start(&config());
    h.commit("shop", &(cm("a", "1") + service));
    assert_eq!(
        h.engine.watching.watches.log,
        ["start ConfigMap", "start Service"]
    );
    h.list(&configmaps(), live(&cm("a", "1")));
    let mut drifted = one(service);
    drifted["spec"]["ports"][0]["port"] = json!(81);
    h.list(&kind("v1", "Service"), vec![drifted]);
    assert_eq!(
        h.entry("Service", "web").unwrap().class,
        DriftClass::Modified
    );
    let old_configmaps = h.watcher(&configmaps());

    // The Service leaves, a Secret and a second ConfigMap arrive.
    h.commit("shop", &(cm("a", "1") + &cm("b", "1") + secret));
    assert_eq!(
        h.engine.watching.watches.log[2..],
        ["stop Service", "start Secret", "restart ConfigMap"],
        "ConfigMaps are listed again: b's live copy was not kept"
    );
    assert!(h.entry("Service", "web").is_none(), "no longer desired");
    assert!(h.entry("Secret", "db").is_none(), "not listed yet");
    assert!(h.class("b").is_none(), "waits for the new list");
    assert_eq!(h.class("a"), Some(DriftClass::InSync), "still judged");
    assert!(h.ready(), "a re-list after a commit is not an outage");

    // What the replaced watcher still had queued is stale: a re-list that passed b over.
    let stale = [
        WatchEvent::Init,
        watch_apply(one(&cm("a", "1"))),
        WatchEvent::InitDone,
    ];
    h.engine.handle(stale.map(|event| WatchMessage {
        type_key: configmaps(),
        watcher: old_configmaps,
        event,
    }));
    assert!(h.class("b").is_none(), "not judged missing by a stale list");
    // A stopped watcher's messages change nothing either.
    h.engine.handle([WatchMessage {
        type_key: kind("v1", "Service"),
        watcher: WatcherId(2),
        event: watch_apply(one(service)),
    }]);
    assert!(h.entry("Service", "web").is_none());

    h.list(&configmaps(), live(&(cm("a", "1") + &cm("b", "1"))));
    assert_eq!(h.class("b"), Some(DriftClass::InSync));
    h.list(&kind("v1", "Secret"), live(secret));
    assert_eq!(h.entry("Secret", "db").unwrap().class, DriftClass::InSync);
}

#[test]
fn a_restart_keeps_since_and_does_not_announce_the_same_drift_again() {
    let mut h = Harness::start(&config());
    h.commit("shop", &(cm("a", "1") + &cm("b", "1")));
    h.list(&configmaps(), live(&(cm("a", "2") + &cm("b", "2"))));
    let since = h.entry("ConfigMap", "a").unwrap().since.unwrap();
    h.advance(SETTLE);
    assert_eq!(h.announced().len(), 2);
    assert_eq!(h.open_episodes().len(), 2);
    let recorded: Vec<Vec<String>> = h
        .engine
        .store
        .open_episodes()
        .unwrap()
        .into_iter()
        .map(|e| e.paths)
        .collect();
    assert_eq!(
        recorded,
        [["/data/k"], ["/data/k"]],
        "episodes name the paths"
    );

    // Stopped; meanwhile b leaves the desired state and a drifts the same way still.
    let mut store = h.engine.store;
    commit(&mut store, "shop", &cm("a", "1"));
    let mut h = Harness::new(store, &config(), "2026-11-30T11:00:00Z");
    h.load();
    assert_eq!(
        h.open_episodes(),
        [("a".to_string(), "modified".to_string())],
        "the episode of an object no longer desired is closed at start"
    );
    h.list(&configmaps(), live(&cm("a", "2")));
    let a = h.entry("ConfigMap", "a").unwrap();
    assert_eq!(a.since, Some(since), "since survives the restart");
    h.advance(SETTLE * 2);
    assert!(
        h.announced().is_empty(),
        "the same drift is not announced again"
    );

    // Its episode is kept current, and closes when the drift ends.
    // As the run loop does it: started once a minute, then step by step.
    h.engine.start_touching();
    while h.engine.touch_some() {}
    let episode = &h.engine.store.open_episodes().unwrap()[0];
    assert_eq!(episode.first_seen, since);
    assert_eq!(episode.last_seen, "2026-11-30T11:00:10Z".parse().unwrap());
    h.apply(one(&cm("a", "1")));
    h.advance(SETTLE);
    assert_eq!(h.announced(), ["Resolved ConfigMap/a"]);
    assert!(h.open_episodes().is_empty());
}

#[test]
fn a_restarted_engine_resolves_drift_that_ended_while_it_was_down() {
    let mut h = Harness::start(&config());
    h.commit("shop", &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "2")));
    h.advance(SETTLE);
    let mut h = Harness::new(h.engine.store, &config(), "2026-11-30T11:00:00Z");
    h.load();
    h.list(&configmaps(), live(&cm("a", "1")));
    assert!(h.announced().is_empty(), "not before the settle time");
    h.advance(SETTLE);
    assert_eq!(h.announced(), ["Resolved ConfigMap/a"]);
    assert!(h.open_episodes().is_empty());
}

fn deployment(replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web, namespace: shop}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec: {{containers: [{{name: app, image: nginx}}]}}\n---\n"
    )
}

fn hpa(target: &str) -> Value {
    json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                    "minReplicas": 2, "maxReplicas": 6}})
}

#[test]
fn an_hpa_appearing_and_disappearing_reevaluates_its_target() {
    let hpas = hpa_kind();
    let mut h = Harness::start_with(&config(), &deployment(2));
    assert!(
        h.engine.watching.watches.running.contains_key(&hpas),
        "HPAs are watched when a workload is desired"
    );
    h.list(&kind("apps/v1", "Deployment"), live(&deployment(4)));
    assert!(!h.ready());
    h.list(&hpas, vec![]);
    assert!(h.ready());
    let web = h.entry("Deployment", "web").unwrap();
    assert_eq!(paths(&web), ["/spec/replicas"]);

    // An autoscaler takes over the Deployment's replicas.
    h.apply(hpa("web"));
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::InSync
    );
    // It is retargeted elsewhere: the replicas are the manifest's again.
    h.apply(hpa("api"));
    assert_eq!(
        paths(&h.entry("Deployment", "web").unwrap()),
        ["/spec/replicas"]
    );
    h.apply(hpa("web"));
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::InSync
    );
    h.delete(hpa("web"));
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::Modified
    );
    // Deleted while the watch was down: the re-list tells.
    h.apply(hpa("web"));
    h.list(&hpas, vec![]);
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::Modified
    );
    h.advance(SETTLE);
    assert_eq!(
        h.announced(),
        ["Detected Deployment/web"],
        "flips made no Events"
    );

    // No workload desired: HPAs are not watched, and what was known of them is forgotten.
    h.apply(hpa("web"));
    h.commit("shop", &cm("a", "1"));
    assert!(!h.engine.watching.watches.running.contains_key(&hpas));
    h.commit("shop", &deployment(2));
    h.list(&kind("apps/v1", "Deployment"), live(&deployment(4)));
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::Modified,
        "no autoscaler known until HPAs are listed again"
    );
    h.list(&hpas, vec![hpa("web")]);
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::InSync
    );
}

#[test]
fn a_committed_hpa_owns_the_replicas_of_its_target_too() {
    let hpa_yaml = "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web, namespace: shop}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  minReplicas: 2\n  maxReplicas: 6\n---\n";
    let mut h = Harness::start(&config());
    h.commit("shop", &(deployment(2) + hpa_yaml));
    h.list(&hpa_kind(), live(hpa_yaml));
    h.list(&kind("apps/v1", "Deployment"), live(&deployment(5)));
    assert_eq!(
        h.entry("Deployment", "web").unwrap().class,
        DriftClass::InSync
    );
    assert_eq!(
        h.entry("HorizontalPodAutoscaler", "web").unwrap().class,
        DriftClass::InSync
    );
}

fn unowned(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": namespace}, "data": {"x": "y"}})
}

#[test]
fn coverage_reports_unmanaged_objects_and_owned_ones() {
    let mut config = config();
    config.unmanaged.kinds = vec!["ConfigMap".into()];
    config.unmanaged.namespaces = vec!["shop".into()];
    let mut h = Harness::start_with(&config, &cm("a", "1"));
    assert_eq!(
        h.engine.watching.watches.log,
        ["start ConfigMap"],
        "covered kinds are watched (once if desired too)"
    );
    assert!(!h.ready());
    let mut owned = unowned("shop", "replica-set-config");
    owned["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "x", "uid": "1"}]);
    let mut listed = live(&cm("a", "1"));
    listed.extend([
        unowned("shop", "stray"),
        unowned("default", "elsewhere"),
        unowned("shop", "kube-root-ca.crt"),
        owned,
    ]);
    h.list(&configmaps(), listed);
    assert!(h.ready());
    let unmanaged: Vec<String> = h
        .index
        .read()
        .unwrap()
        .entries()
        .filter(|e| e.class == DriftClass::Unmanaged)
        .map(|e| e.name.clone())
        .collect();
    assert_eq!(unmanaged, ["stray"]);
    let stray = h.entry("ConfigMap", "stray").unwrap();
    assert_eq!(stray.source, "");
    assert_eq!(stray.since, Some("2026-11-30T10:00:00Z".parse().unwrap()));
    assert_eq!(h.index.read().unwrap().owned_covered(), Some(1), "a");

    h.delete(unowned("shop", "stray"));
    assert!(h.entry("ConfigMap", "stray").is_none());
    h.apply(unowned("shop", "stray"));
    assert_eq!(h.class("stray"), Some(DriftClass::Unmanaged));

    // Committed: owned now, and compared.
    h.commit("shop", &(cm("a", "1") + &cm("stray", "1")));
    assert!(h.class("stray").is_none(), "waits for the re-list");
    h.list(&configmaps(), live(&(cm("a", "1") + &cm("stray", "1"))));
    assert_eq!(h.class("stray"), Some(DriftClass::InSync));
    assert_eq!(h.index.read().unwrap().owned_covered(), Some(2));

    // Dropped from the source but still live: unmanaged again, once re-listed.
    let started = h.engine.watching.watches.log.len();
    h.commit("shop", &cm("a", "1"));
    assert!(h.class("stray").is_none());
    assert_eq!(
        h.engine.watching.watches.log[started..],
        ["restart ConfigMap"]
    );
    h.list(&configmaps(), live(&(cm("a", "1") + &cm("stray", "1"))));
    assert_eq!(h.class("stray"), Some(DriftClass::Unmanaged));
    assert_eq!(h.index.read().unwrap().owned_covered(), Some(1), "a alone");
    h.advance(SETTLE);
    assert!(h.announced().is_empty(), "unmanaged objects make no Events");

    // Kept as live copies come and go, by watch events and by lists.
    let a = live(&cm("a", "1")).remove(0);
    h.delete(a.clone());
    assert_eq!(
        h.index.read().unwrap().owned_covered(),
        Some(0),
        "a deleted"
    );
    h.apply(a.clone());
    assert_eq!(h.index.read().unwrap().owned_covered(), Some(1), "a back");
    h.list(&configmaps(), live(&cm("stray", "1")));
    assert_eq!(
        h.index.read().unwrap().owned_covered(),
        Some(0),
        "a not listed"
    );
    h.list(&configmaps(), vec![a]);
    assert_eq!(h.index.read().unwrap().owned_covered(), Some(1), "a listed");
}

#[test]
fn coverage_off_publishes_no_coverage() {
    let mut h = Harness::start(&config());
    h.commit("shop", &cm("a", "1"));
    h.list(&configmaps(), live(&(cm("a", "1"))));
    h.apply(unowned("shop", "stray"));
    assert!(h.entry("ConfigMap", "stray").is_none());
    assert_eq!(h.index.read().unwrap().owned_covered(), None);
}

#[test]
fn sources_and_expired_rules_are_published() {
    let mut config = config();
    config.ignore = toml::from_str::<toml::Table>(
        "[[ignore]]\nkind = \"ConfigMap\"\npointers = [\"/data/k\"]\nreason = \"r\"\nexpires = \"2020-01-01T00:00:00Z\"\n",
    )
    .unwrap()["ignore"]
        .clone()
        .try_into()
        .unwrap();
    let mut h = Harness::start(&config);
    h.commit("shop", &cm("a", "1"));
    h.commit("other", &cm("b", "1"));
    let index = h.index.read().unwrap();
    assert_eq!(
        index.sources().keys().collect::<Vec<_>>(),
        ["other", "shop"]
    );
    assert_eq!(index.rules_expired(), 1);
}

/// A database that stops taking writes under a running daemon: drift is still judged and
/// announced, and every failed write is reported (for `driftd_store_errors_total` and
/// `/readyz`), not only logged.
#[test]
fn failed_episode_writes_are_reported_and_the_engine_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("driftd.db");
    let mut store = Store::open(&path).unwrap();
    commit(&mut store, "shop", &cm("a", "1"));
    let mut h = Harness::new(store, &config(), "2026-11-30T10:00:00Z");
    h.load();
    h.list(&configmaps(), live(&cm("a", "1")));
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE episodes")
        .unwrap();

    h.apply(one(&cm("a", "2")));
    h.advance(SETTLE);
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
    assert_eq!(h.announced(), ["Detected ConfigMap/a"]);
    assert_eq!(
        h.engine.outputs.store_errors,
        ["cannot record drift episode: database: no such table: episodes"]
    );
    h.apply(one(&cm("a", "1")));
    h.advance(SETTLE);
    assert_eq!(h.engine.outputs.store_errors.len(), 2);
    assert!(h.engine.outputs.store_errors[1].starts_with("cannot close drift episode: "));
}
/// A server whose state went back to lower resourceVersions (an etcd restore) sends a
/// resuming watch nothing newer than its position, so a change can go unseen: the periodic
/// re-list finds it, and objects stay judged (and driftd ready) while it runs.
#[test]
fn the_periodic_relist_finds_a_change_the_watch_missed() {
    let mut h = Harness::start_with(&config(), &(cm("a", "1") + &cm("b", "1")));
    h.list(&configmaps(), live(&(cm("a", "1") + &cm("b", "1"))));
    let before = h.engine.watching.watches.log.len();

    h.engine.relist_periodically();
    assert_eq!(
        h.engine.watching.watches.log[before..],
        ["restart ConfigMap"]
    );
    assert!(h.ready(), "a periodic re-list does not make driftd unready");
    assert_eq!(h.class("a"), Some(DriftClass::InSync));

    // The new watcher's list has the change no watch event carried, and not `b`.
    h.list(&configmaps(), live(&cm("a", "2")));
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
    assert_eq!(h.class("b"), Some(DriftClass::Missing));
    h.advance(SETTLE);
    assert_eq!(
        h.announced(),
        ["Detected ConfigMap/a", "Detected ConfigMap/b"]
    );
}

#[test]
fn a_kind_still_listing_is_not_relisted_periodically() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    let before = h.engine.watching.watches.log.len();
    h.engine.relist_periodically();
    assert_eq!(
        h.engine.watching.watches.log.len(),
        before,
        "its first list will do"
    );
}

mod audit;
mod crds;
mod dry_run_sources;
mod episode_endings;
mod health;
mod intents;
mod locks;
mod stale_config_through_engine;

#[test]
fn a_tracked_object_that_came_unpacked_is_kept_all_the_same() {
    // A watcher packs only once told the kind is tracked; what it sent before comes bare.
    let mut h = Harness::start_with(&Config::default(), &cm("a", "1"));
    let unpacked = WatchEvent::Apply(Applied::unpacked(one(&cm("a", "1"))));
    h.send(
        &configmaps(),
        vec![WatchEvent::Init, unpacked, WatchEvent::InitDone],
    );
    assert_eq!(h.class("a"), Some(DriftClass::InSync));
    // A new revision is compared with the kept copy: the object is there, and differs.
    h.commit("shop", &cm("a", "2"));
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
}

/// Every drift entry: kind/name, class and the whole entry as `/drift` shows it.
fn judged(h: &Harness) -> Vec<(String, DriftClass, Value)> {
    let index = h.index.read().unwrap();
    let mut all: Vec<_> = index
        .entries()
        .map(|e| {
            let name = format!("{}/{}", e.kind, e.name);
            (name, e.class, serde_json::to_value(e).unwrap())
        })
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

#[test]
fn a_burst_judged_on_every_core_ends_as_its_events_judged_one_by_one() {
    // 100 ConfigMaps and an autoscaled Deployment; a burst modifies, restores, deletes
    // and modifies twice, with an autoscaler appearing in its middle: enough held events
    // for `judge_held` to use a second thread, and a message that must see them judged.
    let desired: String = (0..100).map(|i| cm(&format!("c{i}"), "1")).collect();
    let desired = desired + &deployment(2);
    let start = || {
        let mut h = Harness::start_with(&config(), &desired);
        h.list(
            &configmaps(),
            live(&desired).into_iter().take(100).collect(),
        );
        h.list(&kind("apps/v1", "Deployment"), live(&deployment(4)));
        h.list(&hpa_kind(), vec![]);
        assert!(h.ready());
        h
    };
    let mut burst = Vec::new();
    for i in 0..100 {
        let value = if i % 3 == 0 { "2" } else { "1" };
        burst.push((configmaps(), watch_apply(one(&cm(&format!("c{i}"), value)))));
    }
    burst.push((hpa_kind(), watch_apply(hpa("web"))));
    burst.push((
        kind("apps/v1", "Deployment"),
        watch_apply(one(&deployment(5))),
    ));
    burst.push((configmaps(), watch_apply(one(&cm("c3", "1")))));
    burst.push((configmaps(), WatchEvent::Delete(one(&cm("c4", "1")))));
    burst.push((configmaps(), watch_apply(one(&cm("c5", "3")))));
    burst.push((configmaps(), watch_apply(one(&cm("c5", "4")))));
    let cloned = || -> Vec<(TypeKey, WatchEvent)> {
        burst
            .iter()
            .map(|(kind, event)| {
                let event = match event {
                    WatchEvent::Apply(applied) => watch_apply(applied.object.clone()),
                    WatchEvent::Delete(object) => WatchEvent::Delete(object.clone()),
                    _ => unreachable!(),
                };
                (kind.clone(), event)
            })
            .collect()
    };

    let mut one_by_one = start();
    for (kind, event) in cloned() {
        let message = one_by_one.message(&kind, event);
        one_by_one.engine.handle([message]);
    }
    let mut together = start();
    let messages: Vec<_> = cloned()
        .into_iter()
        .map(|(kind, event)| together.message(&kind, event))
        .collect();
    together.engine.handle(messages);

    let entries = judged(&together);
    assert_eq!(entries, judged(&one_by_one));
    let class = |name: &str| entries.iter().find(|e| e.0 == name).map(|e| e.1);
    assert_eq!(class("ConfigMap/c0"), Some(DriftClass::Modified));
    assert_eq!(class("ConfigMap/c1"), Some(DriftClass::InSync));
    assert_eq!(class("ConfigMap/c3"), Some(DriftClass::InSync), "restored");
    assert_eq!(class("ConfigMap/c4"), Some(DriftClass::Missing));
    let c5 = together.entry("ConfigMap", "c5").unwrap();
    assert_eq!(paths(&c5), ["/data/k"]);
    assert!(
        serde_json::to_string(&c5.changes)
            .unwrap()
            .contains("\"4\""),
        "the last of its two events: {:?}",
        c5.changes
    );
    assert_eq!(
        class("Deployment/web"),
        Some(DriftClass::InSync),
        "judged after its autoscaler came"
    );
    assert_eq!(
        together.engine.outputs.comparisons,
        one_by_one.engine.outputs.comparisons
    );
}

#[test]
fn a_custom_kind_committed_without_its_crd_takes_its_scope_from_discovery() {
    // A cluster-scoped kind written without a namespace, committed before anyone told its
    // scope: keyed as namespaced (in `default`) until discovery answers.
    let gizmos = kind("example.org/v1", "Gizmo");
    let gizmo = "apiVersion: example.org/v1\nkind: Gizmo\nmetadata: {name: g}\nspec: {size: 1}\n";
    let mut h = Harness::start_with(&config(), gizmo);
    h.list(&crate::crds::crd_kind(), vec![]);
    // As `/drift?kind=Gizmo` answers (drifting, else in sync).
    let entry = |h: &Harness| {
        let index = h.index.read().unwrap();
        [None, Some(DriftClass::InSync)]
            .into_iter()
            .flat_map(|class| {
                index.query(&DriftFilter {
                    kind: Some("Gizmo".into()),
                    class,
                    ..DriftFilter::default()
                })
            })
            .next()
            .unwrap()
    };
    h.send(&gizmos, vec![WatchEvent::NotServed]);
    let e = entry(&h);
    assert_eq!(e.class, DriftClass::Missing);
    assert_eq!(e.namespace.as_deref(), Some("default"));
    assert_eq!(
        e.scope,
        Some(ScopeNote::Unresolved),
        "nothing told its scope"
    );

    // The operator's CRD is installed: discovery says cluster-scoped, and the object the
    // cluster holds has no namespace. It is the committed one, in sync.
    h.send(&gizmos, vec![WatchEvent::Served { namespaced: false }]);
    let stored = json!({"apiVersion": "example.org/v1", "kind": "Gizmo",
        "metadata": {"name": "g"}, "spec": {"size": 1}});
    h.list(&gizmos, vec![stored.clone()]);
    let e = entry(&h);
    assert_eq!((e.class, e.namespace.clone()), (DriftClass::InSync, None));
    assert_eq!(e.scope, None);
    let keys: Vec<String> = h
        .engine
        .wanted
        .tracked
        .keys()
        .iter()
        .map(|k| k.to_string())
        .collect();
    assert!(
        keys.iter().all(|k| !k.contains("default/g")),
        "the namespaced key is gone: {keys:?}"
    );

    // A person edits it: drift, on the cluster-scoped key.
    let mut edited = stored;
    edited["spec"]["size"] = json!(2);
    h.apply(edited);
    assert_eq!(entry(&h).class, DriftClass::Modified);
}

#[test]
fn drift_of_another_class_drifts_since_it_began() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "2")));
    let first = h.entry("ConfigMap", "a").unwrap();
    assert_eq!(first.class, DriftClass::Modified);
    h.advance(Duration::from_secs(30));
    // Still modified, other values: the same episode.
    h.apply(one(&cm("a", "3")));
    assert_eq!(h.entry("ConfigMap", "a").unwrap().since, first.since);
    // Deleted: missing since now, not since the edit 30 s ago.
    h.delete(one(&cm("a", "3")));
    let missing = h.entry("ConfigMap", "a").unwrap();
    assert_eq!(missing.class, DriftClass::Missing);
    assert_eq!(missing.since, Some(h.clock.wall()));
    assert_ne!(missing.since, first.since);
}
