//! `driftd bench`: the scale figures from one run, on loopback, in one process
//! tree: this process runs the cluster simulator (controllers off, so it only does what is
//! asked) and the load; `driftd serve` and `driftd commit` run as child processes, so their
//! memory and time are their own.
//!
//! Phases, in order:
//! 1. the realistic mix (`driftd_sim::mix`) of N objects is loaded into the simulator with
//!    its own defaulting, and 5% of them are edited (drift);
//! 2. `commit_s`: `driftd commit` of the N desired objects;
//! 3. `transfer_floor_s`: listing every kind (pages of 500) and parsing it, nothing else;
//! 4. `rss_per_object_bytes` and `cold_start_s`: `driftd serve` on an empty desired state,
//!    then on the N objects, each until `/readyz` answers 200 (every kind listed, every
//!    object compared); peak RSS (`VmHWM`, read at the end of the run) minus the empty
//!    serve's peak, over N;
//! 5. `drift_query_ms`: `GET /drift`, the first page of the default size (500 entries) of
//!    the list of every drifting object (the mix's 5%: 5,000 at N = 100,000, 50,000 at a
//!    million), p50 of 20, right after ready. The first page is what a client waits for
//!    before it shows anything; it sorts every drifting key, so it still grows with the
//!    drift, while later pages cost only their own entries;
//! 6. `events_per_s`: the simulator makes M modifications itself (in process); the phase
//!    ends when driftd's CPU goes quiet with all M watch events counted (read from its
//!    `/proc` CPU time, so the bench does not load driftd while it works); the simulator's
//!    delivery rate is printed beside it, so a reader sees which side limited the run;
//! 7. `latency_p99_ms`: a steady 1,000 writes/s over HTTP for 5 s; one write in 20 goes to
//!    a ConfigMap of a small namespace whose `/drift` is polled until the written value shows;
//! 8. `kube_events_dropped`: `driftd_kube_events_dropped_total` at the end;
//! 9. with serve stopped, the events floor (printed, not a figure): M more modifications
//!    taken in by watches that only parse them, as the transfer floor is for cold start.

use anyhow::{bail, Context};
use driftd_sim::store::bulk::{BulkEdit, DEFAULT_EDIT_KINDS};
use driftd_sim::{SimOptions, Simulator};
use driftd_watch::LiveObject;
use futures::StreamExt;
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use kube::Api;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

mod serve;
use serve::{Serve, QUIET};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Desired objects (the realistic mix).
    #[arg(long, default_value_t = 10_000)]
    pub objects: usize,
    /// Modifications streamed for `events_per_s`.
    #[arg(long, default_value_t = 50_000)]
    pub changes: usize,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Directory for the databases and kubeconfig (default: a new temporary directory).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
}

/// Namespace of the ConfigMaps whose writes are timed until `/drift` shows them.
const LATENCY_NAMESPACE: &str = "bench-latency";
const LATENCY_OBJECTS: usize = 50;
const WRITES_PER_SECOND: u64 = 1_000;
const LATENCY_SECONDS: u64 = 5;
const READY_TIMEOUT: Duration = Duration::from_secs(900);

/// Every figure, with the keys `--json` prints.
#[derive(Debug, serde::Serialize)]
struct Figures {
    objects: usize,
    changes: usize,
    rss_per_object_bytes: f64,
    cold_start_s: f64,
    transfer_floor_s: f64,
    cold_start_over_floor: f64,
    events_per_s: f64,
    latency_p99_ms: f64,
    commit_s: f64,
    /// `GET /drift`'s first page of the default size (500), p50: see phase 5.
    drift_query_ms: f64,
    kube_events_dropped: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let workdir = match &args.workdir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("driftd-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&workdir)?;
    // A reused --workdir starts from fresh databases: else the commit would find its
    // revision there already (an unchanged commit, timed as one) and serve would take over
    // the last run's drift episodes.
    for name in ["bench.db", "empty.db"] {
        for suffix in ["", "-wal", "-shm"] {
            let path = workdir.join(format!("{name}{suffix}"));
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", path.display()))
                }
                _ => {}
            }
        }
    }
    let result = super::runtime()?.block_on(bench(&args, &workdir));
    if args.workdir.is_none() {
        let _ = std::fs::remove_dir_all(&workdir);
    }
    let (figures, notes) = result?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        print_table(&figures, &notes);
    }
    Ok(ExitCode::SUCCESS)
}

