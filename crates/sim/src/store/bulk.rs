//! Bulk operations for benchmarks, in process so the HTTP transport does not limit them:
//! loading many objects at once (each created as `kubectl create` would, with server
//! defaults, its own resourceVersion and a watch event), and making many modifications
//! (a ConfigMap or Secret value, a container image, an annotation) so watch events reach a
//! client faster than it can consume them.

use super::super::status::ApiError;
use super::object::{object_key, storage_form, Key, Stored};
use super::write::Update;
use super::{Store, WriteCtx};
use driftd_k8s::kinds::{split_api_version, ResourceType};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The field manager bulk-loaded objects are created by (kubectl create's default).
pub const LOAD_MANAGER: &str = "kubectl-create";
/// The field manager of bulk edits.
pub const EDIT_MANAGER: &str = "driftd-sim-bulk-edit";
/// How many failures a report names (it counts them all).
const ERRORS_SHOWN: usize = 20;

/// What a bulk load did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkLoadReport {
    pub created: usize,
    pub failed: usize,
    /// The first failures, as `#index kind namespace/name: message`.
    pub errors: Vec<String>,
    /// The resourceVersion after the last object.
    pub resource_version: String,
    pub seconds: f64,
    pub objects_per_second: f64,
}

/// A bulk edit request: `count` modifications cycling through the existing objects of
/// `kinds` (plural resource names; empty = configmaps, secrets, services, deployments),
/// at most `rate` per second when given.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BulkEdit {
    pub count: usize,
    #[serde(default)]
    pub kinds: Vec<String>,
    #[serde(default)]
    pub rate: Option<f64>,
}

/// What a bulk edit did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkEditReport {
    pub made: usize,
    pub failed: usize,
    /// Running the modifications through the write path, before any was stored.
    pub prepare_seconds: f64,
    /// Storing and fanning them out: what `writes_per_second` is over.
    pub seconds: f64,
    pub writes_per_second: f64,
    pub resource_version: String,
}

/// Modifications run through the write path but not stored yet, with their kinds.
pub struct PreparedEdits {
    edits: Vec<(ResourceType, PreparedEdit)>,
    failed: usize,
    prepare_seconds: f64,
}

/// A bulk load in progress.
pub struct BulkLoader<'a> {
    store: &'a Store,
    ctx: WriteCtx,
    start: Instant,
    seen: usize,
    created: usize,
    failed: usize,
    errors: Vec<String>,
}

impl BulkLoader<'_> {
    /// Creates one object (see [`Store::bulk_load`]).
    pub fn add(&mut self, obj: Value) {
        let what = describe(&obj);
        let store = self.store;
        let outcome = store.type_of_object(&obj).and_then(|info| {
            let ns = obj
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .unwrap_or("default")
                .to_string();
            store.create_written(&info, Some(&ns), obj, &self.ctx)
        });
        match outcome {
            Ok(_) => self.created += 1,
            Err(e) => {
                self.failed += 1;
                if self.errors.len() < ERRORS_SHOWN {
                    self.errors
                        .push(format!("#{} {what}: {}", self.seen, e.message));
                }
            }
        }
        self.seen += 1;
    }

    pub fn finish(self) -> BulkLoadReport {
        let seconds = self.start.elapsed().as_secs_f64();
        BulkLoadReport {
            created: self.created,
            failed: self.failed,
            errors: self.errors,
            resource_version: self.store.current_rv().to_string(),
            seconds,
            objects_per_second: per_second(self.created, seconds),
        }
    }
}

/// The kinds (plurals) a bulk edit that names none modifies.
pub const DEFAULT_EDIT_KINDS: &[&str] = &["configmaps", "secrets", "services", "deployments"];

impl Store {
    /// Creates every object in order (a Namespace before the objects in it), each as
    /// `POST` would with manager `kubectl-create`; namespaced objects without a namespace
    /// go to `default`. Failures are counted and the rest still load.
    pub fn bulk_load(&self, objects: impl IntoIterator<Item = Value>) -> BulkLoadReport {
        let mut loader = self.bulk_loader();
        for obj in objects {
            loader.add(obj);
        }
        loader.finish()
    }

