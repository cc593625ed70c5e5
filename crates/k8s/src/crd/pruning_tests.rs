//! The cases of apiextensions-apiserver's pruning test, ported as an independent oracle
//! (kubernetes/apiextensions-apiserver 1aa2717a, `pkg/apiserver/schema/pruning/
//! algorithm_test.go` `TestPrune`): the pruned object and the sorted pruned paths. Each
//! upstream `Structural` literal is written as the JSON schema it is read from.

use serde_json::{json, Value};

use super::pruning::{coerce_object_meta, prune};
use super::schema::Structural;

fn schema(s: &Value) -> Option<Structural> {
    (!s.is_null()).then(|| Structural::from_json(s).expect("a structural schema"))
}

struct Case {
    name: &'static str,
    json: Value,
    root: bool,
    schema: Value,
    object: Value,
    pruned: Vec<&'static str>,
}

fn embedded_instance(ns: bool) -> Value {
    let meta = if ns {
        json!({"name": "instance", "namespace": "myns", "labels": {"foo": "bar"},
               "unspecified": "bar"})
    } else {
        json!({"name": "instance", "unspecified": "bar"})
    };
    let obj = |spec: Value| {
        json!({"apiVersion": "foo/v1", "kind": "Foo",
        "unspecified": "bar", "metadata": meta, "spec": spec})
    };
    json!({
        "apiVersion": "foo/v1", "kind": "Foo", "metadata": meta, "unspecified": "bar",
        "pruned": obj(json!({"unspecified": "bar"})),
        "preserving": obj(json!({"unspecified": "bar"})),
        "nested": obj(json!({"unspecified": "bar",
            "embedded": obj(json!({"unspecified": "bar"}))})),
    })
}

fn embedded_expected(ns: bool, root: bool) -> Value {
    let meta = if ns {
        json!({"name": "instance", "namespace": "myns", "labels": {"foo": "bar"},
               "unspecified": "bar"})
    } else {
        json!({"name": "instance", "unspecified": "bar"})
    };
    let pruned = |spec: Value| {
        json!({"apiVersion": "foo/v1", "kind": "Foo",
        "metadata": meta, "spec": spec})
    };
    let mut out = json!({
        "pruned": pruned(json!({})),
        "preserving": {"apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
            "metadata": meta, "spec": {"unspecified": "bar"}},
        "nested": pruned(json!({"embedded": pruned(json!({}))})),
    });
    if root {
        out["apiVersion"] = json!("foo/v1");
        out["kind"] = json!("Foo");
        out["metadata"] = meta;
    }
    out
}

const EMBEDDED_PRUNED: [&str; 7] = [
    "nested.spec.embedded.spec.unspecified",
    "nested.spec.embedded.unspecified",
    "nested.spec.unspecified",
    "nested.unspecified",
    "pruned.spec.unspecified",
    "pruned.unspecified",
    "unspecified",
];

