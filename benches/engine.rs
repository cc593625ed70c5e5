//! The drift engine's own ceiling, apart from the transport: the engine fed with watch
//! messages directly (no HTTP, no kube client), on the realistic mix
//! (`driftd_sim::mix`), at several object counts.
//!
//! Run with `cargo bench --bench engine` (default N = 1000 and 10000), or
//! `cargo bench --bench engine -- 1000 10000 100000`. For each N it prints:
//! - `commit_s`: one revision of N objects into a fresh SQLite store (on disk);
//! - `load_s`: the engine loading that desired state;
//! - `cold_s`: the first list of every kind (N live objects) compared and indexed;
//! - `heap_B/obj`: heap bytes the engine holds per tracked object once every object is
//!   compared (a counting allocator: exact, unlike RSS), of which `desired_B` the desired
//!   state alone; next to them the live JSON's size per object;
//! - `events/s` and `µs/event` for M modifications (a ConfigMap or Secret value, an image, an
//!   annotation) streamed in batches as the run loop takes them, next to the differ alone on
//!   the same pairs (`compare µs`), the floor of any engine, and their ratio; `pack_µs` is
//!   what packing each event's kept copy costs, which watchers do before the engine gets it
//!   (outside `µs/event` and `cold_s`, as it is outside the engine's thread in `driftd serve`);
//!   `drift` is how many objects the engine reports drifting afterwards, checked against
//!   the modifications made (the bench fails otherwise: figures of wrong answers mean nothing),
//!   and `drift_B` the heap the engine holds per drifting object beyond an in-sync one (its
//!   changes, patch, settle state and episode), measured after the modifications;
//! - what a watcher spends parsing one such modification's watch event line, in three ways:
//!   `parse_µs` as `driftd serve` parses it (`LiveObject`, `type` first as the API server
//!   writes it: `fieldsV1` copied as text), `buffered_µs` the same with `object` first
//!   (serde buffers the object and `fieldsV1` is transcoded), and `tree_µs` a plain
//!   `serde_json::Value` of the line, the baseline.
//!
//! Growth in N is linear when `heap_B/obj` and `µs/event` stay flat across the rows.
//!
//! `ENGINE_BENCH_COVERAGE=ConfigMap,Secret` turns on unmanaged coverage (`[unmanaged] kinds`)
//! for those kinds, whose count of owned live objects is kept per burst of events.

use driftd_config::Config;
use driftd_core::diff::{ClusterFacts, CompareInput, Differ};
use driftd_core::report::DriftClass;
use driftd_engine::{
    Announcement, DriftIndex, Engine, LockAnnouncement, Outputs, PodRef, SystemClock,
};
use driftd_k8s::TypeKey;
use driftd_sim::{fields, mix, server_defaults};
use driftd_store::{CommitRequest, Store};
use driftd_watch::packed::Packing;
use driftd_watch::{LiveObject, WatchControl, WatchError, WatchEvent, WatchMessage, WatcherId};
use kube::api::ApiResource;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

#[path = "common/counting.rs"]
mod counting;
use counting::ALLOCATED;

/// Watchers that exist only as the ids the engine expects on their messages.
#[derive(Default, Clone)]
struct Watchers {
    last: u64,
    running: Arc<Mutex<BTreeMap<TypeKey, WatcherId>>>,
}

impl Watchers {
    fn of(&self, kind: &TypeKey) -> WatcherId {
        *self
            .running
            .lock()
            .unwrap()
            .get(kind)
            .unwrap_or_else(|| panic!("the engine watches {}", kind.kind))
    }
}

impl WatchControl for Watchers {
    fn start(&mut self, kind: &TypeKey) -> WatcherId {
        self.last += 1;
        let id = WatcherId(self.last);
        self.running.lock().unwrap().insert(kind.clone(), id);
        id
    }

    fn stop(&mut self, kind: &TypeKey) {
        self.running.lock().unwrap().remove(kind);
    }

