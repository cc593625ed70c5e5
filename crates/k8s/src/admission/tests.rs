//! The admission chain on Pods, PVCs and Ingresses as a whole; each plugin against its
//! upstream `admission_test.go` in `tests/<plugin>.rs`.

use serde_json::{json, Value};

use super::*;

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
        "spec": spec})
}

const TOKEN: &str = "kube-api-access-x7k2q";

#[test]
fn a_bare_pod_gets_account_token_tolerations_and_priority() {
    let mut p = pod(json!({
        "initContainers": [{"name": "init", "image": "busybox"}],
        "containers": [
            {"name": "app", "image": "nginx", "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
            {"name": "own", "image": "x", "volumeMounts": [{"name": "sa", "mountPath": TOKEN_MOUNT_PATH}]}],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "tolerations": [{"key": "dedicated", "operator": "Exists"}]}));
    admit("Pod", &mut p, &AdmissionFacts::default(), TOKEN);
    let spec = &p["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    let mount = json!({"name": TOKEN, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    assert_eq!(spec["initContainers"][0]["volumeMounts"], json!([mount]));
    assert_eq!(
        spec["containers"][0]["volumeMounts"][1], mount,
        "appended after the manifest's"
    );
    assert_eq!(
        spec["containers"][1]["volumeMounts"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "a container mounting something at the token path gets no token mount"
    );
    assert_eq!(
        spec["volumes"][1],
        json!({"name": TOKEN, "projected": token_volume_source()})
    );
    assert_eq!(spec["tolerations"].as_array().unwrap().len(), 3);
    assert_eq!(
        spec["tolerations"][1]["key"],
        "node.kubernetes.io/not-ready"
    );
    assert_eq!(spec["tolerations"][2]["tolerationSeconds"], 300);
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
}

#[test]
fn plugins_leave_alone_what_the_pod_already_decides() {
    let mut p = pod(json!({
        "automountServiceAccountToken": false, "serviceAccountName": "robot",
        "priorityClassName": "system-node-critical",
        "containers": [{"name": "app", "image": "nginx"}],
        // An empty key with an empty effect tolerates every taint.
        "tolerations": [{"operator": "Exists"}]}));
    admit("Pod", &mut p, &AdmissionFacts::default(), TOKEN);
    let spec = &p["spec"];
    assert_eq!(spec["serviceAccountName"], "robot");
    assert!(spec.get("volumes").is_none() && spec["containers"][0].get("volumeMounts").is_none());
    assert_eq!(spec["tolerations"], json!([{"operator": "Exists"}]));
    assert_eq!(spec["priority"], 2_000_001_000);

    // A volume already named kube-api-access-* is reused, not added again.
    let mut p = pod(json!({"containers": [{"name": "app"}],
        "volumes": [{"name": "kube-api-access-mine", "emptyDir": {}}]}));
    admit("Pod", &mut p, &AdmissionFacts::default(), TOKEN);
    assert_eq!(p["spec"]["volumes"].as_array().unwrap().len(), 1);
    assert_eq!(
        p["spec"]["containers"][0]["volumeMounts"][0]["name"],
        "kube-api-access-mine"
    );
}

#[test]
fn default_classes_fill_only_unset_fields() {
    let facts = AdmissionFacts {
        default_storage_class: Some("standard".into()),
        default_ingress_class: Some("nginx".into()),
        ..AdmissionFacts::default()
    };
    let mut pvc = json!({"kind": "PersistentVolumeClaim", "spec": {}});
    admit("PersistentVolumeClaim", &mut pvc, &facts, TOKEN);
    assert_eq!(pvc["spec"]["storageClassName"], "standard");
    let mut explicit = json!({"kind": "PersistentVolumeClaim", "spec": {"storageClassName": ""}});
    admit("PersistentVolumeClaim", &mut explicit, &facts, TOKEN);
    assert_eq!(
        explicit["spec"]["storageClassName"], "",
        "\"\" asks for no class"
    );
    let mut ing = json!({"kind": "Ingress", "spec": {}});
    admit("Ingress", &mut ing, &facts, TOKEN);
    assert_eq!(ing["spec"]["ingressClassName"], "nginx");
    let mut annotated = json!({"kind": "Ingress", "spec": {},
        "metadata": {"annotations": {"kubernetes.io/ingress.class": "traefik"}}});
    admit("Ingress", &mut annotated, &facts, TOKEN);
    assert!(annotated["spec"].get("ingressClassName").is_none());
    let mut none = json!({"kind": "PersistentVolumeClaim", "spec": {}});
    admit(
        "PersistentVolumeClaim",
        &mut none,
        &AdmissionFacts::default(),
        TOKEN,
    );
    assert!(
        none["spec"].get("storageClassName").is_none(),
        "no default class, no name"
    );
}

#[test]
fn appended_items_are_recognised_only_where_admission_would_append_them() {
    let desired = pod(json!({"containers": [{"name": "app", "volumeMounts": []}],
        "volumes": [], "tolerations": []}));
    let mut live = desired.clone();
    admit("Pod", &mut live, &AdmissionFacts::default(), TOKEN);
    let volume = &live["spec"]["volumes"][0];
    let mount = &live["spec"]["containers"][0]["volumeMounts"][0];
    let toleration = &live["spec"]["tolerations"][0];
    assert!(appended_by_admission(
        "Pod",
        &["spec", "volumes"],
        &desired,
        volume
    ));
    assert!(appended_by_admission(
        "Pod",
        &["spec", "containers", "volumeMounts"],
        &desired,
        mount
    ));
    assert!(appended_by_admission(
        "Pod",
        &["spec", "tolerations"],
        &desired,
        toleration
    ));
    // Not on a workload's template, not when the pod opts out, not a look-alike.
    assert!(!appended_by_admission(
        "Deployment",
        &["spec", "template", "spec", "volumes"],
        &desired,
        volume
    ));
    let mut opted_out = desired.clone();
    opted_out["spec"]["automountServiceAccountToken"] = json!(false);
    assert!(!appended_by_admission(
        "Pod",
        &["spec", "volumes"],
        &opted_out,
        volume
    ));
    let mut edited = volume.clone();
    edited["projected"]["defaultMode"] = json!(256);
    assert!(!appended_by_admission(
        "Pod",
        &["spec", "volumes"],
        &desired,
        &edited
    ));
    let mut tolerant = desired.clone();
    tolerant["spec"]["tolerations"] =
        json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]);
    assert!(!appended_by_admission(
        "Pod",
        &["spec", "tolerations"],
        &tolerant,
        toleration
    ));
}

#[test]
fn token_volume_names_use_the_name_generator_alphabet() {
    let mut n = 0;
    let name = token_volume_name(|len| {
        n += 1;
        n * 5 % len
    });
    assert_eq!(name.len(), "kube-api-access-".len() + 5);
    assert!(name[16..]
        .chars()
        .all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
}

mod classes;
mod limit_ranger;
mod priority;
mod service_account;
mod tolerations;

#[test]
fn an_accounts_pull_secrets_are_admissions_only_where_the_pod_listed_none() {
    // Hand derivation from the ServiceAccount plugin's `Admit`: `if
    // len(pod.Spec.ImagePullSecrets) == 0` it copies the account's list, so a manifest
    // with `imagePullSecrets: []` (as charts render it) gets them too.
    let secret = json!({"name": "registry"});
    let path = ["spec", "imagePullSecrets"];
    for listed in [json!(null), json!([])] {
        let mut desired = pod(json!({"containers": [{"name": "c"}]}));
        if !listed.is_null() {
            desired["spec"]["imagePullSecrets"] = listed;
        }
        assert!(appended_by_admission("Pod", &path, &desired, &secret));
    }
    let named = pod(json!({"imagePullSecrets": [{"name": "mine"}]}));
    assert!(!appended_by_admission("Pod", &path, &named, &secret));
    let empty = pod(json!({"imagePullSecrets": []}));
    assert!(!appended_by_admission(
        "Pod",
        &path,
        &empty,
        &json!({"name": "x", "extra": 1})
    ));
}
