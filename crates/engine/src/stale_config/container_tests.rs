//! The judgement per container. Expected values are derived by hand from what the kubelet
//! does (`pkg/kubelet/kuberuntime/kuberuntime_container.go`: `startContainer` ->
//! `generateContainerConfig` resolves `env`/`envFrom` and the `subPath` files at every
//! start of that container; a pod's `status.startTime` is set when the kubelet accepts it,
//! before any container starts) and how it reports it (`state.running.startedAt`,
//! `lastState.terminated`, `restartCount`; an init container's finished run in
//! `state.terminated`).

use super::tests::{at, deployment, observe, replica_set, secret, KEY, SYNC};
use super::*;
use serde_json::json;

fn env_reader(name: &str) -> Value {
    json!({"name": name, "image": "app:1",
           "env": [{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]})
}

/// Pod `web-1-a` of Deployment `web` (ReplicaSet `web-1`), accepted at 10:00:00, with
/// `containers` and `init` in its spec and `statuses`/`init_statuses` in its status.
fn pod(containers: Value, init: Value, statuses: Value, init_statuses: Value) -> Value {
    let phase = match statuses
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s.pointer("/state/running").is_some())
    {
        true => "Running",
        false => "Pending",
    };
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web-1-a", "namespace": "shop", "ownerReferences": [
               {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "controller": true}]},
           "spec": {"containers": containers, "initContainers": init},
           "status": {"phase": phase, "startTime": "2026-03-01T10:00:00Z",
                      "containerStatuses": statuses, "initContainerStatuses": init_statuses}})
}

fn running(name: &str, since: &str) -> Value {
    json!({"name": name, "restartCount": 0, "state": {"running": {"startedAt": since}}, "lastState": {}})
}

