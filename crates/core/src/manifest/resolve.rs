//! From documents to objects: lists unwrapped and shapes checked as each document is read
//! (then kept as text), each object's kind resolved to a scope (never guessed), namespaces
//! filled in, kube-apiserver's validation applied, objects without a name skipped,
//! duplicates refused.

use driftd_k8s::kinds::{self, CustomResourceTypes};
use driftd_k8s::validation;
use driftd_k8s::ObjectKey;
use serde_json::Value;
use std::collections::HashMap;

use crate::par;

use super::{
    type_name, Cause, CompactObject, LoadOptions, Loaded, ManifestError, Origin, RawDocument,
    Skipped, Warning,
};

/// What reading has found so far: each document (or List item) is checked for shape and
/// kept as text as soon as it is read, so the input is never held as trees.
#[derive(Default)]
pub(super) struct RawInput {
    items: Vec<Checked>,
    /// The CustomResourceDefinitions among them, which decide other items' scopes.
    crds: Vec<CustomResourceTypes>,
    /// The first shape error: reported once reading has ended without an error of its own,
    /// as when every file was read before any document was checked.
    shape_error: Option<ManifestError>,
    pub(super) warnings: Vec<Warning>,
}

/// How far a [`RawInput`] had got, to go back to.
pub(super) struct Mark {
    items: usize,
    crds: usize,
    warnings: usize,
    had_error: bool,
}

impl RawInput {
    pub(super) fn push(&mut self, doc: RawDocument) {
        if self.shape_error.is_some() {
            return;
        }
        if let Err(e) = flatten(doc.value, &doc.origin, &doc.prefix, self) {
            self.shape_error = Some(e);
        }
    }

    pub(super) fn mark(&self) -> Mark {
        Mark {
            items: self.items.len(),
            crds: self.crds.len(),
            warnings: self.warnings.len(),
            had_error: self.shape_error.is_some(),
        }
    }

    /// Forgets what was pushed since `mark`.
    pub(super) fn rewind(&mut self, mark: Mark) {
        self.items.truncate(mark.items);
        self.crds.truncate(mark.crds);
        self.warnings.truncate(mark.warnings);
        if !mark.had_error {
            self.shape_error = None;
        }
    }
}

/// How the namespace of an item is to be set once its scope is known.
enum Namespace {
    Set(String),
    /// Cluster-scoped: kube-apiserver clears it.
    Remove,
    Keep,
}

/// A document (or list item) that passed the shape checks.
struct Checked {
    origin: Origin,
    /// The object as serde_json writes it.
    text: Box<str>,
    api_version: String,
    group: String,
    kind: String,
    /// Empty when the object has only a `generateName`.
    name: String,
    generate_name: String,
    namespace: Option<String>,
    /// Field path prefix of a list item (`items[2].`), empty for a top-level document.
    prefix: String,
}

impl Checked {
    fn error(&self, field: Option<&str>, reason: impl Into<String>, cause: Cause) -> ManifestError {
        let item = self.prefix.trim_end_matches('.');
        let field = match field {
            Some(f) => Some(format!("{}{f}", self.prefix)),
            None if item.is_empty() => None,
            None => Some(item.to_string()),
        };
        let mut reason = reason.into();
        if cause != Cause::Input && !item.is_empty() {
            reason = format!("{item}: {reason}");
        }
        ManifestError {
            file: self.origin.file.clone(),
            document: self.origin.document,
            field,
            reason,
            cause,
        }
    }
}

