//! The simulator's storage: typed object maps, one global resourceVersion counter, a bounded
//! history of watch events and the write rules kube-apiserver's registries apply (server-set
//! metadata, status/spec separation, optimistic concurrency, defaults, managedFields, garbage
//! collection of dependents).

use super::fields;
use super::server_defaults;
use super::status::{ApiError, Gr};
use driftd_k8s::kinds::{CustomResourceTypes, ResourceType, BUILTIN};
use driftd_k8s::selector::Selector;
use rand::Rng;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// The group and resource a type's errors name.
fn gr(info: &ResourceType) -> Gr<'_> {
    Gr {
        group: &info.group,
        resource: &info.plural,
    }
}

/// Where objects of a type live: events.k8s.io Events share core Events' storage, as in
/// kube-apiserver.
pub fn storage_key(info: &ResourceType) -> (String, String) {
    if is_new_event(info) {
        return (String::new(), "events".into());
    }
    (info.group.clone(), info.plural.clone())
}

fn is_new_event(info: &ResourceType) -> bool {
    info.group == "events.k8s.io" && info.plural == "events"
}

/// Whether a change concerns the storage of objects of type `info`.
pub fn sees(info: &ResourceType, c: &Change) -> bool {
    let (g, p) = storage_key(info);
    c.group == g && c.plural == p
}

/// Converts a request body to the storage shape.
fn to_storage(info: &ResourceType, obj: Value) -> Value {
    if is_new_event(info) {
        super::events::to_core(&obj)
    } else {
        obj
    }
}

/// A change as watchers see it. `prev` is the object before the change, kept so lists at
/// an older resourceVersion (continue tokens, `resourceVersionMatch=Exact`) can be rebuilt.
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    pub kind: &'static str,
    pub group: String,
    pub plural: String,
    pub namespace: String,
    pub object: Value,
    pub prev: Option<Value>,
}

/// What the broadcast channel carries to watch streams and the controller.
#[derive(Debug, Clone)]
pub enum Notice {
    Change(Arc<Change>),
    /// Fault injection: every open watch stream ends.
    CloseWatches,
}

/// Who writes, as recorded in managedFields.
#[derive(Debug, Clone)]
pub struct WriteCtx {
    pub manager: String,
    pub dry_run: bool,
    /// Set for server-side apply: managedFields are recorded as an Apply.
    pub apply: Option<Arc<ApplyPlan>>,
}

impl WriteCtx {
    pub fn new(manager: &str) -> WriteCtx {
        WriteCtx {
            manager: manager.to_string(),
            dry_run: false,
            apply: None,
        }
    }
}

/// A server-side apply in progress: the fields the configuration sets, and those it took
/// from other managers with `force`.
#[derive(Debug, Default)]
pub struct ApplyPlan {
    pub set: std::collections::BTreeSet<Vec<String>>,
    pub taken: Mutex<std::collections::BTreeSet<Vec<String>>>,
}

impl WriteCtx {
    /// Records managedFields for this write: as an Apply for server-side apply, else as an
    /// Update by `manager`.
    fn record(&self, kind: &str, old: Option<&Value>, new: &mut Value, w: &fields::Write) {
        match &self.apply {
            Some(plan) => {
                let taken = plan.taken.lock().unwrap_or_else(|e| e.into_inner()).clone();
                fields::record_apply(kind, old, new, w, &plan.set, &taken);
            }
            None => fields::record(kind, old, new, w),
        }
    }
}

type Key = (String, String);
type Objects = BTreeMap<Key, Value>;

struct Inner {
    types: Vec<ResourceType>,
    objects: BTreeMap<(String, String), Objects>,
    rv: u64,
    history: VecDeque<Arc<Change>>,
    history_limit: usize,
    /// Every change with rv > window_start is still in `history`.
    window_start: u64,
}

/// Shared storage; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Mutex<Inner>>,
    tx: broadcast::Sender<Notice>,
}

/// What a DELETE request asked for (`DeleteOptions`).
#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub precondition_rv: Option<String>,
    pub precondition_uid: Option<String>,
    /// `Orphan`, `Background` or `Foreground` (the last two behave alike here: deletion is
    /// immediate, dependents go with it).
    pub propagation: Option<String>,
    pub dry_run: bool,
}

/// The outcome of a DELETE: the object as last seen, and whether it is gone (false while
/// finalizers hold it).
#[derive(Debug, Clone)]
pub struct Deletion {
    pub object: Value,
    pub gone: bool,
}

/// Parameters of a list call.
#[derive(Debug, Default, Clone)]
pub struct ListParams {
    pub namespace: Option<String>,
    pub labels: Selector,
    pub fields: Selector,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
}

/// A watch ready to stream: what to send first, then live notices.
pub struct WatchStart {
    /// Changes to send first: synthetic ADDED events for the current objects, or the
    /// history after the requested resourceVersion (in storage form, like live changes).
    pub initial: Vec<Arc<Change>>,
    pub rx: broadcast::Receiver<Notice>,
    pub start_rv: u64,
}

const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Five characters as `generateName` and the ReplicaSet controller append.
pub fn random_suffix(n: usize) -> String {
    let mut r = rand::rng();
    (0..n)
        .map(|_| ALPHANUMS[r.random_range(0..ALPHANUMS.len())] as char)
        .collect()
}

pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn new_uid() -> String {
    server_defaults::uuid_v4(rand::rng().random())
}

/// Kinds whose registry strategy maintains `metadata.generation` (workloads and anything
/// with a spec the controllers observe); custom resources always get one.
fn tracks_generation(info: &ResourceType) -> bool {
    info.custom
        || matches!(
            info.group.as_str(),
            "apps" | "batch" | "autoscaling" | "networking.k8s.io" | "apiextensions.k8s.io"
        )
}

fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

fn validate_name(info: &ResourceType, name: &str) -> Result<(), ApiError> {
    let (ok, msg) = match info.kind.as_str() {
        "Namespace" => (
            is_dns1123_label(name),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ),
        "Service" => (
            is_dns1123_label(name) && name.starts_with(|c: char| c.is_ascii_lowercase()),
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        ),
        _ => (
            is_dns1123_subdomain(name),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            "metadata.name",
            &format!("Invalid value: \"{name}\": {msg}"),
        ))
    }
}

