//! Drift as a service level, end to end: on the simulator with the real `driftd serve` and
//! the real kubectl, the episode counters, the resolution histogram and the oldest-open
//! gauge follow a drift as it opens and closes (scraped from /metrics, and through a real
//! Prometheus); `/history` and `driftd history --drift` then tell the closed episode with
//! who changed the object and how the drift ended.

use crate::e2e_prometheus::Prometheus;
use crate::scaffold::*;
use serde_json::Value;
use std::time::{Duration, SystemTime};

const OPENED: &str = r#"driftd_drift_episodes_opened_total{class="modified",source="shop"}"#;
const CLOSED: &str = r#"driftd_drift_episodes_closed_total{class="modified",source="shop"}"#;
const RESOLVED: &str = r#"driftd_drift_resolution_seconds_count{source="shop"}"#;
const RESOLVED_SUM: &str = r#"driftd_drift_resolution_seconds_sum{source="shop"}"#;
const OLDEST: &str = r#"driftd_drift_oldest_open_timestamp_seconds{source="shop"}"#;

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The `time` of `manager`'s managedFields entry of the live Deployment web, as Unix seconds.
fn written_at(sim: &Sim, manager: &str) -> f64 {
    let web = sim.kubectl_json(&[
        "-n",
        "shop",
        "get",
        "deployment/web",
        "--show-managed-fields",
        "-o",
        "json",
    ]);
    let time = web["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == manager)
        .unwrap_or_else(|| panic!("no managedFields entry of {manager}: {web:#}"))["time"]
        .as_str()
        .unwrap()
        .to_string();
    time.parse::<jiff::Timestamp>().unwrap().as_second() as f64
}

/// Waits until the wall clock is in a later second than `at`: managedFields times have a
/// second's precision, and the revert must be the newer write.
fn next_second_after(at: f64) {
    wait_for("the next second", Duration::from_secs(3), || {
        (unix_now().floor() > at).then_some(())
    });
}

/// `kubectl apply` (client-side) of the committed web Deployment: a person putting it back.
fn revert_web(sim: &Sim) {
    let manifest = examples().join("20-web.yaml");
    sim.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);
}