fn cases() -> Vec<Case> {
    let obj = |props: Value| json!({"type": "object", "properties": props});
    let object = json!({"type": "object"});
    vec![
        Case { name: "empty", json: json!(null), root: false, schema: json!(null),
            object: json!(null), pruned: vec![] },
        Case { name: "scalar", json: json!(4), root: false, schema: json!({}),
            object: json!(4), pruned: vec![] },
        Case { name: "scalar array", json: json!([1, 2]), root: false,
            schema: json!({"items": {}}), object: json!([1, 2]), pruned: vec![] },
        Case { name: "object array", json: json!([{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}]),
            root: false, schema: json!({"items": {"properties": {"a": {}, "c": {}}}}),
            object: json!([{"a": 1}, {}, {"a": 1, "c": 3}]),
            pruned: vec!["[1].b", "[2].b"] },
        Case { name: "object array with nil schema",
            json: json!([{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}]), root: false,
            schema: json!(null), object: json!([{}, {}, {}]),
            pruned: vec!["[0].a", "[1].b", "[2].a", "[2].b", "[2].c"] },
        Case { name: "object array object",
            json: json!({"array": [{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}],
                "unspecified": {"a": 1}, "specified": {"a": 1, "b": 2, "c": 3}}),
            root: false,
            schema: json!({"properties": {
                "array": {"items": {"properties": {"a": {}, "c": {}}}},
                "specified": {"properties": {"a": {}, "c": {}}}}}),
            object: json!({"array": [{"a": 1}, {}, {"a": 1, "c": 3}],
                "specified": {"a": 1, "c": 3}}),
            pruned: vec!["array[1].b", "array[2].b", "specified.b", "unspecified"] },
        Case { name: "nested x-kubernetes-preserve-unknown-fields",
            json: json!({
                "unspecified": "bar", "alpha": "abc", "beta": 42.0,
                "unspecifiedObject": {"unspecified": "bar"},
                "pruning": {"unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                    "pruning": {"unspecified": "bar"}, "apiVersion": "unknown",
                    "preserving": {"unspecified": "bar"}},
                "preserving": {"unspecified": "bar",
                    "unspecifiedObject": {"unspecified": "bar"},
                    "pruning": {"unspecified": "bar"}, "preserving": {"unspecified": "bar"},
                    "preservingUnknownType": [{"foo": true}, {"bar": true}]},
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
                    "foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
                "preservingAdditionalPropertiesKeyPruneValues": {
                    "foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}}}),
            root: false,
            schema: json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {
                    "alpha": {"type": "string"},
                    "beta": {"type": "number"},
                    "pruning": obj(json!({
                        "preserving": {"type": "object",
                            "x-kubernetes-preserve-unknown-fields": true},
                        "pruning": object})),
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {
                            "preserving": {"type": "object",
                                "x-kubernetes-preserve-unknown-fields": true},
                            "preservingUnknownType": {
                                "x-kubernetes-preserve-unknown-fields": true},
                            "pruning": object}},
                    "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "additionalProperties": obj(json!({"specified": object}))},
                    "preservingAdditionalPropertiesKeyPruneValues": {"type": "object",
                        "additionalProperties": obj(json!({"specified": object}))}}}),
            object: json!({
                "unspecified": "bar", "alpha": "abc", "beta": 42.0,
                "unspecifiedObject": {"unspecified": "bar"},
                "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
                "preserving": {"unspecified": "bar",
                    "unspecifiedObject": {"unspecified": "bar"}, "pruning": {},
                    "preserving": {"unspecified": "bar"},
                    "preservingUnknownType": [{"foo": true}, {"bar": true}]},
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
                    "foo": {"specified": {}}},
                "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}}}),
            pruned: vec![
                "preserving.pruning.unspecified",
                "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
                "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
                "pruning.apiVersion",
                "pruning.pruning.unspecified",
                "pruning.unspecified",
                "pruning.unspecifiedObject",
            ] },
        Case { name: "additionalProperties with schema",
            json: json!({"a": 1, "b": 1, "c": {"a": 1, "b": 2, "c": {"a": 1}}}), root: false,
            schema: json!({"properties": {"a": {},
                "c": {"additionalProperties": {"type": "integer"}}}}),
            object: json!({"a": 1, "c": {"a": 1, "b": 2, "c": {}}}),
            pruned: vec!["b", "c.c.a"] },
        Case { name: "additionalProperties with bool",
            json: json!({"a": 1, "b": 1,
                "c": {"a": 1, "b": 2, "c": {"a": 1, "apiVersion": "unknown"}}}),
            root: false,
            schema: json!({"properties": {"a": {}, "c": {"additionalProperties": false}}}),
            object: json!({"a": 1, "c": {"a": 1, "b": 2, "c": {}}}),
            pruned: vec!["b", "c.c.a", "c.c.apiVersion"] },
        Case { name: "x-kubernetes-embedded-resource", json: embedded_instance(false),
            root: false,
            schema: json!({"type": "object", "properties": {
                "pruned": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": object}},
                "preserving": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true},
                "nested": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": obj(json!({"embedded": {"type": "object",
                        "x-kubernetes-embedded-resource": true,
                        "properties": {"spec": object}}}))}}}}),
            object: embedded_expected(false, false), pruned: EMBEDDED_PRUNED.to_vec() },
        Case { name: "x-kubernetes-embedded-resource, with root=true",
            json: embedded_instance(true), root: true,
            schema: json!({"type": "object", "properties": {
                "metadata": object,
                "pruned": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"metadata": object, "spec": object}},
                "preserving": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true},
                "nested": {"type": "object", "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": obj(json!({"embedded": {"type": "object",
                        "x-kubernetes-embedded-resource": true,
                        "properties": {"metadata": object, "spec": object}}}))}}}}),
            object: embedded_expected(true, true), pruned: EMBEDDED_PRUNED.to_vec() },
    ]
}

#[test]
fn algorithm_test_go_test_prune() {
    let cases = cases();
    assert_eq!(cases.len(), 11);
    for case in cases {
        let mut obj = case.json.clone();
        let s = schema(&case.schema);
        let pruned = prune(&mut obj, s.as_ref(), case.root);
        assert_eq!(obj, case.object, "{}: object", case.name);
        assert_eq!(pruned, case.pruned, "{}: pruned paths", case.name);
        // Pruning twice prunes nothing more (upstream runs it again without tracking).
        assert_eq!(
            prune(&mut obj, s.as_ref(), case.root),
            Vec::<String>::new(),
            "{}",
            case.name
        );
        assert_eq!(obj, case.object, "{}: second run", case.name);
    }
}

/// `objectmeta/coerce.go`: the root's and embedded resources' `metadata` keep only
/// ObjectMeta's fields (upstream's `TestCoerce` checks the same through Go's decoder; the
/// "x-kubernetes-embedded-resource" case's unknown metadata keys are dropped).
#[test]
fn metadata_is_decoded_into_object_meta() {
    let s = Structural::from_json(&json!({"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "x-kubernetes-preserve-unknown-fields": true}}}))
    .unwrap();
    let mut obj = json!({"metadata": {"name": "a", "labels": {"x": "y"}, "bogus": 1},
        "template": {"metadata": {"name": "t", "unspecified": "bar"}, "spec": {"k": 1}}});
    let dropped = coerce_object_meta(&mut obj, Some(&s));
    assert_eq!(dropped, ["metadata.bogus", "template.metadata.unspecified"]);
    assert_eq!(
        obj,
        json!({"metadata": {"name": "a", "labels": {"x": "y"}},
        "template": {"metadata": {"name": "t"}, "spec": {"k": 1}}})
    );
}
