//! Helm releases as sources, end to end: release Secrets written exactly as Helm 3
//! writes them are created in the simulator, and `driftd serve` makes the release a source
//! with no `driftd commit`: in sync, then hand-edited (`modified`), then upgraded (a new
//! revision without a restart), then stuck in `pending-upgrade` (a stale lock at `/locks`
//! with the `helm rollback` that clears it, the metric, the Event), then uninstalled (no
//! longer a source). `driftd plan` and `driftd reconcile` take a release by its source name.
//! A version in flight cannot be committed or released around Helm: driftd names Helm's
//! command instead.
//!
//! Decoding (gzip bomb, corrupt payloads) is unit-tested in `crates/core/src/helm/tests.rs`,
//! the store's mapping in `crates/store/src/helm_tests.rs`, the importer in
//! `crates/cluster/src/helm_importer/tests.rs`.

use crate::scaffold::*;
use base64::Engine as _;
use flate2::{write::GzEncoder, Compression};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);
const SOURCE: &str = "helm:shop/web";

/// The manifest Helm records for the chart `helm create web` generates (see its README).
fn manifest(image: &str) -> String {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/helm-release/web-0.1.0.yaml");
    std::fs::read_to_string(path)
        .unwrap()
        .replace("nginx:1.16.0", image)
}

/// What `helm install` applies of it: the objects, not the test hook.
pub(crate) fn applied_objects(image: &str) -> String {
    let text = manifest(image);
    text[..text.find("# Source: web/templates/tests/").unwrap()].to_string()
}

/// Release version `version` of `web` in `shop` as Helm 3's Secrets driver writes it
/// (`pkg/storage/driver/secrets.go` `newSecretsObject`: name, labels, type; the payload is
/// `util.go` `encodeRelease`: the `pkg/release` JSON, gzip at best compression, base64;
/// `data` base64-encodes that text once more on the wire, as for any Secret).
pub(crate) fn release_secret(
    version: i64,
    status: &str,
    last_deployed: &str,
    image: &str,
) -> Value {
    let release = json!({
        "name": "web",
        "info": {"first_deployed": "2026-11-30T09:00:00Z", "last_deployed": last_deployed,
                 "deleted": "", "description": "Install complete", "status": status,
                 "notes": "1. Get the application URL by running these commands:"},
        "chart": {"metadata": {"name": "web", "version": "0.1.0", "appVersion": "1.16.0",
                               "apiVersion": "v2", "type": "application"},
                  "lock": null, "templates": [], "values": {"replicaCount": 1},
                  "schema": null, "files": []},
        "config": {"auth": {"password": "values-are-secret"}},
        "manifest": manifest(image),
        "hooks": [{"name": "web-test-connection", "kind": "Pod",
                   "path": "web/templates/tests/test-connection.yaml", "events": ["test"]}],
        "version": version,
        "namespace": "shop",
    });
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(&serde_json::to_vec(&release).unwrap())
        .unwrap();
    let b64 = &base64::engine::general_purpose::STANDARD;
    let encoded = b64.encode(gz.finish().unwrap());
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": format!("sh.helm.release.v1.web.v{version}"),
            "namespace": "shop",
            "labels": {"name": "web", "owner": "helm", "status": status,
                       "version": version.to_string()},
        },
        "type": "helm.sh/release.v1",
        "data": {"release": b64.encode(encoded)},
    })
}

