//! Parse and validate desired-state files: YAML multi-document streams, JSON objects, and
//! `kind: List` / `*List` wrappers, as `kubectl apply -f` and `helm template` produce them.
//!
//! Custom resources take their scope from a CustomResourceDefinition in the same input;
//! without one they are assumed namespaced (no discovery at commit time).
//!
//! Loading happens in two steps: every file is split into raw documents (with their origin),
//! then the whole input is validated at once, because a CustomResourceDefinition in one
//! file decides the scope (and so the namespace defaulting) of custom resources in another,
//! and because the same object must not be defined twice anywhere in one input.
//!
//! Error messages name file, document and field but never a field *value*: the input may be
//! a Secret.

use driftd_k8s::{kinds, ObjectKey};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

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
}

/// A rejected input: names the file, the document and (when known) the field.
///
/// Displays as `file: document N: field F <reason>`, so with a field the reason reads as a
/// predicate ("is required"), without one as a sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: document {document}: {}{reason}", field_prefix(.field))]
pub struct ManifestError {
    pub file: String,
    pub document: usize,
    pub field: Option<String>,
    pub reason: String,
}

fn field_prefix(field: &Option<String>) -> String {
    match field {
        Some(f) => format!("field {f} "),
        None => String::new(),
    }
}

impl ManifestError {
    fn new(file: &str, document: usize, field: Option<String>, reason: impl Into<String>) -> Self {
        ManifestError {
            file: file.to_string(),
            document,
            field,
            reason: reason.into(),
        }
    }
}

/// How to fill in what a manifest leaves out.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Namespace given to namespaced objects without one (`--namespace`, default `default`).
    pub default_namespace: String,
    /// Scopes of custom resources known from elsewhere (CRDs already committed, possibly by
    /// another source): (group, kind) -> namespaced. A CRD in the input itself wins.
    pub custom_scopes: BTreeMap<(String, String), bool>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_namespace: "default".into(),
            custom_scopes: BTreeMap::new(),
        }
    }
}

/// Name used in origins and errors for standard input.
pub const STDIN_NAME: &str = "<stdin>";

/// Largest single input accepted; desired state is text a team reviews, not bulk data.
const MAX_INPUT_BYTES: usize = 64 * 1024 * 1024;

/// Loads files, folders (recursively: *.yaml, *.yml, *.json) and `-` (stdin).
///
/// Folders are walked recursively and their files taken in sorted path order, so the same
/// tree always yields the same objects in the same order. A file named explicitly is read
/// whatever its extension, as `kubectl apply -f` does.
pub fn load(
    paths: &[PathBuf],
    options: &LoadOptions,
) -> Result<Vec<ManifestObject>, ManifestError> {
    let mut docs = Vec::new();
    let mut stdin_used = false;
    for path in paths {
        if path.as_os_str() == "-" {
            if stdin_used {
                return Err(ManifestError::new(
                    STDIN_NAME,
                    0,
                    None,
                    "standard input (-) given more than once",
                ));
            }
            stdin_used = true;
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .take(MAX_INPUT_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| {
                    ManifestError::new(STDIN_NAME, 0, None, format!("cannot read: {e}"))
                })?;
            let text = decode(bytes, STDIN_NAME)?;
            docs.extend(split_documents(&text, STDIN_NAME, Format::Sniff)?);
            continue;
        }
        let display = path.display().to_string();
        let meta = std::fs::metadata(path)
            .map_err(|e| ManifestError::new(&display, 0, None, format!("cannot read: {e}")))?;
        if meta.is_dir() {
            let mut files = Vec::new();
            let mut visited = HashSet::new();
            walk(path, &mut files, &mut visited)?;
            files.sort();
            for file in files {
                docs.extend(read_file(&file)?);
            }
        } else {
            docs.extend(read_file(path)?);
        }
    }
    finish(docs, options)
}

