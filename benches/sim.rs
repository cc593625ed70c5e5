//! The cluster simulator's own ceilings: a benchmark of driftd must measure driftd, so the
//! simulator has to load, hold, list, take writes and deliver watch events faster than
//! driftd consumes them, in a few GB at a million objects. Nothing of driftd runs here.
//!
//! Run with `cargo bench --bench sim` (default N = 10000), or
//! `cargo bench --bench sim -- 100000 1000000`. Each N runs in a process of its own (this
//! program again, `SIM_BENCH_ROW=N`), so its memory figures are its own. The simulator runs
//! in process without controllers (`SimOptions::controllers = false`), as `driftd bench`
//! runs it. For each N:
//! - `load_s` and `objects/s`: the realistic mix (`driftd_sim::mix`), made one object at a
//!   time as it is loaded, bulk-loaded with the simulator's own defaulting (target: 100,000
//!   in <= 60 s);
//! - `heap_B/obj`: heap bytes the simulator holds per stored object afterwards (a counting
//!   allocator: exact; target <= 5 KB);
//! - `peak_MiB`, `peak_B/obj` and `steady_B/obj`: the process's peak RSS over the whole row
//!   (`VmHWM`), and the peak and the RSS right after the load (`VmRSS`) over the RSS of the
//!   empty simulator, per stored object (a million objects must fit in a few GB);
//! - `list_s` and `listed/s`: every kind of the mix listed over HTTP in pages of 500 (as
//!   client-go's reflector lists), each page read to its last byte and its items counted;
//! - `http_writes/s`: merge patches of ConfigMaps over HTTP/1.1 from 8 keep-alive
//!   connections on loopback (target >= 5,000/s; the client shares the 2 cores);
//! - `prepare_s`, `edit_writes/s` and `delivered/s`: the in-process bulk edit that `driftd
//!   bench` uses (M modifications, `SIM_BENCH_EDITS`, default 100,000): the time to run them
//!   through the write path beforehand, the rate at which it then stores them, and the rate
//!   at which their watch events reach watch streams read by consumers that only count lines
//!   (first edit stored to last event received). This is the simulator's
//!   delivery capacity: `driftd bench`'s `events_per_s` is limited by driftd when it is
//!   clearly below it.

use driftd_sim::store::bulk::BulkEdit;
use driftd_sim::{SimOptions, Simulator};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/counting.rs"]
mod counting;
use counting::ALLOCATED;

/// HTTP writers, each on its own keep-alive connection.
const WRITERS: usize = 8;
/// Writes over HTTP per N.
const HTTP_WRITES: usize = 20_000;
/// Modifications of the bulk edit per N (`SIM_BENCH_EDITS` overrides).
const EDITS: usize = 100_000;
/// Kinds the bulk edit modifies by default (`store/bulk.rs`), watched here.
const WATCHED: &[&str] = &[
    "/api/v1/configmaps",
    "/api/v1/secrets",
    "/api/v1/services",
    "/apis/apps/v1/deployments",
];
/// Every kind the mix holds, listed in pages.
const LISTED: &[&str] = &[
    "/api/v1/namespaces",
    "/apis/apps/v1/deployments",
    "/api/v1/configmaps",
    "/api/v1/secrets",
    "/api/v1/services",
    "/api/v1/serviceaccounts",
    "/apis/rbac.authorization.k8s.io/v1/roles",
    "/apis/rbac.authorization.k8s.io/v1/rolebindings",
    "/apis/batch/v1/jobs",
    "/apis/batch/v1/cronjobs",
];
/// Items per list page (client-go's reflector's default).
const PAGE: usize = 500;
/// The variable that makes this program run one row (its N) instead of the table.
const ROW: &str = "SIM_BENCH_ROW";

struct Row {
    n: usize,
    load_s: f64,
    objects_per_s: f64,
    heap_per_object: f64,
    peak_mib: f64,
    peak_per_object: f64,
    steady_per_object: f64,
    list_s: f64,
    listed_per_s: f64,
    http_writes_per_s: f64,
    prepare_s: f64,
    edit_writes_per_s: f64,
    delivered: u64,
    delivered_per_s: f64,
}

