//! End to end, driftd against a cluster that misbehaves the way real ones do: watch streams
//! closed by the server, watch history compacted (410 Gone on resume), API errors, and
//! desired kinds that come and go. In every case drift made by hand is still reported, and
//! objects nobody touched never show up in `/drift` or in Events.
//!
//! The engine's logic for these cases (what a re-list means, a deletion hidden by compaction,
//! a change put back within the settle time) is unit-tested in
//! `crates/engine/src/engine/tests.rs`; these tests prove the wiring to real watchers.
//!
//! Faults are injected through the simulator's `/_sim/...` admin endpoints (see `src/sim`).

use crate::scaffold::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

/// The example app's objects, as (kind, name).
const APP: [(&str, &str); 5] = [
    ("Namespace", "shop"),
    ("ConfigMap", "web-config"),
    ("Secret", "web-db"),
    ("Deployment", "web"),
    ("Service", "web"),
];

/// One test's world. Field order is drop order: the daemon stops before the simulator.
struct World {
    daemon: Daemon,
    sim: Sim,
    db: PathBuf,
    dir: tempfile::TempDir,
    /// Watch streams the daemon holds open when all is well.
    watches: usize,
}

/// Commits and applies the example app, starts `driftd serve` and waits until it is ready,
/// every example object is in sync and every watcher has its watch open.
fn start(extra_config: &str) -> World {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let db = dir.path().join("driftd.db");
    commit(&db, "shop", &examples());
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    // stale_config watches four more kinds and makes web `stale_config` once web-config
    // changes under its pods; these tests count kinds, watches and drifting objects exactly,
    // so it is off here (tests/it/stale_config.rs is about it).
    let config = write_config(
        dir.path(),
        &format!("{extra_config}[stale_config]\nenabled = false\n"),
    );
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    wait_for("all five example objects in sync", T, || {
        let in_sync = daemon.drift("?class=in_sync");
        (in_sync["objects"].as_array().unwrap().len() == APP.len()).then_some(())
    });
    let watches = steady_open_watches(&sim);
    assert!(
        watches >= APP.len(),
        "a watch per desired kind at least: {watches}"
    );
    World {
        daemon,
        sim,
        db,
        dir,
        watches,
    }
}

/// The number of open watch streams once it holds still for half a second: the daemon may
/// watch more kinds than it is told to (HorizontalPodAutoscalers for workloads, for one), so
/// the tests count relative to this.
fn steady_open_watches(sim: &Sim) -> usize {
    let mut last = (usize::MAX, Instant::now());
    wait_for("the number of open watches to settle", T, || {
        let now = open_watches(sim) as usize;
        if now != last.0 {
            last = (now, Instant::now());
        }
        (now > 0 && last.1.elapsed() >= Duration::from_millis(500)).then_some(now)
    })
}

/// Calls a simulator admin endpoint (`/_sim/PATH`).
fn sim_admin(sim: &Sim, method: &str, path: &str, body: Value) -> Value {
    sim.admin(method, path, body)
}

fn open_watches(sim: &Sim) -> u64 {
    sim_admin(sim, "GET", "stats", Value::Null)["openWatches"]
        .as_u64()
        .unwrap()
}

fn wait_open_watches(sim: &Sim, n: usize) {
    wait_for(&format!("{n} open watch streams"), T, || {
        (open_watches(sim) == n as u64).then_some(())
    });
}

