//! Parse and validate desired-state files: YAML multi-document streams, JSON objects, and
//! `kind: List` / `*List` wrappers, as `kubectl apply -f` and `helm template` produce them.
//!
//! What is accepted is what kube-apiserver accepts on create (`driftd_k8s::validation`: names
//! per kind, namespaces, labels, annotations, field types, base64, quantities), refused with
//! kube-apiserver's own words, so nothing is stored that a cluster could never hold.
//! Scope is never guessed: built-in kinds take theirs from the kinds table, custom resources
//! from a CustomResourceDefinition in the same input or known from elsewhere
//! ([`LoadOptions::custom_scopes`]: CRDs committed earlier, declared scopes, a cluster's).
//! A custom resource whose CRD is known nowhere is valid input all the same (its operator
//! was installed by someone else): it is accepted with its scope marked unresolved
//! ([`ManifestObject::scope_unresolved`]) and keyed as namespaced, as most custom resources
//! are, until the cluster tells: `serve` takes the scope from discovery, `check` from the
//! live objects, and a cluster-scoped kind's objects then lose the namespace.
//!
//! Loading happens in two steps: every file is read into raw documents (with their origin),
//! a document or List item at a time, never the whole text or a whole List as one tree
//! (see `read`, `json_stream`, `yaml_stream` and the size limits in `limits`), then the
//! whole input is validated at once, because a CustomResourceDefinition in one
//! file decides the scope (and so the namespace defaulting) of custom resources in another,
//! and because the same object must not be defined twice anywhere in one input.
//!
//! Some input kubectl accepts is not refused but reported: an object with a `generateName`
//! and no name is skipped (no live object can be matched to it by name), and a key given
//! twice in a YAML mapping keeps its last value, as kubectl does, with a warning.
//!
//! Error messages name file, document and field but never a Secret's value.

mod compact;
mod json_stream;
mod limits;
mod read;
mod resolve;
mod yaml;
mod yaml_stream;

#[cfg(test)]
pub(crate) mod fuzz;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;

pub use compact::{CompactObject, Desired};
use driftd_k8s::{kinds, ObjectKey};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where an object came from, so errors and listings can point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The path as given (or `-` / `<stdin>` for standard input).
    pub file: String,
    /// 0-based index of the YAML document (or JSON value) in the file.
    pub document: usize,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: document {}", self.file, self.document)
    }
}

/// One desired object, validated, with defaults a client would add (namespace).
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestObject {
    pub origin: Origin,
    pub key: ObjectKey,
    pub api_version: String,
    pub object: Value,
    /// A custom resource whose CRD was known nowhere: keyed as namespaced until the cluster
    /// tells its scope (see the module doc), and compared without a schema until its CRD is
    /// found.
    pub scope_unresolved: bool,
}

/// What kind of problem a [`ManifestError`] is, which decides how it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Unreadable or malformed input; with a field, the reason reads as a predicate
    /// (`field metadata.name is required`).
    Input,
    /// kube-apiserver would refuse the object; the reason is its message, which names the
    /// field itself (`metadata.name: Invalid value: ...`).
    Rejected,
}

/// A rejected input: names the file, the document and (when known) the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: document {document}: {}{reason}", self.field_prefix())]
pub struct ManifestError {
    pub file: String,
    pub document: usize,
    /// The field, with the list item it is in (`items[2].metadata.name`).
    pub field: Option<String>,
    pub reason: String,
    pub cause: Cause,
}

impl ManifestError {
    fn new(file: &str, document: usize, field: Option<String>, reason: impl Into<String>) -> Self {
        ManifestError {
            file: file.to_string(),
            document,
            field,
            reason: reason.into(),
            cause: Cause::Input,
        }
    }

    fn field_prefix(&self) -> String {
        match (&self.cause, &self.field) {
            (Cause::Input, Some(f)) => format!("field {f} "),
            _ => String::new(),
        }
    }
}

/// How to read input and fill in what a manifest leaves out.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Namespace given to namespaced objects without one (`--namespace`, default `default`).
    pub default_namespace: String,
    /// Scopes of custom kinds known from elsewhere: CRDs already committed (possibly by
    /// another source), scopes the user declared, a cluster's CRDs or objects:
    /// (group, kind) -> namespaced. A CRD in the input itself wins.
    pub custom_scopes: BTreeMap<(String, String), bool>,
    /// The input is what a cluster returned (`kubectl get -o yaml`): it is not validated
    /// again, and a kind known nowhere else takes its scope from the object (a namespaced
    /// object read from a cluster always has a namespace).
    pub from_cluster: bool,
    /// Largest input of one load, all files together; no single file may be larger either.
    pub max_total_bytes: usize,
    /// Largest document, or item of a List: refused as soon as reading crosses it, so a
    /// hostile input costs at most this much memory before it is refused.
    pub max_object_bytes: usize,
}

/// Default of [`LoadOptions::max_total_bytes`]. Input is read an object at a time, so what
/// a load holds grows with the objects, not with the text: the limit is a ceiling on how
/// much work one commit takes on, high enough for a million typical objects (the bench's
/// mix is about 650 bytes of JSON an object, a million 626 MiB) with room to spare.
pub const DEFAULT_MAX_TOTAL_BYTES: usize = 1 << 30;

