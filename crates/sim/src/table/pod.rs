//! The Pod row's READY, STATUS and RESTARTS as kube-apiserver's pod printer derives them
//! (`pkg/printers/internalversion/printers.go`, `printPod`): what `kubectl get pods` shows
//! for a container held by its config (`CreateContainerConfigError`), behind init
//! containers (`Init:0/1`, `Init:CreateContainerConfigError`) or restarted (`1 (5s ago)`).

use super::human_age;
use serde_json::Value;

/// (ready containers, containers, status, restarts) of `pod`.
pub(super) fn summary(pod: &Value) -> (usize, usize, String, String) {
    let list = |p: &str| {
        pod.pointer(p)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let text = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (init_specs, statuses, init_statuses) = (
        list("/spec/initContainers"),
        list("/status/containerStatuses"),
        list("/status/initContainerStatuses"),
    );
    // A sidecar (restartable init container) counts as a container.
    let sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| c["name"] == name && c["restartPolicy"] == "Always")
    };
    let total = list("/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0;
    let mut reason = match text(pod, "/status/reason") {
        r if r.is_empty() => text(pod, "/status/phase"),
        r => r,
    };
    // The newest `lastState.terminated.finishedAt` of the counted containers.
    let mut restarts = 0;
    let mut last_restart: Option<String> = None;
    let note_restart = |c: &Value, restarts: &mut i64, last: &mut Option<String>| {
        *restarts += c["restartCount"].as_i64().unwrap_or(0);
        let finished = text(c, "/lastState/terminated/finishedAt");
        if !finished.is_empty() && last.as_deref().is_none_or(|l| l < finished.as_str()) {
            *last = Some(finished);
        }
    };
    let (mut sidecar_restarts, mut sidecar_last) = (0, None);
    let mut initializing = false;
    for (i, c) in init_statuses.iter().enumerate() {
        note_restart(c, &mut restarts, &mut last_restart);
        let name = text(c, "/name");
        if sidecar(&name) {
            note_restart(c, &mut sidecar_restarts, &mut sidecar_last);
        }
        let terminated = c.pointer("/state/terminated");
        let exit_code = terminated.and_then(|t| t["exitCode"].as_i64());
        let waiting_reason = text(c, "/state/waiting/reason");
        if exit_code == Some(0) {
            continue;
        }
        if sidecar(&name) && c["started"] == true {
            if c["ready"] == true {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(t) = terminated {
            match text(t, "/reason") {
                r if r.is_empty() => match t["signal"].as_i64().filter(|s| *s != 0) {
                    Some(signal) => format!("Init:Signal:{signal}"),
                    None => format!("Init:ExitCode:{}", exit_code.unwrap_or(0)),
                },
                r => format!("Init:{r}"),
            }
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }
    let initialized = list("/status/conditions")
        .iter()
        .any(|c| c["type"] == "Initialized" && c["status"] == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = sidecar_last;
        let mut has_running = false;
        for c in statuses.iter().rev() {
            note_restart(c, &mut restarts, &mut last_restart);
            let waiting_reason = text(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting_reason.is_empty() {
                reason = waiting_reason;
            } else if let Some(t) = terminated {
                reason = match text(t, "/reason") {
                    r if !r.is_empty() => r,
                    _ => match t["signal"].as_i64().filter(|s| *s != 0) {
                        Some(signal) => format!("Signal:{signal}"),
                        None => format!("ExitCode:{}", t["exitCode"].as_i64().unwrap_or(0)),
                    },
                };
            } else if c["ready"] == true && c.pointer("/state/running").is_some() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = list("/status/conditions")
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }
    let phase = text(pod, "/status/phase");
    if pod.pointer("/metadata/deletionTimestamp").is_some()
        && phase != "Succeeded"
        && phase != "Failed"
    {
        reason = "Terminating".to_string();
    }
    let restarts = match (restarts, last_restart) {
        (0, _) | (_, None) => restarts.to_string(),
        (n, Some(at)) => format!("{n} ({} ago)", human_age(Some(&at))),
    };
    (ready, total, reason, restarts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: Value) -> Value {
        json!({"spec": {"initContainers": [{"name": "migrate"}], "containers": [{"name": "app"}]},
               "status": status})
    }

    /// printPod: an init container waiting with a reason other than PodInitializing shows
    /// as `Init:<reason>`; a main container's waiting reason replaces the phase; a
    /// restarted container shows its count with the age of its last exit.
    #[test]
    fn status_follows_the_pod_printer() {
        let held_init = pod(json!({"phase": "Pending",
            "initContainerStatuses": [{"name": "migrate", "restartCount": 0,
                "state": {"waiting": {"reason": "CreateContainerConfigError"}}}],
            "containerStatuses": [{"name": "app", "restartCount": 0,
                "state": {"waiting": {"reason": "PodInitializing"}}}]}));
        assert_eq!(summary(&held_init).2, "Init:CreateContainerConfigError");
        let behind_init = pod(json!({"phase": "Pending",
            "initContainerStatuses": [{"name": "migrate", "state": {"waiting": {"reason": "PodInitializing"}}}]}));
        assert_eq!(summary(&behind_init).2, "Init:0/1");
        let held = pod(json!({"phase": "Pending",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "migrate", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
            "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "CreateContainerConfigError"}}}]}));
        assert_eq!(
            summary(&held),
            (0, 1, "CreateContainerConfigError".into(), "0".into())
        );
        let restarted = pod(json!({"phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{"name": "migrate", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 2,
                "state": {"running": {"startedAt": "2020-01-01T00:00:00Z"}},
                "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2020-01-01T00:00:00Z"}}}]}));
        let (ready, total, status, restarts) = summary(&restarted);
        assert_eq!((ready, total, status.as_str()), (1, 1, "Running"));
        assert!(
            restarts.starts_with("2 (") && restarts.ends_with(" ago)"),
            "{restarts}"
        );
    }
}
