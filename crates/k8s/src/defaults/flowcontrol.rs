//! flowcontrol.apiserver.k8s.io/v1 (`pkg/apis/flowcontrol/v1/defaults.go`): FlowSchema and
//! PriorityLevelConfiguration. (v1beta3, with its zero-shares annotation, is no longer
//! served by v1.32.)

use serde_json::{json, Map, Value};

use super::apps::spec_of;
use super::fields::{default_int, default_ptr, map};

/// SetDefaults_FlowSchemaSpec: `matchingPrecedence` is a non-pointer int, so 0 is unset.
pub(super) fn flow_schema(object: &mut Value) {
    if let Some(spec) = spec_of(object) {
        default_int(spec, "matchingPrecedence", 1000);
    }
}

/// SetObjectDefaults_PriorityLevelConfiguration: the `limited` or `exempt` part given.
pub(super) fn priority_level_configuration(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(map) else {
        return;
    };
    if let Some(limited) = spec.get_mut("limited").and_then(map) {
        limited_priority_level(limited);
    }
    if let Some(exempt) = spec.get_mut("exempt").and_then(map) {
        // SetDefaults_ExemptPriorityLevelConfiguration
        default_ptr(exempt, "nominalConcurrencyShares", json!(0));
        default_ptr(exempt, "lendablePercent", json!(0));
    }
}

/// SetDefaults_LimitedPriorityLevelConfiguration, and SetDefaults_QueuingConfiguration on
/// its `limitResponse.queuing`. In v1 `nominalConcurrencyShares` is a pointer, so an
/// explicit 0 (a level that holds requests) is kept.
fn limited_priority_level(limited: &mut Map<String, Value>) {
    default_ptr(limited, "nominalConcurrencyShares", json!(30));
    default_ptr(limited, "lendablePercent", json!(0));
    if let Some(q) = limited
        .get_mut("limitResponse")
        .and_then(|r| r.get_mut("queuing"))
        .and_then(map)
    {
        default_int(q, "handSize", 8);
        default_int(q, "queues", 64);
        default_int(q, "queueLengthLimit", 50);
    }
}
