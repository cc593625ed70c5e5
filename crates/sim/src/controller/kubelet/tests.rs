//! The kubelet model on a store without the controllers' task: a pod created as a
//! controller creates it, started, held and restarted as the kubelet would (expected
//! states and messages from `pkg/kubelet/kuberuntime/kuberuntime_container.go` and
//! `pkg/kubelet/kubelet_pods.go`, cited in the module documentation).

use super::super::pods::create_running_pod;
use super::*;
use std::sync::Arc;

fn setup() -> (Store, Types) {
    let store = Store::new(1000);
    // Every namespace's `kube-root-ca.crt`: the service account volume admission adds reads it.
    super::super::seed(&store);
    let t = super::super::types(&store, Arc::default()).unwrap();
    (store, t)
}

fn owner() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": "web-1", "namespace": "default", "uid": "u-1"}})
}

/// A pod template whose containers are `containers`, with `init` as init containers.
fn template(containers: Value, init: Value) -> Value {
    json!({"metadata": {"labels": {"app": "web"}},
           "spec": {"containers": containers, "initContainers": init}})
}

fn create(store: &Store, t: &Types, template: &Value) -> Value {
    create_running_pod(store, t, &owner(), "web-1-a", None, template, &[], 0).unwrap()
}

fn secret(store: &Store, t: &Types, data: Value) {
    let s = json!({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "db", "namespace": "default"}, "data": data});
    store
        .create(&t.secret, Some("default"), s, &WriteCtx::new("test"))
        .unwrap();
}

fn container_state<'a>(pod: &'a Value, list: &str, name: &str) -> &'a Value {
    &status_of(pod, list, name).unwrap()["state"]
}

fn env_reader(name: &str, key: &str) -> Value {
    json!({"name": name, "image": "app:1",
           "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": key}}}]})
}

#[test]
fn a_container_whose_secret_is_missing_waits_and_starts_once_it_exists() {
    let (store, t) = setup();
    let pod = create(
        &store,
        &t,
        &template(json!([env_reader("app", "password")]), json!([])),
    );
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(
        *container_state(&pod, "containerStatuses", "app"),
        json!({"waiting": {"reason": "CreateContainerConfigError",
                           "message": "secret \"db\" not found"}})
    );
    assert!(
        pod["status"]["startTime"].is_string(),
        "accepted before it runs"
    );
    assert!(t.kubelet.awaits("default"));

    // The Secret without the key: still waiting, with the kubelet's other error.
    secret(&store, &t, json!({"user": "YQ=="}));
    let changed = config_changed(&store, &t, "default");
    assert_eq!(
        container_state(&changed[0], "containerStatuses", "app")["waiting"]["message"],
        "couldn't find key password in Secret default/db"
    );
    store
        .write(
            &t.secret,
            Some("default"),
            "db",
            None,
            &WriteCtx::new("test"),
            |old| {
                let mut new = old.clone();
                new["data"]["password"] = json!("cA==");
                Ok(new)
            },
        )
        .unwrap();
    let started = config_changed(&store, &t, "default").remove(0);
    assert_eq!(started["status"]["phase"], "Running");
    let state = container_state(&started, "containerStatuses", "app");
    assert!(state["running"]["startedAt"].is_string(), "{state}");
    assert!(!t.kubelet.awaits("default"));
}

#[test]
fn optional_references_do_not_hold_a_container() {
    let (store, t) = setup();
    let c = json!({"name": "app", "image": "app:1",
        "envFrom": [{"secretRef": {"name": "nowhere", "optional": true}}],
        "env": [{"name": "P", "valueFrom": {"configMapKeyRef": {"name": "none", "key": "k", "optional": true}}}]});
    let pod = create(&store, &t, &template(json!([c]), json!([])));
    assert_eq!(pod["status"]["phase"], "Running");
}

