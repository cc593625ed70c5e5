//! Sharding, end to end: two `driftd serve` shards, each
//! with its own database and Lease, against one simulator. Deployers commit through the
//! shared cluster log; shard `a` owns `team-a/*`, shard `b` owns `team-b/*` and the Helm
//! releases of namespace `shop`. Every committed object is evaluated by exactly one shard,
//! a hand edit is reported by the shard that owns it and by no other, and each shard leads
//! on its own Lease, so both publish Events.
//!
//! Pattern matching is unit-tested in `crates/store/src/scope.rs`, the `[shard]` keys in
//! `crates/config/src/tests.rs`.

use crate::helm::{applied_objects, record, release_secret};
use crate::scaffold::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

fn team(ns: &str, keys: &[&str]) -> String {
    let mut yaml = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n");
    for key in keys {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {key}\n  namespace: {ns}\ndata:\n  mode: blue\n"
        ));
    }
    yaml
}

/// `driftd ARGS` against the cluster log in namespace `driftd`, as a deployer runs it.
fn deployer(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(DRIFTD)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("DRIFTD_NAMESPACE", "driftd")
        .env_remove("POD_NAME")
        .output()
        .unwrap()
}

/// `(namespace, kind, name)` of every object a shard reports, whatever its class.
fn evaluated(daemon: &Daemon) -> BTreeSet<(String, String, String)> {
    let mut all = BTreeSet::new();
    for query in ["?class=in_sync", ""] {
        for o in daemon.drift(query)["objects"].as_array().unwrap() {
            let text = |f: &str| o[f].as_str().unwrap_or_default().to_string();
            all.insert((text("namespace"), text("kind"), text("name")));
        }
    }
    all
}

fn objects_of(ns: &str, names: &[&str]) -> BTreeSet<(String, String, String)> {
    names
        .iter()
        .map(|n| (ns.to_string(), "ConfigMap".to_string(), n.to_string()))
        .chain([(String::new(), "Namespace".to_string(), ns.to_string())])
        .collect()
}

