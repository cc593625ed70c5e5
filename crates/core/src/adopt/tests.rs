//! Adopt's edits, driven by the differ's own changes: each test edits a manifest so it
//! equals a live object, checks the edited lines against text written out by hand, that
//! every other line is byte for byte the original, and that the differ then finds no drift.

use super::*;
use crate::diff::{ClusterFacts, CompareInput, Differ};
use crate::manifest::{parse_text, LoadOptions};
use serde_json::{json, Value};

const MANIFEST: &str = "\
# web: the storefront. Owned by team shop.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web   # keep in sync with the Service
  namespace: shop
  labels:
    app: web
    tier: 'front'
  annotations:
    owner: \"shop\"
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
      # the app itself
      - name: app
        image: \"registry.example/web:1.4.0\"
        ports:
          - containerPort: 8080
      - name: proxy
        image: envoy:v1.30   # sidecar
---
# the config
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
  namespace: shop
data:
  mode: blue
  script: |
    echo start
    exec web
---
apiVersion: v1
kind: Secret
metadata:
  name: web-secret
  namespace: shop
  labels:
    app: web
stringData:
  password: hunter2
";

/// The objects of `text`, as `driftd commit` reads them.
fn objects(text: &str) -> Vec<Value> {
    parse_text(text, "web.yaml", &LoadOptions::default())
        .expect("the manifest reads")
        .into_iter()
        .map(|o| o.object)
        .collect()
}

/// What kube-apiserver stores for `desired`: its deterministic defaults applied.
fn served(desired: &Value) -> Value {
    let mut live = desired.clone();
    let api_version = desired["apiVersion"].as_str().unwrap().to_string();
    let kind = desired["kind"].as_str().unwrap().to_string();
    driftd_k8s::defaults::apply(&api_version, &kind, &mut live);
    if kind == "Secret" {
        driftd_k8s::secret::fold_string_data(&mut live);
    }
    live
}

fn differences(desired: &Value, live: &Value) -> Vec<crate::diff::Change> {
    Differ::new(b"test key")
        .compare(&CompareInput {
            desired,
            live: Some(live),
            previous: None,
            facts: &ClusterFacts::default(),
        })
        .changes
}

/// Adopts `live` into document `doc` of `text`: the edited text and the refusals. Asserts
/// that the result reads as a manifest that no longer drifts, except at refused fields.
fn adopt(text: &str, doc: usize, live: &Value) -> (String, Vec<Refusal>) {
    let desired = &objects(text)[doc];
    let changes = differences(desired, live);
    assert!(!changes.is_empty(), "the test's live object drifts");
    let (edits, refused) = edits_for(desired["kind"].as_str().unwrap(), &changes);
    let prefix = locate(
        text,
        doc,
        desired["kind"].as_str().unwrap(),
        desired["metadata"]["name"].as_str().unwrap(),
    )
    .unwrap();
    let out = apply(text, doc, &prefix, &edits).expect("the edits apply");
    let left: Vec<String> = differences(&objects(&out)[doc], live)
        .into_iter()
        .map(|c| c.field)
        .collect();
    let refused_fields: Vec<String> = refused.iter().map(|r| r.field.clone()).collect();
    assert_eq!(
        left, refused_fields,
        "only refused changes still drift:\n{out}"
    );
    (out, refused)
}

/// The lines of `after` that are not the same line of `before` (matched as a diff would),
/// as (removed, added).
fn changed_lines(before: &str, after: &str) -> (Vec<String>, Vec<String>) {
    let diff = similar::TextDiff::from_lines(before, after);
    let mut removed = Vec::new();
    let mut added = Vec::new();
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Delete => removed.push(change.value().to_string()),
            similar::ChangeTag::Insert => added.push(change.value().to_string()),
            similar::ChangeTag::Equal => {}
        }
    }
    (removed, added)
}