/// Parses one file's text; `file` is used in errors and origins.
///
/// A `.json` file name (or text starting with `{` or `[`) is read as a stream of JSON values,
/// anything else as a YAML stream.
pub fn parse_text(
    text: &str,
    file: &str,
    options: &LoadOptions,
) -> Result<Vec<ManifestObject>, ManifestError> {
    let format = if file.ends_with(".json") {
        Format::Json
    } else {
        Format::Sniff
    };
    finish(split_documents(text, file, format)?, options)
}

fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    visited: &mut HashSet<PathBuf>,
) -> Result<(), ManifestError> {
    let display = dir.display().to_string();
    let io_err = |e: std::io::Error| {
        ManifestError::new(&display, 0, None, format!("cannot read folder: {e}"))
    };
    // A symlink loop would otherwise walk forever.
    let canonical = std::fs::canonicalize(dir).map_err(io_err)?;
    if !visited.insert(canonical) {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).map_err(io_err)? {
        let path = entry.map_err(io_err)?.path();
        // Hidden entries (.git, .github workflows, editor swap files) are never manifests;
        // kubectl -R would read them and fail on a CI config. Named explicitly, they are read.
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'))
        {
            continue;
        }
        let meta = std::fs::metadata(&path).map_err(|e| {
            ManifestError::new(
                &path.display().to_string(),
                0,
                None,
                format!("cannot read: {e}"),
            )
        })?;
        if meta.is_dir() {
            walk(&path, files, visited)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            files.push(path);
        }
    }
    Ok(())
}

fn read_file(path: &Path) -> Result<Vec<RawDocument>, ManifestError> {
    let display = path.display().to_string();
    let meta = std::fs::metadata(path)
        .map_err(|e| ManifestError::new(&display, 0, None, format!("cannot read: {e}")))?;
    if meta.len() > MAX_INPUT_BYTES as u64 {
        return Err(too_large(&display));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| ManifestError::new(&display, 0, None, format!("cannot read: {e}")))?;
    let text = decode(bytes, &display)?;
    let format = if path.extension().and_then(|e| e.to_str()) == Some("json") {
        Format::Json
    } else {
        Format::Sniff
    };
    split_documents(&text, &display, format)
}

fn too_large(file: &str) -> ManifestError {
    ManifestError::new(
        file,
        0,
        None,
        format!(
            "input is larger than {} MiB",
            MAX_INPUT_BYTES / (1024 * 1024)
        ),
    )
}

