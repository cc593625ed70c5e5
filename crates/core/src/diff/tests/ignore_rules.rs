//! Ignore rules: the annotation, `compare: false`, config rules by object, manager and source,
//! and their validation.

use super::*;
use serde_json::json;

fn drifted_live() -> Value {
    let mut live = live_deployment();
    let cs = live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap();
    cs.push(json!({"name": "istio-proxy", "image": "proxy:1"}));
    cs[0]["image"] = json!("web:2");
    live["spec"]["replicas"] = json!(9);
    live
}

#[test]
fn ignore_annotation_hides_matching_differences_and_counts_them() {
    let mut desired = deployment();
    desired["metadata"]["annotations"] = json!({"driftd.io/ignore": "/spec/template/spec/containers/name=istio-proxy, /spec/replicas"});
    let c = cmp(&desired, &drifted_live());
    assert_eq!(
        paths(&c),
        vec![(
            "/spec/template/spec/containers/0/image".to_string(),
            ChangeOp::Replace
        )]
    );
    assert_eq!(
        c.ignored,
        vec![IgnoredCount {
            rule: ANNOTATION_RULE.into(),
            count: 2
        }]
    );
}

#[test]
fn compare_false_annotation_skips_the_object() {
    let mut desired = deployment();
    desired["metadata"]["annotations"] = json!({"driftd.io/compare": "false"});
    let c = cmp(&desired, &drifted_live());
    assert_eq!(c.class, DriftClass::InSync);
    assert!(c.changes.is_empty() && c.patch.0.is_empty());
}

#[test]
fn config_rules_match_objects_and_expire() {
    let rules = RuleSet::from_toml(
        r#"
[[ignore]]
kind = "Deployment"
namespace = "sh*"
labels = "app.kubernetes.io/name in (web,api),tier!=db"
pointers = ["/spec/template/spec/containers/*/image"]
reason = "image bumps by CD"

[[ignore]]
name = "other-*"
pointers = ["/spec/replicas"]

[[ignore]]
pointers = ["/spec/replicas"]
reason = "temporary"
expires = "2026-01-01T00:00:00Z"
"#,
    )
    .unwrap();
    let now: jiff::Timestamp = "2026-06-01T00:00:00Z".parse().unwrap();
    let differ = Differ::new(KEY).with_rules(rules).at(now);
    let facts = ClusterFacts::default();
    let desired = deployment();
    let live = drifted_live();
    let c = differ.compare(&CompareInput {
        desired: &desired,
        live: Some(&live),
        previous: None,
        facts: &facts,
    });
    let mut got = paths(&c);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("/spec/replicas".to_string(), ChangeOp::Replace),
            (
                "/spec/template/spec/containers/2".to_string(),
                ChangeOp::Remove
            )
        ]
    );
    assert_eq!(
        c.ignored,
        vec![IgnoredCount {
            rule: "ignore[0] (\"image bumps by CD\")".into(),
            count: 1
        }]
    );
    let expired = differ.expired_rules();
    assert_eq!(expired.len(), 1);
    assert_eq!(expired[0].label, "ignore[2] (\"temporary\")");
    // Before expiry the third rule applies.
    let early = Differ::new(KEY)
        .with_rules(differ.rules().clone())
        .at("2025-06-01T00:00:00Z".parse().unwrap());
    let c = early.compare(&CompareInput {
        desired: &desired,
        live: Some(&live),
        previous: None,
        facts: &facts,
    });
    assert!(!c.changes.iter().any(|c| c.path == "/spec/replicas"));
}

#[test]
fn config_rules_ignore_by_manager_and_source() {
    let entries = json!([{"manager": "istio-injector", "operation": "Update", "time": "2026-01-01T00:00:00Z",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"istio-proxy\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}}]);
    let mut live = drifted_live();
    live["metadata"]["managedFields"] = entries;
    let rules = RuleSet::new(vec![IgnoreRule {
        source: Some("shop".into()),
        managers: vec!["istio-injector".into()],
        ..Default::default()
    }])
    .unwrap();
    let differ = Differ::new(KEY).with_rules(rules);
    let facts = ClusterFacts::default();
    let desired = deployment();
    let input = CompareInput {
        desired: &desired,
        live: Some(&live),
        previous: None,
        facts: &facts,
    };
    assert_eq!(differ.compare_in(Some("shop"), &input).changes.len(), 2);
    assert_eq!(differ.compare_in(Some("other"), &input).changes.len(), 3);
    assert_eq!(differ.compare(&input).changes.len(), 3);
}

#[test]
fn invalid_rules_are_rejected_naming_the_rule() {
    let err =
        RuleSet::from_toml("[[ignore]]\nreason = \"x\"\npointers = [\"spec\"]\n").unwrap_err();
    assert!(
        err.contains("ignore[0] (\"x\")") && err.contains("pointers[0]"),
        "{err}"
    );
    let err = RuleSet::from_toml("[[ignore]]\npointers=[\"/a\"]\n[[ignore]]\nreason = \"y\"\n")
        .unwrap_err();
    assert!(
        err.contains("ignore[1]") && err.contains("pointers"),
        "{err}"
    );
    let err =
        RuleSet::from_toml("[[ignore]]\npointers=[\"/a\"]\nexpires=\"tomorrow\"\n").unwrap_err();
    assert!(err.contains("expires"), "{err}");
    let err = RuleSet::from_toml("[[ignore]]\npointers=[\"/a\"]\nlabels=\"a in b\"\n").unwrap_err();
    assert!(err.contains("labels"), "{err}");
    let err = RuleSet::from_toml("[[ignore]]\npointers=[\"/a\"]\nnmae=\"x\"\n").unwrap_err();
    assert!(err.contains("nmae"), "{err}");
}
