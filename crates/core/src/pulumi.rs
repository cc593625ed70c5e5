//! Pulumi interop, pure (no I/O): the Kubernetes objects of a stack's state, and the lock
//! files of Pulumi's file ("DIY") backend.
//!
//! **Stack state.** `pulumi stack export` writes `{"version": 3, "deployment": {...}}`; the
//! file backend keeps `{"version": 3, "checkpoint": {"latest": {...}}}` in
//! `.pulumi/stacks/<project>/<stack>.json`. Both hold the same deployment (pulumi/pulumi
//! `sdk/go/common/apitype/core.go`: `UntypedDeployment`, `CheckpointV3`, `DeploymentV3`,
//! `ResourceV3`). A Kubernetes object is a custom resource of type
//! `kubernetes:<group>/<version>:<Kind>` (`core/v1` is the core group); its `inputs` are the
//! object as the provider's `Check` left it (pulumi-kubernetes
//! `provider/pkg/provider/provider.go`): `apiVersion`, `kind`, the name Pulumi chose when it
//! autonamed, the default namespace when the provider sets one. That is the desired state.
//!
//! **Secrets.** A secret value is `{"4dabf18193072939515e22adb298388d":
//! "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "..."}` (`plaintext` with
//! `--show-secrets`; pulumi `sdk/go/common/resource/properties.go` `SecretSig`,
//! `pkg/resource/stack/secrets.go`). Ciphertext cannot be imported: the field is left out and
//! named (URN and field path), never its value. A plaintext is imported only into a
//! Secret's `data`/`stringData`, which the store keeps as keyed hashes (sealed when an
//! encryption key is set); anywhere else it would be stored as it is, so it is left out too.
//!
//! **Pending operations.** While `pulumi up` runs, every resource operation is first
//! written to the checkpoint's `pending_operations` (`OperationV2`: the resource as the
//! operation began, and its type), and removed when it completes (pulumi
//! `pkg/backend/snapshot.go`, `markOperationPending`/`markOperationComplete`). One that is
//! still there after the update stopped is an operation that may or may not have reached the
//! cluster: [`interrupted`] turns each into an intent of the stack's source.
//!
//! **Lock files.** The file backend locks a stack with
//! `.pulumi/locks/<fully qualified stack>/<uuid>.json` holding
//! `{"pid","username","hostname","timestamp"}` (pulumi `pkg/backend/diy/lock.go`,
//! `lockContent`, `stackLockDir`). The fully qualified stack is `organization/<project>/<stack>`
//! (the DIY organization is always `organization`) or, in the legacy layout without projects,
//! just `<stack>` (`diyBackendReference.FullyQualifiedName`). `pulumi cancel` deletes every
//! lock file of the stack (`diyBackend.CancelCurrentUpdate`, `pkg/cmd/pulumi/cancel`).

pub mod interrupted;

use crate::manifest::{self, LoadOptions, ManifestObject, Origin};
use crate::text::shell_quote;
use driftd_k8s::ObjectKey;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Component, Path};
use std::time::Duration;

/// The key and value marking a secret in Pulumi state (`resource.SigKey`, `resource.SecretSig`).
pub const SIG_KEY: &str = "4dabf18193072939515e22adb298388d";
pub const SECRET_SIG: &str = "1b47061264138c4ac30d75fd1eb44270";
/// The placeholder of a value not known yet (`plugin.UnknownStringValue`).
const UNKNOWN_VALUE: &str = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PulumiError {
    #[error("{file}: not a Pulumi stack export: {reason}")]
    Export { file: String, reason: String },
    /// A Kubernetes resource of the export fails the same checks as a committed manifest.
    #[error("{file}: resources[{index}] ({urn}): {}{reason}", field.as_ref().map(|f| format!("field {f} ")).unwrap_or_default())]
    Resource {
        file: String,
        index: usize,
        urn: String,
        field: Option<String>,
        reason: String,
    },
    /// The object a pending operation applies fails those checks.
    #[error("{file}: pending_operations[{index}] ({urn}): {}{reason}", field.as_ref().map(|f| format!("field {f} ")).unwrap_or_default())]
    Pending {
        file: String,
        index: usize,
        urn: String,
        field: Option<String>,
        reason: String,
    },
    #[error("{path}: not a Pulumi lock file: {reason}")]
    Lock { path: String, reason: String },
}