fn decode(mut bytes: Vec<u8>, file: &str) -> Result<String, ManifestError> {
    if bytes.len() > MAX_INPUT_BYTES {
        return Err(too_large(file));
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        ManifestError::new(
            file,
            0,
            None,
            format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Json,
    /// JSON if the first non-blank character opens an object or array, else YAML: the same
    /// sniffing as apimachinery's YAMLOrJSONDecoder used by kubectl.
    Sniff,
}

/// One top-level document of a file, before validation.
struct RawDocument {
    origin: Origin,
    value: Value,
}

fn split_documents(
    text: &str,
    file: &str,
    format: Format,
) -> Result<Vec<RawDocument>, ManifestError> {
    let looks_json = text.trim_start().starts_with(['{', '[']);
    match format {
        Format::Json => split_json(text, file),
        // A YAML flow mapping (`{a: b}`) also starts with `{`: when the JSON reading fails
        // but YAML reads it, take that; otherwise the JSON error is the one that helps.
        Format::Sniff if looks_json => {
            split_json(text, file).or_else(|json_err| split_yaml(text, file).map_err(|_| json_err))
        }
        Format::Sniff => split_yaml(text, file),
    }
}

fn split_json(text: &str, file: &str) -> Result<Vec<RawDocument>, ManifestError> {
    let mut docs = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    for (document, value) in stream.enumerate() {
        // serde_json's messages give line and column but never echo the input.
        let value = value
            .map_err(|e| ManifestError::new(file, document, None, format!("invalid JSON: {e}")))?;
        docs.push(RawDocument {
            origin: Origin {
                file: file.to_string(),
                document,
            },
            value,
        });
    }
    Ok(docs)
}

/// Limits against hostile YAML (alias bombs, deep nesting, document storms), set well above
/// what real manifests need: large CRD bundles have tens of thousands of nodes, schema
/// nesting of a few dozen levels, and practically never use aliases.
fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = 128;
    budget.max_documents = 10_000;
    budget.max_nodes = 2_000_000;
    budget.max_events = 4_000_000;
    budget.max_aliases = 10_000;
    budget.max_anchors = 10_000;
    budget.max_total_scalar_bytes = MAX_INPUT_BYTES;
    budget.max_reader_input_bytes = Some(MAX_INPUT_BYTES);
    let mut alias_limits = serde_saphyr::options::AliasLimits::default();
    alias_limits.max_total_replayed_events = 100_000;
    alias_limits.max_replay_stack_depth = 32;
    alias_limits.max_alias_expansions_per_anchor = 1_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits = alias_limits;
    // Snippets would quote the input in errors, and the input may be a Secret.
    options.with_snippet = false;
    // kubectl's YAML (sigs.k8s.io/yaml over go-yaml v2) reads `0644` as octal, which is
    // what `defaultMode: 0644` in a volume means to everyone who writes it.
    options.legacy_octal_numbers = true;
    // A key given twice is a mistake in desired state: refuse rather than pick one.
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options
}

fn split_yaml(text: &str, file: &str) -> Result<Vec<RawDocument>, ManifestError> {
    let starts = document_starts(text);
    let parsed: Result<Vec<serde_saphyr::Spanned<Value>>, _> =
        serde_saphyr::from_multiple_with_options(text, yaml_options());
    let values = parsed.map_err(|e| {
        let loc = e.location().filter(|l| l.line() > 0);
        let document = loc.map_or(0, |l| document_at(&starts, l.line()));
        let reason = yaml_reason(&e);
        let reason = match loc {
            Some(l) => format!(
                "invalid YAML at line {} column {}: {reason}",
                l.line(),
                l.column()
            ),
            None => format!("invalid YAML: {reason}"),
        };
        ManifestError::new(file, document, None, reason)
    })?;
    // serde-saphyr skips empty and null documents (as kubectl does); map each remaining
    // value back to its position in the stream through the line its root starts on.
    Ok(values
        .into_iter()
        .map(|spanned| RawDocument {
            origin: Origin {
                file: file.to_string(),
                document: document_at(&starts, spanned.defined.line()),
            },
            value: spanned.value,
        })
        .collect())
}

fn yaml_reason(e: &serde_saphyr::Error) -> String {
    let text = e.without_snippet().to_string();
    // The rendered message may end with its own " at line N, column M"; we say where.
    let first = text.lines().next().unwrap_or("").trim();
    let first = match first.rfind(" at line ") {
        Some(i) if first[i..].contains("column") => &first[..i],
        _ => first,
    };
    if first.is_empty() {
        "parse error".into()
    } else {
        scrub_quoted(first)
    }
}

/// Replaces back-quoted input text in a parser message (e.g. "non-finite float `.inf`") with
/// `…`, since it may come from a Secret; tags (`!!str`) are kept, they are not data.
fn scrub_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find('`') {
        let Some(len) = rest[start + 1..].find('`') else {
            break;
        };
        let quoted = &rest[start + 1..start + 1 + len];
        out.push_str(&rest[..start]);
        if quoted.starts_with('!') {
            out.push_str(&rest[start..start + len + 2]);
        } else {
            out.push_str("`…`");
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The (1-based) line on which each document of the stream starts, in order.
fn document_starts(text: &str) -> Vec<u64> {
    use serde_saphyr::granit_parser::{Event, Parser};
    let mut starts = Vec::new();
    for item in Parser::new_from_str(text) {
        match item {
            Ok((Event::DocumentStart(..), span)) => starts.push(span.start.line() as u64),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    starts
}

/// Index of the document containing `line`: the last one starting at or before it.
fn document_at(starts: &[u64], line: u64) -> usize {
    starts.iter().rposition(|&s| s <= line).unwrap_or(0)
}

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

/// Validates the whole input, unwraps lists, fills in namespaces, rejects duplicates.
fn finish(
    docs: Vec<RawDocument>,
    options: &LoadOptions,
) -> Result<Vec<ManifestObject>, ManifestError> {
    let mut checked = Vec::new();
    for doc in docs {
        flatten(doc.value, &doc.origin, "", &mut checked)?;
    }
    let crd_scopes = crd_scopes(&checked);
    let mut seen: HashMap<ObjectKey, Origin> = HashMap::new();
    let mut out = Vec::with_capacity(checked.len());
    for item in checked {
        let Checked {
            origin,
            mut object,
            api_version,
            group,
            kind,
            name,
            namespace,
            prefix,
        } = item;
        let gk = (group.clone(), kind.clone());
        let namespaced = kinds::builtin_namespaced(&group, &kind)
            .or_else(|| crd_scopes.get(&gk).copied())
            .or_else(|| options.custom_scopes.get(&gk).copied())
            // A custom resource whose CRD is not in this input: assume namespaced, as most
            // are (we have no discovery at commit time). A cluster-scoped custom resource
            // must then be committed together with its CRD to get a namespace-free key.
            .unwrap_or(true);
        let namespace = if namespaced {
            let ns = namespace.unwrap_or_else(|| options.default_namespace.clone());
            object["metadata"]["namespace"] = Value::String(ns.clone());
            Some(ns)
        } else {
            // kube-apiserver clears metadata.namespace of cluster-scoped objects on create
            // (rest.EnsureObjectNamespaceMatchesRequestNamespace), and kubectl sends them to
            // a URL without one: strip it so it is not part of the key nor compared later.
            if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("namespace");
            }
            None
        };
        let key = ObjectKey {
            group,
            kind,
            namespace,
            name,
        };
        if let Some(first) = seen.get(&key) {
            return Err(if prefix.is_empty() {
                ManifestError::new(
                    &origin.file,
                    origin.document,
                    None,
                    format!("{key} is defined twice: also in {first}"),
                )
            } else {
                ManifestError::new(
                    &origin.file,
                    origin.document,
                    Some(prefix.trim_end_matches('.').to_string()),
                    format!("defines {key} a second time: also in {first}"),
                )
            });
        }
        seen.insert(key.clone(), origin.clone());
        out.push(ManifestObject {
            origin,
            key,
            api_version,
            object,
        });
    }
    Ok(out)
}

/// A document (or list item) that passed the shape checks.
struct Checked {
    origin: Origin,
    object: Value,
    api_version: String,
    group: String,
    kind: String,
    name: String,
    namespace: Option<String>,
    /// Field path prefix of a list item (`items[2].`), empty for a top-level document.
    prefix: String,
}

fn flatten(
    value: Value,
    origin: &Origin,
    prefix: &str,
    out: &mut Vec<Checked>,
) -> Result<(), ManifestError> {
    let err = |field: &str, reason: String| {
        ManifestError::new(
            &origin.file,
            origin.document,
            Some(format!("{prefix}{field}")),
            reason,
        )
    };
    let Value::Object(map) = &value else {
        return Err(if prefix.is_empty() {
            ManifestError::new(
                &origin.file,
                origin.document,
                None,
                format!("expected a Kubernetes object, found {}", type_name(&value)),
            )
        } else {
            ManifestError::new(
                &origin.file,
                origin.document,
                Some(prefix.trim_end_matches('.').to_string()),
                format!("must be an object, found {}", type_name(&value)),
            )
        });
    };
    let required_string = |field: &str, v: Option<&Value>| -> Result<String, ManifestError> {
        match v {
            None | Some(Value::Null) => Err(err(field, "is required".into())),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(err(field, "must not be empty".into()))
            }
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(err(
                field,
                format!("must be a string, found {}", type_name(other)),
            )),
        }
    };
    let api_version = required_string("apiVersion", map.get("apiVersion"))?;
    let kind = required_string("kind", map.get("kind"))?;

    // kubectl treats any object with an `items` list as a list (meta.IsListType), and
    // `kind: List` (or a typed `*List`) is how `kubectl get -o yaml` writes several.
    if kind.ends_with("List") {
        match map.get("items") {
            Some(Value::Array(_)) => {
                let Value::Object(mut map) = value else {
                    unreachable!()
                };
                let Some(Value::Array(items)) = map.remove("items") else {
                    unreachable!()
                };
                for (i, item) in items.into_iter().enumerate() {
                    flatten(item, origin, &format!("{prefix}items[{i}]."), out)?;
                }
                return Ok(());
            }
            None | Some(Value::Null) if kind == "List" => {
                return Err(err("items", "is required in a List".into()));
            }
            Some(other) if kind == "List" => {
                return Err(err(
                    "items",
                    format!("must be a list, found {}", type_name(other)),
                ));
            }
            _ => {}
        }
    }

    let metadata = match map.get("metadata") {
        None | Some(Value::Null) => return Err(err("metadata.name", "is required".into())),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(err(
                "metadata",
                format!("must be an object, found {}", type_name(other)),
            ))
        }
    };
    let name = required_string("metadata.name", metadata.get("name"))?;
    let namespace = match metadata.get("namespace") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(err(
                "metadata.namespace",
                format!("must be a string, found {}", type_name(other)),
            ))
        }
    };
    let group = kinds::split_api_version(&api_version).0.to_string();
    out.push(Checked {
        origin: origin.clone(),
        object: value,
        api_version,
        group,
        kind,
        name,
        namespace,
        prefix: prefix.to_string(),
    });
    Ok(())
}

