//! The daemon's side of "what counts as drift": ignore rules from the config (and their
//! expiry), HorizontalPodAutoscalers owning `spec.replicas`, fields removed from the desired
//! state but still live, who changed a field, and opt-in coverage of unmanaged objects.

use crate::scaffold::*;
use serde_json::Value;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

struct Setup {
    _dir: tempfile::TempDir,
    dir: std::path::PathBuf,
    sim: Sim,
    daemon: Daemon,
}

/// Commits and applies the example app, then starts the daemon with `extra` config.
fn setup(extra: &str) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let sim = Sim::start(&dir);
    commit(&dir.join("driftd.db"), "shop", &examples());
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    let daemon = Daemon::start(&write_config(&dir, extra), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    Setup {
        _dir: tmp,
        dir,
        sim,
        daemon,
    }
}

fn metric(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

#[test]
fn ignore_rule_hides_a_difference_and_says_so() {
    let s = setup(
        r#"
[[ignore]]
kind = "Deployment"
pointers = ["/spec/template/spec/containers/name=app/image"]
reason = "image rolled by the release bot"
"#,
    );
    s.sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    // The change reaches the daemon (it counts it as ignored) but is not drift.
    let web = wait_for("web reports an ignored difference", T, || {
        let all = s.daemon.drift("?class=in_sync");
        find(&all, "Deployment", "web")
            .filter(|w| w["ignored"].is_array())
            .cloned()
    });
    assert_eq!(web["class"], "in_sync");
    assert_eq!(web["ignored"][0]["count"], 1);
    assert!(
        web["ignored"][0]["rule"]
            .as_str()
            .unwrap()
            .contains("ignore[0]"),
        "{web}"
    );
    assert!(find(&s.daemon.drift(""), "Deployment", "web").is_none());

    // A difference the rule does not cover is still drift.
    s.sim
        .kubectl(&["-n", "shop", "scale", "deployment/web", "--replicas=3"]);
    let web = wait_for("replicas drift", T, || {
        find(&s.daemon.drift(""), "Deployment", "web").cloned()
    });
    let paths: Vec<&str> = web["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, vec!["/spec/replicas"], "{web:#}");
}

#[test]
fn expired_rule_stops_applying_and_is_counted() {
    let s = setup(
        r#"
[[ignore]]
kind = "Deployment"
pointers = ["/spec/template/spec/containers/*/image"]
reason = "temporary exception"
expires = "2020-01-01T00:00:00Z"
"#,
    );
    s.sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    wait_for("drift despite the expired rule", T, || {
        find(&s.daemon.drift(""), "Deployment", "web").map(|_| ())
    });
    let (_, metrics) = s.daemon.get("/metrics");
    assert_eq!(metric(&metrics, "driftd_ignore_rules_expired "), Some(1.0));
    assert!(
        s.daemon.proc.stderr().contains("ignore rule expired"),
        "expiry is logged"
    );
}

#[test]
fn hpa_owns_replicas_of_its_target() {
    let s = setup("");
    s.sim
        .kubectl(&["-n", "shop", "scale", "deployment/web", "--replicas=4"]);
    let web = wait_for("replicas drift without an HPA", T, || {
        find(&s.daemon.drift(""), "Deployment", "web").cloned()
    });
    assert_eq!(web["changes"][0]["path"], "/spec/replicas");
    assert_eq!(web["changes"][0]["live"], 4);

    let hpa = r#"{
      "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
      "metadata": {"name": "web", "namespace": "shop"},
      "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
               "minReplicas": 2, "maxReplicas": 6}
    }"#;
    let out = s.sim.kubectl_output(&["create", "-f", "-"], Some(hpa));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("an HPA's target replicas are not drift", T, || {
        find(&s.daemon.drift(""), "Deployment", "web")
            .is_none()
            .then_some(())
    });
    s.sim.kubectl(&["-n", "shop", "delete", "hpa", "web"]);
    wait_for("drift again once the HPA is gone", T, || {
        find(&s.daemon.drift(""), "Deployment", "web").map(|_| ())
    });
}

#[test]
fn field_removed_from_desired_but_still_live_is_drift_with_attribution() {
    let s = setup("");
    // Hand edit: attributed to kubectl's field manager.
    s.sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    let web = wait_for("web drift", T, || {
        find(&s.daemon.drift(""), "Deployment", "web").cloned()
    });
    let change = &web["changes"][0];
    assert_eq!(change["manager"], "kubectl-set", "{web:#}");
    assert!(change["changed_at"].is_string(), "{web:#}");
    assert_eq!(
        change["field"],
        "spec.template.spec.containers[name=app].image"
    );
    s.sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.27",
    ]);
    wait_for("back in sync", T, || {
        find(&s.daemon.drift(""), "Deployment", "web")
            .is_none()
            .then_some(())
    });

    // A new revision drops a ConfigMap key that is still live: it should be gone.
    let next = edited_examples(&s.dir.join("next"), |text| {
        text.replace("  FEATURE_CHECKOUT_V2: \"false\"\n", "")
    });
    commit(&s.dir.join("driftd.db"), "shop", &next);
    let cm = wait_for("removed key reported", T, || {
        find(&s.daemon.drift(""), "ConfigMap", "web-config").cloned()
    });
    let change = &cm["changes"][0];
    assert_eq!(change["path"], "/data/FEATURE_CHECKOUT_V2", "{cm:#}");
    assert_eq!(change["op"], "remove", "{cm:#}");
    assert_eq!(change["live"], "false");
}

