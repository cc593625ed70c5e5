//! End to end: a Secret changed by hand is reported as drift, yet neither its old nor its new
//! value (plain or base64) appears in any channel driftd writes to: its logs at debug level,
//! `/drift`, `/metrics`, `driftd drift` (table and JSON), the Kubernetes Events it publishes,
//! or the other CLI commands run on the same database and cluster.

use crate::scaffold::*;
use base64::Engine as _;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// The example app's `stringData.DATABASE_PASSWORD` (examples/app/10-config.yaml).
const OLD: &str = "demo-only-not-a-real-password";
/// What a person sets by hand.
const NEW: &str = "rotated-by-hand-7Qz4vK2p";

/// Every form a leaked value could take: plain, base64 with and without padding, URL-safe.
fn forbidden() -> Vec<(String, String)> {
    let mut forms = Vec::new();
    for (label, plain) in [("old", OLD), ("new", NEW)] {
        forms.push((format!("{label} plaintext"), plain.to_string()));
        for (name, engine) in [
            ("base64", &base64::engine::general_purpose::STANDARD),
            (
                "base64 unpadded",
                &base64::engine::general_purpose::STANDARD_NO_PAD,
            ),
            (
                "base64url",
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
            ),
        ] {
            forms.push((format!("{label} {name}"), engine.encode(plain)));
        }
    }
    forms
}

/// Asserts that `text`, read from `channel`, holds no form of either Secret value.
fn assert_no_secret(channel: &str, text: &str) {
    for (form, value) in forbidden() {
        assert!(
            !text.contains(&value),
            "{channel} leaks the Secret value ({form}); excerpt: {:?}",
            excerpt(text, &value)
        );
    }
}

/// A few characters around the leak, with every form of both values masked, so the failure
/// message does not leak them in turn.
fn excerpt(text: &str, value: &str) -> String {
    let at = text.find(value).unwrap_or(0);
    let start = text[..at]
        .char_indices()
        .rev()
        .nth(80)
        .map_or(0, |(i, _)| i);
    let end = (at + value.len() + 80).min(text.len());
    let end = (end..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    let mut excerpt = text[start..end].to_string();
    for (form, value) in forbidden() {
        excerpt = excerpt.replace(&value, &format!("<{form}>"));
    }
    excerpt
}

fn output_text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run_driftd(args: &[&str], kubeconfig: &Path) -> std::process::Output {
    Command::new(DRIFTD)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "debug")
        .output()
        .expect("driftd runs")
}

/// `driftd serve` at debug level with stdout and stderr written to files, so every line it
/// ever logged can be searched afterwards.
fn start_logged_daemon(config: &Path, kubeconfig: &Path, dir: &Path) -> (Daemon, PathBuf, PathBuf) {
    let stdout = dir.join("daemon.stdout");
    let stderr = dir.join("daemon.stderr");
    let child = Command::new(DRIFTD)
        .args(["serve", "--config"])
        .arg(config)
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "debug")
        // Its leader Lease in a namespace the simulator has (as `Daemon::start` does).
        .env("DRIFTD_NAMESPACE", "default")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .expect("driftd serve starts");
    let (_, lines) = std::sync::mpsc::channel();
    let mut proc = Proc {
        child,
        lines,
        name: "driftd serve".into(),
        log: stderr.clone(),
    };
    let url = wait_for("driftd serve listening", T, || {
        if let Some(status) = proc.child.try_wait().unwrap() {
            panic!(
                "driftd serve exited with {status}: {}",
                std::fs::read_to_string(&stderr).unwrap_or_default()
            );
        }
        let text = std::fs::read_to_string(&stdout).ok()?;
        let line = text.lines().find(|l| l.contains("listening on http://"))?;
        Some(line[line.find("http://").unwrap()..].trim().to_string())
    });
    (Daemon { proc, url }, stdout, stderr)
}

