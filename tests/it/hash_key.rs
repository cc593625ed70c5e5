//! The hash key kept in a Kubernetes Secret, end to end with `driftd serve` configured as the
//! shipped `deploy/base/driftd.toml` configures it (`secrets.hash_key_secret`): two replicas
//! starting together create one key Secret and both hash with it; a restart reads it; the CLI
//! run with the same configuration gets the same key; no database holds it, so a copy of one
//! reproduces no stored hash; a database that kept its own key is moved to the Secret's at
//! start, values recovered from the live Secrets, in one transaction that a failure midway
//! leaves undone; `driftd store rekey` makes the same move.
//!
//! Expected hashes are HMAC-SHA256 (RFC 2104) under the Secret's 32 bytes, computed here with
//! the `hmac` crate, of the value's bytes, as docs/security.md defines them.

use crate::e2e_secrets::{contains, database_images, leak_forms};
use crate::scaffold::*;
use base64::Engine as _;
use serde_json::{json, Value};
use sha2::Sha256;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const T: Duration = Duration::from_secs(30);
/// `secrets.hash_key_secret` in deploy/base/driftd.toml; the tests' driftd namespace is
/// `default` (`Daemon::command`).
const KEY_SECRET: &str = "driftd-hash-key";
/// A short value, the kind whose hash a copy of a database must not let anyone test.
const PIN: &str = "4711";
const TOKEN: &str = "token-Jq2v";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// HMAC-SHA256 of `value` under `key`, in hex.
fn hmac_hex(key: &[u8], value: &[u8]) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(value);
    hex::encode(mac.finalize().into_bytes())
}

/// The shipped base configuration with the database `db` in `dir`, listening on any port.
fn base_config(dir: &Path, name: &str) -> PathBuf {
    let toml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/base/driftd.toml"),
    )
    .unwrap();
    assert!(toml.contains(&format!("hash_key_secret = \"{KEY_SECRET}\"")));
    let db = dir.join(format!("{name}.db"));
    let config = dir.join(format!("{name}.toml"));
    let text = format!(
        "settle_seconds = 0.3\ndesired_poll_millis = 100\n{}",
        toml.replace("/data/driftd.db", db.to_str().unwrap())
            .replace("0.0.0.0:9477", "127.0.0.1:0")
    );
    std::fs::write(&config, text).unwrap();
    config
}

fn db_of(config: &Path) -> PathBuf {
    config.with_extension("db")
}

/// A Secret `name` in `default` with the short PIN in `stringData` and a token in `data`.
fn secret_manifest(dir: &Path, name: &str, pin: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: default\n\
             stringData:\n  pin: \"{pin}\"\ndata:\n  token: {}\n",
            b64(TOKEN.as_bytes())
        ),
    )
    .unwrap();
    path
}

/// The key in the key Secret, and the Secret.
fn cluster_key(sim: &Sim) -> (Vec<u8>, Value) {
    let secret = sim.kubectl_json(&["-n", "default", "get", "secret", KEY_SECRET]);
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["hash.key"].as_str().unwrap())
        .unwrap();
    (key, secret)
}

/// `driftd ARGS` with the configuration in DRIFTD_CONFIG (as the Deployment sets it) or none.
fn driftd_with(args: &[&str], sim: &Sim, config: Option<&Path>) -> std::process::Output {
    let mut cmd = Command::new(DRIFTD);
    cmd.args(args)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("DRIFTD_NAMESPACE", "default")
        .env_remove("DRIFTD_CONFIG");
    if let Some(config) = config {
        cmd.env("DRIFTD_CONFIG", config);
    }
    cmd.output().expect("driftd runs")
}

/// `driftd commit --db DB --source SOURCE -f FILE...`, with the configuration `config`.
fn commit_db(
    sim: &Sim,
    db: &Path,
    source: &str,
    files: &[&Path],
    config: Option<&Path>,
) -> std::process::Output {
    let mut args = vec!["commit", "--db", db.to_str().unwrap(), "--source", source];
    for file in files {
        args.extend(["-f", file.to_str().unwrap()]);
    }
    driftd_with(&args, sim, config)
}

