//! An interrupted `pulumi up` end to end, on the simulator with real kubectl: the update
//! reached the cluster (applied with server-side apply under pulumi-kubernetes' field
//! manager, as the provider applies) but Pulumi's state still records the operation as
//! pending. driftd calls the live object `uncommitted`, names the stack's update and
//! Pulumi's ways out in `/drift`, `/locks`, `driftd drift` and the `UncommittedApply` Event,
//! and a later state without the pending operation ends the intent. Once from a `pulumi
//! stack export --show-secrets` given to `driftd import pulumi`, once from a file backend's
//! state directory read by `driftd serve` (`pulumi.state_dirs`) with no import at all.
//!
//! The fixtures (tests/fixtures/pulumi/interrupted, see the README there) are written in
//! Pulumi's formats: `pending_operations` as pulumi `pkg/backend/snapshot.go` records them,
//! resources as pulumi-kubernetes stores them.

use crate::scaffold::*;
use flate2::{write::GzEncoder, Compression};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

const T: Duration = Duration::from_secs(30);
const SOURCE: &str = "pulumi:shop/dev";
/// pulumi-kubernetes applies with server-side apply under a field manager of its own.
const FIELD_MANAGER: &str = "pulumi-kubernetes-9c0b3f1e";
/// The secrets' plaintext in the fixtures: never stored, never printed.
const PLAINTEXTS: [&str; 2] = ["tok-plain-7f3a", "s3cr3t-api-token-4b1d"];
const SIG_KEY: &str = "4dabf18193072939515e22adb298388d";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pulumi/interrupted")
        .join(name)
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `inputs` as the provider sends them: every Pulumi secret as its value.
fn as_applied(inputs: &Value) -> Value {
    match inputs {
        Value::Object(map) if map.contains_key(SIG_KEY) => {
            let plaintext = map["plaintext"].as_str().expect("an export with secrets");
            serde_json::from_str(plaintext).unwrap()
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), as_applied(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(as_applied).collect()),
        other => other.clone(),
    }
}

