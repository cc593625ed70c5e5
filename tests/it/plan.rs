//! Apply order and reconcile end to end: `driftd plan` on a chart-like source (Namespace,
//! ServiceAccount, Secret, ConfigMap, Service, Deployment, CRD and a custom resource,
//! depends-on annotations) in text and JSON; a cycle and a missing dependency refused with
//! the names; `--apply` holding an object back until a dependency in the cluster is
//! current (up to `--timeout`); `driftd reconcile` creating the source in plan order
//! (resourceVersions at the simulator prove the order), showing a drift's diffs without
//! changing anything, stopping at a field-manager conflict unless `--force-conflicts`,
//! converging it so the daemon reports everything in sync, and deleting what the next
//! revision dropped only with `--prune`. The daemon's own remediation of the same chart is
//! in `remediation.rs`.

use crate::scaffold::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

pub(crate) const T: Duration = Duration::from_secs(60);

/// The chart: the Secret waits for the ConfigMap and the Service for the Deployment
/// (against Helm's kind order), the Widget for its CRD, everything for the Namespace.
pub(crate) const CHART: &str = r#"
apiVersion: v1
kind: Namespace
metadata:
  name: shop
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web
  namespace: shop
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: shop
  annotations:
    config.kubernetes.io/depends-on: /namespaces/shop/ConfigMap/settings
data:
  password: Zmlyc3Qtc2VjcmV0LXZhbHVl # first-secret-value
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: shop
data:
  mode: production
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
  annotations:
    config.kubernetes.io/depends-on: apps/namespaces/shop/Deployment/web
spec:
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      serviceAccountName: web
      containers:
      - name: web
        image: nginx:1.27
        envFrom:
        - secretRef:
            name: creds
        - configMapRef:
            name: settings
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: shop
spec:
  size: 3
"#;

/// The order the rules give (see the chart's comment).
pub(crate) const ORDER: &[(&str, &str)] = &[
    ("Namespace", "shop"),
    ("ServiceAccount", "web"),
    ("ConfigMap", "settings"),
    ("Secret", "creds"),
    ("CustomResourceDefinition", "widgets.example.com"),
    ("Deployment", "web"),
    ("Service", "web"),
    ("Widget", "w1"),
];

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `driftd ARGS` with the simulator's kubeconfig (if any) and the config's keys.
pub(crate) fn run(args: &[&str], kubeconfig: Option<&Path>, config: &Path) -> Output {
    let mut cmd = Command::new(DRIFTD);
    cmd.args(args).env("DRIFTD_CONFIG", config);
    match kubeconfig {
        Some(k) => cmd.env("KUBECONFIG", k),
        None => cmd.env("KUBECONFIG", "/nonexistent/kubeconfig"),
    };
    cmd.output().unwrap()
}

/// `driftd ARGS --format json`, which must succeed, as JSON.
pub(crate) fn run_json(args: &[&str], kubeconfig: Option<&Path>, config: &Path) -> Value {
    let args: Vec<&str> = args.iter().copied().chain(["--format", "json"]).collect();
    let out = run(&args, kubeconfig, config);
    assert!(out.status.success(), "{args:?}: {:?}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

pub(crate) fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Random key files and a daemon config naming them: committed Secret values are kept
/// sealed, so reconcile can restore them.
pub(crate) fn keyed_config(dir: &Path, extra: &str) -> PathBuf {
    let hash: [u8; 32] = rand::random();
    let encryption: [u8; 32] = rand::random();
    std::fs::write(dir.join("hash.key"), hash).unwrap();
    std::fs::write(dir.join("encryption.key"), encryption).unwrap();
    write_config(
        dir,
        &format!(
            "[secrets]\nhash_key_file = \"{}\"\nencryption_key_file = \"{}\"\n{extra}",
            dir.join("hash.key").display(),
            dir.join("encryption.key").display()
        ),
    )
}

pub(crate) fn commit_chart(dir: &Path, config: &Path, source: &str, chart: &str) -> Output {
    let file = write(dir, &format!("{}.yaml", source.replace(':', "_")), chart);
    run(
        &[
            "commit",
            "--db",
            dir.join("driftd.db").to_str().unwrap(),
            "--source",
            source,
            "-f",
            file.to_str().unwrap(),
        ],
        None,
        config,
    )
}

/// `(kind, name)` of each numbered line of the plan table (up to the first blank line).
fn table_order(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            words.next()?.parse::<usize>().ok()?;
            let kind = words.next()?.split('.').next()?.to_string();
            let name = words.next()?.rsplit('/').next()?.to_string();
            Some((kind, name))
        })
        .collect()
}

