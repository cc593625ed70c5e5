//! Which live object a judgement compares with.

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