fn restarted(name: &str, first: &str, since: &str) -> Value {
    json!({"name": name, "restartCount": 1, "state": {"running": {"startedAt": since}},
           "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                        "startedAt": first, "finishedAt": since}}})
}

fn waiting(name: &str) -> Value {
    json!({"name": name, "restartCount": 0, "lastState": {},
           "state": {"waiting": {"reason": "CreateContainerConfigError",
                                 "message": "secret \"db\" not found"}}})
}

/// The Deployment `web`'s stale pods after a flush at `now`: (pod, started_at, reads,
/// containers) per pod.
fn stale_pods(
    s: &mut StaleConfigs,
    now: Timestamp,
) -> Vec<(String, Timestamp, Vec<String>, Vec<String>)> {
    s.flush(now);
    s.note(&deployment("web"))
        .into_iter()
        .flat_map(|n| n.configs.iter().flat_map(|c| c.pods.iter()))
        .map(|p| {
            (
                p.name.clone(),
                p.started_at,
                p.reads.clone(),
                p.containers.clone(),
            )
        })
        .collect()
}

fn judgement() -> StaleConfigs {
    let mut s = StaleConfigs::new(true, SYNC, KEY, Vec::new());
    observe(
        &mut s,
        &replica_set("web-1", "web"),
        at("2026-03-01T09:00:00Z"),
    );
    s
}

/// The pod was accepted at 10:00:00 and waited (CreateContainerConfigError) for Secret
/// `db`, created at 10:00:05; its container started at 10:00:06, after the content. Its
/// startTime is older than the Secret, but nothing in it read anything before.
#[test]
fn a_pod_that_waited_for_its_secret_is_not_stale() {
    let mut s = judgement();
    let spec = json!([env_reader("app")]);
    observe(
        &mut s,
        &pod(spec.clone(), json!([]), json!([waiting("app")]), json!([])),
        at("2026-03-01T10:00:01Z"),
    );
    let created = at("2026-03-01T10:00:05Z");
    let mut db = secret("db", "b2xk");
    db["metadata"]["creationTimestamp"] = json!("2026-03-01T10:00:05Z");
    observe(&mut s, &db, created);
    assert!(
        stale_pods(&mut s, created).is_empty(),
        "waiting: holds nothing"
    );
    observe(
        &mut s,
        &pod(
            spec,
            json!([]),
            json!([running("app", "2026-03-01T10:00:06Z")]),
            json!([]),
        ),
        at("2026-03-01T10:00:06Z"),
    );
    assert!(stale_pods(&mut s, at("2026-03-01T10:00:07Z")).is_empty());
}

/// The Secret changed at 11:00; container `app` (started 10:00) is stale; restarted at
/// 11:05 it read the new content, and the pod is no longer stale though its startTime
/// and its first run are older than the change.
#[test]
fn a_container_restarted_after_the_change_is_not_stale() {
    let mut s = judgement();
    observe(&mut s, &secret("db", "b2xk"), at("2026-03-01T09:00:00Z"));
    let spec = json!([env_reader("app")]);
    let first = "2026-03-01T10:00:01Z";
    observe(
        &mut s,
        &pod(
            spec.clone(),
            json!([]),
            json!([running("app", first)]),
            json!([]),
        ),
        at(first),
    );
    let changed = at("2026-03-01T11:00:00Z");
    observe(&mut s, &secret("db", "bmV3"), changed);
    assert_eq!(
        stale_pods(&mut s, changed),
        [(
            "web-1-a".to_string(),
            at(first),
            vec!["env".to_string()],
            vec!["app".to_string()]
        )]
    );
    let again = "2026-03-01T11:05:00Z";
    observe(
        &mut s,
        &pod(
            spec,
            json!([]),
            json!([restarted("app", first, again)]),
            json!([]),
        ),
        at(again),
    );
    assert!(stale_pods(&mut s, at(again)).is_empty());
    assert!(s.note(&deployment("web")).is_none());
}

/// Two containers read `db` through env; only `sidecar` restarted after the change: the
/// pod stays stale, through `app` alone, with `app`'s start.
#[test]
fn a_container_started_before_the_change_keeps_its_pod_stale() {
    let mut s = judgement();
    observe(&mut s, &secret("db", "b2xk"), at("2026-03-01T09:00:00Z"));
    let spec = json!([env_reader("app"), env_reader("sidecar")]);
    let first = "2026-03-01T10:00:01Z";
    let changed = at("2026-03-01T11:00:00Z");
    observe(&mut s, &secret("db", "bmV3"), changed);
    observe(
        &mut s,
        &pod(
            spec,
            json!([]),
            json!([
                running("app", first),
                restarted("sidecar", first, "2026-03-01T11:05:00Z")
            ]),
            json!([]),
        ),
        at("2026-03-01T11:05:00Z"),
    );
    assert_eq!(
        stale_pods(&mut s, at("2026-03-01T11:05:01Z")),
        [(
            "web-1-a".to_string(),
            at(first),
            vec!["env".to_string()],
            vec!["app".to_string()]
        )]
    );
}

/// An init container that finished (`state.terminated.startedAt` 10:00:01) before the
/// change read the old content, and what it made from it is still there: stale. One
/// that has not run yet (waiting) read nothing.
#[test]
fn init_containers_are_judged_by_their_last_run() {
    let mut s = judgement();
    observe(&mut s, &secret("db", "b2xk"), at("2026-03-01T09:00:00Z"));
    let done = json!({"name": "migrate", "restartCount": 0, "lastState": {},
        "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                 "startedAt": "2026-03-01T10:00:01Z",
                                 "finishedAt": "2026-03-01T10:00:02Z"}}});
    let main = json!([{"name": "app", "image": "app:1"}]);
    observe(
        &mut s,
        &pod(
            main,
            json!([env_reader("migrate")]),
            json!([running("app", "2026-03-01T10:00:03Z")]),
            json!([done]),
        ),
        at("2026-03-01T10:00:03Z"),
    );
    let changed = at("2026-03-01T11:00:00Z");
    observe(&mut s, &secret("db", "bmV3"), changed);
    assert_eq!(
        stale_pods(&mut s, changed),
        [(
            "web-1-a".to_string(),
            at("2026-03-01T10:00:01Z"),
            vec!["env".to_string()],
            vec!["migrate".to_string()]
        )]
    );
}

/// A running container whose status the pod lacks (not what a kubelet writes) is judged
/// by the pod's startTime, as before containers had their own.
#[test]
fn a_container_without_a_status_falls_back_to_the_pods_start() {
    let facts = pod_facts(&json!({
        "spec": {"containers": [env_reader("app")]},
        "status": {"phase": "Running", "startTime": "2026-03-01T10:00:00Z"}}))
    .unwrap();
    assert_eq!(
        facts.containers[0].started,
        Some(at("2026-03-01T10:00:00Z"))
    );
    let exited = pod_facts(&json!({
        "spec": {"containers": [env_reader("app")]},
        "status": {"phase": "Running", "startTime": "2026-03-01T10:00:00Z",
                   "containerStatuses": [{"name": "app", "state": {"terminated": {
                       "exitCode": 0, "startedAt": "2026-03-01T10:00:01Z"}}}]}}))
    .unwrap();
    assert_eq!(
        exited.containers[0].started, None,
        "an exited container holds nothing"
    );
}
