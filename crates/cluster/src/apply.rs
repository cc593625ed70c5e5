//! Writing committed desired state back to the cluster: server-side apply with field
//! manager `driftd` in plan order (`driftd_core::plan`), waiting before each object until
//! what it depends on is current (`driftd_k8s::rollout`), and deletes for `--prune`. The
//! one place that writes objects: `driftd reconcile --apply` and the daemon's remediation
//! both call it.
//!
//! Conflicts are not forced unless asked: another manager owning a field with another value
//! is answered `409 Conflict` by kube-apiserver (`FieldManagerConflict` causes naming the
//! field and the manager, staging/src/k8s.io/apimachinery/pkg/util/managedfields/internal/
//! conflict.go), and reported so.

use driftd_k8s::rollout::{readiness, Readiness};
use driftd_k8s::ObjectKey;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
};
use kube::discovery::Scope;
use kube::Client;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

#[cfg(test)]
mod tests;

/// The field manager of everything driftd writes (and of its dry runs).
pub use crate::dry_run_task::FIELD_MANAGER;

/// One field another manager owns with another value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The field as kube-apiserver names it (`.spec.replicas`).
    pub field: String,
    pub manager: String,
}

/// Why writing one object failed. Messages name the object, never a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApplyError {
    #[error("{object}: conflict with another field manager: {} (apply with --force-conflicts to take these fields over)", render_conflicts(.conflicts))]
    Conflict {
        object: Box<ObjectKey>,
        conflicts: Vec<Conflict>,
    },
    #[error("{object}: the API server refused it: {message}")]
    Rejected {
        object: Box<ObjectKey>,
        message: String,
    },
    #[error("{object}: not current after {}s: {waiting}", .timeout.as_secs())]
    Timeout {
        object: Box<ObjectKey>,
        timeout: Duration,
        waiting: String,
    },
    #[error("{object}: {reason}")]
    NotCurrent {
        object: Box<ObjectKey>,
        reason: String,
    },
    #[error("{object}: {message}")]
    Failed {
        object: Box<ObjectKey>,
        message: String,
    },
}

impl ApplyError {
    /// The object the error is about.
    pub fn object(&self) -> &ObjectKey {
        match self {
            ApplyError::Conflict { object, .. }
            | ApplyError::Rejected { object, .. }
            | ApplyError::Timeout { object, .. }
            | ApplyError::NotCurrent { object, .. }
            | ApplyError::Failed { object, .. } => object.as_ref(),
        }
    }
}

fn render_conflicts(conflicts: &[Conflict]) -> String {
    conflicts
        .iter()
        .map(|c| format!("{} is owned by {:?}", c.field, c.manager))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The conflicts a `409` apply answer lists (`details.causes` of reason
/// `FieldManagerConflict`, message `conflict with "MANAGER" using VERSION`).
pub fn conflicts(status: &kube::core::Status) -> Vec<Conflict> {
    let Some(details) = &status.details else {
        return Vec::new();
    };
    details
        .causes
        .iter()
        .filter(|c| c.reason == "FieldManagerConflict")
        .map(|c| {
            let manager = c
                .message
                .strip_prefix("conflict with ")
                .map(|rest| rest.split(" using ").next().unwrap_or(rest))
                .unwrap_or(&c.message)
                .trim_matches('"')
                .to_string();
            Conflict {
                field: c.field.clone(),
                manager,
            }
        })
        .collect()
}

/// How to write.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// Take over fields other managers own (`force=true`).
    pub force_conflicts: bool,
    /// How long to wait for one dependency to become current.
    pub timeout: Duration,
    /// How often to look again while waiting.
    pub poll: Duration,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            force_conflicts: false,
            timeout: Duration::from_secs(300),
            poll: Duration::from_millis(500),
        }
    }
}

/// One object to write, in plan order, with the objects to wait for first.
#[derive(Debug, Clone)]
pub struct ApplyStep {
    pub key: ObjectKey,
    pub api_version: String,
    /// The committed manifest, Secret values in clear; `None` to only wait for it (an
    /// object in sync whose dependents are written).
    pub manifest: Option<Value>,
    pub depends_on: Vec<ObjectKey>,
}

/// What happened to one step, for the caller's output.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    Waiting {
        object: ObjectKey,
        for_: ObjectKey,
    },
    Applied {
        object: ObjectKey,
        resource_version: String,
    },
}

