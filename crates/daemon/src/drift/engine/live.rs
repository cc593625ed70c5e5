//! Which live object a judgement compares with, and what of a live object is kept.

use serde_json::Value;

/// Which live object a judgement compares with.
#[derive(Clone, Copy)]
pub(super) enum Live<'a> {
    /// The copy the engine keeps (a re-evaluation: a commit, an intent, a CRD...).
    Kept,
    /// The object a watch event just brought (`None`: deleted), already kept.
    Fresh(Option<&'a Value>),
}

impl<'a> Live<'a> {
    /// The object to compare with: the one the event brought, or the kept copy, unpacked
    /// into `kept` (which the answer borrows).
    pub(super) fn resolve(
        self,
        kept: &'a mut Option<Value>,
        copy: impl FnOnce() -> Option<Value>,
    ) -> Option<&'a Value> {
        match self {
            Live::Fresh(live) => live,
            Live::Kept => {
                *kept = copy();
                kept.as_ref()
            }
        }
    }
}

/// The annotation `kubectl apply` keeps the whole applied object in.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What of a live object the engine keeps: everything the comparison reads. `status` (the
/// controllers') and kubectl's last-applied copy of the object are never compared, and are
/// often half of what the API server sends; keeping them would hold each object twice over.
pub(super) fn as_compared(mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(annotations) = map
            .get_mut("metadata")
            .and_then(|m| m.get_mut("annotations"))
            .and_then(Value::as_object_mut)
        {
            annotations.remove(LAST_APPLIED);
        }
    }
    object
}
