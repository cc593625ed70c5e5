//! kubernetes/kubernetes `pkg/apis/apps/v1/defaults_test.go` (commit 025f2834). Each Go
//! case compares the whole `spec`, and so does its port.

use serde_json::{json, Value};

use super::{check_no_template_requests, check_replicas, defaulted};

/// The defaulted pod template the Go tests start from (`defaultTemplate`), with `labels`.
fn template(labels: Option<Value>) -> Value {
    let mut t = json!({"metadata": {}, "spec": {
        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "securityContext": {},
        "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"}});
    if let Some(l) = labels {
        t["metadata"]["labels"] = l;
    }
    t
}

fn foo_bar() -> Option<Value> {
    Some(json!({"foo": "bar"}))
}

#[track_caller]
fn spec_is(kind: &str, name: &str, object: Value, want: Value) {
    let got = defaulted("apps/v1", kind, object);
    assert_eq!(got["spec"], want, "{kind} {name}");
}

#[test]
fn test_set_default_daemon_set_spec() {
    let rolling =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}});
    spec_is(
        "DaemonSet",
        "labels change/defaulting",
        json!({"spec": {"template": template(foo_bar())}}),
        json!({"template": template(foo_bar()), "updateStrategy": rolling, "revisionHistoryLimit": 10}),
    );
    spec_is(
        "DaemonSet",
        "labels change/defaulting, own history limit",
        json!({"metadata": {"labels": {"bar": "foo"}},
               "spec": {"template": template(foo_bar()), "revisionHistoryLimit": 1}}),
        json!({"template": template(foo_bar()), "updateStrategy": rolling, "revisionHistoryLimit": 1}),
    );
    spec_is(
        "DaemonSet",
        "OnDeleteDaemonSetStrategyType update strategy",
        json!({"spec": {"template": template(None), "updateStrategy": {"type": "OnDelete"}}}),
        json!({"template": template(None), "updateStrategy": {"type": "OnDelete"},
               "revisionHistoryLimit": 10}),
    );
    spec_is(
        "DaemonSet",
        "Custom unique label key",
        json!({"spec": {}}),
        json!({"template": template(None), "updateStrategy": rolling, "revisionHistoryLimit": 10}),
    );
}

#[test]
fn test_set_default_stateful_set() {
    // StatefulSetAutoDeletePVC is GA (locked on) in v1.32: the retention policy is defaulted
    // in every case, including those the Go file runs with the gate off, whose expectation
    // gains it. "PVC delete policy disabled, with policy specified" (gate off, policy not
    // completed) and the two "MaxUnavailable enabled" cases (MaxUnavailableStatefulSet is
    // alpha, off, in v1.32) are skipped.
    let retain = json!({"whenDeleted": "Retain", "whenScaled": "Retain"});
    let expected = |update: Value, policy: Value, management: &str| {
        json!({"replicas": 1, "template": template(foo_bar()), "podManagementPolicy": management,
               "updateStrategy": update, "persistentVolumeClaimRetentionPolicy": policy,
               "revisionHistoryLimit": 10})
    };
    let rolling = |partition: i64| json!({"type": "RollingUpdate", "rollingUpdate": {"partition": partition}});
    let cases = [
        (
            "labels and default update strategy",
            json!({}),
            expected(rolling(0), retain.clone(), "OrderedReady"),
        ),
        (
            "Alternate update strategy",
            json!({"updateStrategy": {"type": "OnDelete"}}),
            expected(json!({"type": "OnDelete"}), retain.clone(), "OrderedReady"),
        ),
        (
            "Parallel pod management policy",
            json!({"podManagementPolicy": "Parallel"}),
            expected(rolling(0), retain.clone(), "Parallel"),
        ),
        (
            "UpdateStrategy.RollingUpdate.Partition is not lost when UpdateStrategy.Type is not set",
            json!({"updateStrategy": {"rollingUpdate": {"partition": 42}}}),
            expected(rolling(42), retain.clone(), "OrderedReady"),
        ),
        (
            "PVC delete policy enabled, no policy specified",
            json!({}),
            expected(rolling(0), retain.clone(), "OrderedReady"),
        ),
        (
            "PVC delete policy enabled, with scaledown policy specified",
            json!({"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}}),
            expected(
                rolling(0),
                json!({"whenScaled": "Delete", "whenDeleted": "Retain"}),
                "OrderedReady",
            ),
        ),
        (
            "PVC delete policy disabled, with set deletion policy specified",
            json!({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}),
            expected(
                rolling(0),
                json!({"whenDeleted": "Delete", "whenScaled": "Retain"}),
                "OrderedReady",
            ),
        ),
        (
            "MaxUnavailable disabled, with maxUnavailable not specified",
            json!({}),
            expected(rolling(0), retain.clone(), "OrderedReady"),
        ),
        (
            "MaxUnavailable disabled, with default maxUnavailable specified",
            json!({"updateStrategy": {"rollingUpdate": {"partition": 0, "maxUnavailable": 1}}}),
            expected(
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}),
                retain.clone(),
                "OrderedReady",
            ),
        ),
        (
            "MaxUnavailable disabled, with non default maxUnavailable specified",
            json!({"updateStrategy": {"rollingUpdate": {"partition": 42, "maxUnavailable": 3}}}),
            expected(
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 42, "maxUnavailable": 3}}),
                retain.clone(),
                "OrderedReady",
            ),
        ),
    ];
    for (name, spec, want) in cases {
        let mut spec = spec;
        spec["template"] = template(foo_bar());
        spec_is("StatefulSet", name, json!({"spec": spec}), want);
    }
}