/// The Kubernetes part of a stack's state.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StackExport {
    /// Project and stack, from the resources' URNs.
    pub project: Option<String>,
    pub stack: Option<String>,
    /// The stack as the file backend's checkpoint names it (`checkpoint.stack`, e.g.
    /// `organization/shop/dev`); an export does not name it.
    pub qualified_stack: Option<String>,
    /// When Pulumi wrote this state (`deployment.manifest.time`): during an update, when its
    /// last operation began or ended.
    pub time: Option<Timestamp>,
    pub resources: Vec<KubernetesResource>,
    /// Kubernetes-provider resources that are not objects this stack owns, with why.
    pub skipped: Vec<Skipped>,
    /// Fields left out of imported objects (encrypted secrets, unknown values).
    pub left_out: Vec<LeftOut>,
    /// Operations Pulumi started and never finished: the last update was interrupted.
    pub pending_operations: Vec<PendingOperation>,
    /// Resources of other providers (clouds), ignored.
    pub other_resources: usize,
}

/// One Kubernetes object of the stack, as desired.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesResource {
    /// Position in the deployment's `resources` array.
    pub index: usize,
    pub urn: String,
    pub object: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub urn: String,
    pub resource_type: String,
    pub reason: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    pub urn: String,
    /// Field path in the object, e.g. `data` or `spec.template.spec.containers[0].env[1].value`.
    pub field: String,
    pub why: LeftOutWhy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeftOutWhy {
    /// A Pulumi secret exported without `--show-secrets`.
    Encrypted,
    /// A Pulumi secret in plaintext outside a Secret's `data`/`stringData`: the store would
    /// keep it as it is.
    Plaintext,
    /// A value Pulumi did not know when it saved the state.
    Unknown,
    /// An asset, archive or resource reference: not Kubernetes data.
    NotData,
}

/// An operation of a Kubernetes resource that Pulumi began and never recorded as finished.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingOperation {
    /// Position in the deployment's `pending_operations`.
    pub index: usize,
    pub urn: String,
    /// `creating`, `updating`, `deleting`, `reading`, `importing` (pulumi
    /// `pkg/resource/operation.go`).
    pub operation: String,
    /// The object the operation applies (its new inputs, cleaned as a resource's are), for
    /// `creating`, `updating` and `importing`. `None` for `deleting` (what it wants is the
    /// object gone), for `reading` (a read changes nothing), or when the resource is not an
    /// object this stack owns (a `Patch`, a component: see `skipped`).
    pub object: Option<Value>,
    /// Why `object` is `None` for an operation that applies one.
    pub skipped: Option<&'static str>,
}

impl PendingOperation {
    /// Operations that change the cluster and that Pulumi leaves to the user: reads do not.
    pub fn changes_cluster(&self) -> bool {
        self.operation != "reading"
    }
}