#[test]
fn unmanaged_objects_are_reported_when_coverage_is_on() {
    let s = setup(
        r#"
[unmanaged]
kinds = ["ConfigMap", "v1/Secret"]
namespaces = ["shop"]
"#,
    );
    let (_, metrics) = s.daemon.get("/metrics");
    assert_eq!(
        metric(&metrics, "driftd_coverage_ratio "),
        Some(1.0),
        "{metrics}"
    );

    // The object outside the covered namespace first: ConfigMaps come through one watch
    // stream in resourceVersion order, so once `stray` shows, `elsewhere` was seen too and
    // its absence below is a decision, not a race.
    for (ns, name) in [("default", "elsewhere"), ("shop", "stray")] {
        let cm = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"{ns}"}},"data":{{"a":"b"}}}}"#
        );
        let out = s.sim.kubectl_output(&["create", "-f", "-"], Some(&cm));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stray: Value = wait_for("stray reported unmanaged", T, || {
        find(&s.daemon.drift(""), "ConfigMap", "stray").cloned()
    });
    assert_eq!(stray["class"], "unmanaged");
    assert!(stray.get("source").is_none(), "{stray}");
    let drift = s.daemon.drift("?class=unmanaged");
    assert_eq!(
        drift["objects"].as_array().unwrap().len(),
        1,
        "only the covered namespace: {drift:#}"
    );
    let (_, metrics) = s.daemon.get("/metrics");
    assert_eq!(
        metric(
            &metrics,
            "driftd_unmanaged_objects{kind=\"ConfigMap\",namespace=\"shop\"}"
        ),
        Some(1.0),
        "{metrics}"
    );
    // web-config and web-db are owned by the source, stray is not: 2 of 3.
    let ratio = metric(&metrics, "driftd_coverage_ratio ").unwrap();
    assert!((ratio - 2.0 / 3.0).abs() < 1e-9, "{ratio}");

    s.sim
        .kubectl(&["-n", "shop", "delete", "configmap", "stray"]);
    wait_for("stray gone", T, || {
        find(&s.daemon.drift(""), "ConfigMap", "stray")
            .is_none()
            .then_some(())
    });
    let (_, metrics) = s.daemon.get("/metrics");
    assert_eq!(metric(&metrics, "driftd_coverage_ratio "), Some(1.0));
}
