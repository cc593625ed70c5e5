//! End to end: a Secret changed by hand is reported as drift, yet no committed or live value
//! appears in any form (plain, base64 in every alphabet, hex, unkeyed SHA-256 or MD5) in any
//! channel driftd writes to: its logs at debug level, `/drift`, `/metrics`, `driftd drift`
//! (table and JSON), the Kubernetes Events it publishes (events.k8s.io/v1 and core/v1), the
//! other CLI commands run on the same database and cluster, nor in the database itself: its
//! file, its WAL and a `VACUUM INTO` copy, for the values of `data`, `stringData` and an
//! intent alike. The hash key lives outside the database, so no form of it is there either.

use crate::scaffold::*;
use base64::Engine as _;
use md5::Md5;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const T: Duration = Duration::from_secs(30);

/// The example app's `stringData.DATABASE_PASSWORD` (examples/app/10-config.yaml).
const OLD: &str = "demo-only-not-a-real-password";
/// What a person sets by hand.
const NEW: &str = "rotated-by-hand-7Qz4vK2p";
/// A second committed Secret: one value given in `data`, one in `stringData`.
const API_TOKEN: &str = "api-token-committed-as-data-9fJ2";
const API_USER: &str = "api-user-committed-as-stringdata-Vb7";
/// What an intent (begun, then aborted) wanted.
const INTENT_VALUE: &str = "value-only-an-intent-wanted-Ke3";

/// Every value that must not leak, with a label for messages.
const VALUES: [(&str, &str); 5] = [
    ("old", OLD),
    ("new", NEW),
    ("data", API_TOKEN),
    ("stringData", API_USER),
    ("intent", INTENT_VALUE),
];

/// Every form a leaked value could take: plain, base64 (standard and URL-safe, padded or
/// not), hex, and unkeyed SHA-256 and MD5 digests in hex (a digest of a value is as good as
/// the value to whoever can guess it), hex in both cases.
pub(crate) fn leak_forms(label: &str, plain: &[u8]) -> Vec<(String, String)> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let mut forms = vec![(
        format!("{label} plaintext"),
        String::from_utf8_lossy(plain).into(),
    )];
    for (name, engine) in [
        ("base64", &STANDARD),
        ("base64 unpadded", &STANDARD_NO_PAD),
        ("base64url", &URL_SAFE),
        ("base64url unpadded", &URL_SAFE_NO_PAD),
    ] {
        forms.push((format!("{label} {name}"), engine.encode(plain)));
    }
    for (name, digest) in [
        ("hex", plain.to_vec()),
        ("sha256 hex", Sha256::digest(plain).to_vec()),
        ("md5 hex", Md5::digest(plain).to_vec()),
    ] {
        forms.push((format!("{label} {name}"), hex::encode(&digest)));
        forms.push((format!("{label} {name} upper"), hex::encode_upper(&digest)));
    }
    forms
}

fn forbidden() -> Vec<(String, String)> {
    VALUES
        .iter()
        .flat_map(|(label, value)| leak_forms(label, value.as_bytes()))
        .collect()
}

/// Whether `haystack` contains `needle`, byte for byte.
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The database as it lies on disk: the file, its WAL (while someone holds it open) and a
/// `VACUUM INTO` copy (what a backup of it holds), each with a name for messages.
pub(crate) fn database_images(db: &Path, scratch: &Path) -> Vec<(String, Vec<u8>)> {
    let mut images = vec![(db.display().to_string(), std::fs::read(db).unwrap())];
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    if let Ok(bytes) = std::fs::read(&wal) {
        images.push((wal.display().to_string(), bytes));
    }
    let copy = scratch.join(format!(
        "vacuumed-{}.db",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute("VACUUM INTO ?1", [copy.to_str().unwrap()])
        .unwrap();
    images.push((
        format!("VACUUM INTO copy of {}", db.display()),
        std::fs::read(&copy).unwrap(),
    ));
    images
}

/// Asserts that no image of the database holds any of `forms`.
pub(crate) fn assert_not_stored(images: &[(String, Vec<u8>)], forms: &[(String, String)]) {
    for (image, bytes) in images {
        // A WAL may be empty (just checkpointed); the file and its copy never are.
        assert!(
            !bytes.is_empty() || image.ends_with("-wal"),
            "{image} is empty"
        );
        for (form, value) in forms {
            assert!(
                !contains(bytes, value.as_bytes()),
                "{image} holds a Secret value ({form})"
            );
        }
    }
}

/// Asserts that `text`, read from `channel`, holds no form of any Secret value.
fn assert_no_secret(channel: &str, text: &str) {
    for (form, value) in forbidden() {
        assert!(
            !text.contains(&value),
            "{channel} leaks the Secret value ({form}); excerpt: {:?}",
            excerpt(text, &value)
        );
    }
}

/// A few characters around the leak, with every form of every value masked, so the failure
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

/// Runs `driftd ARGS` at debug level against the simulator, with the daemon's configuration
/// (its `[secrets]` key files) in DRIFTD_CONFIG as a deployment would set it.
fn run_driftd(args: &[&str], kubeconfig: &Path, config: &Path) -> std::process::Output {
    Command::new(DRIFTD)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("DRIFTD_CONFIG", config)
        .env("RUST_LOG", "debug")
        .output()
        .expect("driftd runs")
}

/// Asserts the exit code of a command, showing its output if it is another.
fn assert_exit(what: &str, out: &std::process::Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what}: {}",
        output_text(out)
    );
}