/// A few of kube-apiserver's validations that users hit most (selector/template mismatch,
/// containers without image); not the full validation suite.
fn validate_object(info: &ResourceType, name: &str, obj: &Value) -> Result<(), ApiError> {
    let invalid = |field: &str, detail: &str| {
        Err(ApiError::invalid(
            &info.group,
            &info.kind,
            name,
            field,
            detail,
        ))
    };
    let pod_spec = match driftd_k8s::merge_keys::pod_spec_prefix(&info.kind) {
        Some(prefix) if !info.custom => {
            let ptr: String = prefix.iter().map(|p| format!("/{p}")).collect();
            obj.pointer(&ptr)
        }
        _ => None,
    };
    if let Some(spec) = pod_spec {
        let prefix = driftd_k8s::merge_keys::pod_spec_prefix(&info.kind)
            .unwrap_or(&[])
            .join(".");
        match spec.get("containers").and_then(Value::as_array) {
            Some(cs) if !cs.is_empty() => {
                for (i, c) in cs.iter().enumerate() {
                    if c.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .is_empty()
                    {
                        return invalid(
                            &format!("{prefix}.containers[{i}].name"),
                            "Required value",
                        );
                    }
                    if c.get("image")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .is_empty()
                    {
                        return invalid(
                            &format!("{prefix}.containers[{i}].image"),
                            "Required value",
                        );
                    }
                }
            }
            _ => return invalid(&format!("{prefix}.containers"), "Required value"),
        }
    }
    if matches!(
        info.kind.as_str(),
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
    ) && !info.custom
    {
        let Some(sel) = obj.pointer("/spec/selector") else {
            return invalid("spec.selector", "Required value");
        };
        let labels = obj.pointer("/spec/template/metadata/labels");
        if !label_selector_matches(sel, labels) {
            // Go's %#v of a map[string]string, as the validation message prints it.
            let mut pairs: Vec<String> = labels
                .and_then(Value::as_object)
                .map(|m| m.iter().map(|(k, v)| format!("{k:?}:{}", v)).collect())
                .unwrap_or_default();
            pairs.sort();
            let shown = format!("map[string]string{{{}}}", pairs.join(", "));
            return invalid(
                "spec.template.metadata.labels",
                &format!("Invalid value: {shown}: `selector` does not match template `labels`"),
            );
        }
    }
    Ok(())
}

/// Whether a `metav1.LabelSelector` (matchLabels + matchExpressions) selects `labels`.
/// An empty selector selects everything, as `metav1.LabelSelectorAsSelector` does.
pub fn label_selector_matches(sel: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        if !ml.iter().all(|(k, v)| get(k) == v.as_str()) {
            return false;
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let vals: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let v = get(key);
            let ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => v.is_some_and(|v| vals.contains(&v)),
                "NotIn" => !v.is_some_and(|v| vals.contains(&v)),
                "Exists" => v.is_some(),
                "DoesNotExist" => v.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// Spec-like content: everything outside metadata and status, which `generation` tracks.
fn spec_part(obj: &Value) -> Value {
    let mut o = obj.as_object().cloned().unwrap_or_default();
    for k in ["metadata", "status", "apiVersion", "kind"] {
        o.remove(k);
    }
    Value::Object(o)
}

/// An object without the bookkeeping that changes on every write (for no-op detection).
fn comparable(obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(md) = o.get_mut("metadata").and_then(Value::as_object_mut) {
        md.remove("managedFields");
        md.remove("resourceVersion");
    }
    o
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

fn set_meta(obj: &mut Value, field: &str, v: Value) {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    obj["metadata"][field] = v;
}

/// The types a CustomResourceDefinition object makes servable (one per served version).
fn crd_types(crd: &Value) -> Vec<ResourceType> {
    CustomResourceTypes::read(crd)
        .map(|t| t.served().cloned().collect())
        .unwrap_or_default()
}

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    use base64::Engine;
    let bad = || ApiError::bad_request(format!("invalid continue token: {token:?}"));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, start.to_string()))
}