fn ok(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The stored hash at `pointer` (`/stringData/pin`) of Secret `name` in the newest revision
/// that has it.
fn stored_hash(db: &Path, name: &str, pointer: &str) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let body: String = conn
        .query_row(
            "SELECT body FROM revision_objects WHERE kind = 'Secret' AND name = ?1
             ORDER BY revision_id DESC LIMIT 1",
            [name],
            |r| r.get(0),
        )
        .unwrap();
    let body: Value = serde_json::from_str(&body).unwrap();
    body.pointer(&format!("{pointer}/hmac-sha256"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no stored hash at {pointer}: {body}"))
        .to_string()
}

fn meta(db: &Path) -> Vec<(String, Vec<u8>)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT key, value FROM meta ORDER BY key")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    rows
}

/// Every value of every column of every table of the database, as bytes: what a copy of it
/// offers as candidate keys.
fn every_stored_value(db: &Path) -> Vec<Vec<u8>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let mut values = Vec::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = stmt.column_count();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..columns {
                match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Blob(b) => values.push(b.to_vec()),
                    rusqlite::types::ValueRef::Text(t) => values.push(t.to_vec()),
                    _ => {}
                }
            }
        }
    }
    values
}

/// Asserts that nothing in the database at `db` (nor in its file, WAL or a copy) reproduces
/// `stored`, the hash of `value`: no stored value, raw or decoded from hex or base64, works as
/// the key, and the key itself is in none of the files in any form.
fn assert_database_alone_reveals_nothing(
    db: &Path,
    scratch: &Path,
    key: &[u8],
    value: &str,
    stored: &str,
) {
    assert_eq!(
        hmac_hex(key, value.as_bytes()),
        stored,
        "the Secret's key made it"
    );
    let names: Vec<String> = meta(db).into_iter().map(|(k, _)| k).collect();
    assert!(
        !names.contains(&"installation_key".to_string()),
        "{names:?}"
    );
    for candidate in every_stored_value(db) {
        let text = String::from_utf8_lossy(&candidate).trim().to_string();
        let decoded = [
            hex::decode(&text).ok(),
            base64::engine::general_purpose::STANDARD.decode(&text).ok(),
        ];
        for k in std::iter::once(candidate.clone()).chain(decoded.into_iter().flatten()) {
            assert_ne!(
                hmac_hex(&k, value.as_bytes()),
                stored,
                "a stored value keys the hash"
            );
        }
    }
    for (image, bytes) in database_images(db, scratch) {
        assert!(!contains(&bytes, key), "{image} holds the hash key");
        for (form, text) in leak_forms("hash key", key) {
            assert!(
                !contains(&bytes, text.as_bytes()),
                "{image} holds the {form}"
            );
        }
    }
}

/// Starts `driftd serve` with each config at once, so their first reads and creates of the
/// key Secret race, and waits until each listens.
fn start_together(configs: &[&Path], sim: &Sim) -> Vec<Daemon> {
    let mut procs: Vec<Proc> = configs
        .iter()
        .map(|c| Proc::spawn("driftd serve", Daemon::command(c, &sim.kubeconfig)))
        .collect();
    procs
        .drain(..)
        .map(|mut proc| {
            let line = proc.wait_line("driftd listening on ", T);
            let url = line[line.find("http").unwrap()..].trim().to_string();
            Daemon { proc, url }
        })
        .collect()
}

/// The "hash key created|read ... (key id ID)" line of a daemon's log.
fn key_line(daemon: &Daemon) -> String {
    wait_for("the hash key's log line", T, || {
        daemon
            .proc
            .stderr()
            .lines()
            .find(|l| l.contains("hash key created") || l.contains("hash key read"))
            .map(str::to_string)
    })
}

fn key_id_in(line: &str) -> String {
    let at = line.find("(key id ").unwrap() + "(key id ".len();
    line[at..at + 16].to_string()
}

/// The `/drift` entry of Secret `name` once its class is `class`.
fn secret_when(daemon: &Daemon, name: &str, class: &str) -> Value {
    wait_for(&format!("Secret {name} {class}"), T, || {
        daemon.entry("Secret", name).filter(|e| e["class"] == class)
    })
}

