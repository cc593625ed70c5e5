//! Stale locks: intents past their TTL, holder pods deleted (seen from one watch event),
//! automatic releases only when the pod is gone, the lock old enough and this replica
//! leads; Pulumi lock files.

use super::*;
use crate::Leadership;
use driftd_core::report::{LockKind, StaleLock};
use driftd_store::{IntentAction, IntentState};
use driftd_watch::pod_type;

fn pod(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "uid": "u-1",
                        "creationTimestamp": "2026-11-30T09:00:00Z"},
           "status": {"phase": "Running"}})
}

impl Harness {
    /// Delivers `events` from the watcher of the pods named `name`.
    fn pod_events(&mut self, name: &str, events: Vec<WatchEvent>) {
        let watcher = *self
            .engine
            .watching
            .watches
            .pods
            .get(name)
            .unwrap_or_else(|| panic!("pods named {name} are not watched"));
        let messages: Vec<WatchMessage> = events
            .into_iter()
            .map(|event| WatchMessage {
                type_key: pod_type(),
                watcher,
                event,
            })
            .collect();
        self.engine.handle(messages);
    }

    /// Lists the holder pod `shop/NAME`, running.
    fn holder_runs(&mut self, name: &str) {
        self.pod_events(
            name,
            vec![
                WatchEvent::Init,
                watch_apply(pod("shop", name)),
                WatchEvent::InitDone,
            ],
        );
    }

    fn locks(&self) -> (bool, Vec<StaleLock>) {
        let index = self.index.read().unwrap();
        (index.locks_ready(), index.locks().to_vec())
    }

    /// Moves the clock as the lock tick sees it.
    fn age(&mut self, by: Duration) {
        self.clock.advance(by);
        self.engine.intents_aged();
    }
}

#[test]
fn an_intent_nobody_renews_is_a_stale_lock_until_renewed() {
    let mut h = Harness::start(&config());
    h.follow_clock();
    let id = h.begin("web", &cm("w", "1"), "alice@laptop (pid 42)", 60);
    assert_eq!(h.locks(), (true, vec![]), "no pod holder: nothing to list");
    h.age(Duration::from_secs(59));
    assert!(h.locks().1.is_empty());

    h.age(Duration::from_secs(2));
    let (_, locks) = h.locks();
    let lock = &locks[0];
    assert_eq!(lock.kind, LockKind::Intent);
    assert_eq!((lock.source.as_str(), lock.id.as_str()), ("web", "1"));
    assert_eq!(lock.state.as_deref(), Some("expired"));
    assert_eq!(lock.reason, "not renewed for 1m 1s (ttl 1m)");
    assert_eq!(lock.release, format!("driftd intent release {id}"));
    assert_eq!(lock.since, h.intent(id).expires_at);
    assert_eq!(lock.holder, "alice@laptop (pid 42)");
    assert_eq!(h.announced(), ["Stale intent 1 on -"]);
    h.age(Duration::from_secs(30));
    assert_eq!(h.announced().len(), 1, "announced once");
    assert!(h.locks().1[0].reason.starts_with("not renewed for 1m 31s"));

    // Its holder comes back and renews it: not stale any more.
    h.engine.store.renew_intent(id, None, "alice").unwrap();
    h.engine.reload_intents();
    assert!(h.locks().1.is_empty());
    let entry = h.entry("ConfigMap", "w");
    assert!(entry.is_none(), "ConfigMaps never listed here");
}

