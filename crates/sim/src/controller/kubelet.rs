//! The kubelet, as far as the simulator models it: it starts a pod's containers, each when
//! what it reads can be resolved, restarts one when asked, and reports every container's
//! state through the pod's status subresource.
//!
//! What it follows (`pkg/kubelet/kuberuntime/kuberuntime_container.go`, `startContainer`
//! -> `generateContainerConfig` -> `makeEnvironmentVariables`): a container's `envFrom`
//! and `env` references are resolved at every start of that container; a missing Secret or
//! ConfigMap, or a missing key of one, that is not `optional` keeps the container waiting
//! with reason `CreateContainerConfigError`, the error as its message (`secret "db" not
//! found`, `couldn't find key password in Secret shop/db`) and a Warning Event `Failed`
//! (`Error: ...`). The kubelet retries at every pod sync, so the container starts once the
//! config exists: here, when a Secret or ConfigMap of the namespace is created or changed.
//! A Secret, ConfigMap or projected volume whose config is missing (not `optional`) keeps
//! the whole pod from starting: nothing runs, containers wait (`ContainerCreating`, or
//! `PodInitializing` behind init containers) and a Warning Event `FailedMount` says why.
//!
//! Init containers run first, in order, each to completion (a sidecar, `restartPolicy:
//! Always`, keeps running); a pod with a container never started is `Pending`
//! (`getPhase`). A restarted container keeps its last run in `lastState.terminated`,
//! counts it in `restartCount`, and starts again (`state.running.startedAt`) or waits as
//! above. `status.startTime` is when the kubelet first accepted the pod, before any
//! container started.

use super::{meta, record_event_of_type, Types};
use crate::status::ApiError;
use crate::store::{now_rfc3339, Store, WriteCtx};
use serde_json::{json, Value};
use sha2::Digest;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

/// Pods with a container waiting for a Secret or ConfigMap, by namespace: what a change of
/// one is checked against (so a busy simulator's config edits cost nothing otherwise).
#[derive(Debug, Default)]
pub struct Kubelet {
    waiting: Mutex<BTreeMap<String, BTreeSet<String>>>,
}

impl Kubelet {
    fn set_waiting(&self, ns: &str, pod: &str, waits: bool) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if waits {
            waiting
                .entry(ns.to_string())
                .or_default()
                .insert(pod.to_string());
        } else if let Some(pods) = waiting.get_mut(ns) {
            pods.remove(pod);
            if pods.is_empty() {
                waiting.remove(ns);
            }
        }
    }

    /// Whether some pod of `ns` waits for a config.
    pub(super) fn awaits(&self, ns: &str) -> bool {
        let waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.contains_key(ns)
    }

    fn waiting_in(&self, ns: &str) -> Vec<String> {
        let waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting
            .get(ns)
            .map(|pods| pods.iter().cloned().collect())
            .unwrap_or_default()
    }
}

/// Syncs a pod the scheduler just bound: starts what can start and writes the status.
/// `index` picks its IP; `completes` has its containers exit 0 once started (Job pods).
pub(super) fn admit(store: &Store, t: &Types, pod: &Value, index: usize, completes: bool) -> Value {
    let ip = format!("10.244.0.{}", 10 + index % 240);
    sync(store, t, pod, &ip, completes, None).unwrap_or_else(|| pod.clone())
}

/// A Secret or ConfigMap of `ns` was created or changed: syncs the pods waiting there
/// and returns those that changed (their controllers count them again).
pub(super) fn config_changed(store: &Store, t: &Types, ns: &str) -> Vec<Value> {
    let mut changed = Vec::new();
    for name in t.kubelet.waiting_in(ns) {
        let Ok(pod) = store.get(&t.pod, Some(ns), &name) else {
            t.kubelet.set_waiting(ns, &name, false);
            continue;
        };
        let ip = text(&pod, "/status/podIP").to_string();
        let completes = pod_completes(&pod);
        if let Some(synced) = sync(store, t, &pod, &ip, completes, None) {
            changed.push(synced);
        }
    }
    changed
}

