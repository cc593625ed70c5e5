//! `remediation = "auto"` end to end: the serving daemon, as leader, creates the chart of
//! `plan.rs` in plan order by itself, then puts back hand edits of other field managers,
//! with a history entry per object, `Remediated` Events and `driftd_remediations_total`,
//! and no Secret value anywhere. The choice of objects (open intents, settle, retries,
//! failing watches) is unit-tested in `crates/cluster/src/remediate/tests.rs`. With two
//! replicas only the leader remediates.

use crate::plan::{
    chart_in_sync, commit_chart, drift_chart, keyed_config, run_json, text, want, CHART, ORDER, T,
};
use crate::scaffold::*;
use serde_json::Value;
use std::collections::BTreeSet;

#[test]
fn a_remediation_auto_source_is_put_back_by_the_leader_with_history_and_events() {
    let dir = tempfile::tempdir().unwrap();
    let config = keyed_config(
        dir.path(),
        "[[sources]]\nname = \"chart\"\nremediation = \"auto\"\n\
         [remediation]\nmax_per_minute = 600\nretry_seconds = 2\ntimeout_seconds = 30\n\
         [stale_config]\nenabled = false\n",
    );
    let db = dir.path().join("driftd.db");
    let sim = Sim::start(dir.path());
    let out = commit_chart(dir.path(), &config, "chart", CHART);
    assert!(out.status.success(), "{:?}", text(&out));
    // Nothing deployed yet (`kubectl apply -f chart.yaml` alone fails: the Widget's kind
    // does not exist before its CRD): the daemon creates every missing object, in order.
    // stale_config is off: pods the hand edit's rollout started on the hand-edited Secret
    // rightly stay `stale_config` when remediation puts the Deployment back before the
    // Secret (remediation restarts no reader), which is not what this test is about.
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let all_in_sync = || chart_in_sync(&daemon);
    wait_for("the chart created by the daemon", T, all_in_sync);

    // Hand edits by other field managers: remediation takes their fields back.
    drift_chart(&sim);
    wait_for("the chart put back by the daemon", T, || {
        let image = sim.kubectl_json(&["-n", "shop", "get", "deployment", "web"])["spec"]
            ["template"]["spec"]["containers"][0]["image"]
            .clone();
        let secret =
            sim.kubectl_json(&["-n", "shop", "get", "secret", "creds"])["data"]["password"].clone();
        let configmap = sim.kubectl_output(&["-n", "shop", "get", "configmap", "settings"], None);
        (image == "nginx:1.27"
            && secret == "Zmlyc3Qtc2VjcmV0LXZhbHVl"
            && configmap.status.success())
        .then_some(())
    });
    wait_for("the chart in sync again", T, all_in_sync);

    // Each remediation is in the source's history, by the replica...
    let db_path = db.to_str().unwrap();
    let history = run_json(
        &["history", "--db", db_path, "--source", "chart"],
        None,
        &config,
    );
    let remediated: Vec<&Value> = history
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "remediation" && e["outcome"] == "applied")
        .collect();
    // Created first, all eight in plan order (oldest first), then the three drifted ones
    // put back (an object the engine has not yet seen in sync when `retry_seconds` is up
    // is applied once more, which changes nothing).
    let oldest_first: Vec<(String, String)> = remediated
        .iter()
        .rev()
        .map(|e| {
            (
                e["object"]["kind"].as_str().unwrap().to_string(),
                e["object"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(oldest_first[..ORDER.len()], want()[..], "{history:#}");
    for (kind, name) in [
        ("ConfigMap", "settings"),
        ("Secret", "creds"),
        ("Deployment", "web"),
    ] {
        let times = oldest_first
            .iter()
            .filter(|(k, n)| k == kind && n == name)
            .count();
        assert!(times >= 2, "{kind} {name} put back: {history:#}");
    }
    for e in &remediated {
        assert!(e["actor"].as_str().unwrap().starts_with("driftd/"), "{e:#}");
        assert_eq!(e["revision"], 1, "{e:#}");
    }
    // ... and an Event on each object, with no Secret value in any of it.
    let events = sim.events("shop", "Remediated");
    let about: BTreeSet<String> = events
        .iter()
        .map(|e| {
            format!(
                "{}/{}",
                e["regarding"]["kind"].as_str().unwrap(),
                e["regarding"]["name"].as_str().unwrap()
            )
        })
        .collect();
    for want in ["ConfigMap/settings", "Secret/creds", "Deployment/web"] {
        assert!(about.contains(want), "{want} not in {about:?}");
    }
    let everything = format!("{history}{events:?}{}", daemon.get("/metrics").1);
    for secret in [
        "hand-edited-value",
        "aGFuZC1lZGl0ZWQtdmFsdWU=",
        "Zmlyc3Qtc2VjcmV0LXZhbHVl",
    ] {
        assert!(!everything.contains(secret), "{secret} leaked");
    }
    assert!(
        daemon
            .sample("driftd_remediations_total{outcome=\"applied\",source=\"chart\"}")
            .is_some_and(|n| n >= 3.0),
        "{}",
        daemon.get("/metrics").1
    );
}

/// Two replicas, each with its own database holding the chart: only the leader writes.
/// The follower sees the same missing objects the whole time and records no remediation.
#[test]
fn only_the_leader_remediates() {
    let root = tempfile::tempdir().unwrap();
    let sim = Sim::start(root.path());
    let replica = |name: &str| {
        let dir = root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let config = keyed_config(
            &dir,
            "[[sources]]\nname = \"chart\"\nremediation = \"auto\"\n",
        );
        let out = commit_chart(&dir, &config, "chart", CHART);
        assert!(out.status.success(), "{:?}", text(&out));
        let daemon = Daemon::start(&config, &sim.kubeconfig, &[("POD_NAME", name)]);
        daemon.wait_ready();
        (dir, config, daemon)
    };
    let (a_dir, a_config, a) = replica("a");
    wait_for("a leads", T, || {
        (a.sample("driftd_leader") == Some(1.0)).then_some(())
    });
    let (b_dir, b_config, b) = replica("b");
    assert_eq!(b.sample("driftd_leader"), Some(0.0));
    wait_for("the chart created", T, || {
        chart_in_sync(&a)?;
        chart_in_sync(&b)
    });
    let remediations = |dir: &std::path::Path, config: &std::path::Path| {
        let db = dir.join("driftd.db");
        let db_path = db.to_str().unwrap();
        run_json(
            &["history", "--db", db_path, "--source", "chart"],
            None,
            config,
        )
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "remediation")
        .map(|e| e["actor"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
    };
    let by_a = remediations(&a_dir, &a_config);
    assert!(by_a.len() >= ORDER.len(), "{by_a:?}");
    assert!(by_a.iter().all(|actor| actor == "driftd/a"), "{by_a:?}");
    assert_eq!(remediations(&b_dir, &b_config), Vec::<String>::new());
    assert_eq!(
        b.sample("driftd_remediations_total{outcome=\"applied\",source=\"chart\"}"),
        None
    );
}