#[test]
fn a_deleted_holder_pod_makes_its_lock_stale_from_one_watch_event() {
    let mut h = Harness::start(&config());
    h.follow_clock();
    let id = h.begin("web", &cm("w", "1"), "pod:shop/deploy-x", 600);
    assert!(h.engine.watching.watches.pods.contains_key("deploy-x"));
    assert_eq!(h.locks(), (false, vec![]), "the holder is not listed yet");
    h.pod_events(
        "deploy-x",
        vec![
            WatchEvent::Init,
            watch_apply(pod("shop", "deploy-x")),
            // A pod of that name elsewhere is not the holder.
            watch_apply(pod("other", "deploy-x")),
            WatchEvent::InitDone,
        ],
    );
    assert_eq!(h.locks(), (true, vec![]));

    h.clock.advance(Duration::from_secs(5));
    h.pod_events(
        "deploy-x",
        vec![WatchEvent::Delete(pod("other", "deploy-x"))],
    );
    assert!(h.locks().1.is_empty());
    h.pod_events(
        "deploy-x",
        vec![WatchEvent::Delete(pod("shop", "deploy-x"))],
    );
    let (ready, locks) = h.locks();
    assert!(ready);
    assert_eq!(locks.len(), 1, "stale after the one Delete event");
    assert_eq!(locks[0].reason, "holder pod shop/deploy-x no longer exists");
    assert_eq!(locks[0].state.as_deref(), Some("pending"), "TTL not passed");
    assert_eq!(locks[0].since, h.clock.wall());
    assert_eq!(h.announced(), ["Stale intent 1 on shop/deploy-x"]);
    assert_eq!(
        h.intent(id).state,
        IntentState::Pending,
        "released by nobody"
    );

    // Released by hand: no lock, and the holder is no longer watched.
    h.engine
        .store
        .release_intent(id, "ops", "pod gone")
        .unwrap();
    h.engine.reload_intents();
    assert!(h.locks().1.is_empty());
    assert!(h
        .engine
        .watching
        .watches
        .log
        .contains(&"stop pods deploy-x".to_string()));
}

fn auto_release_config() -> Config {
    let mut config = config();
    config.locks.auto_release_after = Some(Duration::from_secs(30 * 60));
    config
}

/// An engine with a pod-held intent (begun at the start) whose pod is then deleted.
fn pod_gone(config: &Config, leadership: Leadership) -> (Harness, i64) {
    let store = Store::open_in_memory().unwrap();
    let mut h = Harness::new(store, config, "2026-11-30T10:00:00Z");
    h.engine = h.engine.with_leadership(leadership, "replica-0");
    h.follow_clock();
    h.load();
    let id = h.begin("web", &cm("w", "1"), "pod:shop/deploy-x", 600);
    h.holder_runs("deploy-x");
    (h, id)
}

#[test]
fn auto_release_needs_the_pod_gone_the_lock_old_enough_and_the_lead() {
    // Gone and old enough, but not leading: left alone.
    let clock = Arc::new(ManualClock::new("2026-11-30T10:00:00Z".parse().unwrap()));
    let (mut h, id) = pod_gone(&auto_release_config(), Leadership::elected(clock));
    h.pod_events(
        "deploy-x",
        vec![WatchEvent::Delete(pod("shop", "deploy-x"))],
    );
    h.age(Duration::from_secs(3600));
    assert_eq!(h.intent(id).state, IntentState::Expired);
    assert_eq!(h.locks().1.len(), 1);
    assert!(h.announced().is_empty(), "Events are the leader's");

    // Leading, TTL passed long ago, pod alive: a TTL alone is never released.
    let (mut h, id) = pod_gone(&auto_release_config(), Leadership::always());
    h.age(Duration::from_secs(3600));
    assert_eq!(h.intent(id).state, IntentState::Expired);
    assert_eq!(h.locks().1[0].reason, "not renewed for 1h (ttl 10m)");

    // Leading, pod gone: released once the lock is 30 minutes old, not before.
    let (mut h, id) = pod_gone(&auto_release_config(), Leadership::always());
    h.age(Duration::from_secs(10 * 60));
    h.pod_events(
        "deploy-x",
        vec![WatchEvent::Delete(pod("shop", "deploy-x"))],
    );
    h.age(Duration::from_secs(19 * 60 + 59));
    assert_eq!(h.intent(id).state, IntentState::Expired, "29m 59s old");
    h.age(Duration::from_secs(1));
    let released = h.intent(id);
    assert_eq!(released.state, IntentState::Released);
    assert_eq!(released.ended_by.as_deref(), Some("driftd/replica-0"));
    let reason = released.end_reason.unwrap();
    assert!(
        reason.starts_with("holder pod shop/deploy-x no longer exists; released automatically")
            && reason.contains("30m"),
        "{reason}"
    );
    assert!(h.locks().1.is_empty(), "released: no lock");
    let actions: Vec<String> = h
        .engine
        .store
        .timeline("web")
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            driftd_store::HistoryEntry::Intent(e) => Some(e.action.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        actions,
        ["auto-release", "expire-detected", "begin"],
        "recorded in history"
    );
    let announced = h.announced();
    assert_eq!(
        announced.last().unwrap(),
        "Released { actor: \"driftd/replica-0\" } intent 1 on shop/deploy-x"
    );

    // Off by default.
    let (mut h, id) = pod_gone(&config(), Leadership::always());
    h.pod_events(
        "deploy-x",
        vec![WatchEvent::Delete(pod("shop", "deploy-x"))],
    );
    h.age(Duration::from_secs(24 * 3600));
    assert_eq!(h.intent(id).state, IntentState::Expired);
}