fn encode_continue(rv: u64, start: &str) -> String {
    use base64::Engine;
    let v = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

impl Store {
    pub fn new(history_limit: usize) -> Store {
        let (tx, _) = broadcast::channel(8192);
        let store = Store {
            inner: Arc::new(Mutex::new(Inner {
                types: BUILTIN.clone(),
                objects: BTreeMap::new(),
                rv: 0,
                history: VecDeque::new(),
                history_limit: history_limit.max(1),
                window_start: 0,
            })),
            tx,
        };
        let ns = store
            .resolve("", "v1", "namespaces")
            .expect("namespaces is built in");
        for name in INITIAL_NAMESPACES {
            let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            store
                .create(&ns, None, obj, &WriteCtx::new("kube-apiserver"))
                .expect("initial namespace");
        }
        store
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.tx.subscribe()
    }

    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// All servable types (built-in first, then CRD-defined).
    pub fn types(&self) -> Vec<ResourceType> {
        self.lock().types.clone()
    }

    pub fn resolve(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        self.lock()
            .types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
            .cloned()
    }

    /// Finds a type by group and kind, whatever the version (for owner references).
    pub fn resolve_kind(&self, group: &str, kind: &str) -> Option<ResourceType> {
        self.lock()
            .types
            .iter()
            .find(|t| t.group == group && t.kind == kind)
            .cloned()
    }

    pub fn set_history_limit(&self, limit: usize) {
        let mut g = self.lock();
        g.history_limit = limit.max(1);
        g.trim();
    }

    /// Forgets all watch history, as an etcd compaction would: watches and continue
    /// tokens from before now get 410 Expired.
    pub fn compact(&self) {
        let mut g = self.lock();
        g.history.clear();
        g.window_start = g.rv;
    }

    pub fn close_watches(&self) {
        let _ = self.tx.send(Notice::CloseWatches);
    }

    /// A stored object as served through `info` (its apiVersion, and the events.k8s.io shape
    /// for Events read through that group).
    pub fn render(info: &ResourceType, obj: &Value) -> Value {
        let mut obj = if is_new_event(info) {
            super::events::from_core(obj)
        } else {
            obj.clone()
        };
        obj["apiVersion"] = json!(info.api_version());
        obj["kind"] = json!(info.kind);
        obj
    }

    fn output(info: &ResourceType, obj: Value) -> Value {
        Self::render(info, &obj)
    }

    pub fn get(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        let g = self.lock();
        g.get(info, ns, name)
            .cloned()
            .map(|o| Self::output(info, o))
            .ok_or_else(|| ApiError::not_found(gr(info), name))
    }

    /// Lists objects, honouring resourceVersion semantics, selectors and paging.
    pub fn list(&self, info: &ResourceType, p: &ListParams) -> Result<Value, ApiError> {
        let g = self.lock();
        let (snapshot_rv, start_after) = match &p.continue_token {
            Some(tok) if !tok.is_empty() => {
                let (rv, start) = decode_continue(tok)?;
                if rv < g.window_start {
                    return Err(ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. \
                         You can start a new list without the continue parameter, or use the continue token \
                         in this response to retrieve the remainder of the results. Continuing with the \
                         provided token results in an inconsistent list - objects that were created, modified, \
                         or deleted between the time the first chunk was returned and now may show up in the list.",
                    ));
                }
                (rv, Some(start))
            }
            _ => {
                let requested = match p.resource_version.as_deref() {
                    None | Some("") | Some("0") => None,
                    Some(s) => Some(s.parse::<u64>().map_err(|_| {
                        ApiError::bad_request(format!("invalid resource version: {s:?}"))
                    })?),
                };
                match (requested, p.resource_version_match.as_deref()) {
                    (Some(rv), _) if rv > g.rv => {
                        // The cause is how client-go's reflector recognizes this case.
                        return Err(ApiError {
                            details: Some(json!({
                                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                                "retryAfterSeconds": 1,
                            })),
                            ..ApiError::new(
                                504,
                                "Timeout",
                                format!(
                                    "Timeout: Too large resource version: {rv}, current: {}",
                                    g.rv
                                ),
                            )
                        });
                    }
                    (Some(rv), Some("Exact")) => {
                        if rv < g.window_start {
                            return Err(ApiError::expired(format!(
                                "The resourceVersion for the provided list is too old. (requested {rv}, oldest {})",
                                g.window_start
                            )));
                        }
                        (rv, None)
                    }
                    (None, Some("Exact")) => {
                        return Err(ApiError::bad_request(
                            "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"\"",
                        ))
                    }
                    _ => (g.rv, None),
                }
            }
        };
        let objects = g.snapshot(info, snapshot_rv);
        let mut items = Vec::new();
        let mut next = None;
        for ((ns, name), obj) in objects.iter() {
            if let Some(want) = &p.namespace {
                if ns != want {
                    continue;
                }
            }
            let key = format!("{ns}/{name}");
            if let Some(start) = &start_after {
                if key.as_str() <= start.as_str() {
                    continue;
                }
            }
            let obj = Self::render(info, obj);
            if !p.labels.matches_labels(obj.pointer("/metadata/labels"))
                || !p.fields.matches_fields(&obj)
            {
                continue;
            }
            if p.limit.is_some_and(|l| l > 0 && items.len() >= l) {
                next = Some(key_of_last(&items));
                break;
            }
            items.push(obj);
        }
        let mut metadata = json!({"resourceVersion": snapshot_rv.to_string()});
        if let Some(last) = next {
            metadata["continue"] = json!(encode_continue(snapshot_rv, &last));
        }
        Ok(json!({
            "kind": format!("{}List", info.kind),
            "apiVersion": info.api_version(),
            "metadata": metadata,
            "items": items,
        }))
    }

    /// Sets up a watch: `resource_version` "" or "0" starts with synthetic ADDED events for
    /// current objects; a number replays history after it, or fails with 410 if compacted.
    pub fn watch(
        &self,
        info: &ResourceType,
        namespace: Option<&str>,
        resource_version: Option<&str>,
    ) -> Result<WatchStart, ApiError> {
        let g = self.lock();
        let rx = self.tx.subscribe();
        let in_ns = |ns: &str| namespace.is_none_or(|want| want == ns);
        let initial = match resource_version {
            None | Some("") | Some("0") => g
                .objects
                .get(&storage_key(info))
                .map(|m| {
                    let (group, plural) = storage_key(info);
                    m.iter()
                        .filter(|((ns, _), _)| in_ns(ns))
                        .map(|((ns, _), o)| {
                            Arc::new(Change {
                                rv: g.rv,
                                kind: "ADDED",
                                group: group.clone(),
                                plural: plural.clone(),
                                namespace: ns.clone(),
                                object: o.clone(),
                                prev: None,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default(),
            Some(s) => {
                let rv: u64 = s.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid resource version: {s:?}"))
                })?;
                if rv < g.window_start {
                    return Err(ApiError::expired(format!(
                        "too old resource version: {rv} ({})",
                        g.window_start
                    )));
                }
                g.history
                    .iter()
                    .filter(|c| c.rv > rv && sees(info, c))
                    .filter(|c| in_ns(&c.namespace))
                    .cloned()
                    .collect()
            }
        };
        Ok(WatchStart {
            initial,
            rx,
            start_rv: g.rv,
        })
    }

    /// POST: creates an object in `ns` (None for cluster-scoped types).
    pub fn create(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        obj: Value,
        ctx: &WriteCtx,
    ) -> Result<Value, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        check_type(info, &obj)?;
        let mut obj = to_storage(info, obj);
        if !obj.get("metadata").is_some_and(Value::is_object) {
            obj["metadata"] = json!({});
        }
        let mut name = meta_str(&obj, "name").unwrap_or("").to_string();
        if name.is_empty() {
            match meta_str(&obj, "generateName") {
                Some(prefix) if !prefix.is_empty() => {
                    name = format!("{prefix}{}", random_suffix(5));
                    set_meta(&mut obj, "name", json!(name));
                }
                _ => {
                    return Err(ApiError::invalid(
                        &info.group,
                        &info.kind,
                        "",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    ))
                }
            }
        }
        validate_name(info, &name)?;
        if meta_str(&obj, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
            // etcd3 storage's plain error, which kube-apiserver reports as a 500.
            return Err(ApiError::new(
                500,
                "InternalError",
                "Internal error occurred: resourceVersion should not be set on objects to be created",
            ));
        }
        let ns = self.check_namespace(info, ns, &mut obj)?;
        // Fields a client may not set on create (kube-apiserver's BeforeCreate resets them).
        if let Some(md) = obj["metadata"].as_object_mut() {
            for f in [
                "uid",
                "resourceVersion",
                "generation",
                "creationTimestamp",
                "deletionTimestamp",
                "selfLink",
            ] {
                md.remove(f);
            }
        }
        // Status is the controllers' to write: create resets it (registries' PrepareForCreate).
        if info.has("status") {
            if let Some(o) = obj.as_object_mut() {
                o.remove("status");
            }
        }
        match info.kind.as_str() {
            "Namespace" if !info.custom => obj["status"] = json!({"phase": "Active"}),
            "CustomResourceDefinition" if !info.custom => {
                let names = obj.pointer("/spec/names").cloned().unwrap_or(json!({}));
                obj["status"] = json!({
                    "acceptedNames": names,
                    "conditions": [
                        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now_rfc3339()},
                        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now_rfc3339()},
                    ],
                    "storedVersions": obj.pointer("/spec/versions").and_then(Value::as_array)
                        .map(|vs| vs.iter().filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                            .filter_map(|v| v.get("name").cloned()).collect::<Vec<_>>()).unwrap_or_default(),
                });
            }
            _ => {}
        }
        // The uid is set before the strategy runs (FillObjectMetaSystemFields), so a Job's
        // generated selector names the Job's own uid.
        set_meta(&mut obj, "uid", json!(new_uid()));
        let mut alloc = Allocations::of(&self.lock());
        server_defaults::on_create(&mut alloc, &info.api_version(), &info.kind, &mut obj);
        validate_object(info, &name, &obj)?;
        let now = now_rfc3339();
        set_meta(&mut obj, "creationTimestamp", json!(now));
        if tracks_generation(info) {
            set_meta(&mut obj, "generation", json!(1));
        }
        if let Some(md) = obj["metadata"].as_object_mut() {
            md.remove("managedFields");
        }
        ctx.record(
            &info.kind,
            None,
            &mut obj,
            &fields::Write {
                manager: &ctx.manager,
                subresource: None,
                api_version: &info.api_version(),
                time: &now,
            },
        );
        let mut g = self.lock();
        let key = (ns.clone().unwrap_or_default(), name.clone());
        if g.objects
            .get(&storage_key(info))
            .is_some_and(|m| m.contains_key(&key))
        {
            return Err(ApiError::already_exists(gr(info), &name));
        }
        if ctx.dry_run {
            return Ok(Self::output(info, obj));
        }
        let stored = g.commit(&self.tx, info, key, Some(obj), "ADDED");
        if info.kind == "CustomResourceDefinition" && !info.custom {
            g.refresh_crds();
        }
        Ok(Self::output(info, stored))
    }

    fn check_namespace(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        obj: &mut Value,
    ) -> Result<Option<String>, ApiError> {
        if !info.namespaced {
            if let Some(md) = obj["metadata"].as_object_mut() {
                md.remove("namespace");
            }
            return Ok(None);
        }
        let Some(ns) = ns else {
            return Err(ApiError::bad_request(
                "the server could not find the requested resource",
            ));
        };
        match meta_str(obj, "namespace") {
            Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ))
            }
            _ => set_meta(obj, "namespace", json!(ns)),
        }
        let g = self.lock();
        let exists = g
            .objects
            .get(&("".to_string(), "namespaces".to_string()))
            .is_some_and(|m| m.contains_key(&(String::new(), ns.to_string())));
        if !exists {
            return Err(ApiError::not_found(
                Gr {
                    group: "",
                    resource: "namespaces",
                },
                ns,
            ));
        }
        Ok(Some(ns.to_string()))
    }

    /// PUT on the main resource or a subresource (`status`). `obj` is the full new object.
    pub fn update(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
        obj: Value,
        subresource: Option<&str>,
        ctx: &WriteCtx,
    ) -> Result<Value, ApiError> {
        self.write(info, ns, name, subresource, ctx, |_old| Ok(obj))
    }

    /// Read-modify-write under one lock: `f` turns the stored object into the requested one.
    /// Applies resourceVersion preconditions, subresource rules, defaults, generation and
    /// managedFields; a write that changes nothing is a no-op (no new resourceVersion).
    pub fn write(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        ctx: &WriteCtx,
        f: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Value, ApiError> {
        let key = object_key(info, ns, name);
        let ns_key = key.0.as_str();
        let mut g = self.lock();
        let old = g
            .get(info, ns, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(gr(info), name))?;
        let old_out = Self::output(info, old.clone());
        let new = f(&old_out)?;
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        check_type(info, &new)?;
        let mut new = to_storage(info, new);
        if !new.get("metadata").is_some_and(Value::is_object) {
            new["metadata"] = json!({});
        }
        match meta_str(&new, "name") {
            Some(n) if n == name => {}
            None | Some("") => set_meta(&mut new, "name", json!(name)),
            Some(_) => {
                return Err(ApiError::bad_request(
                    "the name of the object (from the body) does not match the name on the URL",
                ))
            }
        }
        if info.namespaced {
            match meta_str(&new, "namespace") {
                Some(n) if !n.is_empty() && n != ns_key => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => set_meta(&mut new, "namespace", json!(ns_key)),
            }
        }
        match meta_str(&new, "resourceVersion") {
            Some(rv) if !rv.is_empty() && Some(rv) != meta_str(&old, "resourceVersion") => {
                return Err(ApiError::conflict(gr(info), name));
            }
            _ => {}
        }
        // Subresource rules, as the registries' PrepareForUpdate implement them.
        match subresource {
            Some("status") => {
                let status = new.get("status").cloned();
                let mut merged = old.clone();
                match status {
                    Some(s) => merged["status"] = s,
                    None => {
                        merged.as_object_mut().map(|o| o.remove("status"));
                    }
                }
                // Labels/annotations may change through status writes; spec may not.
                for f in ["labels", "annotations"] {
                    match new.pointer(&format!("/metadata/{f}")) {
                        Some(v) => merged["metadata"][f] = v.clone(),
                        None => {
                            merged["metadata"].as_object_mut().map(|m| m.remove(f));
                        }
                    }
                }
                new = merged;
            }
            _ if info.has("status") => match old.get("status") {
                Some(s) => new["status"] = s.clone(),
                None => {
                    new.as_object_mut().map(|o| o.remove("status"));
                }
            },
            _ => {}
        }
        // Identity fields come from storage whatever the client sent.
        for f in [
            "uid",
            "creationTimestamp",
            "generation",
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match old.pointer(&format!("/metadata/{f}")) {
                Some(v) => set_meta(&mut new, f, v.clone()),
                None => {
                    new["metadata"].as_object_mut().map(|m| m.remove(f));
                }
            }
        }
        // managedFields: absent or unchanged in the request means "keep the stored ones".
        let requested_mf = new.pointer("/metadata/managedFields").cloned();
        let stored_mf = old.pointer("/metadata/managedFields").cloned();
        if requested_mf.is_none() || requested_mf == stored_mf {
            match stored_mf {
                Some(mf) => set_meta(&mut new, "managedFields", mf),
                None => {
                    new["metadata"]
                        .as_object_mut()
                        .map(|m| m.remove("managedFields"));
                }
            }
        }
        let mut alloc = Allocations::of(&g);
        server_defaults::on_update(&mut alloc, &info.api_version(), &info.kind, &old, &mut new);
        validate_object(info, name, &new)?;
        if tracks_generation(info) && spec_part(&new) != spec_part(&old) {
            let gen = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            set_meta(&mut new, "generation", json!(gen + 1));
        }
        ctx.record(
            &info.kind,
            Some(&old),
            &mut new,
            &fields::Write {
                manager: &ctx.manager,
                subresource,
                api_version: &info.api_version(),
                time: &now_rfc3339(),
            },
        );
        if comparable(&new) == comparable(&old) || ctx.dry_run {
            if ctx.dry_run {
                return Ok(Self::output(info, new));
            }
            return Ok(old_out);
        }
        // The last finalizer removed from a terminating object completes its deletion.
        let finalized = new.pointer("/metadata/deletionTimestamp").is_some()
            && new
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(|f| f.is_empty());
        let stored = if finalized {
            g.commit(&self.tx, info, key.clone(), Some(new), "MODIFIED");
            let gone = g.commit(&self.tx, info, key, None, "DELETED");
            g.cascade(&self.tx, info, &gone);
            gone
        } else {
            g.commit(&self.tx, info, key, Some(new), "MODIFIED")
        };
        if info.kind == "CustomResourceDefinition" && !info.custom {
            g.refresh_crds();
        }
        Ok(Self::output(info, stored))
    }

    /// Deletes an object immediately and, like the garbage collector with background
    /// propagation, its dependents (ownerReferences) and a namespace's contents.
    pub fn delete(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
        precondition_rv: Option<&str>,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let opts = DeleteOpts {
            precondition_rv: precondition_rv.map(str::to_string),
            dry_run,
            ..DeleteOpts::default()
        };
        self.delete_with(info, ns, name, &opts).map(|d| d.object)
    }

    /// DELETE with `DeleteOptions`: objects with finalizers only get a deletionTimestamp
    /// and go away when an update empties `metadata.finalizers`; `Orphan` propagation
    /// strips the owner reference from dependents instead of deleting them.
    pub fn delete_with(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOpts,
    ) -> Result<Deletion, ApiError> {
        if info.kind == "Namespace"
            && !info.custom
            && ["default", "kube-system", "kube-public"].contains(&name)
        {
            return Err(ApiError {
                details: Some(json!({"name": name, "kind": "namespaces"})),
                ..ApiError::new(
                    403,
                    "Forbidden",
                    format!(
                        "namespaces \"{name}\" is forbidden: this namespace may not be deleted"
                    ),
                )
            });
        }
        let key = object_key(info, ns, name);
        let mut g = self.lock();
        let old = g
            .get(info, ns, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(gr(info), name))?;
        if let Some(rv) = opts.precondition_rv.as_deref().filter(|rv| !rv.is_empty()) {
            if Some(rv) != meta_str(&old, "resourceVersion") {
                return Err(ApiError::conflict(gr(info), name));
            }
        }
        if let Some(uid) = opts.precondition_uid.as_deref().filter(|u| !u.is_empty()) {
            if Some(uid) != meta_str(&old, "uid") {
                return Err(ApiError {
                    details: Some(gr(info).details(name)),
                    ..ApiError::new(
                        409,
                        "Conflict",
                        format!(
                            "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                            gr(info).qualified(),
                            meta_str(&old, "uid").unwrap_or("")
                        ),
                    )
                });
            }
        }
        if opts.dry_run {
            return Ok(Deletion {
                object: Self::output(info, old),
                gone: true,
            });
        }
        let has_finalizers = old
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        if has_finalizers {
            if old.pointer("/metadata/deletionTimestamp").is_some() {
                return Ok(Deletion {
                    object: Self::output(info, old),
                    gone: false,
                });
            }
            let mut terminating = old.clone();
            set_meta(&mut terminating, "deletionTimestamp", json!(now_rfc3339()));
            set_meta(&mut terminating, "deletionGracePeriodSeconds", json!(0));
            let stored = g.commit(&self.tx, info, key, Some(terminating), "MODIFIED");
            return Ok(Deletion {
                object: Self::output(info, stored),
                gone: false,
            });
        }
        let deleted = g.commit(&self.tx, info, key, None, "DELETED");
        if opts.propagation.as_deref() == Some("Orphan") {
            g.orphan(&self.tx, meta_str(&deleted, "uid").unwrap_or(""));
        } else {
            g.cascade(&self.tx, info, &deleted);
        }
        if info.kind == "CustomResourceDefinition" && !info.custom {
            g.refresh_crds();
        }
        Ok(Deletion {
            object: Self::output(info, deleted),
            gone: true,
        })
    }

    /// Server-side apply (`application/apply-patch+yaml`): creates the object if missing,
    /// else merges the configuration into it, refusing (409) to change fields other managers
    /// own unless `force`, and dropping fields this manager applied before but no longer
    /// does (when nobody else owns them). Returns the object and whether it was created.
    pub fn apply(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
        mut config: Value,
        ctx: &WriteCtx,
        force: bool,
    ) -> Result<(Value, bool), ApiError> {
        let manager = ctx.manager.clone();
        if manager.is_empty() {
            return Err(ApiError::new(
                422,
                "Invalid",
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            ));
        }
        if !config.is_object() {
            return Err(ApiError::bad_request(
                "the apply configuration must be an object",
            ));
        }
        check_type(info, &config)?;
        match meta_str(&config, "name") {
            Some(n) if n != name => {
                return Err(ApiError::bad_request(
                    "the name of the object (from the body) does not match the name on the URL",
                ))
            }
            Some(_) => {}
            None => set_meta(&mut config, "name", json!(name)),
        }
        let plan = Arc::new(ApplyPlan {
            set: fields::applied_set(&info.kind, &config),
            taken: Mutex::default(),
        });
        let ctx = WriteCtx {
            apply: Some(plan.clone()),
            ..ctx.clone()
        };
        match self.get(info, ns, name) {
            Err(e) if e.code == 404 => return Ok((self.create(info, ns, config, &ctx)?, true)),
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        let kind = info.kind.clone();
        let builtin = !info.custom && crate::smp::supported(&info.api_version(), &info.kind);
        let updated = self.write(info, ns, name, None, &ctx, |live| {
            let all = fields::owners(live);
            let mine = |o: &fields::Owner| o.manager == manager && o.operation == "Apply";
            let others: Vec<&fields::Owner> = all.iter().filter(|o| !mine(o)).collect();
            let mut conflicts: Vec<(String, String, Vec<String>)> = Vec::new();
            let mut taken = std::collections::BTreeSet::new();
            for p in &plan.set {
                let Some(want) = fields::value_at(&config, p) else {
                    continue;
                };
                if fields::value_at(live, p) == Some(want) {
                    continue;
                }
                for o in others.iter().filter(|o| o.fields.contains(p)) {
                    let who = if o.subresource.is_empty() {
                        format!("\"{}\"", o.manager)
                    } else {
                        format!("\"{}\" with subresource \"{}\"", o.manager, o.subresource)
                    };
                    conflicts.push((who, o.api_version.clone(), p.clone()));
                }
                taken.insert(p.clone());
            }
            if !conflicts.is_empty() && !force {
                return Err(apply_conflict(&conflicts));
            }
            *plan.taken.lock().unwrap_or_else(|e| e.into_inner()) = taken;
            let mut merged = if builtin {
                crate::smp::apply(&kind, live, &config).map_err(|e| ApiError::bad_request(e.0))?
            } else {
                let mut doc = live.clone();
                json_patch::merge(&mut doc, &config);
                doc
            };
            // Fields this manager applied last time but not now go, unless someone else owns them.
            let prior: std::collections::BTreeSet<Vec<String>> = all
                .iter()
                .filter(|o| mine(o))
                .flat_map(|o| o.fields.iter().cloned())
                .collect();
            // Parents before children: a removed list item takes its fields with it.
            for p in prior.difference(&plan.set) {
                let shared = others
                    .iter()
                    .any(|o| o.fields.iter().any(|q| q.starts_with(p)));
                if shared {
                    continue;
                }
                fields::remove_at(&mut merged, p);
                // Containers left empty by the removal go too (structured-merge-diff prunes them).
                let mut parent = &p[..p.len().saturating_sub(1)];
                while !parent.is_empty() {
                    let empty = match fields::value_at(&merged, parent) {
                        Some(Value::Array(a)) => a.is_empty(),
                        Some(Value::Object(m)) => m.is_empty(),
                        _ => false,
                    };
                    let owned = plan.set.contains(parent)
                        || others.iter().any(|o| o.fields.contains(parent));
                    if !empty || owned {
                        break;
                    }
                    fields::remove_at(&mut merged, parent);
                    parent = &parent[..parent.len() - 1];
                }
            }
            // A configuration without resourceVersion carries no precondition.
            if config.pointer("/metadata/resourceVersion").is_none() {
                merged["metadata"]
                    .as_object_mut()
                    .map(|m| m.remove("resourceVersion"));
            }
            Ok(merged)
        })?;
        Ok((updated, false))
    }

    /// A custom resource version's `additionalPrinterColumns`, from its CRD.
    pub fn printer_columns(&self, info: &ResourceType) -> Option<Vec<Value>> {
        if !info.custom {
            return None;
        }
        let g = self.lock();
        let crds = g.objects.get(&(
            "apiextensions.k8s.io".to_string(),
            "customresourcedefinitions".to_string(),
        ))?;
        let crd = crds.get(&(String::new(), format!("{}.{}", info.plural, info.group)))?;
        crd.pointer("/spec/versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(&info.version))?
            .get("additionalPrinterColumns")?
            .as_array()
            .cloned()
    }

    /// Every stored object of a type (all namespaces), for the controller.
    pub fn all(&self, info: &ResourceType) -> Vec<Value> {
        let g = self.lock();
        g.objects
            .get(&storage_key(info))
            .map(|m| m.values().map(|o| Self::output(info, o.clone())).collect())
            .unwrap_or_default()
    }
}

/// The 409 kube-apiserver's field manager answers for apply conflicts.
fn apply_conflict(conflicts: &[(String, String, Vec<String>)]) -> ApiError {
    let n = conflicts.len();
    let summary = if n == 1 {
        let (m, av, p) = &conflicts[0];
        format!("conflict with {m} using {av}: {}", fields::describe(p))
    } else {
        let mut by_manager: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (m, av, p) in conflicts {
            by_manager
                .entry(format!("{m} using {av}"))
                .or_default()
                .push(fields::describe(p));
        }
        let mut s = String::from("conflicts with");
        for (m, paths) in by_manager {
            if paths.len() == 1 {
                s.push_str(&format!(" {m}: {}", paths[0]));
            } else {
                s.push_str(&format!(" {m}:"));
                for p in paths {
                    s.push_str(&format!("\n- {p}"));
                }
            }
        }
        s
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, av, p)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m} using {av}"), "field": fields::describe(p)})
        })
        .collect();
    ApiError {
        details: Some(json!({"causes": causes})),
        ..ApiError::new(
            409,
            "Conflict",
            format!(
                "Apply failed with {n} conflict{}: {summary}",
                if n == 1 { "" } else { "s" }
            ),
        )
    }
}