#[test]
fn a_changed_secret_is_reported_without_its_values() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let db = dir.path().join("driftd.db");
    let db_arg = db.to_str().unwrap();
    let mut transcript = Vec::new();

    let out = run_driftd(
        &[
            "commit",
            "--db",
            db_arg,
            "--source",
            "shop",
            "-f",
            examples().to_str().unwrap(),
        ],
        &sim.kubeconfig,
    );
    assert!(out.status.success(), "commit: {}", output_text(&out));
    transcript.push(("driftd commit".to_string(), output_text(&out)));
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    // The cluster does hold the old value, so a leak of it would be possible.
    let live = sim.kubectl_json(&["-n", "shop", "get", "secret", "web-db"]);
    assert_eq!(
        live["data"]["DATABASE_PASSWORD"],
        base64::engine::general_purpose::STANDARD.encode(OLD)
    );

    let config = write_config(dir.path(), "");
    let (mut daemon, stdout, stderr) = start_logged_daemon(&config, &sim.kubeconfig, dir.path());
    daemon.wait_ready();
    let in_sync = wait_for("the Secret in sync", T, || {
        let in_sync = daemon.drift("?class=in_sync");
        find(&in_sync, "Secret", "web-db")
            .is_some()
            .then_some(in_sync)
    });
    transcript.push(("/drift?class=in_sync".into(), in_sync.to_string()));

    // A person rotates the password by hand.
    let patch = json!({"data": {"DATABASE_PASSWORD":
        base64::engine::general_purpose::STANDARD.encode(NEW)}});
    sim.kubectl(&[
        "-n",
        "shop",
        "patch",
        "secret",
        "web-db",
        "-p",
        &patch.to_string(),
    ]);

    // The drift is reported, with keyed hashes standing in for the values.
    let secret = wait_for("Secret drift in /drift", T, || {
        find(&daemon.drift(""), "Secret", "web-db").cloned()
    });
    assert_eq!(secret["class"], "modified", "{secret:#}");
    let change = secret["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["path"] == "/data/DATABASE_PASSWORD" || c["path"] == "/stringData/DATABASE_PASSWORD"
        })
        .unwrap_or_else(|| panic!("the password change is reported: {secret:#}"));
    let (desired, live) = (&change["desired"]["hmac"], &change["live"]["hmac"]);
    assert!(
        desired.is_string() && live.is_string(),
        "both sides are keyed hashes (`{{\"hmac\": ...}}`): {change:#}"
    );
    assert_ne!(desired, live, "different values, different hashes");

    // The Event is published (after the settle time), so the Events channel is exercised.
    let events = wait_for("DriftDetected Event on the Secret", T, || {
        let list = sim.kubectl_json(&["get", "events.v1.events.k8s.io", "-A"]);
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| {
                e["reason"] == "DriftDetected"
                    && e["regarding"]["kind"] == "Secret"
                    && e["regarding"]["name"] == "web-db"
            })
            .then_some(list)
    });
    transcript.push(("Events (events.k8s.io/v1)".into(), events.to_string()));
    // The same Events as core/v1 shows them (`kubectl get events`), where the cluster does.
    let core = sim.kubectl_output(&["get", "events", "-A", "-o", "json"], None);
    transcript.push(("Events (core/v1)".into(), output_text(&core)));

    // Every other channel, while the drift is current.
    // (Each must be a real answer that shows the Secret: an error page would hide nothing.)
    for query in ["", "?kind=Secret&class=modified"] {
        let (status, body) = daemon.get(&format!("/drift{query}"));
        assert_eq!(status, 200, "/drift{query}: {body}");
        assert!(body.contains("web-db"), "/drift{query} shows the Secret");
        transcript.push((format!("/drift{query}"), body));
    }
    let (status, metrics) = daemon.get("/metrics");
    assert_eq!(status, 200, "{metrics}");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("driftd_object_drift{") && l.contains("name=\"web-db\"")),
        "the Secret's drift is in /metrics"
    );
    transcript.push(("/metrics".into(), metrics));
    let table = run_driftd(&["drift", "--server", &daemon.url], &sim.kubeconfig);
    assert!(table.status.success(), "{}", output_text(&table));
    assert!(output_text(&table).contains("web-db"));
    transcript.push(("driftd drift (table)".into(), output_text(&table)));
    let as_json = run_driftd(
        &["drift", "--server", &daemon.url, "--format", "json"],
        &sim.kubeconfig,
    );
    assert!(as_json.status.success(), "{}", output_text(&as_json));
    transcript.push(("driftd drift --format json".into(), output_text(&as_json)));
    // `driftd check` compares the same desired files with the same live objects, in one shot.
    let live_file = dir.path().join("live.json");
    let mut live_list =
        sim.kubectl_json(&["-n", "shop", "get", "configmap,secret,deployment,service"]);
    live_list["items"]
        .as_array_mut()
        .unwrap()
        .push(sim.kubectl_json(&["get", "namespace", "shop"]));
    std::fs::write(&live_file, live_list.to_string()).unwrap();
    for format in ["table", "json"] {
        let check = run_driftd(
            &[
                "check",
                "--desired",
                examples().to_str().unwrap(),
                "--live",
                live_file.to_str().unwrap(),
                "--format",
                format,
            ],
            &sim.kubeconfig,
        );
        let text = output_text(&check);
        assert!(
            text.contains("web-db") && text.contains("DATABASE_PASSWORD"),
            "driftd check --format {format} reports the Secret's drift: {}",
            excerpt(&text, "web-db")
        );
        transcript.push((format!("driftd check --format {format}"), text));
    }
    for args in [
        vec![
            "history", "--db", db_arg, "--source", "shop", "--format", "json",
        ],
        vec!["sources", "--db", db_arg, "--format", "json"],
    ] {
        let out = run_driftd(&args, &sim.kubeconfig);
        assert!(
            out.status.success(),
            "driftd {}: {}",
            args[0],
            output_text(&out)
        );
        assert!(
            output_text(&out).contains("shop"),
            "driftd {} names the source",
            args[0]
        );
        transcript.push((format!("driftd {}", args[0]), output_text(&out)));
    }

    // The logs, complete: the daemon is stopped first.
    assert!(daemon.proc.terminate().success(), "clean exit on SIGTERM");
    let logs = format!(
        "{}{}",
        std::fs::read_to_string(&stdout).unwrap(),
        std::fs::read_to_string(&stderr).unwrap()
    );
    assert!(
        logs.contains("DEBUG") && logs.contains("drift detected") && logs.contains("web-db"),
        "debug logs were captured and mention the Secret's drift"
    );
    transcript.push(("daemon stdout+stderr (RUST_LOG=debug)".into(), logs));

    for (channel, text) in &transcript {
        assert_no_secret(channel, text);
    }
}