fn lines(text: &[&str]) -> Vec<String> {
    text.iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn scalar_changes_rewrite_only_their_tokens() {
    let mut live = served(&objects(MANIFEST)[0]);
    live["spec"]["replicas"] = json!(5);
    live["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!("registry.example/web:1.4.1");
    let (out, refused) = adopt(MANIFEST, 0, &live);
    assert!(refused.is_empty());
    let (removed, added) = changed_lines(MANIFEST, &out);
    assert_eq!(
        removed,
        lines(&[
            "  replicas: 2 # two is enough off-season",
            "        image: \"registry.example/web:1.4.0\"",
        ])
    );
    // The comment after the value and the quoting of the image stay.
    assert_eq!(
        added,
        lines(&[
            "  replicas: 5 # two is enough off-season",
            "        image: \"registry.example/web:1.4.1\"",
        ])
    );
}

#[test]
fn a_field_the_manifest_leaves_to_a_default_is_added_beside_its_siblings() {
    // Fields the manifest does not set are compared at their defaults; changed live, they
    // are written where they sit.
    let mut live = served(&objects(MANIFEST)[0]);
    live["spec"]["revisionHistoryLimit"] = json!(3);
    live["spec"]["template"]["spec"]["containers"][1]["imagePullPolicy"] = json!("Always");
    live["spec"]["strategy"] = json!({"type": "Recreate"});
    let (out, refused) = adopt(MANIFEST, 0, &live);
    assert!(refused.is_empty());
    let (removed, added) = changed_lines(MANIFEST, &out);
    assert_eq!(removed, Vec::<String>::new());
    assert_eq!(
        added,
        // In file order: the container's field after its image, then the new fields of
        // `spec` after its last line.
        lines(&[
            "        imagePullPolicy: Always",
            "  strategy:",
            "    type: Recreate",
            "  revisionHistoryLimit: 3",
        ])
    );
}

#[test]
fn a_field_live_lacks_is_removed_with_its_line() {
    let mut live = served(&objects(MANIFEST)[0]);
    live["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("tier");
    let (out, _) = adopt(MANIFEST, 0, &live);
    let (removed, added) = changed_lines(MANIFEST, &out);
    assert_eq!(removed, lines(&["    tier: 'front'"]));
    assert!(added.is_empty());
}

#[test]
fn list_items_are_found_by_their_merge_key() {
    let mut live = served(&objects(MANIFEST)[0]);
    let containers = live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap();
    // Live lists the proxy first: matched by name, the manifest's order stays.
    containers.swap(0, 1);
    containers[0]["image"] = json!("envoy:v1.31");
    let mut extra = json!({"name": "log", "image": "fluent-bit:3"});
    // The item as the server keeps it: a container's defaults.
    extra["imagePullPolicy"] = json!("IfNotPresent");
    extra["terminationMessagePath"] = json!("/dev/termination-log");
    extra["terminationMessagePolicy"] = json!("File");
    containers.push(extra);
    let (out, _) = adopt(MANIFEST, 0, &live);
    let (removed, added) = changed_lines(MANIFEST, &out);
    assert_eq!(removed, lines(&["        image: envoy:v1.30   # sidecar"]));
    assert_eq!(
        added,
        lines(&[
            "        image: envoy:v1.31   # sidecar",
            "      - name: log",
            "        image: fluent-bit:3",
            "        imagePullPolicy: IfNotPresent",
            "        terminationMessagePath: /dev/termination-log",
            "        terminationMessagePolicy: File",
        ])
    );
}

#[test]
fn a_list_item_live_lacks_is_removed_with_its_lines() {
    let mut live = served(&objects(MANIFEST)[0]);
    live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    let (out, _) = adopt(MANIFEST, 0, &live);
    let (removed, added) = changed_lines(MANIFEST, &out);
    assert_eq!(
        removed,
        lines(&[
            "      - name: proxy",
            "        image: envoy:v1.30   # sidecar"
        ])
    );
    assert!(added.is_empty());
}

#[test]
fn a_multi_line_string_is_written_as_a_literal_block() {
    let mut live = served(&objects(MANIFEST)[1]);
    live["data"]["script"] = json!("echo start\nexport MODE=green\nexec web\n");
    live["data"]["mode"] = json!("yes");
    let (out, _) = adopt(MANIFEST, 1, &live);
    let (removed, added) = changed_lines(MANIFEST, &out);
    assert_eq!(removed, lines(&["  mode: blue"]));
    // `yes` is a boolean to kubectl's YAML 1.1 reader: quoted.
    assert_eq!(added, lines(&["  mode: \"yes\"", "    export MODE=green"]));
}

#[test]
fn secret_values_are_refused_and_its_labels_adopted() {
    let mut live = served(&objects(MANIFEST)[2]);
    live["data"]["password"] = json!("Y29ycmVjdCBob3JzZQ=="); // base64 of "correct horse"
    live["metadata"]["labels"]["app"] = json!("2026");
    let (out, refused) = adopt(MANIFEST, 2, &live);
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].field, "stringData.password");
    assert!(refused[0]
        .reason
        .contains("never writes Secret values in clear"));
    assert!(!out.contains("correct horse") && !out.contains("Y29ycmVjdCBob3JzZQ"));
    let (removed, added) = changed_lines(MANIFEST, &out);
    assert_eq!(removed, lines(&["    app: web"]));
    // A string that reads as a number is quoted.
    assert_eq!(added, lines(&["    app: \"2026\""]));
}

#[test]
fn every_untouched_line_of_a_multi_document_file_stays_byte_for_byte() {
    let mut live = served(&objects(MANIFEST)[0]);
    live["spec"]["replicas"] = json!(3);
    let (out, _) = adopt(MANIFEST, 0, &live);
    let before: Vec<&str> = MANIFEST.split_inclusive('\n').collect();
    let after: Vec<&str> = out.split_inclusive('\n').collect();
    assert_eq!(before.len(), after.len());
    let differing: Vec<usize> = (0..before.len())
        .filter(|&i| before[i] != after[i])
        .collect();
    assert_eq!(
        differing,
        vec![12],
        "only the replicas line (line 13) changes"
    );
}

#[test]
fn json_manifests_take_json_values() {
    let text = "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\"name\": \"c\", \"namespace\": \"shop\"},\n  \"data\": {\"a\": \"1\", \"b\": \"2\"}\n}\n";
    let mut live = served(&objects(text)[0]);
    live["data"]["a"] = json!("one");
    live["data"].as_object_mut().unwrap().remove("b");
    let (out, _) = adopt(text, 0, &live);
    assert_eq!(
        out,
        "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\"name\": \"c\", \"namespace\": \"shop\"},\n  \"data\": {\"a\": \"one\"}\n}\n"
    );
    let parsed: Value = serde_json::from_str(&out).expect("still JSON");
    assert_eq!(parsed["data"], json!({"a": "one"}));
}

#[test]
fn an_object_in_a_list_document_is_found_by_kind_and_name() {
    let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n  data:\n    k: v\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: b\n  data:\n    k: v\n";
    assert_eq!(
        locate(text, 0, "ConfigMap", "b").unwrap(),
        vec!["items", "1"]
    );
    let edits = vec![Edit {
        tokens: vec!["data".into(), "k".into()],
        field: "data.k".into(),
        action: Action::Set(json!("w")),
    }];
    let out = apply(text, 0, &["items".into(), "1".into()], &edits).unwrap();
    assert_eq!(
        out,
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n  data:\n    k: v\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: b\n  data:\n    k: w\n"
    );
    let err = locate(text, 0, "ConfigMap", "c").unwrap_err();
    assert!(err.contains("is not ConfigMap \"c\""), "{err}");
}

#[test]
fn edits_that_cannot_be_made_are_refused_naming_the_field() {
    // Through an alias.
    let text = "kind: ConfigMap\nmetadata:\n  name: x\n  labels: &l {a: b}\n  annotations: *l\n";
    let edits = vec![Edit {
        tokens: vec!["metadata".into(), "annotations".into()],
        field: "metadata.annotations".into(),
        action: Action::Set(json!({"a": "c"})),
    }];
    let err = apply(text, 0, &[], &edits).unwrap_err();
    assert!(err.reason.contains("alias"), "{}", err.reason);
    // A scalar where live has a mapping below it.
    let edits = vec![Edit {
        tokens: vec!["metadata".into(), "name".into(), "x".into()],
        field: "metadata.name.x".into(),
        action: Action::Set(json!(1)),
    }];
    let err = apply(text, 0, &[], &edits).unwrap_err();
    assert!(
        err.reason.contains("has a scalar at metadata.name"),
        "{}",
        err.reason
    );
}

#[test]
fn a_flow_list_is_replaced_in_flow_style() {
    let mut live = served(&objects(MANIFEST)[0]);
    // `args` is an atomic list: one `replace` of the whole list.
    live["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--port", "8081"]);
    let desired = objects(MANIFEST)[0].clone();
    let mut with_args = desired.clone();
    with_args["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["--port", "8080"]);
    let text = MANIFEST.replace(
        "        ports:\n",
        "        args: [\"--port\", \"8080\"]  # flow style\n        ports:\n",
    );
    assert_eq!(objects(&text)[0], with_args);
    let (out, _) = adopt(&text, 0, &live);
    let (removed, added) = changed_lines(&text, &out);
    assert_eq!(
        removed,
        lines(&["        args: [\"--port\", \"8080\"]  # flow style"])
    );
    // Only the flow node is replaced, as flow text: the comment after it stays.
    assert_eq!(
        added,
        lines(&["        args: [\"--port\",\"8081\"]  # flow style"])
    );
}

#[test]
fn a_field_a_previous_revision_set_and_live_still_has_is_written_back() {
    // The previous revision set `revisionHistoryLimit`; this one dropped it; live still has
    // it, so it is drift (`remove`), and adopting it puts it back.
    let desired = objects(MANIFEST)[0].clone();
    let mut previous = desired.clone();
    previous["spec"]["revisionHistoryLimit"] = json!(4);
    let mut live = served(&desired);
    live["spec"]["revisionHistoryLimit"] = json!(4);
    let changes = Differ::new(b"k")
        .compare(&CompareInput {
            desired: &desired,
            live: Some(&live),
            previous: Some(&previous),
            facts: &ClusterFacts::default(),
        })
        .changes;
    assert_eq!(changes.len(), 1, "{changes:?}");
    let (edits, _) = edits_for("Deployment", &changes);
    assert!(
        matches!(&edits[0].action, Action::Set(v) | Action::Add(v) if *v == json!(4)),
        "{edits:?}"
    );
    let out = apply(MANIFEST, 0, &[], &edits).unwrap();
    let (removed, added) = changed_lines(MANIFEST, &out);
    assert!(removed.is_empty());
    assert_eq!(added, lines(&["  revisionHistoryLimit: 4"]));
}

#[test]
fn removals_keep_the_dash_and_refuse_to_empty_a_mapping() {
    let text = "kind: ConfigMap\nmetadata:\n  name: x\nitems:\n- a: 1 # first\n  b: 2\n- only: 3\n";
    let delete = |tokens: &[&str]| Edit {
        tokens: tokens.iter().map(|t| t.to_string()).collect(),
        field: tokens.join("."),
        action: Action::Delete,
    };
    // The first field of an item is on the dash's line: the next one moves up to it.
    let out = apply(text, 0, &[], &[delete(&["items", "0", "a"])]).unwrap();
    assert_eq!(
        out,
        "kind: ConfigMap\nmetadata:\n  name: x\nitems:\n- b: 2\n- only: 3\n"
    );
    let err = apply(text, 0, &[], &[delete(&["items", "1", "only"])]).unwrap_err();
    assert!(err.reason.contains("only field"), "{}", err.reason);
    // A whole item goes with its lines.
    let out = apply(text, 0, &[], &[delete(&["items", "0"])]).unwrap();
    assert_eq!(
        out,
        "kind: ConfigMap\nmetadata:\n  name: x\nitems:\n- only: 3\n"
    );
}

#[test]
fn crlf_files_keep_crlf_line_ends() {
    let text = MANIFEST.replace('\n', "\r\n");
    let mut live = served(&objects(&text)[0]);
    live["spec"]["replicas"] = json!(3);
    live["spec"]["strategy"] = json!({"type": "Recreate"});
    let (out, _) = adopt(&text, 0, &live);
    assert!(out.contains("  replicas: 3 # two is enough off-season\r\n"));
    assert!(
        out.contains("\r\n  strategy:\r\n    type: Recreate\r\n"),
        "{out:?}"
    );
    assert!(
        !out.replace("\r\n", "").contains('\n'),
        "only CRLF line ends"
    );
}