/// Reads a `pulumi stack export` (or a file backend's checkpoint) and keeps its Kubernetes
/// objects; `file` names the input in errors.
pub fn parse_stack_export(text: &str, file: &str) -> Result<StackExport, PulumiError> {
    let err = |reason: String| PulumiError::Export {
        file: file.to_string(),
        reason,
    };
    let root: Value = serde_json::from_str(text).map_err(|e| err(format!("invalid JSON: {e}")))?;
    let version = root["version"].as_u64();
    // 3 is current; 4 adds opt-in features with the same resource shape.
    if !matches!(version, Some(3 | 4)) {
        return Err(err(format!(
            "deployment version {} is not supported (driftd reads versions 3 and 4)",
            root["version"]
        )));
    }
    let deployment = match (&root["deployment"], &root["checkpoint"]["latest"]) {
        (d @ Value::Object(_), _) => d,
        (_, d @ Value::Object(_)) => d,
        _ => {
            return Err(err(
                "no \"deployment\" (nor \"checkpoint.latest\") object".into()
            ))
        }
    };
    let mut export = StackExport {
        qualified_stack: root["checkpoint"]["stack"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        // Go's time.Time in JSON: RFC 3339 with the writer's offset.
        time: deployment["manifest"]["time"]
            .as_str()
            .and_then(|t| t.parse().ok()),
        ..StackExport::default()
    };
    let resources = match &deployment["resources"] {
        Value::Array(r) => r.as_slice(),
        Value::Null => &[],
        _ => return Err(err("\"resources\" is not a list".into())),
    };
    for (index, resource) in resources.iter().enumerate() {
        let urn = resource["urn"].as_str().unwrap_or_default();
        let resource_type = resource["type"].as_str().unwrap_or_default();
        if export.stack.is_none() {
            if let Some((stack, project)) = stack_and_project(urn) {
                export.stack = Some(stack.to_string());
                export.project = Some(project.to_string());
            }
        }
        if !resource_type.starts_with("kubernetes:") {
            if resource_type == "pulumi:providers:kubernetes" {
                export.skip(urn, resource_type, "Kubernetes provider, not an object");
            } else if !resource_type.starts_with("pulumi:") {
                export.other_resources += 1;
            }
            continue;
        }
        match desired_object(resource, resource_type, &resource["outputs"]) {
            Ok(inputs) => {
                let object = export.clean(urn, inputs);
                export.resources.push(KubernetesResource {
                    index,
                    urn: urn.to_string(),
                    object,
                });
            }
            Err(reason) => export.skip(urn, resource_type, reason),
        }
    }
    if let Value::Array(ops) = &deployment["pending_operations"] {
        for (index, op) in ops.iter().enumerate() {
            let resource = &op["resource"];
            let resource_type = resource["type"].as_str().unwrap_or_default();
            if !resource_type.starts_with("kubernetes:") {
                continue;
            }
            let urn = resource["urn"].as_str().unwrap_or_default();
            let operation = op["type"].as_str().unwrap_or("unknown").to_string();
            let applies = matches!(operation.as_str(), "creating" | "updating" | "importing");
            let (object, skipped) = if !applies {
                (None, None)
            } else {
                // The state an update began from has no outputs yet: a name or namespace
                // only the outputs know is in the resource's last recorded state.
                let outputs = match &resource["outputs"] {
                    Value::Object(o) if !o.is_empty() => &resource["outputs"],
                    _ => resources
                        .iter()
                        .find(|r| r["urn"] == resource["urn"] && r["delete"] != Value::Bool(true))
                        .map_or(&Value::Null, |r| &r["outputs"]),
                };
                match desired_object(resource, resource_type, outputs) {
                    Ok(inputs) => (Some(export.clean(urn, inputs)), None),
                    Err(reason) => (None, Some(reason)),
                }
            };
            export.pending_operations.push(PendingOperation {
                index,
                urn: urn.to_string(),
                operation,
                object,
                skipped,
            });
        }
    }
    Ok(export)
}

/// `urn:pulumi:<stack>::<project>::<type>::<name>` -> (stack, project).
fn stack_and_project(urn: &str) -> Option<(&str, &str)> {
    let mut parts = urn.strip_prefix("urn:pulumi:")?.split("::");
    Some((parts.next()?, parts.next()?))
}

/// The desired object of a Kubernetes resource, or why it is not one this stack owns;
/// `outputs` is what Pulumi last recorded of it (pulumi-kubernetes keeps the live object
/// there, with `__inputs`, `__initialApiVersion` and `__fieldManager` beside it).
fn desired_object(
    resource: &Value,
    resource_type: &str,
    outputs: &Value,
) -> Result<Value, &'static str> {
    if resource["custom"] != Value::Bool(true) {
        return Err("component resource: its objects are listed as its children");
    }
    if resource["delete"] == Value::Bool(true) {
        return Err("replaced, waiting to be deleted");
    }
    if resource["external"] == Value::Bool(true) {
        return Err("read with .get(), not managed by this stack");
    }
    // kubernetes:<module>:<Kind>
    let mut token = resource_type.splitn(3, ':').skip(1);
    let (Some(module), Some(kind)) = (token.next(), token.next()) else {
        return Err("not a Kubernetes type token");
    };
    let Some((group, version)) = module.split_once('/') else {
        return Err("Pulumi component type, not a Kubernetes object");
    };
    if group == "helm.sh" || group.starts_with("yaml") || group.starts_with("kustomize") {
        return Err("Pulumi resource that is not a Kubernetes object (its objects belong to Helm or to its children)");
    }
    if kind.ends_with("Patch") {
        return Err("patch of an object another tool owns (server-side apply)");
    }
    if kind.ends_with("List") {
        return Err("list type, not an object");
    }
    let api_version = if group == "core" {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let Value::Object(mut inputs) = resource["inputs"].clone() else {
        return Err("no inputs recorded");
    };
    for (field, expected) in [("apiVersion", api_version.as_str()), ("kind", kind)] {
        match inputs.get(field) {
            None => {
                inputs.insert(field.into(), Value::String(expected.into()));
            }
            Some(Value::String(s)) if s == expected => {}
            Some(_) => return Err("inputs do not match the resource type"),
        }
    }
    // A name Kubernetes generated (metadata.generateName), or a namespace the provider took
    // from the kubeconfig, are only in the outputs: that is where the object really is.
    let outputs = &outputs["metadata"];
    let metadata = inputs
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(metadata) = metadata {
        for field in ["name", "namespace"] {
            if metadata.get(field).is_none_or(Value::is_null) {
                if let Some(v) = outputs[field].as_str().filter(|v| !v.is_empty()) {
                    metadata.insert(field.into(), Value::String(v.into()));
                }
            }
        }
    }
    Ok(Value::Object(inputs))
}

impl StackExport {
    fn skip(&mut self, urn: &str, resource_type: &str, reason: &'static str) {
        self.skipped.push(Skipped {
            urn: urn.to_string(),
            resource_type: resource_type.to_string(),
            reason,
        });
    }

    /// Replaces Pulumi's special values: a secret with its plaintext when the export has it
    /// and the field is a Secret's `data` or `stringData` (kept as keyed hashes by the store),
    /// else the field is left out and named.
    fn clean(&mut self, urn: &str, value: Value) -> Value {
        let mut left_out = Vec::new();
        let is_secret = value["kind"] == "Secret" && value["apiVersion"] == "v1";
        let cleaned = match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .filter_map(|(k, v)| {
                        let plaintext = is_secret && (k == "data" || k == "stringData");
                        let p = child_path("", &k);
                        clean_value(v, &p, plaintext, &mut left_out).map(|v| (k, v))
                    })
                    .collect(),
            ),
            other => clean_value(other, "", false, &mut left_out).unwrap_or(Value::Null),
        };
        self.left_out
            .extend(left_out.into_iter().map(|(field, why)| LeftOut {
                urn: urn.to_string(),
                field,
                why,
            }));
        cleaned
    }
}

