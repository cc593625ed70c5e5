use super::*;
use serde_json::json;

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"}, "data": {"k": "v"}})
}

fn message(object: &Value, namespaced: bool) -> String {
    validate_create(object, namespaced)
        .expect_err("refused")
        .to_string()
}

#[test]
fn names_are_refused_in_kube_apiservers_words() {
    assert_eq!(validate_create(&cm("web-config"), true), Ok(()));
    assert_eq!(
        message(&cm("Web"), true),
        "ConfigMap \"Web\" is invalid: metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    let long = "a".repeat(254);
    assert_eq!(
        message(&cm(&long), true),
        format!("ConfigMap \"{long}\" is invalid: metadata.name: Invalid value: \"{long}\": must be no more than 253 characters")
    );
    // Control characters are shown as Go's %q shows them.
    assert!(message(&cm("a\u{1}b"), true).contains("Invalid value: \"a\\x01b\""));
    for bad in ["a/b", "a..b", "-a", "a_b", ""] {
        assert!(validate_create(&cm(bad), true).is_err(), "{bad:?}");
    }
}

#[test]
fn several_errors_are_aggregated() {
    let mut o = cm("Web");
    o["metadata"]["labels"] = json!({"app": "-bad-"});
    let m = message(&o, true);
    assert!(
        m.starts_with("ConfigMap \"Web\" is invalid: [metadata.name: Invalid value: \"Web\": "),
        "{m}"
    );
    assert!(m.contains(", metadata.labels: Invalid value: \"-bad-\": a valid label must be an empty string or consist of alphanumeric characters"), "{m}");
    assert!(m.ends_with(")]"), "{m}");
}

#[test]
fn namespaces_must_be_labels_and_cluster_objects_have_none() {
    let mut o = cm("a");
    o["metadata"]["namespace"] = json!("Team_A");
    assert!(message(&o, true)
        .contains("metadata.namespace: Invalid value: \"Team_A\": a lowercase RFC 1123 label"));
    o["metadata"]["namespace"] = json!("");
    assert!(message(&o, true).contains("metadata.namespace: Required value"));
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a", "namespace": "x"}});
    assert!(message(&ns, false).contains("metadata.namespace: Forbidden: not allowed on this type"));
}

#[test]
fn rbac_names_are_path_segments() {
    let role = |name: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": []})
    };
    assert_eq!(
        validate_create(&role("system:aggregated-metrics-reader"), false),
        Ok(())
    );
    assert_eq!(
        message(&role(".."), false),
        "ClusterRole.rbac.authorization.k8s.io \"..\" is invalid: metadata.name: Invalid value: \"..\": may not be '..'"
    );
}

#[test]
fn generate_name_is_checked_as_a_prefix() {
    let job = |g: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"generateName": g, "namespace": "default", "name": generated_name(g)},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}})
    };
    assert_eq!(validate_create(&job("migrate-"), true), Ok(()));
    assert!(message(&job("Migrate-"), true)
        .contains("metadata.generateName: Invalid value: \"Migrate-\""));
}

#[test]
fn field_types_and_ranges_are_decoding_errors() {
    let deploy = |replicas: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})
    };
    assert_eq!(validate_create(&deploy(json!(3)), true), Ok(()));
    assert_eq!(
        message(&deploy(json!("two")), true),
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    let e = validate_create(&deploy(json!(1e23)), true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number 1e+23 into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    assert_eq!(e.field(), Some("spec.replicas"));
    assert!(validate_create(&deploy(json!(2147483648i64)), true).is_err());
    let mut port = deploy(json!(1));
    port["spec"]["template"]["spec"]["containers"][0]["ports"] = json!([{"containerPort": "80"}]);
    let e = validate_create(&port, true).unwrap_err();
    assert_eq!(
        e.field(),
        Some("spec.template.spec.containers[0].ports[0].containerPort")
    );
}

#[test]
fn config_map_data_must_be_strings() {
    let mut o = cm("a");
    o["data"] = json!(5);
    assert_eq!(
        message(&o, true),
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type map"
    );
    o["data"] = json!({"cmd": ["echo hi"]});
    assert!(message(&o, true)
        .contains("cannot unmarshal array into Go struct field ConfigMap.data.cmd of type string"));
    o["data"] = json!({"bad key": "v"});
    assert!(
        message(&o, true).contains("data[bad key]: Invalid value: \"bad key\": a valid config key")
    );
}

#[test]
fn secret_data_is_go_base64_and_never_quoted() {
    let secret = |data: Value| {
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"}, "data": data})
    };
    assert_eq!(
        validate_create(&secret(json!({"a": "aHVudGVyMg=="})), true),
        Ok(())
    );
    // Line-wrapped base64 is valid for Go's decoder.
    assert_eq!(
        validate_create(&secret(json!({"a": "aHVu\ndGVyMg==\n"})), true),
        Ok(())
    );
    let e = validate_create(&secret(json!({"a": "hunter2!"})), true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 7"
    );
    assert_eq!(e.field(), Some("data.a"));
    let e = validate_create(&secret(json!({"a": 12345})), true).unwrap_err();
    assert!(!e.to_string().contains("12345"), "{e}");
}

#[test]
fn annotations_total_is_limited() {
    let mut o = cm("a");
    o["metadata"]["annotations"] = json!({"big": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)});
    assert_eq!(
        message(&o, true),
        "ConfigMap \"a\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes"
    );
    o["metadata"]["annotations"] = json!({"big": "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 3)});
    assert_eq!(validate_create(&o, true), Ok(()));
    o["metadata"]["annotations"] = json!({"Example.com/Key": "v", "a b": "v"});
    let m = message(&o, true);
    assert!(!m.contains("Example.com"), "case does not matter: {m}");
    assert!(
        m.contains("metadata.annotations: Invalid value: \"a b\""),
        "{m}"
    );
}

#[test]
fn quantities_must_parse() {
    let pod = |cpu: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i",
                "resources": {"limits": {"cpu": cpu}}}]}})
    };
    assert_eq!(validate_create(&pod(json!("500m")), true), Ok(()));
    assert_eq!(validate_create(&pod(json!(2)), true), Ok(()));
    let e = validate_create(&pod(json!("lots")), true).unwrap_err();
    assert_eq!(e.field(), Some("spec.containers[0].resources.limits[cpu]"));
    assert!(e.to_string().ends_with("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
}

#[test]
fn custom_resources_get_their_metadata_checked() {
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "labels": {"a": 5}}, "spec": {"x": "anything"}});
    let m = message(&w, true);
    assert!(m.starts_with("Widget in version \"v1\" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels.a of type string") || m.contains("metadata.labels.a"), "{m}");
    let ok = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w.x", "namespace": "default"}, "spec": {"size": "huge"}});
    assert_eq!(validate_create(&ok, true), Ok(()));
}