fn key_of_last(items: &[Value]) -> String {
    items
        .last()
        .map(|o| {
            format!(
                "{}/{}",
                meta_str(o, "namespace").unwrap_or(""),
                meta_str(o, "name").unwrap_or("")
            )
        })
        .unwrap_or_default()
}

fn check_type(info: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    if let Some(av) = obj.get("apiVersion").and_then(Value::as_str) {
        let group = driftd_k8s::kinds::split_api_version(av).0;
        if group != info.group {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({av}) does not match the expected API version ({})",
                info.api_version()
            )));
        }
    }
    if let Some(kind) = obj.get("kind").and_then(Value::as_str) {
        if kind != info.kind {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({kind}) does not match the expected kind ({})",
                info.kind
            )));
        }
    }
    check_shapes(info, obj)
}

/// The type checks kube-apiserver's decoder makes on the fields everything here relies on
/// (object metadata maps of strings, integer replicas), answered the way its decoder fails.
fn check_shapes(info: &ResourceType, obj: &Value) -> Result<(), ApiError> {
    let fail = |field: &str, want: &str, got: &Value| {
        let got = match got {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: json: cannot unmarshal {got} into Go struct field {field} of type {want}",
            kind = info.kind,
            v = info.version,
        )))
    };
    let mut metas = vec![("metadata", obj.get("metadata"))];
    if !info.custom {
        metas.push((
            "spec.template.metadata",
            obj.pointer("/spec/template/metadata"),
        ));
    }
    for (at, meta) in metas {
        let Some(meta) = meta else { continue };
        if !meta.is_object() {
            return fail(at, "v1.ObjectMeta", meta);
        }
        for f in ["labels", "annotations"] {
            match meta.get(f) {
                None | Some(Value::Null) => {}
                Some(Value::Object(m)) => {
                    if let Some(v) = m.values().find(|v| !v.is_string()) {
                        return fail(&format!("ObjectMeta.{at}.{f}"), "string", v);
                    }
                }
                Some(other) => {
                    return fail(&format!("ObjectMeta.{at}.{f}"), "map[string]string", other)
                }
            }
        }
    }
    if !info.custom {
        if let Some(r) = obj.pointer("/spec/replicas") {
            if !(r.is_i64() || r.is_u64() || r.is_null()) {
                return fail(&format!("{}Spec.spec.replicas", info.kind), "int32", r);
            }
        }
    }
    Ok(())
}

