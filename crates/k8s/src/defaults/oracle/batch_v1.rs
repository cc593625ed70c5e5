//! kubernetes/kubernetes `pkg/apis/batch/v1/defaults_test.go` (the version with pod
//! failure policies and JobPodReplacementPolicy, file id 691978499 in the index).
//!
//! JobPodReplacementPolicy is on (beta) in v1.32, so `podReplacementPolicy` is defaulted
//! in every case; the cases the Go file runs with the gate off expect it absent, and their
//! port expects the gate-on value instead (`Failed` with a pod failure policy,
//! `TerminatingOrFailed` without), as the gate-on cases of the same file do.

use serde_json::{json, Value};

use super::{defaulted, expect};

/// The fields the Go test compares, as `(pointer, expected)` under the Job.
#[allow(clippy::too_many_arguments)]
fn want(
    completions: Option<i64>,
    parallelism: Option<i64>,
    backoff: i64,
    mode: &str,
    suspend: bool,
    replacement: &str,
    manual: bool,
) -> Vec<(&'static str, Option<Value>)> {
    vec![
        ("/spec/completions", completions.map(|c| json!(c))),
        ("/spec/parallelism", parallelism.map(|p| json!(p))),
        ("/spec/backoffLimit", Some(json!(backoff))),
        ("/spec/completionMode", Some(json!(mode))),
        ("/spec/suspend", Some(json!(suspend))),
        ("/spec/podReplacementPolicy", Some(json!(replacement))),
        ("/spec/manualSelector", Some(json!(manual))),
    ]
}

fn job(spec: Value, labels: Option<Value>) -> Value {
    let mut spec = spec;
    spec["template"] = json!({"metadata": {"labels": {"default": "default"}}});
    let mut j = json!({"spec": spec});
    if let Some(l) = labels {
        j["metadata"] = json!({"labels": l});
    }
    j
}

#[test]
fn test_set_default_job() {
    let nonindexed = "NonIndexed";
    let cases = [
        (
            "Pod failure policy and defaulting for pod replacement policy",
            job(
                json!({"podFailurePolicy": {"rules": [{"action": "FailJob",
                    "onExitCodes": {"operator": "In", "values": [1]}}]}}),
                None,
            ),
            want(Some(1), Some(1), 6, nonindexed, false, "Failed", false),
            true,
        ),
        (
            "All unspecified and podReplacementPolicyEnabled -> sets all to default values",
            job(json!({}), None),
            want(Some(1), Some(1), 6, nonindexed, false, "TerminatingOrFailed", false),
            true,
        ),
        (
            "All unspecified -> sets all to default values",
            job(json!({}), None),
            want(Some(1), Some(1), 6, nonindexed, false, "TerminatingOrFailed", false),
            true,
        ),
        (
            "All unspecified, suspend job enabled -> sets all to default values",
            job(json!({}), None),
            want(Some(1), Some(1), 6, nonindexed, false, "TerminatingOrFailed", false),
            true,
        ),
        (
            "suspend set, everything else is defaulted",
            job(json!({"suspend": true}), None),
            want(Some(1), Some(1), 6, nonindexed, true, "TerminatingOrFailed", false),
            true,
        ),
        (
            "All unspecified -> all pointers are defaulted and no default labels",
            job(json!({}), Some(json!({"mylabel": "myvalue"}))),
            want(Some(1), Some(1), 6, nonindexed, false, "TerminatingOrFailed", false),
            false,
        ),
        (
            "WQ: Parallelism explicitly 0 and completions unset -> BackoffLimit is defaulted",
            job(json!({"parallelism": 0}), None),
            want(None, Some(0), 6, nonindexed, false, "TerminatingOrFailed", false),
            true,
        ),
        (
            "WQ: Parallelism explicitly 2 and completions unset -> BackoffLimit is defaulted",
            job(json!({"parallelism": 2}), None),
            want(None, Some(2), 6, nonindexed, false, "TerminatingOrFailed", false),
            true,
        ),
        (
            "Completions explicitly 2 and others unset -> parallelism and BackoffLimit are defaulted",
            job(json!({"completions": 2}), None),
            want(Some(2), Some(1), 6, nonindexed, false, "TerminatingOrFailed", false),
            true,
        ),
        (
            "BackoffLimit explicitly 5 and others unset -> parallelism and completions are defaulted",
            job(json!({"backoffLimit": 5}), None),
            want(Some(1), Some(1), 5, nonindexed, false, "TerminatingOrFailed", false),
            true,
        ),
        (
            "All set -> no change",
            job(
                json!({"completions": 8, "parallelism": 9, "backoffLimit": 10,
                    "completionMode": "NonIndexed", "suspend": false,
                    "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": false}),
                None,
            ),
            want(Some(8), Some(9), 10, nonindexed, false, "TerminatingOrFailed", false),
            true,
        ),
        (
            "All set, flipped -> no change",
            job(
                json!({"completions": 11, "parallelism": 10, "backoffLimit": 9,
                    "completionMode": "Indexed", "suspend": true,
                    "podReplacementPolicy": "Failed", "manualSelector": true}),
                None,
            ),
            want(Some(11), Some(10), 9, "Indexed", true, "Failed", true),
            true,
        ),
        (
            "BackoffLimitPerIndex specified, but no BackoffLimit -> default BackoffLimit to max int32",
            job(
                json!({"completions": 11, "parallelism": 10, "backoffLimitPerIndex": 1,
                    "completionMode": "Indexed", "suspend": true, "manualSelector": false}),
                None,
            ),
            want(Some(11), Some(10), 2147483647, "Indexed", true, "TerminatingOrFailed", false),
            true,
        ),
        (
            "BackoffLimitPerIndex and BackoffLimit specified -> no change",
            job(
                json!({"completions": 11, "parallelism": 10, "backoffLimit": 3,
                    "backoffLimitPerIndex": 1, "completionMode": "Indexed", "suspend": true,
                    "manualSelector": true}),
                None,
            ),
            want(Some(11), Some(10), 3, "Indexed", true, "TerminatingOrFailed", true),
            true,
        ),
    ];
    for (name, original, want, expect_labels) in cases {
        let got = defaulted("batch/v1", "Job", original);
        expect(name, &got, &want);
        let labels_from_template =
            got.pointer("/metadata/labels") == got.pointer("/spec/template/metadata/labels");
        assert_eq!(labels_from_template, expect_labels, "{name}: {got}");
    }
}

