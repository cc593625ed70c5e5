//! Strategic merge patch for built-in kinds, keyed by the API's patch merge keys.
//!
//! OWNER: k8s-semantics helper. Stub until then.

use serde_json::Value;

/// Why a patch could not be applied (becomes a 400/422 Status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PatchError(pub String);

/// Applies a strategic merge patch to `original` for an object of `kind`.
pub fn apply(_kind: &str, _original: &Value, _patch: &Value) -> Result<Value, PatchError> {
    Err(PatchError(
        "strategic merge patch not implemented yet".into(),
    ))
}