/// The cluster, through a kube client, with resolved kinds cached.
pub struct Cluster {
    client: Client,
    by_version: HashMap<(String, String), (ApiResource, Scope)>,
    by_group_kind: HashMap<(String, String), (ApiResource, Scope)>,
}

impl Cluster {
    pub fn new(client: Client) -> Cluster {
        Cluster {
            client,
            by_version: HashMap::new(),
            by_group_kind: HashMap::new(),
        }
    }

    /// The resource of `api_version`/`kind`; `None` while the cluster does not serve it (a
    /// custom resource before its CRD), which is not cached.
    async fn resource(
        &mut self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<(ApiResource, Scope)>, String> {
        let k = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.by_version.get(&k) {
            return Ok(Some(found.clone()));
        }
        let (group, version) = driftd_k8s::kinds::split_api_version(api_version);
        let gvk = GroupVersionKind::gvk(group, version, kind);
        match kube::discovery::pinned_kind(&self.client, &gvk).await {
            Ok((resource, caps)) => {
                self.by_version
                    .insert(k, (resource.clone(), caps.scope.clone()));
                Ok(Some((resource, caps.scope)))
            }
            Err(kube::Error::Discovery(_)) => Ok(None),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
            Err(e) => Err(format!("cannot reach the cluster: {e}")),
        }
    }

    /// [`Cluster::resource`], which must be served.
    async fn served(
        &mut self,
        key: &ObjectKey,
        api_version: &str,
    ) -> Result<(ApiResource, Scope), ApplyError> {
        match self.resource(api_version, &key.kind).await {
            Ok(Some(found)) => Ok(found),
            Ok(None) => Err(ApplyError::Failed {
                object: Box::new(key.clone()),
                message: format!("the cluster does not serve {} in {api_version}", key.kind),
            }),
            Err(message) => Err(ApplyError::Failed {
                object: Box::new(key.clone()),
                message,
            }),
        }
    }

    /// The preferred resource of a group and kind; `None` when the cluster serves no such
    /// kind (then no object of it exists), which is not cached: a CRD may come.
    async fn resource_of(
        &mut self,
        group: &str,
        kind: &str,
    ) -> Result<Option<(ApiResource, Scope)>, String> {
        let k = (group.to_string(), kind.to_string());
        if let Some(found) = self.by_group_kind.get(&k) {
            return Ok(Some(found.clone()));
        }
        let found = match kube::discovery::group(&self.client, group).await {
            Ok(g) => g.recommended_kind(kind).map(|(r, caps)| (r, caps.scope)),
            Err(kube::Error::Discovery(_)) => None,
            Err(e) => return Err(format!("cannot reach the cluster: {e}")),
        };
        if let Some(found) = &found {
            self.by_group_kind.insert(k, found.clone());
        }
        Ok(found)
    }

    fn api(&self, resource: &ApiResource, scope: &Scope, key: &ObjectKey) -> Api<DynamicObject> {
        match (scope, &key.namespace) {
            (Scope::Namespaced, Some(ns)) => {
                Api::namespaced_with(self.client.clone(), ns, resource)
            }
            _ => Api::all_with(self.client.clone(), resource),
        }
    }

    /// The live object, `None` if it does not exist; through `api_version` when known, else
    /// the group's preferred version.
    pub async fn get(
        &mut self,
        key: &ObjectKey,
        api_version: Option<&str>,
    ) -> Result<Option<Value>, String> {
        let found = match api_version {
            Some(v) => self.resource(v, &key.kind).await?,
            None => self.resource_of(&key.group, &key.kind).await?,
        };
        let Some((resource, scope)) = found else {
            return Ok(None);
        };
        match self.api(&resource, &scope, key).get_opt(&key.name).await {
            Ok(found) => Ok(found.map(|o| with_type(o, &resource))),
            Err(e) => Err(format!("cannot read {key}: {e}")),
        }
    }

    /// Server-side applies `manifest` as field manager `driftd`.
    pub async fn apply(
        &mut self,
        key: &ObjectKey,
        api_version: &str,
        manifest: &Value,
        force: bool,
    ) -> Result<Value, ApplyError> {
        let failed = |message: String| ApplyError::Failed {
            object: Box::new(key.clone()),
            message,
        };
        let (resource, scope) = self.served(key, api_version).await?;
        let mut params = PatchParams::apply(FIELD_MANAGER);
        if force {
            params = params.force();
        }
        let mut body = manifest.clone();
        // What the server owns is not the caller's to apply (resourceVersion would turn the
        // apply into a precondition; status and managedFields are refused or ignored).
        if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in [
                "resourceVersion",
                "managedFields",
                "uid",
                "creationTimestamp",
                "generation",
            ] {
                meta.remove(k);
            }
        }
        match self
            .api(&resource, &scope, key)
            .patch(&key.name, &params, &Patch::Apply(&body))
            .await
        {
            Ok(o) => Ok(with_type(o, &resource)),
            Err(kube::Error::Api(status))
                if status.code == 409 && !conflicts(&status).is_empty() =>
            {
                Err(ApplyError::Conflict {
                    object: Box::new(key.clone()),
                    conflicts: conflicts(&status),
                })
            }
            Err(kube::Error::Api(status))
                if (400..500).contains(&status.code)
                    && status.code != 408
                    && status.code != 429 =>
            {
                Err(ApplyError::Rejected {
                    object: Box::new(key.clone()),
                    message: status.message.clone(),
                })
            }
            Err(e) => Err(failed(e.to_string())),
        }
    }