#[test]
fn test_set_default_job_pod_failure_policy() {
    // "Pod failure policy with some field values unspecified -> set default values": an
    // onPodConditions pattern without status matches status True.
    let original = job(
        json!({"podFailurePolicy": {"rules": [
            {"action": "FailJob", "onPodConditions": [
                {"type": "DisruptionTarget", "status": "True"},
                {"type": "MemoryLimitExceeded", "status": "False"},
                {"type": "DiskLimitExceeded"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}},
            {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}),
        None,
    );
    let got = defaulted("batch/v1", "Job", original);
    assert_eq!(
        got["spec"]["podFailurePolicy"],
        json!({"rules": [
            {"action": "FailJob", "onPodConditions": [
                {"type": "DisruptionTarget", "status": "True"},
                {"type": "MemoryLimitExceeded", "status": "False"},
                {"type": "DiskLimitExceeded", "status": "True"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}},
            {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]})
    );
    expect(
        "pod failure policy",
        &got,
        &want(Some(1), Some(1), 6, "NonIndexed", false, "Failed", false),
    );
}

#[test]
fn test_set_default_cron_job() {
    for (name, spec, concurrency, suspend, successful, failed) in [
        (
            "empty batchv1.CronJob should default batchv1.ConcurrencyPolicy and Suspend",
            json!({}),
            "Allow",
            false,
            3,
            1,
        ),
        (
            "set fields should not be defaulted",
            json!({"concurrencyPolicy": "Forbid", "suspend": true,
                "successfulJobsHistoryLimit": 5, "failedJobsHistoryLimit": 5}),
            "Forbid",
            true,
            5,
            5,
        ),
    ] {
        let got = defaulted("batch/v1", "CronJob", json!({"spec": spec}));
        expect(
            name,
            &got,
            &[
                ("/spec/concurrencyPolicy", Some(json!(concurrency))),
                ("/spec/suspend", Some(json!(suspend))),
                ("/spec/successfulJobsHistoryLimit", Some(json!(successful))),
                ("/spec/failedJobsHistoryLimit", Some(json!(failed))),
            ],
        );
    }
}