/// What `pulumi up` applied: `objects` with pulumi-kubernetes' server-side apply.
fn apply_as_pulumi(sim: &Sim, objects: &[Value]) {
    for object in objects {
        let out = sim.kubectl_output(
            &[
                "apply",
                "--server-side",
                "--field-manager",
                FIELD_MANAGER,
                "-f",
                "-",
            ],
            Some(&object.to_string()),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The Kubernetes objects of a deployment's resources, as applied (secrets from `export`,
/// which has their plaintext).
fn applied_objects(deployment: &Value) -> Vec<Value> {
    deployment["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"].as_str().unwrap().starts_with("kubernetes:"))
        .map(|r| as_applied(&r["inputs"]))
        .collect()
}

fn run(args: &[&str]) -> (String, String) {
    let out = driftd(args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "driftd {args:?}: {stderr}");
    (stdout, stderr)
}

fn locks(daemon: &Daemon) -> Vec<Value> {
    let (_, body) = daemon.get("/locks");
    let body: Value = serde_json::from_str(&body).unwrap();
    body["locks"].as_array().unwrap().clone()
}

/// The `/drift` entry of `kind`/`name` once `pred` holds.
fn entry_when(daemon: &Daemon, kind: &str, name: &str, pred: impl Fn(&Value) -> bool) -> Value {
    wait_for(&format!("{kind} {name}"), T, || {
        daemon.entry(kind, name).filter(|e| pred(e))
    })
}

/// The Events in `shop` with `reason` about `name`.
fn events_on(sim: &Sim, reason: &str, name: &str) -> Vec<Value> {
    let mut events = sim.events("shop", reason);
    events.retain(|e| e["regarding"]["name"] == name);
    events
}

fn assert_never_written(texts: &[&str], db: &Path) {
    let mut stored = std::fs::read(db).unwrap();
    stored.extend(std::fs::read(db.with_extension("db-wal")).unwrap_or_default());
    for secret in PLAINTEXTS {
        for text in texts {
            assert!(!text.contains(secret), "a secret's plaintext printed");
        }
        let bytes = secret.as_bytes();
        assert!(
            !stored.windows(bytes.len()).any(|w| w == bytes),
            "a secret's plaintext stored"
        );
    }
}

#[test]
fn an_interrupted_update_in_an_export_is_uncommitted_until_a_state_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("driftd.db");
    let db_arg = db.to_str().unwrap();
    let sim = Sim::start(dir.path());
    // `pulumi stack export --show-secrets` of an update killed while updating web from
    // 1.4.2 to 1.5.0, after the provider applied it.
    let mut export = json_file(&fixture("export.json"));
    apply_as_pulumi(&sim, &applied_objects(&export["deployment"]));
    let pending = export["deployment"]["pending_operations"][0].clone();
    assert_eq!(pending["type"], "updating");
    apply_as_pulumi(&sim, &[as_applied(&pending["resource"]["inputs"])]);

    let file = dir.path().join("shop-dev.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let (stdout, stderr) = run(&["import", "pulumi", "--db", db_arg, file.to_str().unwrap()]);
    let web = "urn:pulumi:dev::shop::kubernetes:apps/v1:Deployment::web";
    let keep = "pulumi refresh --yes --stack dev";
    let clear = "pulumi stack export --stack dev | pulumi stack import --stack dev";
    assert_eq!(
        stdout,
        format!(
            "revision 1 of source {SOURCE} (4 objects) from Pulumi stack shop/dev\n\
             intent 1 (interrupted, held by pulumi update of dev at 2026-11-30T10:02:17Z): \
             interrupted while updating {web}\n  keep it:  {keep}\n  \
             drop it (after undoing the change):  {clear}\n"
        )
    );
    assert!(
        stderr.contains(&format!(
            "warning: {web}: field spec.template.spec.containers[0].env[1].value is a Pulumi \
             secret outside a Secret's data"
        )),
        "{stderr}"
    );
    assert_never_written(&[&stdout, &stderr], &db);

    let daemon = Daemon::start(&write_config(dir.path(), ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let started = Instant::now();
    let entry = entry_when(&daemon, "Deployment", "web", |e| {
        e["class"] == "uncommitted"
    });
    eprintln!("export to uncommitted: {:?}", started.elapsed());
    assert_eq!(entry["source"], SOURCE, "{entry:#}");
    let intent = &entry["intent"];
    assert_eq!(intent["id"], 1);
    assert_eq!(intent["state"], "interrupted");
    assert_eq!(
        intent["holder"],
        "pulumi update of dev at 2026-11-30T10:02:17Z"
    );
    assert_eq!(intent["keep"], keep);
    assert_eq!(
        intent["revert"],
        format!(
            "`{clear}`, then `driftd reconcile --source {SOURCE} --object Deployment.apps/shop/web --apply`"
        )
    );
    let change = &entry["changes"][0];
    assert_eq!(
        (&change["desired"], &change["live"]),
        (
            &json!("ghcr.io/example/web:1.4.2"),
            &json!("ghcr.io/example/web:1.5.0")
        ),
        "{entry:#}"
    );
    for kind_name in [
        ("Service", "web"),
        ("Secret", "web-api"),
        ("Namespace", "shop"),
    ] {
        entry_when(&daemon, kind_name.0, kind_name.1, |e| {
            e["class"] == "in_sync"
        });
    }

    // `/locks`: Pulumi asks for the pending operation to be resolved.
    let lock = wait_for("the interrupted update at /locks", T, || {
        locks(&daemon).into_iter().find(|l| l["source"] == SOURCE)
    });
    assert_eq!(
        (&lock["kind"], &lock["state"], &lock["release"]),
        (&json!("pulumi"), &json!("interrupted"), &json!(clear)),
        "{lock:#}"
    );
    let reason = lock["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("interrupted while updating {web}")) && reason.contains(keep),
        "{reason}"
    );

    // What a Pulumi user types.
    let (table, _) = run(&["drift", "--server", &daemon.url]);
    assert!(
        table.contains(
            "intent 1 (interrupted, held by pulumi update of dev at 2026-11-30T10:02:17Z"
        ) && table.contains(&format!("keep it:  {keep}"))
            && table.contains(clear),
        "{table}"
    );
    let event = wait_for("UncommittedApply Event on web", T, || {
        events_on(&sim, "UncommittedApply", "web").pop()
    });
    let note = event["note"].as_str().unwrap();
    assert!(
        note.contains("intent 1 is interrupted, held by pulumi update of dev")
            && note.contains(keep)
            && note.contains(clear),
        "{note}"
    );

    // `pulumi up` run again to the end: web at 1.5.0 in the state, nothing pending.
    let deployment = &mut export["deployment"];
    deployment["resources"][4]["inputs"] = pending["resource"]["inputs"].clone();
    deployment
        .as_object_mut()
        .unwrap()
        .remove("pending_operations");
    deployment["manifest"]["time"] = json!("2026-11-30T11:20:05.3+01:00");
    std::fs::write(&file, export.to_string()).unwrap();
    let (stdout, _) = run(&["import", "pulumi", "--db", db_arg, file.to_str().unwrap()]);
    assert_eq!(
        stdout,
        format!(
            "revision 2 of source {SOURCE} (4 objects) from Pulumi stack shop/dev\n\
             intent 1 superseded: superseded by revision 2\n"
        )
    );
    let started = Instant::now();
    entry_when(&daemon, "Deployment", "web", |e| e["class"] == "in_sync");
    eprintln!(
        "state without the operation to in sync: {:?}",
        started.elapsed()
    );
    wait_for("no lock left", T, || {
        locks(&daemon).is_empty().then_some(())
    });
    let log = daemon.proc.stderr();
    assert_never_written(&[&log], &db);
}

/// The fixture's file backend in `dir/state`, its checkpoint gzipped as the backend writes
/// it with compression on (`dev.json.gz`), with the lock file the killed `pulumi up` left.
fn state_dir(dir: &Path) -> PathBuf {
    let root = dir.join("state");
    let from = fixture("state/.pulumi");
    let to = root.join(".pulumi");
    let lock = "locks/organization/shop/dev/e3b0a9c4-6f1d-4b2e-8c7a-5d9f0e1b2a3c.json";
    for sub in ["stacks/shop", "locks/organization/shop/dev"] {
        std::fs::create_dir_all(to.join(sub)).unwrap();
    }
    std::fs::copy(from.join("meta.yaml"), to.join("meta.yaml")).unwrap();
    std::fs::copy(from.join(lock), to.join(lock)).unwrap();
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&std::fs::read(from.join("stacks/shop/dev.json")).unwrap())
        .unwrap();
    std::fs::write(to.join("stacks/shop/dev.json.gz"), gz.finish().unwrap()).unwrap();
    root
}

#[test]
fn an_interrupted_create_in_a_state_directory_is_read_by_serve_without_an_import() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("driftd.db");
    let sim = Sim::start(dir.path());
    let root = state_dir(dir.path());
    // The live objects: what the stack holds (secrets' values from the export, which has
    // them), and the ConfigMap the killed update created.
    let export = json_file(&fixture("export.json"));
    apply_as_pulumi(&sim, &applied_objects(&export["deployment"]));
    let checkpoint = json_file(&fixture("state/.pulumi/stacks/shop/dev.json"));
    let created = &checkpoint["checkpoint"]["latest"]["pending_operations"][0];
    assert_eq!(created["type"], "creating");
    apply_as_pulumi(&sim, &[created["resource"]["inputs"].clone()]);

    let config = format!(
        "[pulumi]\nstate_dirs = [{:?}]\nscan_seconds = 1\n",
        root.display().to_string()
    );
    let daemon = Daemon::start(&write_config(dir.path(), &config), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let started = Instant::now();
    let entry = entry_when(&daemon, "ConfigMap", "web-flags-5d1e9c2a", |e| {
        e["class"] == "uncommitted"
    });
    eprintln!("state directory to uncommitted: {:?}", started.elapsed());
    let backend = format!("PULUMI_BACKEND_URL=file://{}", root.display());
    let stack = "organization/shop/dev";
    let urn = "urn:pulumi:dev::shop::kubernetes:core/v1:ConfigMap::web-flags";
    let keep = format!(
        "{backend} pulumi refresh --yes --stack {stack} --import-pending-creates {urn} \
         shop/web-flags-5d1e9c2a"
    );
    let clear = format!(
        "{backend} pulumi stack export --stack {stack} | {backend} pulumi stack import --stack {stack}"
    );
    assert_eq!(entry["source"], SOURCE, "{entry:#}");
    let intent = &entry["intent"];
    assert_eq!(intent["state"], "interrupted");
    assert_eq!(
        intent["holder"],
        format!("pulumi update of {stack} at 2026-11-30T10:40:03Z")
    );
    assert_eq!(intent["keep"], keep);
    assert_eq!(
        intent["revert"],
        format!(
            "no committed revision has this object: delete it (`kubectl -n shop delete \
             configmap web-flags-5d1e9c2a`), then `{clear}`"
        )
    );
    entry_when(&daemon, "Deployment", "web", |e| {
        e["class"] == "in_sync" && e["source"] == SOURCE
    });
    let (sources, _) = run(&["sources", "--db", db.to_str().unwrap()]);
    assert!(sources.contains(SOURCE), "{sources}");

    // `/locks`: the lock file the killed process left (Pulumi refuses the next update until
    // `pulumi cancel`) and the operation it left pending.
    let found = wait_for("both at /locks", T, || {
        let found = locks(&daemon);
        (found.len() == 2).then_some(found)
    });
    let file_lock = found.iter().find(|l| l["path"].is_string()).unwrap();
    assert_eq!(
        file_lock["release"],
        format!("{backend} pulumi cancel --yes --stack {stack}")
    );
    let pending = found.iter().find(|l| l["source"] == SOURCE).unwrap();
    assert_eq!(
        (&pending["state"], &pending["release"]),
        (&json!("interrupted"), &json!(clear))
    );
    assert!(
        pending["reason"].as_str().unwrap().contains(&keep),
        "{pending:#}"
    );
    let (table, _) = run(&["drift", "--server", &daemon.url]);
    assert!(
        table.contains(&format!("keep it:  {keep}")) && table.contains(&clear),
        "{table}"
    );
    let event = wait_for("UncommittedApply Event on the ConfigMap", T, || {
        events_on(&sim, "UncommittedApply", "web-flags-5d1e9c2a").pop()
    });
    let note = event["note"].as_str().unwrap();
    assert!(note.contains(&keep) && note.contains(&clear), "{note}");

    // `pulumi cancel`, then `pulumi up` to the end: the lock file is gone, the state (now
    // written plainly, newer than the .gz: Pulumi reads the newer) has the ConfigMap and
    // nothing pending.
    let to = root.join(".pulumi");
    std::fs::remove_dir_all(to.join("locks/organization/shop/dev")).unwrap();
    let mut later = checkpoint.clone();
    let latest = &mut later["checkpoint"]["latest"];
    let resource = created["resource"].clone();
    latest["resources"].as_array_mut().unwrap().push(resource);
    latest.as_object_mut().unwrap().remove("pending_operations");
    latest["manifest"]["time"] = json!("2026-11-30T11:52:40.5+01:00");
    let plain = to.join("stacks/shop/dev.json");
    std::fs::write(&plain, later.to_string()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&plain)
        .unwrap()
        .set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    let started = Instant::now();
    entry_when(&daemon, "ConfigMap", "web-flags-5d1e9c2a", |e| {
        e["class"] == "in_sync" && e["source"] == SOURCE
    });
    eprintln!(
        "state without the operation to in sync: {:?}",
        started.elapsed()
    );
    wait_for("no lock left", T, || {
        locks(&daemon).is_empty().then_some(())
    });
    let (intents, _) = run(&["intent", "list", "--all", "--db", db.to_str().unwrap()]);
    assert!(intents.contains("superseded"), "{intents}");
    assert_never_written(&[&daemon.proc.stderr()], &db);
}
