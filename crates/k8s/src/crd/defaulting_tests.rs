//! The cases of apiextensions-apiserver's own defaulting tests, ported as an independent
//! oracle (kubernetes/apiextensions-apiserver 1aa2717a, `pkg/apiserver/schema/defaulting`).
//! Each upstream `structuralschema.Structural` literal is written as the JSON schema
//! `Structural::from_json` reads into the same structure.

use serde_json::{json, Value};

use super::defaulting::{apply_defaults, prune_nulls};
use super::schema::Structural;

fn schema(s: Value) -> Option<Structural> {
    (!s.is_null()).then(|| Structural::from_json(&s).expect("a structural schema"))
}

/// `algorithm_test.go` `TestDefault`: (name, object, schema, expected).
#[test]
fn algorithm_test_go_test_default() {
    let d = |v: &str| json!({"default": v});
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        ("empty", json!(null), json!(null), json!(null)),
        ("scalar", json!(4), d("foo"), json!(4)),
        (
            "scalar array",
            json!([1, 2]),
            json!({"items": d("foo")}),
            json!([1, 2]),
        ),
        (
            "object array",
            json!([{"a": 1}, {"b": 1}, {"c": 1}]),
            json!({"items": {"properties": {"a": d("A"), "b": d("B"), "c": d("C")}}}),
            json!([{"a": 1, "b": "B", "c": "C"}, {"a": "A", "b": 1, "c": "C"},
                   {"a": "A", "b": "B", "c": 1}]),
        ),
        (
            "object array object",
            json!({"array": [{"a": 1}, {"b": 2}], "object": {"a": 1},
                   "additionalProperties": {"x": {"a": 1}, "y": {"b": 2}}}),
            json!({"properties": {
                "array": {"items": {"properties": {"a": d("A"), "b": d("B")}}},
                "object": {"properties": {"a": d("N"), "b": d("O")}},
                "additionalProperties": {"additionalProperties":
                    {"properties": {"a": d("alpha"), "b": d("beta")}}},
                "foo": d("bar")}}),
            json!({"array": [{"a": 1, "b": "B"}, {"a": "A", "b": 2}],
                   "object": {"a": 1, "b": "O"},
                   "additionalProperties": {"x": {"a": 1, "b": "beta"},
                                            "y": {"a": "alpha", "b": 2}},
                   "foo": "bar"}),
        ),
        (
            "empty and null",
            json!([{}, {"a": 1}, {"a": 0}, {"a": 0.0}, {"a": ""}, {"a": null}, {"a": []},
                   {"a": {}}]),
            json!({"items": {"properties": {"a": d("A")}}}),
            json!([{"a": "A"}, {"a": 1}, {"a": 0}, {"a": 0.0}, {"a": ""}, {"a": "A"},
                   {"a": []}, {"a": {}}]),
        ),
        (
            "null in nullable list",
            json!([null]),
            json!({"nullable": true, "items": {"properties": {"a": d("A")}}}),
            json!([null]),
        ),
        (
            "null in non-nullable list",
            json!([null]),
            json!({"nullable": false, "items": d("A")}),
            json!(["A"]),
        ),
        (
            "null in nullable object",
            json!({"a": null}),
            json!({"properties": {"a": {"nullable": true, "default": "A"}}}),
            json!({"a": null}),
        ),
        (
            "null in non-nullable object",
            json!({"a": null}),
            json!({"properties": {"a": {"nullable": false, "default": "A"}}}),
            json!({"a": "A"}),
        ),
        (
            "null in nullable object with additionalProperties",
            json!({"a": null}),
            json!({"additionalProperties": {"nullable": true, "default": "A"}}),
            json!({"a": null}),
        ),
        (
            "null in non-nullable object with additionalProperties",
            json!({"a": null}),
            json!({"additionalProperties": {"nullable": false, "default": "A"}}),
            json!({"a": "A"}),
        ),
        (
            "null unknown field",
            json!({"a": null}),
            json!({"additionalProperties": true}),
            json!({"a": null}),
        ),
    ];
    assert_eq!(cases.len(), 13);
    for (name, mut obj, s, expected) in cases {
        apply_defaults(&mut obj, schema(s).as_ref());
        assert_eq!(obj, expected, "{name}");
    }
}

/// `prunenulls_test.go` `TestPruneNonNullableNullsWithoutDefaults`.
#[test]
fn prunenulls_test_go_test_prune_non_nullable_nulls_without_defaults() {
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        ("empty", json!(null), json!(null), json!(null)),
        ("scalar", json!(4), json!({"default": "foo"}), json!(4)),
        (
            "scalar array",
            json!([1, null]),
            json!(null),
            json!([1, null]),
        ),
        (
            "object array",
            json!([{"a": null}, {"b": null}, {"c": null}, {"d": null}, {"e": null}]),
            json!({"items": {"properties": {
                "a": {"default": "A"},
                "b": {"nullable": true},
                "c": {"default": "C", "nullable": true},
                "d": {}}}}),
            json!([{"a": null}, {"b": null}, {"c": null}, {}, {"e": null}]),
        ),
    ];
    for (name, mut obj, s, expected) in cases {
        prune_nulls(&mut obj, schema(s).as_ref());
        assert_eq!(obj, expected, "{name}");
    }
}

/// Beyond the upstream cases: `default: {}` cascades into the defaults of the filled-in
/// object's children, and no default is applied where the parent object is absent.
#[test]
fn an_empty_object_default_cascades_and_absent_parents_stay_absent() {
    let s = schema(json!({"properties": {
        "spec": {"default": {}, "properties": {
            "replicas": {"default": 1},
            "tls": {"properties": {"mode": {"default": "strict"}}}}}}}));
    let mut obj = json!({});
    apply_defaults(&mut obj, s.as_ref());
    assert_eq!(
        obj,
        json!({"spec": {"replicas": 1}}),
        "tls has no default: not created"
    );
    let mut obj = json!({"spec": {"tls": {}}});
    apply_defaults(&mut obj, s.as_ref());
    assert_eq!(
        obj,
        json!({"spec": {"tls": {"mode": "strict"}, "replicas": 1}})
    );
}