    fn start_pods_named(&mut self, _name: &str) -> WatcherId {
        self.last += 1;
        WatcherId(self.last)
    }

    fn stop_pods_named(&mut self, _name: &str) {}
}

/// Outputs that go nowhere (Events and counters cost nothing here: they are measured apart).
struct Nowhere;

impl Outputs for Nowhere {
    fn watch_event(&mut self, _kind: &TypeKey) {}
    fn watch_error(&mut self, _kind: &TypeKey, _error: &WatchError) {}
    fn compared(&mut self, _took: Duration) {}
    fn announce(
        &mut self,
        _a: Announcement,
        _e: &driftd_core::report::DriftEntry,
        _l: Option<&driftd_engine::LiveIdentity>,
    ) {
    }
    fn store_error(&mut self, _what: &str, _error: &driftd_store::StoreError) {}
    fn episodes(&mut self, _changes: &driftd_store::EpisodeChanges) {}
    fn announce_lock(
        &mut self,
        _what: LockAnnouncement,
        _lock: &driftd_core::report::StaleLock,
        _pod: Option<&PodRef>,
    ) {
    }
}

fn type_of(object: &Value) -> TypeKey {
    TypeKey {
        api_version: object["apiVersion"].as_str().unwrap_or_default().into(),
        kind: object["kind"].as_str().unwrap_or_default().into(),
    }
}

/// `desired` as the cluster holds it after `kubectl apply`: the last-applied annotation,
/// API defaults, identity metadata, managedFields, and a Deployment's status.
fn live_of(desired: &Value, i: usize) -> Value {
    let key = type_of(desired);
    let mut live = desired.clone();
    live["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": format!("{desired}\n"),
    });
    server_defaults::as_created(&key.api_version, &key.kind, &mut live);
    let md = live["metadata"].as_object_mut().unwrap();
    md.insert(
        "uid".into(),
        json!(format!("6f1c7c1e-3a8e-4d0b-9d55-{i:012}")),
    );
    md.insert("resourceVersion".into(), json!(format!("{}", 1000 + i)));
    md.insert("creationTimestamp".into(), json!("2026-11-30T05:00:00Z"));
    fields::record(
        &key.kind,
        None,
        &mut live,
        &fields::Write {
            manager: "kubectl-client-side-apply",
            subresource: None,
            api_version: &key.api_version,
            time: "2026-11-30T05:00:00Z",
        },
    );
    if key.kind == "Deployment" {
        let replicas = live["spec"]["replicas"].clone();
        live["status"] = json!({
            "observedGeneration": 1, "replicas": replicas, "updatedReplicas": replicas,
            "readyReplicas": replicas, "availableReplicas": replicas,
            "conditions": [{"type": "Available", "status": "True",
                "reason": "MinimumReplicasAvailable", "lastUpdateTime": "2026-11-30T05:00:00Z",
                "lastTransitionTime": "2026-11-30T05:00:00Z"}],
        });
    }
    live
}

/// `live` in the form a watcher hands it to the engine (`LiveObject`: `fieldsV1` as text).
fn as_watched(live: Value) -> Value {
    let key = type_of(&live);
    let resource = ApiResource {
        group: String::new(),
        version: String::new(),
        api_version: key.api_version,
        kind: key.kind,
        plural: String::new(),
    };
    let watched: LiveObject = serde_json::from_value(live).expect("a live object");
    watched.into_json(&resource)
}

/// Kinds whose modification below changes a field the desired state sets (drift); the
/// others get an annotation the manifest does not set (an event, but no drift).
const DRIFTING_KINDS: [&str; 3] = ["ConfigMap", "Secret", "Deployment"];

