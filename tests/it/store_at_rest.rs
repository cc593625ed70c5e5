//! Secret values at rest, through the real binary and the store: a database written by the
//! previous driftd (tests/fixtures/store-schema2, made with it) is migrated so that no form
//! of any value it held is left in the file, its WAL or a `VACUUM INTO` copy, while drift is
//! still computed against live Secrets and unchanged content stays unchanged; with an
//! encryption key configured the values are kept sealed and `driftd store rekey` moves them
//! to a new key; a database others can read is reported by the CLI and by `driftd serve`;
//! store errors say SQLite's message once.

use crate::e2e_secrets::{assert_not_stored, contains, database_images, leak_forms};
use crate::scaffold::*;
use base64::Engine as _;
use driftd_core::diff::{secret, ClusterFacts, CompareInput, Differ, DriftClass};
use driftd_k8s::ObjectKey;
use driftd_store::{SecretKeys, Store};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Every Secret value the fixture's manifests hold: both revisions (`stringData`, `data`, the
/// last-applied annotation) and both intents (pending and aborted).
const FIXTURE_VALUES: &[&str] = &[
    "fixture-rev1-plain-password-Kq7",
    "fixture-rev1-data-token-Wm3",
    "fixture-rev2-plain-password-Zt4",
    "fixture-rev2-data-token-Hy8",
    "fixture-rev2-annotated-apikey-Pn6",
    "amqp://fixture-intent-user:fixture-intent-password-Rb2@mq",
    "fixture-intent-password-Rb2",
    "fixture-aborted-intent-password-Ux5",
];

/// The unkeyed content hashes the previous driftd printed for revisions 2 and 1.
const OLD_CONTENT_HASHES: [&str; 2] = [
    "388eb38149728bc1da37a1efb4e4b2a6daf3fe2c65fd431751cb1970c7d45265",
    "1bc071a02eeb3a5d8b8bb65e7f3a0ebabdab99f984f063b6953ac8e8a11d2d58",
];

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/store-schema2")
}

/// A copy of the fixture database, readable by others as the previous driftd created it.
fn fixture_copy(dir: &Path) -> PathBuf {
    let db = dir.join("d.db");
    std::fs::copy(fixture_dir().join("driftd-schema2.db"), &db).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let bytes = std::fs::read(&db).unwrap();
    for value in FIXTURE_VALUES {
        assert!(
            leak_forms(value, value.as_bytes())
                .iter()
                .any(|(_, form)| contains(&bytes, form.as_bytes())),
            "the fixture holds {value} (in clear or base64)"
        );
    }
    db
}

fn all_forms() -> Vec<(String, String)> {
    FIXTURE_VALUES
        .iter()
        .flat_map(|v| leak_forms(v, v.as_bytes()))
        .collect()
}

fn b64(value: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(value)
}

fn key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        group: String::new(),
        kind: "Secret".into(),
        namespace: Some(namespace.into()),
        name: name.into(),
    }
}

fn live_secret(namespace: &str, name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace, "uid": "u"}, "data": data})
}

