//! Create, update and patch: the registries' write path (server-set metadata, status/spec
//! separation, optimistic concurrency, defaults and allocations, generation, managedFields,
//! no-op detection), each under the store lock from reading the old version to committing.

use super::super::fields;
use super::super::server_defaults;
use super::super::status::{ApiError, Gr};
use super::alloc::Allocations;
use super::object::{
    meta_str, object_key, render, set_meta, stored_type, to_bytes, to_storage, Key, Stored,
};
use super::validate::{
    check_type, same_but_bookkeeping, same_spec, tracks_generation, validate_object,
    validate_request,
};
use super::webhook;
use super::{gr, new_uid, now_rfc3339, random_suffix, Inner, Store};
use axum::body::Bytes;
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Who writes, as recorded in managedFields.
#[derive(Debug, Clone)]
pub struct WriteCtx {
    pub manager: String,
    pub dry_run: bool,
    /// Set for server-side apply: managedFields are recorded as an Apply.
    pub apply: Option<Arc<ApplyPlan>>,
    /// Written by an in-process controller: its own changes need no reaction from the
    /// controllers (a reconcile leaves its workload settled).
    pub internal: bool,
}

impl WriteCtx {
    pub fn new(manager: &str) -> WriteCtx {
        WriteCtx {
            manager: manager.to_string(),
            dry_run: false,
            apply: None,
            internal: false,
        }
    }

    /// A write by an in-process controller (or the simulated kubelet) as `manager`.
    pub fn controller(manager: &str) -> WriteCtx {
        WriteCtx {
            internal: true,
            ..WriteCtx::new(manager)
        }
    }

    /// Records managedFields for a write through `info` of the stored objects `old` and
    /// `new`. kube's field manager tracks the fields of the object in the version the
    /// request used, so a write through a version the kind is not stored in records the
    /// fields as that version shows them.
    fn record_as(
        &self,
        info: &ResourceType,
        old: Option<&Value>,
        new: &mut Value,
        w: &fields::Write,
    ) {
        if std::ptr::eq(stored_type(info), info) {
            return self.record(&info.kind, old, new, w);
        }
        let old = old.map(|o| render(info, o));
        let mut shown = render(info, new);
        self.record(&info.kind, old.as_ref(), &mut shown, w);
        match shown.pointer("/metadata/managedFields") {
            Some(mf) => set_meta(new, "managedFields", mf.clone()),
            None => {
                new["metadata"]
                    .as_object_mut()
                    .map(|m| m.remove("managedFields"));
            }
        }
    }

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

/// A server-side apply in progress: the fields the configuration sets, and those it took
/// from other managers with `force`.
#[derive(Debug, Default)]
pub struct ApplyPlan {
    pub set: std::collections::BTreeSet<Vec<String>>,
    pub taken: Mutex<std::collections::BTreeSet<Vec<String>>>,
}

/// The outcome of a write: the object in storage form and, unless nothing was stored
/// (dry run), the stored version whose bytes a response can share.
/// What the write path makes of an update.
pub(super) enum Update {
    /// Nothing to store: the response is the stored object.
    Unchanged(Written),
    /// The object to store (or, for a dry run, to answer).
    Changed(Value),
}

pub struct Written {
    pub object: Value,
    pub stored: Option<Arc<Stored>>,
}

impl Written {
    fn stored((stored, object): (Arc<Stored>, Value)) -> Written {
        Written {
            object,
            stored: Some(stored),
        }
    }

    fn serves_as(&self, info: &ResourceType) -> bool {
        self.stored.as_ref().is_some_and(|s| s.serves_as(info))
    }

    /// The object as served through `info`.
    pub fn into_value(self, info: &ResourceType) -> Value {
        if self.serves_as(info) {
            self.object
        } else {
            render(info, &self.object)
        }
    }

    /// The object as served through `info`, as JSON bytes (the stored text when it fits).
    pub fn json_as(&self, info: &ResourceType) -> Bytes {
        match &self.stored {
            Some(s) if s.serves_as(info) => s.json(),
            _ => to_bytes(&render(info, &self.object)),
        }
    }
}

/// A request body checked to be an object of this type, with metadata (not yet validated:
/// see [`validate_request`]).
fn request_form(info: &ResourceType, obj: Value) -> Result<Value, ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    check_type(info, &obj)?;
    let mut obj = obj;
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    Ok(obj)
}

