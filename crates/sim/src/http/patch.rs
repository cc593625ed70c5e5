//! Patches (JSON merge, JSON patch, strategic merge) and the `scale` subresource, whose
//! `Scale` object is a view of a workload's replicas.

use crate::status::ApiError;
use crate::store::{Store, WriteCtx};
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Map, Value};

pub(super) fn write_scale(
    store: &Store,
    info: &ResourceType,
    ns: Option<&str>,
    name: &str,
    ctx: &WriteCtx,
    f: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let updated = store.write(info, ns, name, Some("scale"), ctx, move |old| {
        let scale = f(&scale_of(old))?;
        let replicas = scale
            .pointer("/spec/replicas")
            .cloned()
            .ok_or_else(|| ApiError::bad_request("Scale spec.replicas is required"))?;
        let mut new = old.clone();
        new["spec"]["replicas"] = replicas;
        if let Some(rv) = scale.pointer("/metadata/resourceVersion") {
            new["metadata"]["resourceVersion"] = rv.clone();
        } else if let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            md.remove("resourceVersion");
        }
        Ok(new)
    })?;
    Ok(scale_of(&updated))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PatchType {
    Merge,
    Json,
    Strategic,
}

impl PatchType {
    pub(super) fn from_content_type(
        ctype: &str,
        info: &ResourceType,
    ) -> Result<PatchType, ApiError> {
        let accepted = if info.custom {
            "application/json-patch+json, application/merge-patch+json"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json"
        };
        match ctype {
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/json-patch+json" => Ok(PatchType::Json),
            // Custom resources have no Go struct to read merge keys from, so kube-apiserver
            // refuses strategic merge patches for them with 415.
            "application/strategic-merge-patch+json"
                if !info.custom && crate::smp::supported(&info.api_version(), &info.kind) =>
            {
                Ok(PatchType::Strategic)
            }
            _ => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!("the body of the request was in an unknown format - accepted media types include: {accepted}"),
            )),
        }
    }

    pub(super) fn apply(self, kind: &str, old: &Value, patch: &Value) -> Result<Value, ApiError> {
        match self {
            PatchType::Merge => {
                let mut doc = old.clone();
                json_patch::merge(&mut doc, patch);
                Ok(doc)
            }
            PatchType::Json => {
                let ops: json_patch::Patch =
                    serde_json::from_value(patch.clone()).map_err(|e| {
                        ApiError::bad_request(format!("error decoding json patch: {e}"))
                    })?;
                let mut doc = old.clone();
                json_patch::patch(&mut doc, &ops)
                    .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
                Ok(doc)
            }
            PatchType::Strategic => {
                crate::smp::apply(kind, old, patch).map_err(|e| ApiError::bad_request(e.0))
            }
        }
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
