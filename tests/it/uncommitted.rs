//! An interrupted deploy end to end: `driftd run` wraps a script that applies a new image
//! with kubectl and then kills itself; the running daemon reports the Deployment
//! `uncommitted`, naming the intent and the ways out (in `/drift`, `driftd drift`, the
//! metrics and an `UncommittedApply` Event); `driftd intent commit` makes it in sync.

use crate::scaffold::*;
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

/// The Events in `shop` with `reason` about `web`.
fn events_on_web(sim: &Sim, reason: &str) -> Vec<Value> {
    let mut events = sim.events("shop", reason);
    events.retain(|e| e["regarding"]["name"] == "web");
    events
}

#[test]
fn a_deploy_killed_after_applying_is_uncommitted_until_its_intent_is_committed() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, daemon) = serve_examples(dir.path(), "");
    let db = dir.path().join("driftd.db");
    assert_eq!(daemon.drift("")["objects"], serde_json::json!([]));

    // The next revision, and a deploy script that applies it, then dies by SIGKILL before
    // anything is recorded.
    let next = edited_examples(&dir.path().join("next"), |t| {
        t.replace("nginx:1.27", "nginx:1.28")
    });
    let script = dir.path().join("deploy.sh");
    std::fs::write(
        &script,
        format!(
            "set -e\n{KUBECTL} apply -f {}\nkill -9 $$\n",
            next.display()
        ),
    )
    .unwrap();
    let run = Command::new(DRIFTD)
        .args([
            "run",
            "--db",
            db.to_str().unwrap(),
            "--source",
            "shop",
            "-f",
        ])
        .arg(&next)
        .args(["-m", "deploy nginx 1.28", "--", "sh"])
        .arg(&script)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env_remove("POD_NAME")
        .env_remove("POD_NAMESPACE")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(137), "{err}");
    assert!(err.contains("intent 1"), "{err}");

    let web = wait_for("web uncommitted in /drift", T, || {
        find(&daemon.drift(""), "Deployment", "web")
            .filter(|w| w["class"] == "uncommitted" && w["intent"]["state"] == "interrupted")
            .cloned()
    });
    let intent = &web["intent"];
    assert_eq!(intent["id"], 1, "{web:#}");
    assert!(
        intent["holder"].as_str().unwrap().contains("(pid "),
        "{web:#}"
    );
    assert_eq!(intent["keep"], "driftd intent commit 1");
    assert!(
        intent["revert"]
            .as_str()
            .unwrap()
            .contains("`driftd intent release 1`"),
        "{web:#}"
    );
    assert!(intent["created_at"].is_string());
    let change = &web["changes"][0];
    assert_eq!(
        (&change["desired"], &change["live"]),
        (&Value::from("nginx:1.27"), &Value::from("nginx:1.28")),
        "changes against the committed revision: {web:#}"
    );
    assert_eq!(
        web["patch"],
        serde_json::json!([
            // The container at position 0 is still `app`, or the patch fails.
            {"op": "test", "path": "/spec/template/spec/containers/0/name", "value": "app"},
            {"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1.27"}
        ]),
        "the restoring patch"
    );
    let others = daemon.drift("")["objects"].as_array().unwrap().len();
    assert_eq!(others, 1, "the unchanged objects are in sync");

    // People see the intent in `driftd drift` too.
    let table = Command::new(DRIFTD)
        .args(["drift", "--server", &daemon.url])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("uncommitted"), "{table}");
    assert!(
        table.contains("intent 1 (interrupted, held by ")
            && table.contains("keep it:  driftd intent commit 1"),
        "{table}"
    );

    let series = r#"driftd_object_drift{class="uncommitted",kind="Deployment",name="web",namespace="shop",source="shop"}"#;
    assert_eq!(daemon.sample(series), Some(1.0));
    let objects = r#"driftd_objects{class="uncommitted",source="shop"}"#;
    assert_eq!(daemon.sample(objects), Some(1.0));
    let intents = r#"driftd_intents{source="shop",state="interrupted"}"#;
    assert_eq!(daemon.sample(intents), Some(1.0));
    let event = wait_for("UncommittedApply Event on web", T, || {
        events_on_web(&sim, "UncommittedApply").pop()
    });
    assert_eq!(event["type"], "Warning");
    let note = event["note"].as_str().unwrap();
    assert!(
        note.contains("intent 1 is interrupted") && note.contains("driftd intent commit 1"),
        "{note}"
    );
    assert!(events_on_web(&sim, "DriftDetected").is_empty());

    // Kept: committing the intent makes it the committed desired state.
    let out = driftd(&["intent", "commit", "1", "--db", db.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started = Instant::now();
    wait_for("web in sync", T, || {
        find(&daemon.drift("?class=in_sync"), "Deployment", "web").map(|_| ())
    });
    eprintln!("intent commit -> in_sync in {:?}", started.elapsed());
    assert_eq!(daemon.drift("")["objects"], serde_json::json!([]));
    wait_for("DriftResolved Event on web", T, || {
        events_on_web(&sim, "DriftResolved").pop()
    });
    assert_eq!(
        daemon.sample(r#"driftd_intents{source="shop",state="committed"}"#),
        Some(1.0)
    );
}
