//! Fuzzing on stable Rust: property tests over arbitrary and near-valid input for the
//! parsers and checks that read untrusted manifests (quantities, Go base64, names, the
//! create validation). None may panic; each keeps its own invariants.
//!
//! A short run by default; `DRIFTD_FUZZ_CASES=200000 cargo test --release -p driftd-k8s
//! fuzz_` for a long one. Failures proptest finds are kept in `proptest-regressions/` and
//! replayed first on every run.

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::quantity;
use crate::testing::{any_json, fuzz_config};
use crate::validation::{self, NameRule};

/// Strings near a quantity: digits, signs, dots, exponents and suffixes in any order.
fn near_quantity() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        "[0-9]{1,25}",
        Just(".".to_string()),
        Just("-".to_string()),
        Just("+".to_string()),
        Just("e".to_string()),
        Just("E".to_string()),
        prop::sample::select(vec![
            "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "i",
            " "
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(piece, 0..8).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(fuzz_config(512))]

    #[test]
    fn fuzz_quantity_parser(s in prop_oneof![near_quantity(), ".{0,30}"]) {
        if let Some(q) = quantity::parse(&s) {
            // The canonical form parses again, to the same amount, and is a fixed point.
            let canonical = q.canonical();
            let again = quantity::parse(&canonical);
            prop_assert!(again.is_some(), "{s:?} -> {canonical:?} does not parse");
            let again = again.unwrap();
            prop_assert!(again.same_amount(&q), "{s:?} -> {canonical:?}");
            prop_assert_eq!(again.canonical(), canonical);
        }
        let _ = quantity::parse_value(&Value::from(s.clone()));
    }

    #[test]
    fn fuzz_go_base64(s in prop_oneof!["[A-Za-z0-9+/=\n\r]{0,40}", ".{0,40}"]) {
        use base64::Engine as _;
        if let Ok(bytes) = validation::base64_decode(&s) {
            // What decodes, re-encoded canonically, decodes to the same bytes.
            let canonical = base64::engine::general_purpose::STANDARD.encode(&bytes);
            prop_assert_eq!(validation::base64_decode(&canonical), Ok(bytes));
        } else if let Err(offset) = validation::base64_decode(&s) {
            prop_assert!(offset <= s.len());
        }
    }

    #[test]
    fn fuzz_names_and_quoting(name in ".{0,80}", prefix in any::<bool>()) {
        let quoted = validation::quote(&name);
        prop_assert!(quoted.starts_with('"') && quoted.ends_with('"'));
        prop_assert!(!quoted[1..quoted.len() - 1].chars().any(char::is_control));
        for rule in [NameRule::Subdomain, NameRule::Label, NameRule::Dns1035Label, NameRule::PathSegment, NameRule::CronJob] {
            let errors = rule.check(&name, prefix);
            // A subdomain is also a valid path segment; a label is also a subdomain.
            if rule == NameRule::Label && errors.is_empty() && !prefix {
                prop_assert!(NameRule::Subdomain.check(&name, false).is_empty());
            }
            if rule == NameRule::Subdomain && errors.is_empty() && !prefix {
                prop_assert!(NameRule::PathSegment.check(&name, false).is_empty());
            }
        }
        let _ = validation::is_qualified_name(&name);
        let _ = validation::is_valid_label_value(&name);
        let _ = validation::is_config_map_key(&name);
        prop_assert!(validation::generated_name(&name).len() <= name.len().max(58) + 5);
    }

    #[test]
    fn fuzz_create_validation(
        kind in prop::sample::select(vec![
            ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "Pod"), ("v1", "Service"),
            ("apps/v1", "Deployment"), ("batch/v1", "CronJob"), ("v1", "Namespace"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"), ("example.com/v1", "Widget"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ]),
        metadata in any_json(),
        spec in any_json(),
        data in any_json(),
        namespaced in any::<bool>(),
    ) {
        let object = json!({"apiVersion": kind.0, "kind": kind.1, "metadata": metadata,
            "spec": spec, "data": data});
        // Never panics; a refusal names a field unless the object as a whole is wrong.
        if let Err(e) = validation::validate_create(&object, namespaced) {
            prop_assert!(!e.to_string().is_empty());
        }
    }
}
