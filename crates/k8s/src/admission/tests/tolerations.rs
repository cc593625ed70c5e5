//! DefaultTolerationSeconds, against every case of `TestForgivenessAdmission` in
//! `plugin/pkg/admission/defaulttolerationseconds/admission_test.go` (the file as it stood
//! with `spec.tolerations` and the "alpha" keys `node.alpha.kubernetes.io/notReady` and
//! `.../unreachable`; those keys are no longer special, which is what their cases show:
//! a toleration of another key tolerates nothing the plugin adds).

use serde_json::{json, Value};

use crate::admission::tolerations::mutate;

const NOT_READY: &str = "node.kubernetes.io/not-ready";
const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const ALPHA_NOT_READY: &str = "node.alpha.kubernetes.io/notReady";
const ALPHA_UNREACHABLE: &str = "node.alpha.kubernetes.io/unreachable";

fn t(key: &str, effect: &str, seconds: i64) -> Value {
    let mut t = json!({"key": key, "operator": "Exists", "tolerationSeconds": seconds});
    if !effect.is_empty() {
        t["effect"] = json!(effect);
    }
    t
}

fn no_execute(key: &str, seconds: i64) -> Value {
    t(key, "NoExecute", seconds)
}

#[test]
fn test_forgiveness_admission() {
    let foo = json!({"key": "foo", "operator": "Equal", "value": "bar", "effect": "NoSchedule",
        "tolerationSeconds": 700});
    let wildcard = json!({"operator": "Exists", "tolerationSeconds": 700});
    let cases: Vec<(&str, Vec<Value>, Vec<Value>)> = vec![
        (
            "pod has no tolerations",
            vec![],
            vec![no_execute(NOT_READY, 300), no_execute(UNREACHABLE, 300)],
        ),
        (
            "pod has alpha tolerations",
            vec![
                no_execute(ALPHA_NOT_READY, 300),
                no_execute(ALPHA_UNREACHABLE, 300),
            ],
            vec![
                no_execute(ALPHA_NOT_READY, 300),
                no_execute(ALPHA_UNREACHABLE, 300),
                no_execute(NOT_READY, 300),
                no_execute(UNREACHABLE, 300),
            ],
        ),
        (
            "pod has alpha not-ready toleration",
            vec![no_execute(ALPHA_NOT_READY, 300)],
            vec![
                no_execute(ALPHA_NOT_READY, 300),
                no_execute(NOT_READY, 300),
                no_execute(UNREACHABLE, 300),
            ],
        ),
        (
            "pod has alpha unreachable toleration",
            vec![no_execute(ALPHA_UNREACHABLE, 300)],
            vec![
                no_execute(ALPHA_UNREACHABLE, 300),
                no_execute(NOT_READY, 300),
                no_execute(UNREACHABLE, 300),
            ],
        ),
        (
            "pod has tolerations, but none is for taint not-ready or unreachable",
            vec![foo.clone()],
            vec![
                foo,
                no_execute(NOT_READY, 300),
                no_execute(UNREACHABLE, 300),
            ],
        ),
        (
            "pod specified a toleration for taint not-ready:NoExecute",
            vec![no_execute(NOT_READY, 700)],
            vec![no_execute(NOT_READY, 700), no_execute(UNREACHABLE, 300)],
        ),
        (
            "pod specified a toleration for taint unreachable:NoExecute",
            vec![no_execute(UNREACHABLE, 700)],
            vec![no_execute(UNREACHABLE, 700), no_execute(NOT_READY, 300)],
        ),
        (
            "pod specified tolerations for both",
            vec![no_execute(NOT_READY, 700), no_execute(UNREACHABLE, 700)],
            vec![no_execute(NOT_READY, 700), no_execute(UNREACHABLE, 700)],
        ),
        (
            "pod specified toleration for taint unreachable (no effect)",
            vec![t(UNREACHABLE, "", 700)],
            vec![t(UNREACHABLE, "", 700), no_execute(NOT_READY, 300)],
        ),
        (
            "pod has wildcard toleration for all kind of taints",
            vec![wildcard.clone()],
            vec![wildcard],
        ),
    ];
    for (description, requested, expected) in cases {
        let mut pod = json!({"spec": {"tolerations": requested}});
        mutate(&mut pod);
        assert_eq!(pod["spec"]["tolerations"], json!(expected), "{description}");
    }
}
