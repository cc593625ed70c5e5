//! The cases of apiextensions-apiserver's list-type validation test, ported as an
//! independent oracle (kubernetes/apiextensions-apiserver 1aa2717a, `pkg/apiserver/schema/
//! listtype/validation_test.go` `TestValidateListSetsAndMaps`): the same objects and
//! schemas (as JSON schemas), the same errors by kind and field path.

use serde_json::{json, Value};

use super::listtype::{validate, ListTypeError};
use super::schema::Structural;

fn dup(p: &str) -> ListTypeError {
    ListTypeError::Duplicate { path: p.into() }
}
fn invalid(p: &str) -> ListTypeError {
    ListTypeError::Invalid { path: p.into() }
}

fn check(name: &str, schema: Option<Value>, obj: Option<Value>, mut want: Vec<ListTypeError>) {
    let s = schema.map(|s| Structural::from_json(&s).expect("a structural schema"));
    let obj = obj.unwrap_or(Value::Null);
    let mut got = match obj.as_object() {
        Some(m) => validate("root", s.as_ref(), m),
        None => Vec::new(),
    };
    let key = |e: &ListTypeError| format!("{e:?}");
    got.sort_by_key(key);
    want.sort_by_key(key);
    assert_eq!(got, want, "{name}");
}

fn array(items: Option<Value>, list_type: Option<&str>, keys: &[&str]) -> Value {
    let mut a = json!({"type": "array"});
    if let Some(items) = items {
        a["items"] = items;
    }
    if let Some(t) = list_type {
        a["x-kubernetes-list-type"] = json!(t);
    }
    if !keys.is_empty() {
        a["x-kubernetes-list-map-keys"] = json!(keys);
    }
    a
}