fn main() {
    if let Some(n) = std::env::var(ROW).ok().and_then(|n| n.parse().ok()) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let row = rt.block_on(run(n));
        print_row(&row);
        return;
    }
    let counts: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let counts = if counts.is_empty() {
        vec![10_000]
    } else {
        counts
    };
    println!(
        "{:>8} {:>7} {:>9} {:>10} {:>8} {:>10} {:>12} {:>7} {:>9} {:>13} {:>9} {:>13} {:>9} {:>11}",
        "objects",
        "load_s",
        "objects/s",
        "heap_B/obj",
        "peak_MiB",
        "peak_B/obj",
        "steady_B/obj",
        "list_s",
        "listed/s",
        "http_writes/s",
        "prepare_s",
        "edit_writes/s",
        "delivered",
        "delivered/s"
    );
    let me = std::env::current_exe().expect("this program's path");
    for n in counts {
        // A process per row: RSS (and what the allocator keeps) is then this row's alone.
        let status = std::process::Command::new(&me)
            .env(ROW, n.to_string())
            .status()
            .expect("the row's process starts");
        assert!(status.success(), "the row for {n} objects failed: {status}");
    }
}

fn print_row(row: &Row) {
    println!(
        "{:>8} {:>7.2} {:>9.0} {:>10.0} {:>8.0} {:>10.0} {:>12.0} {:>7.2} {:>9.0} {:>13.0} {:>9.2} {:>13.0} {:>9} {:>11.0}",
        row.n,
        row.load_s,
        row.objects_per_s,
        row.heap_per_object,
        row.peak_mib,
        row.peak_per_object,
        row.steady_per_object,
        row.list_s,
        row.listed_per_s,
        row.http_writes_per_s,
        row.prepare_s,
        row.edit_writes_per_s,
        row.delivered,
        row.delivered_per_s
    );
}

/// A field of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes.
fn status_bytes(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb * 1024.0)
        .unwrap_or(0.0)
}