pub(crate) fn want() -> Vec<(String, String)> {
    ORDER
        .iter()
        .map(|(k, n)| (k.to_string(), n.to_string()))
        .collect()
}

/// Hand edits by other field managers: a new image (`kubectl set image`), the ConfigMap
/// deleted, the Secret's value changed (`kubectl patch`).
pub(crate) fn drift_chart(sim: &Sim) {
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "web=nginx:1.28",
    ]);
    sim.kubectl(&["-n", "shop", "delete", "configmap", "settings"]);
    sim.merge_patch(
        "shop",
        &["secret", "creds"],
        // hand-edited-value
        &serde_json::json!({"data": {"password": "aGFuZC1lZGl0ZWQtdmFsdWU="}}),
    );
}

/// `Some` once the daemon reports every object of the chart in sync and nothing drifting.
pub(crate) fn chart_in_sync(daemon: &Daemon) -> Option<()> {
    let in_sync = daemon.drift("?class=in_sync")["objects"].as_array()?.len();
    (in_sync == ORDER.len() && daemon.drift("")["objects"] == serde_json::json!([])).then_some(())
}

/// The resourceVersion of each object of the chart at the simulator, in plan order.
fn resource_versions(sim: &Sim) -> Vec<u64> {
    ORDER
        .iter()
        .map(|(kind, name)| {
            let resource = match *kind {
                "CustomResourceDefinition" => "customresourcedefinitions.apiextensions.k8s.io",
                "Widget" => "widgets.example.com",
                other => other,
            };
            let namespaced = !matches!(*kind, "Namespace" | "CustomResourceDefinition");
            let mut args = vec!["get", resource, name];
            if namespaced {
                args.extend(["-n", "shop"]);
            }
            sim.kubectl_json(&args)["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn plan_orders_a_chart_refuses_cycles_and_missing_dependencies_and_waits_for_external_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = keyed_config(dir.path(), "");
    let db = dir.path().join("driftd.db");
    let out = commit_chart(dir.path(), &config, "chart", CHART);
    assert!(out.status.success(), "{:?}", text(&out));

    // No dependency outside the source: no cluster needed.
    let out = run(
        &["plan", "--db", db.to_str().unwrap(), "--source", "chart"],
        None,
        &config,
    );
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(table_order(&stdout), want(), "{stdout}");
    assert!(
        stdout.contains("Secret shop/creds")
            && stdout.contains("after ConfigMap shop/settings (depends-on)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "after CustomResourceDefinition.apiextensions.k8s.io widgets.example.com (its CRD)"
        ),
        "{stdout}"
    );

    let db_path = db.to_str().unwrap();
    let plan = run_json(
        &["plan", "--db", db_path, "--source", "chart"],
        None,
        &config,
    );
    assert_eq!(plan["source"], "chart");
    let steps = plan["steps"].as_array().unwrap();
    let got: Vec<(String, String)> = steps
        .iter()
        .map(|s| {
            (
                s["kind"].as_str().unwrap().to_string(),
                s["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(got, want());
    let service = &steps[6];
    assert_eq!(service["apiVersion"], "v1");
    assert_eq!(service["depends_on"][0]["kind"], "Deployment");
    assert_eq!(service["depends_on"][0]["because"], "depends-on");
    assert_eq!(service["depends_on"][1]["kind"], "Namespace");
    assert_eq!(service["depends_on"][1]["because"], "namespace");

    // An unknown source: refused, listing the known ones.
    let out = run(
        &["plan", "--db", db.to_str().unwrap(), "--source", "nope"],
        None,
        &config,
    );
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("source \"nope\" not found (known sources: chart)"),
        "{stderr}"
    );

    // A cycle: refused, naming the objects of it.
    let cycle = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: shop\n  \
                 annotations:\n    config.kubernetes.io/depends-on: /namespaces/shop/Secret/b\n\
                 ---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: b\n  namespace: shop\n  \
                 annotations:\n    config.kubernetes.io/depends-on: /namespaces/shop/ConfigMap/a\n";
    let out = commit_chart(dir.path(), &config, "cyclic", cycle);
    assert!(out.status.success(), "{:?}", text(&out));
    let out = run(
        &["plan", "--db", db.to_str().unwrap(), "--source", "cyclic"],
        None,
        &config,
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("dependency cycle: Secret shop/b -> ConfigMap shop/a -> Secret shop/b"),
        "{stderr}"
    );

    // A dependency outside the source: the cluster is asked; none reachable is said so,
    // absent there is an error naming both, present there is fine.
    let external = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n  \
                    annotations:\n    config.kubernetes.io/depends-on: /namespaces/default/Secret/shared\n";
    let out = commit_chart(dir.path(), &config, "external", external);
    assert!(out.status.success(), "{:?}", text(&out));
    let plan_external = |kubeconfig: Option<&Path>| {
        run(
            &["plan", "--db", db.to_str().unwrap(), "--source", "external"],
            kubeconfig,
            &config,
        )
    };
    let out = plan_external(None);
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no cluster reachable"), "{stderr}");

    let sim = Sim::start(dir.path());
    let out = plan_external(Some(&sim.kubeconfig));
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "ConfigMap default/app depends on Secret default/shared, which is neither in the source nor in the cluster"
        ),
        "{stderr}"
    );
    sim.kubectl(&[
        "-n",
        "default",
        "create",
        "secret",
        "generic",
        "shared",
        "--from-literal=k=v",
    ]);
    let out = plan_external(Some(&sim.kubeconfig));
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("after Secret default/shared (depends-on, in the cluster)"),
        "{stdout}"
    );

    // reconcile --apply waits for a dependency to be current, up to --timeout: a CRD in the
    // cluster that is not Established holds back what depends on it.
    let gadgets = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                   metadata:\n  name: gadgets.example.com\nspec:\n  group: example.com\n  \
                   scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget}\n  \
                   versions:\n  - {name: v1, served: true, storage: true, \
                   schema: {openAPIV3Schema: {type: object}}}\n";
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(gadgets));
    assert!(out.status.success(), "{out:?}");
    let established = |status: &str| {
        let patch = serde_json::json!({"status": {"conditions": [{"type": "Established",
            "status": status, "reason": "Test", "message": "set by the test",
            "lastTransitionTime": "2026-12-01T00:00:00Z"}]}});
        sim.kubectl(&[
            "patch",
            "crd",
            "gadgets.example.com",
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ]);
    };
    established("False");
    let waits =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: waits\n  namespace: default\n  \
                 annotations:\n    config.kubernetes.io/depends-on: \
                 apiextensions.k8s.io/CustomResourceDefinition/gadgets.example.com\n";
    let out = commit_chart(dir.path(), &config, "waits", waits);
    assert!(out.status.success(), "{:?}", text(&out));
    let apply_waits = || {
        run(
            &[
                "reconcile",
                "--db",
                db.to_str().unwrap(),
                "--source",
                "waits",
                "--apply",
                "--timeout",
                "1",
            ],
            Some(&sim.kubeconfig),
            &config,
        )
    };
    let out = apply_waits();
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(
            "CustomResourceDefinition.apiextensions.k8s.io gadgets.example.com: not current \
             after 1s: waiting for CustomResourceDefinition \"gadgets.example.com\" to be established"
        ),
        "{stderr}"
    );
    let absent = sim.kubectl_output(&["-n", "default", "get", "configmap", "waits"], None);
    assert!(
        !absent.status.success(),
        "applied before its dependency was current"
    );
    established("True");
    let out = apply_waits();
    assert!(out.status.success(), "{:?}", text(&out));
    sim.kubectl(&["-n", "default", "get", "configmap", "waits"]);
}

