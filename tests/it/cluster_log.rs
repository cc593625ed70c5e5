//! Commits and intents through the cluster itself, end to end: `driftd commit|
//! intent|run --cluster` record Secrets of driftd types in driftd's namespace, and every
//! `driftd serve` replica (each with its own database) imports them as they appear, or
//! catches up from them when it starts late. Racing deployers are serialized by the API's
//! `resourceVersion` conflicts; a refused input writes nothing.
//!
//! The record format (payload encoding, chunking, labels) is unit-tested in
//! `crates/cluster/src/cluster_log/format_tests.rs`; the store's import rules (numbers kept,
//! idempotence, refusals) in `crates/store/src/import_tests.rs`.

use crate::scaffold::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

/// `driftd ARGS` against the simulator's cluster log in namespace `driftd`.
fn cluster(sim: &Sim, args: &[&str]) -> Output {
    cluster_at(&sim.kubeconfig, args)
}

fn cluster_at(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(DRIFTD)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("DRIFTD_NAMESPACE", "driftd")
        .env_remove("POD_NAME")
        .env_remove("POD_NAMESPACE")
        .output()
        .unwrap()
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One `driftd serve` replica with its own (new) database in `root/name`.
fn replica(sim: &Sim, root: &Path, name: &str) -> (Daemon, PathBuf) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let config = write_config(&dir, "");
    let env = [("POD_NAME", name), ("DRIFTD_NAMESPACE", "driftd")];
    let daemon = Daemon::start(&config, &sim.kubeconfig, &env);
    daemon.wait_ready();
    (daemon, dir.join("driftd.db"))
}

/// The driftd Secrets in namespace driftd.
fn log_objects(sim: &Sim) -> Vec<Value> {
    let list = sim.kubectl_json(&[
        "get",
        "secrets",
        "-n",
        "driftd",
        "-l",
        "app.kubernetes.io/managed-by=driftd",
        "-o",
        "json",
    ]);
    list["items"].as_array().unwrap().clone()
}

/// Revision `id` of source shop as `driftd history --format json` shows it from `db`.
fn revision(db: &Path, id: i64) -> Value {
    let history = ok(driftd(&[
        "history",
        "--db",
        db.to_str().unwrap(),
        "--source",
        "shop",
        "--format",
        "json",
    ]));
    let history: Value = serde_json::from_str(&history).unwrap();
    history
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "revision" && e["id"] == id)
        .unwrap_or_else(|| panic!("revision {id} in {history:#}"))
        .clone()
}

fn without_times(mut web: Value) -> Value {
    web.as_object_mut().unwrap().remove("since");
    if let Some(intent) = web.get_mut("intent").and_then(Value::as_object_mut) {
        intent.remove("age");
        intent.remove("age_seconds");
    }
    web
}

