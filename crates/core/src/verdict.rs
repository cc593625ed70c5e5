//! The vocabulary of a judgement, shared by the comparison that reaches it (`diff`) and the
//! report that shows it (`report`): the drift classes, and what a comparison says of ignore
//! rules and schemas. Its own module so that neither of the two depends on the other for it.

use serde::{Deserialize, Serialize};

/// How a custom resource was compared (see `diff::Comparison::schema`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchemaUse {
    /// By the structural schema of its CRD's version.
    Crd,
    /// Without a schema: its CRD (or that version) was not known.
    None,
}

/// Differences one ignore rule (or the `driftd.io/ignore` annotation) hid from a comparison.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct IgnoredCount {
    /// `ignore[0] ("istio sidecar")` for a config rule, `annotation driftd.io/ignore`.
    pub rule: String,
    pub count: usize,
}

/// What kind of drift an object is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriftClass {
    InSync,
    Modified,
    Missing,
    Uncommitted,
    StaleConfig,
    Unmanaged,
    /// `compare = "dry-run"`: the cluster refused a server-side dry run of the committed
    /// manifest (a webhook or validation said no); the entry's `dry_run` has the server's
    /// message. A finding about the committed state, not drift of the live object.
    Rejected,
}

impl DriftClass {
    pub fn as_str(&self) -> &'static str {
        match self {
            DriftClass::InSync => "in_sync",
            DriftClass::Modified => "modified",
            DriftClass::Missing => "missing",
            DriftClass::Uncommitted => "uncommitted",
            DriftClass::StaleConfig => "stale_config",
            DriftClass::Unmanaged => "unmanaged",
            DriftClass::Rejected => "rejected",
        }
    }

    /// Every class, in the order tables and metrics list them.
    pub const ALL: [DriftClass; 7] = [
        DriftClass::InSync,
        DriftClass::Modified,
        DriftClass::Missing,
        DriftClass::Uncommitted,
        DriftClass::StaleConfig,
        DriftClass::Unmanaged,
        DriftClass::Rejected,
    ];
}

/// A `class` value that is not one of [`DriftClass::ALL`]; the message lists the valid ones so
/// a typo in `?class=` or `--class` is answered instead of silently matching nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown class `{given}`; valid classes: {}", DriftClass::ALL.map(|c| c.as_str()).join(", "))]
pub struct UnknownClass {
    pub given: String,
}

impl std::str::FromStr for DriftClass {
    type Err = UnknownClass;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DriftClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownClass {
                given: s.to_string(),
            })
    }
}

impl std::fmt::Display for DriftClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
