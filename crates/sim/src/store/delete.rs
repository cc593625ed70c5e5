//! Deletion: preconditions, finalizers (a deletionTimestamp until they are gone), and the
//! garbage collector's work done at once: dependents found through the owner index
//! (deleted, or orphaned with `propagationPolicy=Orphan`), a namespace's contents, a CRD's
//! custom resources.

use super::super::status::ApiError;
use super::object::{meta_str, object_key, set_meta, storage_of, Key, StorageKey};
use super::{gr, now_rfc3339, Inner, Store};
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

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

impl Store {
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
            .map(|s| s.value())
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
                object: Store::render(info, &old),
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
                    object: Store::render(info, &old),
                    gone: false,
                });
            }
            let mut terminating = old.clone();
            set_meta(&mut terminating, "deletionTimestamp", json!(now_rfc3339()));
            set_meta(&mut terminating, "deletionGracePeriodSeconds", json!(0));
            let (_, stored) = g.commit(info, key, Some(terminating), "MODIFIED", false);
            return Ok(Deletion {
                object: Store::render(info, &stored),
                gone: false,
            });
        }
        let (_, deleted) = g.commit(info, key, None, "DELETED", false);
        if opts.propagation.as_deref() == Some("Orphan") {
            g.orphan(meta_str(&deleted, "uid").unwrap_or(""));
        } else {
            g.cascade(info, &deleted);
        }
        if info.kind == "CustomResourceDefinition" && !info.custom {
            g.refresh_crds();
        }
        Ok(Deletion {
            object: Store::render(info, &deleted),
            gone: true,
        })
    }
}

impl Inner {
    /// The stored objects `uid` owns, in the order of the served types.
    fn dependents_of(&self, uid: &str) -> Vec<(ResourceType, Key)> {
        let Some(set) = self.dependents.get(uid) else {
            return Vec::new();
        };
        self.in_type_order(set.iter().cloned())
    }

    /// Orders objects by the type they are served through first (built-ins before CRDs),
    /// then by key, as a garbage collector walking the types would meet them.
    fn in_type_order(
        &self,
        objects: impl Iterator<Item = (Arc<StorageKey>, Key)>,
    ) -> Vec<(ResourceType, Key)> {
        let rank = |s: &StorageKey| {
            self.types
                .iter()
                .position(|t| {
                    let (g, p) = storage_of(t);
                    s.0 == g && s.1 == p
                })
                .unwrap_or(usize::MAX)
        };
        let mut out: Vec<(usize, Arc<StorageKey>, Key)> =
            objects.map(|(s, k)| (rank(&s), s, k)).collect();
        out.sort();
        out.dedup();
        out.into_iter()
            .filter_map(|(_, s, k)| Some((self.type_of(&s)?.clone(), k)))
            .collect()
    }

    /// Removes owner references to `uid` from every dependent (orphan propagation).
    pub(super) fn orphan(&mut self, uid: &str) {
        for (t, key) in self.dependents_of(uid) {
            let Some(obj) = self
                .kind(&t)
                .and_then(|k| k.objects.get(&key))
                .map(|s| s.value())
            else {
                continue;
            };
            let kept: Vec<Value> = obj
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| r.get("uid").and_then(Value::as_str) != Some(uid))
                .cloned()
                .collect();
            let mut o = obj;
            if kept.is_empty() {
                o["metadata"]
                    .as_object_mut()
                    .map(|m| m.remove("ownerReferences"));
            } else {
                o["metadata"]["ownerReferences"] = Value::Array(kept);
            }
            self.commit(&t, key, Some(o), "MODIFIED", false);
        }
    }

    /// Deletes what goes with `deleted`: its dependents, a namespace's objects, a CRD's
    /// custom resources; and theirs in turn.
    pub(super) fn cascade(&mut self, info: &ResourceType, deleted: &Value) {
        let uid = meta_str(deleted, "uid").unwrap_or("").to_string();
        let name = meta_str(deleted, "name").unwrap_or("").to_string();
        let mut doomed: BTreeSet<(Arc<StorageKey>, Key)> = BTreeSet::new();
        if let Some(set) = self.dependents.get(uid.as_str()) {
            doomed.extend(set.iter().cloned());
        }
        if info.kind == "Namespace" && !info.custom {
            for t in self.types.iter().filter(|t| t.namespaced) {
                let Some(kind) = self.kind(t) else { continue };
                let from = (name.clone(), String::new());
                doomed.extend(
                    kind.objects
                        .range(from..)
                        .take_while(|(k, _)| k.0 == name)
                        .map(|(k, _)| (kind.id.clone(), k.clone())),
                );
            }
        }
        if info.kind == "CustomResourceDefinition" && !info.custom {
            let str_at = |p: &str| deleted.pointer(p).and_then(Value::as_str).unwrap_or("");
            let (group, plural) = (str_at("/spec/group"), str_at("/spec/names/plural"));
            if let Some(kind) = self.kinds.get(group).and_then(|k| k.get(plural)) {
                doomed.extend(kind.objects.keys().map(|k| (kind.id.clone(), k.clone())));
            }
        }
        for (t, key) in self.in_type_order(doomed.into_iter()) {
            if self.contains(&t, &key) {
                let (_, gone) = self.commit(&t, key, None, "DELETED", false);
                self.cascade(&t, &gone);
            }
        }
    }
}