/// driftd's Events (reason `Drift...`) in every namespace, as (reason, kind, name).
fn drift_events(sim: &Sim) -> Vec<(String, String, String)> {
    let list = sim.kubectl_json(&["get", "events.v1.events.k8s.io", "-A"]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reason"].as_str().unwrap_or("").starts_with("Drift"))
        .map(|e| {
            let text = |v: &Value| v.as_str().unwrap_or("").to_string();
            (
                text(&e["reason"]),
                text(&e["regarding"]["kind"]),
                text(&e["regarding"]["name"]),
            )
        })
        .collect()
}

fn count_events(sim: &Sim, reason: &str, kind: &str, name: &str) -> usize {
    drift_events(sim)
        .iter()
        .filter(|(r, k, n)| r == reason && k == kind && n == name)
        .count()
}

/// Asserts that every driftd Event regards one of `changed` (kind, name).
fn assert_events_only_for(sim: &Sim, changed: &[(&str, &str)]) {
    for (reason, kind, name) in drift_events(sim) {
        assert!(
            changed.contains(&(kind.as_str(), name.as_str())),
            "{reason} Event for {kind} {name}, which nobody changed"
        );
    }
}

/// Value of a sample `name{labels...} value` in a Prometheus text exposition; 0 if absent
/// (a counter that never moved has no series yet).
fn metric(metrics: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metrics
        .lines()
        .find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix('{')?;
            let (label_part, value) = rest.rsplit_once(' ')?;
            labels
                .iter()
                .all(|(k, v)| label_part.contains(&format!("{k}=\"{v}\"")))
                .then(|| value.parse().ok())?
        })
        .unwrap_or(0.0)
}

fn daemon_metric(daemon: &Daemon, name: &str, labels: &[(&str, &str)]) -> f64 {
    let (status, body) = daemon.get("/metrics");
    assert_eq!(status, 200, "{body}");
    metric(&body, name, labels)
}

