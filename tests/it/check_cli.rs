//! `driftd check` through the real binary on fixture pairs in tests/fixtures/check/.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DRIFTD: &str = env!("CARGO_BIN_EXE_driftd");

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/check")
        .join(rel)
}

fn check(args: &[&str]) -> Output {
    Command::new(DRIFTD)
        .arg("check")
        .args(args)
        .env_remove("DRIFTD_CHECK_HASH_KEY")
        .output()
        .expect("driftd runs")
}

fn pair(dir: &str) -> Vec<String> {
    vec![
        "--desired".into(),
        fixture(&format!("{dir}/desired.yaml"))
            .display()
            .to_string(),
        "--live".into(),
        fixture(&format!("{dir}/live.json")).display().to_string(),
    ]
}

fn run(args: Vec<String>) -> Output {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    check(&refs)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_of(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(o)))
}

#[test]
fn in_sync_pair_exits_0() {
    let o = run(pair("in_sync"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "no drift");

    let mut args = pair("in_sync");
    args.extend(["--format".into(), "json".into()]);
    let o = run(args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json_of(&o), json!({"objects": []}));
}

#[test]
fn drift_pair_exits_1_with_the_documented_json_shape() {
    let mut args = pair("drift");
    args.extend(["--format".into(), "json".into()]);
    let o = run(args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report = json_of(&o);
    let objects = report["objects"].as_array().unwrap();
    let ids: Vec<(String, String)> = objects
        .iter()
        .map(|o| {
            for key in [
                "apiVersion",
                "kind",
                "namespace",
                "name",
                "class",
                "changes",
            ] {
                assert!(o.get(key).is_some(), "object lacks {key}: {o}");
            }
            (
                format!(
                    "{}/{}",
                    o["kind"].as_str().unwrap(),
                    o["name"].as_str().unwrap()
                ),
                o["class"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        ids,
        vec![
            ("Deployment/web".to_string(), "modified".to_string()),
            ("Service/web".to_string(), "modified".to_string()),
            ("Secret/db".to_string(), "modified".to_string()),
            ("ConfigMap/settings".to_string(), "missing".to_string()),
        ]
    );
    let dep = &objects[0];
    assert_eq!(dep["apiVersion"], "apps/v1");
    assert_eq!(dep["namespace"], "shop");
    let changes: Vec<(&str, &str)> = dep["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c["op"].as_str().unwrap()))
        .collect();
    assert_eq!(
        changes,
        vec![
            ("/spec/replicas", "replace"),
            ("/spec/template/spec/containers/0/image", "replace"),
            ("/spec/template/spec/containers/2", "remove"),
        ]
    );
    let image = &dep["changes"][1];
    assert_eq!(image["desired"], "registry.example.com/web:1.4.2");
    assert_eq!(image["live"], "registry.example.com/web:1.4.3-hotfix");
    assert_eq!(image["manager"], "kubectl-edit");
    assert_eq!(image["changed_at"], "2026-11-29T22:14:05Z");
    let extra = &dep["changes"][2];
    assert_eq!(extra["desired"], Value::Null);
    assert_eq!(extra["live"]["name"], "debug");

    // int-or-string keeps its type: 8080 vs "8080" is drift.
    let port = &objects[1]["changes"][0];
    assert_eq!(
        (port["desired"].clone(), port["live"].clone()),
        (json!(8080), json!("8080"))
    );
    // The default namespace fills a desired object without one.
    assert_eq!(objects[3]["namespace"], "default");
    assert_eq!(objects[3]["changes"], json!([]));
}

#[test]
fn secret_values_never_reach_the_output() {
    for format in ["json", "table"] {
        let mut args = pair("drift");
        args.extend(["--format".into(), format.into()]);
        let o = run(args);
        assert_eq!(o.status.code(), Some(1));
        let all = stdout(&o) + &stderr(&o);
        for plain in ["hunter2", "hunter3", "aHVudGVyMg", "aHVudGVyMw"] {
            assert!(
                !all.contains(plain),
                "{plain} leaked in {format} output:\n{all}"
            );
        }
        assert!(all.contains("hmac"), "{all}");
    }
    let mut args = pair("drift");
    args.extend(["--format".into(), "json".into()]);
    let o = run(args);
    let secret = &json_of(&o)["objects"][2]["changes"][0];
    // Reported where the manifest sets it (stringData), hashed like the stored data value.
    assert_eq!(secret["path"], "/stringData/password");
    let (d, l) = (
        secret["desired"]["hmac"].as_str().unwrap(),
        secret["live"]["hmac"].as_str().unwrap(),
    );
    assert_eq!((d.len(), l.len()), (16, 16));
    assert_ne!(d, l, "different values hash differently");
}

#[test]
fn hash_key_makes_output_reproducible() {
    let mut args = pair("drift");
    args.extend([
        "--format".into(),
        "json".into(),
        "--hash-key".into(),
        "golden".into(),
    ]);
    let a = run(args.clone());
    let b = run(args);
    assert_eq!(a.status.code(), Some(1));
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn table_has_one_row_per_change() {
    let o = run(pair("drift"));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["OBJECT", "FIELD", "DESIRED", "LIVE", "MANAGER"]);
    let image = lines
        .iter()
        .find(|l| l.contains("containers[name=app].image"))
        .expect("image row");
    let cols: Vec<&str> = image.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "Deployment.apps",
            "shop/web",
            "spec.template.spec.containers[name=app].image",
            "registry.example.com/web:1.4.2",
            "registry.example.com/web:1.4.3-hotfix",
            "kubectl-edit"
        ]
    );
    let port = lines.iter().find(|l| l.contains("targetPort")).unwrap();
    assert!(
        port.contains(" 8080 ") && port.contains("\"8080\""),
        "{port}"
    );
    assert!(lines
        .iter()
        .any(|l| l.starts_with("ConfigMap default/settings") && l.contains("<absent>")));
    // header + 6 changes, blank line, summary
    assert_eq!(lines.len(), 9, "{out}");
    assert!(
        lines[8].starts_with("4 object(s) drift, 6 difference(s)"),
        "{out}"
    );
}

#[test]
fn rules_file_hides_matching_differences() {
    let mut args = pair("drift");
    args.extend([
        "--format".into(),
        "json".into(),
        "--rules".into(),
        fixture("drift/rules.toml").display().to_string(),
    ]);
    let o = run(args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let dep = &json_of(&o)["objects"][0];
    let paths: Vec<&str> = dep["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/spec/template/spec/containers/0/image"]);
    assert_eq!(
        dep["ignored"],
        json!([{"rule": "ignore[0] (\"on-call debugging\")", "count": 2}])
    );
}

#[test]
fn hpa_in_the_input_owns_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let hpa = dir.path().join("hpa.yaml");
    std::fs::write(
        &hpa,
        "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: web, namespace: shop}\n\
         spec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}\n  minReplicas: 2\n  maxReplicas: 10\n",
    )
    .unwrap();
    let live = dir.path().join("live.json");
    let mut list: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("drift/live.json")).unwrap())
            .unwrap();
    let mut live_hpa: Value = serde_json::from_str(
        r#"{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"web","namespace":"shop"},
            "spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":2,"maxReplicas":10}}"#,
    )
    .unwrap();
    // As the server stores it: with its defaults (the cpu metric, as no metric is given).
    driftd_sim::server_defaults::as_created(
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        &mut live_hpa,
    );
    live_hpa["status"] = json!({"currentReplicas": 5});
    list["items"].as_array_mut().unwrap().push(live_hpa);
    std::fs::write(&live, serde_json::to_string(&list).unwrap()).unwrap();
    let o = check(&[
        "--desired",
        fixture("drift/desired.yaml").to_str().unwrap(),
        hpa.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report = json_of(&o);
    let dep = &report["objects"][0];
    assert_eq!(dep["name"], "web");
    assert!(
        !dep["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["path"] == "/spec/replicas"),
        "{dep}"
    );
    assert!(!report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["kind"] == "HorizontalPodAutoscaler"));
}

#[test]
fn errors_exit_2_and_name_the_input() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.yaml");
    let o = check(&[
        "--desired",
        missing.to_str().unwrap(),
        "--live",
        fixture("in_sync/live.json").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope.yaml"), "{}", stderr(&o));

    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: ConfigMap\nmetadata: {name: b}\n").unwrap();
    let o = check(&[
        "--desired",
        bad.to_str().unwrap(),
        "--live",
        fixture("in_sync/live.json").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("bad.yaml") && err.contains("document 1"),
        "{err}"
    );

    let typo = dir.path().join("typo.yaml");
    std::fs::write(
        &typo,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations: {driftd.io/ignore: \"data/x\"}\n",
    )
    .unwrap();
    let o = check(&[
        "--desired",
        typo.to_str().unwrap(),
        "--live",
        fixture("in_sync/live.json").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("typo.yaml") && err.contains("document 0") && err.contains("driftd.io/ignore"),
        "{err}"
    );

    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[ignore]]\nreason = \"sidecars\"\npointers = [\"spec/containers\"]\n",
    )
    .unwrap();
    let mut args = pair("drift");
    args.extend(["--rules".into(), rules.display().to_string()]);
    let o = run(args);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("rules.toml") && err.contains("ignore[0]") && err.contains("pointers[0]"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn the_daemon_config_file_serves_as_rules_file() {
    // `serve --config` and `check --rules` share one file: the example config plus the rule.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("driftd.toml");
    let example = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml"),
    )
    .unwrap();
    let rules = std::fs::read_to_string(fixture("drift/rules.toml")).unwrap();
    std::fs::write(&config, format!("{example}\n{rules}")).unwrap();
    let mut args = pair("drift");
    args.extend([
        "--format".into(),
        "json".into(),
        "--rules".into(),
        config.display().to_string(),
    ]);
    let o = run(args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        json_of(&o)["objects"][0]["ignored"],
        json!([{"rule": "ignore[0] (\"on-call debugging\")", "count": 2}])
    );
}

/// The Widget CRD with `spec.size` defaulting to `default`, as `kubectl get -o json` shows
/// it once kube-apiserver has defaulted it (`names.singular`, `names.listKind` and
/// `conversion.strategy: None`: `SetDefaults_CustomResourceDefinitionSpec` in
/// apiextensions-apiserver `pkg/apis/apiextensions/v1/defaults.go`).
fn widget_crd(default: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                      "listKind": "WidgetList"},
            "conversion": {"strategy": "None"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "string", "default": default}}}}}}}]}})
}

#[test]
fn a_crd_default_changed_live_is_drift_of_the_crd_not_of_its_objects() {
    let dir = tempfile::tempdir().unwrap();
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"}, "spec": {}});
    let desired = dir.path().join("desired.json");
    let list = |items: Vec<Value>| json!({"apiVersion": "v1", "kind": "List", "items": items});
    std::fs::write(
        &desired,
        list(vec![widget_crd("small"), widget.clone()]).to_string(),
    )
    .unwrap();
    // The widget was created while the CRD said `small`, so it stored `small` (defaulting
    // only fills absent fields: apiextensions-apiserver
    // `pkg/apiserver/schema/defaulting/algorithm.go`); someone then edited the CRD.
    let mut stored = widget;
    stored["spec"]["size"] = json!("small");
    let live = dir.path().join("live.json");
    std::fs::write(&live, list(vec![widget_crd("large"), stored]).to_string()).unwrap();
    let o = check(&[
        "--desired",
        desired.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report = json_of(&o);
    let drifting: Vec<&str> = report["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(drifting, ["CustomResourceDefinition"], "{report:#}");
    let paths: Vec<&str> = report["objects"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(
        paths.iter().all(|p| p.starts_with("/spec/versions")),
        "{report:#}"
    );
}