/// `driftd ARGS` with extra environment variables.
fn driftd_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(DRIFTD);
    cmd.args(args).env_remove("DRIFTD_CONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("driftd runs")
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_database_from_the_previous_version_keeps_no_secret_value_and_still_compares() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture_copy(dir.path());
    // Opened by the current code, and held open so its WAL is there to read too.
    let store = Store::open(&db).unwrap();
    assert_not_stored(&database_images(&db, dir.path()), &all_forms());

    let differ = Differ::new(&store.installation_key().unwrap());
    let state = store.desired_state().unwrap();
    let compare = |key: &ObjectKey, live: &Value| {
        let desired = state.objects.iter().find(|o| &o.key == key).unwrap();
        differ.compare(&CompareInput {
            desired: &desired.object,
            live: Some(live),
            previous: desired.previous.as_ref(),
            facts: &ClusterFacts::default(),
        })
    };
    let db_secret = |password: &str| {
        live_secret(
            "app",
            "db",
            json!({"password": b64(password), "token": b64("fixture-rev2-data-token-Hy8")}),
        )
    };
    let same = compare(
        &key("app", "db"),
        &db_secret("fixture-rev2-plain-password-Zt4"),
    );
    assert_eq!(same.class, DriftClass::InSync, "{same:?}");
    let changed = compare(&key("app", "db"), &db_secret("set-by-hand"));
    assert_eq!(changed.class, DriftClass::Modified);
    assert_eq!(changed.changes.len(), 1, "{changed:?}");
    assert_eq!(changed.changes[0].path, "/stringData/password");
    assert_eq!(
        changed.changes[0].desired,
        Some(secret::redact_value(
            &store.installation_key().unwrap(),
            &json!(b64("fixture-rev2-plain-password-Zt4"))
        )),
        "the hash /drift showed before the migration"
    );
    // As `kubectl apply` left it: with its own last-applied annotation, which is not compared.
    let mut exported = live_secret(
        "app",
        "exported",
        json!({"apikey": b64("fixture-rev2-annotated-apikey-Pn6")}),
    );
    exported["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/last-applied-configuration": "{}"});
    assert_eq!(
        compare(&key("app", "exported"), &exported).class,
        DriftClass::InSync
    );

    // The pending intent's Secret compares the same way.
    let intents = store.open_intents().unwrap();
    let queue = &intents[0].objects[0];
    assert_eq!(queue.key, key("jobs", "queue"));
    let live = live_secret(
        "jobs",
        "queue",
        json!({"url": b64("amqp://fixture-intent-user:fixture-intent-password-Rb2@mq")}),
    );
    let c = differ.compare(&CompareInput {
        desired: &queue.object,
        live: Some(&live),
        previous: None,
        facts: &ClusterFacts::default(),
    });
    assert_eq!(c.class, DriftClass::InSync, "{c:?}");
    drop(store);
    assert_not_stored(&database_images(&db, dir.path()), &all_forms());
}