/// `POST /_sim/restart-container`: container `container` of pod `ns/pod` exits with
/// `exit_code` and the kubelet starts it again (it waits if its config is missing now).
pub fn restart_container(
    store: &Store,
    kubelet: &std::sync::Arc<Kubelet>,
    ns: &str,
    pod: &str,
    container: &str,
    exit_code: i64,
) -> Result<Value, ApiError> {
    let t = super::types(store, kubelet.clone())
        .ok_or_else(|| ApiError::new(500, "InternalError", "core types are not served"))?;
    let current = store.get(&t.pod, Some(ns), pod)?;
    let running = [
        ("initContainerStatuses", true),
        ("containerStatuses", false),
    ]
    .into_iter()
    .find_map(|(list, init)| {
        status_of(&current, list, container)
            .filter(|s| s.pointer("/state/running").is_some())
            .map(|_| init)
    });
    if running.is_none() {
        return Err(ApiError::bad_request(format!(
            "restart-container: pod {ns}/{pod} has no running container {container:?}"
        )));
    }
    let ip = text(&current, "/status/podIP").to_string();
    let exited = Exited {
        container: container.to_string(),
        exit_code,
    };
    let synced = sync(store, &t, &current, &ip, false, Some(&exited)).ok_or_else(|| {
        ApiError::new(
            500,
            "InternalError",
            "restart-container: status write failed",
        )
    })?;
    Ok(synced)
}

/// A container that has just exited (the restart the admin endpoint asks for).
struct Exited {
    container: String,
    exit_code: i64,
}

