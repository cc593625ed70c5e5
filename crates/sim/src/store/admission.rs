//! kube-apiserver's default mutating admission chain on create
//! ([`driftd_k8s::admission::admit`]): what a Pod, PersistentVolumeClaim or Ingress read
//! back shows that its manifest did not say (the ServiceAccount plugin's token volume and
//! mounts, DefaultTolerationSeconds, Priority, the default StorageClass and IngressClass).
//! The cluster facts the plugins read come from the stored objects.

use super::Inner;
use driftd_k8s::admission::{admit, token_volume_name, AdmissionFacts};
use driftd_k8s::kinds::ResourceType;
use rand::Rng;
use serde_json::Value;

/// Kinds the default chain changes (the rest are left alone without reading any facts).
const ADMITTED: &[(&str, &str)] = &[
    ("", "Pod"),
    ("", "PersistentVolumeClaim"),
    ("networking.k8s.io", "Ingress"),
];

impl Inner {
    /// Runs the default admission chain on an object being created through `info`.
    pub(super) fn admit_create(&self, info: &ResourceType, obj: &mut Value) {
        if info.custom
            || !ADMITTED
                .iter()
                .any(|(g, k)| *g == info.group && *k == info.kind)
        {
            return;
        }
        let facts = self.admission_facts();
        let mut r = rand::rng();
        let volume = token_volume_name(|n| r.random_range(0..n));
        admit(&info.kind, obj, &facts, &volume);
    }

    /// The default classes and PriorityClasses stored now.
    fn admission_facts(&self) -> AdmissionFacts {
        let mut facts = AdmissionFacts::default();
        let objects = |group: &str, plural: &str| -> Vec<Value> {
            self.kinds
                .get(group)
                .and_then(|k| k.get(plural))
                .map(|k| k.objects.values().map(|o| o.value()).collect())
                .unwrap_or_default()
        };
        let is_default = |o: &Value, annotation: &str| {
            o.pointer("/metadata/annotations")
                .and_then(|a| a.get(annotation))
                .and_then(Value::as_str)
                == Some("true")
        };
        let name = |o: &Value| {
            o.pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        // Several defaults: the newest wins (`GetDefaultClass` sorts by creation time).
        let newest = |mut list: Vec<Value>| {
            list.sort_by(|a, b| {
                let t = |o: &Value| {
                    o.pointer("/metadata/creationTimestamp")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                t(a).cmp(&t(b)).then_with(|| name(a).cmp(&name(b)))
            });
            list.last().map(name)
        };
        facts.default_storage_class = newest(
            objects("storage.k8s.io", "storageclasses")
                .into_iter()
                .filter(|o| {
                    is_default(o, "storageclass.kubernetes.io/is-default-class")
                        || is_default(o, "storageclass.beta.kubernetes.io/is-default-class")
                })
                .collect(),
        );
        facts.default_ingress_class = newest(
            objects("networking.k8s.io", "ingressclasses")
                .into_iter()
                .filter(|o| is_default(o, "ingressclass.kubernetes.io/is-default-class"))
                .collect(),
        );
        for pc in objects("scheduling.k8s.io", "priorityclasses") {
            let value = pc.get("value").and_then(Value::as_i64).unwrap_or(0);
            let policy = pc
                .get("preemptionPolicy")
                .and_then(Value::as_str)
                .unwrap_or("PreemptLowerPriority")
                .to_string();
            if pc.get("globalDefault").and_then(Value::as_bool) == Some(true) {
                facts.global_default_priority_class = Some(name(&pc));
            }
            facts.priority_classes.insert(name(&pc), (value, policy));
        }
        facts
    }
}