/// A Secret with one value in `data` and one in `stringData`, and what an intent wanted.
fn write_extra_manifests(dir: &Path) -> (PathBuf, PathBuf) {
    let api = dir.join("api-secret.yaml");
    std::fs::write(
        &api,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\n  namespace: shop\n\
             data:\n  token: {}\nstringData:\n  user: {API_USER}\n",
            base64::engine::general_purpose::STANDARD.encode(API_TOKEN)
        ),
    )
    .unwrap();
    let intent = dir.join("intent-secret.yaml");
    std::fs::write(
        &intent,
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: rotation\n  namespace: shop\n\
             stringData:\n  next: {INTENT_VALUE}\n"
        ),
    )
    .unwrap();
    (api, intent)
}

/// Random 32-byte key files, as a mounted Kubernetes Secret provides them, and a config
/// naming them.
fn write_keys_config(dir: &Path) -> (PathBuf, [u8; 32]) {
    let hash_key: [u8; 32] = rand::random();
    let encryption_key: [u8; 32] = rand::random();
    std::fs::write(dir.join("hash.key"), hash_key).unwrap();
    std::fs::write(
        dir.join("encryption.key"),
        base64::engine::general_purpose::STANDARD.encode(encryption_key),
    )
    .unwrap();
    let config = write_config(
        dir,
        &format!(
            "[secrets]\nhash_key_file = \"{}\"\nencryption_key_file = \"{}\"\n",
            dir.join("hash.key").display(),
            dir.join("encryption.key").display()
        ),
    );
    (config, hash_key)
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
    let (config, hash_key) = write_keys_config(dir.path());
    let (api, intent) = write_extra_manifests(dir.path());
    let examples = examples();
    let examples = examples.to_str().unwrap();
    let mut transcript = Vec::new();
    let run = |transcript: &mut Vec<(String, String)>, what: &str, args: &[&str], code: i32| {
        let out = run_driftd(args, &sim.kubeconfig, &config);
        assert_exit(what, &out, code);
        transcript.push((what.to_string(), output_text(&out)));
        out
    };

    run(
        &mut transcript,
        "driftd commit",
        &[
            "commit",
            "--db",
            db_arg,
            "--source",
            "shop",
            "-f",
            examples,
            "-f",
            api.to_str().unwrap(),
        ],
        0,
    );
    // An intent for another source wants a third Secret; the deploy is called off.
    let begun = run(
        &mut transcript,
        "driftd intent begin",
        &[
            "intent",
            "begin",
            "--db",
            db_arg,
            "--source",
            "ops",
            "--holder",
            "test",
            "-f",
            intent.to_str().unwrap(),
        ],
        0,
    );
    let id = String::from_utf8(begun.stdout).unwrap().trim().to_string();
    run(
        &mut transcript,
        "driftd intent abort",
        &[
            "intent",
            "abort",
            "--db",
            db_arg,
            &id,
            "--reason",
            "called off",
        ],
        0,
    );
    sim.kubectl(&["apply", "-f", examples]);
    sim.kubectl(&["apply", "-f", api.to_str().unwrap()]);
    // The cluster does hold the old value, so a leak of it would be possible.
    let live = sim.kubectl_json(&["-n", "shop", "get", "secret", "web-db"]);
    assert_eq!(
        live["data"]["DATABASE_PASSWORD"],
        base64::engine::general_purpose::STANDARD.encode(OLD)
    );

    let (mut daemon, stdout, stderr) = start_logged_daemon(&config, &sim.kubeconfig, dir.path());
    daemon.wait_ready();
    let in_sync = wait_for("the Secrets in sync", T, || {
        let in_sync = daemon.drift("?class=in_sync");
        (find(&in_sync, "Secret", "web-db").is_some() && find(&in_sync, "Secret", "api").is_some())
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
    // Keyed with the hash key file: the first 8 bytes of HMAC-SHA256(key, value).
    let hmac = |value: &str| {
        use hmac::Mac;
        let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&hash_key).unwrap();
        mac.update(value.as_bytes());
        hex::encode(&mac.finalize().into_bytes()[..8])
    };
    assert_eq!(desired.as_str(), Some(hmac(OLD).as_str()), "{change:#}");
    assert_eq!(live.as_str(), Some(hmac(NEW).as_str()), "{change:#}");

    // The Event is published (after the settle time), so the Events channel is exercised.
    let regarding_web_db = |e: &serde_json::Value, object: &str| {
        e["reason"] == "DriftDetected"
            && e[object]["kind"] == "Secret"
            && e[object]["name"] == "web-db"
    };
    let events = wait_for("DriftDetected Event on the Secret", T, || {
        let list = sim.kubectl_json(&["get", "events.v1.events.k8s.io", "-A"]);
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| regarding_web_db(e, "regarding"))
            .then_some(list)
    });
    transcript.push(("Events (events.k8s.io/v1)".into(), events.to_string()));
    // The same Events as core/v1 shows them (`kubectl get events`): the same storage.
    let core = sim.kubectl_json(&["get", "events", "-A"]);
    assert!(
        core["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| regarding_web_db(e, "involvedObject")),
        "the DriftDetected Event as a core/v1 Event"
    );
    transcript.push(("Events (core/v1, JSON)".into(), core.to_string()));
    let table = sim.kubectl_output(&["get", "events", "-A"], None);
    assert!(table.status.success(), "{}", output_text(&table));
    transcript.push(("Events (core/v1, table)".into(), output_text(&table)));

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
    assert!(
        metrics
            .lines()
            .any(|l| l == "driftd_database_insecure_permissions 0"),
        "the database driftd created is private"
    );
    transcript.push(("/metrics".into(), metrics));
    let out = run(
        &mut transcript,
        "driftd drift (table)",
        &["drift", "--server", &daemon.url],
        0,
    );
    assert!(output_text(&out).contains("web-db"));
    run(
        &mut transcript,
        "driftd drift --format json",
        &["drift", "--server", &daemon.url, "--format", "json"],
        0,
    );
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
        let check = run(
            &mut transcript,
            &format!("driftd check --format {format}"),
            &[
                "check",
                "--desired",
                examples,
                api.to_str().unwrap(),
                "--live",
                live_file.to_str().unwrap(),
                "--format",
                format,
            ],
            1,
        );
        let text = output_text(&check);
        assert!(
            text.contains("web-db") && text.contains("DATABASE_PASSWORD"),
            "driftd check --format {format} reports the Secret's drift: {}",
            excerpt(&text, "web-db")
        );
    }
    // Each shows what it is about: the revision, its (keyed) content hash, the intent.
    for (what, args, shows) in [
        (
            "driftd history",
            vec!["history", "--db", db_arg, "--source", "shop"],
            "commit",
        ),
        (
            "driftd history --format json",
            vec![
                "history", "--db", db_arg, "--source", "shop", "--format", "json",
            ],
            "content_hash",
        ),
        (
            "driftd sources --format json",
            vec!["sources", "--db", db_arg, "--format", "json"],
            "\"shop\"",
        ),
        (
            "driftd intent list --all --format json",
            vec![
                "intent", "list", "--db", db_arg, "--all", "--format", "json",
            ],
            "\"ops\"",
        ),
    ] {
        let out = run(&mut transcript, what, &args, 0);
        assert!(output_text(&out).contains(shows), "{what} shows {shows}");
    }

    // The database, while the daemon holds it open (so its WAL is there): no form of any
    // committed or live value, and no form of the hash key either.
    let wal = PathBuf::from(format!("{db_arg}-wal"));
    assert!(wal.exists(), "the daemon holds the database in WAL mode");
    let mut at_rest = forbidden();
    at_rest.extend(leak_forms("hash key", &hash_key));
    assert_not_stored(&database_images(&db, dir.path()), &at_rest);

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
    assert_not_stored(&database_images(&db, dir.path()), &at_rest);

    for (channel, text) in &transcript {
        assert_no_secret(channel, text);
    }
}