#[test]
fn replicas_make_one_key_secret_share_it_and_no_database_holds_it() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let absent = sim.kubectl_output(&["-n", "default", "get", "secret", KEY_SECRET], None);
    assert!(
        !absent.status.success(),
        "no key Secret before the first start"
    );
    // Desired state through the cluster log, which both replicas import.
    let manifest = secret_manifest(dir.path(), "pin", PIN);
    ok(&driftd_with(
        &[
            "commit",
            "--cluster",
            "--source",
            "app",
            "-f",
            manifest.to_str().unwrap(),
        ],
        &sim,
        None,
    ));
    sim.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);

    let (a, b) = (base_config(dir.path(), "a"), base_config(dir.path(), "b"));
    let mut replicas = start_together(&[&a, &b], &sim);
    let (key, secret) = cluster_key(&sim);
    assert_eq!(key.len(), 32);
    assert_eq!(secret["type"], "driftd.io/hash-key.v1");
    assert_eq!(secret["immutable"], true);
    let lines: Vec<String> = replicas.iter().map(key_line).collect();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("hash key created"))
            .count(),
        1,
        "exactly one replica created it: {lines:?}"
    );
    assert_eq!(key_id_in(&lines[0]), key_id_in(&lines[1]), "{lines:?}");
    for daemon in &replicas {
        secret_when(daemon, "pin", "in_sync");
    }

    // A hand edit: both replicas show the committed value's hash under the Secret's key.
    sim.merge_patch(
        "default",
        &["secret", "pin"],
        &json!({"data": {"pin": b64(b"4712")}}),
    );
    let expected = &hmac_hex(&key, PIN.as_bytes())[..16];
    for daemon in &replicas {
        let entry = secret_when(daemon, "pin", "modified");
        let change = entry["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["path"] == "/stringData/pin")
            .unwrap_or_else(|| panic!("{entry:#}"))
            .clone();
        assert_eq!(change["desired"]["hmac"], expected, "{change:#}");
        assert_eq!(change["live"]["hmac"], &hmac_hex(&key, b"4712")[..16]);
    }

    // The database alone: no key, nothing that reproduces the stored hash of the PIN.
    let db = db_of(&a);
    let stored = stored_hash(&db, "pin", "/stringData/pin");
    assert_database_alone_reveals_nothing(&db, dir.path(), &key, PIN, &stored);
    // A copy used without the Secret cannot compare or commit Secrets, and says why.
    let copy = dir.path().join("copy.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
        .unwrap();
    let out = commit_db(&sim, &copy, "app", &[&manifest], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("kept outside the database") && err.contains("secrets.hash_key_secret"),
        "{err}"
    );

    // The CLI with the daemon's configuration hashes with the same key.
    let other = secret_manifest(dir.path(), "other", "0815");
    ok(&commit_db(&sim, &db, "local", &[&other], Some(&a)));
    assert_eq!(
        stored_hash(&db, "other", "/stringData/pin"),
        hmac_hex(&key, b"0815")
    );
    // `reconcile` compares with it: the applied Secret is in sync, nothing to write.
    sim.kubectl(&["apply", "-f", other.to_str().unwrap()]);
    let db_arg = db.to_str().unwrap();
    let out = ok(&driftd_with(
        &["reconcile", "--db", db_arg, "--source", "local"],
        &sim,
        Some(&a),
    ));
    assert!(out.contains("writes 0 object(s)"), "{out}");
    let out = ok(&driftd_with(
        &["store", "rekey", "--db", db.to_str().unwrap()],
        &sim,
        Some(&a),
    ));
    assert!(
        !out.contains("keeps no hash key now"),
        "nothing to move: {out}"
    );

    // A restart reads the key; the Secret is the one made at the first start.
    assert!(replicas[0].proc.terminate().success());
    replicas[0] = Daemon::start(&a, &sim.kubeconfig, &[]);
    let line = key_line(&replicas[0]);
    assert!(line.contains("hash key read"), "{line}");
    assert_eq!(key_id_in(&line), key_id_in(&lines[0]));
    let (again, now) = cluster_key(&sim);
    assert_eq!(again, key);
    assert_eq!(now["metadata"]["uid"], secret["metadata"]["uid"]);
    assert_eq!(
        now["metadata"]["resourceVersion"],
        secret["metadata"]["resourceVersion"]
    );
}

/// A database as a local run made it (its own key in `meta`): Secrets `pin` (live holds the
/// committed value) and `drifting` (changed by hand since), committed and applied.
fn local_database(dir: &Path, sim: &Sim, name: &str) -> PathBuf {
    let db = dir.join(format!("{name}.db"));
    let pin = secret_manifest(dir, "pin", PIN);
    let drifting = secret_manifest(dir, "drifting", "1234");
    for manifest in [&pin, &drifting] {
        sim.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);
    }
    ok(&commit_db(sim, &db, "app", &[&pin, &drifting], None));
    sim.merge_patch(
        "default",
        &["secret", "drifting"],
        &json!({"data": {"pin": b64(b"9999")}}),
    );
    let own = meta(&db)
        .into_iter()
        .find(|(k, _)| k == "installation_key")
        .expect("a local run keeps its own key")
        .1;
    assert_eq!(
        stored_hash(&db, "pin", "/stringData/pin"),
        hmac_hex(&own, PIN.as_bytes())
    );
    db
}

