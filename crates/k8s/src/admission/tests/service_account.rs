//! The ServiceAccount plugin, against the mutation cases of
//! `plugin/pkg/admission/serviceaccount/admission_test.go`. The index holds that file as of
//! v1.21 (token expiry 3600, no `defaultMode`) and as carried by OpenShift's fork (3607,
//! `defaultMode: 0644` and a fourth, OpenShift-only `openshift-service-ca.crt` source); the
//! expected volume below is upstream v1.32's `TokenVolumeSource()`: `defaultMode`
//! `ProjectedVolumeSourceDefaultMode` (0644 = 420, "explicitly set default value, see
//! #104464") and `WarnOnlyBoundTokenExpirationSeconds` (3607), written out by hand.
//! Cases left out: the refusals of mirror pods that name an account or a secret (only a
//! kubelet creates mirror pods), `TestDeniesInvalidServiceAccount` and
//! `TestFetchesUncachedServiceAccount` (account lookups, not modelled), and the
//! `LimitSecretReferences` cases (off by default).

use serde_json::{json, Value};

use crate::admission::{mutate, AdmissionFacts, ServiceAccountFacts};

const TOKEN: &str = "kube-api-access-abcde";
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "myname", "namespace": "myns"},
        "spec": spec})
}

fn admitted(mut p: Value, facts: &AdmissionFacts) -> Value {
    mutate("Pod", &mut p, facts, TOKEN).unwrap();
    p
}

/// The token volume v1.32 adds, by hand from `TokenVolumeSource()`.
fn expected_volume() -> Value {
    json!({"name": TOKEN, "projected": {
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})
}

fn expected_mount() -> Value {
    json!({"name": TOKEN, "readOnly": true, "mountPath": MOUNT_PATH})
}

#[test]
fn test_ignores_mirror_pod() {
    // TestIgnoresMirrorPod: a mirror pod's spec is not modified (no account, no token).
    let mut p =
        pod(json!({"volumes": [{"name": "v", "emptyDir": {}}], "containers": [{"name": "c"}]}));
    p["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": "true"});
    let after = admitted(p, &AdmissionFacts::default());
    assert!(after["spec"].get("serviceAccountName").is_none());
    assert_eq!(
        after["spec"]["volumes"],
        json!([{"name": "v", "emptyDir": {}}])
    );
    assert!(after["spec"]["containers"][0].get("volumeMounts").is_none());
}

#[test]
fn test_assigns_default_service_account_and_bound_token_with_no_secret_tokens() {
    let after = admitted(pod(json!({"containers": [{}]})), &AdmissionFacts::default());
    assert_eq!(after["spec"]["serviceAccountName"], "default");
    assert_eq!(after["spec"]["volumes"], json!([expected_volume()]));
    assert_eq!(
        after["spec"]["containers"][0]["volumeMounts"],
        json!([expected_mount()])
    );
}

#[test]
fn test_automounts_api_token() {
    // Containers, then "testing InitContainers": one volume, one mount each.
    for list in ["containers", "initContainers"] {
        let after = admitted(pod(json!({ list: [{}] })), &AdmissionFacts::default());
        assert_eq!(after["spec"]["serviceAccountName"], "default", "{list}");
        assert_eq!(
            after["spec"]["volumes"],
            json!([expected_volume()]),
            "{list}"
        );
        assert_eq!(
            after["spec"][list][0]["volumeMounts"],
            json!([expected_mount()]),
            "{list}"
        );
    }
}

#[test]
fn test_respects_existing_mount() {
    // A container (then an init container) already mounting something at the token path
    // keeps its mount, and no volume is created "for a secret we don't need".
    let custom = json!({"name": "my-custom-mount", "readOnly": false, "mountPath": MOUNT_PATH});
    for list in ["containers", "initContainers"] {
        let after = admitted(
            pod(json!({ list: [{"volumeMounts": [custom]}] })),
            &AdmissionFacts::default(),
        );
        assert!(
            after["spec"].get("volumes").is_none_or(|v| v == &json!([])),
            "{list}"
        );
        assert_eq!(
            after["spec"][list][0]["volumeMounts"],
            json!([custom]),
            "{list}"
        );
    }
}

fn with_account(account: ServiceAccountFacts) -> AdmissionFacts {
    let mut facts = AdmissionFacts::default();
    facts
        .service_accounts
        .insert(("myns".into(), "default".into()), account);
    facts
}

#[test]
fn test_do_not_add_image_pull_secrets() {
    // The account lists foo and bar; a pod that lists foo keeps its own list.
    let facts = with_account(ServiceAccountFacts {
        automount: None,
        image_pull_secrets: vec!["foo".into(), "bar".into()],
    });
    let after = admitted(pod(json!({"imagePullSecrets": [{"name": "foo"}]})), &facts);
    assert_eq!(after["spec"]["imagePullSecrets"], json!([{"name": "foo"}]));
}

#[test]
fn test_add_image_pull_secrets() {
    // A pod that lists none gets the account's, in its order.
    let facts = with_account(ServiceAccountFacts {
        automount: None,
        image_pull_secrets: vec!["foo".into(), "bar".into()],
    });
    let after = admitted(pod(json!({})), &facts);
    assert_eq!(
        after["spec"]["imagePullSecrets"],
        json!([{"name": "foo"}, {"name": "bar"}])
    );
}

#[test]
fn the_pods_automount_setting_wins_over_the_accounts() {
    // Hand derivation from `shouldAutomount`: "Pod's preference wins", "Then service
    // account's", "Default to true for backwards compatibility".
    for (pod_says, account_says, mounted) in [
        (None, None, true),
        (None, Some(false), false),
        (None, Some(true), true),
        (Some(true), Some(false), true),
        (Some(false), Some(true), false),
        (Some(false), None, false),
    ] {
        let mut spec = json!({"containers": [{"name": "c"}]});
        if let Some(b) = pod_says {
            spec["automountServiceAccountToken"] = json!(b);
        }
        let facts = with_account(ServiceAccountFacts {
            automount: account_says,
            image_pull_secrets: vec![],
        });
        let after = admitted(pod(spec), &facts);
        assert_eq!(
            after["spec"]["containers"][0].get("volumeMounts").is_some(),
            mounted,
            "pod {pod_says:?}, account {account_says:?}"
        );
    }
}

#[test]
fn facts_read_service_accounts_as_stored() {
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "robot", "namespace": "myns"},
        "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "registry"}]});
    let facts = AdmissionFacts::from_objects([&sa]);
    assert_eq!(
        facts.service_accounts[&("myns".to_string(), "robot".to_string())],
        ServiceAccountFacts {
            automount: Some(false),
            image_pull_secrets: vec!["registry".into()]
        }
    );
    let after = admitted(
        pod(json!({"serviceAccountName": "robot", "containers": [{"name": "c"}]})),
        &facts,
    );
    assert!(after["spec"].get("volumes").is_none());
    assert_eq!(
        after["spec"]["imagePullSecrets"],
        json!([{"name": "registry"}])
    );
}
