//! Scale figures for the simulator, in one process on loopback (run in release mode):
//!
//! ```text
//! cargo run --release -p driftd-sim --example scale -- --objects 10000 [--controllers]
//!     [--clients 8] [--writes 20000] [--history 10000] [--bulk] [--edits 100000]
//! ```
//!
//! Prints: the time to load the realistic mix over HTTP (`--clients` concurrent creates) or
//! with the in-process bulk load (`--bulk`), the time for the controllers to settle, RSS per
//! stored object (VmRSS after minus before, / objects stored), the controllers' CPU once
//! settled (should be idle), writes/s over HTTP with concurrent clients (merge patches of
//! ConfigMaps), list times (a whole kind at once and in pages of 500), and with `--edits`
//! the in-process bulk edit's rate and the watch delivery rate to one watching client.
//! The simulator runs in a child process (this program with `--serve`), so RSS and CPU
//! figures are its own.

use driftd_sim::mix::mix;
use driftd_sim::{SimOptions, Simulator};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    objects: usize,
    controllers: bool,
    clients: usize,
    writes: usize,
    history: usize,
    bulk: bool,
    edits: usize,
    serve: bool,
}

fn args() -> Args {
    let mut a = Args {
        objects: 10_000,
        controllers: false,
        clients: 8,
        writes: 20_000,
        history: 10_000,
        bulk: false,
        edits: 0,
        serve: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut num = || -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{flag} wants a number"))
        };
        match flag.as_str() {
            "--objects" => a.objects = num(),
            "--clients" => a.clients = num(),
            "--writes" => a.writes = num(),
            "--history" => a.history = num(),
            "--edits" => a.edits = num(),
            "--controllers" => a.controllers = true,
            "--bulk" => a.bulk = true,
            "--serve" => a.serve = true,
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

/// The collection path an object is created in.
fn collection(obj: &Value) -> String {
    let av = obj["apiVersion"].as_str().unwrap_or("");
    let kind = obj["kind"].as_str().unwrap_or("");
    let plural = match kind {
        "Deployment" => "deployments",
        "ConfigMap" => "configmaps",
        "Secret" => "secrets",
        "Service" => "services",
        "ServiceAccount" => "serviceaccounts",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "Job" => "jobs",
        "CronJob" => "cronjobs",
        "Namespace" => return "/api/v1/namespaces".into(),
        other => panic!("no plural for {other}"),
    };
    let prefix = if av == "v1" {
        "/api/v1".to_string()
    } else {
        format!("/apis/{av}")
    };
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or("default");
    format!("{prefix}/namespaces/{ns}/{plural}")
}

fn vm_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// A process's user+system CPU time.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, s)| s).unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the name.
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

async fn stats(http: &reqwest::Client, url: &str) -> Value {
    http.get(format!("{url}/_sim/stats"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Waits until the resourceVersion stops moving for a second (controllers done).
async fn settle(http: &reqwest::Client, url: &str, limit: Duration) -> Duration {
    let start = Instant::now();
    let mut last = String::new();
    let mut since = Instant::now();
    while start.elapsed() < limit {
        let rv = stats(http, url).await["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        if rv != last {
            last = rv;
            since = Instant::now();
        } else if since.elapsed() >= Duration::from_secs(1) {
            return since - start;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("  (not settled after {limit:?})");
    start.elapsed()
}

/// Lists `path` (in pages of `limit`), returning the items counted and the time spent
/// fetching the bodies (counting, outside that time, parses without building trees).
async fn list_count(
    http: &reqwest::Client,
    url: &str,
    path: &str,
    limit: Option<usize>,
) -> (usize, Duration) {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(default, rename = "continue")]
        cont: String,
    }
    #[derive(serde::Deserialize)]
    struct List {
        items: Vec<serde::de::IgnoredAny>,
        metadata: Meta,
    }
    let mut count = 0;
    let mut fetching = Duration::ZERO;
    let mut cont = String::new();
    loop {
        let mut q = vec![];
        if let Some(l) = limit {
            q.push(("limit", l.to_string()));
        }
        if !cont.is_empty() {
            q.push(("continue", cont.clone()));
        }
        let t = Instant::now();
        let body = http
            .get(format!("{url}{path}"))
            .query(&q)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        fetching += t.elapsed();
        let v: List = serde_json::from_slice(&body).unwrap();
        count += v.items.len();
        cont = v.metadata.cont;
        if cont.is_empty() {
            return (count, fetching);
        }
    }
}

const KINDS: &[&str] = &[
    "/apis/apps/v1/deployments",
    "/apis/apps/v1/replicasets",
    "/api/v1/pods",
    "/api/v1/events",
    "/api/v1/configmaps",
    "/api/v1/secrets",
    "/api/v1/services",
    "/api/v1/serviceaccounts",
    "/apis/rbac.authorization.k8s.io/v1/roles",
    "/apis/rbac.authorization.k8s.io/v1/rolebindings",
    "/apis/batch/v1/jobs",
    "/apis/batch/v1/cronjobs",
    "/api/v1/namespaces",
];

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let a = args();
    if a.serve {
        return serve(&a).await;
    }
    let opts = SimOptions {
        history_limit: a.history,
        controllers: a.controllers,
        tls: false,
        ..SimOptions::default()
    };
    let (namespaces, objects) = mix(a.objects);
    let _ = opts;
    let (mut server, url) = spawn_server(&a);
    let pid = server.id();
    let rss0 = vm_rss_kib(pid);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    println!(
        "objects={} controllers={} clients={} history={}",
        a.objects, a.controllers, a.clients, a.history
    );

    // Load.
    let cpu = cpu_time(pid);
    let t = Instant::now();
    if a.bulk {
        let mut all: Vec<Value> = namespaces
            .iter()
            .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}))
            .collect();
        all.extend(objects.iter().cloned());
        let body = serde_json::to_vec(&all).unwrap();
        drop(all);
        let r: Value = http
            .post(format!("{url}/_sim/bulk-load"))
            .body(body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        println!("bulk load: {r}");
    } else {
        for n in &namespaces {
            let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}});
            let r = http
                .post(format!("{url}/api/v1/namespaces"))
                .json(&ns)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "namespace {n}: {}", r.status());
        }
        let objects = Arc::new(objects.clone());
        let (url2, http2) = (url.clone(), http.clone());
        run_clients(a.clients, objects.len(), move |i| {
            let o = &objects[i];
            http2
                .post(format!("{url2}{}", collection(o)))
                .header("content-type", "application/json")
                .body(serde_json::to_vec(o).unwrap())
        })
        .await;
    }
    let load = t.elapsed();
    println!(
        "load: {:.2} s ({:.0} objects/s)",
        load.as_secs_f64(),
        a.objects as f64 / load.as_secs_f64()
    );
    let settled = settle(&http, &url, Duration::from_secs(600)).await;
    println!("settle after load: {:.2} s", settled.as_secs_f64());
    let st = stats(&http, &url).await;
    println!(
        "simulator CPU for load and settle: {:.2} s; stats: objects {} storedBytes {} ({:.0} bytes/object)",
        (cpu_time(pid) - cpu).as_secs_f64(),
        st["objects"],
        st["storedBytes"],
        st["storedBytes"].as_f64().unwrap_or(0.0) / st["objects"].as_f64().unwrap_or(1.0)
    );

    // Idle CPU once settled.
    let (c0, t0) = (cpu_time(pid), Instant::now());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle = (cpu_time(pid) - c0).as_secs_f64() / t0.elapsed().as_secs_f64();
    println!(
        "cpu while idle after settle: {:.1}% of one core",
        idle * 100.0
    );

    // Lists (also counts what is stored).
    let mut stored = 0;
    let mut all_lists = Duration::ZERO;
    for k in KINDS {
        let (n, took) = list_count(&http, &url, k, None).await;
        stored += n;
        all_lists += took;
    }
    let rss1 = vm_rss_kib(pid);
    println!(
        "stored objects: {stored}; RSS {} MiB -> {} MiB: {:.0} bytes/object",
        rss0 / 1024,
        rss1 / 1024,
        (rss1.saturating_sub(rss0) * 1024) as f64 / stored.max(1) as f64
    );
    println!("list every kind once: {:.2} s", all_lists.as_secs_f64());
    let (n, took) = list_count(&http, &url, "/apis/apps/v1/deployments", None).await;
    println!(
        "list deployments ({n}) at once: {:.3} s",
        took.as_secs_f64()
    );
    let (n, took) = list_count(&http, &url, "/apis/apps/v1/deployments", Some(500)).await;
    println!(
        "list deployments ({n}) in pages of 500: {:.3} s",
        took.as_secs_f64()
    );

    // Writes over HTTP: merge patches of ConfigMaps, cycling.
    let cms: Vec<(String, String)> = keys_of(&objects, "ConfigMap");
    if a.writes > 0 && !cms.is_empty() {
        let cms = Arc::new(cms);
        let cpu = cpu_time(pid);
        let t = Instant::now();
        let (url2, http2) = (url.clone(), http.clone());
        run_clients(a.clients, a.writes, move |i| {
            let (ns, name) = &cms[i % cms.len()];
            http2
                .patch(format!("{url2}/api/v1/namespaces/{ns}/configmaps/{name}"))
                .header("content-type", "application/merge-patch+json")
                .body(format!(r#"{{"data":{{"color":"c{i}"}}}}"#))
        })
        .await;
        let took = t.elapsed();
        println!(
            "writes over HTTP ({} clients, {} merge patches): {:.0} writes/s",
            a.clients,
            a.writes,
            a.writes as f64 / took.as_secs_f64()
        );
        println!(
            "  simulator CPU per write: {:.0} µs",
            (cpu_time(pid) - cpu).as_secs_f64() * 1e6 / a.writes as f64
        );
        let settled = settle(&http, &url, Duration::from_secs(600)).await;
        println!("settle after writes: {:.2} s", settled.as_secs_f64());
    }

    if a.edits > 0 {
        bulk_edit(&http, &url, a.edits, pid).await;
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// The simulator in a child process (this program with `--serve`), so its RSS and CPU are
/// its own; returns the child and its URL.
fn spawn_server(a: &Args) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--serve", "--history", &a.history.to_string()]);
    if a.controllers {
        cmd.arg("--controllers");
    }
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("simulator child starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_string())
}

/// `--serve`: runs the simulator until killed, printing its URL first.
async fn serve(a: &Args) {
    let opts = SimOptions {
        history_limit: a.history,
        controllers: a.controllers,
        tls: false,
        ..SimOptions::default()
    };
    let sim = Simulator::start_with("127.0.0.1:0".parse().unwrap(), opts)
        .await
        .unwrap();
    println!("{}", sim.url());
    std::future::pending::<()>().await;
}

/// Sends `total` requests from `clients` concurrent tasks; `request(i)` builds the i-th.
async fn run_clients(
    clients: usize,
    total: usize,
    request: impl Fn(usize) -> reqwest::RequestBuilder + Send + Sync + 'static,
) {
    let request = Arc::new(request);
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..clients {
        let (request, next) = (request.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return;
                }
                let r = request(i).send().await.unwrap();
                assert!(r.status().is_success(), "request {i}: {}", r.status());
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
}

fn keys_of(objects: &[Value], kind: &str) -> Vec<(String, String)> {
    objects
        .iter()
        .filter(|o| o["kind"] == kind)
        .map(|o| {
            (
                o["metadata"]["namespace"].as_str().unwrap().to_string(),
                o["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// One client watches ConfigMaps while the simulator edits them itself; prints both rates.
async fn bulk_edit(http: &reqwest::Client, url: &str, edits: usize, pid: u32) {
    let rv = stats(http, url).await["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let watch = http
        .get(format!(
            "{url}/api/v1/configmaps?watch=true&resourceVersion={rv}"
        ))
        .send()
        .await
        .unwrap();
    let received = Arc::new(AtomicUsize::new(0));
    let counter = received.clone();
    let reader = tokio::spawn(async move {
        let mut watch = watch;
        while let Ok(Some(chunk)) = watch.chunk().await {
            let lines = chunk.iter().filter(|b| **b == b'\n').count();
            if counter.fetch_add(lines, Ordering::Relaxed) + lines >= edits {
                return;
            }
        }
    });
    let cpu = cpu_time(pid);
    let t = Instant::now();
    let r: Value = http
        .post(format!("{url}/_sim/bulk-edit"))
        .json(&json!({"count": edits, "kinds": ["configmaps"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    println!("bulk edit: {r}");
    println!(
        "  simulator CPU per edit (making it and writing its watch event): {:.0} µs",
        (cpu_time(pid) - cpu).as_secs_f64() * 1e6 / edits as f64
    );
    let _ = tokio::time::timeout(Duration::from_secs(120), reader).await;
    let took = t.elapsed();
    println!(
        "watch client received {} events in {:.2} s: {:.0} events/s",
        received.load(Ordering::Relaxed),
        took.as_secs_f64(),
        received.load(Ordering::Relaxed) as f64 / took.as_secs_f64()
    );
    println!("stats: {}", stats(http, url).await);
}
