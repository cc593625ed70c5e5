//! Types defined by CustomResourceDefinitions: served once a CRD is stored, with the
//! printer columns `kubectl get` shows for them; their objects stored as
//! apiextensions-apiserver stores them (pruned, defaulted, list types validated: see
//! [`Inner::store_custom`]).

use super::super::status::ApiError;
use super::object::{to_bytes, Stored};
use super::{Inner, Store};
use axum::body::Bytes;
use driftd_k8s::crd::{listtype, CrdSchemas};
use driftd_k8s::field_labels::FieldLabels;
use driftd_k8s::kinds::{CustomResourceTypes, ResourceType, BUILTIN};
use serde_json::Value;
use std::sync::Arc;

/// The built-in types served: each kind's preferred version, then the other versions kube
/// serves by default that driftd converts to and from it (autoscaling/v1
/// HorizontalPodAutoscalers), after them so discovery names the preferred one first.
pub(super) fn builtin_types() -> Vec<ResourceType> {
    let mut types = BUILTIN.clone();
    types.extend(driftd_k8s::convert::also_served().cloned());
    types
}

/// The types a CustomResourceDefinition object makes servable (one per served version).
fn crd_types(crd: &Value) -> Vec<ResourceType> {
    CustomResourceTypes::read(crd)
        .map(|t| t.served().cloned().collect())
        .unwrap_or_default()
}

impl Inner {
    /// Re-reads the servable types after a CRD changed.
    pub(super) fn refresh_crds(&mut self) {
        let mut types = builtin_types();
        let mut schemas = std::collections::HashMap::new();
        let crds = self
            .kinds
            .get("apiextensions.k8s.io")
            .and_then(|k| k.get("customresourcedefinitions"));
        for crd in crds.into_iter().flat_map(|k| k.objects.values()) {
            let crd = crd.value();
            types.extend(crd_types(&crd));
            // A CRD without structural schemas stores its objects as sent.
            if let Ok(s) = CrdSchemas::from_crd(&crd) {
                schemas.insert(s.key(), Arc::new(s));
            }
        }
        self.types = Arc::new(types);
        let changed: Vec<Arc<CrdSchemas>> = schemas
            .iter()
            .filter(|(k, s)| self.crd_schemas.get(*k) != Some(*s))
            .map(|(_, s)| s.clone())
            .collect();
        self.crd_schemas = schemas;
        for crd in changed {
            self.reread_custom(&crd);
        }
    }

    /// What kube-apiserver does on every read of a custom resource, done once when its CRD
    /// changes: each stored object becomes what a read at its version returns now
    /// ([`CrdSchemas::as_read`]: pruned and defaulted through the storage version's schema,
    /// pruned by its own), so a `default:` the CRD gained shows on GET, LIST and in watch
    /// events from now on. The resourceVersion stays and no watch event is sent: storage
    /// was not written, reads just decode it differently.
    fn reread_custom(&mut self, crd: &CrdSchemas) {
        let Some(kind) = self
            .types
            .iter()
            .find(|t| t.custom && t.group == crd.group && t.kind == crd.kind)
        else {
            return;
        };
        let (group, plural) = (kind.group.clone(), kind.plural.clone());
        let Some(objects) = self
            .kinds
            .get_mut(&group)
            .and_then(|k| k.get_mut(&plural))
            .map(|k| &mut k.objects)
        else {
            return;
        };
        let mut delta: isize = 0;
        for stored in objects.values_mut() {
            let before = stored.value();
            let version = driftd_k8s::kinds::split_api_version(&stored.api_version).1;
            let mut after = before.clone();
            if crd.as_read(&mut after, version).is_err() {
                continue;
            }
            let renditions = read_at_other_versions(crd, version, &after);
            if after == before && renditions == stored.renditions {
                continue;
            }
            let fresh = Stored::new(
                stored.rv,
                stored.key.clone(),
                &after,
                stored.api_version.clone(),
            )
            .with_renditions(renditions);
            delta += fresh.json_len() as isize - stored.json_len() as isize;
            *stored = Arc::new(fresh);
        }
        self.bytes = self.bytes.saturating_add_signed(delta);
    }

