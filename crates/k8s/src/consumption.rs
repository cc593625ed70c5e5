//! Which Secrets and ConfigMaps a pod (or a pod template's `spec`) reads, and how: what
//! decides whether a running pod still sees a config's old content after it changed.
//!
//! The references are those kube-apiserver's own walkers visit (`pkg/api/v1/pod/util.go`,
//! `VisitPodSecretNames` / `VisitPodConfigmapNames`): `env[].valueFrom.secretKeyRef` /
//! `configMapKeyRef`, `envFrom[].secretRef` / `configMapRef`, `volumes[].secret.secretName`,
//! `volumes[].configMap.name` and the `secret` / `configMap` sources of `projected` volumes,
//! in `initContainers`, `containers` and `ephemeralContainers`. The kubelet resolves env
//! once, when the container starts; it refreshes a mounted Secret/ConfigMap volume after its
//! sync period, except through a `subPath` (or `subPathExpr`) mount, which is a bind mount of
//! one file taken at start and never updated (kubelet `volume_manager`, documented under
//! "Mounted ConfigMaps are updated automatically" / "using a ConfigMap as subPath volume
//! will not receive updates").

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The two kinds a pod can read configuration from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ConfigKind {
    Secret,
    ConfigMap,
}

impl ConfigKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            ConfigKind::Secret => "Secret",
            ConfigKind::ConfigMap => "ConfigMap",
        }
    }

    /// The kind named `kind` (`Secret`, `ConfigMap`), if it is one.
    pub fn parse(kind: &str) -> Option<ConfigKind> {
        match kind {
            "Secret" => Some(ConfigKind::Secret),
            "ConfigMap" => Some(ConfigKind::ConfigMap),
            _ => None,
        }
    }
}

/// A Secret or ConfigMap in the pod's namespace (pods can read no other).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ConfigRef {
    pub kind: ConfigKind,
    pub name: String,
}

impl std::fmt::Display for ConfigRef {
    /// `Secret/NAME`, `ConfigMap/NAME`: how metrics and reports name it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind.as_str(), self.name)
    }
}

/// How a container reads a config: this decides whether a change reaches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Via {
    /// `env[].valueFrom`: read once at container start.
    Env,
    /// `envFrom[]`: read once at container start.
    EnvFrom,
    /// A volume mounted through `subPath`/`subPathExpr`: a file copied at start, never updated.
    SubPath,
    /// A whole volume mount: the kubelet refreshes it after its sync period.
    Volume,
}

impl Via {
    pub fn as_str(&self) -> &'static str {
        match self {
            Via::Env => "env",
            Via::EnvFrom => "envFrom",
            Via::SubPath => "subPath",
            Via::Volume => "volume",
        }
    }

    /// Whether the kubelet brings a change to the running container by itself.
    pub fn refreshed_by_kubelet(&self) -> bool {
        matches!(self, Via::Volume)
    }
}

/// One reading of one config by one container.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Consumption {
    pub config: ConfigRef,
    pub via: Via,
    pub container: String,
    /// The reference is `optional: true`: the pod starts without the config.
    pub optional: bool,
}

/// The container lists of a pod spec, in the order the kubelet starts them.
const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// Every Secret/ConfigMap reading in pod spec `spec` (a Pod's `spec`, or a workload's
/// `spec.template.spec`), ordered. A volume no container mounts is not read by anyone and
/// yields nothing.
pub fn consumed(spec: &Value) -> Vec<Consumption> {
    let volumes = volume_sources(spec);
    let mut out = Vec::new();
    for list in CONTAINER_LISTS {
        for container in items(spec, list) {
            let name = text(container, "name").unwrap_or_default().to_string();
            let mut push = |config: ConfigRef, via: Via, optional: bool| {
                out.push(Consumption {
                    config,
                    via,
                    container: name.clone(),
                    optional,
                })
            };
            for env in items(container, "env") {
                let from = env.get("valueFrom");
                for (field, kind) in [
                    ("secretKeyRef", ConfigKind::Secret),
                    ("configMapKeyRef", ConfigKind::ConfigMap),
                ] {
                    if let Some((config, optional)) = from.and_then(|f| reference(f, field, kind)) {
                        push(config, Via::Env, optional);
                    }
                }
            }
            for env_from in items(container, "envFrom") {
                for (field, kind) in [
                    ("secretRef", ConfigKind::Secret),
                    ("configMapRef", ConfigKind::ConfigMap),
                ] {
                    if let Some((config, optional)) = reference(env_from, field, kind) {
                        push(config, Via::EnvFrom, optional);
                    }
                }
            }
            for mount in items(container, "volumeMounts") {
                let Some(sources) = text(mount, "name").and_then(|n| volumes.get(n)) else {
                    continue;
                };
                let sub_path = ["subPath", "subPathExpr"]
                    .iter()
                    .any(|f| text(mount, f).is_some_and(|p| !p.is_empty()));
                let via = if sub_path { Via::SubPath } else { Via::Volume };
                for (config, optional) in sources {
                    push(config.clone(), via, *optional);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The configs behind each volume of `spec`, by volume name.
fn volume_sources(spec: &Value) -> BTreeMap<&str, Vec<(ConfigRef, bool)>> {
    let mut out: BTreeMap<&str, Vec<(ConfigRef, bool)>> = BTreeMap::new();
    for volume in items(spec, "volumes") {
        let Some(name) = text(volume, "name") else {
            continue;
        };
        let mut sources = Vec::new();
        if let Some(secret) = volume.get("secret") {
            if let Some(n) = text(secret, "secretName").filter(|n| !n.is_empty()) {
                sources.push((config(ConfigKind::Secret, n), is_optional(secret)));
            }
        }
        sources.extend(reference(volume, "configMap", ConfigKind::ConfigMap));
        for source in volume
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            sources.extend(reference(source, "secret", ConfigKind::Secret));
            sources.extend(reference(source, "configMap", ConfigKind::ConfigMap));
        }
        if !sources.is_empty() {
            out.insert(name, sources);
        }
    }
    out
}

/// `object[field]` as a `{name, optional}` reference to a config of `kind`.
fn reference(object: &Value, field: &str, kind: ConfigKind) -> Option<(ConfigRef, bool)> {
    let r = object.get(field)?;
    let name = text(r, "name").filter(|n| !n.is_empty())?;
    Some((config(kind, name), is_optional(r)))
}

fn config(kind: ConfigKind, name: &str) -> ConfigRef {
    ConfigRef {
        kind,
        name: name.to_string(),
    }
}

fn is_optional(r: &Value) -> bool {
    r.get("optional").and_then(Value::as_bool).unwrap_or(false)
}

fn items<'a>(object: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    object
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn text<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object.get(field).and_then(Value::as_str)
}

#[cfg(test)]
mod tests;