/// ClusterIPs and NodePorts handed out at random among those no Service holds yet, as
/// kube-apiserver's allocators do.
struct Allocations {
    ips: std::collections::HashSet<String>,
    ports: std::collections::HashSet<u64>,
}

impl Allocations {
    fn of(g: &Inner) -> Allocations {
        let mut a = Allocations {
            ips: Default::default(),
            ports: Default::default(),
        };
        let services = g.objects.get(&(String::new(), "services".to_string()));
        for svc in services.into_iter().flat_map(|m| m.values()) {
            if let Some(ips) = svc.pointer("/spec/clusterIPs").and_then(Value::as_array) {
                a.ips
                    .extend(ips.iter().filter_map(Value::as_str).map(str::to_string));
            }
            if let Some(ports) = svc.pointer("/spec/ports").and_then(Value::as_array) {
                a.ports
                    .extend(ports.iter().filter_map(|p| p.get("nodePort")?.as_u64()));
            }
        }
        a
    }
}

impl server_defaults::Allocator for Allocations {
    fn cluster_ip(&mut self) -> Option<String> {
        // 10.96.0.0/12, skipping .0 and the first address (kubernetes.default).
        let mut r = rand::rng();
        for _ in 0..10_000 {
            let off: u32 = r.random_range(2..server_defaults::SERVICE_CIDR_SIZE - 1);
            let ip =
                std::net::Ipv4Addr::from(server_defaults::SERVICE_CIDR_FIRST + off).to_string();
            if self.ips.insert(ip.clone()) {
                return Some(ip);
            }
        }
        None
    }
    fn node_port(&mut self) -> Option<u16> {
        let mut r = rand::rng();
        for _ in 0..10_000 {
            let p: u16 =
                r.random_range(server_defaults::NODE_PORT_MIN..=server_defaults::NODE_PORT_MAX);
            if self.ports.insert(u64::from(p)) {
                return Some(p);
            }
        }
        None
    }
    fn uid(&mut self) -> String {
        new_uid()
    }
}