/// Polls `/drift` in the background for the whole fault window and remembers every
/// (kind, name, class) it ever showed, so brief flaps cannot slip between two checks.
struct DriftRecorder {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<BTreeSet<(String, String, String)>>>,
    polls: Arc<Mutex<u64>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DriftRecorder {
    fn start(daemon: &Daemon) -> DriftRecorder {
        let url = format!("{}/drift", daemon.url);
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let polls = Arc::new(Mutex::new(0));
        let thread = {
            let (stop, seen, polls) = (stop.clone(), seen.clone(), polls.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let (status, body) = http_get(&url);
                    if status == 200 {
                        let drift: Value = serde_json::from_str(&body).unwrap();
                        let mut seen = seen.lock().unwrap();
                        for o in drift["objects"].as_array().unwrap() {
                            let text = |k: &str| o[k].as_str().unwrap_or("").to_string();
                            seen.insert((text("kind"), text("name"), text("class")));
                        }
                        *polls.lock().unwrap() += 1;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        DriftRecorder {
            stop,
            seen,
            polls,
            thread: Some(thread),
        }
    }

    /// Stops polling; returns everything `/drift` showed.
    fn finish(mut self) -> BTreeSet<(String, String, String)> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        assert!(
            *self.polls.lock().unwrap() > 0,
            "/drift was never read during the fault window"
        );
        self.seen.lock().unwrap().clone()
    }

    fn assert_only(self, changed: &[(&str, &str)]) -> BTreeSet<(String, String, String)> {
        let seen = self.finish();
        for (kind, name, class) in &seen {
            assert!(
                changed.contains(&(kind.as_str(), name.as_str())),
                "/drift showed {kind} {name} as {class}, but nobody changed it (all seen: {seen:?})"
            );
        }
        seen
    }
}

impl Drop for DriftRecorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn set_image(sim: &Sim, image: &str) {
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        &format!("app={image}"),
    ]);
}

fn set_log_level(sim: &Sim, level: &str) {
    let body = json!({"data": {"LOG_LEVEL": level}});
    sim.merge_patch("shop", &["configmap", "web-config"], &body);
}

/// Waits until `/drift` reports `kind`/`name` with a change at `path`; returns the object.
fn wait_drift_at(daemon: &Daemon, kind: &str, name: &str, path: &str) -> Value {
    wait_for(&format!("{kind} {name} drifting at {path}"), T, || {
        let drift = daemon.drift("");
        let object = find(&drift, kind, name)?;
        object["changes"]
            .as_array()?
            .iter()
            .any(|c| c["path"] == path)
            .then(|| object.clone())
    })
}

#[test]
fn watches_closed_by_the_server_resume_without_noise() {
    let w = start("");
    let recorder = DriftRecorder::start(&w.daemon);

    sim_admin(&w.sim, "POST", "close-watches", json!({}));
    // A change made while the watchers reconnect...
    set_image(&w.sim, "nginx:1.28");
    // ...and one made once every watcher is streaming again.
    wait_open_watches(&w.sim, w.watches);
    set_log_level(&w.sim, "debug");

    let web = wait_drift_at(
        &w.daemon,
        "Deployment",
        "web",
        "/spec/template/spec/containers/0/image",
    );
    assert_eq!(web["class"], "modified");
    let cm = wait_drift_at(&w.daemon, "ConfigMap", "web-config", "/data/LOG_LEVEL");
    assert_eq!(cm["class"], "modified");

    // Once more, with the drift already known: a reconnect must not re-announce it.
    wait_for("DriftDetected for both changed objects", T, || {
        (count_events(&w.sim, "DriftDetected", "Deployment", "web") == 1
            && count_events(&w.sim, "DriftDetected", "ConfigMap", "web-config") == 1)
            .then_some(())
    });
    sim_admin(&w.sim, "POST", "close-watches", json!({}));
    wait_open_watches(&w.sim, w.watches);
    // A later hand edit, seen only through the new streams, proves they deliver; its Event
    // (published after the settle time) proves enough time passed for any spurious one.
    // (Other paths than before, so the drift changes and is announced again.)
    w.sim
        .kubectl(&["-n", "shop", "scale", "deployment/web", "--replicas=3"]);
    wait_drift_at(&w.daemon, "Deployment", "web", "/spec/replicas");
    wait_for("DriftDetected for the replica change", T, || {
        (count_events(&w.sim, "DriftDetected", "Deployment", "web") == 2).then_some(())
    });

    let changed = [("Deployment", "web"), ("ConfigMap", "web-config")];
    recorder.assert_only(&changed);
    assert_events_only_for(&w.sim, &changed);
    assert_eq!(
        count_events(&w.sim, "DriftResolved", "Deployment", "web"),
        0,
        "the drift never ended"
    );
    assert_eq!(
        count_events(&w.sim, "DriftDetected", "ConfigMap", "web-config"),
        1,
        "one Event per transition, not one per reconnect"
    );
    let drift = w.daemon.drift("");
    assert_eq!(drift["objects"].as_array().unwrap().len(), 2, "{drift:#}");
}

/// Keeps every watcher from re-watching, ends the streams, runs `change` and compacts the
/// history: when the watches are allowed back, resuming from their last resourceVersion gets
/// 410 Gone, and only a re-list can reveal the change.
fn outage_with_compaction(w: &World, change: impl FnOnce()) {
    sim_admin(
        &w.sim,
        "POST",
        "faults",
        json!({"resource": "*", "verb": "watch", "count": 100000, "code": 500}),
    );
    sim_admin(&w.sim, "POST", "close-watches", json!({}));
    wait_open_watches(&w.sim, 0);
    change();
    let compacted = sim_admin(&w.sim, "POST", "compact", json!({}));
    assert!(compacted["ok"].as_bool().unwrap(), "{compacted}");
    // The watchers did try (and fail) before the faults are lifted.
    wait_for("a failed re-watch of ConfigMaps", T, || {
        (daemon_metric(
            &w.daemon,
            "driftd_watch_errors_total",
            &[("kind", "ConfigMap")],
        ) >= 1.0)
            .then_some(())
    });
    sim_admin(&w.sim, "DELETE", "faults", Value::Null);
}

#[test]
fn compacted_history_relists_without_flapping() {
    let w = start("");
    let recorder = DriftRecorder::start(&w.daemon);

    outage_with_compaction(&w, || set_log_level(&w.sim, "debug"));
    let cm = wait_drift_at(&w.daemon, "ConfigMap", "web-config", "/data/LOG_LEVEL");
    assert_eq!(cm["class"], "modified");
    assert_eq!(cm["changes"][0]["live"], "debug", "{cm:#}");
    wait_open_watches(&w.sim, w.watches);
    // The change's Event marks the settle time as passed for everything re-listed with it.
    wait_for("DriftDetected for the ConfigMap", T, || {
        (count_events(&w.sim, "DriftDetected", "ConfigMap", "web-config") == 1).then_some(())
    });

    let changed = [("ConfigMap", "web-config")];
    let seen = recorder.assert_only(&changed);
    assert!(
        !seen.iter().any(|(_, _, class)| class == "missing"),
        "a re-list must not make objects look missing: {seen:?}"
    );
    assert_events_only_for(&w.sim, &changed);
    let in_sync = w.daemon.drift("?class=in_sync");
    assert_eq!(
        in_sync["objects"].as_array().unwrap().len(),
        APP.len() - 1,
        "{in_sync:#}"
    );
}

/// A re-list every second, each made by the running watchers while their watches go on:
/// a change and a deletion made meanwhile are seen, a listed copy older than what a watch
/// delivered never brings the deleted object back, and nothing untouched shows in `/drift`.
#[test]
fn periodic_relists_in_place_keep_changes_coming_without_flapping() {
    let w = start("relist_seconds = 1\n");
    let relists = || {
        w.daemon
            .proc
            .stderr()
            .matches("listing again while the watch goes on")
            .count()
    };
    let recorder = DriftRecorder::start(&w.daemon);
    let before = relists();
    set_log_level(&w.sim, "debug");
    let cm = wait_drift_at(&w.daemon, "ConfigMap", "web-config", "/data/LOG_LEVEL");
    assert_eq!(cm["changes"][0]["live"], "debug", "{cm:#}");
    w.sim.kubectl(&["-n", "shop", "delete", "service", "web"]);
    wait_for("the deleted Service missing", T, || {
        let drift = w.daemon.drift("");
        (find(&drift, "Service", "web")?["class"] == "missing").then_some(())
    });
    // Re-lists go on (every watched kind once a second, the app's kinds among them): the
    // Service stays missing through them.
    let kinds = app_kinds().len();
    wait_for("three re-lists' worth of every kind", T, || {
        (relists() >= before + 3 * kinds).then_some(())
    });
    let drift = w.daemon.drift("");
    assert_eq!(
        find(&drift, "Service", "web").map(|s| s["class"].clone()),
        Some(json!("missing")),
        "{drift:#}"
    );
    // No watcher was replaced: the watches are the ones opened at the start.
    assert!(!w.daemon.proc.stderr().contains("so that it lists again"));
    wait_open_watches(&w.sim, w.watches);
    recorder.assert_only(&[("ConfigMap", "web-config"), ("Service", "web")]);
}

#[test]
fn api_errors_are_counted_and_recovered_from() {
    let w = start("");
    let errors = || {
        daemon_metric(
            &w.daemon,
            "driftd_watch_errors_total",
            &[("kind", "Deployment")],
        )
    };
    let before = errors();
    let recorder = DriftRecorder::start(&w.daemon);

    // Re-watches fail until the faults are lifted; meanwhile the history moves on and is
    // compacted, so the first re-watch after gets 410 Gone and the watcher lists again. Two
    // lists fail as well (the watcher asks the server's resourceVersion, a list, before each
    // re-watch). Every failed attempt is counted, not only the last of a retry series.
    sim_admin(
        &w.sim,
        "POST",
        "faults",
        json!({"resource": "deployments", "verb": "watch", "count": 1_000_000, "code": 500}),
    );
    sim_admin(&w.sim, "POST", "close-watches", json!({}));
    wait_for("two failed re-watches", T, || {
        (errors() >= before + 2.0).then_some(())
    });
    let out = w.sim.kubectl_output(
        &["apply", "-f", "-"],
        Some(r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unrelated", "namespace": "shop"}}"#),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sim_admin(&w.sim, "POST", "compact", json!({}));
    let failed = errors();
    sim_admin(
        &w.sim,
        "POST",
        "faults",
        json!({"resource": "deployments", "verb": "list", "count": 2, "code": 500}),
    );
    // Each retry lists then watches, so four more failures include both failed lists (at
    // most one re-watch already under way comes first).
    wait_for("two failed lists counted", T, || {
        (errors() >= failed + 4.0).then_some(())
    });
    let failed = errors();
    sim_admin(&w.sim, "DELETE", "faults", Value::Null);
    wait_for("the 410 Gone of the re-watch counted", T, || {
        (errors() >= failed + 1.0).then_some(())
    });
    wait_open_watches(&w.sim, w.watches);
    // The daemon stayed ready through the outage.
    assert_eq!(w.daemon.get("/readyz").0, 200);

    set_image(&w.sim, "nginx:1.28");
    let web = wait_drift_at(
        &w.daemon,
        "Deployment",
        "web",
        "/spec/template/spec/containers/0/image",
    );
    assert_eq!(web["class"], "modified");
    wait_for("DriftDetected for the Deployment", T, || {
        (count_events(&w.sim, "DriftDetected", "Deployment", "web") == 1).then_some(())
    });

    let changed = [("Deployment", "web")];
    let seen = recorder.assert_only(&changed);
    assert!(
        !seen.contains(&("Deployment".into(), "web".into(), "missing".into())),
        "a failed list must not make the Deployment look missing: {seen:?}"
    );
    assert_events_only_for(&w.sim, &changed);
}

#[test]
fn kinds_leaving_and_entering_the_desired_state_start_and_stop_watchers() {
    let mut w = start("");
    let services = || {
        w.daemon.drift("?kind=Service&class=in_sync")["objects"]
            .as_array()
            .unwrap()
            .len()
            + w.daemon.drift("?kind=Service")["objects"]
                .as_array()
                .unwrap()
                .len()
    };
    // The Service drifts, so it is in the default /drift view.
    w.sim.kubectl(&[
        "-n",
        "shop",
        "patch",
        "service",
        "web",
        "-p",
        r#"{"spec":{"selector":{"app.kubernetes.io/name":"web2"}}}"#,
    ]);
    wait_for("Service web drifting", T, || {
        find(&w.daemon.drift(""), "Service", "web").map(|_| ())
    });

    // A revision without the Service: its watcher stops and it leaves /drift.
    let without = edited_examples(&w.dir.path().join("without-service"), |text| {
        match text.split_once("\n---\n") {
            Some((first, rest)) if rest.contains("kind: Service") => first.to_string(),
            _ => text.to_string(),
        }
    });
    commit(&w.db, "shop", &without);
    wait_for("the Service to leave /drift", T, || {
        (services() == 0).then_some(())
    });
    wait_open_watches(&w.sim, w.watches - 1);
    assert_eq!(
        w.daemon.drift("?class=in_sync")["objects"]
            .as_array()
            .unwrap()
            .len(),
        APP.len() - 1
    );
    // /metrics reflects the new revision once it counts four desired objects, not five (a
    // failed or stale scrape would hide the series as well).
    let metrics = wait_for("/metrics counting the four desired objects", T, || {
        let (status, body) = w.daemon.get("/metrics");
        let desired: f64 = body
            .lines()
            .filter(|l| l.starts_with("driftd_objects{") && l.contains("source=\"shop\""))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum();
        (status == 200 && desired == (APP.len() - 1) as f64).then_some(body)
    });
    assert!(
        !metrics
            .lines()
            .any(|l| l.starts_with("driftd_object_drift{") && l.contains("kind=\"Service\"")),
        "no per-object series for an object no longer desired"
    );

    // Back in the desired state: a new watcher lists it, and the live edit is drift again.
    commit(&w.db, "shop", &examples());
    wait_open_watches(&w.sim, w.watches);
    let service = wait_drift_at(
        &w.daemon,
        "Service",
        "web",
        "/spec/selector/app.kubernetes.io~1name",
    );
    assert_eq!(service["class"], "modified");
    assert_eq!(w.daemon.get("/readyz").0, 200);
    assert!(
        w.daemon.proc.child.try_wait().unwrap().is_none(),
        "no restart: the same daemon process"
    );
    assert!(w.daemon.proc.terminate().success());
}

/// `driftd_watch_healthy{kind=KIND}` (absent: not exported, -1).
fn healthy(daemon: &Daemon, kind: &str) -> f64 {
    let (status, body) = daemon.get("/metrics");
    assert_eq!(status, 200, "{body}");
    sample(&body, &format!("driftd_watch_healthy{{kind=\"{kind}\"}}")).unwrap_or(-1.0)
}

/// The kinds of the example app (what the daemon watches at least).
fn app_kinds() -> BTreeSet<&'static str> {
    APP.iter().map(|(kind, _)| *kind).collect()
}

/// An API server answering 503 to everything: every kind goes unhealthy at once and each
/// failed attempt is counted (the kube client's own retries would hide them); `/drift`,
/// `driftd drift` and the page say the data is stale, `/readyz` stays 200. Once it answers
/// again, every kind is healthy within seconds (bounded backoff), and a change made then is
/// found.
#[test]
fn an_api_outage_shows_as_stale_and_recovery_takes_seconds() {
    let w = start("");
    let errors = || {
        daemon_metric(
            &w.daemon,
            "driftd_watch_errors_total",
            &[("kind", "ConfigMap")],
        )
    };
    for kind in app_kinds() {
        assert_eq!(healthy(&w.daemon, kind), 1.0, "{kind} healthy before");
    }
    let before = errors();

    // The API server goes away: its streams end, every request answers 503.
    sim_admin(
        &w.sim,
        "POST",
        "faults",
        json!({"resource": "*", "count": 1_000_000, "code": 503}),
    );
    sim_admin(&w.sim, "POST", "close-watches", json!({}));
    let outage = Instant::now();
    wait_for("every kind of the app unhealthy", T, || {
        app_kinds()
            .iter()
            .all(|kind| healthy(&w.daemon, kind) == 0.0)
            .then_some(())
    });
    // Retries keep failing and each one is counted. Seven failures take the backoff to its
    // cap (0.2 s doubling to 5 s), so the recovery below is measured from a long outage's
    // longest wait.
    wait_for(
        "seven failed ConfigMap attempts counted",
        Duration::from_secs(60),
        || (errors() >= before + 7.0).then_some(()),
    );
    let drift = w.daemon.drift("?class=in_sync");
    let stale: BTreeSet<&str> = drift["stale"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert!(stale.is_superset(&app_kinds()), "{drift:#}");
    for s in drift["stale"].as_array().unwrap() {
        let since: jiff::Timestamp = s["since"].as_str().unwrap().parse().unwrap();
        assert!(since <= jiff::Timestamp::now(), "{s}");
    }
    let objects = drift["objects"].as_array().unwrap();
    assert_eq!(
        objects.len(),
        APP.len(),
        "the last verdicts stay: {drift:#}"
    );
    assert!(objects.iter().all(|o| o["stale"] == true), "{drift:#}");
    assert_eq!(
        w.daemon.get("/readyz").0,
        200,
        "an API outage does not make driftd unready"
    );
    let out = driftd(&["drift", "--server", &w.daemon.url, "--class", "in_sync"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    // The header before the table says the data is stale (a replica that could not renew its
    // Lease during the outage also says it publishes no Events, in a line of its own).
    let header: Vec<&str> = table
        .lines()
        .take_while(|l| !l.starts_with("SOURCE"))
        .collect();
    assert!(
        header
            .iter()
            .any(|l| l.starts_with("data stale since ") && l.contains("ConfigMap")),
        "{table}"
    );
    assert!(table.contains("in_sync (stale)"), "{table}");
    let (status, page) = w.daemon.get("/");
    assert_eq!(status, 200);
    assert!(page.contains("data stale since "), "{page}");

    // The API server answers again.
    sim_admin(&w.sim, "DELETE", "faults", Value::Null);
    let back = Instant::now();
    // Every watched kind: the app's, and those watched for it (HorizontalPodAutoscalers).
    wait_for("every watched kind healthy again", T, || {
        let (_, metrics) = w.daemon.get("/metrics");
        let mut series = metrics
            .lines()
            .filter(|l| l.starts_with("driftd_watch_healthy{"))
            .peekable();
        (series.peek().is_some()
            && series.all(|l| l.ends_with(" 1"))
            && app_kinds()
                .iter()
                .all(|kind| healthy(&w.daemon, kind) == 1.0))
        .then_some(())
    });
    let recovery = back.elapsed();
    println!(
        "API outage of {:?}: every watched kind healthy {recovery:?} after the API server answered again",
        back - outage
    );
    assert!(
        recovery < Duration::from_secs(15),
        "recovery took {recovery:?}"
    );
    let drift = w.daemon.drift("?class=in_sync");
    assert!(drift["stale"].as_array().unwrap().is_empty(), "{drift:#}");
    assert!(drift["objects"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o.get("stale").is_none()));
    let out = driftd(&["drift", "--server", &w.daemon.url]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("stale"));

    // The watches work: a change is found.
    set_log_level(&w.sim, "debug");
    wait_drift_at(&w.daemon, "ConfigMap", "web-config", "/data/LOG_LEVEL");
}

/// The API server's state goes back to an earlier snapshot (an etcd restore: lower
/// resourceVersions), then an object is edited. A watch resumed from driftd's last
/// resourceVersion is accepted and silent (the server has not reached it), so only a list
/// can see the edit: driftd notices the server went back and lists again, long before the
/// periodic re-list (an hour here) and without any 410.
#[test]
fn a_restored_api_state_is_listed_again_at_once() {
    let w = start("relist_seconds = 3600\n");
    let snapshot = sim_admin(&w.sim, "POST", "snapshot", json!({}));
    let at: u64 = snapshot["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();

    // driftd's ConfigMap watch moves past the snapshot.
    let events = || {
        daemon_metric(
            &w.daemon,
            "driftd_watch_events_total",
            &[("kind", "ConfigMap")],
        )
    };
    let seen = events();
    for i in 0..10 {
        w.sim.kubectl(&[
            "-n",
            "shop",
            "create",
            "configmap",
            &format!("filler-{i}"),
            "--from-literal=a=b",
        ]);
    }
    wait_for("driftd to see the ten new ConfigMaps", T, || {
        (events() >= seen + 10.0).then_some(())
    });
    let rv_of = |name: &str| -> u64 {
        w.sim
            .kubectl_json(&["-n", "shop", "get", "configmap", name])["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let position = rv_of("filler-9");
    let errors = daemon_metric(
        &w.daemon,
        "driftd_watch_errors_total",
        &[("kind", "ConfigMap")],
    );

    let restored = sim_admin(&w.sim, "POST", "restore", json!({}));
    assert_eq!(restored["resourceVersion"], at.to_string(), "{restored}");
    let edited = Instant::now();
    set_log_level(&w.sim, "debug");
    let cm = wait_drift_at(&w.daemon, "ConfigMap", "web-config", "/data/LOG_LEVEL");
    println!(
        "edit after the API state went back found in {:?}",
        edited.elapsed()
    );
    assert_eq!(cm["changes"][0]["live"], "debug", "{cm:#}");
    assert_eq!(
        daemon_metric(
            &w.daemon,
            "driftd_watch_errors_total",
            &[("kind", "ConfigMap")],
        ),
        errors,
        "no failed attempt, no 410: the server's resourceVersion gave it away"
    );
    // What made the test meaningful: the edit's version is below what driftd had seen, so
    // a watch resumed from there would never have sent it.
    let rv = rv_of("web-config");
    assert!(rv < position, "edit at {rv}, driftd had seen {position}");
}