#[test]
fn a_missing_init_containers_config_holds_the_pod_and_init_containers_complete() {
    let (store, t) = setup();
    let pod = create(
        &store,
        &t,
        &template(
            json!([{"name": "app", "image": "app:1"}]),
            json!([env_reader("migrate", "password")]),
        ),
    );
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(
        container_state(&pod, "initContainerStatuses", "migrate")["waiting"]["reason"],
        "CreateContainerConfigError"
    );
    assert_eq!(
        container_state(&pod, "containerStatuses", "app")["waiting"]["reason"],
        "PodInitializing"
    );
    secret(&store, &t, json!({"password": "cA=="}));
    let started = config_changed(&store, &t, "default").remove(0);
    let init = container_state(&started, "initContainerStatuses", "migrate");
    assert_eq!(init["terminated"]["reason"], "Completed", "{init}");
    assert!(init["terminated"]["startedAt"].is_string());
    assert!(container_state(&started, "containerStatuses", "app")["running"].is_object());
}

#[test]
fn a_missing_volume_config_holds_every_container() {
    let (store, t) = setup();
    let mut tpl = template(
        json!([{"name": "app", "image": "app:1",
                "volumeMounts": [{"name": "creds", "mountPath": "/etc/creds"}]}]),
        json!([]),
    );
    tpl["spec"]["volumes"] = json!([{"name": "creds", "secret": {"secretName": "db"}}]);
    let pod = create(&store, &t, &tpl);
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(
        container_state(&pod, "containerStatuses", "app")["waiting"]["reason"],
        "ContainerCreating"
    );
    assert!(pod["status"]["podIP"].is_null(), "no sandbox, no IP");
    secret(&store, &t, json!({"password": "cA=="}));
    let started = config_changed(&store, &t, "default").remove(0);
    assert_eq!(started["status"]["phase"], "Running");
}

#[test]
fn a_restarted_container_keeps_its_last_run_and_reads_its_config_again() {
    let (store, t) = setup();
    secret(&store, &t, json!({"password": "cA=="}));
    let pod = create(
        &store,
        &t,
        &template(
            json!([env_reader("app", "password"), {"name": "side", "image": "side:1"}]),
            json!([]),
        ),
    );
    let first = status_of(&pod, "containerStatuses", "app").unwrap().clone();
    let restarted =
        restart_container(&store, &t.kubelet, "default", "web-1-a", "app", 137).unwrap();
    let app = status_of(&restarted, "containerStatuses", "app").unwrap();
    assert_eq!(app["restartCount"], 1);
    assert_eq!(app["lastState"]["terminated"]["exitCode"], 137);
    assert_eq!(app["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(
        app["lastState"]["terminated"]["startedAt"],
        first["state"]["running"]["startedAt"]
    );
    assert_eq!(
        app["lastState"]["terminated"]["containerID"],
        first["containerID"]
    );
    assert_ne!(app["containerID"], first["containerID"], "a new container");
    assert!(app["state"]["running"]["startedAt"].is_string());
    // The other container is untouched.
    assert_eq!(
        status_of(&restarted, "containerStatuses", "side"),
        status_of(&pod, "containerStatuses", "side")
    );

    // Its config gone, the next start waits; the pod keeps running (it had started).
    store
        .delete(&t.secret, Some("default"), "db", None, false)
        .unwrap();
    let waiting = restart_container(&store, &t.kubelet, "default", "web-1-a", "app", 1).unwrap();
    let app = status_of(&waiting, "containerStatuses", "app").unwrap();
    assert_eq!(app["restartCount"], 2);
    assert_eq!(
        app["state"]["waiting"]["reason"],
        "CreateContainerConfigError"
    );
    assert_eq!(waiting["status"]["phase"], "Running");
    assert_eq!(waiting["status"]["conditions"][2]["status"], "False");

    assert!(restart_container(&store, &t.kubelet, "default", "web-1-a", "nope", 1).is_err());
}