#[test]
fn the_cli_migrates_the_fixture_warns_about_its_permissions_and_keeps_unchanged_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture_copy(dir.path());
    let db_arg = db.to_str().unwrap();
    let out = driftd(&[
        "history", "--db", db_arg, "--source", "app", "--format", "json",
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("accessible to group or others") && stderr.contains("chmod 600"),
        "the CLI warns about the 0644 file: {stderr}"
    );
    let history: Value = serde_json::from_str(&stdout).unwrap();
    let hashes: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["content_hash"].as_str())
        .collect();
    assert_eq!(hashes.len(), 2, "{history:#}");
    for old in OLD_CONTENT_HASHES {
        assert!(
            !stdout.contains(old),
            "the unkeyed hash over the values is gone"
        );
    }
    let out = driftd(&["sources", "--db", db_arg, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert!(
        text(&out).0.contains(hashes[0]),
        "sources agrees with history"
    );

    // The same manifests committed again: still revision 2.
    let out = driftd(&[
        "commit",
        "--db",
        db_arg,
        "--source",
        "app",
        "-f",
        fixture_dir().join("rev2.yaml").to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout.trim(),
        "unchanged: source app is already at revision 2"
    );
    assert_not_stored(&database_images(&db, dir.path()), &all_forms());

    // Once restricted, no warning.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = driftd(&["sources", "--db", db_arg]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!text(&out).1.contains("warning"), "{}", text(&out).1);
}

fn write_key(path: &Path) -> PathBuf {
    let key: [u8; 32] = rand::random();
    std::fs::write(path, format!("{}\n", hex::encode(key))).unwrap();
    path.to_path_buf()
}

#[test]
fn with_an_encryption_key_values_are_kept_sealed_and_rekey_moves_them_to_a_new_key() {
    let dir = tempfile::tempdir().unwrap();
    let db = fixture_copy(dir.path());
    let db_arg = db.to_str().unwrap();
    let old = write_key(&dir.path().join("old.key"));
    let new = write_key(&dir.path().join("new.key"));
    let password = |keys: SecretKeys| {
        Store::open_with_keys(&db, keys)
            .unwrap()
            .desired_with_values("app", &key("app", "db"))
            .map(|v| v.unwrap()["stringData"]["password"].clone())
    };
    let only = |path: &Path| SecretKeys::from_files(None, Some(path), &[]).unwrap();

    // The first process to open it has the key: the migration seals what it hashes.
    let out = driftd_env(
        &["sources", "--db", db_arg],
        &[("DRIFTD_SECRETS_ENCRYPTION_KEY_FILE", &old)],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out).1);
    assert_eq!(
        password(only(&old)).unwrap(),
        "fixture-rev2-plain-password-Zt4"
    );
    let err = password(SecretKeys::default()).unwrap_err().to_string();
    assert!(
        err.contains("Secret app/db") && err.contains("no encryption key is configured"),
        "{err}"
    );

    let out = driftd_env(
        &["store", "rekey", "--db", db_arg],
        &[
            ("DRIFTD_SECRETS_ENCRYPTION_KEY_FILE", &new),
            ("DRIFTD_SECRETS_PREVIOUS_ENCRYPTION_KEY_FILES", &old),
        ],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Revisions 1 and 2 (db; db and exported) and both intents: 5 stored Secrets.
    assert!(
        stdout.contains("5 Secrets sealed") && stdout.contains("5 resealed"),
        "{stdout}"
    );
    assert_eq!(
        password(only(&new)).unwrap(),
        "fixture-rev2-plain-password-Zt4"
    );
    let err = password(only(&old)).unwrap_err().to_string();
    assert!(err.contains("previous_encryption_key_files"), "{err}");
    assert_not_stored(&database_images(&db, dir.path()), &all_forms());

    // Rotating without naming the old key is refused, naming what is missing.
    let newer = write_key(&dir.path().join("newer.key"));
    let out = driftd_env(
        &["store", "rekey", "--db", db_arg],
        &[("DRIFTD_SECRETS_ENCRYPTION_KEY_FILE", &newer)],
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("previous_encryption_key_files"), "{stderr}");
    assert_eq!(
        password(only(&new)).unwrap(),
        "fixture-rev2-plain-password-Zt4",
        "nothing changed"
    );
}

#[test]
fn serve_reports_a_database_others_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let config = write_config(dir.path(), "");
    let db = dir.path().join("driftd.db");
    commit(&db, "shop", &examples());
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    // Said before it listens, so it is in the log by now.
    let log = daemon.proc.stderr();
    let line = log
        .lines()
        .find(|l| l.contains("accessible to group or others"))
        .unwrap_or_else(|| panic!("no warning about the database file: {log}"));
    assert!(
        line.contains("WARN") && line.contains("chmod 600"),
        "{line}"
    );
    let (status, metrics) = daemon.get("/metrics");
    assert_eq!(status, 200);
    assert!(
        metrics
            .lines()
            .any(|l| l == "driftd_database_insecure_permissions 1"),
        "{metrics}"
    );
    assert!(daemon.proc.terminate().success());
}

#[test]
fn store_errors_say_sqlites_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/d.db");
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, "x".repeat(200)).unwrap();
    std::fs::set_permissions(&garbage, std::fs::Permissions::from_mode(0o600)).unwrap();
    let manifest = fixture_dir().join("intent.yaml");
    for (db, mut args, message) in [
        (
            &missing,
            vec!["commit", "--source", "a", "-f", manifest.to_str().unwrap()],
            "unable to open database file",
        ),
        (&garbage, vec!["sources"], "file is not a database"),
    ] {
        args.extend(["--db", db.to_str().unwrap()]);
        let out = driftd(&args);
        assert_eq!(out.status.code(), Some(2), "driftd {args:?}");
        assert_eq!(
            text(&out).1,
            format!("error: database {}: {message}\n", db.display())
        );
    }
}