impl Store {
    /// POST: creates an object in `ns` (None for cluster-scoped types).
    pub fn create(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        obj: Value,
        ctx: &WriteCtx,
    ) -> Result<Value, ApiError> {
        self.create_written(info, ns, obj, ctx)
            .map(|w| w.into_value(info))
    }

    /// Like [`Store::create`], keeping the stored bytes for the response.
    pub fn create_written(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        obj: Value,
        ctx: &WriteCtx,
    ) -> Result<Written, ApiError> {
        let mut obj = request_form(info, obj)?;
        // The name is generated before the strategy validates (`rest.BeforeCreate`), so a
        // bad generateName is reported for the prefix and for the name made from it.
        let mut name = meta_str(&obj, "name").unwrap_or("").to_string();
        if name.is_empty() {
            if let Some(prefix) = meta_str(&obj, "generateName").filter(|p| !p.is_empty()) {
                name = format!("{prefix}{}", random_suffix(5));
                set_meta(&mut obj, "name", json!(name));
            }
        }
        // The in-process controllers' writes are the simulator's own: valid by construction.
        if !ctx.internal {
            validate_request(info, ns, &obj)?;
        }
        if name.is_empty() {
            name = random_suffix(5);
            set_meta(&mut obj, "name", json!(name));
        }
        let mut obj = to_storage(info, obj);
        // From here on the object is in its stored shape.
        let stored = stored_type(info);
        if meta_str(&obj, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
            // etcd3 storage's plain error, which kube-apiserver reports as a 500.
            return Err(ApiError::new(
                500,
                "InternalError",
                "Internal error occurred: resourceVersion should not be set on objects to be created",
            ));
        }
        let mut g = self.lock();
        let ns = g.check_namespace(info, ns, &mut obj)?;
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
        // Status is the controllers' to write: create resets it (registries' PrepareForCreate),
        // except a Node's: "Nodes allow *all* fields, including status, to be set on create"
        // (the node strategy; it clears only `status.config`).
        if info.has("status") {
            if let Some(o) = obj.as_object_mut() {
                if !info.custom && info.group.is_empty() && info.kind == "Node" {
                    if let Some(status) = o.get_mut("status").and_then(Value::as_object_mut) {
                        status.remove("config");
                    }
                } else {
                    o.remove("status");
                }
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
        let mut alloc = Allocations::of(&g.services);
        server_defaults::on_create(&mut alloc, &stored.api_version(), &stored.kind, &mut obj);
        g.store_custom(info, &name, &mut obj)?;
        g.admit_create(stored, &mut obj)?;
        if webhook::run(&g.webhooks, stored, "CREATE", &mut obj)? {
            g.store_custom(info, &name, &mut obj)?;
        }
        validate_object(stored, &name, &obj)?;
        g.validate_admission(stored, &obj)?;
        let now = now_rfc3339();
        set_meta(&mut obj, "creationTimestamp", json!(now));
        if tracks_generation(info) {
            set_meta(&mut obj, "generation", json!(1));
        }
        if let Some(md) = obj["metadata"].as_object_mut() {
            md.remove("managedFields");
        }
        ctx.record_as(
            info,
            None,
            &mut obj,
            &fields::Write {
                manager: &ctx.manager,
                subresource: None,
                api_version: &info.api_version(),
                time: &now,
            },
        );
        let key: Key = (ns.clone().unwrap_or_default(), name.clone());
        if g.contains(info, &key) {
            return Err(ApiError::already_exists(gr(info), &name));
        }
        if ctx.dry_run {
            return Ok(Written {
                object: obj,
                stored: None,
            });
        }
        let written = Written::stored(g.commit(info, key, Some(obj), "ADDED", ctx.internal));
        if info.kind == "CustomResourceDefinition" && !info.custom {
            g.refresh_crds();
        }
        Ok(written)
    }
}

impl Inner {
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
        let exists = self
            .kinds
            .get("")
            .and_then(|k| k.get("namespaces"))
            .is_some_and(|k| k.objects.contains_key(&(String::new(), ns.to_string())));
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
}

impl Store {
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
        self.write_written(info, ns, name, subresource, ctx, f)
            .map(|w| w.into_value(info))
    }

    /// Like [`Store::write`], keeping the stored bytes for the response.
    pub fn write_written(
        &self,
        info: &ResourceType,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        ctx: &WriteCtx,
        f: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Written, ApiError> {
        let key = object_key(info, ns, name);
        let mut g = self.lock();
        let old_stored = g
            .get(info, ns, name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(gr(info), name))?;
        let new = match Self::update_of(&mut g, info, &key, name, subresource, ctx, &old_stored, f)?
        {
            Update::Unchanged(written) => return Ok(written),
            Update::Changed(new) if ctx.dry_run => {
                return Ok(Written {
                    object: new,
                    stored: None,
                })
            }
            Update::Changed(new) => new,
        };
        // The last finalizer removed from a terminating object completes its deletion.
        let finalized = new.pointer("/metadata/deletionTimestamp").is_some()
            && new
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_none_or(|f| f.is_empty());
        let written = if finalized {
            g.commit(info, key.clone(), Some(new), "MODIFIED", ctx.internal);
            let gone = g.commit(info, key, None, "DELETED", ctx.internal);
            g.cascade(info, &gone.1);
            Written::stored(gone)
        } else {
            Written::stored(g.commit(info, key, Some(new), "MODIFIED", ctx.internal))
        };
        if info.kind == "CustomResourceDefinition" && !info.custom {
            g.refresh_crds();
        }
        Ok(written)
    }

    /// What an update of `old_stored` by `f` stores, through the whole write path
    /// (request form, preconditions, validation, defaults, webhooks, generation,
    /// managedFields), without storing it: the bulk edit prepares modifications with it
    /// ahead of delivering them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn update_of(
        g: &mut Inner,
        info: &ResourceType,
        key: &Key,
        name: &str,
        subresource: Option<&str>,
        ctx: &WriteCtx,
        old_stored: &Arc<Stored>,
        f: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Update, ApiError> {
        let ns_key = key.0.as_str();
        let old = old_stored.value();
        let old_out = if old_stored.serves_as(info) {
            old.clone()
        } else {
            render(info, &old)
        };
        let unchanged = || Written {
            object: old.clone(),
            stored: Some(old_stored.clone()),
        };
        let new = f(&old_out)?;
        // What the caller handed back untouched cannot change anything: the rest of the
        // path (defaults, managedFields) would find a no-op. Controllers rely on this.
        if new == old_out && !ctx.dry_run {
            return Ok(Update::Unchanged(unchanged()));
        }
        let mut new = request_form(info, new)?;
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
        // The resourceVersion precondition is checked before the strategy validates
        // (etcd3 store's GuaranteedUpdate), so a stale write is a 409 whatever its content.
        match meta_str(&new, "resourceVersion") {
            Some(rv) if !rv.is_empty() && Some(rv) != meta_str(&old, "resourceVersion") => {
                return Err(ApiError::conflict(gr(info), name));
            }
            _ => {}
        }
        if !ctx.internal {
            validate_request(info, Some(ns_key), &new)?;
        }
        let mut new = to_storage(info, new);
        let stored = stored_type(info);
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
                    match new.get("metadata").and_then(|m| m.get(f)) {
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
            match old.get("metadata").and_then(|m| m.get(f)) {
                Some(v) => set_meta(&mut new, f, v.clone()),
                None => {
                    new["metadata"].as_object_mut().map(|m| m.remove(f));
                }
            }
        }
        // managedFields: absent or unchanged in the request means "keep the stored ones".
        let requested_mf = new.pointer("/metadata/managedFields");
        let stored_mf = old.pointer("/metadata/managedFields");
        if requested_mf.is_none() || requested_mf == stored_mf {
            match stored_mf {
                Some(mf) => set_meta(&mut new, "managedFields", mf.clone()),
                None => {
                    new["metadata"]
                        .as_object_mut()
                        .map(|m| m.remove("managedFields"));
                }
            }
        }
        let mut alloc = Allocations::of(&g.services);
        server_defaults::on_update(
            &mut alloc,
            &stored.api_version(),
            &stored.kind,
            &old,
            &mut new,
        );
        if subresource.is_none() {
            webhook::run(&g.webhooks, stored, "UPDATE", &mut new)?;
        }
        g.store_custom(info, name, &mut new)?;
        validate_object(stored, name, &new)?;
        if tracks_generation(info) && !same_spec(&new, &old) {
            let gen = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            set_meta(&mut new, "generation", json!(gen + 1));
        }
        ctx.record_as(
            info,
            Some(&old),
            &mut new,
            &fields::Write {
                manager: &ctx.manager,
                subresource,
                api_version: &info.api_version(),
                time: &now_rfc3339(),
            },
        );
        if ctx.dry_run {
            return Ok(Update::Changed(new));
        }
        if same_but_bookkeeping(&new, &old) {
            return Ok(Update::Unchanged(unchanged()));
        }
        Ok(Update::Changed(new))
    }
}
