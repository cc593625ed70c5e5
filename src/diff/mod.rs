//! The comparison of a desired object with its live counterpart: a pure function, no I/O.
//!
//! OWNER: differ helper. Interface fixed; bodies are stubs until implemented.

use serde::Serialize;
use serde_json::Value;

/// What kind of drift an object is in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum DriftClass {
    InSync,
    Modified,
    Missing,
    Uncommitted,
    StaleConfig,
    Unmanaged,
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
        }
    }
}

/// RFC 6902 operation that would bring the live object back to the desired one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeOp {
    Add,
    Remove,
    Replace,
}

/// One difference. Secret values never appear: `desired`/`live` hold a keyed hash instead.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// RFC 6901 pointer into the desired object (into the live list for an extra item).
    pub path: String,
    pub op: ChangeOp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
    /// Readable form: `spec.template.spec.containers[name=app].image`.
    pub field: String,
    /// Field manager that last wrote this field live (from managedFields), and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<String>,
}

/// The result of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub class: DriftClass,
    pub changes: Vec<Change>,
    /// Patch that applied to the live object restores the desired fields.
    pub patch: json_patch::Patch,
}

/// Facts about the cluster beyond the object itself that decide what is drift.
#[derive(Debug, Clone, Default)]
pub struct ClusterFacts {}

/// Inputs of one comparison.
pub struct CompareInput<'a> {
    pub desired: &'a Value,
    /// `None` when the object does not exist live.
    pub live: Option<&'a Value>,
    /// The object as the source's previous revision had it (fields removed since are drift).
    pub previous: Option<&'a Value>,
    pub facts: &'a ClusterFacts,
}

/// Compares objects; holds the installation key for Secret hashes.
pub struct Differ {
    _secret_key: Vec<u8>,
}

impl Differ {
    pub fn new(secret_key: &[u8]) -> Differ {
        Differ {
            _secret_key: secret_key.to_vec(),
        }
    }

    pub fn compare(&self, _input: &CompareInput) -> Comparison {
        unimplemented!("diff::Differ::compare")
    }
}