#[test]
fn pulumi_locks_are_scanned_and_their_holder_pods_watched() {
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pulumi");
    let mut config = config();
    config.pulumi.lock_dirs = vec![fixtures.join("backend")];
    let store = Store::open_in_memory().unwrap();
    // Twenty minutes after the fixture's lock was taken.
    let mut h = Harness::new(store, &config, "2024-05-14T07:32:44Z");
    h.load();
    assert_eq!(h.locks(), (false, vec![]), "not scanned yet");
    h.engine.scan_pulumi_locks();
    assert!(h
        .engine
        .watching
        .watches
        .pods
        .contains_key("shop-dev-workspace-0"));
    assert_eq!(h.locks(), (false, vec![]), "its pod not listed yet");
    let workspace = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "shop-dev-workspace-0", "namespace": "pulumi", "uid": "u-2",
                     "creationTimestamp": "2024-05-14T07:00:00Z"},
        "status": {"phase": "Running"}});
    h.pod_events(
        "shop-dev-workspace-0",
        vec![
            WatchEvent::Init,
            watch_apply(workspace.clone()),
            WatchEvent::InitDone,
        ],
    );
    assert_eq!(h.locks(), (true, vec![]), "young, and its pod runs");

    h.pod_events("shop-dev-workspace-0", vec![WatchEvent::Delete(workspace)]);
    let (_, locks) = h.locks();
    assert_eq!(locks.len(), 1);
    assert_eq!(locks[0].kind, LockKind::Pulumi);
    assert_eq!(
        locks[0].reason,
        "holder pod pulumi/shop-dev-workspace-0 no longer exists"
    );
    assert!(locks[0]
        .release
        .contains("pulumi cancel --yes --stack organization/shop/dev"));
    assert_eq!(
        h.announced(),
        ["Stale pulumi 0c7e5b7a-2f4d-4c1b-9a8e-3d6f1e2b4c5a on pulumi/shop-dev-workspace-0"]
    );
}

#[test]
fn a_helm_version_pending_longer_than_stale_after_is_a_helm_lock_cleared_by_helm() {
    use driftd_core::helm::{PendingLock, Status};
    use driftd_store::{HelmSync, HelmVersion};
    let mut h = Harness::start(&config());
    h.follow_clock();
    let deployed = crate::test_support::parse(&cm("web", "1"));
    let upgrade = crate::test_support::parse(&cm("web", "2"));
    let began = h.clock.wall();
    let lock = PendingLock {
        namespace: "shop".into(),
        name: "web".into(),
        version: 2,
        status: Status::PendingUpgrade,
        last_deployed: Some(1),
    };
    let sync = |store: &mut driftd_store::Store, pending: bool| {
        store
            .sync_helm(&HelmSync {
                source: "helm:shop/web",
                deployed: Some(HelmVersion {
                    version: 1,
                    describe: "version 1",
                    at: began,
                    objects: &deployed,
                }),
                pending: pending.then(|| {
                    let version = HelmVersion {
                        version: 2,
                        describe: "version 2",
                        at: began,
                        objects: &upgrade,
                    };
                    (version, lock.clone())
                }),
                gone: false,
                stale_after: Duration::from_secs(60),
            })
            .unwrap();
    };
    sync(&mut h.engine.store, true);
    h.reload();
    // What the upgrade applied so far is the version in flight, not a hand edit.
    h.list(&configmaps(), live(&cm("web", "2")));
    assert_eq!(h.class("web"), Some(DriftClass::Uncommitted));
    h.age(Duration::from_secs(59));
    assert!(h.locks().1.is_empty(), "an upgrade may take a minute");
    h.age(Duration::from_secs(2));
    let (_, locks) = h.locks();
    assert_eq!(locks.len(), 1, "{locks:?}");
    let stale = &locks[0];
    assert_eq!(stale.kind, LockKind::Helm);
    assert_eq!(stale.source, "helm:shop/web");
    assert_eq!(stale.state.as_deref(), Some("pending-upgrade"));
    assert_eq!(stale.release, "helm rollback web 1 -n shop");
    assert!(
        stale.reason.contains("pending-upgrade for 1m 1s"),
        "{}",
        stale.reason
    );
    assert!(
        stale.reason.contains("another operation"),
        "{}",
        stale.reason
    );
    assert_eq!(h.announced().len(), 1, "{:?}", h.announced());

    // `helm rollback web 1`: nothing pending any more; the lock is gone without driftd.
    sync(&mut h.engine.store, false);
    h.reload();
    assert!(h.locks().1.is_empty());
}

