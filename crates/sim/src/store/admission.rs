//! kube-apiserver's default admission chain on create ([`driftd_k8s::admission`]): what a
//! Pod, PersistentVolumeClaim or Ingress read back shows that its manifest did not say
//! (LimitRanger's resources, the ServiceAccount plugin's token volume and mounts,
//! DefaultTolerationSeconds, Priority, the default StorageClass and IngressClass), and the
//! creates the chain refuses (`403 Forbidden`). The facts the plugins read come from the
//! stored objects, as the plugins' informers see them.

use super::super::status::{ApiError, Gr};
use super::{gr, Inner};
use driftd_k8s::admission::{self, token_volume_name, AdmissionFacts, Refusal};
use driftd_k8s::kinds::ResourceType;
use rand::Rng;
use serde_json::Value;

/// Kinds the default chain looks at (the rest pass without reading any facts).
const ADMITTED: &[(&str, &str)] = &[
    ("", "Pod"),
    ("", "PersistentVolumeClaim"),
    ("networking.k8s.io", "Ingress"),
    ("scheduling.k8s.io", "PriorityClass"),
];

/// `admission.NewForbidden`: `<resource> "<name>" is forbidden: <reason>`.
fn forbidden(gr: Gr, name: &str, refusal: Refusal) -> ApiError {
    ApiError {
        details: Some(gr.details(name)),
        ..ApiError::new(
            403,
            "Forbidden",
            format!("{} \"{name}\" is forbidden: {refusal}", gr.qualified()),
        )
    }
}

fn admitted(info: &ResourceType) -> bool {
    !info.custom
        && ADMITTED
            .iter()
            .any(|(g, k)| *g == info.group && *k == info.kind)
}

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl Inner {
    /// Runs the mutating half of the chain on an object being created through `info`.
    pub(super) fn admit_create(
        &self,
        info: &ResourceType,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        if !admitted(info) {
            return Ok(());
        }
        let facts = self.admission_facts(&info.kind, obj);
        let mut r = rand::rng();
        let volume = token_volume_name(|n| r.random_range(0..n));
        admission::mutate(&info.kind, obj, &facts, &volume)
            .map_err(|refusal| forbidden(gr(info), name_of(obj), refusal))
    }

    /// Runs the validating half of the chain on a created object that passed validation.
    pub(super) fn validate_admission(
        &self,
        info: &ResourceType,
        obj: &Value,
    ) -> Result<(), ApiError> {
        if !admitted(info) {
            return Ok(());
        }
        let facts = self.admission_facts(&info.kind, obj);
        admission::validate(&info.kind, obj, &facts)
            .map_err(|refusal| forbidden(gr(info), name_of(obj), refusal))
    }

    /// The stored objects the plugins for `kind` read: the classes, the namespace's
    /// LimitRanges, the pod's ServiceAccount.
    fn admission_facts(&self, kind: &str, obj: &Value) -> AdmissionFacts {
        let stored = |group: &str, plural: &str| {
            self.kinds
                .get(group)
                .and_then(|k| k.get(plural))
                .map(|k| &k.objects)
        };
        let all = |group: &str, plural: &str| -> Vec<Value> {
            stored(group, plural)
                .into_iter()
                .flat_map(|objects| objects.values().map(|o| o.value()))
                .collect()
        };
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let in_namespace = |plural: &str| -> Vec<Value> {
            stored("", plural)
                .into_iter()
                .flat_map(|objects| {
                    objects
                        .range((ns.clone(), String::new())..)
                        .take_while(|((n, _), _)| *n == ns)
                        .map(|(_, o)| o.value())
                })
                .collect()
        };
        let mut objects = Vec::new();
        match kind {
            "Pod" => {
                objects.extend(all("scheduling.k8s.io", "priorityclasses"));
                objects.extend(in_namespace("limitranges"));
                let account = ["serviceAccountName", "serviceAccount"]
                    .iter()
                    .filter_map(|f| obj.pointer(&format!("/spec/{f}")).and_then(Value::as_str))
                    .find(|a| !a.is_empty())
                    .unwrap_or(admission::DEFAULT_SERVICE_ACCOUNT);
                if let Some(sa) = stored("", "serviceaccounts")
                    .and_then(|objects| objects.get(&(ns.clone(), account.to_string())))
                {
                    objects.push(sa.value());
                }
            }
            "PersistentVolumeClaim" => {
                objects.extend(all("storage.k8s.io", "storageclasses"));
                objects.extend(in_namespace("limitranges"));
            }
            "Ingress" => objects.extend(all("networking.k8s.io", "ingressclasses")),
            "PriorityClass" => objects.extend(all("scheduling.k8s.io", "priorityclasses")),
            _ => {}
        }
        AdmissionFacts::from_objects(&objects)
    }
}

#[cfg(test)]
mod tests;
