//! Whether a live object is *current*: its controller has acted on its newest spec. What
//! `driftd reconcile --apply` and remediation wait for before applying the objects that
//! depend on it. Workloads follow `kubectl rollout status` (kubernetes/kubectl
//! `pkg/polymorphichelpers/rollout_status.go`), CustomResourceDefinitions wait for their
//! `Established` condition (what kube-apiserver's `crdHandler` needs before it serves the
//! custom resources); every other kind is current once it exists.

use serde_json::Value;

/// A live object's progress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Current,
    /// Still rolling out: what it waits for, in kubectl's words.
    InProgress(String),
    /// It will not become current by waiting (a Deployment past its progress deadline).
    Failed(String),
}

fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// The readiness of `object` (of `group`/`kind`) as read from the API server.
pub fn readiness(group: &str, kind: &str, object: &Value) -> Readiness {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let generation = int(object, "/metadata/generation");
    let observed = int(object, "/status/observedGeneration");
    let replicas = object.pointer("/spec/replicas").and_then(Value::as_i64);
    match (group, kind) {
        ("apps", "Deployment") => {
            if generation > observed {
                return Readiness::InProgress(
                    "waiting for deployment spec update to be observed".into(),
                );
            }
            if condition(object, "Progressing")
                .is_some_and(|c| c["reason"] == "ProgressDeadlineExceeded")
            {
                return Readiness::Failed(format!(
                    "deployment {name:?} exceeded its progress deadline"
                ));
            }
            let updated = int(object, "/status/updatedReplicas");
            let total = int(object, "/status/replicas");
            let available = int(object, "/status/availableReplicas");
            if let Some(want) = replicas.filter(|want| updated < *want) {
                return Readiness::InProgress(format!(
                    "waiting for deployment {name:?} rollout to finish: {updated} out of {want} new replicas have been updated"
                ));
            }
            if total > updated {
                return Readiness::InProgress(format!(
                    "waiting for deployment {name:?} rollout to finish: {} old replicas are pending termination",
                    total - updated
                ));
            }
            if available < updated {
                return Readiness::InProgress(format!(
                    "waiting for deployment {name:?} rollout to finish: {available} of {updated} updated replicas are available"
                ));
            }
            Readiness::Current
        }
        ("apps", "DaemonSet") => {
            if generation > observed {
                return Readiness::InProgress(
                    "waiting for daemon set spec update to be observed".into(),
                );
            }
            let desired = int(object, "/status/desiredNumberScheduled");
            let updated = int(object, "/status/updatedNumberScheduled");
            let available = int(object, "/status/numberAvailable");
            if updated < desired {
                return Readiness::InProgress(format!(
                    "waiting for daemon set {name:?} rollout to finish: {updated} out of {desired} new pods have been updated"
                ));
            }
            if available < desired {
                return Readiness::InProgress(format!(
                    "waiting for daemon set {name:?} rollout to finish: {available} of {desired} updated pods are available"
                ));
            }
            Readiness::Current
        }
        ("apps", "StatefulSet") => {
            if observed == 0 || generation > observed {
                return Readiness::InProgress(
                    "waiting for statefulset spec update to be observed".into(),
                );
            }
            let ready = int(object, "/status/readyReplicas");
            if let Some(want) = replicas.filter(|want| ready < *want) {
                return Readiness::InProgress(format!(
                    "waiting for {} pods to be ready",
                    want - ready
                ));
            }
            if let (Some(want), Some(partition)) = (
                replicas,
                object
                    .pointer("/spec/updateStrategy/rollingUpdate/partition")
                    .and_then(Value::as_i64),
            ) {
                let updated = int(object, "/status/updatedReplicas");
                if updated < want - partition {
                    return Readiness::InProgress(format!(
                        "waiting for partitioned roll out to finish: {updated} out of {} new pods have been updated",
                        want - partition
                    ));
                }
                return Readiness::Current;
            }
            let update = object.pointer("/status/updateRevision");
            if update.is_some() && update != object.pointer("/status/currentRevision") {
                return Readiness::InProgress(
                    "waiting for statefulset rolling update to complete".into(),
                );
            }
            Readiness::Current
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            match condition(object, "Established") {
                Some(c) if c["status"] == "True" => Readiness::Current,
                _ => Readiness::InProgress(format!(
                    "waiting for CustomResourceDefinition {name:?} to be established"
                )),
            }
        }
        _ => Readiness::Current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(generation: i64, status: Value) -> Value {
        json!({"metadata": {"name": "web", "generation": generation},
               "spec": {"replicas": 2}, "status": status})
    }

    #[test]
    fn a_deployment_is_current_once_its_rollout_is_complete_as_kubectl_rollout_status_says() {
        let cases = [
            (
                deployment(2, json!({"observedGeneration": 1})),
                "spec update to be observed",
            ),
            (
                deployment(
                    2,
                    json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1}),
                ),
                "1 out of 2 new replicas",
            ),
            (
                deployment(
                    2,
                    json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 2}),
                ),
                "1 old replicas are pending termination",
            ),
            (
                deployment(
                    2,
                    json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1}),
                ),
                "1 of 2 updated replicas are available",
            ),
        ];
        for (object, waiting) in cases {
            match readiness("apps", "Deployment", &object) {
                Readiness::InProgress(why) => assert!(why.contains(waiting), "{why}"),
                other => panic!("{object}: {other:?}"),
            }
        }
        let done = deployment(
            2,
            json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2}),
        );
        assert_eq!(readiness("apps", "Deployment", &done), Readiness::Current);
        let stuck = deployment(
            2,
            json!({"observedGeneration": 2, "conditions": [
                {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]}),
        );
        assert!(matches!(
            readiness("apps", "Deployment", &stuck),
            Readiness::Failed(_)
        ));
    }

    #[test]
    fn statefulsets_and_daemonsets_follow_their_own_counters() {
        let sts = |status: Value| {
            json!({"metadata": {"name": "db", "generation": 1}, "spec": {"replicas": 2},
                   "status": status})
        };
        assert!(matches!(
            readiness(
                "apps",
                "StatefulSet",
                &sts(json!({"observedGeneration": 1, "readyReplicas": 1}))
            ),
            Readiness::InProgress(_)
        ));
        assert!(matches!(
            readiness(
                "apps",
                "StatefulSet",
                &sts(json!({"observedGeneration": 1, "readyReplicas": 2,
                            "updateRevision": "b", "currentRevision": "a"}))
            ),
            Readiness::InProgress(_)
        ));
        assert_eq!(
            readiness(
                "apps",
                "StatefulSet",
                &sts(json!({"observedGeneration": 1, "readyReplicas": 2,
                            "updateRevision": "b", "currentRevision": "b"}))
            ),
            Readiness::Current
        );
        let ds = |available: i64| {
            json!({"metadata": {"name": "agent", "generation": 1}, "status": {
                "observedGeneration": 1, "desiredNumberScheduled": 3,
                "updatedNumberScheduled": 3, "numberAvailable": available}})
        };
        assert!(matches!(
            readiness("apps", "DaemonSet", &ds(2)),
            Readiness::InProgress(_)
        ));
        assert_eq!(readiness("apps", "DaemonSet", &ds(3)), Readiness::Current);
    }

    #[test]
    fn a_crd_is_current_once_established_and_other_kinds_once_they_exist() {
        let crd = |status: &str| {
            json!({"metadata": {"name": "widgets.example.com"}, "status": {"conditions": [
                {"type": "NamesAccepted", "status": "True"},
                {"type": "Established", "status": status}]}})
        };
        let group = "apiextensions.k8s.io";
        let kind = "CustomResourceDefinition";
        assert!(matches!(
            readiness(group, kind, &crd("False")),
            Readiness::InProgress(_)
        ));
        assert_eq!(readiness(group, kind, &crd("True")), Readiness::Current);
        assert_eq!(
            readiness("", "ConfigMap", &json!({"metadata": {"name": "c"}})),
            Readiness::Current
        );
    }
}
