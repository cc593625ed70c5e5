//! Mutating admission webhooks, modelled: what a cluster's webhooks (sidecar injectors,
//! label stampers, image rewriters) do to an object on its way to storage, which no static
//! model of kube-apiserver knows. Registered through `/_sim/webhooks`.
//!
//! Where they run mirrors kube-apiserver: the `MutatingAdmissionWebhook` plugin comes after
//! the built-in mutating plugins of the default chain, on CREATE and on UPDATE of the main
//! resource (a PATCH and a server-side apply are UPDATEs, or CREATEs when the object does
//! not exist), never on subresources their rules do not name (`status`, `scale`), and on a
//! dry run as on a real write (webhooks declared `sideEffects: None`, which
//! `dryRun=All` requires: `staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/
//! mutating/dispatcher.go`). A custom resource a webhook changed is pruned and defaulted
//! again (`customresource_handler.go` re-applies the schema after admission).
//!
//! A real webhook answers with a JSONPatch; the simulator's applies its `patch` as a
//! strategic merge patch (JSON merge patch for kinds without one): keyed list items merge by
//! their merge key, so the webhook is idempotent, as one must be to be reinvoked on every
//! UPDATE (`reinvocationPolicy`).

use super::super::status::ApiError;
use driftd_k8s::kinds::ResourceType;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One registered webhook.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MutatingWebhook {
    /// For messages and `GET /_sim/webhooks`.
    pub name: String,
    /// API group of the kind it mutates (`""` for the core group).
    #[serde(default)]
    pub group: String,
    pub kind: String,
    /// `CREATE`, `UPDATE` (default: both).
    #[serde(default = "both")]
    pub operations: Vec<String>,
    /// What it changes: a strategic merge patch (JSON merge patch for custom resources).
    pub patch: Value,
}

fn both() -> Vec<String> {
    vec!["CREATE".into(), "UPDATE".into()]
}

impl MutatingWebhook {
    /// Refuses a webhook the simulator could not run.
    pub fn check(&self) -> Result<(), ApiError> {
        if self.name.is_empty() || self.kind.is_empty() {
            return Err(ApiError::bad_request("webhook: name and kind are required"));
        }
        if let Some(op) = self
            .operations
            .iter()
            .find(|o| *o != "CREATE" && *o != "UPDATE")
        {
            return Err(ApiError::bad_request(format!(
                "webhook {}: operation {op:?} is not CREATE or UPDATE",
                self.name
            )));
        }
        if !self.patch.is_object() {
            return Err(ApiError::bad_request(format!(
                "webhook {}: patch must be an object",
                self.name
            )));
        }
        Ok(())
    }

    fn matches(&self, info: &ResourceType, operation: &str) -> bool {
        self.group == info.group
            && self.kind == info.kind
            && self.operations.iter().any(|o| o == operation)
    }
}

/// Runs every webhook registered for `operation` (`CREATE`, `UPDATE`) on `info` over `obj`,
/// in registration order. Returns whether any changed it.
pub(super) fn run(
    webhooks: &[MutatingWebhook],
    info: &ResourceType,
    operation: &str,
    obj: &mut Value,
) -> Result<bool, ApiError> {
    let mut changed = false;
    for hook in webhooks.iter().filter(|w| w.matches(info, operation)) {
        let patched = if !info.custom && crate::smp::supported(&info.api_version(), &info.kind) {
            crate::smp::apply(&info.kind, obj, &hook.patch).map_err(|e| {
                // kube-apiserver's wording for a webhook whose patch cannot be applied.
                ApiError::new(
                    500,
                    "InternalError",
                    format!(
                        "Internal error occurred: failed calling webhook \"{}\": {}",
                        hook.name, e.0
                    ),
                )
            })?
        } else {
            let mut doc = obj.clone();
            json_patch::merge(&mut doc, &hook.patch);
            doc
        };
        if patched != *obj {
            *obj = patched;
            changed = true;
        }
    }
    Ok(changed)
}