/// A copy of `config` (made by [`base_config`]) for the database `db`.
fn config_for(config: &Path, db: &Path) -> PathBuf {
    let text = std::fs::read_to_string(config)
        .unwrap()
        .replace(db_of(config).to_str().unwrap(), db.to_str().unwrap());
    let path = db.with_extension("toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn bodies(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT body FROM revision_objects ORDER BY revision_id, name")
        .unwrap();
    let rows = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    rows
}

#[test]
fn a_database_that_kept_its_own_key_moves_to_the_key_secret_once_and_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let db = local_database(dir.path(), &sim, "local");
    let config = config_for(&base_config(dir.path(), "base"), &db);

    // A failure midway (after every Secret was rewritten, before the key is deleted): serve
    // stops, saying why, and the database is as it was, usable with its own key.
    let before = bodies(&db);
    let trigger = rusqlite::Connection::open(&db).unwrap();
    trigger
        .execute_batch(
            "CREATE TRIGGER crash BEFORE DELETE ON meta
             BEGIN SELECT RAISE(ABORT, 'simulated crash'); END;",
        )
        .unwrap();
    let mut failing = Proc::spawn("driftd serve", Daemon::command(&config, &sim.kubeconfig));
    let status = wait_for("serve to stop", T, || failing.child.try_wait().unwrap());
    assert!(!status.success());
    assert!(
        failing.stderr().contains("simulated crash"),
        "{}",
        failing.stderr()
    );
    assert_eq!(bodies(&db), before);
    assert!(meta(&db).iter().any(|(k, _)| k == "installation_key"));
    ok(&driftd_with(
        &["sources", "--db", db.to_str().unwrap()],
        &sim,
        None,
    ));
    trigger.execute_batch("DROP TRIGGER crash").unwrap();
    drop(trigger);

    // The move: the PIN, which the live Secret still holds, rehashed under the Secret's key;
    // the value changed by hand since cannot be, and reads as changed as it did.
    let mut daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let log = daemon.proc.stderr();
    assert!(
        log.contains("moved the database to hash key") && log.contains("Secret default/drifting"),
        "{log}"
    );
    secret_when(&daemon, "pin", "in_sync");
    secret_when(&daemon, "drifting", "modified");
    let (key, _) = cluster_key(&sim);
    let stored = stored_hash(&db, "pin", "/stringData/pin");
    assert_database_alone_reveals_nothing(&db, dir.path(), &key, PIN, &stored);
    let lost = stored_hash(&db, "drifting", "/stringData/pin");
    assert_ne!(lost, hmac_hex(&key, b"1234"));
    assert_ne!(lost, hmac_hex(&key, b"9999"));
    assert_eq!(
        stored_hash(&db, "drifting", "/data/token"),
        hmac_hex(&key, TOKEN.as_bytes()),
        "the value the live Secret still held was recovered"
    );

    // Once: a restart moves nothing and rewrites nothing.
    let moved = bodies(&db);
    assert!(daemon.proc.terminate().success());
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    secret_when(&daemon, "pin", "in_sync");
    assert!(!daemon.proc.stderr().contains("moved the database"));
    assert_eq!(bodies(&db), moved);

    // `driftd store rekey` makes the same move, with the configuration the daemon reads.
    let other = local_database(dir.path(), &sim, "other");
    let other_config = config_for(&config, &other);
    let out = ok(&driftd_with(
        &["store", "rekey", "--db", other.to_str().unwrap()],
        &sim,
        Some(&other_config),
    ));
    assert!(
        out.contains("keeps no hash key now") && out.contains("1 from the live Secrets"),
        "{out}"
    );
    let stored = stored_hash(&other, "pin", "/stringData/pin");
    assert_database_alone_reveals_nothing(&other, dir.path(), &key, PIN, &stored);
}