/// One pod sync: the status the kubelet reports after starting what it can, written
/// through the status subresource with the Events it records; `None` when the write
/// failed (the pod is gone).
fn sync(
    store: &Store,
    t: &Types,
    pod: &Value,
    ip: &str,
    completes: bool,
    exited: Option<&Exited>,
) -> Option<Value> {
    let ns = meta(pod, "namespace");
    let name = meta(pod, "name");
    let now = now_rfc3339();
    let mut events: Vec<Event> = Vec::new();
    let spec = pod.get("spec").cloned().unwrap_or(json!({}));
    let containers = |list: &str| {
        spec.get(list)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (inits, mains) = (containers("initContainers"), containers("containers"));
    let mount_error = missing_volume(store, t, &ns, &spec);
    if let Some((volume, error)) = &mount_error {
        let message = format!("MountVolume.SetUp failed for volume {volume:?} : {error}");
        let before = pod.pointer("/status/startTime").is_some();
        if !before {
            events.push(Event::warning("FailedMount", message));
        }
    }
    let ctx = Start {
        store,
        t,
        ns: &ns,
        pod,
        now: &now,
        exited,
    };
    // Init containers, in order, each to completion; the first that cannot go on blocks
    // the rest and every main container.
    let mut blocked = mount_error.is_some();
    let mut init_statuses = Vec::new();
    let mut incomplete = Vec::new();
    for c in &inits {
        let cname = text(c, "/name").to_string();
        let sidecar = text(c, "/restartPolicy") == "Always";
        let status = match blocked {
            true => ctx.held(c, "initContainerStatuses", "PodInitializing"),
            false => ctx.start(c, "initContainerStatuses", !sidecar, &mut events),
        };
        let done = match sidecar {
            true => status.pointer("/state/running").is_some(),
            false => status.pointer("/state/terminated/exitCode") == Some(&json!(0)),
        };
        if !done {
            blocked = true;
            incomplete.push(cname);
        }
        init_statuses.push(status);
    }
    let held_reason = if inits.is_empty() {
        "ContainerCreating"
    } else {
        "PodInitializing"
    };
    let statuses: Vec<Value> = mains
        .iter()
        .map(|c| match blocked {
            true => ctx.held(c, "containerStatuses", held_reason),
            false => ctx.start(c, "containerStatuses", completes, &mut events),
        })
        .collect();
    let started = |s: &Value| {
        s.pointer("/state/running").is_some() || s.pointer("/state/terminated").is_some()
    };
    let never_started = statuses
        .iter()
        .any(|s| !started(s) && s.pointer("/lastState/terminated").is_none());
    let unready: Vec<String> = mains
        .iter()
        .zip(&statuses)
        .filter(|(_, s)| s.pointer("/state/running").is_none())
        .map(|(c, _)| text(c, "/name").to_string())
        .collect();
    let succeeded = completes && !blocked && !never_started;
    let phase = match (succeeded, blocked || never_started) {
        (true, _) => "Succeeded",
        (false, true) => "Pending",
        (false, false) => "Running",
    };
    let old_conditions = pod.pointer("/status/conditions");
    let condition = |ty: &str, ok: bool, reason: &str, message: String| {
        let mut c =
            json!({"type": ty, "status": if ok { "True" } else { "False" }, "lastProbeTime": null});
        let same = old_conditions
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == ty))
            .filter(|old| old["status"] == c["status"]);
        c["lastTransitionTime"] = same
            .and_then(|old| old.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(now));
        if !ok && !reason.is_empty() {
            c["reason"] = json!(reason);
        }
        if !ok && !message.is_empty() {
            c["message"] = json!(message);
        }
        c
    };
    let list = |names: &[String]| format!("[{}]", names.join(" "));
    let (ready_reason, ready_message) = match (succeeded, incomplete.is_empty()) {
        (true, _) => ("PodCompleted", String::new()),
        (false, true) => (
            "ContainersNotReady",
            format!("containers with unready status: {}", list(&unready)),
        ),
        (false, false) => (
            "ContainersNotInitialized",
            format!("containers with incomplete status: {}", list(&incomplete)),
        ),
    };
    let ready = unready.is_empty() && !succeeded;
    let mut status = json!({
        "phase": phase,
        "conditions": [
            condition("PodReadyToStartContainers", mount_error.is_none(), "", String::new()),
            condition("Initialized", incomplete.is_empty(), "ContainersNotInitialized",
                      format!("containers with incomplete status: {}", list(&incomplete))),
            condition("Ready", ready, ready_reason, ready_message.clone()),
            condition("ContainersReady", ready, ready_reason, ready_message),
            condition("PodScheduled", true, "", String::new()),
        ],
        "hostIP": "10.0.0.10",
        "hostIPs": [{"ip": "10.0.0.10"}],
        "startTime": pod.pointer("/status/startTime").cloned().unwrap_or_else(|| json!(now)),
        "containerStatuses": statuses,
        "qosClass": qos_class(&mains),
    });
    if mount_error.is_none() {
        status["podIP"] = json!(ip);
        status["podIPs"] = json!([{"ip": ip}]);
    }
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = json!(init_statuses);
    }
    let waits = phase != "Succeeded"
        && status_lists(&status).any(|s| {
            matches!(
                text(s, "/state/waiting/reason"),
                "CreateContainerConfigError" | "ContainerCreating" | "PodInitializing"
            )
        });
    let written = store
        .write(
            &t.pod,
            Some(&ns),
            &name,
            Some("status"),
            &WriteCtx::controller("kubelet"),
            |old| {
                let mut new = old.clone();
                new["status"] = status;
                Ok(new)
            },
        )
        .ok()?;
    t.kubelet.set_waiting(&ns, &name, waits);
    for e in events {
        let ty = if e.warning { "Warning" } else { "Normal" };
        record_event_of_type(store, t, &written, "kubelet", e.reason, &e.message, ty);
    }
    Some(written)
}

/// An Event the kubelet records about the pod.
struct Event {
    warning: bool,
    reason: &'static str,
    message: String,
}

impl Event {
    fn normal(reason: &'static str, message: String) -> Event {
        Event {
            warning: false,
            reason,
            message,
        }
    }
    fn warning(reason: &'static str, message: String) -> Event {
        Event {
            warning: true,
            reason,
            message,
        }
    }
}

/// What starting a container needs to know.
struct Start<'a> {
    store: &'a Store,
    t: &'a Types,
    ns: &'a str,
    pod: &'a Value,
    now: &'a str,
    exited: Option<&'a Exited>,
}