#[test]
fn a_pod_holder_never_seen_is_judged_by_its_ttl_and_never_released() {
    // `--holder pod:shop/deploy-y` for a deploy that runs as deploy-x: no pod of that name
    // exists, while the deploy renews its lock. Not stale; once its TTL passed, stale by
    // the TTL with the name questioned; never released automatically.
    let (mut h, _) = pod_gone(&auto_release_config(), Leadership::always());
    let id = h.begin("api", &cm("a", "1"), "pod:shop/deploy-y", 600);
    h.pod_events("deploy-y", vec![WatchEvent::Init, WatchEvent::InitDone]);
    assert_eq!(h.locks(), (true, vec![]), "no pod of the name: no proof");
    h.age(Duration::from_secs(599));
    assert!(h.locks().1.is_empty());
    h.age(Duration::from_secs(2 * 3600));
    let (_, locks) = h.locks();
    let lock = locks.iter().find(|l| l.id == id.to_string()).unwrap();
    assert_eq!(
        lock.reason,
        "not renewed for 2h 9m 59s (ttl 10m); no pod shop/deploy-y was seen"
    );
    assert_eq!(h.intent(id).state, IntentState::Expired, "never released");
}

#[test]
fn a_holder_pod_first_seen_finished_is_stale_but_left_to_people() {
    let (mut h, _) = pod_gone(&auto_release_config(), Leadership::always());
    let id = h.begin("api", &cm("a", "1"), "pod:shop/job-1", 600);
    let mut failed = pod("shop", "job-1");
    failed["status"]["phase"] = json!("Failed");
    h.pod_events(
        "job-1",
        vec![WatchEvent::Init, watch_apply(failed), WatchEvent::InitDone],
    );
    let (_, locks) = h.locks();
    let lock = locks.iter().find(|l| l.id == id.to_string()).unwrap();
    assert_eq!(
        lock.reason,
        "holder pod shop/job-1 has finished (phase Failed)"
    );
    h.age(Duration::from_secs(3600));
    assert_eq!(
        h.intent(id).state,
        IntentState::Expired,
        "this replica never saw it run"
    );
}

/// A host named `build-7` whose processes the test sets.
#[derive(Clone, Default)]
struct Host(Arc<std::sync::Mutex<BTreeSet<u32>>>);

impl crate::Processes for Host {
    fn host(&self) -> &str {
        "build-7"
    }
    fn process(&self, pid: u32) -> crate::Process {
        match self.0.lock().unwrap().contains(&pid) {
            true => crate::Process::Running { started: None },
            false => crate::Process::Gone,
        }
    }
}

#[test]
fn a_holder_process_of_this_host_that_is_gone_is_stale_at_once_not_after_its_ttl() {
    let mut h = Harness::start(&auto_release_config());
    h.follow_clock();
    let host = Host::default();
    host.0.lock().unwrap().insert(4242);
    h.engine.locks.local = crate::LocalHolders::new(Box::new(host.clone()));
    let id = h.begin("web", &cm("w", "1"), "alice@build-7 (pid 4242)", 600);
    let other = h.begin("api", &cm("a", "1"), "bob@laptop (pid 4243)", 600);
    h.age(Duration::from_secs(5));
    assert_eq!(h.locks(), (true, vec![]), "it runs");

    host.0.lock().unwrap().remove(&4242);
    h.age(Duration::from_secs(1));
    let (_, locks) = h.locks();
    assert_eq!(locks.len(), 1, "{locks:?}");
    assert_eq!(locks[0].id, id.to_string());
    assert_eq!(locks[0].reason, "holder process 4242 on build-7 is gone");
    assert_eq!(
        locks[0].state.as_deref(),
        Some("pending"),
        "9m 54s before its TTL"
    );
    assert_eq!(locks[0].since, h.clock.wall());
    assert_eq!(h.announced(), ["Stale intent 1 on -"]);
    h.age(Duration::from_secs(3600));
    assert_eq!(
        h.intent(id).state,
        IntentState::Expired,
        "stale, but released by people"
    );
    assert_eq!(
        h.locks()
            .1
            .iter()
            .find(|l| l.id == other.to_string())
            .unwrap()
            .reason,
        "not renewed for 1h 6s (ttl 10m)",
        "another host's process: by its TTL"
    );
}

