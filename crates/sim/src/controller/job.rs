//! The job controller: runs `completions` pods to success, then marks the Job Complete.

use super::pods::create_pod;
use super::{record_event, Types, MANAGER};
use crate::store::{now_rfc3339, random_suffix, Store, WriteCtx};
use serde_json::{json, Value};

/// Job: runs `completions` pods to success, then marks the Job Complete.
pub(super) fn reconcile(store: &Store, t: &Types, ns: &str, name: &str) {
    let Ok(job) = store.get(&t.job, Some(ns), name) else {
        return;
    };
    let Some(template) = job.pointer("/spec/template").cloned() else {
        return;
    };
    let completions = job
        .pointer("/spec/completions")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0) as usize;
    let mut pods = super::owned(store, &t.pod, ns, &job);
    let complete = job
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Complete" && c["status"] == "True")
        });
    if complete || job.pointer("/spec/suspend") == Some(&json!(true)) {
        return;
    }
    while pods.len() < completions {
        let pod_name = format!("{name}-{}", random_suffix(5));
        let Some(p) = create_pod(
            store,
            t,
            &job,
            &pod_name,
            Some(&format!("{name}-")),
            &template,
            &[],
            pods.len(),
            true,
        ) else {
            break;
        };
        let msg = format!("Created pod: {pod_name}");
        record_event(store, t, &job, "job-controller", "SuccessfulCreate", &msg);
        pods.push(p);
    }
    let succeeded = pods
        .iter()
        .filter(|p| p.pointer("/status/phase").and_then(Value::as_str) == Some("Succeeded"))
        .count();
    let done = succeeded >= completions;
    let _ = store.write(
        &t.job,
        Some(ns),
        name,
        Some("status"),
        &WriteCtx::controller(MANAGER),
        |old| {
            let mut new = old.clone();
            let now = now_rfc3339();
            let start = old
                .pointer("/status/startTime")
                .cloned()
                .unwrap_or(json!(now));
            let mut status = json!({
                "startTime": start,
                "active": completions.saturating_sub(succeeded),
                "succeeded": succeeded,
                "ready": 0,
                "terminating": 0,
                "uncountedTerminatedPods": {},
            });
            if status["active"] == json!(0) {
                status.as_object_mut().map(|s| s.remove("active"));
            }
            if done {
                status["completionTime"] = json!(now);
                let cond = |ty: &str, reason: &str, msg: &str| {
                    json!({"type": ty, "status": "True",
                "lastProbeTime": now, "lastTransitionTime": now, "reason": reason, "message": msg})
                };
                status["conditions"] = json!([
                    cond(
                        "SuccessCriteriaMet",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods"
                    ),
                    cond(
                        "Complete",
                        "CompletionsReached",
                        "Reached expected number of succeeded pods"
                    ),
                ]);
            }
            new["status"] = status;
            Ok(new)
        },
    );
    if done {
        record_event(
            store,
            t,
            &job,
            "job-controller",
            "Completed",
            "Job completed",
        );
    }
}