fn object(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

fn typed(t: &str) -> Value {
    json!({"type": t})
}

fn nullable(t: &str) -> Value {
    json!({"type": t, "nullable": true})
}

fn string_map(value: Value) -> Value {
    json!({"type": "object", "additionalProperties": value})
}

#[test]
fn validation_test_go_test_validate_list_sets_and_maps_simple_cases() {
    let set = |items| Some(object(json!({"array": array(items, Some("set"), &[])})));
    let aba = || Some(json!({"array": ["a", "b", "a"]}));
    check("nil", None, None, vec![]);
    check("no schema", None, Some(json!({})), vec![]);
    check("no object", Some(json!({})), None, vec![]);
    check("list without schema", None, aba(), vec![]);
    check(
        "list without items",
        Some(object(json!({"array": array(None, None, &[])}))),
        aba(),
        vec![],
    );
    check(
        "set list with one item",
        set(None),
        Some(json!({"array": ["a"]})),
        vec![],
    );
    check(
        "set list with two equal items",
        set(None),
        Some(json!({"array": ["a", "a"]})),
        vec![dup("root.array[1]")],
    );
    check(
        "set list with two different items",
        set(None),
        Some(json!({"array": ["a", "b"]})),
        vec![],
    );
    check(
        "set list with multiple duplicated items",
        set(None),
        Some(json!({"array": ["a", "a", "b", "c", "d", "c"]})),
        vec![dup("root.array[1]"), dup("root.array[5]")],
    );
    check(
        "normal list with items",
        Some(object(
            json!({"array": array(Some(typed("string")), None, &[])}),
        )),
        aba(),
        vec![],
    );
    check(
        "set list with items",
        set(Some(typed("string"))),
        aba(),
        vec![dup("root.array[2]")],
    );
    check(
        "set list with items under additionalProperties",
        Some(json!({"type": "object",
            "additionalProperties": array(Some(typed("string")), Some("set"), &[])})),
        aba(),
        vec![dup("root[array][2]")],
    );
    check(
        "set list with items under items",
        Some(object(json!({"array": array(
            Some(array(Some(typed("string")), Some("set"), &[])), None, &[])}))),
        Some(json!({"array": [["a", "b", "a"], ["b", "b", "a"]]})),
        vec![dup("root.array[0][2]"), dup("root.array[1][1]")],
    );
    check(
        "nested set lists",
        Some(object(
            json!({"array": array(Some(array(None, Some("set"), &[])), Some("set"), &[])}),
        )),
        Some(json!({"array": ["a", "b", "a", ["b", "b", "a"]]})),
        vec![dup("root.array[2]"), dup("root.array[3][1]")],
    );
    check(
        "set list with compound array items",
        set(Some(typed("string"))),
        Some(json!({"array": [[], ["a"], ["a"]]})),
        vec![dup("root.array[2]")],
    );
}

#[test]
fn validation_test_go_test_validate_list_sets_and_maps_set_list_with_compound_map_items() {
    let set = |items: Value| array(Some(items), Some("set"), &[]);
    let schema = object(json!({
        "strings": set(typed("string")),
        "integers": set(typed("integer")),
        "booleans": set(typed("boolean")),
        "float64": set(typed("number")),
        "nil": set(nullable("string")),
        "empty maps": set(string_map(typed("string"))),
        "map values": set(string_map(typed("string"))),
        "nil values": set(string_map(nullable("string"))),
        "array": set(array(Some(typed("string")), None, &[])),
        "nil array": set(array(Some(nullable("string")), None, &[])),
        "multiple duplicates": set(string_map(typed("string"))),
    }));
    let obj = json!({
        "strings": ["a", "b", "a"],
        "integers": [1, 2, 1],
        "booleans": [false, true, true],
        "float64": [1.0, 2.0, 2.0],
        "nil": ["a", null, null],
        "empty maps": [{"a": "b"}, {}, {}],
        "map values": [{"a": "b"}, {"a": "c"}, {"a": "b"}],
        "nil values": [{"a": null}, {"b": "c", "a": null}],
        "array": [[], ["a"], ["b"], ["a"]],
        "nil array": [[], [null], [null, null], [null], ["a"]],
        "multiple duplicates": [{"a": "b"}, {"a": "c"}, {"a": "b"}, {"a": "c"}, {"a": "c"}],
    });
    check(
        "set list with compound map items",
        Some(schema),
        Some(obj),
        vec![
            dup("root.strings[2]"),
            dup("root.integers[2]"),
            dup("root.booleans[2]"),
            dup("root.float64[2]"),
            dup("root.nil[2]"),
            dup("root.empty maps[2]"),
            dup("root.map values[2]"),
            dup("root.array[3]"),
            dup("root.nil array[3]"),
            dup("root.multiple duplicates[2]"),
            dup("root.multiple duplicates[3]"),
        ],
    );
}

#[test]
fn validation_test_go_test_validate_list_sets_and_maps_map_list_with_compound_map_items() {
    let map = |items: Value, keys: &[&str]| array(Some(items), Some("map"), keys);
    let a_list = || json!({"type": "array", "nullable": true, "items": typed("string")});
    let schema = object(json!({
        "strings": map(typed("string"), &["a"]),
        "integers": map(typed("integer"), &["a"]),
        "booleans": map(typed("boolean"), &["a"]),
        "float64": map(typed("number"), &["a"]),
        "nil": map(nullable("string"), &["a"]),
        "array": map(array(Some(typed("string")), None, &[]), &["a"]),
        "one key": map(string_map(typed("string")), &["a"]),
        "two keys": map(string_map(typed("string")), &["a", "b"]),
        "undefined key": map(string_map(typed("string")), &["a", "b"]),
        "compound key": map(string_map(nullable("string")), &["a"]),
        "nil key": map(object(json!({"a": a_list(), "c": typed("string")})), &["a"]),
        "nil item": map(object(json!({"a": a_list(), "c": typed("string")})), &["a"]),
        "nil item multiple keys": map(
            object(json!({"a": a_list(), "b": typed("string"), "c": typed("string")})),
            &["a", "b"]),
        "multiple duplicates": map(string_map(nullable("string")), &["a"]),
    }));
    let obj = json!({
        "strings": ["a"],
        "integers": [1],
        "booleans": [false],
        "float64": [1.0],
        "nil": [null],
        "array": [["a"]],
        "one key": [{"a": "0", "c": "2"}, {"a": "1", "c": "1"}, {"a": "1", "c": "2"}, {}],
        "two keys": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "b": "2", "c": "2"},
                     {"a": "1", "b": "2", "c": "3"}, {}],
        "undefined key": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "c": "2"},
                          {"a": "1", "c": "3"}, {}],
        "compound key": [{"a": [], "c": "1"}, {"a": null, "c": "1"}, {"a": ["a"], "c": "1"},
                         {"a": ["a", 42], "c": "2"}, {"a": ["a", 42], "c": ["3"]}],
        "nil key": [{"a": [], "c": "1"}, {"a": null, "c": "1"}, {"c": "1"}, {"a": null}],
        "nil item": [null, {"a": "0", "c": "1"}, {"a": null}, {"c": "1"}],
        "nil item multiple keys": [null, {"b": "0", "c": "1"}, {"a": null}, {"c": "1"}],
        "multiple duplicates": [
            {"a": [], "c": "1"}, {"a": null, "c": "1"}, {"a": ["a"], "c": "1"},
            {"a": ["a", 42], "c": "2"}, {"a": ["a", 42], "c": ["3"]},
            {"a": ["a"], "c": "1", "d": "1"}, {"a": ["a"], "c": "1", "d": "2"}],
    });
    check(
        "map list with compound map items",
        Some(schema),
        Some(obj),
        vec![
            invalid("root.strings[0]"),
            invalid("root.integers[0]"),
            invalid("root.booleans[0]"),
            invalid("root.float64[0]"),
            invalid("root.array[0]"),
            dup("root.one key[2]"),
            dup("root.two keys[2]"),
            dup("root.undefined key[2]"),
            dup("root.compound key[4]"),
            dup("root.nil key[3]"),
            dup("root.nil item[3]"),
            dup("root.nil item multiple keys[3]"),
            dup("root.multiple duplicates[4]"),
            dup("root.multiple duplicates[5]"),
        ],
    );
}