/// Storage key of an object: (namespace, name), the namespace empty for cluster-scoped
/// types whatever the request path said.
fn object_key(info: &ResourceType, ns: Option<&str>, name: &str) -> (String, String) {
    let ns = if info.namespaced {
        ns.unwrap_or("")
    } else {
        ""
    };
    (ns.to_string(), name.to_string())
}

impl Inner {
    fn get(&self, info: &ResourceType, ns: Option<&str>, name: &str) -> Option<&Value> {
        self.objects
            .get(&storage_key(info))?
            .get(&object_key(info, ns, name))
    }

    fn trim(&mut self) {
        while self.history.len() > self.history_limit {
            if let Some(c) = self.history.pop_front() {
                self.window_start = c.rv;
            }
        }
    }

    /// Stores (or removes, when `obj` is None) under a new resourceVersion and notifies watchers.
    fn commit(
        &mut self,
        tx: &broadcast::Sender<Notice>,
        info: &ResourceType,
        key: Key,
        obj: Option<Value>,
        kind: &'static str,
    ) -> Value {
        self.rv += 1;
        let rv = self.rv;
        let map = self.objects.entry(storage_key(info)).or_default();
        let prev = map.get(&key).cloned();
        let mut object = match obj {
            Some(o) => o,
            None => {
                map.remove(&key);
                prev.clone().unwrap_or(Value::Null)
            }
        };
        object["apiVersion"] = json!(info.api_version());
        object["kind"] = json!(info.kind);
        set_meta(&mut object, "resourceVersion", json!(rv.to_string()));
        if kind != "DELETED" {
            map.insert(key.clone(), object.clone());
        }
        let (group, plural) = storage_key(info);
        let change = Arc::new(Change {
            rv,
            kind,
            group,
            plural,
            namespace: key.0,
            object: object.clone(),
            prev,
        });
        self.history.push_back(change.clone());
        self.trim();
        let _ = tx.send(Notice::Change(change));
        object
    }