/// Validates the whole input, fills in namespaces, rejects duplicates.
pub(super) fn finish(
    input: RawInput,
    options: &LoadOptions,
) -> Result<Loaded<CompactObject>, ManifestError> {
    if let Some(e) = input.shape_error {
        return Err(e);
    }
    let crds = input.crds;
    let mut seen: HashMap<ObjectKey, Origin> = HashMap::new();
    let mut loaded = Loaded {
        objects: Vec::new(),
        skipped: Vec::new(),
        warnings: input.warnings,
    };
    // Scopes and namespaces first, in order; then kube-apiserver's validation, the costly
    // part, on every core. Errors are taken in input order below, so the first reported is
    // the one a single pass would have met first.
    let mut scoped = Vec::with_capacity(input.items.len());
    for item in input.items {
        let scope = scope(&item, &crds, options);
        let unresolved = matches!(scope, Ok(Scope::Unresolved));
        // Until the cluster tells, an unresolved kind is keyed as namespaced, as most custom
        // resources are; a cluster-scoped one loses the namespace when its scope is known.
        let namespaced = scope.map(|s| s != Scope::Cluster);
        let (namespace, fix) = match namespaced {
            Ok(true) => {
                let ns = item
                    .namespace
                    .clone()
                    .unwrap_or_else(|| options.default_namespace.clone());
                (Some(ns.clone()), Namespace::Set(ns))
            }
            // kube-apiserver clears metadata.namespace of cluster-scoped objects on create
            // (rest.EnsureObjectNamespaceMatchesRequestNamespace), and kubectl sends them
            // to a URL without one: strip it so it is not part of the key nor compared
            // later.
            Ok(false) => (None, Namespace::Remove),
            Err(_) => (None, Namespace::Keep),
        };
        scoped.push((item, namespaced, namespace, fix, unresolved));
    }
    // Each item's tree lives only while it is fixed and validated here; the text is
    // written again only when the namespace changed it.
    let texts = par::map_ordered(&scoped, |(item, namespaced, _, fix, _)| {
        let Ok(namespaced) = namespaced else {
            return Ok(None);
        };
        let mut object: Value =
            serde_json::from_str(&item.text).expect("the text was written by serde_json");
        let changed = match fix {
            Namespace::Set(ns) => {
                let changed = object["metadata"]["namespace"].as_str() != Some(ns.as_str());
                if changed {
                    object["metadata"]["namespace"] = Value::String(ns.clone());
                }
                changed
            }
            Namespace::Remove => object
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
                .and_then(|meta| meta.remove("namespace"))
                .is_some(),
            Namespace::Keep => false,
        };
        if !options.from_cluster {
            validate(item, &object, *namespaced)?;
        }
        Ok(changed.then(|| object.to_string().into_boxed_str()))
    });
    for ((item, namespaced, namespace, _, scope_unresolved), text) in scoped.into_iter().zip(texts)
    {
        namespaced?;
        let text = text?;
        if item.name.is_empty() {
            loaded.skipped.push(Skipped {
                origin: item.origin,
                item: Some(item.prefix.trim_end_matches('.').to_string()).filter(|p| !p.is_empty()),
                api_version: item.api_version,
                kind: item.kind,
                generate_name: item.generate_name,
            });
            continue;
        }
        let key = ObjectKey {
            group: item.group.clone(),
            kind: item.kind.clone(),
            namespace,
            name: item.name.clone(),
        };
        if let Some(first) = seen.get(&key) {
            return Err(if item.prefix.is_empty() {
                item.error(
                    None,
                    format!("{key} is defined twice: also in {first}"),
                    Cause::Input,
                )
            } else {
                item.error(
                    None,
                    format!("defines {key} a second time: also in {first}"),
                    Cause::Input,
                )
            });
        }
        seen.insert(key.clone(), item.origin.clone());
        loaded.objects.push(CompactObject {
            origin: item.origin,
            key,
            api_version: item.api_version,
            text: text.unwrap_or(item.text),
            scope_unresolved,
        });
    }
    Ok(loaded)
}

/// kube-apiserver's checks on create; an object with only a `generateName` is checked with
/// the name kube-apiserver would generate from it.
fn validate(item: &Checked, object: &Value, namespaced: bool) -> Result<(), ManifestError> {
    let generated;
    let object = if item.name.is_empty() {
        let mut copy = object.clone();
        copy["metadata"]["name"] = Value::String(validation::generated_name(&item.generate_name));
        generated = copy;
        &generated
    } else {
        object
    };
    validation::validate_create(object, namespaced)
        .map_err(|rejection| item.error(rejection.field(), rejection.to_string(), Cause::Rejected))
}

