use super::*;
use serde_json::json;

/// A manifest of `kind` (in `api_version`) named `name`, in `ns` when given, with optional
/// depends-on annotation.
fn obj(api_version: &str, kind: &str, ns: Option<&str>, name: &str, deps: Option<&str>) -> Value {
    let mut o = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if let Some(ns) = ns {
        o["metadata"]["namespace"] = json!(ns);
    }
    if let Some(d) = deps {
        o["metadata"]["annotations"] = json!({ DEPENDS_ON: d });
    }
    o
}

fn crd(group: &str, plural: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, "singular": kind.to_lowercase()},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}]
        }
    })
}

fn keyed(objects: Vec<Value>) -> Vec<(ObjectKey, Value)> {
    objects
        .into_iter()
        .map(|o| (ObjectKey::of(&o).expect("key"), o))
        .collect()
}

fn plan_of(objects: &[(ObjectKey, Value)]) -> Result<Plan, PlanError> {
    let inputs: Vec<PlanInput> = objects
        .iter()
        .map(|(key, object)| PlanInput { key, object })
        .collect();
    plan(&inputs)
}

fn order(objects: &[(ObjectKey, Value)]) -> Result<Vec<String>, PlanError> {
    Ok(plan_of(objects)?
        .steps
        .iter()
        .map(|s| format!("{}/{}", s.key.kind, s.key.name))
        .collect())
}