    /// The objects of a type as they were at `rv`, undoing later history.
    fn snapshot(&self, info: &ResourceType, rv: u64) -> Objects {
        let mut objects = self
            .objects
            .get(&storage_key(info))
            .cloned()
            .unwrap_or_default();
        for c in self.history.iter().rev().take_while(|c| c.rv > rv) {
            if !sees(info, c) {
                continue;
            }
            let key = (
                c.namespace.clone(),
                meta_str(&c.object, "name").unwrap_or("").to_string(),
            );
            match &c.prev {
                Some(p) => {
                    objects.insert(key, p.clone());
                }
                None => {
                    objects.remove(&key);
                }
            }
        }
        objects
    }

    /// Removes owner references to `uid` from every dependent (orphan propagation).
    fn orphan(&mut self, tx: &broadcast::Sender<Notice>, uid: &str) {
        let mut changed = Vec::new();
        for t in &self.types {
            let Some(map) = self.objects.get(&storage_key(t)) else {
                continue;
            };
            for (key, obj) in map {
                let Some(refs) = obj
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                else {
                    continue;
                };
                if refs
                    .iter()
                    .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
                {
                    let kept: Vec<Value> = refs
                        .iter()
                        .filter(|r| r.get("uid").and_then(Value::as_str) != Some(uid))
                        .cloned()
                        .collect();
                    let mut o = obj.clone();
                    if kept.is_empty() {
                        o["metadata"]
                            .as_object_mut()
                            .map(|m| m.remove("ownerReferences"));
                    } else {
                        o["metadata"]["ownerReferences"] = Value::Array(kept);
                    }
                    changed.push((t.clone(), key.clone(), o));
                }
            }
        }
        changed.dedup_by(|a, b| storage_key(&a.0) == storage_key(&b.0) && a.1 == b.1);
        for (t, key, o) in changed {
            self.commit(tx, &t, key, Some(o), "MODIFIED");
        }
    }