    /// A custom resource written through `info` as kube-apiserver's customresource handler
    /// stores it: pruned and defaulted by the written version's schema, stored in the
    /// storage version (`None` conversion: pruned and defaulted by its schema too), and
    /// served back at the written version; sets and map-lists with repeated items refused
    /// as `listtype.ValidateListSetsAndMaps` refuses them (422 Invalid).
    pub(super) fn store_custom(
        &self,
        info: &ResourceType,
        name: &str,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        if !info.custom {
            return Ok(());
        }
        let Some(crd) = self
            .crd_schemas
            .get(&(info.group.clone(), info.kind.clone()))
        else {
            return Ok(());
        };
        obj["apiVersion"] = Value::String(info.api_version());
        // A version the CRD does not define is not served: the request never gets here.
        let _ = crd.as_served(obj);
        let schema = crd.version(&info.version).and_then(|v| v.schema.as_ref());
        let errors = match obj.as_object() {
            Some(m) => listtype::validate("", schema, m),
            None => Vec::new(),
        };
        if errors.is_empty() {
            return Ok(());
        }
        let causes: Vec<String> = errors
            .iter()
            .map(|e| e.to_string().trim_start_matches('.').to_string())
            .collect();
        let first = &causes[0];
        let (field, detail) = first.split_once(": ").unwrap_or((first.as_str(), ""));
        let mut err = ApiError::invalid(&info.group, &info.kind, name, field, detail);
        if causes.len() > 1 {
            // kube-apiserver joins every cause into one message: `[a, b]`.
            let gk = format!("{}.{}", info.kind, info.group);
            err.message = format!("{gk} \"{name}\" is invalid: [{}]", causes.join(", "));
        }
        Err(err)
    }
}

/// `object` (stored at `version`) as reads at the CRD's other served versions return it:
/// converted (`None` strategy: the apiVersion) and pruned by that version's schema
/// ([`CrdSchemas::as_read`]), as kube-apiserver's `schemaCoercingConverter` does on the way
/// out.
fn read_at_other_versions(
    crd: &CrdSchemas,
    version: &str,
    object: &Value,
) -> Box<[(Box<str>, Bytes)]> {
    crd.versions
        .iter()
        .filter(|v| v.served && v.name != version)
        .filter_map(|v| {
            let mut read = object.clone();
            crd.as_read(&mut read, &v.name).ok()?;
            Some((Box::from(v.name.as_str()), to_bytes(&read)))
        })
        .collect()
}

/// The renditions ([`Stored::renditions`]) of a custom resource about to be stored through
/// `info`; none for other objects.
pub(super) fn renditions(
    schemas: &std::collections::HashMap<(String, String), Arc<CrdSchemas>>,
    info: &ResourceType,
    object: &Value,
) -> Box<[(Box<str>, Bytes)]> {
    if !info.custom || object.is_null() {
        return Box::default();
    }
    match schemas.get(&(info.group.clone(), info.kind.clone())) {
        Some(crd) => read_at_other_versions(crd, &info.version, object),
        None => Box::default(),
    }
}

impl Store {
    /// A custom resource version's `additionalPrinterColumns`, from its CRD.
    pub fn printer_columns(&self, info: &ResourceType) -> Option<Vec<Value>> {
        self.crd_version(info)?
            .get("additionalPrinterColumns")?
            .as_array()
            .cloned()
    }

    /// What a list or watch of `info` may select on: a custom resource adds its version's
    /// `selectableFields` (their `jsonPath` without the leading dot) to the metadata ones.
    pub fn field_labels(&self, info: &ResourceType) -> FieldLabels {
        if !info.custom {
            return FieldLabels::builtin(&info.group, &info.version, &info.kind, info.namespaced);
        }
        let selectable = self
            .crd_version(info)
            .and_then(|v| v.get("selectableFields").cloned())
            .and_then(|f| f.as_array().cloned())
            .into_iter()
            .flatten()
            .filter_map(|f| {
                let path = f.get("jsonPath")?.as_str()?;
                Some(path.strip_prefix('.').unwrap_or(path).to_string())
            })
            .collect();
        FieldLabels::Custom {
            namespaced: info.namespaced,
            selectable,
        }
    }

    /// The `spec.versions[]` entry of a custom resource's version, from its CRD.
    fn crd_version(&self, info: &ResourceType) -> Option<Value> {
        if !info.custom {
            return None;
        }
        let crd = {
            let g = self.lock();
            g.kinds
                .get("apiextensions.k8s.io")?
                .get("customresourcedefinitions")?
                .objects
                .get(&(String::new(), format!("{}.{}", info.plural, info.group)))?
                .clone()
        };
        crd.value()
            .pointer("/spec/versions")?
            .as_array()?
            .iter()
            .find(|v| v.get("name").and_then(Value::as_str) == Some(&info.version))
            .cloned()
    }
}
