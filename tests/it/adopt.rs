//! `driftd adopt` end to end: a commented multi-document manifest committed and applied
//! with the real kubectl, hand-edited live with kubectl (`set image`, `scale`, `label`), and
//! adopted back: the diff first with nothing written, then `--write`, after which every
//! other line of the file is byte for byte the original and `driftd check` of the file
//! against the live objects finds no drift. A Secret value changed live is refused without
//! the value being printed, and a refused run writes nothing; an object committed from a
//! file not given with `-f` is reported.

use crate::plan::{keyed_config, run, text};
use crate::scaffold::*;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const APP: &str = "\
# The shop's storefront. Owned by team shop; see the runbook before scaling.
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web   # the Service selects it by app
  namespace: shop
  labels:
    app: web
    tier: 'front'
spec:
  replicas: 2 # two is enough off-season
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      # the storefront itself
      - name: web
        image: \"nginx:1.27\"   # pinned
        ports:
          - containerPort: 80
---
# Credentials, rotated by the secret manager.
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: shop
  labels:
    rotation: monthly
stringData:
  password: first-secret-value
";

const EXTRA: &str = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: extra
  namespace: shop
data:
  mode: blue
";

/// The newest drift episode `/history` lists for `kind` `name` once `ready` says it is as
/// awaited.
fn episode_of(daemon: &Daemon, kind: &str, name: &str, ready: impl Fn(&Value) -> bool) -> Value {
    wait_for(
        &format!("/history listing {kind}/{name} as awaited"),
        Duration::from_secs(30),
        || {
            let history: Value = serde_json::from_str(&daemon.get("/history").1).ok()?;
            let episode = history["episodes"]
                .as_array()?
                .iter()
                .find(|e| e["object"]["kind"] == kind && e["object"]["name"] == name)?
                .clone();
            ready(&episode).then_some(episode)
        },
    )
}

