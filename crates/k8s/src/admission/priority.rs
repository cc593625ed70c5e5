//! Priority (`plugin/pkg/admission/priority/admission.go`).
//!
//! On create of a Pod (`admitPod`): a pod without `priorityClassName` takes the global
//! default class (name, value and preemptionPolicy), or, when there is none, priority 0
//! and `PreemptLowerPriority` with no class name (`getDefaultPriority`); a pod naming a
//! class takes its value and policy, and is refused when the class does not exist. A pod
//! that already carries a `priority` or `preemptionPolicy` other than the computed one is
//! refused (equal ones are allowed).
//!
//! On create of a PriorityClass (`validatePriorityClass`): a second `globalDefault` class
//! is refused.

use serde_json::{json, Value};

use super::facts::{AdmissionFacts, PREEMPT_LOWER_PRIORITY};

pub(super) fn mutate(pod: &mut Value, facts: &AdmissionFacts) -> Result<(), String> {
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let named = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    let (class, value, policy) = match named {
        Some(c) => match facts.priority_classes.get(&c) {
            Some((v, p)) => (Some(c), *v, p.clone()),
            None => return Err(format!("no PriorityClass with name {c} was found")),
        },
        None => match facts
            .global_default_priority_class
            .as_ref()
            .and_then(|c| Some((c, facts.priority_classes.get(c)?)))
        {
            Some((c, (v, p))) => (Some(c.clone()), *v, p.clone()),
            None => (None, 0, PREEMPT_LOWER_PRIORITY.to_string()),
        },
    };
    if let Some(given) = spec.get("priority").and_then(Value::as_i64) {
        if given != value {
            return Err(format!(
                "the integer value of priority ({given}) must not be provided in pod spec; \
                 priority admission controller computed {value} from the given PriorityClass name"
            ));
        }
    }
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str) {
        if given != policy {
            return Err(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod \
                 spec; priority admission controller computed {policy} from the given \
                 PriorityClass name"
            ));
        }
    }
    if let Some(c) = class {
        spec.insert("priorityClassName".into(), json!(c));
    }
    spec.insert("priority".into(), json!(value));
    spec.insert("preemptionPolicy".into(), json!(policy));
    Ok(())
}

/// `validatePriorityClass` on create: only one class may be the global default.
pub(super) fn validate_class(class: &Value, facts: &AdmissionFacts) -> Result<(), String> {
    if class.get("globalDefault").and_then(Value::as_bool) != Some(true) {
        return Ok(());
    }
    match &facts.global_default_priority_class {
        Some(existing) => Err(format!(
            "PriorityClass {existing} is already marked as default. Only one default can exist"
        )),
        None => Ok(()),
    }
}