fn child_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{}]", Value::String(key.into())),
    }
}

/// `value` without Pulumi's special values; `plaintext`: a secret's plaintext may stay.
fn clean_value(
    value: Value,
    path: &str,
    plaintext: bool,
    left_out: &mut Vec<(String, LeftOutWhy)>,
) -> Option<Value> {
    match value {
        Value::String(s) if s == UNKNOWN_VALUE => {
            left_out.push((path.to_string(), LeftOutWhy::Unknown));
            None
        }
        Value::Object(map) if map.contains_key(SIG_KEY) => {
            if map[SIG_KEY] != SECRET_SIG {
                left_out.push((path.to_string(), LeftOutWhy::NotData));
                return None;
            }
            let decoded = map
                .get("plaintext")
                .and_then(Value::as_str)
                .and_then(|p| serde_json::from_str::<Value>(p).ok());
            match decoded {
                Some(v) if plaintext => clean_value(v, path, plaintext, left_out),
                Some(_) => {
                    left_out.push((path.to_string(), LeftOutWhy::Plaintext));
                    None
                }
                None => {
                    left_out.push((path.to_string(), LeftOutWhy::Encrypted));
                    None
                }
            }
        }
        Value::Object(map) => Some(Value::Object(
            map.into_iter()
                .filter_map(|(k, v)| {
                    let p = child_path(path, &k);
                    clean_value(v, &p, plaintext, left_out).map(|v| (k, v))
                })
                .collect(),
        )),
        Value::Array(items) => Some(Value::Array(
            items
                .into_iter()
                .enumerate()
                .filter_map(|(i, v)| clean_value(v, &format!("{path}[{i}]"), plaintext, left_out))
                .collect(),
        )),
        other => Some(other),
    }
}