#[test]
fn adopt_writes_live_values_into_the_manifest_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let config = keyed_config(dir.path(), "");
    let sim = Sim::start(dir.path());
    let manifests = dir.path().join("deploy");
    std::fs::create_dir(&manifests).unwrap();
    let app = manifests.join("app.yaml");
    std::fs::write(&app, APP).unwrap();
    std::fs::write(manifests.join("extra.yaml"), EXTRA).unwrap();
    let db = dir.path().join("driftd.db");
    let db = db.to_str().unwrap();
    let manifests_arg = manifests.to_str().unwrap();
    let out = run(
        &["commit", "--db", db, "--source", "app", "-f", manifests_arg],
        None,
        &config,
    );
    assert!(out.status.success(), "{:?}", text(&out));
    sim.kubectl(&["apply", "--server-side", "-f", manifests_arg]);
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();

    let adopt = |extra: &[&str]| {
        let mut args = vec![
            "adopt",
            "--db",
            db,
            "--source",
            "app",
            "-f",
            app.to_str().unwrap(),
        ];
        args.extend(extra);
        run(&args, Some(&sim.kubeconfig), &config)
    };
    let out = adopt(&[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("nothing to adopt"), "{stdout}");

    // Hand edits, as on-call makes them.
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "web=nginx:1.28",
    ]);
    sim.kubectl(&["-n", "shop", "scale", "deployment/web", "--replicas=4"]);
    sim.kubectl(&[
        "-n",
        "shop",
        "label",
        "deployment/web",
        "tier=edge",
        "--overwrite",
    ]);
    sim.kubectl(&[
        "-n",
        "shop",
        "label",
        "secret/creds",
        "rotation=weekly",
        "--overwrite",
    ]);
    sim.kubectl(&[
        "-n",
        "shop",
        "patch",
        "configmap/extra",
        "-p",
        r#"{"data":{"mode":"green"}}"#,
    ]);

    // Recorded as drift episodes before anything is adopted.
    episode_of(&daemon, "Deployment", "web", |e| e["closed_at"].is_null());

    // The diff, and nothing written.
    let out = adopt(&[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(
        std::fs::read_to_string(&app).unwrap(),
        APP,
        "a dry run writes nothing"
    );
    let shown = app.display().to_string();
    let shown = shown.trim_start_matches('/');
    assert!(
        stdout.contains(&format!("--- a/{shown}\n+++ b/{shown}\n")),
        "{stdout}"
    );
    for line in [
        "-    tier: 'front'",
        "+    tier: 'edge'",
        "-  replicas: 2 # two is enough off-season",
        "+  replicas: 4 # two is enough off-season",
        "-        image: \"nginx:1.27\"   # pinned",
        "+        image: \"nginx:1.28\"   # pinned",
        "-    rotation: monthly",
        "+    rotation: weekly",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "{line:?} not in:\n{stdout}"
        );
    }
    // The ConfigMap came from a file not given with -f: reported, not skipped silently.
    let extra = manifests.join("extra.yaml");
    assert!(
        stdout.contains(&format!(
            "not adopted: ConfigMap shop/extra was committed from {}: document 0, which is not among -f",
            extra.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("dry run: nothing written"), "{stdout}");
    assert_eq!(
        out.status.code(),
        Some(1),
        "something was left: {stdout}{stderr}"
    );

    let out = adopt(&["--write"]);
    let (stdout, stderr) = text(&out);
    assert!(
        stdout.contains(&format!("wrote {}", app.display())),
        "{stdout}{stderr}"
    );
    assert!(stdout.contains("driftd commit --source app"), "{stdout}");
    let after = std::fs::read_to_string(&app).unwrap();
    let before: Vec<&str> = APP.lines().collect();
    let now: Vec<&str> = after.lines().collect();
    assert_eq!(before.len(), now.len(), "{after}");
    let changed: Vec<(usize, &str)> = (0..before.len())
        .filter(|&i| before[i] != now[i])
        .map(|i| (i + 1, now[i]))
        .collect();
    assert_eq!(
        changed,
        vec![
            (14, "    tier: 'edge'"),
            (16, "  replicas: 4 # two is enough off-season"),
            (27, "        image: \"nginx:1.28\"   # pinned"),
            (38, "    rotation: weekly"),
        ],
        "every other line stays byte for byte"
    );

    // The edited file against the live objects: in sync.
    let live = dir.path().join("live.json");
    std::fs::write(
        &live,
        sim.kubectl(&[
            "-n",
            "shop",
            "get",
            "deployment,secret",
            "-o",
            "json",
            "--show-managed-fields",
        ]),
    )
    .unwrap();
    let ns = dir.path().join("ns.json");
    std::fs::write(
        &ns,
        sim.kubectl(&["get", "namespace", "shop", "-o", "json"]),
    )
    .unwrap();
    let out = driftd(&[
        "check",
        "--desired",
        app.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        ns.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "check finds drift:\n{stdout}{stderr}"
    );
    assert!(stdout.contains("no drift"), "{stdout}");

    // Committed, the source has nothing left to adopt in this file.
    let out = run(
        &["commit", "--db", db, "--source", "app", "-f", manifests_arg],
        None,
        &config,
    );
    assert!(out.status.success(), "{:?}", text(&out));
    // The commit ended the drift it adopted as `adopted`, by whoever ran adopt; the
    // ConfigMap it did not adopt still drifts.
    let adopter = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    for kind in ["Deployment", "Secret"] {
        let name = if kind == "Secret" { "creds" } else { "web" };
        let ended = episode_of(&daemon, kind, name, |e| !e["closed_at"].is_null());
        assert_eq!(
            (ended["ended"].as_str(), ended["ended_by"].as_str()),
            (Some("adopted"), Some(adopter.as_str())),
            "{ended}"
        );
    }
    let extra = episode_of(&daemon, "ConfigMap", "extra", |_| true);
    assert!(extra["closed_at"].is_null(), "{extra}");
    let out = adopt(&["--object", "Deployment/shop/web"]);
    assert!(
        text(&out).0.contains("nothing to adopt"),
        "{:?}",
        text(&out)
    );

    secret_values_are_refused_unprinted(&sim, &app, &adopt);
}

fn secret_values_are_refused_unprinted(
    sim: &Sim,
    app: &Path,
    adopt: &dyn Fn(&[&str]) -> std::process::Output,
) {
    let committed = std::fs::read_to_string(app).unwrap();
    sim.kubectl(&[
        "-n",
        "shop",
        "patch",
        "secret/creds",
        "-p",
        r#"{"stringData":{"password":"second-secret-value"}}"#,
    ]);
    sim.kubectl(&[
        "-n",
        "shop",
        "label",
        "secret/creds",
        "rotation=daily",
        "--overwrite",
    ]);
    let secret_object = ["--object", "Secret/shop/creds"];
    let out = adopt(&[&secret_object[..], &["--write"]].concat());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "refused: Secret shop/creds ({}: document 2): field stringData.password: a Secret value",
            app.display()
        )),
        "{stdout}"
    );
    assert!(stdout.contains("nothing written"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(app).unwrap(),
        committed,
        "a refused run writes nothing"
    );
    for value in [
        "second-secret-value",
        "c2Vjb25kLXNlY3JldC12YWx1ZQ",
        "first-secret-value",
    ] {
        assert!(
            !stdout.contains(value) && !stderr.contains(value),
            "{value} shown:\n{stdout}{stderr}"
        );
    }
    // A file edited since the commit is not what adopt's paths point into: it stops,
    // naming the file, the document and the object, and writes nothing.
    let edited = committed.replace("rotation: weekly", "rotation: hourly");
    std::fs::write(app, &edited).unwrap();
    let out = adopt(&[&secret_object[..], &["--write", "--partial"]].concat());
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: document 2: Secret shop/creds: the file differs from revision",
            app.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(app).unwrap(), edited);
    std::fs::write(app, &committed).unwrap();
    // An object the source does not have is an error too.
    let out = adopt(&["--object", "Deployment/shop/nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("has no object Deployment/shop/nope"),
        "{:?}",
        text(&out)
    );

    // With --partial the label is adopted and the value stays drift.
    let out = adopt(&[&secret_object[..], &["--write", "--partial"]].concat());
    let (stdout, stderr) = text(&out);
    assert!(stdout.contains("wrote"), "{stdout}{stderr}");
    let after = std::fs::read_to_string(app).unwrap();
    assert_eq!(
        after,
        committed.replace("rotation: weekly", "rotation: daily")
    );
    assert!(!stdout.contains("second-secret-value") && !after.contains("second-secret-value"));
}

/// A Helm release has no manifest file to edit: adopt names the values key to set when exactly
/// one key of the release's values holds the committed value, and refuses the rest with why.
#[test]
fn a_helm_release_gets_the_values_key_or_a_refusal_with_the_reason() {
    use crate::helm::{applied_objects, apply, record, release_secret};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("driftd.db");
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
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "web=nginx:1.17",
    ]);
    sim.kubectl(&["-n", "shop", "scale", "deployment/web", "--replicas=3"]);
    web_when(&daemon, "web modified", |w| w["class"] == "modified");
    let out = std::process::Command::new(DRIFTD)
        .args([
            "adopt",
            "--db",
            db.to_str().unwrap(),
            "--source",
            "helm:shop/web",
            "--write",
        ])
        .env("KUBECONFIG", &sim.kubeconfig)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains(
            "refused: Deployment.apps shop/web: field spec.template.spec.containers[name=web].image \
             (live: \"nginx:1.17\"): source helm:shop/web is a Helm release"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("no key of the release's values holds the committed value"),
        "{stdout}"
    );
    // The chart's values have `replicaCount: 1` (the fixture's release), the only key
    // holding the manifest's `replicas: 1`; the user's values (a password) are never shown.
    assert!(
        stdout.contains(
            "Deployment.apps shop/web: field spec.replicas (live: 3): values key `replicaCount` \
             of release shop/web holds the committed value, and no other key does: `helm upgrade \
             web -n shop --reuse-values --set replicaCount=3`"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("values-are-secret") && !stderr.contains("values-are-secret"));
    assert!(stdout.contains("nothing written"), "{stdout}");
}

