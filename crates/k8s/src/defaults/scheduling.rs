//! scheduling.k8s.io/v1 (`pkg/apis/scheduling/v1/defaults.go`): PriorityClass.

use serde_json::{json, Value};

use super::fields::{default_ptr, map};

/// SetDefaults_PriorityClass: a priority class preempts lower priorities unless it says
/// `Never` (NonPreemptingPriority is GA).
pub(super) fn priority_class(object: &mut Value) {
    if let Some(m) = map(object) {
        default_ptr(m, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}