async fn run(n: usize) -> Row {
    let sim = Simulator::start_with(
        "127.0.0.1:0".parse().unwrap(),
        SimOptions {
            controllers: false,
            tls: false,
            ..SimOptions::default()
        },
    )
    .await
    .expect("simulator starts");
    let sim = Arc::new(sim);

    // The ConfigMaps' names, from a first pass over the mix (made one object at a time and
    // dropped), so the heap measured after the load is the store's alone but for them.
    let configmaps: Vec<(String, String)> = driftd_sim::mix::objects(n)
        .filter(|o| o["kind"] == "ConfigMap")
        .map(|o| {
            let text = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap().to_string();
            (text("/metadata/namespace"), text("/metadata/name"))
        })
        .collect();
    let rss_empty = status_bytes("VmRSS:");
    let heap_before = ALLOCATED.load(Ordering::Relaxed);
    let load = driftd_sim::mix::namespaces(n)
        .into_iter()
        .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        .chain(driftd_sim::mix::objects(n));
    let loader = sim.clone();
    let loaded = tokio::task::spawn_blocking(move || loader.bulk_load(load))
        .await
        .unwrap();
    assert_eq!(loaded.failed, 0, "refused: {:?}", loaded.errors);
    // The load's input was made and dropped one object at a time; what is left is the
    // store (objects, indexes, history).
    let heap_per_object = ALLOCATED
        .load(Ordering::Relaxed)
        .saturating_sub(heap_before) as f64
        / n as f64;
    let steady_per_object = (status_bytes("VmRSS:") - rss_empty) / n as f64;

    // Lists, in pages.
    let started = Instant::now();
    let listed = list_everything(&sim.url()).await;
    let list_s = started.elapsed().as_secs_f64();
    assert!(listed >= n, "listed {listed} of {n}");
    // Writes over HTTP.
    let http_writes_per_s = http_writes(&sim.url(), &configmaps).await;

    // Delivery: consumers that only count the lines of watch streams from now on.
    let rv = sim.store().current_rv();
    let received = Arc::new(AtomicU64::new(0));
    let last_at = Arc::new(std::sync::Mutex::new(Instant::now()));
    let client = reqwest::Client::new();
    for path in WATCHED {
        let url = format!("{}{path}?watch=1&resourceVersion={rv}", sim.url());
        let mut response = client.get(&url).send().await.expect("watch opens");
        assert!(
            response.status().is_success(),
            "{url}: {}",
            response.status()
        );
        let (received, last_at) = (received.clone(), last_at.clone());
        tokio::spawn(async move {
            while let Ok(Some(chunk)) = response.chunk().await {
                let lines = chunk.iter().filter(|b| **b == b'\n').count() as u64;
                if lines > 0 {
                    received.fetch_add(lines, Ordering::Relaxed);
                    *last_at.lock().unwrap() = Instant::now();
                }
            }
        });
    }
    wait_until(Duration::from_secs(10), || {
        sim.open_watches() >= WATCHED.len()
    })
    .await;
    let edits = std::env::var("SIM_BENCH_EDITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(EDITS);
    let started = Instant::now();
    let editor = sim.clone();
    let edit = tokio::task::spawn_blocking(move || {
        editor.bulk_edit(&BulkEdit {
            count: edits,
            kinds: vec![],
            rate: None,
        })
    })
    .await
    .unwrap()
    .expect("bulk edit");
    let want = edit.edit.made as u64;
    wait_until(Duration::from_secs(120), || {
        received.load(Ordering::Relaxed) >= want
    })
    .await;
    let delivered = received.load(Ordering::Relaxed);
    // From the first modification stored: preparing them (the write path) comes first.
    let last = *last_at.lock().unwrap();
    let seconds = last.duration_since(started).as_secs_f64() - edit.edit.prepare_seconds;
    let peak = status_bytes("VmHWM:");
    Row {
        n,
        load_s: loaded.seconds,
        objects_per_s: loaded.objects_per_second,
        heap_per_object,
        peak_mib: peak / (1024.0 * 1024.0),
        peak_per_object: (peak - rss_empty) / n as f64,
        steady_per_object,
        list_s,
        listed_per_s: listed as f64 / list_s.max(1e-9),
        http_writes_per_s,
        prepare_s: edit.edit.prepare_seconds,
        edit_writes_per_s: edit.edit.writes_per_second,
        delivered,
        delivered_per_s: delivered as f64 / seconds.max(1e-9),
    }
}

/// Lists every kind of [`LISTED`] in pages of [`PAGE`], one after the other as a client
/// starting up does; the items listed.
async fn list_everything(base: &str) -> usize {
    #[derive(serde::Deserialize)]
    struct Page {
        metadata: PageMeta,
        items: Vec<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    struct PageMeta {
        #[serde(rename = "continue")]
        next: Option<String>,
    }
    let client = reqwest::Client::new();
    let mut listed = 0;
    for path in LISTED {
        let mut next: Option<String> = None;
        loop {
            let mut url = format!("{base}{path}?limit={PAGE}");
            if let Some(token) = &next {
                url.push_str("&continue=");
                url.push_str(token);
            }
            let response = client.get(&url).send().await.expect("list");
            assert!(
                response.status().is_success(),
                "{url}: {}",
                response.status()
            );
            let body = response.bytes().await.expect("list body");
            let page: Page = serde_json::from_slice(&body).expect("a list page");
            listed += page.items.len();
            match page.metadata.next.filter(|t| !t.is_empty()) {
                Some(token) => next = Some(token),
                None => break,
            }
        }
    }
    listed
}

/// Merge patches of ConfigMaps from [`WRITERS`] keep-alive connections; writes per second.
async fn http_writes(base: &str, configmaps: &[(String, String)]) -> f64 {
    assert!(!configmaps.is_empty(), "the mix has ConfigMaps");
    let targets = Arc::new(configmaps.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..WRITERS {
        let (targets, next, base) = (targets.clone(), next.clone(), base.to_string());
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(1)
                .build()
                .unwrap();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= HTTP_WRITES {
                    break;
                }
                let (ns, name) = &targets[i % targets.len()];
                let url = format!("{base}/api/v1/namespaces/{ns}/configmaps/{name}");
                let response = client
                    .patch(&url)
                    .header("content-type", "application/merge-patch+json")
                    .body(json!({"data": {"bench-http": i.to_string()}}).to_string())
                    .send()
                    .await
                    .expect("write");
                assert!(
                    response.status().is_success(),
                    "{url}: {}",
                    response.status()
                );
                response.bytes().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    HTTP_WRITES as f64 / started.elapsed().as_secs_f64()
}

async fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out after {timeout:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