/// Validates the export's objects exactly as `driftd commit` validates manifests (custom
/// resources take their scope from CRDs in the same export or in `options`). Each object's
/// origin is `file`, document = its index in the deployment's `resources`.
pub fn manifest_objects(
    export: &StackExport,
    file: &str,
    options: &LoadOptions,
) -> Result<Vec<ManifestObject>, PulumiError> {
    let options = with_export_crds(export, options);
    let mut seen: HashMap<ObjectKey, &str> = HashMap::new();
    let mut out = Vec::with_capacity(export.resources.len());
    for r in &export.resources {
        let resource_err = |field: Option<String>, reason: String| PulumiError::Resource {
            file: file.to_string(),
            index: r.index,
            urn: r.urn.clone(),
            field,
            reason,
        };
        let object = one_object(&r.object, file, r.index, &options)
            .map_err(|(field, reason)| resource_err(field, reason))?;
        if let Some(first) = seen.insert(object.key.clone(), &r.urn) {
            return Err(resource_err(
                None,
                format!("{} is also managed by {first}", object.key),
            ));
        }
        out.push(object);
    }
    Ok(out)
}

/// The object each pending operation applies, validated as [`manifest_objects`] validates
/// the resources; `Ok(None)` for an operation that applies none (a delete). An object
/// kube-apiserver would refuse never reached the cluster: its error is for a warning, not a
/// reason to refuse the whole state. An object's origin is `file`, document = its index in
/// `pending_operations`.
pub fn pending_objects<'a>(
    export: &'a StackExport,
    file: &str,
    options: &LoadOptions,
) -> Vec<(
    &'a PendingOperation,
    Result<Option<ManifestObject>, PulumiError>,
)> {
    let options = with_export_crds(export, options);
    export
        .pending_operations
        .iter()
        .filter(|op| op.changes_cluster())
        .map(|op| {
            let object = op
                .object
                .as_ref()
                .map(|o| {
                    one_object(o, file, op.index, &options).map_err(|(field, reason)| {
                        PulumiError::Pending {
                            file: file.to_string(),
                            index: op.index,
                            urn: op.urn.clone(),
                            field,
                            reason,
                        }
                    })
                })
                .transpose();
            (op, object)
        })
        .collect()
}

fn with_export_crds(export: &StackExport, options: &LoadOptions) -> LoadOptions {
    let mut options = options.clone();
    for r in &export.resources {
        if let Some((gk, namespaced)) =
            manifest::crd_scope(r.object["kind"].as_str().unwrap_or(""), &r.object)
        {
            options.custom_scopes.insert(gk, namespaced);
        }
    }
    options
}

/// One resource's object through the manifest reader, with its origin; the error's field
/// and reason.
fn one_object(
    object: &Value,
    file: &str,
    document: usize,
    options: &LoadOptions,
) -> Result<ManifestObject, (Option<String>, String)> {
    let parsed = manifest::parse_text(&object.to_string(), "resource.json", options)
        .map_err(|e| (e.field, e.reason))?;
    let [mut object] = <[ManifestObject; 1]>::try_from(parsed)
        .map_err(|_| (None, "is not exactly one object".to_string()))?;
    object.origin = Origin {
        file: file.to_string(),
        document,
    };
    Ok(object)
}

/// A lock file of Pulumi's file backend.
#[derive(Debug, Clone, PartialEq)]
pub struct PulumiLock {
    /// `organization` in the project layout, `None` in the legacy layout.
    pub org: Option<String>,
    pub project: Option<String>,
    pub stack: String,
    /// The lock's id (the file name without `.json`; a UUID per `pulumi` process).
    pub id: String,
    pub pid: i64,
    pub username: String,
    pub hostname: String,
    pub timestamp: Timestamp,
    /// The folder holding `.pulumi`: the backend is `file://<backend_root>`.
    pub backend_root: String,
}

#[derive(serde::Deserialize)]
struct LockContent {
    pid: i64,
    username: String,
    hostname: String,
    timestamp: Timestamp,
}