/// A pod-held intent of the cluster log (number 7), its pod seen running.
fn cluster_intent(h: &mut Harness) -> i64 {
    let objects = crate::test_support::parse(&cm("c", "2"));
    let now = h.clock.wall();
    let driftd_store::IntentImport::Begun(begun) = h
        .engine
        .store
        .import_intent(&driftd_store::ClusterIntent {
            id: 7,
            source: "api",
            holder: "pod:shop/deploy-x",
            author: "alice",
            message: "deploy",
            created_at: now,
            ttl_seconds: 600,
            expires_at: now + jiff::SignedDuration::from_secs(600),
            objects: &objects,
        })
        .unwrap()
    else {
        panic!("imported")
    };
    h.engine.reload_intents();
    h.holder_runs("deploy-x");
    begun.id
}

#[test]
fn an_intent_of_the_cluster_log_is_released_in_the_cluster_log() {
    let store = Store::open_in_memory().unwrap();
    let mut h = Harness::new(store, &auto_release_config(), "2026-11-30T10:00:00Z");
    let (requests, mut asked) = mpsc::unbounded_channel();
    let (_answers, answered) = mpsc::unbounded_channel();
    h.engine = h
        .engine
        .with_leadership(Leadership::always(), "replica-0")
        .with_cluster_releases(requests, answered);
    h.follow_clock();
    h.load();
    let id = cluster_intent(&mut h);
    h.pod_events(
        "deploy-x",
        vec![WatchEvent::Delete(pod("shop", "deploy-x"))],
    );
    h.age(Duration::from_secs(30 * 60));

    let request = asked.try_recv().expect("asked of the cluster log");
    assert_eq!(request.id, id);
    assert_eq!(request.actor, "driftd/replica-0");
    assert!(
        request
            .reason
            .starts_with("holder pod shop/deploy-x no longer exists; released automatically"),
        "{}",
        request.reason
    );
    assert_eq!(
        h.intent(id).state,
        IntentState::Expired,
        "not released in this database alone"
    );
    assert_eq!(
        h.locks().1.len(),
        1,
        "held in the cluster until the write lands"
    );
    h.age(Duration::from_secs(5));
    assert!(asked.try_recv().is_err(), "asked once");

    h.engine.cluster_released(crate::ClusterReleased {
        id,
        outcome: crate::ReleaseOutcome::Released,
    });
    assert_eq!(
        h.announced().last().unwrap(),
        "Released { actor: \"driftd/replica-0\" } intent 7 on shop/deploy-x"
    );
    // The replicas import the release from the cluster log (this one too).
    let at = h.clock.wall();
    h.engine
        .store
        .import_intent_end(
            id,
            IntentAction::AutoRelease,
            &request.actor,
            &request.reason,
            at,
        )
        .unwrap();
    h.engine.reload_intents();
    assert!(h.locks().1.is_empty());
    assert_eq!(h.intent(id).state, IntentState::Released);
}

#[test]
fn without_a_writer_of_the_cluster_log_its_intents_are_left_to_people() {
    let (mut h, _) = pod_gone(&auto_release_config(), Leadership::always());
    let id = cluster_intent(&mut h);
    h.pod_events(
        "deploy-x",
        vec![WatchEvent::Delete(pod("shop", "deploy-x"))],
    );
    h.age(Duration::from_secs(3600));
    assert_eq!(h.intent(id).state, IntentState::Expired);
    let lock = h
        .locks()
        .1
        .into_iter()
        .find(|l| l.id == id.to_string())
        .unwrap();
    assert_eq!(lock.release, "driftd intent release 7 --cluster");
}
