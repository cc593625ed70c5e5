//! The cluster state the plugins read from their informers, and how each plugin picks among
//! several candidates (two default StorageClasses, two global-default PriorityClasses).
//! Built from stored objects by [`AdmissionFacts::from_objects`], so the simulator and the
//! tests derive the facts the same way kube-apiserver's plugins do.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::kinds::split_api_version;

/// Annotations that mark the default StorageClass (`pkg/volume/util/storageclass.go`,
/// `IsDefaultAnnotation`: the GA key or the beta one, either `"true"`).
const DEFAULT_STORAGE_CLASS: &[&str] = &[
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];
/// `networkingv1.AnnotationIsDefaultIngressClass`.
const DEFAULT_INGRESS_CLASS: &[&str] = &["ingressclass.kubernetes.io/is-default-class"];
/// The PriorityClasses kube-apiserver creates at startup (`pkg/apis/scheduling`:
/// `SystemCriticalPriority` = 2000000000; node-critical is 1000 above it).
const SYSTEM_PRIORITY_CLASSES: &[(&str, i64)] = &[
    ("system-cluster-critical", 2_000_000_000),
    ("system-node-critical", 2_000_001_000),
];
/// `PreemptLowerPriority`: `SetDefaults_PriorityClass` gives it to every stored class.
pub(super) const PREEMPT_LOWER_PRIORITY: &str = "PreemptLowerPriority";

/// Cluster state the plugins read. The default is a fresh cluster: no default
/// StorageClass, IngressClass or PriorityClass, no LimitRange, service accounts that
/// automount, and the two system PriorityClasses kube-apiserver creates.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionFacts {
    pub default_storage_class: Option<String>,
    pub default_ingress_class: Option<String>,
    /// PriorityClasses by name: (value, preemptionPolicy).
    pub priority_classes: BTreeMap<String, (i64, String)>,
    /// The name of the PriorityClass the Priority plugin takes as the global default.
    pub global_default_priority_class: Option<String>,
    /// LimitRange objects by namespace, as stored (defaulted), in the order LimitRanger
    /// meets them. Upstream lists them from an informer index, whose order is a Go map's;
    /// [`AdmissionFacts::from_objects`] orders them by name so a run is reproducible.
    pub limit_ranges: BTreeMap<String, Vec<Value>>,
    /// ServiceAccounts by (namespace, name). One missing here is taken to be a plain
    /// account (automounts, no image pull secrets): the `default` account exists in every
    /// namespace once its controller ran.
    pub service_accounts: BTreeMap<(String, String), ServiceAccountFacts>,
}

/// What the ServiceAccount plugin reads from a ServiceAccount.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceAccountFacts {
    /// `automountServiceAccountToken`; the pod's own setting wins over it.
    pub automount: Option<bool>,
    /// Names in `imagePullSecrets`, copied to a pod that lists none.
    pub image_pull_secrets: Vec<String>,
}

impl Default for AdmissionFacts {
    fn default() -> Self {
        AdmissionFacts {
            default_storage_class: None,
            default_ingress_class: None,
            priority_classes: SYSTEM_PRIORITY_CLASSES
                .iter()
                .map(|(n, v)| (n.to_string(), (*v, PREEMPT_LOWER_PRIORITY.to_string())))
                .collect(),
            global_default_priority_class: None,
            limit_ranges: BTreeMap::new(),
            service_accounts: BTreeMap::new(),
        }
    }
}