/// Where a kind's objects live, as far as this input and `options` tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Namespaced,
    Cluster,
    /// A custom kind whose CRD is neither in the input nor known from `options` (its
    /// operator was installed by someone else): valid input whose scope only the cluster
    /// can tell. Never guessed, never refused.
    Unresolved,
}

impl From<bool> for Scope {
    fn from(namespaced: bool) -> Scope {
        if namespaced {
            Scope::Namespaced
        } else {
            Scope::Cluster
        }
    }
}

/// The item's scope: built in (any version kube-apiserver knows), defined by a CRD in the
/// input or known from `options`; else unresolved. Never a guess.
fn scope(
    item: &Checked,
    crds: &[CustomResourceTypes],
    options: &LoadOptions,
) -> Result<Scope, ManifestError> {
    let (group, _) = kinds::split_api_version(&item.api_version);
    let no_match = |served: Vec<String>| {
        let mut reason = format!(
            "no matches for kind {:?} in version {:?}",
            item.kind, item.api_version
        );
        if !served.is_empty() {
            reason.push_str(&format!(
                "; {} is served as {}",
                item.kind,
                served.join(", ")
            ));
        }
        item.error(Some("apiVersion"), reason, Cause::Rejected)
    };
    // A CRD's group needs a dot (apiextensions-apiserver `ValidateCustomResourceDefinitionSpec`:
    // "should be a domain with at least one dot"), so a group without one that is not
    // built in (`extensions`, long removed) is served by no cluster.
    if kinds::is_builtin_group(group) || !group.contains('.') {
        return match kinds::builtin(&item.api_version, &item.kind) {
            Some(t) => Ok(t.namespaced.into()),
            None => Err(no_match(kinds::builtin_api_versions(&item.kind))),
        };
    }
    if let Some(crd) = crds
        .iter()
        .find(|c| c.group == group && c.kind == item.kind)
    {
        let served: Vec<String> = crd.served().map(|t| t.api_version()).collect();
        let listed = crd.versions.is_empty() || served.contains(&item.api_version);
        if !listed {
            return Err(no_match(served));
        }
        return Ok(crd.namespaced.into());
    }
    if let Some(namespaced) = options
        .custom_scopes
        .get(&(group.to_string(), item.kind.clone()))
    {
        return Ok((*namespaced).into());
    }
    if options.from_cluster {
        return Ok(item.namespace.is_some().into());
    }
    Ok(Scope::Unresolved)
}

fn flatten(
    value: Value,
    origin: &Origin,
    prefix: &str,
    out: &mut RawInput,
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
    let string = |field: &str, v: Option<&Value>| -> Result<String, ManifestError> {
        match v {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(err(
                field,
                format!("must be a string, found {}", type_name(other)),
            )),
        }
    };
    let required_string = |field: &str, v: Option<&Value>| -> Result<String, ManifestError> {
        match v {
            None | Some(Value::Null) => Err(err(field, "is required".into())),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(err(field, "must not be empty".into()))
            }
            _ => string(field, v),
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
    let generate_name = string("metadata.generateName", metadata.get("generateName"))?;
    let name = if generate_name.is_empty() {
        required_string("metadata.name", metadata.get("name"))?
    } else {
        // A name wins over generateName; without one kube-apiserver generates it.
        string("metadata.name", metadata.get("name"))?
    };
    let namespace = string("metadata.namespace", metadata.get("namespace"))?;
    let group = kinds::split_api_version(&api_version).0.to_string();
    if group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition" {
        out.crds.extend(CustomResourceTypes::read(&value));
    }
    out.items.push(Checked {
        origin: origin.clone(),
        text: value.to_string().into_boxed_str(),
        api_version,
        group,
        kind,
        name,
        generate_name,
        namespace: Some(namespace).filter(|ns| !ns.is_empty()),
        prefix: prefix.to_string(),
    });
    Ok(())
}
