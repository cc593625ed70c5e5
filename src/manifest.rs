//! Parse and validate desired-state files: YAML multi-document streams, JSON objects, and
//! `kind: List` / `*List` wrappers, as `kubectl apply -f` and `helm template` produce them.
//!
//! OWNER: store+manifest helper. Interface fixed; bodies are stubs until implemented.

use crate::k8s::ObjectKey;
use serde_json::Value;
use std::path::PathBuf;

/// Where an object came from, so errors and listings can point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The path as given (or `-` / `<stdin>` for standard input).
    pub file: String,
    /// 0-based index of the YAML document (or JSON value) in the file.
    pub document: usize,
}

/// One desired object, validated, with defaults a client would add (namespace).
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestObject {
    pub origin: Origin,
    pub key: ObjectKey,
    pub api_version: String,
    pub object: Value,
}

/// A rejected input: names the file, the document and (when known) the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: document {document}: {reason}")]
pub struct ManifestError {
    pub file: String,
    pub document: usize,
    pub field: Option<String>,
    pub reason: String,
}

/// How to fill in what a manifest leaves out.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Namespace given to namespaced objects without one (`--namespace`, default `default`).
    pub default_namespace: String,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_namespace: "default".into(),
        }
    }
}

/// Loads files, folders (recursively: *.yaml, *.yml, *.json) and `-` (stdin).
pub fn load(
    _paths: &[PathBuf],
    _options: &LoadOptions,
) -> Result<Vec<ManifestObject>, ManifestError> {
    unimplemented!("manifest::load")
}

/// Parses one file's text; `file` is used in errors and origins.
pub fn parse_text(
    _text: &str,
    _file: &str,
    _options: &LoadOptions,
) -> Result<Vec<ManifestObject>, ManifestError> {
    unimplemented!("manifest::parse_text")
}