#[test]
fn a_deploy_through_the_cluster_reaches_every_replica_alike() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let sim = Sim::start(root);
    sim.kubectl(&["create", "namespace", "driftd"]);
    let app = examples();
    let app = app.to_str().unwrap();
    sim.kubectl(&["apply", "-f", app]);

    // A deployer commits through the cluster; a running replica imports it, keeping who,
    // why and when.
    let out = ok(cluster(
        &sim,
        &[
            "commit",
            "--cluster",
            "--source",
            "shop",
            "-f",
            app,
            "-m",
            "shop 1.27",
            "--author",
            "alice",
        ],
    ));
    assert!(out.starts_with("revision 1 of source shop"), "{out}");
    let (a, a_db) = replica(&sim, root, "replica-a");
    web_when(&a, "web in sync on replica a", |w| w["class"] == "in_sync");
    let first = revision(&a_db, 1);
    assert_eq!(first["author"], "alice", "{first:#}");
    assert_eq!(first["message"], "shop 1.27", "{first:#}");

    // An interrupted deploy: `run --cluster` wraps a script that applies nginx 1.28, then
    // kills itself.
    let next = edited_examples(&root.join("next"), |t| {
        t.replace("nginx:1.27", "nginx:1.28")
    });
    let script = root.join("deploy.sh");
    std::fs::write(
        &script,
        format!(
            "set -e\n{KUBECTL} apply -f {}\nkill -9 $$\n",
            next.display()
        ),
    )
    .unwrap();
    let run = Command::new(DRIFTD)
        .args(["run", "--cluster", "--source", "shop", "-f"])
        .arg(&next)
        .args([
            "-m",
            "deploy nginx 1.28",
            "--holder",
            "ci-job-7",
            "--",
            "sh",
        ])
        .arg(&script)
        .env("KUBECONFIG", &sim.kubeconfig)
        .env("DRIFTD_NAMESPACE", "driftd")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(137), "{err}");
    assert!(
        err.contains("intent 2 of source shop begun in the cluster log"),
        "{err}"
    );

    // A second replica starts late and catches up from the objects.
    let (b, b_db) = replica(&sim, root, "replica-b");
    let uncommitted =
        |w: &Value| w["class"] == "uncommitted" && w["intent"]["state"] == "interrupted";
    let on_a = web_when(&a, "web uncommitted on replica a", uncommitted);
    let on_b = web_when(&b, "web uncommitted on replica b", uncommitted);
    assert_eq!(on_a["intent"]["id"], 2, "{on_a:#}");
    assert_eq!(on_a["intent"]["holder"], "ci-job-7", "{on_a:#}");
    assert_eq!(
        on_a["intent"]["keep"], "driftd intent commit 2 --cluster",
        "{on_a:#}"
    );
    assert_eq!(
        without_times(on_a),
        without_times(on_b),
        "both replicas report it alike"
    );

    // Kept: committing the intent through the cluster turns it in sync on both.
    let started = Instant::now();
    let out = ok(cluster(&sim, &["intent", "commit", "2", "--cluster"]));
    assert!(
        out.contains("intent 2 committed: revision 4 of source shop"),
        "{out}"
    );
    web_when(&a, "web in sync on replica a", |w| w["class"] == "in_sync");
    web_when(&b, "web in sync on replica b", |w| w["class"] == "in_sync");
    eprintln!(
        "intent commit --cluster -> in_sync on both in {:?}",
        started.elapsed()
    );

    // A commit through the cluster that nobody applied: both report the drift it makes.
    let later = edited_examples(&root.join("later"), |t| {
        t.replace("nginx:1.27", "nginx:1.29")
    });
    let started = Instant::now();
    ok(cluster(
        &sim,
        &[
            "commit",
            "--cluster",
            "--source",
            "shop",
            "-f",
            later.to_str().unwrap(),
        ],
    ));
    for daemon in [&a, &b] {
        let web = web_when(daemon, "web modified", |w| w["class"] == "modified");
        assert_eq!(web["revision"], 5, "{web:#}");
        assert_eq!(web["changes"][0]["desired"], "nginx:1.29", "{web:#}");
        assert_eq!(web["changes"][0]["live"], "nginx:1.28", "{web:#}");
    }
    eprintln!(
        "commit --cluster -> modified on both in {:?}",
        started.elapsed()
    );

    // Two deployers begin on one source at once: exactly one gets the lock.
    let kubeconfig = sim.kubeconfig.clone();
    let begin = |holder: &str| {
        cluster_at(
            &kubeconfig,
            &[
                "intent",
                "begin",
                "--cluster",
                "--source",
                "shop",
                "-f",
                app,
                "--holder",
                holder,
            ],
        )
    };
    let (one, two) = std::thread::scope(|s| {
        let one = s.spawn(|| begin("racer-1"));
        let two = s.spawn(|| begin("racer-2"));
        (one.join().unwrap(), two.join().unwrap())
    });
    let (won, lost) = match (one.status.success(), two.status.success()) {
        (true, false) => (one, two),
        (false, true) => (two, one),
        _ => panic!(
            "exactly one begin wins: {} / {}",
            String::from_utf8_lossy(&one.stderr),
            String::from_utf8_lossy(&two.stderr)
        ),
    };
    let winner: i64 = String::from_utf8_lossy(&won.stdout).trim().parse().unwrap();
    let refusal = String::from_utf8_lossy(&lost.stderr);
    assert_eq!(lost.status.code(), Some(2), "{refusal}");
    assert!(
        refusal.contains(&format!(
            "source \"shop\" is locked by intent {winner} (pending"
        )),
        "{refusal}"
    );
    // Both replicas hold the winner's intent, never the loser's.
    for db in [&a_db, &b_db] {
        let ids = wait_for("the winner's intent imported", T, || {
            let out = driftd(&[
                "intent",
                "list",
                "--db",
                db.to_str().unwrap(),
                "--all",
                "--format",
                "json",
            ]);
            let list: Value = serde_json::from_slice(&out.stdout).ok()?;
            let ids: Vec<i64> = list
                .as_array()?
                .iter()
                .filter_map(|i| i["id"].as_i64())
                .collect();
            ids.contains(&winner).then_some(ids)
        });
        assert_eq!(ids.len(), 2, "intent 2 and the winner only: {ids:?}");
    }
    let out = ok(cluster(
        &sim,
        &["intent", "abort", &winner.to_string(), "--cluster"],
    ));
    assert!(out.contains("is aborted"), "{out}");
}

#[test]
fn refused_input_writes_nothing_to_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "driftd"]);
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Not_A_Name\n  namespace: default\n",
    )
    .unwrap();
    let out = cluster(
        &sim,
        &[
            "commit",
            "--cluster",
            "--source",
            "shop",
            "-f",
            bad.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Not_A_Name"), "{err}");
    assert_eq!(log_objects(&sim), Vec::<Value>::new(), "nothing written");
}

/// Text that compresses about as badly as random data (xorshift over base64's alphabet).
fn incompressible(len: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALPHABET[(x % 62) as usize] as char
        })
        .collect()
}

