//! Server-side apply (`application/apply-patch+yaml`): field ownership, conflicts worded
//! like kube-apiserver's field manager, and removal of fields a manager stops applying.

use super::super::fields;
use super::super::status::ApiError;
use super::object::meta_str;
use super::object::set_meta;
use super::validate::check_type;
use super::{ApplyPlan, Store, WriteCtx};
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

impl Store {
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
