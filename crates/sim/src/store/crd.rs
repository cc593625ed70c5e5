//! Types defined by CustomResourceDefinitions: served once a CRD is stored, with the
//! printer columns `kubectl get` shows for them.

use super::{Inner, Store};
use driftd_k8s::kinds::{CustomResourceTypes, ResourceType, BUILTIN};
use serde_json::Value;
use std::sync::Arc;

/// The types a CustomResourceDefinition object makes servable (one per served version).
fn crd_types(crd: &Value) -> Vec<ResourceType> {
    CustomResourceTypes::read(crd)
        .map(|t| t.served().cloned().collect())
        .unwrap_or_default()
}

impl Inner {
    /// Re-reads the servable types after a CRD changed.
    pub(super) fn refresh_crds(&mut self) {
        let mut types = BUILTIN.clone();
        let crds = self
            .kinds
            .get("apiextensions.k8s.io")
            .and_then(|k| k.get("customresourcedefinitions"));
        for crd in crds.into_iter().flat_map(|k| k.objects.values()) {
            types.extend(crd_types(&crd.value()));
        }
        self.types = Arc::new(types);
    }
}

impl Store {
    /// A custom resource version's `additionalPrinterColumns`, from its CRD.
    pub fn printer_columns(&self, info: &ResourceType) -> Option<Vec<Value>> {
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
            .find(|v| v.get("name").and_then(Value::as_str) == Some(&info.version))?
            .get("additionalPrinterColumns")?
            .as_array()
            .cloned()
    }
}