#[test]
fn a_drift_is_counted_timed_and_told_with_who_and_how_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, daemon) = serve_examples(dir.path(), "");
    let metrics = || daemon.get("/metrics").1;
    // Nothing drifted yet: the series exist at 0, no oldest drift.
    let text = metrics();
    assert_eq!(sample(&text, OPENED), Some(0.0), "{text}");
    assert_eq!(sample(&text, RESOLVED), Some(0.0));
    assert_eq!(sample(&text, OLDEST), None);

    // Someone changes the image by hand.
    let before = unix_now();
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    let edited = written_at(&sim, "kubectl-set");
    let text = wait_for("the episode opened", Duration::from_secs(30), || {
        let text = metrics();
        (sample(&text, OPENED) == Some(1.0)).then_some(text)
    });
    let oldest = sample(&text, OLDEST).expect("an open drift has an oldest time");
    assert!(
        (before.floor()..=unix_now()).contains(&oldest),
        "the drift began between the edit and now: {oldest} not in [{before}, now]"
    );
    assert_eq!(sample(&text, RESOLVED), Some(0.0), "not resolved yet");

    // Put back by kubectl apply.
    next_second_after(edited);
    revert_web(&sim);
    let text = wait_for("the episode closed", Duration::from_secs(30), || {
        let text = metrics();
        (sample(&text, RESOLVED) == Some(1.0)).then_some(text)
    });
    let lasted = unix_now() - before;
    assert_eq!(sample(&text, CLOSED), Some(1.0));
    assert_eq!(sample(&text, OLDEST), None, "nothing drifts any more");
    let seconds = sample(&text, RESOLVED_SUM).unwrap();
    assert!(
        seconds > 0.0 && seconds <= lasted,
        "the episode lasted {seconds}s, within the {lasted}s the test took"
    );
    // promtool accepts the exposition with the new families.
    promtool_check_metrics(&text);

    // A real Prometheus sees the same, and the dashboard's quantile of it is a number.
    let prometheus = Prometheus::start(dir.path(), &daemon, None);
    let count = wait_for(
        "Prometheus scraped the histogram",
        Duration::from_secs(60),
        || {
            let result = prometheus.evaluate(RESOLVED, true).ok()?;
            Some(result.first()?["value"][1].as_str()?.to_string())
        },
    );
    assert_eq!(count, "1");
    let p50 = prometheus
        .evaluate(
            r#"histogram_quantile(0.5, sum by (le) (driftd_drift_resolution_seconds_bucket{source="shop"}))"#,
            true,
        )
        .unwrap();
    let p50: f64 = p50[0]["value"][1].as_str().unwrap().parse().unwrap();
    // One episode of under 10 s: Prometheus interpolates within the first bucket (0, 10].
    assert!(
        seconds < 10.0 && (0.0..=10.0).contains(&p50),
        "{seconds} {p50}"
    );

    // The history tells it: the object, who changed it, how it ended and by whom.
    let (status, body) = daemon.get("/history?source=shop&kind=Deployment");
    assert_eq!(status, 200, "{body}");
    let history: Value = serde_json::from_str(&body).unwrap();
    let episodes = history["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 1, "{history:#}");
    let web = &episodes[0];
    assert_eq!(web["object"]["name"], "web", "{web:#}");
    assert_eq!(web["object"]["namespace"], "shop");
    assert_eq!(web["class"], "modified");
    assert!(web["closed_at"].is_string(), "{web:#}");
    assert_eq!(web["who"][0]["manager"], "kubectl-set", "{web:#}");
    assert_eq!(web["ended"], "reverted", "{web:#}");
    assert_eq!(web["ended_by"], "kubectl-client-side-apply", "{web:#}");
    assert_eq!(history["truncated"], false);
    let (status, body) = daemon.get("/history?since=yesterday");
    assert_eq!(status, 400);
    assert!(body.contains("RFC 3339"), "{body}");

    // ...and so does the CLI, from the database.
    let db = dir.path().join("driftd.db");
    let out = driftd(&[
        "history",
        "--drift",
        "--db",
        db.to_str().unwrap(),
        "--source",
        "shop",
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = table
        .lines()
        .find(|l| l.contains("Deployment/shop/web"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.contains("modified")
            && row.contains("kubectl-set")
            && row.ends_with("reverted by kubectl-client-side-apply"),
        "{table}"
    );
    let out = driftd(&[
        "history",
        "--drift",
        "--db",
        db.to_str().unwrap(),
        "--kind",
        "Deployment",
        "--format",
        "json",
    ]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json[0], *web);
}

#[test]
fn an_episode_open_across_a_restart_is_timed_from_when_it_began() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, mut daemon) = serve_examples(dir.path(), "");
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    wait_for("the episode opened", Duration::from_secs(30), || {
        (daemon.sample(OPENED) == Some(1.0)).then_some(())
    });
    // When the drift began, as the first process says; stopped once it is 3 s old, so that
    // counting from the restart would come out seconds short.
    let began = daemon.sample(OLDEST).unwrap();
    wait_for("the drift 3 s old", Duration::from_secs(10), || {
        (unix_now() - began >= 3.0).then_some(())
    });
    daemon.proc.terminate();

    // A new process: its counters start again, the drift keeps its start.
    let config = dir.path().join("driftd.toml");
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    assert_eq!(
        daemon.sample(OLDEST),
        Some(began),
        "the drift keeps its start"
    );
    assert_eq!(daemon.sample(OPENED), Some(0.0), "not opened again");
    let reverted = unix_now();
    revert_web(&sim);
    let seconds = wait_for("the episode closed", Duration::from_secs(30), || {
        daemon
            .sample(RESOLVED)
            .filter(|n| *n == 1.0)
            .and_then(|_| daemon.sample(RESOLVED_SUM))
    });
    let closed = unix_now();
    // Millisecond slack: the gauge is in milliseconds.
    assert!(
        seconds >= reverted - began - 0.001 && seconds <= closed - began + 0.001,
        "observed whole: {seconds}s, from the drift's start {began} to between the revert \
         {reverted} and {closed}"
    );
    assert_eq!(daemon.sample(CLOSED), Some(1.0));
}