/// Default of [`LoadOptions::max_object_bytes`]: kube-apiserver refuses a request body over
/// 3 MiB (`MaxRequestBodyBytes: int64(3 * 1024 * 1024)` in `NewConfig`,
/// staging/src/k8s.io/apiserver/pkg/server/config.go: twice etcd's 1.5 MiB request limit,
/// for JSON's growth over protobuf), so no object larger than that can ever be created,
/// and a document that size or more is either a mistake or hostile.
pub const DEFAULT_MAX_OBJECT_BYTES: usize = 3 << 20;

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_namespace: "default".into(),
            custom_scopes: BTreeMap::new(),
            from_cluster: false,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
            max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
        }
    }
}

/// An object left out because it cannot be compared with a live one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub origin: Origin,
    /// The list item it is (`items[2]`), if it came in a List.
    pub item: Option<String>,
    pub api_version: String,
    pub kind: String,
    pub generate_name: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.origin)?;
        if let Some(item) = &self.item {
            write!(f, "{item}: ")?;
        }
        write!(
            f,
            "{} with generateName {:?} and no name skipped: kube-apiserver names it on create, so no live object can be matched to it",
            self.kind, self.generate_name
        )
    }
}

/// Input kubectl accepts that is probably a mistake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub file: String,
    pub document: usize,
    /// 1-based line.
    pub line: u64,
    pub message: String,
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: document {}: line {}: {}",
            self.file, self.document, self.line, self.message
        )
    }
}

/// Everything one load found: the objects as trees ([`load`]) or as text
/// ([`load_compact`], what a large commit holds).
#[derive(Debug, Clone)]
pub struct Loaded<O = ManifestObject> {
    pub objects: Vec<O>,
    pub skipped: Vec<Skipped>,
    pub warnings: Vec<Warning>,
}

impl<O> Default for Loaded<O> {
    fn default() -> Self {
        Loaded {
            objects: Vec::new(),
            skipped: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

impl<O: Desired> Loaded<O> {
    /// The custom kinds whose scope is unresolved (`Kind.group`), with how many objects
    /// each has: what `commit` and `check` tell the user they take from the cluster.
    pub fn unresolved_kinds(&self) -> BTreeMap<String, usize> {
        let mut kinds = BTreeMap::new();
        for o in self.objects.iter().filter(|o| o.scope_unresolved()) {
            *kinds
                .entry(format!("{}.{}", o.key().kind, o.key().group))
                .or_default() += 1;
        }
        kinds
    }
}

impl Loaded<CompactObject> {
    /// The same objects as trees, made on every core.
    pub fn into_trees(self) -> Loaded {
        Loaded {
            objects: crate::par::map_owned(self.objects, 256, CompactObject::into_manifest),
            skipped: self.skipped,
            warnings: self.warnings,
        }
    }
}

/// Name used in origins and errors for standard input.
pub const STDIN_NAME: &str = "<stdin>";

/// Loads files, folders (recursively: *.yaml, *.yml, *.json) and `-` (stdin).
///
/// Folders are walked recursively and their files taken in sorted path order, so the same
/// tree always yields the same objects in the same order. A file named explicitly is read
/// whatever its extension, as `kubectl apply -f` does.
pub fn load(paths: &[PathBuf], options: &LoadOptions) -> Result<Loaded, ManifestError> {
    load_compact(paths, options).map(Loaded::into_trees)
}

/// [`load`] with the objects kept as text: what a commit of many objects holds, a tenth of
/// their trees.
pub fn load_compact(
    paths: &[PathBuf],
    options: &LoadOptions,
) -> Result<Loaded<CompactObject>, ManifestError> {
    let docs = read::read_paths(paths, options)?;
    resolve::finish(docs, options)
}

/// Parses one file's text; `file` is used in errors and origins. The objects only: see
/// [`read_text`] for what was skipped and the warnings.
///
/// A `.json` file name (or text starting with `{` or `[`) is read as a stream of JSON values,
/// anything else as a YAML stream.
pub fn parse_text(
    text: &str,
    file: &str,
    options: &LoadOptions,
) -> Result<Vec<ManifestObject>, ManifestError> {
    read_text(text, file, options).map(|l| l.objects)
}

/// [`parse_text`] with the objects skipped and the warnings.
pub fn read_text(text: &str, file: &str, options: &LoadOptions) -> Result<Loaded, ManifestError> {
    if text.len() > options.max_total_bytes {
        return Err(limits::too_large(file, options.max_total_bytes));
    }
    let format = if file.ends_with(".json") {
        read::Format::Json
    } else {
        read::Format::Sniff
    };
    let mut docs = RawInput::default();
    let room = options.max_total_bytes as u64;
    read::read_source(&mut text.as_bytes(), file, format, options, room, &mut docs)?;
    resolve::finish(docs, options).map(Loaded::into_trees)
}

/// The ((group, kind), namespaced) a CustomResourceDefinition declares, if `object` is one.
pub fn crd_scope(kind: &str, object: &Value) -> Option<((String, String), bool)> {
    if kind != "CustomResourceDefinition" {
        return None;
    }
    let types = kinds::CustomResourceTypes::read(object)?;
    Some(((types.group, types.kind), types.namespaced))
}

/// One top-level document of a file, or one item of a List read an item at a time,
/// before validation.
struct RawDocument {
    origin: Origin,
    /// The field path of a List item (`items[2].`), empty for a document.
    prefix: String,
    value: Value,
}

use resolve::RawInput;

/// A type as a user reads it in an error ("a string"), never the value itself.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