/// What the table prints besides the figures.
struct Notes {
    sim_delivery_per_s: f64,
    /// Serve's CPU time (all its threads) from the first modification to the end of the
    /// edits phase (its quiet tail included: under 0.1 s of CPU), per modification: what
    /// `events_per_s` costs, whichever side limited it.
    serve_cpu_us_per_event: f64,
    /// Serve's average CPU use over the edits phase, in cores.
    serve_cores: f64,
    /// What a client that only parses took in of the same modifications ([`events_floor`]).
    events_floor_per_s: f64,
    drifting: usize,
    rss_empty_mib: f64,
    rss_full_mib: f64,
    rss_ready_mib: f64,
    latency: Latency,
    /// One `GET /metrics` after the edits, to the last byte, and its size.
    scrape_ms: f64,
    metrics_bytes: usize,
}

/// Write-to-`/drift` latencies of the latency phase: p99 is the figure; the rest tells an
/// outlier (one stall) from a slow system.
struct Latency {
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    /// When the slowest write was sent, in seconds from the phase's start.
    slowest_sent_s: f64,
}

async fn bench(args: &Args, workdir: &Path) -> anyhow::Result<(Figures, Notes)> {
    let n = args.objects.max(1);
    eprintln!(
        "bench: {n} objects, {} changes, in {}",
        args.changes,
        workdir.display()
    );
    let sim = Simulator::start_with(
        "127.0.0.1:0".parse()?,
        SimOptions {
            controllers: false,
            tls: false,
            // The modifications reach driftd faster than it takes them in: a history that
            // holds them all keeps a lagging watch resuming instead of re-listing (410), so
            // the figure is event processing, not re-lists (the events floor makes M more).
            history_limit: (2 * args.changes + n).max(SimOptions::default().history_limit),
            ..SimOptions::default()
        },
    )
    .await?;
    let kubeconfig = workdir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)?;

    // 1. The cluster: the mix, the latency ConfigMaps, 5% drifting. The mix is made one
    //    object at a time, as it is loaded and again as it is written for the commit: a
    //    million objects held as trees would be several GB of the bench's own.
    let namespaces = driftd_sim::mix::namespaces(n);
    let desired_objects =
        move || driftd_sim::mix::objects(n).chain((0..LATENCY_OBJECTS).map(latency_configmap));
    let load = namespaces
        .into_iter()
        .chain([LATENCY_NAMESPACE.to_string()])
        .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        .chain(desired_objects());
    let sim = std::sync::Arc::new(sim);
    let loader = sim.clone();
    let loaded = tokio::task::spawn_blocking(move || loader.bulk_load(load)).await?;
    if loaded.failed > 0 {
        bail!(
            "the simulator refused {} objects: {:?}",
            loaded.failed,
            loaded.errors
        );
    }
    eprintln!(
        "bench: loaded {} objects in {:.1} s",
        loaded.created, loaded.seconds
    );
    let drift_edits = n / 20;
    bulk_edit(&sim, drift_edits).await?;

    // 2. Commit.
    let desired = workdir.join("desired.json");
    write_list(&desired, desired_objects())?;
    let database = workdir.join("bench.db");
    let started = Instant::now();
    let status = Command::new(std::env::current_exe()?)
        .args(["commit", "--source", "bench", "-m", "bench", "--db"])
        .arg(&database)
        .arg("-f")
        .arg(&desired)
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("driftd commit failed: {status}");
    }
    let commit_s = started.elapsed().as_secs_f64();

    // 3. The transfer floor: every kind listed and parsed, nothing compared.
    let client = super::demo::client_for(&sim).await?;
    let started = Instant::now();
    let listed = list_everything(&client).await?;
    let transfer_floor_s = started.elapsed().as_secs_f64();
    eprintln!("bench: the floor listed {listed} objects in {transfer_floor_s:.2} s");

    // 4. RSS on an empty desired state, then cold start on N.
    let empty = Serve::start(workdir, &workdir.join("empty.db"), &kubeconfig)?;
    empty.wait_ready().await?;
    let rss_empty = empty.status_bytes("VmHWM:");
    drop(empty);
    let started = Instant::now();
    let serve = Serve::start(workdir, &database, &kubeconfig)?;
    serve.wait_ready().await?;
    let cold_start_s = started.elapsed().as_secs_f64();
    let rss_ready = serve.status_bytes("VmRSS:");
    eprintln!("bench: ready after {cold_start_s:.2} s");

    // 5. /drift's first page (the default size) with the mix's 5% drifting (5,000
    //    objects at N = 100,000, as the figure is defined), before the edits make more
    //    drift.
    let mut times = Vec::new();
    let mut drifting = 0;
    for _ in 0..20 {
        // Request to the last byte of the answer: what driftd takes, not this client's parse.
        let started = Instant::now();
        let body = serve.get_bytes("/drift").await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        let body: Value = serde_json::from_slice(&body)?;
        // Every drifting entry: this page's and those after it.
        drifting = body["objects"].as_array().map_or(0, Vec::len)
            + body["remainingItemCount"].as_u64().unwrap_or(0) as usize;
    }
    times.sort_by(f64::total_cmp);
    let drift_query_ms = times[times.len() / 2];

    // 6. Watch events streamed into drift state.
    let before = serve.metric_sum("driftd_watch_events_total").await?;
    let started = Instant::now();
    // Serve's CPU time is read while the simulator prepares and stores the modifications,
    // to know what it was when the first one was stored.
    let (outcome, cpu) = serve.tracing_cpu(bulk_edit(&sim, args.changes)).await?;
    let outcome = outcome?;
    let first_stored = started + Duration::from_secs_f64(outcome.edit.prepare_seconds);
    let target = before + outcome.edit.made as f64;
    let deadline = Instant::now() + READY_TIMEOUT;
    // The phase ends when serve's CPU goes quiet and its event count is then complete. A
    // `/metrics` render walks every drift entry under the index's read lock, so polling it
    // through the phase took CPU from the two cores driftd and the simulator share and held
    // the engine's writes back (every 200 ms: 10% of a core under `perf`, and the lock);
    // serve's CPU time costs it nothing to read.
    let finished = loop {
        let quiet_from = serve.quiet(deadline).await?;
        if serve.metric_sum("driftd_watch_events_total").await? >= target {
            break quiet_from;
        }
        if Instant::now() > deadline {
            bail!("driftd did not take in {} watch events", outcome.edit.made);
        }
        // A pause before the end: look again once serve has had time to get busy.
        tokio::time::sleep(QUIET).await;
    };
    // From the first modification stored: the simulator prepares them (the write path)
    // before it stores any, and driftd sees nothing meanwhile.
    let streaming = finished.duration_since(started).as_secs_f64() - outcome.edit.prepare_seconds;
    let events_per_s = outcome.edit.made as f64 / streaming;
    let serve_cpu_s = cpu.seconds_since(first_stored, serve.cpu_ticks()?);

    // 7. Latency at a steady write rate.
    let latency = latency(&client, &serve).await?;

    // The peak over the whole run (cold start, events, latency, /drift), as the issue
    // defines the figure; the RSS right after ready is printed beside it.
    let rss_full = serve.status_bytes("VmHWM:");
    // What one Prometheus scrape costs with the edits' drift in the index.
    let started = Instant::now();
    let metrics_bytes = serve.get_bytes("/metrics").await?.len();
    let scrape_ms = started.elapsed().as_secs_f64() * 1000.0;
    let kube_events_dropped = serve.metric_sum("driftd_kube_events_dropped_total").await? as u64;
    drop(serve);

    // 9. The events floor: the same number of modifications, taken in by a client that only
    //    parses them, with driftd stopped.
    let events_floor_per_s = events_floor(&client, &sim, args.changes).await?;
    eprintln!("bench: the events floor took in {events_floor_per_s:.0} events/s");
    Ok((
        Figures {
            objects: n,
            changes: args.changes,
            rss_per_object_bytes: rss_full.saturating_sub(rss_empty) as f64 / n as f64,
            cold_start_s,
            transfer_floor_s,
            cold_start_over_floor: cold_start_s / transfer_floor_s,
            events_per_s,
            latency_p99_ms: latency.p99_ms,
            commit_s,
            drift_query_ms,
            kube_events_dropped,
        },
        Notes {
            sim_delivery_per_s: outcome.delivery.delivery_events_per_second,
            serve_cpu_us_per_event: serve_cpu_s * 1e6 / outcome.edit.made.max(1) as f64,
            serve_cores: serve_cpu_s / streaming,
            events_floor_per_s,
            drifting,
            rss_empty_mib: rss_empty as f64 / 1048576.0,
            rss_full_mib: rss_full as f64 / 1048576.0,
            rss_ready_mib: rss_ready as f64 / 1048576.0,
            latency,
            scrape_ms,
            metrics_bytes,
        },
    ))
}