#[test]
fn reconcile_applies_in_plan_order_shows_drift_without_changing_it_and_converges_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = keyed_config(dir.path(), "");
    let db = dir.path().join("driftd.db");
    let db = db.to_str().unwrap();
    let sim = Sim::start(dir.path());
    let out = commit_chart(dir.path(), &config, "chart", CHART);
    assert!(out.status.success(), "{:?}", text(&out));
    let reconcile = |extra: &[&str]| {
        let mut args = vec![
            "reconcile",
            "--db",
            db,
            "--source",
            "chart",
            "--timeout",
            "60",
        ];
        args.extend(extra);
        run(&args, Some(&sim.kubeconfig), &config)
    };

    // Nothing live yet: the first apply creates everything, in plan order, waiting for the
    // Deployment's rollout before the Service and for the CRD before the Widget.
    let out = reconcile(&["--apply"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let applied: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("applied "))
        .collect();
    assert_eq!(applied.len(), ORDER.len(), "{stdout}");
    for (line, (kind, name)) in applied.iter().zip(ORDER) {
        assert!(
            line.contains(kind) && line.contains(name),
            "{line} vs {kind} {name}"
        );
    }
    assert!(
        stdout
            .contains("waiting for Deployment.apps shop/web to be current before Service shop/web"),
        "{stdout}"
    );
    // Every object but the Deployment keeps the resourceVersion of its creation; the
    // Deployment's is that of its last rollout status, which came before the Service.
    let rvs = resource_versions(&sim);
    let created: Vec<u64> = rvs
        .iter()
        .enumerate()
        .filter(|(i, _)| ORDER[*i].0 != "Deployment")
        .map(|(_, rv)| *rv)
        .collect();
    assert!(
        created.windows(2).all(|w| w[0] < w[1]),
        "not in plan order: {rvs:?}"
    );
    assert!(rvs[4] < rvs[5] && rvs[5] < rvs[6], "{rvs:?}");
    let deployment = sim.kubectl_json(&["-n", "shop", "get", "deployment", "web"]);
    assert_eq!(
        deployment["status"]["availableReplicas"], 2,
        "{deployment:#}"
    );

    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    wait_for("the chart in sync", T, || chart_in_sync(&daemon));

    // Drift: a new image by hand, the ConfigMap deleted, the Secret's value changed.
    drift_chart(&sim);
    wait_for("three objects drifting", T, || {
        let d = daemon.drift("");
        (d["objects"].as_array()?.len() == 3).then_some(())
    });
    let before = resource_versions_present(&sim);

    // The dry run shows the classes and the differences, and changes nothing.
    let out = reconcile(&[]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(table_order(&stdout), want(), "{stdout}");
    for line in [
        "ConfigMap shop/settings",
        "Secret shop/creds",
        "Deployment.apps shop/web",
    ] {
        let row = stdout.lines().find(|l| l.contains(line)).unwrap();
        assert!(row.contains("missing") || row.contains("modified"), "{row}");
    }
    assert!(
        stdout.contains("nginx:1.27") && stdout.contains("nginx:1.28"),
        "{stdout}"
    );
    assert!(stdout.contains("kubectl-set"), "{stdout}");
    assert!(stdout.contains("dry run: nothing changed"), "{stdout}");
    // The command it suggests is this one with --apply, the database included.
    assert!(
        stdout.contains(&format!("`driftd reconcile --db {db} "))
            && stdout.contains("--source chart --timeout 60 --apply` writes 3 object(s)"),
        "{stdout}"
    );
    for secret in [
        "first-secret-value",
        "hand-edited-value",
        "Zmlyc3Qtc2VjcmV0LXZhbHVl",
        "aGFuZC1lZGl0ZWQtdmFsdWU=",
    ] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout}{stderr}"
        );
    }
    assert_eq!(resource_versions_present(&sim), before);
    let live = sim.kubectl_json(&["-n", "shop", "get", "deployment", "web"]);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.28"
    );

    // While a deploy of the source is in flight (an open intent), --apply refuses.
    let chart_file = dir.path().join("chart.yaml");
    let out = run(
        &[
            "intent",
            "begin",
            "--db",
            db,
            "--source",
            "chart",
            "-f",
            chart_file.to_str().unwrap(),
        ],
        None,
        &config,
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let intent = text(&out).0.trim().to_string();
    let out = reconcile(&["--apply"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("source chart has open intent {intent}")),
        "{stderr}"
    );
    assert_eq!(resource_versions_present(&sim), before);
    let out = run(&["intent", "abort", "--db", db, &intent], None, &config);
    assert!(out.status.success(), "{:?}", text(&out));

    // The undo command `/drift` gives for the deleted ConfigMap brings back that object
    // alone.
    let undo = daemon.drift("?kind=ConfigMap")["objects"][0]["undo"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(
        undo,
        "driftd reconcile --source chart --object ConfigMap/shop/settings --apply"
    );
    let mut args = vec!["reconcile", "--db", db, "--timeout", "60"];
    args.extend(undo.split(' ').skip(2));
    let out = run(&args, Some(&sim.kubeconfig), &config);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let applied: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("applied "))
        .collect();
    assert!(
        applied.len() == 1 && applied[0].starts_with("applied ConfigMap shop/settings "),
        "{stdout}"
    );
    sim.kubectl(&["-n", "shop", "get", "configmap", "settings"]);
    let live = sim.kubectl_json(&["-n", "shop", "get", "deployment", "web"]);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.28",
        "the other objects are left as they are"
    );

    // Applying: the Secret's value, edited by another field manager, is a conflict:
    // reported, not forced, and nothing after it is written.
    let out = reconcile(&["--apply"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("Secret shop/creds: conflict with another field manager")
            && stderr.contains("is owned by \"kubectl-patch\"")
            && stderr.contains("--force-conflicts"),
        "{stderr}"
    );
    assert!(!stderr.contains("hand-edited-value"), "{stderr}");
    let live = sim.kubectl_json(&["-n", "shop", "get", "deployment", "web"]);
    assert_eq!(
        live["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.28"
    );

    // Forced: converges, in plan order, and the daemon sees it all in sync.
    let out = reconcile(&["--apply", "--force-conflicts"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let applied: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("applied "))
        .collect();
    assert_eq!(applied.len(), 2, "{stdout}");
    assert!(applied[0].contains("Secret shop/creds"), "{stdout}");
    assert!(applied[1].contains("Deployment.apps shop/web"), "{stdout}");
    let after = resource_versions(&sim);
    // ConfigMap (index 2) < Secret (3) < Deployment (5): written in that order.
    assert!(after[2] < after[3] && after[3] < after[5], "{after:?}");
    wait_for("the chart in sync again", T, || chart_in_sync(&daemon));
    let out = reconcile(&[]);
    let (stdout, _) = text(&out);
    assert!(
        stdout.contains("writes 0 object(s)"),
        "nothing left to write: {stdout}"
    );

    // The next revision drops the Service: only --prune deletes it.
    let start = CHART.find("apiVersion: v1\nkind: Service\n").unwrap();
    let end = start + CHART[start..].find("---\n").unwrap() + 4;
    let out = commit_chart(
        dir.path(),
        &config,
        "chart",
        &format!("{}{}", &CHART[..start], &CHART[end..]),
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let out = reconcile(&["--apply"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("Service shop/web is live but no longer in revision 2: --prune deletes it"),
        "{stdout}"
    );
    sim.kubectl(&["-n", "shop", "get", "service", "web"]);
    let out = reconcile(&["--apply", "--prune"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("deleted Service shop/web"), "{stdout}");
    let gone = sim.kubectl_output(&["-n", "shop", "get", "service", "web"], None);
    assert!(!gone.status.success());
}

/// `kind/name=resourceVersion` of the chart's namespaced objects that exist, but the
/// Deployment, whose status its rollout keeps writing.
fn resource_versions_present(sim: &Sim) -> Vec<String> {
    let out = sim.kubectl(&[
        "-n",
        "shop",
        "get",
        "serviceaccounts,secrets,configmaps,services,widgets.example.com",
        "-o",
        "jsonpath={range .items[*]}{.kind}/{.metadata.name}={.metadata.resourceVersion} {end}",
    ]);
    let mut v: Vec<String> = out.split_whitespace().map(str::to_string).collect();
    v.sort();
    v
}