/// Scopes declared by CustomResourceDefinitions in the input: (group, kind) -> namespaced.
fn crd_scopes(items: &[Checked]) -> BTreeMap<(String, String), bool> {
    items
        .iter()
        .filter(|i| i.group == "apiextensions.k8s.io")
        .filter_map(|i| crd_scope(&i.kind, &i.object))
        .collect()
}

/// The ((group, kind), namespaced) a CustomResourceDefinition declares, if `object` is one.
pub fn crd_scope(kind: &str, object: &Value) -> Option<((String, String), bool)> {
    if kind != "CustomResourceDefinition" {
        return None;
    }
    let types = kinds::CustomResourceTypes::read(object)?;
    Some(((types.group, types.kind), types.namespaced))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<ManifestObject>, ManifestError> {
        parse_text(text, "in.yaml", &LoadOptions::default())
    }

    #[test]
    fn helm_template_output_with_comments_empty_and_null_documents() {
        let text = "---\n# Source: chart/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# Source: chart/templates/empty.yaml\n---\n---\nnull\n---\n~\n---\n# Source: chart/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n  namespace: prod\n";
        let objs = parse(text).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[0].key.name, "a");
        assert_eq!(objs[0].key.namespace.as_deref(), Some("default"));
        assert_eq!(objs[0].object["metadata"]["namespace"], "default");
        assert_eq!(objs[0].origin.document, 0);
        assert_eq!(objs[1].key.namespace.as_deref(), Some("prod"));
        // documents: 0 cm, 1 comment-only, 2 empty, 3 null, 4 ~, 5 svc
        assert_eq!(objs[1].origin.document, 5);
    }

    #[test]
    fn implicit_first_document_is_document_zero() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n";
        let objs = parse(text).unwrap();
        assert_eq!(
            objs.iter().map(|o| o.origin.document).collect::<Vec<_>>(),
            vec![0, 1]
        );
    }

    #[test]
    fn lists_are_unwrapped_and_keep_the_wrapper_document() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: why}\n---\napiVersion: v1\nkind: ConfigMapList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: z}\n";
        let objs = parse(text).unwrap();
        let names: Vec<_> = objs
            .iter()
            .map(|o| (o.key.name.as_str(), o.origin.document))
            .collect();
        assert_eq!(names, vec![("first", 0), ("x", 1), ("why", 1), ("z", 2)]);
        assert_eq!(objs[2].key.group, "apps");
    }

    #[test]
    fn list_item_errors_name_the_item() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {}\n";
        let err = parse(text).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("items[1].metadata.name"));
        assert_eq!(err.document, 0);
        let err = parse("apiVersion: v1\nkind: List\n").unwrap_err();
        assert_eq!(err.field.as_deref(), Some("items"));
    }

    #[test]
    fn missing_fields_are_named() {
        for (text, field) in [
            ("kind: ConfigMap\nmetadata: {name: a}\n", "apiVersion"),
            (
                "apiVersion: ''\nkind: ConfigMap\nmetadata: {name: a}\n",
                "apiVersion",
            ),
            ("apiVersion: v1\nmetadata: {name: a}\n", "kind"),
            ("apiVersion: v1\nkind: ConfigMap\n", "metadata.name"),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n",
                "metadata.name",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ''}\n",
                "metadata.name",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 5}\n",
                "metadata.name",
            ),
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata: [a]\n",
                "metadata",
            ),
        ] {
            let err = parse(&format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ok}}\n---\n{text}"
            ))
            .unwrap_err();
            assert_eq!(err.field.as_deref(), Some(field), "{text}");
            assert_eq!(err.document, 1, "{text}");
            assert!(
                err.to_string()
                    .contains(&format!("in.yaml: document 1: field {field} ")),
                "{err}"
            );
        }
    }

    #[test]
    fn non_object_documents_are_rejected() {
        let err = parse("- a\n- b\n").unwrap_err();
        assert!(err.reason.contains("found a list"), "{err}");
        let err = parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\njust text\n")
            .unwrap_err();
        assert_eq!(err.document, 1);
        assert!(err.reason.contains("found a string"), "{err}");
    }

    #[test]
    fn yaml_syntax_errors_give_line_and_document() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: [unclosed\nmetadata: {name: b}\n";
        let err = parse(text).unwrap_err();
        assert_eq!(err.document, 1, "{err}");
        assert!(err.reason.contains("invalid YAML at line"), "{err}");
    }

    #[test]
    fn secret_values_never_appear_in_errors() {
        let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: \"hunter2-very-secret\n  other: [\n";
        let err = parse(text).unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  password: aHVudGVyMg==\n  password: c2VjcmV0\n";
        let err = parse(text).unwrap_err();
        assert!(!err.to_string().contains("aHVudGVyMg"), "{err}");
        assert!(!err.to_string().contains("c2VjcmV0"), "{err}");
    }

    #[test]
    fn quoted_input_is_scrubbed_from_parser_messages() {
        assert_eq!(
            scrub_quoted("non-finite float `.inf` rejected, tag `!!str` unsupported"),
            "non-finite float `…` rejected, tag `!!str` unsupported"
        );
        assert_eq!(scrub_quoted("unclosed `quote"), "unclosed `quote");
        let err =
            parse("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\np: .inf\n").unwrap_err();
        assert!(!err.reason.contains(".inf"), "{err}");
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let prev = format!("*a{}", i - 1);
            text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
        }
        let err = parse(&text).unwrap_err();
        assert!(err.reason.contains("invalid YAML"), "{err}");
    }

    #[test]
    fn deep_nesting_is_refused() {
        let text = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        assert!(parse_text(&text, "in.yaml", &LoadOptions::default()).is_err());
        let text = format!("a: {}{}", "[".repeat(5000), "]".repeat(5000));
        assert!(parse(&text).is_err());
    }

    #[test]
    fn json_stream_of_objects() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}
{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"prod","namespace":"ignored"}}"#;
        let objs = parse_text(text, "x.json", &LoadOptions::default()).unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[1].origin.document, 1);
        assert_eq!(objs[1].key.namespace, None);
        assert!(objs[1].object["metadata"].get("namespace").is_none());
        let err = parse_text(
            "{\"apiVersion\": \"v1\",",
            "x.json",
            &LoadOptions::default(),
        )
        .unwrap_err();
        assert!(
            err.reason.contains("invalid JSON") && err.reason.contains("line 1"),
            "{err}"
        );
    }

    #[test]
    fn yaml_flow_mappings_are_not_mistaken_for_json() {
        let objs = parse("{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n").unwrap();
        assert_eq!(objs[0].key.name, "a");
        let err = parse("{\"apiVersion\": \"v1\",,}").unwrap_err();
        assert!(err.reason.contains("invalid JSON"), "{err}");
    }

    #[test]
    fn namespace_defaulting_follows_scope() {
        let opts = LoadOptions {
            default_namespace: "team".into(),
            custom_scopes: [(("example.com".to_string(), "Known".to_string()), false)].into(),
        };
        let text = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: x}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: x}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\nspec:\n  group: example.com\n  scope: Cluster\n  names: {kind: Gadget, plural: gadgets}\n";
        let objs = parse_text(text, "in.yaml", &opts).unwrap();
        assert_eq!(objs[0].key.namespace, None);
        assert_eq!(objs[1].key.namespace.as_deref(), Some("team"));
        assert_eq!(objs[2].key.namespace, None, "CRD in the input says Cluster");
        assert_eq!(objs[3].key.namespace, None);
        let text = "apiVersion: example.com/v1\nkind: Known\nmetadata: {name: k, namespace: x}\n";
        let objs = parse_text(text, "in.yaml", &opts).unwrap();
        assert_eq!(objs[0].key.namespace, None, "scope from custom_scopes");
    }

    #[test]
    fn duplicates_name_both_origins() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n";
        let err = parse(text).unwrap_err();
        assert_eq!(err.document, 1);
        assert!(err.reason.contains("in.yaml: document 0"), "{err}");
        // Different API versions of one group/kind are the same object.
        let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n---\napiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: a}\n";
        assert!(parse(text).is_err());
        // Same name in another namespace is another object.
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: other}\n";
        assert_eq!(parse(text).unwrap().len(), 2);
    }

    #[test]
    fn octal_file_modes_read_as_kubectl_reads_them() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nmode: 0644\n";
        assert_eq!(parse(text).unwrap()[0].object["mode"], 420);
    }

    #[test]
    fn folders_are_walked_recursively_in_sorted_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("b/c")).unwrap();
        let cm = |n: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\n");
        std::fs::write(dir.path().join("b/c/z.yml"), cm("z")).unwrap();
        std::fs::write(dir.path().join("a.yaml"), cm("a")).unwrap();
        std::fs::write(
            dir.path().join("b/m.json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"}}"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("b/notes.txt"), "not a manifest").unwrap();
        std::fs::create_dir_all(dir.path().join(".github/workflows")).unwrap();
        std::fs::write(dir.path().join(".github/workflows/ci.yml"), "on: push\n").unwrap();
        std::fs::write(dir.path().join(".hidden.yaml"), "not: k8s\n").unwrap();
        let objs = load(&[dir.path().to_path_buf()], &LoadOptions::default()).unwrap();
        let names: Vec<_> = objs.iter().map(|o| o.key.name.as_str()).collect();
        assert_eq!(names, vec!["a", "z", "m"]);
        assert!(objs[1].origin.file.ends_with("b/c/z.yml"));
    }
}