fn latency_configmap(i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("latency-{i}"), "namespace": LATENCY_NAMESPACE},
        "data": {"color": "blue"},
    })
}

async fn bulk_edit(
    sim: &std::sync::Arc<Simulator>,
    count: usize,
) -> anyhow::Result<driftd_sim::BulkEditOutcome> {
    let sim = sim.clone();
    let spec = BulkEdit {
        count,
        kinds: vec![],
        rate: None,
    };
    tokio::task::spawn_blocking(move || sim.bulk_edit(&spec))
        .await?
        .map_err(|e| anyhow::anyhow!("bulk edit: {e:?}"))
}

fn configmaps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    }
}

/// Writes `objects` to `path` as one `v1` List, an object at a time.
fn write_list(path: &Path, objects: impl Iterator<Item = Value>) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(br#"{"apiVersion":"v1","kind":"List","items":["#)?;
    for (i, object) in objects.enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, &object)?;
    }
    out.write_all(b"]}")?;
    out.flush()?;
    Ok(())
}

/// The kinds of the mix: group, version, kind, plural.
const MIX_KINDS: [(&str, &str, &str, &str); 9] = [
    ("apps", "v1", "Deployment", "deployments"),
    ("", "v1", "ConfigMap", "configmaps"),
    ("", "v1", "Secret", "secrets"),
    ("", "v1", "Service", "services"),
    ("", "v1", "ServiceAccount", "serviceaccounts"),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles"),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
    ),
    ("batch", "v1", "Job", "jobs"),
    ("batch", "v1", "CronJob", "cronjobs"),
];