impl Start<'_> {
    /// Container `c`'s status when it cannot start yet (the pod is held before it): its
    /// last one if it had started, else waiting with `reason`.
    fn held(&self, c: &Value, list: &str, reason: &str) -> Value {
        let name = text(c, "/name");
        match status_of(self.pod, list, name) {
            Some(s) if s.pointer("/state/waiting").is_none() => s.clone(),
            previous => {
                container_status(c, json!({"waiting": {"reason": reason}}), previous, false)
            }
        }
    }

    /// Container `c`'s status after this sync: kept when it runs or has run to completion
    /// (unless it is the one that just exited), else started if what it reads resolves
    /// (`exits`: it runs to completion at once), else waiting.
    fn start(&self, c: &Value, list: &str, exits: bool, events: &mut Vec<Event>) -> Value {
        let name = text(c, "/name");
        let mut previous = status_of(self.pod, list, name).cloned();
        let just_exited = self.exited.is_some_and(|e| e.container == name);
        if let (Some(p), true) = (&mut previous, just_exited) {
            let exit_code = self.exited.map_or(1, |e| e.exit_code);
            let started_at = p.pointer("/state/running/startedAt").cloned();
            p["lastState"] = json!({"terminated": {
                "exitCode": exit_code,
                "reason": if exit_code == 0 { "Completed" } else { "Error" },
                "startedAt": started_at,
                "finishedAt": self.now,
                "containerID": p.get("containerID").cloned(),
            }});
            p["restartCount"] = json!(p["restartCount"].as_i64().unwrap_or(0) + 1);
            p["state"] = json!({"waiting": {"reason": "CrashLoopBackOff"}});
        }
        if let Some(p) = &previous {
            if p.pointer("/state/waiting").is_none() {
                return p.clone();
            }
        }
        let image = text(c, "/image");
        let pulled = format!("Container image {image:?} already present on machine");
        if let Some(error) = unresolved_env(self.store, self.t, self.ns, c) {
            let again = previous
                .as_ref()
                .is_some_and(|p| text(p, "/state/waiting/message") == error);
            if !again {
                events.push(Event::normal("Pulled", pulled));
                events.push(Event::warning("Failed", format!("Error: {error}")));
            }
            let state =
                json!({"waiting": {"reason": "CreateContainerConfigError", "message": error}});
            return container_status(c, state, previous.as_ref(), false);
        }
        events.push(Event::normal("Pulled", pulled));
        events.push(Event::normal(
            "Created",
            format!("Created container: {name}"),
        ));
        events.push(Event::normal(
            "Started",
            format!("Started container {name}"),
        ));
        let state = match exits {
            true => json!({"terminated": {"exitCode": 0, "reason": "Completed",
                                          "startedAt": self.now, "finishedAt": self.now}}),
            false => json!({"running": {"startedAt": self.now}}),
        };
        let mut status = container_status(c, state, previous.as_ref(), true);
        let restarts = status["restartCount"].as_i64().unwrap_or(0);
        let id = format!("{}{image}{restarts}", meta(self.pod, "uid"));
        status["containerID"] = json!(format!(
            "containerd://{}",
            hex::encode(sha2::Sha256::digest(id.as_bytes()))
        ));
        status
    }
}

/// A container status in `state`, keeping the restart count and last run of `previous`;
/// `created` containers have an image ID (from the pulled image).
fn container_status(c: &Value, state: Value, previous: Option<&Value>, created: bool) -> Value {
    let image = text(c, "/image");
    let running = state.get("running").is_some();
    let mut status = json!({
        "name": c.get("name").cloned().unwrap_or(json!("")),
        "image": image,
        "imageID": "",
        "ready": running,
        "started": running,
        "restartCount": previous.and_then(|p| p["restartCount"].as_i64()).unwrap_or(0),
        "state": state,
        "lastState": previous.and_then(|p| p.get("lastState").cloned()).unwrap_or(json!({})),
    });
    if created {
        let digest = hex::encode(sha2::Sha256::digest(image.as_bytes()));
        status["imageID"] = json!(format!("{image}@sha256:{digest}"));
    } else if let Some(id) = previous.and_then(|p| p.get("containerID")) {
        // A container that ran before keeps its image and last container ID.
        status["containerID"] = id.clone();
        status["imageID"] = previous
            .and_then(|p| p.get("imageID"))
            .cloned()
            .unwrap_or(json!(""));
    }
    status
}