/// `live` after its `round`-th modification: a value, an image or an annotation, by kind.
fn modified(live: &Value, round: usize) -> Value {
    let mut edited = live.clone();
    let mark = format!("edit-{round}");
    match edited["kind"].as_str().unwrap_or_default() {
        "ConfigMap" => edited["data"]["color"] = json!(mark),
        "Secret" => edited["data"]["token"] = json!("ZWRpdGVk"),
        "Deployment" => {
            edited["spec"]["template"]["spec"]["containers"][0]["image"] =
                json!(format!("registry.example.com/team/app:{mark}"))
        }
        _ => edited["metadata"]["annotations"]["example.com/edited"] = json!(mark),
    }
    edited["metadata"]["resourceVersion"] = json!(format!("{}", 10_000_000 + round));
    edited
}

fn heap() -> usize {
    ALLOCATED.load(Ordering::Relaxed)
}

struct Row {
    n: usize,
    commit_s: f64,
    load_s: f64,
    cold_s: f64,
    heap_per_object: f64,
    desired_heap_per_object: f64,
    json_per_object: f64,
    events: usize,
    events_per_s: f64,
    us_per_event: f64,
    /// Packing each event's kept copy, which the watchers do beside the engine.
    pack_us: f64,
    compare_us: f64,
    parse: ParseCosts,
    drifting: usize,
    expected_drifting: usize,
    drift_heap_per_object: f64,
}

