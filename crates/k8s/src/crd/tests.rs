//! Reading CRDs into structural schemas (`pkg/apiserver/schema/convert.go` `NewStructural`:
//! what it refuses, what it keeps) and the write/read path of a custom resource across
//! versions.

use serde_json::{json, Value};

use super::*;

fn crd(versions: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets"}, "versions": versions}})
}

fn version(name: &str, storage: bool, spec: Value) -> Value {
    json!({"name": name, "served": true, "storage": storage, "schema": {"openAPIV3Schema":
        {"type": "object", "properties": {"spec": spec}}}})
}

/// `NewStructural` refuses what `validateUnsupportedFields` lists, `items` as an array and
/// `x-kubernetes-preserve-unknown-fields: false` (convert.go); everything else converts.
#[test]
fn convert_go_new_structural_refuses_unsupported_fields() {
    for bad in [
        json!({"id": "x"}),
        json!({"$schema": "x"}),
        json!({"$ref": "#/x"}),
        json!({"patternProperties": {"a": {}}}),
        json!({"dependencies": {"a": ["b"]}}),
        json!({"additionalItems": true}),
        json!({"definitions": {"a": {}}}),
        json!({"items": [{}, {}]}),
        json!({"x-kubernetes-preserve-unknown-fields": false}),
        json!({"properties": {"deep": {"items": {"$ref": "#/x"}}}}),
    ] {
        assert!(Structural::from_json(&bad).is_err(), "{bad}");
    }
    let s = Structural::from_json(&json!({
        "type": "object", "nullable": true, "default": {},
        "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": true,
        "x-kubernetes-map-type": "atomic", "enum": [{}], "anyOf": [{"required": ["a"]}],
        "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object", "properties": {
                    "port": {"type": "integer"},
                    "protocol": {"type": "string", "default": "TCP"},
                    "target": {"x-kubernetes-int-or-string": true,
                        "anyOf": [{"type": "integer"}, {"type": "string"}]}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}))
    .unwrap();
    assert!(s.nullable && s.preserve_unknown_fields && s.embedded_resource);
    assert_eq!(s.default, Some(json!({})));
    assert_eq!(s.map_type(), MapType::Atomic);
    let ports = s.at(&[Step::Field("ports")]).unwrap();
    assert_eq!(
        ports.list_type(),
        ListType::Map(vec!["port".into(), "protocol".into()])
    );
    let target = s
        .at(&[Step::Field("ports"), Step::Item, Step::Field("target")])
        .unwrap();
    assert!(target.int_or_string);
    assert_eq!(
        s.at(&[Step::Field("tags")]).unwrap().list_type(),
        ListType::Set
    );
    assert_eq!(
        s.at(&[Step::Field("args")]).unwrap().list_type(),
        ListType::Atomic
    );
    assert_eq!(
        s.at(&[Step::Field("labels"), Step::Field("any")])
            .unwrap()
            .type_,
        "string",
        "map values take the additionalProperties schema"
    );
    assert_eq!(s.at(&[Step::Field("unknown")]), None);
}

#[test]
fn a_crd_reads_into_one_schema_per_version_with_pruned_defaults() {
    let spec = json!({"type": "object", "properties": {
        "size": {"type": "integer", "default": 1},
        "tls": {"type": "object", "default": {"mode": "strict", "bogus": true},
            "properties": {"mode": {"type": "string"}}}}});
    let c = crd(json!([version("v1", true, spec.clone())]));
    let schemas = CrdSchemas::from_crd(&c).unwrap();
    assert_eq!(
        schemas.key(),
        ("example.com".to_string(), "Widget".to_string())
    );
    assert_eq!(schemas.name, "widgets.example.com");
    let s = Structural::from_crd(&c, "v1").unwrap();
    assert_eq!(
        s.at(&[Step::Field("spec"), Step::Field("tls")])
            .unwrap()
            .default,
        Some(json!({"mode": "strict"})),
        "a default's unknown fields are pruned when the CRD is loaded (PruneDefaults)"
    );
    assert_eq!(
        Structural::from_crd(&c, "v2"),
        Err(SchemaError::NoSuchVersion("v2".into()))
    );
    assert!(CrdSchemas::from_crd(&json!({"kind": "ConfigMap"})).is_err());
}

#[test]
fn a_write_prunes_then_defaults_and_reports_what_it_pruned() {
    let spec = json!({"type": "object", "properties": {
        "size": {"type": "integer", "default": 1},
        "color": {"type": "string"},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    let schemas = CrdSchemas::from_crd(&crd(json!([version("v1", true, spec)]))).unwrap();
    let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "shop", "colour": "x"},
        "spec": {"colour": "blue", "color": null, "extra": {"anything": [1]}},
        "unknownTop": 1});
    let served = schemas.as_served(&mut obj).unwrap();
    assert_eq!(
        served.pruned,
        ["metadata.colour", "spec.colour", "unknownTop"]
    );
    assert_eq!(
        obj,
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "shop"},
        "spec": {"extra": {"anything": [1]}, "size": 1}})
    );
}

#[test]
fn a_served_version_reads_back_through_the_storage_version() {
    // v1beta1 (served) knows `legacy`; v1 (storage) does not and defaults `size`, which
    // v1beta1 also has; `mode` only v1 has and defaults. Written and read at v1beta1:
    // `legacy` is pruned on the way to storage, `size` defaulted by v1 stays, `mode` is
    // defaulted in storage and pruned when converted back.
    let beta = version(
        "v1beta1",
        false,
        json!({"type": "object", "properties": {
        "legacy": {"type": "string"}, "size": {"type": "integer"}}}),
    );
    let v1 = version(
        "v1",
        true,
        json!({"type": "object", "properties": {
        "size": {"type": "integer", "default": 3}, "mode": {"type": "string", "default": "a"}}}),
    );
    let schemas = CrdSchemas::from_crd(&crd(json!([beta, v1]))).unwrap();
    let mut obj = json!({"apiVersion": "example.com/v1beta1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"legacy": "x"}});
    let served = schemas.as_served(&mut obj).unwrap();
    assert!(
        served.pruned.is_empty(),
        "v1beta1 allows everything written"
    );
    assert_eq!(obj["apiVersion"], "example.com/v1beta1");
    assert_eq!(obj["spec"], json!({"size": 3}));
    let mut unknown = json!({"apiVersion": "example.com/v9", "kind": "Widget"});
    assert!(schemas.as_served(&mut unknown).is_err());
}