#[test]
fn every_helm_kind_sorts_in_helm_install_order_whatever_the_input_order() {
    // Reversed input: the order comes from the kinds, not from where they stand.
    let objects = keyed(
        HELM_INSTALL_ORDER
            .iter()
            .rev()
            .map(|kind| obj("v1", kind, None, "x", None))
            .collect(),
    );
    let got = order(&objects).unwrap();
    let want: Vec<String> = HELM_INSTALL_ORDER
        .iter()
        .map(|k| format!("{k}/x"))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn unknown_kinds_come_after_known_ones_alphabetically_by_kind_then_by_name() {
    let objects = keyed(vec![
        obj("example.com/v1", "Zebra", Some("a"), "b", None),
        obj("example.com/v1", "Zebra", Some("a"), "a", None),
        obj("example.com/v1", "Alpaca", Some("a"), "z", None),
        obj("apps/v1", "Deployment", Some("a"), "web", None),
        obj("v1", "ConfigMap", Some("a"), "b", None),
        obj("v1", "ConfigMap", Some("a"), "a", None),
        obj(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            None,
            "v",
            None,
        ),
    ]);
    assert_eq!(
        order(&objects).unwrap(),
        [
            "ConfigMap/a",
            "ConfigMap/b",
            "Deployment/web",
            "ValidatingWebhookConfiguration/v",
            "Alpaca/z",
            "Zebra/a",
            "Zebra/b",
        ]
    );
}

#[test]
fn a_crd_comes_before_its_custom_resources_even_when_their_kind_sorts_first() {
    // Helm ranks by kind alone: a custom kind named `Secret` ranks before
    // CustomResourceDefinition, yet must wait for its CRD.
    let objects = keyed(vec![
        obj("example.com/v1", "Secret", Some("app"), "cr", None),
        crd("example.com", "secrets", "Secret"),
        obj("v1", "Secret", Some("app"), "core", None),
    ]);
    let got = order(&objects).unwrap();
    assert_eq!(
        got,
        [
            "Secret/core",
            "CustomResourceDefinition/secrets.example.com",
            "Secret/cr"
        ]
    );
    let p = plan_of(&objects).unwrap();
    assert_eq!(p.steps[2].depends_on[0].because, Because::Crd);
    assert!(!p.steps[2].depends_on[0].external);
}

#[test]
fn a_namespace_comes_before_its_objects_and_an_absent_one_is_no_dependency() {
    // PriorityClass ranks before Namespace in Helm's list and, cluster-scoped, does not wait.
    let objects = keyed(vec![
        obj("scheduling.k8s.io/v1", "PriorityClass", None, "high", None),
        obj("v1", "ConfigMap", Some("shop"), "cfg", None),
        obj("v1", "Namespace", None, "shop", None),
        obj("v1", "ConfigMap", Some("other"), "cfg", None),
    ]);
    let p = plan_of(&objects).unwrap();
    let names: Vec<String> = p
        .steps
        .iter()
        .map(|s| format!("{}/{}", s.key.kind, s.key.name))
        .collect();
    assert_eq!(
        names,
        [
            "PriorityClass/high",
            "Namespace/shop",
            "ConfigMap/cfg",
            "ConfigMap/cfg"
        ]
    );
    let shop_cm = p
        .steps
        .iter()
        .find(|s| s.key.namespace.as_deref() == Some("shop"))
        .unwrap();
    assert_eq!(shop_cm.depends_on[0].because, Because::Namespace);
    // A namespace the source does not hold is no dependency: Helm charts install into an
    // existing release namespace.
    let other = p
        .steps
        .iter()
        .find(|s| s.key.namespace.as_deref() == Some("other"))
        .unwrap();
    assert!(other.depends_on.is_empty());
}

#[test]
fn a_custom_resource_waits_for_a_namespace_the_crd_places_it_in() {
    let objects = keyed(vec![
        obj("example.com/v1", "Widget", Some("shop"), "w", None),
        crd("example.com", "widgets", "Widget"),
        obj("v1", "Namespace", None, "shop", None),
    ]);
    assert_eq!(
        order(&objects).unwrap(),
        [
            "Namespace/shop",
            "CustomResourceDefinition/widgets.example.com",
            "Widget/w"
        ]
    );
}

#[test]
fn depends_on_takes_precedence_over_helm_order_in_both_formats() {
    // Namespaced format: the Secret (early in Helm order) waits for the Deployment.
    // Cluster-scoped format: the Namespace waits for a ClusterRole.
    let objects = keyed(vec![
        obj("apps/v1", "Deployment", Some("shop"), "db", None),
        obj(
            "v1",
            "Secret",
            Some("shop"),
            "creds",
            Some("apps/namespaces/shop/Deployment/db"),
        ),
        obj("v1", "ConfigMap", Some("shop"), "cfg", None),
        obj(
            "v1",
            "Namespace",
            None,
            "shop",
            Some("rbac.authorization.k8s.io/ClusterRole/reader"),
        ),
        obj(
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            None,
            "reader",
            None,
        ),
    ]);
    assert_eq!(
        order(&objects).unwrap(),
        [
            "ClusterRole/reader",
            "Namespace/shop",
            "ConfigMap/cfg",
            "Deployment/db",
            "Secret/creds"
        ]
    );
}

#[test]
fn depends_on_lists_several_comma_separated_references_with_the_core_group_empty() {
    let objects = keyed(vec![
        obj(
            "apps/v1",
            "Deployment",
            Some("shop"),
            "web",
            Some("/namespaces/shop/Secret/a, /namespaces/shop/ConfigMap/b"),
        ),
        obj("v1", "Secret", Some("shop"), "a", None),
        obj("v1", "ConfigMap", Some("shop"), "b", None),
    ]);
    let p = plan_of(&objects).unwrap();
    let web = p.steps.last().unwrap();
    assert_eq!(web.key.name, "web");
    let deps: Vec<(&str, &str, bool)> = web
        .depends_on
        .iter()
        .map(|d| (d.key.kind.as_str(), d.key.group.as_str(), d.external))
        .collect();
    assert_eq!(deps, [("ConfigMap", "", false), ("Secret", "", false)]);
}

#[test]
fn a_cycle_is_an_error_naming_each_object_of_it() {
    let objects = keyed(vec![
        obj(
            "v1",
            "ConfigMap",
            Some("shop"),
            "a",
            Some("/namespaces/shop/Secret/b"),
        ),
        obj(
            "v1",
            "Secret",
            Some("shop"),
            "b",
            Some("apps/namespaces/shop/Deployment/c"),
        ),
        obj(
            "apps/v1",
            "Deployment",
            Some("shop"),
            "c",
            Some("/namespaces/shop/ConfigMap/a"),
        ),
        obj("v1", "Service", Some("shop"), "free", None),
    ]);
    let err = order(&objects).unwrap_err();
    let PlanError::Cycle { cycle } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(cycle.len(), 4, "{cycle:?}");
    assert_eq!(cycle.first(), cycle.last());
    let text = err.to_string();
    for name in [
        "ConfigMap shop/a",
        "Secret shop/b",
        "Deployment.apps shop/c",
    ] {
        assert!(text.contains(name), "{text}");
    }
    assert!(!text.contains("free"), "{text}");
}

#[test]
fn an_object_depending_on_itself_is_a_cycle() {
    let objects = keyed(vec![obj(
        "v1",
        "ConfigMap",
        Some("shop"),
        "a",
        Some("/namespaces/shop/ConfigMap/a"),
    )]);
    let err = order(&objects).unwrap_err();
    assert_eq!(
        err.to_string(),
        "dependency cycle: ConfigMap shop/a -> ConfigMap shop/a"
    );
}

#[test]
fn a_dependency_outside_the_source_must_exist_in_the_cluster() {
    let objects = keyed(vec![
        obj(
            "apps/v1",
            "Deployment",
            Some("shop"),
            "web",
            Some("/namespaces/shop/Secret/external,/namespaces/shop/ConfigMap/gone"),
        ),
        obj("v1", "Service", Some("shop"), "web", None),
    ]);
    let p = plan_of(&objects).unwrap();
    assert_eq!(p.external_keys().len(), 2);
    let in_cluster = |k: &ObjectKey| k.name == "external";
    let err = p.check_external(in_cluster).unwrap_err();
    let PlanError::MissingDependency { missing } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(missing.len(), 1);
    assert_eq!(
        err.to_string(),
        "Deployment.apps shop/web depends on ConfigMap shop/gone, which is neither in the \
         source nor in the cluster"
    );
    assert!(p.check_external(|_| true).is_ok());
}

#[test]
fn invalid_annotations_are_errors_naming_the_object_and_the_value() {
    for (value, reason) in [
        ("apps/Deployment", "expected 3 fields"),
        (
            "apps/ns/shop/Deployment/web",
            "missing \"namespaces\" field",
        ),
        ("apps//web", "kind is empty"),
        ("/namespaces/shop/Secret/", "name is empty"),
        ("/namespaces/shop/Secret/a,", "expected 3 fields"),
    ] {
        let objects = keyed(vec![obj(
            "v1",
            "ConfigMap",
            Some("shop"),
            "cfg",
            Some(value),
        )]);
        let err = order(&objects).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, PlanError::InvalidAnnotation { .. }),
            "{value}: {text}"
        );
        assert!(text.starts_with("ConfigMap shop/cfg: invalid config.kubernetes.io/depends-on"));
        assert!(text.contains(&format!("{value:?}")), "{text}");
        assert!(text.contains(reason), "{value}: {text}");
    }
    let mut not_string = obj("v1", "ConfigMap", Some("shop"), "cfg", None);
    not_string["metadata"]["annotations"] = json!({ DEPENDS_ON: 3 });
    let err = order(&keyed(vec![not_string])).unwrap_err();
    assert!(err.to_string().contains("must be a string"), "{err}");
}

#[test]
fn a_chart_like_source_gets_the_expected_order() {
    let objects = keyed(vec![
        obj("apps/v1", "Deployment", Some("shop"), "web", None),
        obj("v1", "Service", Some("shop"), "web", None),
        obj("example.com/v1", "Widget", Some("shop"), "w", None),
        crd("example.com", "widgets", "Widget"),
        obj("v1", "ConfigMap", Some("shop"), "cfg", None),
        obj("v1", "Secret", Some("shop"), "creds", None),
        obj("v1", "ServiceAccount", Some("shop"), "web", None),
        obj("v1", "Namespace", None, "shop", None),
    ]);
    assert_eq!(
        order(&objects).unwrap(),
        [
            "Namespace/shop",
            "ServiceAccount/web",
            "Secret/creds",
            "ConfigMap/cfg",
            "CustomResourceDefinition/widgets.example.com",
            "Service/web",
            "Deployment/web",
            "Widget/w",
        ]
    );
}