/// Parses the lock file at `path` (its place under `.pulumi/locks/` names the stack) with
/// `content`.
pub fn parse_lock(path: &Path, content: &str) -> Result<PulumiLock, PulumiError> {
    let err = |reason: String| PulumiError::Lock {
        path: path.display().to_string(),
        reason,
    };
    let parts: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let locks = parts
        .windows(2)
        .rposition(|w| w == [".pulumi", "locks"])
        .ok_or_else(|| err("not under .pulumi/locks/".into()))?;
    let (org, project, stack, file) = match &parts[locks + 2..] {
        [org, project, stack, file] => (Some(*org), Some(*project), *stack, *file),
        [stack, file] => (None, None, *stack, *file),
        _ => {
            return Err(err(
                "expected .pulumi/locks/<org>/<project>/<stack>/<id>.json or \
                 .pulumi/locks/<stack>/<id>.json"
                    .into(),
            ))
        }
    };
    let id = file
        .strip_suffix(".json")
        .ok_or_else(|| err("a lock file name ends in .json".into()))?;
    let lock: LockContent =
        serde_json::from_str(content).map_err(|e| err(format!("invalid lock content: {e}")))?;
    // The path up to `.pulumi`, as given (absolute paths keep their root).
    let root: std::path::PathBuf = path.iter().take(path_index(path, locks)).collect();
    Ok(PulumiLock {
        org: org.map(str::to_string),
        project: project.map(str::to_string),
        stack: stack.to_string(),
        id: id.to_string(),
        pid: lock.pid,
        username: lock.username,
        hostname: lock.hostname,
        timestamp: lock.timestamp,
        backend_root: root.display().to_string(),
    })
}

/// How many leading `path.iter()` items come before the `normal_index`-th normal component.
fn path_index(path: &Path, normal_index: usize) -> usize {
    let mut normals = 0;
    for (i, c) in path.components().enumerate() {
        if matches!(c, Component::Normal(_)) {
            if normals == normal_index {
                return i;
            }
            normals += 1;
        }
    }
    path.components().count()
}

impl PulumiLock {
    /// The stack as `pulumi --stack` takes it: `organization/<project>/<stack>`, or the bare
    /// stack name in the legacy layout.
    pub fn stack_name(&self) -> String {
        match (&self.org, &self.project) {
            (Some(org), Some(project)) => format!("{org}/{project}/{}", self.stack),
            _ => self.stack.clone(),
        }
    }

    /// The command that clears the stack's locks: `pulumi cancel` on this backend. It
    /// deletes every lock file of the stack, not just this one.
    pub fn cancel_command(&self) -> String {
        let root = if self.backend_root.is_empty() {
            "."
        } else {
            &self.backend_root
        };
        format!(
            "PULUMI_BACKEND_URL={} pulumi cancel --yes --stack {}",
            shell_quote(&format!("file://{root}")),
            shell_quote(&self.stack_name())
        )
    }

    /// `username@hostname (pid N)`, as Pulumi's "stack is currently locked" error names it.
    pub fn holder(&self) -> String {
        format!("{}@{} (pid {})", self.username, self.hostname, self.pid)
    }
}

/// Why a lock is stale.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StaleReason {
    /// The lock's hostname is a pod that is confirmed gone: nobody will ever unlock it.
    HolderPodGone { pod: String },
    /// Older than the configured age: no deploy takes that long.
    OlderThan {
        age: SignedDuration,
        max_age: SignedDuration,
    },
}

impl std::fmt::Display for StaleReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = |d: &SignedDuration| SignedDuration::from_secs(d.as_secs());
        match self {
            StaleReason::HolderPodGone { pod } => {
                write!(f, "its holder, pod {pod}, no longer exists")
            }
            StaleReason::OlderThan { age, max_age } => write!(
                f,
                "it was taken {:#} ago, longer than the allowed {:#}",
                secs(age),
                secs(max_age)
            ),
        }
    }
}

/// Whether `lock` is stale at `now`: its holder pod is gone (`pod_exists(hostname)` is
/// `Some(false)`; `None` means unknown, e.g. not a pod), or it is older than `max_age`.
pub fn stale(
    lock: &PulumiLock,
    now: Timestamp,
    max_age: Option<Duration>,
    pod_exists: impl Fn(&str) -> Option<bool>,
) -> Option<StaleReason> {
    if pod_exists(&lock.hostname) == Some(false) {
        return Some(StaleReason::HolderPodGone {
            pod: lock.hostname.clone(),
        });
    }
    let max_age = SignedDuration::try_from(max_age?).ok()?;
    let age = now.duration_since(lock.timestamp);
    (age > max_age).then_some(StaleReason::OlderThan { age, max_age })
}

#[cfg(test)]
mod tests;