fn resource_of(&(group, version, kind, plural): &(&str, &str, &str, &str)) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: match group {
            "" => version.into(),
            g => format!("{g}/{version}"),
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The rate at which a client that only parses can take in `changes` modifications (driftd
/// not running): watches on the edited kinds parse every event as `driftd serve` does, and
/// nothing else. It is the events figure's floor, as `transfer_floor_s` is the cold start's:
/// on a machine shared with the simulator, driftd cannot take events in faster.
async fn events_floor(
    client: &kube::Client,
    sim: &std::sync::Arc<Simulator>,
    changes: usize,
) -> anyhow::Result<f64> {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut watches = Vec::new();
    for resource in MIX_KINDS
        .iter()
        .filter(|k| DEFAULT_EDIT_KINDS.contains(&k.3))
        .map(resource_of)
    {
        let api: Api<LiveObject> = Api::all_with(client.clone(), &resource);
        let rv = api
            .list_metadata(&ListParams::default().limit(1))
            .await?
            .metadata
            .resource_version
            .context("a list without a resourceVersion")?;
        let mut events = api
            .watch(&kube::api::WatchParams::default().timeout(290), &rv)
            .await?
            .boxed();
        let seen = seen.clone();
        watches.push(tokio::spawn(async move {
            while let Some(event) = events.next().await {
                if let Ok(kube::api::WatchEvent::Added(o) | kube::api::WatchEvent::Modified(o)) =
                    event
                {
                    std::hint::black_box(o.into_json(&resource));
                    seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }));
    }
    let started = Instant::now();
    let outcome = bulk_edit(sim, changes).await?;
    let deadline = Instant::now() + READY_TIMEOUT;
    while seen.load(std::sync::atomic::Ordering::Relaxed) < outcome.edit.made {
        if Instant::now() > deadline {
            bail!(
                "the floor's watches did not take in {} events",
                outcome.edit.made
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let streaming = started.elapsed().as_secs_f64() - outcome.edit.prepare_seconds;
    for watch in watches {
        watch.abort();
    }
    Ok(outcome.edit.made as f64 / streaming)
}

/// Lists every kind of the mix in pages of 500, as a watcher's initial list does, and parses
/// every object; returns how many there were.
async fn list_everything(client: &kube::Client) -> anyhow::Result<usize> {
    let mut count = 0;
    for resource in MIX_KINDS.iter().map(resource_of) {
        // Parsed as `driftd serve` parses them, into the JSON tree it compares.
        let api: Api<LiveObject> = Api::all_with(client.clone(), &resource);
        let mut params = ListParams::default().limit(500);
        loop {
            let page = api.list(&params).await?;
            count += page.items.len();
            for item in page.items {
                std::hint::black_box(item.into_json(&resource));
            }
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
    }
    Ok(count)
}

/// A steady [`WRITES_PER_SECOND`] of ConfigMap writes over HTTP; one in 20 goes to a latency
/// ConfigMap, and is timed until `/drift` shows the written value.
async fn latency(client: &kube::Client, serve: &Serve) -> anyhow::Result<Latency> {
    let load: Api<DynamicObject> = Api::all_with(client.clone(), &configmaps());
    let targets: Vec<(String, String)> = load
        .list(&ListParams::default().limit(2000))
        .await?
        .items
        .into_iter()
        .filter_map(|o| Some((o.metadata.namespace?, o.metadata.name?)))
        .filter(|(ns, _)| ns != LATENCY_NAMESPACE)
        .collect();
    if targets.is_empty() {
        bail!("no ConfigMaps to write to");
    }
    let total = WRITES_PER_SECOND * LATENCY_SECONDS;
    let mut ticker = tokio::time::interval(Duration::from_micros(1_000_000 / WRITES_PER_SECOND));
    let mut samples = tokio::task::JoinSet::new();
    let mut writes = tokio::task::JoinSet::new();
    let params = PatchParams::default();
    // At most this many writes in flight (as a client's connection pool would allow); when
    // the simulator cannot keep up the rate falls, and the achieved rate is printed.
    let in_flight = std::sync::Arc::new(tokio::sync::Semaphore::new(64));
    let started = Instant::now();
    for k in 0..total {
        ticker.tick().await;
        let permit = in_flight.clone().acquire_owned().await?;
        let value = format!("w{k}");
        if k % 20 == 0 {
            let name = format!("latency-{}", (k / 20) as usize % LATENCY_OBJECTS);
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), LATENCY_NAMESPACE, &configmaps());
            let http = serve.http.clone();
            let url = format!("{}/drift?namespace={LATENCY_NAMESPACE}", serve.url);
            let params = params.clone();
            samples.spawn(async move {
                let sent = Instant::now();
                api.patch(
                    &name,
                    &params,
                    &Patch::Merge(json!({"data": {"color": value}})),
                )
                .await?;
                drop(permit);
                loop {
                    let body = http.get(&url).send().await?.text().await?;
                    if body.contains(&format!("\"{value}\"")) {
                        let sent_s = sent.duration_since(started).as_secs_f64();
                        return anyhow::Ok((sent.elapsed().as_secs_f64() * 1000.0, sent_s));
                    }
                    if sent.elapsed() > Duration::from_secs(30) {
                        bail!("{name}={value} not in /drift after 30 s");
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            });
        } else {
            let (ns, name) = targets[k as usize % targets.len()].clone();
            let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &configmaps());
            let params = params.clone();
            writes.spawn(async move {
                let written = api
                    .patch(
                        &name,
                        &params,
                        &Patch::Merge(json!({"data": {"color": value}})),
                    )
                    .await
                    .map(|_| ());
                drop(permit);
                written
            });
        }
    }
    while let Some(done) = writes.join_next().await {
        done?.context("a load write failed")?;
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    eprintln!("bench: {total} writes at {rate:.0}/s for the latency figure");
    let mut latencies = Vec::new();
    while let Some(done) = samples.join_next().await {
        latencies.push(done??);
    }
    latencies.sort_by(|a, b| a.0.total_cmp(&b.0));
    let at = |q: usize| latencies[(latencies.len() * q / 100).min(latencies.len() - 1)].0;
    let (max_ms, slowest_sent_s) = *latencies.last().context("no latency samples")?;
    Ok(Latency {
        p50_ms: at(50),
        p99_ms: at(99),
        max_ms,
        slowest_sent_s,
    })
}

fn print_table(f: &Figures, notes: &Notes) {
    let rows: [(&str, String, &str); 11] = [
        ("objects", f.objects.to_string(), ""),
        ("changes", f.changes.to_string(), ""),
        (
            "rss_per_object_bytes",
            format!("{:.0}", f.rss_per_object_bytes),
            "target <= 2048",
        ),
        (
            "cold_start_s",
            format!("{:.2}", f.cold_start_s),
            "target <= 15",
        ),
        ("transfer_floor_s", format!("{:.2}", f.transfer_floor_s), ""),
        (
            "cold_start_over_floor",
            format!("{:.2}", f.cold_start_over_floor),
            "target <= 4",
        ),
        (
            "events_per_s",
            format!("{:.0}", f.events_per_s),
            "target >= 20000",
        ),
        (
            "latency_p99_ms",
            format!("{:.1}", f.latency_p99_ms),
            "target <= 100",
        ),
        ("commit_s", format!("{:.2}", f.commit_s), "target <= 10"),
        (
            "drift_query_ms",
            format!("{:.1}", f.drift_query_ms),
            "target <= 100",
        ),
        (
            "kube_events_dropped",
            f.kube_events_dropped.to_string(),
            "target 0",
        ),
    ];
    for (name, value, note) in rows {
        println!("{name:<24} {value:>12}  {note}");
    }
    println!();
    println!(
        "simulator delivered {:.0} watch events/s during the edits (driftd took in {:.0}/s)",
        notes.sim_delivery_per_s, f.events_per_s
    );
    println!(
        "driftd used {:.1} µs of CPU per watch event over the edits ({:.2} of {} cores on average)",
        notes.serve_cpu_us_per_event,
        notes.serve_cores,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "a client that only parses took in {:.0} of the same modifications a second (driftd stopped)",
        notes.events_floor_per_s
    );
    println!(
        "driftd peak RSS {:.1} MiB with an empty desired state, {:.1} MiB with {} objects ({:.1} MiB right after ready); /drift held {} entries",
        notes.rss_empty_mib, notes.rss_full_mib, f.objects, notes.rss_ready_mib, notes.drifting
    );
    let latency = &notes.latency;
    println!(
        "write to /drift: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (sent {:.1} s into the phase)",
        latency.p50_ms, latency.p99_ms, latency.max_ms, latency.slowest_sent_s
    );
    println!(
        "one /metrics scrape after the edits: {:.1} ms, {} bytes",
        notes.scrape_ms, notes.metrics_bytes
    );
}