fn run(n: usize, dir: &std::path::Path) -> Row {
    let (_namespaces, objects) = mix::mix(n);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let parsed = driftd_core::manifest::parse_text(
        &list.to_string(),
        "bench.json",
        &driftd_core::manifest::LoadOptions::default(),
    )
    .expect("the mix is valid");
    let path = dir.join(format!("engine-{n}.db"));
    let mut store = Store::open(&path).expect("store opens");
    let started = Instant::now();
    store
        .commit(&CommitRequest {
            source: "bench",
            message: "bench",
            author: "bench",
            objects: &parsed,
            committed_at: None,
            skipped: 0,
        })
        .expect("commit");
    let commit_s = started.elapsed().as_secs_f64();
    drop(parsed);
    drop(list);

    let mut config = Config::default();
    config.events.enabled = false;
    if let Ok(kinds) = std::env::var("ENGINE_BENCH_COVERAGE") {
        config.unmanaged.kinds = kinds.split(',').map(str::to_string).collect();
    }
    let heap0 = heap();
    let index = Arc::new(RwLock::new(DriftIndex::new(10_000)));
    let watchers = Watchers::default();
    // The engine's and the watchers' packing, as `serve` shares one.
    let packer = Packing::new();
    let mut engine = Engine::new(
        store,
        &config,
        index.clone(),
        packer.clone(),
        watchers.clone(),
        Nowhere,
        Arc::new(SystemClock),
    )
    .expect("engine");
    let started = Instant::now();
    engine.poll_desired().expect("desired state loads");
    let load_s = started.elapsed().as_secs_f64();
    let desired_heap_per_object = heap().saturating_sub(heap0) as f64 / n as f64;

    // The first list of every kind, as a watcher delivers it; live objects are built per
    // kind and moved in, so what stays allocated afterwards is what the engine keeps.
    let mut by_kind: BTreeMap<TypeKey, Vec<usize>> = BTreeMap::new();
    for (i, object) in objects.iter().enumerate() {
        by_kind.entry(type_of(object)).or_default().push(i);
    }
    let mut json_bytes = 0usize;
    let mut cold = Duration::ZERO;
    for (kind, members) in &by_kind {
        let watcher = watchers.of(kind);
        let mut batch = vec![message(kind, watcher, WatchEvent::Init)];
        for &i in members {
            let live = live_of(&objects[i], i);
            json_bytes += live.to_string().len();
            batch.push(message(
                kind,
                watcher,
                WatchEvent::apply(as_watched(live), &packer),
            ));
        }
        batch.push(message(kind, watcher, WatchEvent::InitDone));
        let started = Instant::now();
        engine.handle(batch);
        cold += started.elapsed();
    }
    // Kinds the engine watches for its own reasons (pods and ReplicaSets for stale config)
    // list empty here: the engine is ready, as `driftd serve` is when it reports figures.
    let others: Vec<(TypeKey, WatcherId)> = watchers
        .running
        .lock()
        .unwrap()
        .iter()
        .filter(|(kind, _)| !by_kind.contains_key(*kind))
        .map(|(kind, id)| (kind.clone(), *id))
        .collect();
    for (kind, watcher) in others {
        let started = Instant::now();
        engine.handle([
            message(&kind, watcher, WatchEvent::Init),
            message(&kind, watcher, WatchEvent::InitDone),
        ]);
        cold += started.elapsed();
    }
    assert!(index.read().unwrap().ready(), "every watched kind listed");
    let heap_per_object = heap().saturating_sub(heap0) as f64 / n as f64;
    let heap_in_sync = heap();
    {
        let index = index.read().unwrap();
        assert_eq!(index.len(), n, "every object is judged");
        let drifting = index
            .entries()
            .filter(|e| e.class != DriftClass::InSync)
            .count();
        assert_eq!(drifting, 0, "the mix as applied is in sync");
    }

    // Modifications: each object modified in turn; M = max(N, 20000).
    let events = n.max(20_000);
    let key = b"benchmark installation key, 32+ bytes long";
    let differ = Differ::new(key);
    let facts = ClusterFacts::default();
    let lives: Vec<Value> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| as_watched(live_of(o, i)))
        .collect();
    let mut modifications: Vec<(usize, Value)> = (0..events)
        .map(|round| (round % n, modified(&lives[round % n], round)))
        .collect();
    let started = Instant::now();
    for (i, live) in modifications.iter().take(2_000) {
        std::hint::black_box(differ.compare(&CompareInput {
            desired: &objects[*i],
            live: Some(live),
            previous: None,
            facts: &facts,
        }));
    }
    let compare_us = started.elapsed().as_secs_f64() * 1e6 / modifications.len().min(2_000) as f64;
    drop(lives);
    let parse = parse_costs(&objects, events.min(2_000));
    let mut handled = Duration::ZERO;
    let mut packing = Duration::ZERO;
    while !modifications.is_empty() {
        let rest = modifications.split_off(modifications.len().min(256));
        let started = Instant::now();
        let batch: Vec<WatchMessage> = std::mem::replace(&mut modifications, rest)
            .into_iter()
            .map(|(i, live)| {
                let kind = type_of(&objects[i]);
                let watcher = watchers.of(&kind);
                message(&kind, watcher, WatchEvent::apply(live, &packer))
            })
            .collect();
        packing += started.elapsed();
        let started = Instant::now();
        engine.handle(batch);
        handled += started.elapsed();
    }
    let expected_drifting = objects
        .iter()
        .take(events)
        .filter(|o| DRIFTING_KINDS.contains(&o["kind"].as_str().unwrap_or_default()))
        .count();
    let drifting = index
        .read()
        .unwrap()
        .entries()
        .filter(|e| e.class != DriftClass::InSync)
        .count();
    Row {
        n,
        commit_s,
        load_s,
        cold_s: cold.as_secs_f64(),
        heap_per_object,
        desired_heap_per_object,
        drift_heap_per_object: heap().saturating_sub(heap_in_sync) as f64 / drifting.max(1) as f64,
        json_per_object: json_bytes as f64 / n as f64,
        events,
        events_per_s: events as f64 / handled.as_secs_f64(),
        us_per_event: handled.as_secs_f64() * 1e6 / events as f64,
        pack_us: packing.as_secs_f64() * 1e6 / events as f64,
        compare_us,
        parse,
        drifting,
        expected_drifting,
    }
}

/// µs per watch event line of the first `count` modifications, parsed three ways.
struct ParseCosts {
    live_object_us: f64,
    buffered_us: f64,
    tree_us: f64,
}

