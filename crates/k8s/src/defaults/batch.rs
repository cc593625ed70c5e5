//! batch/v1 (`pkg/apis/batch/v1/defaults.go`): Job and CronJob.

use serde_json::{json, Map, Value};

use super::apps::spec_of;
use super::core::template_of;
use super::fields::{child, default_ptr, default_str, for_each_item, map, no_labels};

/// SetDefaults_Job on the JobSpec. (kube-apiserver does not default the JobSpec inside a
/// CronJob's jobTemplate: only its pod template.)
fn job_spec(spec: &mut Map<String, Value>) {
    let unset = |s: &Map<String, Value>, k: &str| s.get(k).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    default_ptr(spec, "parallelism", json!(1));
    if unset(spec, "backoffLimit") {
        let v = if unset(spec, "backoffLimitPerIndex") {
            6
        } else {
            i32::MAX as i64
        };
        spec.insert("backoffLimit".into(), json!(v));
    }
    default_ptr(spec, "completionMode", json!("NonIndexed"));
    default_ptr(spec, "suspend", json!(false));
    let has_pfp = !unset(spec, "podFailurePolicy");
    default_ptr(
        spec,
        "podReplacementPolicy",
        json!(if has_pfp {
            "Failed"
        } else {
            "TerminatingOrFailed"
        }),
    );
    default_ptr(spec, "manualSelector", json!(false));
    if let Some(pfp) = spec.get_mut("podFailurePolicy").and_then(map) {
        for_each_item(pfp.get_mut("rules"), |r| {
            for_each_item(r.get_mut("onPodConditions"), |c| {
                if let Some(c) = map(c) {
                    default_str(c, "status", "True");
                }
            });
        });
    }
}

pub(super) fn job(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    job_spec(spec);
    template_of(spec);
    // A Job without labels takes its template's.
    let labels = object.pointer("/spec/template/metadata/labels").cloned();
    if let (Some(labels), true) = (labels, no_labels(object)) {
        if let Some(meta) = map(object).map(|m| child(m, "metadata")).and_then(map) {
            meta.insert("labels".into(), labels);
        }
    }
}

pub(super) fn cron_job(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    default_str(spec, "concurrencyPolicy", "Allow");
    default_ptr(spec, "suspend", json!(false));
    default_ptr(spec, "successfulJobsHistoryLimit", json!(3));
    default_ptr(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(jt) = map(child(spec, "jobTemplate")) {
        child(jt, "metadata");
        if let Some(js) = map(child(jt, "spec")) {
            template_of(js);
        }
    }
}