/// Why the kubelet cannot build container `c`'s environment now: the first `envFrom`, then
/// `env` reference (the order `makeEnvironmentVariables` resolves them) whose config or
/// key is missing and not optional, worded as the kubelet's error.
fn unresolved_env(store: &Store, t: &Types, ns: &str, c: &Value) -> Option<String> {
    let items = |field: &str| {
        c.get(field)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let optional = |r: &Value| r.get("optional").and_then(Value::as_bool) == Some(true);
    for from in items("envFrom") {
        for (field, kind) in [
            ("configMapRef", Kind::ConfigMap),
            ("secretRef", Kind::Secret),
        ] {
            let Some(r) = from.get(field) else { continue };
            let name = text(r, "/name");
            if config(store, t, ns, kind, name).is_none() && !optional(r) {
                return Some(kind.not_found(name));
            }
        }
    }
    for env in items("env") {
        for (field, kind) in [
            ("configMapKeyRef", Kind::ConfigMap),
            ("secretKeyRef", Kind::Secret),
        ] {
            let Some(r) = env.pointer(&format!("/valueFrom/{field}")) else {
                continue;
            };
            if optional(r) {
                continue;
            }
            let (name, key) = (text(r, "/name"), text(r, "/key"));
            let Some(object) = config(store, t, ns, kind, name) else {
                return Some(kind.not_found(name));
            };
            if object
                .pointer(&format!(
                    "/data/{}",
                    key.replace('~', "~0").replace('/', "~1")
                ))
                .is_none()
            {
                return Some(format!(
                    "couldn't find key {key} in {} {ns}/{name}",
                    kind.as_str()
                ));
            }
        }
    }
    None
}

/// The first volume of pod spec `spec` whose Secret or ConfigMap is missing and not
/// optional, with the error the volume plugin reports.
fn missing_volume(store: &Store, t: &Types, ns: &str, spec: &Value) -> Option<(String, String)> {
    let optional = |r: &Value| r.get("optional").and_then(Value::as_bool) == Some(true);
    for volume in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let vname = text(volume, "/name").to_string();
        let mut sources: Vec<(Kind, &str, bool)> = Vec::new();
        if let Some(s) = volume.get("secret") {
            sources.push((Kind::Secret, text(s, "/secretName"), optional(s)));
        }
        if let Some(s) = volume.get("configMap") {
            sources.push((Kind::ConfigMap, text(s, "/name"), optional(s)));
        }
        for s in volume
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(r) = s.get("secret") {
                sources.push((Kind::Secret, text(r, "/name"), optional(r)));
            }
            if let Some(r) = s.get("configMap") {
                sources.push((Kind::ConfigMap, text(r, "/name"), optional(r)));
            }
        }
        for (kind, name, optional) in sources {
            if !optional && config(store, t, ns, kind, name).is_none() {
                return Some((vname, kind.not_found(name)));
            }
        }
    }
    None
}

#[derive(Clone, Copy)]
enum Kind {
    Secret,
    ConfigMap,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Secret => "Secret",
            Kind::ConfigMap => "ConfigMap",
        }
    }

    /// The kubelet's config managers name the resource in the singular.
    fn not_found(self, name: &str) -> String {
        match self {
            Kind::Secret => format!("secret {name:?} not found"),
            Kind::ConfigMap => format!("configmap {name:?} not found"),
        }
    }
}

fn config(store: &Store, t: &Types, ns: &str, kind: Kind, name: &str) -> Option<Value> {
    let info = match kind {
        Kind::Secret => &t.secret,
        Kind::ConfigMap => &t.configmap,
    };
    store.get(info, Some(ns), name).ok()
}

fn status_of<'a>(pod: &'a Value, list: &str, container: &str) -> Option<&'a Value> {
    pod.pointer(&format!("/status/{list}"))?
        .as_array()?
        .iter()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
}

fn status_lists(status: &Value) -> impl Iterator<Item = &Value> {
    ["initContainerStatuses", "containerStatuses"]
        .into_iter()
        .filter_map(|l| status.get(l).and_then(Value::as_array))
        .flatten()
}

/// A Job's pods run to completion.
fn pod_completes(pod: &Value) -> bool {
    pod.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| r["kind"] == "Job" && r["controller"] == json!(true))
}

fn qos_class(containers: &[Value]) -> &'static str {
    let set = |c: &Value, p: &str| {
        c.pointer(p)
            .and_then(Value::as_object)
            .is_some_and(|m| !m.is_empty())
    };
    match containers
        .iter()
        .any(|c| set(c, "/resources/requests") || set(c, "/resources/limits"))
    {
        true => "Burstable",
        false => "BestEffort",
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests;