#[test]
fn a_revision_larger_than_one_secret_is_split_and_imported_whole() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let sim = Sim::start(root);
    sim.kubectl(&["create", "namespace", "driftd"]);
    let (daemon, db) = replica(&sim, root, "replica");
    // Two ConfigMaps of 600 kB each: about 1 MB gzipped and base64-encoded, more than one
    // Secret may hold.
    let big = root.join("big.yaml");
    let docs: Vec<String> = (0..2)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big-{i}\n  namespace: default\ndata:\n  blob: {}\n",
                incompressible(600_000, i + 1)
            )
        })
        .collect();
    std::fs::write(&big, docs.join("---\n")).unwrap();
    let out = ok(cluster(
        &sim,
        &[
            "commit",
            "--cluster",
            "--source",
            "big",
            "-f",
            big.to_str().unwrap(),
        ],
    ));
    assert!(
        out.starts_with("revision 1 of source big (2 objects)"),
        "{out}"
    );
    let mut names: Vec<String> = log_objects(&sim)
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o["metadata"]["name"].as_str().unwrap(),
                o["type"].as_str().unwrap()
            )
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "driftd-sequence driftd.io/sequence.v1",
            "driftd.revision.1 driftd.io/revision.v1",
            "driftd.revision.1-1 driftd.io/chunk.v1",
        ]
    );
    // Imported whole: both objects desired (and missing: nobody applied them).
    wait_for("both big ConfigMaps reported missing", T, || {
        let drift = daemon.drift("?class=missing");
        (find(&drift, "ConfigMap", "big-0").is_some()
            && find(&drift, "ConfigMap", "big-1").is_some())
        .then_some(())
    });
    let history = ok(driftd(&[
        "history",
        "--db",
        db.to_str().unwrap(),
        "--source",
        "big",
        "--format",
        "json",
    ]));
    let history: Value = serde_json::from_str(&history).unwrap();
    assert_eq!(history[0]["object_count"], 2, "{history:#}");
}

/// The objects of revision record `name` as the log holds them: the Secret's `record` is
/// the payload JSON, gzipped and base64-encoded (Helm's encoding), small enough here to be
/// one part.
fn record_objects(sim: &Sim, name: &str) -> Vec<Value> {
    use base64::Engine as _;
    use std::io::Read as _;
    let secret = sim.kubectl_json(&["get", "secret", name, "-n", "driftd", "-o", "json"]);
    let b64 = base64::engine::general_purpose::STANDARD;
    let data = b64
        .decode(secret["data"]["record"].as_str().unwrap())
        .unwrap();
    let gzipped = b64.decode(&data).unwrap();
    let mut json = String::new();
    flate2::read::GzDecoder::new(&gzipped[..])
        .read_to_string(&mut json)
        .unwrap();
    let record: Value = serde_json::from_str(&json).unwrap();
    record["objects"].as_array().unwrap().clone()
}

/// Custom kinds whose CRDs someone else installed: no CRD in the input says their scope, so
/// `commit --cluster` asks the cluster's discovery, and the log records a cluster-scoped
/// kind's object without the namespace `-n` would give a namespaced one.
#[test]
fn commit_to_the_cluster_takes_custom_kinds_scopes_from_discovery() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "driftd"]);
    sim.kubectl(&["create", "namespace", "shop"]);
    let crd = |plural: &str, kind: &str, scope: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
             metadata:\n  name: {plural}.cert-manager.io\nspec:\n  group: cert-manager.io\n\
             \x20 scope: {scope}\n  names:\n    plural: {plural}\n    kind: {kind}\n\
             \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n\
             \x20   schema:\n      openAPIV3Schema:\n        type: object\n\
             \x20       x-kubernetes-preserve-unknown-fields: true\n"
        )
    };
    let crds = dir.path().join("crds.yaml");
    std::fs::write(
        &crds,
        format!(
            "{}---\n{}",
            crd("clusterissuers", "ClusterIssuer", "Cluster"),
            crd("issuers", "Issuer", "Namespaced")
        ),
    )
    .unwrap();
    sim.kubectl(&["apply", "-f", crds.to_str().unwrap()]);
    let manifest = dir.path().join("issuers.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: cert-manager.io/v1\nkind: ClusterIssuer\nmetadata:\n  name: letsencrypt\n\
         spec:\n  acme: {}\n---\napiVersion: cert-manager.io/v1\nkind: Issuer\n\
         metadata:\n  name: local\nspec:\n  selfSigned: {}\n",
    )
    .unwrap();
    let out = cluster(
        &sim,
        &[
            "commit",
            "--cluster",
            "--source",
            "shop",
            "-n",
            "shop",
            "-f",
            manifest.to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("no CustomResourceDefinition"), "{stderr}");
    let mut keys: Vec<(String, Option<String>)> = record_objects(&sim, "driftd.revision.1")
        .iter()
        .map(|o| {
            let key = &o["key"];
            (
                key["kind"].as_str().unwrap().to_string(),
                key["namespace"].as_str().map(String::from),
            )
        })
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            ("ClusterIssuer".to_string(), None),
            ("Issuer".to_string(), Some("shop".to_string()))
        ]
    );
}
