//! The default-class plugins: DefaultStorageClass
//! (`plugin/pkg/admission/storage/storageclass/setdefault/admission.go`) and
//! DefaultIngressClass (`plugin/pkg/admission/network/defaultingressclass/admission.go`).
//! Each fills the class of a created object that names none with the cluster's default
//! class ([`super::AdmissionFacts`] holds the one the plugin picks), and leaves an object
//! that names one, even `""`, alone.

use serde_json::{json, Value};

use super::facts::AdmissionFacts;

/// `core.BetaStorageClassAnnotation`: a claim carrying it has a class
/// (`helper.PersistentVolumeClaimHasClass`), whatever `spec.storageClassName` says.
const BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// `networkingv1beta1.AnnotationIngressClass`: an Ingress carrying it names its class.
const INGRESS_CLASS: &str = "kubernetes.io/ingress.class";

fn annotated(object: &Value, key: &str) -> bool {
    object
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .is_some()
}

/// Sets `spec.<field>` to `class` unless the spec has the field (a JSON `null` is absent:
/// the field is a pointer in the Go type).
fn fill(object: &mut Value, field: &str, class: &Option<String>) {
    if let (Some(class), Some(spec)) = (class, object.get_mut("spec")) {
        if spec.get(field).is_none_or(Value::is_null) {
            spec[field] = json!(class);
        }
    }
}

pub(super) fn default_storage_class(pvc: &mut Value, facts: &AdmissionFacts) {
    if !annotated(pvc, BETA_STORAGE_CLASS) {
        fill(pvc, "storageClassName", &facts.default_storage_class);
    }
}

pub(super) fn default_ingress_class(ingress: &mut Value, facts: &AdmissionFacts) {
    if !annotated(ingress, INGRESS_CLASS) {
        fill(ingress, "ingressClassName", &facts.default_ingress_class);
    }
}
