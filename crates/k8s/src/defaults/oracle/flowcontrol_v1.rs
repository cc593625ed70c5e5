//! flowcontrol.apiserver.k8s.io/v1: kubernetes/kubernetes
//! `pkg/apis/flowcontrol/v1/defaults_test.go` (commit 430c2267), whose cases compare the
//! whole object. FlowSchema, the queuing defaults and the default shares are not tested
//! there; those cases are read off `pkg/apis/flowcontrol/v1/defaults.go` (its constants
//! `FlowSchemaDefaultMatchingPrecedence` 1000, `PriorityLevelConfigurationDefaultHandSize`
//! 8, `...Queues` 64, `...QueueLengthLimit` 50, `...NominalConcurrencyShares` 30), an oracle
//! of the source rather than of a kube test.

use serde_json::json;

use super::defaulted;

const API: &str = "flowcontrol.apiserver.k8s.io/v1";

#[test]
fn test_default_with_priority_level_configuration() {
    for (name, original, want) in [
        (
            "Defaulting for Exempt",
            json!({"spec": {"type": "Exempt", "exempt": {}}}),
            json!({"spec": {"type": "Exempt",
                "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}}),
        ),
        (
            "LendablePercent is not specified in Limited, should default to zero",
            json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                "limitResponse": {"type": "Reject"}}}}),
            json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                "lendablePercent": 0, "limitResponse": {"type": "Reject"}}}}),
        ),
    ] {
        let got = defaulted(API, "PriorityLevelConfiguration", original);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn set_defaults_flow_schema_spec() {
    let got = defaulted(
        API,
        "FlowSchema",
        json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}}),
    );
    assert_eq!(got["spec"]["matchingPrecedence"], 1000);
    let got = defaulted(
        API,
        "FlowSchema",
        json!({"spec": {"matchingPrecedence": 0}}),
    );
    assert_eq!(
        got["spec"]["matchingPrecedence"], 1000,
        "0 is unset (non-pointer)"
    );
    let got = defaulted(
        API,
        "FlowSchema",
        json!({"spec": {"matchingPrecedence": 500}}),
    );
    assert_eq!(got["spec"]["matchingPrecedence"], 500);
}

#[test]
fn set_defaults_limited_priority_level_configuration() {
    let got = defaulted(
        API,
        "PriorityLevelConfiguration",
        json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
            "queuing": {}}}}}),
    );
    assert_eq!(
        got,
        json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30,
            "lendablePercent": 0, "limitResponse": {"type": "Queue", "queuing": {
                "handSize": 8, "queues": 64, "queueLengthLimit": 50}}}}})
    );
    // A pointer in v1: an explicit 0 is a level that holds its requests, and stays.
    let got = defaulted(
        API,
        "PriorityLevelConfiguration",
        json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 0,
            "limitResponse": {"type": "Reject"}}}}),
    );
    assert_eq!(got["spec"]["limited"]["nominalConcurrencyShares"], 0);
}

#[test]
fn set_defaults_queuing_configuration() {
    // Non-pointer ints: 0 is unset; given values stay.
    let got = defaulted(
        API,
        "PriorityLevelConfiguration",
        json!({"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 10,
            "lendablePercent": 5, "limitResponse": {"type": "Queue",
                "queuing": {"handSize": 0, "queues": 128, "queueLengthLimit": 10}}}}}),
    );
    assert_eq!(
        got["spec"]["limited"]["limitResponse"]["queuing"],
        json!({"handSize": 8, "queues": 128, "queueLengthLimit": 10})
    );
}