    /// A [`Store::bulk_load`] fed one object at a time (e.g. while a body is parsed).
    pub fn bulk_loader(&self) -> BulkLoader<'_> {
        BulkLoader {
            store: self,
            ctx: WriteCtx::new(LOAD_MANAGER),
            start: Instant::now(),
            seen: 0,
            created: 0,
            failed: 0,
            errors: Vec::new(),
        }
    }

    /// The served type an object's `apiVersion` and `kind` name.
    fn type_of_object(&self, obj: &Value) -> Result<ResourceType, ApiError> {
        let av = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let (group, version) = split_api_version(av);
        self.types()
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
            .cloned()
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "no matches for kind \"{kind}\" in version \"{av}\""
                ))
            })
    }

    /// Makes `spec.count` modifications: [`Store::prepare_edits`], then
    /// [`Store::apply_edits`].
    pub fn bulk_edit(&self, spec: &BulkEdit) -> Result<BulkEditReport, ApiError> {
        let prepared = self.prepare_edits(spec)?;
        Ok(self.apply_edits(prepared, spec.rate))
    }

    /// Runs `spec.count` modifications, cycling through the existing objects of the chosen
    /// kinds, through the whole write path (validation, defaults, generation,
    /// managedFields), each from the object as the previous modification of it left it, and
    /// keeps what each would store without storing it. Delivering them is then only
    /// storing and fanning out ([`Store::apply_edits`]), so the watch stream a benchmark
    /// measures is not limited by the write path. No other writer may touch those objects
    /// in between (their writes would be overwritten).
    pub fn prepare_edits(&self, spec: &BulkEdit) -> Result<PreparedEdits, ApiError> {
        let start = Instant::now();
        let names: Vec<&str> = if spec.kinds.is_empty() {
            DEFAULT_EDIT_KINDS.to_vec()
        } else {
            spec.kinds.iter().map(String::as_str).collect()
        };
        let types = self.types();
        let mut targets = Vec::new();
        for name in names {
            let info = types
                .iter()
                .find(|t| t.plural == name)
                .cloned()
                .ok_or_else(|| {
                    ApiError::bad_request(format!("bulk-edit: unknown kind {name:?}"))
                })?;
            let keys = self.keys(&info);
            if !keys.is_empty() {
                targets.push((info, keys));
            }
        }
        if targets.is_empty() && spec.count > 0 {
            return Err(ApiError::bad_request(
                "bulk-edit: no objects of the chosen kinds to edit",
            ));
        }
        let ctx = WriteCtx::new(EDIT_MANAGER);
        let epoch = self.current_rv();
        let api_versions: Vec<Arc<str>> = targets
            .iter()
            .map(|(info, _)| Arc::from(info.api_version()))
            .collect();
        // The newest prepared version of every object edited so far.
        let mut latest: HashMap<Key, Arc<Stored>> = HashMap::new();
        let mut edits = Vec::with_capacity(spec.count);
        let mut failed = 0;
        for i in 0..spec.count {
            let (info, keys) = &targets[i % targets.len()];
            let api_version = &api_versions[i % targets.len()];
            let (ns, name) = &keys[(i / targets.len()) % keys.len()];
            let stamp = format!("bulk-edit-{}", epoch + i as u64);
            let ns = (!ns.is_empty()).then_some(ns.as_str());
            let key = object_key(info, ns, name);
            let mut g = self.lock();
            let Some(old) = latest.get(&key).or_else(|| g.get(info, ns, name)).cloned() else {
                failed += 1;
                continue;
            };
            let update = |old: &Value| Ok(edited(old, &stamp));
            match Self::update_of(&mut g, info, &key, name, None, &ctx, &old, update) {
                Ok(Update::Changed(mut new)) => {
                    let edit = PreparedEdit::new(info, key.clone(), &mut new, api_version);
                    latest.insert(key, edit.stored.clone());
                    edits.push((info.clone(), edit));
                }
                Ok(Update::Unchanged(_)) | Err(_) => failed += 1,
            }
        }
        Ok(PreparedEdits {
            edits,
            failed,
            prepare_seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// Stores prepared modifications in order (a resourceVersion and a watch event each),
    /// at most `rate` per second when given.
    pub fn apply_edits(&self, prepared: PreparedEdits, rate: Option<f64>) -> BulkEditReport {
        let start = Instant::now();
        let mut made = 0;
        for (i, (info, edit)) in prepared.edits.into_iter().enumerate() {
            if let Some(rate) = rate.filter(|r| *r > 0.0) {
                let due = start + Duration::from_secs_f64(i as f64 / rate);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            self.lock().commit_prepared(&info, &edit);
            made += 1;
        }
        let seconds = start.elapsed().as_secs_f64();
        BulkEditReport {
            made,
            failed: prepared.failed,
            prepare_seconds: prepared.prepare_seconds,
            seconds,
            writes_per_second: per_second(made, seconds),
            resource_version: self.current_rv().to_string(),
        }
    }
}

/// One modification run through the write path, in storage form but for its
/// resourceVersion, which is known only when it is stored. It is packed with a placeholder
/// resourceVersion whose digits are left out ([`Stored::restamped`]), so storing it takes
/// the packed text as it is with the real one: no parse, serialization or compression
/// (they were most of what a bulk edit cost, and the benchmark's watch stream
/// must come faster than a client takes it in).
pub struct PreparedEdit {
    /// The version with the placeholder; also what the next edit of the object starts from.
    stored: Arc<Stored>,
}

impl PreparedEdit {
    /// `object` (what the write path made) in storage form as `info` serves it.
    fn new(info: &ResourceType, key: Key, object: &mut Value, api_version: &Arc<str>) -> Self {
        // A resourceVersion no store reaches, so its text is found only where it was put.
        const PLACEHOLDER: u64 = u64::MAX;
        storage_form(info, object, PLACEHOLDER);
        let stored = Stored::new(PLACEHOLDER, key, object, api_version.clone());
        PreparedEdit {
            stored: Arc::new(stored),
        }
    }

    pub fn key(&self) -> &Key {
        &self.stored.key
    }

    /// The object as a tree (its resourceVersion the placeholder).
    pub fn value(&self) -> Value {
        self.stored.value()
    }

    /// The version as stored at `rv`: the same text [`super::Inner::commit`] makes of
    /// [`PreparedEdit::value`]. `None` when the placeholder was not found.
    pub fn at(&self, rv: u64) -> Option<Stored> {
        self.stored.restamped(rv)
    }
}

/// One modification of `old`, by kind: a ConfigMap's or Secret's first value, a workload's
/// first container image tag, else an annotation.
fn edited(old: &Value, stamp: &str) -> Value {
    use base64::Engine;
    let mut new = old.clone();
    let kind = old.get("kind").and_then(Value::as_str).unwrap_or("");
    let first_key = |field: &str| {
        old.get(field)
            .and_then(Value::as_object)
            .and_then(|m| m.keys().next().cloned())
    };
    match kind {
        "ConfigMap" => {
            let key = first_key("data").unwrap_or_else(|| "bulk-edit".into());
            new["data"][key] = json!(stamp);
        }
        "Secret" => {
            let key = first_key("data").unwrap_or_else(|| "bulk-edit".into());
            new["data"][key] = json!(base64::engine::general_purpose::STANDARD.encode(stamp));
        }
        _ if new
            .pointer("/spec/template/spec/containers/0/image")
            .is_some() =>
        {
            let image = &mut new["spec"]["template"]["spec"]["containers"][0]["image"];
            let current = image.as_str().unwrap_or("");
            let repo = match current.rsplit_once(':') {
                Some((repo, tag)) if !tag.contains('/') => repo,
                _ => current,
            };
            *image = json!(format!("{repo}:{stamp}"));
        }
        _ => new["metadata"]["annotations"]["sim.driftd.io/bulk-edit"] = json!(stamp),
    }
    new
}

fn describe(obj: &Value) -> String {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    format!(
        "{} {}/{}",
        s("/kind"),
        s("/metadata/namespace"),
        s("/metadata/name")
    )
}

fn per_second(n: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}