    fn cascade(&mut self, tx: &broadcast::Sender<Notice>, info: &ResourceType, deleted: &Value) {
        let uid = meta_str(deleted, "uid").unwrap_or("").to_string();
        let ns_deleted = info.kind == "Namespace" && !info.custom;
        let crd = (info.kind == "CustomResourceDefinition" && !info.custom).then(|| {
            (
                deleted
                    .pointer("/spec/group")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                deleted
                    .pointer("/spec/names/plural")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        });
        let name = meta_str(deleted, "name").unwrap_or("").to_string();
        let mut doomed = Vec::new();
        for t in &self.types {
            let Some(map) = self.objects.get(&storage_key(t)) else {
                continue;
            };
            for (key, obj) in map {
                let owned = obj
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .is_some_and(|refs| {
                        refs.iter()
                            .any(|r| r.get("uid").and_then(Value::as_str) == Some(&uid))
                    });
                let in_ns = ns_deleted && t.namespaced && key.0 == name;
                let of_crd = crd
                    .as_ref()
                    .is_some_and(|(g, p)| *g == t.group && *p == t.plural);
                if owned || in_ns || of_crd {
                    doomed.push((t.clone(), key.clone()));
                }
            }
        }
        doomed.dedup_by(|a, b| storage_key(&a.0) == storage_key(&b.0) && a.1 == b.1);
        for (t, key) in doomed {
            let exists = self
                .objects
                .get(&storage_key(&t))
                .is_some_and(|m| m.contains_key(&key));
            if exists {
                let gone = self.commit(tx, &t, key, None, "DELETED");
                self.cascade(tx, &t, &gone);
            }
        }
    }

    fn refresh_crds(&mut self) {
        let mut types = BUILTIN.clone();
        let crds: Vec<Value> = self
            .objects
            .get(&(
                "apiextensions.k8s.io".to_string(),
                "customresourcedefinitions".to_string(),
            ))
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        for crd in &crds {
            types.extend(crd_types(crd));
        }
        self.types = types;
    }
}

/// Builds a `Scale` (autoscaling/v1) view of a workload.
pub fn scale_of(obj: &Value) -> Value {
    let md = &obj["metadata"];
    let selector = obj
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let mut meta = Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = md.get(f) {
            meta.insert(f.into(), v.clone());
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": obj.pointer("/spec/replicas").cloned().unwrap_or(json!(1))},
        "status": {
            "replicas": obj.pointer("/status/replicas").cloned().unwrap_or(json!(0)),
            "selector": selector,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployments(store: &Store) -> ResourceType {
        store.resolve("apps", "v1", "deployments").unwrap()
    }

    fn deployment(replicas: i64) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}})
    }

    #[test]
    fn a_created_jobs_generated_selector_names_its_own_uid() {
        let store = Store::new(100);
        let jobs = store.resolve("batch", "v1", "jobs").unwrap();
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}});
        let created = store
            .create(&jobs, Some("default"), job, &WriteCtx::new("test"))
            .unwrap();
        let uid = &created["metadata"]["uid"];
        assert_eq!(
            created["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            *uid
        );
        assert_eq!(created["metadata"]["labels"]["controller-uid"], *uid);
    }

    #[test]
    fn generation_moves_with_spec_not_metadata_or_status() {
        let store = Store::new(100);
        let d = deployments(&store);
        let ctx = WriteCtx::new("test");
        let created = store
            .create(&d, Some("default"), deployment(1), &ctx)
            .unwrap();
        assert_eq!(created["metadata"]["generation"], 1);
        let rv = created["metadata"]["resourceVersion"].clone();

        // Same object again: a no-op keeps the resourceVersion.
        let same = store
            .update(&d, Some("default"), "web", created.clone(), None, &ctx)
            .unwrap();
        assert_eq!(same["metadata"]["resourceVersion"], rv);

        let mut labelled = created.clone();
        labelled["metadata"]["labels"] = json!({"team": "a"});
        let labelled = store
            .update(&d, Some("default"), "web", labelled, None, &ctx)
            .unwrap();
        assert_eq!(labelled["metadata"]["generation"], 1);

        let mut with_status = labelled.clone();
        with_status["status"] = json!({"replicas": 1});
        let ignored = store
            .update(&d, Some("default"), "web", with_status.clone(), None, &ctx)
            .unwrap();
        assert!(
            ignored
                .get("status")
                .is_none_or(|s| s.get("replicas").is_none()),
            "main resource PUT ignores status"
        );
        let status = store
            .update(
                &d,
                Some("default"),
                "web",
                with_status,
                Some("status"),
                &ctx,
            )
            .unwrap();
        assert_eq!(status["status"]["replicas"], 1);
        assert_eq!(status["metadata"]["generation"], 1);

        let mut scaled = status.clone();
        scaled["spec"]["replicas"] = json!(3);
        let scaled = store
            .update(&d, Some("default"), "web", scaled, None, &ctx)
            .unwrap();
        assert_eq!(scaled["metadata"]["generation"], 2);
        assert_eq!(scaled["status"]["replicas"], 1, "status kept from storage");
    }

    #[test]
    fn stale_resource_version_conflicts_and_lists_rebuild_history() {
        let store = Store::new(100);
        let d = deployments(&store);
        let ctx = WriteCtx::new("test");
        let v1 = store
            .create(&d, Some("default"), deployment(1), &ctx)
            .unwrap();
        let rv1 = v1["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        let mut v2 = v1.clone();
        v2["spec"]["replicas"] = json!(2);
        store
            .update(&d, Some("default"), "web", v2.clone(), None, &ctx)
            .unwrap();
        let err = store
            .update(&d, Some("default"), "web", v2, None, &ctx)
            .unwrap_err();
        assert_eq!((err.code, err.reason), (409, "Conflict"));

        let then = store
            .list(
                &d,
                &ListParams {
                    resource_version: Some(rv1.clone()),
                    resource_version_match: Some("Exact".into()),
                    ..ListParams::default()
                },
            )
            .unwrap();
        assert_eq!(then["items"][0]["spec"]["replicas"], 1);
        store.compact();
        let err = store
            .list(
                &d,
                &ListParams {
                    resource_version: Some(rv1),
                    resource_version_match: Some("Exact".into()),
                    ..ListParams::default()
                },
            )
            .unwrap_err();
        assert_eq!(err.code, 410);
    }

    #[test]
    fn bounded_history_expires_old_watch_positions() {
        let store = Store::new(2);
        let cms = store.resolve("", "v1", "configmaps").unwrap();
        let ctx = WriteCtx::new("test");
        let start = store.current_rv();
        for i in 0..3 {
            let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
            store.create(&cms, Some("default"), cm, &ctx).unwrap();
        }
        let err = store
            .watch(&cms, None, Some(&start.to_string()))
            .err()
            .unwrap();
        assert_eq!((err.code, err.reason), (410, "Expired"));
        let recent = store
            .watch(&cms, None, Some(&(store.current_rv() - 1).to_string()))
            .ok()
            .unwrap();
        assert_eq!(recent.initial.len(), 1);
    }
}