#[test]
fn test_set_default_deployment() {
    let rolling = |surge: Value| json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": "25%"}});
    let cases = [
        (
            json!({}),
            json!({"replicas": 1, "strategy": rolling(json!("25%")), "revisionHistoryLimit": 10,
                   "progressDeadlineSeconds": 600, "template": template(None)}),
        ),
        (
            json!({"replicas": 5, "strategy": {"rollingUpdate": {"maxSurge": 5}}}),
            json!({"replicas": 5, "strategy": rolling(json!(5)), "revisionHistoryLimit": 10,
                   "progressDeadlineSeconds": 600, "template": template(None)}),
        ),
        (
            json!({"replicas": 3, "strategy": {"type": "RollingUpdate", "rollingUpdate": null}}),
            json!({"replicas": 3, "strategy": rolling(json!("25%")), "revisionHistoryLimit": 10,
                   "progressDeadlineSeconds": 600, "template": template(None)}),
        ),
        (
            json!({"replicas": 5, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0}),
            json!({"replicas": 5, "strategy": {"type": "Recreate"}, "revisionHistoryLimit": 0,
                   "progressDeadlineSeconds": 600, "template": template(None)}),
        ),
        (
            json!({"replicas": 5, "strategy": {"type": "Recreate"},
                   "progressDeadlineSeconds": 30, "revisionHistoryLimit": 2}),
            json!({"replicas": 5, "strategy": {"type": "Recreate"},
                   "progressDeadlineSeconds": 30, "revisionHistoryLimit": 2,
                   "template": template(None)}),
        ),
    ];
    for (i, (spec, want)) in cases.into_iter().enumerate() {
        spec_is(
            "Deployment",
            &format!("case {i}"),
            json!({"spec": spec}),
            want,
        );
    }
}

#[test]
fn test_default_deployment_availability() {
    // The default maxUnavailable must leave a replica of the default count available.
    let d = defaulted("apps/v1", "Deployment", json!({}));
    let replicas = d["spec"]["replicas"].as_i64().unwrap();
    let percent: i64 = d["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"]
        .as_str()
        .and_then(|p| p.strip_suffix('%'))
        .and_then(|p| p.parse().ok())
        .unwrap();
    // GetScaledValueFromIntOrPercent(…, roundUp=false)
    let max_unavailable = replicas * percent / 100;
    assert!(replicas - max_unavailable > 0);
}

#[test]
fn test_set_default_replica_set_replicas() {
    check_replicas("apps/v1", "ReplicaSet");
}

#[test]
fn test_default_request_is_not_set_for_replica_set() {
    check_no_template_requests("apps/v1", "ReplicaSet");
}