/// Writes a release Secret (create or replace, as Helm's `Create`/`Update` do).
pub(crate) fn record(sim: &Sim, secret: &Value) {
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(&secret.to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub(crate) fn apply(sim: &Sim, yaml: &str) {
    let out = sim.kubectl_output(&["apply", "-n", "shop", "-f", "-"], Some(yaml));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn sources(db: &Path) -> String {
    let out = driftd(&["sources", "--db", db.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_helm_release_is_a_source_without_commit_and_a_stuck_upgrade_a_stale_lock() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("driftd.db");
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "shop"]);
    let ago = |minutes: i64| {
        (jiff::Timestamp::now() - jiff::SignedDuration::from_mins(minutes)).to_string()
    };
    // `helm install web ./web -n shop`: the objects, and version 1 deployed.
    apply(&sim, &applied_objects("nginx:1.16.0"));
    record(
        &sim,
        &release_secret(1, "deployed", &ago(120), "nginx:1.16.0"),
    );
    let daemon = Daemon::start(&write_config(dir.path(), ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();

    let started = Instant::now();
    let web = web_when(&daemon, "web in sync", |w| w["class"] == "in_sync");
    eprintln!(
        "release Secret to source in sync after ready: {:?}",
        started.elapsed()
    );
    assert_eq!(web["source"], SOURCE, "{web}");
    for kind in ["Service", "ServiceAccount"] {
        let listed = wait_for(kind, T, || {
            find(&daemon.drift("?class=in_sync"), kind, "web").cloned()
        });
        assert_eq!(listed["namespace"], "shop", "{listed}");
    }
    let listed = sources(&db);
    assert!(listed.contains(SOURCE), "{listed}");
    assert!(
        listed.contains("helm: version 1, chart web 0.1.0 deployed"),
        "{listed}"
    );

    // A hand edit is drift from what Helm deployed.
    sim.merge_patch(
        "shop",
        &["deployment", "web"],
        &json!({"spec": {"replicas": 3}}),
    );
    web_when(&daemon, "web modified", |w| w["class"] == "modified");
    // What a Helm user types to see it.
    let out = driftd(&["drift", "--server", &daemon.url, "--source", SOURCE]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = table
        .lines()
        .find(|l| l.contains("Deployment"))
        .unwrap_or("");
    assert!(row.contains(SOURCE) && row.contains("modified"), "{table}");

    // `helm upgrade`: version 2 pending, then deployed (1 superseded), then applied.
    let upgrade_began = ago(0);
    record(
        &sim,
        &release_secret(2, "pending-upgrade", &upgrade_began, "nginx:1.17.0"),
    );
    record(
        &sim,
        &release_secret(1, "superseded", &ago(120), "nginx:1.16.0"),
    );
    record(
        &sim,
        &release_secret(2, "deployed", &upgrade_began, "nginx:1.17.0"),
    );
    let started = Instant::now();
    wait_for("revision of version 2", T, || {
        sources(&db)
            .contains("helm: version 2, chart web 0.1.0 deployed")
            .then_some(())
    });
    eprintln!(
        "version 2 deployed to its revision: {:?}",
        started.elapsed()
    );
    apply(&sim, &applied_objects("nginx:1.17.0"));
    web_when(&daemon, "web in sync at version 2", |w| {
        w["class"] == "in_sync"
    });

    // `helm upgrade` killed mid-way an hour ago: version 3 stays pending-upgrade.
    record(
        &sim,
        &release_secret(3, "pending-upgrade", &ago(60), "nginx:1.18.0"),
    );
    let started = Instant::now();
    let lock = wait_for("a stale Helm lock", T, || {
        let (_, body) = daemon.get("/locks");
        let body: Value = serde_json::from_str(&body).unwrap();
        body["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["kind"] == "helm")
            .cloned()
    });
    eprintln!("stuck version to /locks: {:?}", started.elapsed());
    assert_eq!(lock["source"], SOURCE, "{lock}");
    assert_eq!(lock["release"], "helm rollback web 2 -n shop", "{lock}");
    assert_eq!(lock["state"], "pending-upgrade", "{lock}");
    let reason = lock["reason"].as_str().unwrap();
    assert!(reason.contains("another operation"), "{reason}");
    assert_eq!(
        daemon.sample(&format!(
            "driftd_stale_locks{{kind=\"helm\",source=\"{SOURCE}\"}}"
        )),
        Some(1.0)
    );
    let event = wait_for("StaleLock Event", T, || {
        sim.events("default", "StaleLock").into_iter().next()
    });
    let note = event["note"].as_str().unwrap();
    assert!(note.contains("helm rollback web 2 -n shop"), "{note}");

    // `helm uninstall`: every release Secret deleted; the source is no longer tracked.
    sim.kubectl(&["delete", "secrets", "-n", "shop", "-l", "owner=helm"]);
    wait_for("source untracked", T, || {
        (!sources(&db).contains(SOURCE)).then_some(())
    });
    wait_for("web no longer desired", T, || {
        let drift = daemon.drift("?class=in_sync");
        find(&drift, "Deployment", "web").is_none().then_some(())
    });
    let (_, body) = daemon.get("/locks");
    assert!(!body.contains("\"helm\""), "{body}");
    let log = daemon.proc.stderr();
    assert!(
        !log.contains("values-are-secret"),
        "the values never reach the log"
    );
}

/// `driftd plan` and `driftd reconcile` take a release by its source name, as a Helm user
/// types it: Helm's order (ServiceAccount, Service, Deployment), a hand edit shown and put
/// back (a conflict with `kubectl set` unless forced), and the release in sync again.
#[test]
fn a_helm_release_is_planned_and_reconciled_by_its_source_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("driftd.db");
    let db = db.to_str().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "shop"]);
    apply(&sim, &applied_objects("nginx:1.16.0"));
    let deployed = (jiff::Timestamp::now() - jiff::SignedDuration::from_mins(5)).to_string();
    record(
        &sim,
        &release_secret(1, "deployed", &deployed, "nginx:1.16.0"),
    );
    let daemon = Daemon::start(&write_config(dir.path(), ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    web_when(&daemon, "web in sync", |w| w["class"] == "in_sync");
    let helm_driftd = |args: &[&str]| {
        let out = std::process::Command::new(DRIFTD)
            .args(args)
            .env("KUBECONFIG", &sim.kubeconfig)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    let (code, stdout, stderr) = helm_driftd(&["plan", "--db", db, "--source", SOURCE]);
    assert_eq!(code, Some(0), "{stderr}");
    // Numbered lines: `  1  ServiceAccount shop/web`.
    let order: Vec<&str> = stdout
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert_eq!(
        order,
        ["ServiceAccount", "Service", "Deployment.apps"],
        "{stdout}"
    );

    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "web=nginx:1.17",
    ]);
    web_when(&daemon, "web modified", |w| w["class"] == "modified");
    let reconcile = |extra: &[&str]| {
        let mut args = vec!["reconcile", "--db", db, "--source", SOURCE];
        args.extend(extra);
        helm_driftd(&args)
    };
    let (code, stdout, stderr) = reconcile(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("nginx:1.16.0") && stdout.contains("nginx:1.17"),
        "{stdout}"
    );
    let (code, _, stderr) = reconcile(&["--apply"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("is owned by \"kubectl-set\""), "{stderr}");
    let (code, stdout, stderr) = reconcile(&["--apply", "--force-conflicts"]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("applied Deployment.apps shop/web"),
        "{stdout}"
    );
    web_when(&daemon, "web in sync again", |w| w["class"] == "in_sync");
}

/// An upgrade killed mid-way: Helm's release Secret says `pending-upgrade` and Helm refuses
/// the next upgrade. driftd offers and accepts only Helm's way out: `driftd intent commit`
/// and `release` are refused naming `helm rollback`, `/drift` says to keep it with Helm and
/// undo it with the rollback, and once Helm rolled back, the lock is gone.
#[test]
fn a_helm_lock_cannot_be_released_or_committed_around_helm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("driftd.db");
    let db = db.to_str().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "shop"]);
    let ago = |minutes: i64| {
        (jiff::Timestamp::now() - jiff::SignedDuration::from_mins(minutes)).to_string()
    };
    apply(&sim, &applied_objects("nginx:1.16.0"));
    record(
        &sim,
        &release_secret(1, "deployed", &ago(120), "nginx:1.16.0"),
    );
    // `helm upgrade` applied version 2's objects, then was killed an hour ago.
    record(
        &sim,
        &release_secret(2, "pending-upgrade", &ago(60), "nginx:1.17.0"),
    );
    apply(&sim, &applied_objects("nginx:1.17.0"));
    let daemon = Daemon::start(&write_config(dir.path(), ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let lock = wait_for("a stale Helm lock", T, || {
        let (_, body) = daemon.get("/locks");
        let body: Value = serde_json::from_str(&body).unwrap();
        body["locks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["kind"] == "helm")
            .cloned()
    });
    assert_eq!(lock["release"], "helm rollback web 1 -n shop", "{lock}");
    let id = lock["id"].as_str().unwrap().to_string();

    for verb in ["release", "commit"] {
        let out = driftd(&["intent", verb, &id, "--db", db]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{verb}: {err}");
        assert!(
            err.contains("Helm release shop/web")
                && err.contains(&format!("driftd does not {verb} it"))
                && err.contains("`helm rollback web 1 -n shop`"),
            "{err}"
        );
    }
    let (_, body) = daemon.get("/locks");
    assert!(body.contains(&id), "still held, as Helm holds it: {body}");
    let out = driftd(&["locks", "--server", &daemon.url]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains(&format!("helm {id}:  helm rollback web 1 -n shop")),
        "{table}"
    );

    // What the upgrade applied: uncommitted, with Helm's ways out only.
    let web = web_when(&daemon, "web uncommitted", |w| w["class"] == "uncommitted");
    let keep = web["intent"]["keep"].as_str().unwrap();
    assert!(
        keep.starts_with("let the `helm upgrade` finish")
            && keep.contains("`helm rollback web 1 -n shop`")
            && !keep.contains("driftd intent"),
        "{keep}"
    );
    assert_eq!(web["intent"]["revert"], "`helm rollback web 1 -n shop`");
    let out = driftd(&["drift", "--server", &daemon.url, "--source", SOURCE]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("driftd intent"), "{text}");

    // `helm rollback web 1 -n shop`: version 2 superseded, version 3 deploys 1's manifest.
    record(
        &sim,
        &release_secret(2, "superseded", &ago(60), "nginx:1.17.0"),
    );
    record(
        &sim,
        &release_secret(3, "deployed", &ago(0), "nginx:1.16.0"),
    );
    apply(&sim, &applied_objects("nginx:1.16.0"));
    wait_for("the Helm lock gone", T, || {
        let (_, body) = daemon.get("/locks");
        (!body.contains("\"helm\"")).then_some(())
    });
    web_when(&daemon, "web in sync", |w| w["class"] == "in_sync");
}
