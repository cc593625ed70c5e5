//! `driftd bench`: one command, one process tree, every scale figure. A small run proves
//! the wiring (the simulator, `driftd commit` and `driftd serve` as children, the load, the
//! probes) and the `--json` contract; the figures themselves live in benches/RESULTS.md,
//! measured in release mode, never asserted as times here.

use crate::scaffold::*;
use serde_json::Value;

#[test]
fn bench_prints_every_figure_as_one_json_object() {
    let dir = tempfile::tempdir().unwrap();
    let out = driftd(&[
        "bench",
        "--objects",
        "200",
        "--changes",
        "400",
        "--json",
        "--workdir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "driftd bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let figures: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let mut keys: Vec<&str> = figures
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "changes",
            "cold_start_over_floor",
            "cold_start_s",
            "commit_s",
            "drift_query_ms",
            "events_per_s",
            "kube_events_dropped",
            "latency_p99_ms",
            "objects",
            "rss_per_object_bytes",
            "transfer_floor_s",
        ]
    );
    assert_eq!(figures["objects"], 200);
    assert_eq!(figures["changes"], 400);
    for key in keys {
        let value = figures[key].as_f64().unwrap_or(-1.0);
        assert!(
            value.is_finite() && value >= 0.0,
            "{key} = {}",
            figures[key]
        );
    }
    for key in [
        "cold_start_s",
        "transfer_floor_s",
        "commit_s",
        "events_per_s",
    ] {
        assert!(figures[key].as_f64().unwrap() > 0.0, "{key} measured");
    }
    assert_eq!(figures["kube_events_dropped"], 0, "no Event lost");
    // The events floor: printed beside the figures, not one of the `--json` keys.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let floor: f64 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("bench: the events floor took in "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no events floor in: {stderr}"));
    assert!(floor > 0.0, "the events floor is measured");
    // The daemon's own logs stay in the work directory for a reader of a failed run.
    assert!(dir.path().join("serve-bench.log").exists());
}