#[test]
fn two_shards_split_the_sources_and_each_object_is_evaluated_once() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "driftd"]);
    sim.kubectl(&["create", "namespace", "shop"]);
    let (a_names, b_names) = (["one", "two"], ["three", "four", "five"]);
    for (ns, source, names) in [
        ("team-a", "team-a/app", &a_names[..]),
        ("team-b", "team-b/app", &b_names[..]),
    ] {
        let file = dir.path().join(format!("{ns}.yaml"));
        std::fs::write(&file, team(ns, names)).unwrap();
        sim.kubectl(&["apply", "-f", file.to_str().unwrap()]);
        let out = deployer(
            &sim.kubeconfig,
            &[
                "commit",
                "--cluster",
                "--source",
                source,
                "-f",
                file.to_str().unwrap(),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A Helm release in `shop`: shard b's by pattern, found without any commit.
    sim.kubectl_output(
        &["apply", "-n", "shop", "-f", "-"],
        Some(&applied_objects("nginx:1.16.0")),
    );
    record(
        &sim,
        &release_secret(1, "deployed", "2026-11-30T09:00:00Z", "nginx:1.16.0"),
    );

    let shard = |name: &str, patterns: &str| {
        let root = dir.path().join(name);
        std::fs::create_dir_all(&root).unwrap();
        let config = write_config(
            &root,
            &format!("[shard]\nname = \"{name}\"\nsources = {patterns}\n"),
        );
        let pod = format!("driftd-{name}-0");
        let env = [("POD_NAME", pod.as_str()), ("DRIFTD_NAMESPACE", "driftd")];
        let daemon = Daemon::start(&config, &sim.kubeconfig, &env);
        daemon.wait_ready();
        (daemon, root.join("driftd.db"))
    };
    let (a, a_db) = shard("a", r#"["team-a/*"]"#);
    let (b, b_db) = shard("b", r#"["team-b/*", "helm:shop/*"]"#);

    let want_a = objects_of("team-a", &a_names);
    let mut want_b = objects_of("team-b", &b_names);
    want_b.insert(("shop".into(), "Deployment".into(), "web".into()));
    let on_a = wait_for("shard a has team-a's objects", T, || {
        let got = evaluated(&a);
        want_a.is_subset(&got).then_some(got)
    });
    let on_b = wait_for("shard b has team-b's and the release's objects", T, || {
        let got = evaluated(&b);
        want_b.is_subset(&got).then_some(got)
    });
    // Exactly one shard evaluates each object; together they cover every committed one.
    assert_eq!(on_a, want_a, "shard a evaluates only its sources");
    assert!(on_a.is_disjoint(&on_b), "{on_a:?} and {on_b:?} overlap");
    assert!(
        on_b.iter()
            .all(|(ns, _, _)| ns == "team-b" || ns == "shop" || ns.is_empty()),
        "{on_b:?}"
    );
    // Each database holds only its shard's sources, though the log has both teams'.
    let sources = |db: &Path| {
        let out = driftd(&["sources", "--db", db.to_str().unwrap()]);
        String::from_utf8(out.stdout).unwrap()
    };
    let (listed_a, listed_b) = (sources(&a_db), sources(&b_db));
    assert!(
        listed_a.contains("team-a/app")
            && !listed_a.contains("team-b")
            && !listed_a.contains("helm:"),
        "{listed_a}"
    );
    assert!(
        listed_b.contains("team-b/app")
            && listed_b.contains("helm:shop/web")
            && !listed_b.contains("team-a"),
        "{listed_b}"
    );

    // A hand edit in team-a: shard a reports it, shard b never lists the object.
    sim.kubectl(&[
        "patch",
        "configmap",
        "one",
        "-n",
        "team-a",
        "--type",
        "merge",
        "-p",
        r#"{"data":{"mode":"green"}}"#,
    ]);
    let one = wait_for("shard a reports the edit", T, || {
        find(&a.drift(""), "ConfigMap", "one")
            .filter(|o| o["class"] == "modified")
            .cloned()
    });
    assert_eq!(one["source"], "team-a/app", "{one}");
    assert!(find(&b.drift(""), "ConfigMap", "one").is_none());
    assert!(find(&b.drift("?class=in_sync"), "ConfigMap", "one").is_none());
    let series = r#"driftd_objects{class="modified",source="team-a/app"}"#;
    wait_for("shard a's metric", T, || {
        (a.sample(series) == Some(1.0)).then_some(())
    });
    assert_eq!(
        b.sample(series),
        None,
        "shard b exports no series of team-a/app"
    );
    assert_eq!(a.sample(r#"driftd_shard_info{shard="a"}"#), Some(1.0));
    assert_eq!(b.sample(r#"driftd_shard_info{shard="b"}"#), Some(1.0));

    // Each shard leads on its own Lease (so each publishes its own Events).
    for (name, daemon) in [("a", &a), ("b", &b)] {
        let holder = wait_for("the shard's Lease is held", T, || {
            let lease: Value =
                sim.kubectl_json(&["get", "lease", &format!("driftd-{name}"), "-n", "driftd"]);
            lease["spec"]["holderIdentity"]
                .as_str()
                .filter(|h| !h.is_empty())
                .map(str::to_string)
        });
        assert_eq!(holder, format!("driftd-{name}-0"));
        wait_for("the shard leads", T, || {
            (daemon.sample("driftd_leader") == Some(1.0)).then_some(())
        });
    }
    let events = wait_for("a DriftDetected Event for team-a's edit", T, || {
        let events = sim.events("team-a", "DriftDetected");
        (!events.is_empty()).then_some(events)
    });
    assert!(
        events.iter().all(|e| e["regarding"]["name"] == "one"),
        "{events:?}"
    );
}