impl AdmissionFacts {
    /// The facts the plugins derive from these stored objects (StorageClasses,
    /// IngressClasses, PriorityClasses, LimitRanges, ServiceAccounts; others are ignored),
    /// on top of a fresh cluster's.
    pub fn from_objects<'a>(objects: impl IntoIterator<Item = &'a Value>) -> AdmissionFacts {
        let mut facts = AdmissionFacts::default();
        let (mut storage, mut ingress, mut global) = (Vec::new(), Vec::new(), Vec::new());
        for o in objects {
            let api_version = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
            let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
            match (split_api_version(api_version).0, kind) {
                ("storage.k8s.io", "StorageClass") => storage.push(o),
                ("networking.k8s.io", "IngressClass") => ingress.push(o),
                ("scheduling.k8s.io", "PriorityClass") => {
                    let value = o.get("value").and_then(Value::as_i64).unwrap_or(0);
                    let policy = o
                        .get("preemptionPolicy")
                        .and_then(Value::as_str)
                        .unwrap_or(PREEMPT_LOWER_PRIORITY);
                    if o.get("globalDefault").and_then(Value::as_bool) == Some(true) {
                        global.push((value, name(o)));
                    }
                    facts
                        .priority_classes
                        .insert(name(o).to_string(), (value, policy.to_string()));
                }
                ("", "LimitRange") => facts
                    .limit_ranges
                    .entry(namespace(o).to_string())
                    .or_default()
                    .push(o.clone()),
                ("", "ServiceAccount") => {
                    let account = ServiceAccountFacts {
                        automount: o
                            .get("automountServiceAccountToken")
                            .and_then(Value::as_bool),
                        image_pull_secrets: o
                            .get("imagePullSecrets")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .map(|r| r.get("name").and_then(Value::as_str).unwrap_or(""))
                            .map(str::to_string)
                            .collect(),
                    };
                    facts
                        .service_accounts
                        .insert((namespace(o).to_string(), name(o).to_string()), account);
                }
                _ => {}
            }
        }
        for ranges in facts.limit_ranges.values_mut() {
            ranges.sort_by(|a, b| name(a).cmp(name(b)));
        }
        facts.default_storage_class = newest_default(&storage, DEFAULT_STORAGE_CLASS);
        facts.default_ingress_class = newest_default(&ingress, DEFAULT_INGRESS_CLASS);
        // `getDefaultPriorityClass`: "In case more than one global default priority class
        // is added as a result of a race condition, we pick the one with the lowest
        // priority value." Equal values: the lister's first, an unspecified order; the
        // smallest name here.
        facts.global_default_priority_class =
            global.into_iter().min().map(|(_, name)| name.to_string());
        facts
    }
}

fn name(o: &Value) -> &str {
    o.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn namespace(o: &Value) -> &str {
    o.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
        .unwrap_or("default")
}

/// The default class among `classes` marked by one of `annotations` = `"true"`: the newest
/// by creationTimestamp, equal times by the smallest name (`GetDefaultClass` in
/// `pkg/volume/util/storageclass.go`, "Primary sort by creation timestamp, newest first /
/// Secondary sort by class name, ascending order"; DefaultIngressClass's `getDefaultClass`
/// sorts the same way since its multiple-defaults change).
fn newest_default(classes: &[&Value], annotations: &[&str]) -> Option<String> {
    classes
        .iter()
        .filter(|c| {
            annotations.iter().any(|a| {
                c.pointer("/metadata/annotations")
                    .and_then(|m| m.get(*a))
                    .and_then(Value::as_str)
                    == Some("true")
            })
        })
        .min_by(|a, b| {
            created(b)
                .cmp(&created(a))
                .then_with(|| name(a).cmp(name(b)))
        })
        .map(|c| name(c).to_string())
}

/// A creationTimestamp as an orderable key: (date and time to the second, nanoseconds).
/// The API prints RFC 3339 in UTC (`Z`) to the second; a fraction, if any, orders within
/// its second. Absent sorts first, as Go's zero time.
fn created(o: &Value) -> (String, u32) {
    let Some(t) = o
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
    else {
        return (String::new(), 0);
    };
    let t = t.trim_end_matches('Z');
    match t.split_once('.') {
        Some((seconds, fraction)) => {
            let digits: String = fraction.chars().take(9).collect();
            let nanos = format!("{digits:0<9}").parse().unwrap_or(0);
            (seconds.to_string(), nanos)
        }
        None => (t.to_string(), 0),
    }
}