/// A Pulumi stack has no manifest file either: adopt lists the resource arguments to change
/// in the program, and writes nothing.
#[test]
fn a_pulumi_stack_gets_the_program_change_to_make() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("driftd.db");
    let db = db.to_str().unwrap();
    let export = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pulumi/stack-export.json");
    let out = driftd(&["import", "pulumi", "--db", db, export.to_str().unwrap()]);
    assert!(out.status.success(), "{:?}", text(&out));
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "shop"]);
    // The stack's ConfigMap, as `pulumi up` created it (its inputs in the fixture).
    let config_map = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "web-config-6f2a1b0c", "namespace": "shop",
                     "annotations": {"pulumi.com/autonamed": "true"},
                     "labels": {"app.kubernetes.io/managed-by": "pulumi"}},
        "data": {"FEATURE_FLAGS": "checkout-v2,wishlist", "LOG_LEVEL": "info"},
    });
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(&config_map.to_string()));
    assert!(out.status.success(), "{:?}", text(&out));
    sim.merge_patch(
        "shop",
        &["configmap/web-config-6f2a1b0c"],
        &serde_json::json!({"data": {"LOG_LEVEL": "debug"}}),
    );
    let out = std::process::Command::new(DRIFTD)
        .args([
            "adopt",
            "--db",
            db,
            "--source",
            "pulumi:shop/dev",
            "--object",
            "ConfigMap/shop/web-config-6f2a1b0c",
        ])
        .env("KUBECONFIG", &sim.kubeconfig)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("is a Pulumi stack: adopt does not edit programs"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "  ConfigMap shop/web-config-6f2a1b0c (resources[3] of the stack state {}): set `data.LOG_LEVEL` to \"debug\"",
            export.display()
        )),
        "{stdout}"
    );
}
