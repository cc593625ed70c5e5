//! The desired state a server-side dry run gives (`compare = "dry-run"`): for what no static
//! model covers (mutating webhooks, admission plugins a cluster adds, CRDs with conversion
//! webhooks), the object kube-apiserver answers to a server-side apply dry run of the
//! committed manifest is what the committed state becomes once stored, and live is
//! compared against it instead of against manifest + modelled defaults.
//!
//! On an existing object the answer is the live object with the manifest applied (with
//! `force`, fields other managers own are taken rather than refused) and then admitted:
//! it keeps everything live has beyond the manifest, so comparing live against it reports
//! exactly what applying the manifest again would change. Server bookkeeping that every
//! write moves (`resourceVersion`, `generation`, `managedFields`, ...) and `status` are not
//! part of it.

use super::walk::SERVER_METADATA;
use serde_json::Value;

/// The desired object a dry-run answer stands for: the answer without server bookkeeping
/// (the metadata the differ never compares) and `status`.
pub fn expected_desired(answer: &Value) -> Value {
    let mut desired = answer.clone();
    if let Some(map) = desired.as_object_mut() {
        map.remove("status");
        if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in SERVER_METADATA {
                meta.remove(*field);
            }
        }
    }
    desired
}

/// Whether a dry-run answer was made against another version of the object than `live`
/// (`None`: the object does not exist). A dry-run update answers with the resourceVersion
/// it read (`DryRunnableStorage.GuaranteedUpdate` in `staging/src/k8s.io/apiserver/pkg/
/// registry/generic/registry/dryrun.go` reads, updates and copies without writing, so it
/// assigns none; a dry-run create has none), so the answer describes `live` only when they
/// are equal.
pub fn made_against_other_version(answer: &Value, live: Option<&Value>) -> bool {
    let rv = |o: &Value| {
        o.pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|rv| !rv.is_empty())
            .map(str::to_string)
    };
    rv(answer) != live.and_then(rv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_bookkeeping_and_status_are_not_desired() {
        let answer = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "shop", "uid": "u", "resourceVersion": "7",
                "creationTimestamp": "t", "generation": 2, "managedFields": [{"manager": "driftd"}],
                "labels": {"injected": "yes"}},
            "data": {"k": "v"}, "status": {"phase": "x"}
        });
        assert_eq!(
            expected_desired(&answer),
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": "shop", "labels": {"injected": "yes"}},
                "data": {"k": "v"}})
        );
    }

    #[test]
    fn an_answer_describes_only_the_live_version_it_was_made_against() {
        let answer = json!({"metadata": {"resourceVersion": "7"}});
        let live = |rv: &str| json!({"metadata": {"resourceVersion": rv}});
        assert!(!made_against_other_version(&answer, Some(&live("7"))));
        assert!(made_against_other_version(&answer, Some(&live("8"))));
        assert!(made_against_other_version(&answer, None));
        // A dry-run create (the object did not exist) against a missing object.
        assert!(!made_against_other_version(&json!({"metadata": {}}), None));
        assert!(made_against_other_version(
            &json!({"metadata": {}}),
            Some(&live("3"))
        ));
    }
}