    /// Deletes the object (foreground propagation is the server's default for the kind);
    /// `false` when it was already gone.
    pub async fn delete(&mut self, key: &ObjectKey, api_version: &str) -> Result<bool, ApplyError> {
        let failed = |message: String| ApplyError::Failed {
            object: Box::new(key.clone()),
            message,
        };
        let (resource, scope) = self.served(key, api_version).await?;
        match self
            .api(&resource, &scope, key)
            .delete(&key.name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
            Err(e) => Err(failed(e.to_string())),
        }
    }

    /// Waits until the object exists and is current, up to `options.timeout`.
    pub async fn wait_current(
        &mut self,
        key: &ObjectKey,
        api_version: Option<&str>,
        options: &ApplyOptions,
    ) -> Result<(), ApplyError> {
        let deadline = Instant::now() + options.timeout;
        loop {
            let waiting = match self.get(key, api_version).await {
                Ok(Some(live)) => match readiness(&key.group, &key.kind, &live) {
                    Readiness::Current => return Ok(()),
                    Readiness::Failed(reason) => {
                        return Err(ApplyError::NotCurrent {
                            object: Box::new(key.clone()),
                            reason,
                        })
                    }
                    Readiness::InProgress(why) => why,
                },
                Ok(None) => "it does not exist".to_string(),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(ApplyError::Timeout {
                    object: Box::new(key.clone()),
                    timeout: options.timeout,
                    waiting,
                });
            }
            tokio::time::sleep(options.poll).await;
        }
    }

    /// Writes `steps` in order, each after its dependencies are current (each one checked
    /// once); stops at the first error, reporting what was done through `progress`.
    pub async fn apply_in_order(
        &mut self,
        steps: &[ApplyStep],
        options: &ApplyOptions,
        mut progress: impl FnMut(Progress),
    ) -> Result<(), ApplyError> {
        let versions: HashMap<&ObjectKey, &str> = steps
            .iter()
            .map(|s| (&s.key, s.api_version.as_str()))
            .collect();
        let mut current: HashSet<ObjectKey> = HashSet::new();
        for step in steps {
            for dep in &step.depends_on {
                if current.contains(dep) {
                    continue;
                }
                progress(Progress::Waiting {
                    object: step.key.clone(),
                    for_: dep.clone(),
                });
                self.wait_current(dep, versions.get(dep).copied(), options)
                    .await?;
                current.insert(dep.clone());
            }
            if let Some(manifest) = &step.manifest {
                let applied = self
                    .apply(
                        &step.key,
                        &step.api_version,
                        manifest,
                        options.force_conflicts,
                    )
                    .await?;
                progress(Progress::Applied {
                    object: step.key.clone(),
                    resource_version: applied
                        .pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                });
            }
        }
        Ok(())
    }
}

/// A dynamic object as JSON with its apiVersion and kind (the API omits them in places).
pub(crate) fn with_type(object: DynamicObject, resource: &ApiResource) -> Value {
    let mut value = serde_json::to_value(object).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| resource.api_version.clone().into());
        map.entry("kind")
            .or_insert_with(|| resource.kind.clone().into());
    }
    value
}
