//! Fuzz support the workspace's test suites share (feature `testing`): one case-count knob
//! and one generator of arbitrary JSON, so every fuzz target is run and fed the same way.

use proptest::prelude::*;
use serde_json::{json, Value};

/// `default` cases, or `DRIFTD_FUZZ_CASES` for a long run.
pub fn fuzz_config(default: u32) -> ProptestConfig {
    let cases = std::env::var("DRIFTD_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// JSON values of any shape, a few levels deep: quantities among the strings, keys that
/// need JSON Pointer escaping among the keys.
pub fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        Just(json!("500m")),
        Just(json!("1Gi")),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop_oneof!["[a-zA-Z]{1,8}", "[a-z~/.]{1,6}", Just("name".to_string())],
                inner,
                0..4
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