fn parse_costs(objects: &[Value], count: usize) -> ParseCosts {
    let lines: Vec<(TypeKey, String, String)> = (0..count)
        .map(|round| {
            let i = round % objects.len();
            let object = modified(&live_of(&objects[i], i), round);
            let type_first = format!(r#"{{"type":"MODIFIED","object":{object}}}"#);
            let object_first = format!(r#"{{"object":{object},"type":"MODIFIED"}}"#);
            (type_of(&object), type_first, object_first)
        })
        .collect();
    let resources: BTreeMap<TypeKey, ApiResource> = lines
        .iter()
        .map(|(key, _, _)| {
            let resource = ApiResource {
                group: String::new(),
                version: String::new(),
                api_version: key.api_version.clone(),
                kind: key.kind.clone(),
                plural: String::new(),
            };
            (key.clone(), resource)
        })
        .collect();
    let per_line = |parse: &dyn Fn(&TypeKey, &str, &str)| {
        let started = Instant::now();
        for (key, type_first, object_first) in &lines {
            parse(key, type_first, object_first);
        }
        started.elapsed().as_secs_f64() * 1e6 / lines.len() as f64
    };
    let as_served = |key: &TypeKey, line: &str| {
        let event: kube::api::WatchEvent<LiveObject> =
            serde_json::from_str(line).expect("a watch event");
        if let kube::api::WatchEvent::Modified(live) = event {
            std::hint::black_box(live.into_json(&resources[key]));
        }
    };
    ParseCosts {
        live_object_us: per_line(&|key, line, _| as_served(key, line)),
        buffered_us: per_line(&|key, _, line| as_served(key, line)),
        tree_us: per_line(&|_, line, _| {
            std::hint::black_box(serde_json::from_str::<Value>(line).expect("JSON"));
        }),
    }
}

fn message(kind: &TypeKey, watcher: WatcherId, event: WatchEvent) -> WatchMessage {
    WatchMessage {
        type_key: kind.clone(),
        watcher,
        event,
    }
}

fn main() {
    // As `driftd` runs.
    driftd_engine::small_pages_only();
    driftd_engine::return_freed_pages_promptly();
    // With `harness = false` cargo passes `--bench`; numbers are object counts.
    let mut counts: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if counts.is_empty() {
        counts = vec![1_000, 10_000];
    }
    let dir = tempfile::tempdir().expect("temp dir");
    println!(
        "{:>8} {:>9} {:>7} {:>7} {:>11} {:>10} {:>10} {:>8} {:>10} {:>9} {:>8} {:>11} {:>8} {:>7} {:>8} {:>9} {:>12} {:>8}",
        "objects",
        "commit_s",
        "load_s",
        "cold_s",
        "heap_B/obj",
        "desired_B",
        "json_B/obj",
        "events",
        "events/s",
        "µs/event",
        "pack_µs",
        "compare_µs",
        "x diff",
        "drift",
        "drift_B",
        "parse_µs",
        "buffered_µs",
        "tree_µs"
    );
    let mut wrong = false;
    for n in counts {
        let row = run(n, dir.path());
        println!(
            "{:>8} {:>9.2} {:>7.2} {:>7.2} {:>11.0} {:>10.0} {:>10.0} {:>8} {:>10.0} {:>9.1} {:>8.1} {:>11.1} {:>8.2} {:>7} {:>8.0} {:>9.1} {:>12.1} {:>8.1}",
            row.n,
            row.commit_s,
            row.load_s,
            row.cold_s,
            row.heap_per_object,
            row.desired_heap_per_object,
            row.json_per_object,
            row.events,
            row.events_per_s,
            row.us_per_event,
            row.pack_us,
            row.compare_us,
            row.us_per_event / row.compare_us,
            row.drifting,
            row.drift_heap_per_object,
            row.parse.live_object_us,
            row.parse.buffered_us,
            row.parse.tree_us
        );
        if row.drifting != row.expected_drifting {
            eprintln!(
                "warning: {} objects drift, {} expected: these figures are of wrong answers",
                row.drifting, row.expected_drifting
            );
            wrong = true;
        }
    }
    if wrong {
        std::process::exit(1);
    }
}
