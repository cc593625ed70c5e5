//! What kube-apiserver does to a manifest before `kubectl get -o json` shows it, for the
//! fields `gen` generates, written from kube-apiserver's sources independently of
//! `driftd_k8s::defaults`: the defaults of `pkg/apis/core/v1/defaults.go`
//! (`SetDefaults_Container`, `_PodSpec`, `_Pod`, `_Probe`, `_HTTPGetAction`,
//! `_ObjectFieldSelector`, `_Volume`, `_ConfigMapVolumeSource`, `_SecretVolumeSource`,
//! `_Service`) and `pkg/apis/apps/v1/defaults.go` (`SetDefaults_Deployment`), applied to the
//! typed objects; then metadata, status, allocations (`pkg/registry/core/service/storage/
//! alloc.go`), admission tolerations (`plugin/pkg/admission/defaulttolerationseconds`),
//! `omitempty` zero values left out, and keyed lists in another order.

use super::oracle::{keyed_by, Perms};
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Value};

/// `imagePullPolicy` as `SetDefaults_Container` derives it: `Always` when the reference's
/// tag is `latest`, which `parsers.ParseImageName` also reports for a reference with
/// neither tag nor digest; `IfNotPresent` otherwise.
fn pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((n, _)) => (n, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    match last.split_once(':') {
        Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
        None if digest => "IfNotPresent",
        None => "Always",
    }
}

// ------------------------------------------------------------------------------------
// Defaults, on the typed objects

fn set<T: Clone>(field: &mut Option<T>, value: T) {
    field.get_or_insert(value);
}

fn default_probe(p: &mut core::Probe) {
    set(&mut p.timeout_seconds, 1);
    set(&mut p.period_seconds, 10);
    set(&mut p.success_threshold, 1);
    set(&mut p.failure_threshold, 3);
    if let Some(h) = &mut p.http_get {
        if h.path.as_deref().unwrap_or("").is_empty() {
            h.path = Some("/".into());
        }
        set(&mut h.scheme, "HTTP".into());
    }
}

fn default_container(c: &mut core::Container) {
    let policy = pull_policy(c.image.as_deref().unwrap_or(""));
    set(&mut c.image_pull_policy, policy.into());
    set(
        &mut c.termination_message_path,
        "/dev/termination-log".into(),
    );
    set(&mut c.termination_message_policy, "File".into());
    for p in c.ports.iter_mut().flatten() {
        set(&mut p.protocol, "TCP".into());
    }
    for p in [&mut c.readiness_probe, &mut c.liveness_probe]
        .into_iter()
        .flatten()
    {
        default_probe(p);
    }
    for e in c.env.iter_mut().flatten() {
        if let Some(f) = e.value_from.as_mut().and_then(|v| v.field_ref.as_mut()) {
            set(&mut f.api_version, "v1".into());
        }
    }
}

fn default_pod_spec(s: &mut core::PodSpec) {
    set(&mut s.dns_policy, "ClusterFirst".into());
    set(&mut s.restart_policy, "Always".into());
    set(&mut s.termination_grace_period_seconds, 30);
    set(&mut s.security_context, Default::default());
    set(&mut s.scheduler_name, "default-scheduler".into());
    s.containers.iter_mut().for_each(default_container);
    for v in s.volumes.iter_mut().flatten() {
        if let Some(c) = &mut v.config_map {
            set(&mut c.default_mode, 0o644);
        } else if let Some(c) = &mut v.secret {
            set(&mut c.default_mode, 0o644);
        } else if v.empty_dir.is_none() {
            v.empty_dir = Some(Default::default());
        }
    }
}

/// Applies kube-apiserver's defaults for the generated fields of a `kind` object.
pub fn apply_defaults(kind: &str, object: &mut Value) {
    match kind {
        "Deployment" => {
            let mut d: apps::Deployment = serde_json::from_value(object.clone()).unwrap();
            let spec = &mut d.spec;
            set(&mut spec.replicas, 1);
            set(&mut spec.revision_history_limit, 10);
            set(&mut spec.progress_deadline_seconds, 600);
            let strategy = spec.strategy.get_or_insert_with(Default::default);
            set(&mut strategy.type_, "RollingUpdate".into());
            if strategy.type_.as_deref() == Some("RollingUpdate") {
                let r = strategy.rolling_update.get_or_insert_with(Default::default);
                set(&mut r.max_unavailable, IntOrString::String("25%".into()));
                set(&mut r.max_surge, IntOrString::String("25%".into()));
            }
            default_pod_spec(spec.template.spec.as_mut().unwrap());
            *object = serde_json::to_value(d).unwrap();
        }
        "Pod" => {
            let mut p: core::Pod = serde_json::from_value(object.clone()).unwrap();
            let spec = p.spec.as_mut().unwrap();
            default_pod_spec(spec);
            set(&mut spec.enable_service_links, true);
            // SetDefaults_Pod: requests default to limits, per resource.
            for c in &mut spec.containers {
                if let Some(r) = &mut c.resources {
                    if let Some(limits) = r.limits.clone() {
                        let requests = r.requests.get_or_insert_with(Default::default);
                        for (k, v) in limits {
                            requests.entry(k).or_insert(v);
                        }
                    }
                }
            }
            *object = serde_json::to_value(p).unwrap();
        }
        "Service" => {
            let mut s: core::Service = serde_json::from_value(object.clone()).unwrap();
            let spec = s.spec.as_mut().unwrap();
            set(&mut spec.session_affinity, "None".into());
            set(&mut spec.type_, "ClusterIP".into());
            for p in spec.ports.iter_mut().flatten() {
                set(&mut p.protocol, "TCP".into());
                set(&mut p.target_port, IntOrString::Int(p.port));
            }
            if spec.type_.as_deref() == Some("NodePort") {
                set(&mut spec.external_traffic_policy, "Cluster".into());
            }
            set(&mut spec.internal_traffic_policy, "Cluster".into());
            if spec.session_affinity.as_deref() == Some("ClientIP") {
                let c = spec
                    .session_affinity_config
                    .get_or_insert_with(Default::default);
                let ip = c.client_ip.get_or_insert_with(Default::default);
                set(&mut ip.timeout_seconds, 10800);
            }
            *object = serde_json::to_value(s).unwrap();
        }
        _ => {}
    }
}

// ------------------------------------------------------------------------------------
// The server's side: what `kubectl get -o json` shows beyond the defaulted manifest

/// A small deterministic generator (xorshift) for the live order of keyed lists.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// `defaulted` as the server returns it, and the order it gave each keyed list.
pub fn live_form(kind: &str, defaulted: &Value, salt: u64) -> (Value, Perms) {
    let mut live = defaulted.clone();
    omit_zero_values(&mut live);
    let mut perms = Perms::default();
    let mut rng = Rng(salt | 1);
    reorder(
        kind, defaulted, defaulted, &mut live, "", &mut perms, &mut rng,
    );
    let m = live["metadata"].as_object_mut().unwrap();
    m.insert(
        "uid".into(),
        json!(format!("{:08x}-0000-4000-8000-000000000000", salt as u32)),
    );
    m.insert("resourceVersion".into(), json!((salt % 100000).to_string()));
    m.insert("creationTimestamp".into(), json!("2026-11-20T09:15:00Z"));
    let annotations = m.entry("annotations").or_insert_with(|| json!({}));
    annotations["kubectl.kubernetes.io/last-applied-configuration"] = json!("{}\n");
    m.insert(
        "managedFields".into(),
        json!([{"manager": "kubectl-client-side-apply", "operation": "Update",
                "apiVersion": "v1", "time": "2026-11-20T09:15:00Z", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:annotations": {}}}}]),
    );
    match kind {
        "Deployment" => {
            m.insert("generation".into(), json!(1));
            live["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1");
            live["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
            live["status"] = json!({"observedGeneration": 1, "replicas": 1});
            resources_printed(&mut live["spec"]["template"]["spec"]["containers"]);
        }
        "Pod" => {
            let spec = &mut live["spec"];
            spec["nodeName"] = json!("node-1");
            spec["serviceAccountName"] = json!("default");
            spec["serviceAccount"] = json!("default");
            spec["priority"] = json!(0);
            spec["preemptionPolicy"] = json!("PreemptLowerPriority");
            // DefaultTolerationSeconds admission appends these two. The ServiceAccount
            // admission plugin's token volume and mounts are left out: the differ reports
            // them as drift when the manifest has volumes (a known gap).
            // Each unless the pod already tolerates that NoExecute taint: a toleration with
            // its key or no key, and NoExecute or no effect
            // (plugin/pkg/admission/defaulttolerationseconds/admission.go).
            let mut tolerations = spec["tolerations"].as_array().cloned().unwrap_or_default();
            for key in [
                "node.kubernetes.io/not-ready",
                "node.kubernetes.io/unreachable",
            ] {
                let tolerated = tolerations.iter().any(|t| {
                    let k = t["key"].as_str().unwrap_or("");
                    let e = t["effect"].as_str().unwrap_or("");
                    (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
                });
                if !tolerated {
                    tolerations.push(json!({"key": key, "operator": "Exists",
                        "effect": "NoExecute", "tolerationSeconds": 300}));
                }
            }
            spec["tolerations"] = Value::Array(tolerations);
            resources_printed(&mut spec["containers"]);
            live["status"] = json!({"phase": "Running", "qosClass": "BestEffort"});
        }
        "Service" => {
            let spec = &mut live["spec"];
            let ip = format!("10.96.{}.{}", salt % 250, salt / 250 % 250 + 1);
            spec["clusterIP"] = json!(ip);
            spec["clusterIPs"] = json!([ip]);
            spec["ipFamilies"] = json!(["IPv4"]);
            spec["ipFamilyPolicy"] = json!("SingleStack");
            if spec["type"] == "NodePort" {
                for (i, p) in spec["ports"].as_array_mut().unwrap().iter_mut().enumerate() {
                    p["nodePort"] = json!(30000 + (salt as usize + i * 7) % 2768);
                }
            }
            live["status"] = json!({"loadBalancer": {}});
        }
        _ => {}
    }
    (live, perms)
}

/// Containers always show `resources` (a non-pointer struct): `{}` when nothing is set.
fn resources_printed(containers: &mut Value) {
    for c in containers.as_array_mut().into_iter().flatten() {
        c.as_object_mut()
            .unwrap()
            .entry("resources")
            .or_insert_with(|| json!({}));
    }
}

/// kube-apiserver prints no `omitempty` zero value: empty lists and maps, `readOnly: false`.
fn omit_zero_values(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, c| {
                !(c.as_array().is_some_and(Vec::is_empty)
                    || (k == "readOnly" && *c == json!(false))
                    || (k != "securityContext" && k != "emptyDir")
                        && c.as_object().is_some_and(|o| o.is_empty()))
            });
            m.values_mut().for_each(omit_zero_values);
        }
        Value::Array(a) => a.iter_mut().for_each(omit_zero_values),
        _ => {}
    }
}

/// Puts every keyed list of `live` in another order (the oracle decides which lists are
/// keyed), walking `defaulted` to record the permutation by desired pointer.
fn reorder(
    kind: &str,
    root: &Value,
    defaulted: &Value,
    live: &mut Value,
    ptr: &str,
    perms: &mut Perms,
    rng: &mut Rng,
) {
    match defaulted {
        Value::Object(m) => {
            for (k, d) in m {
                if let Some(l) = live.get_mut(k) {
                    let p = format!("{ptr}/{}", crate::diff::pointer::escape(k));
                    reorder(kind, root, d, l, &p, perms, rng);
                }
            }
        }
        Value::Array(items) => {
            let Some(live_items) = live.as_array_mut() else {
                return;
            };
            if live_items.len() != items.len() {
                return;
            }
            let mut order: Vec<usize> = (0..items.len()).collect();
            if items.len() > 1 && keyed_by(kind, root, ptr).is_some() {
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.below(i + 1));
                }
            }
            // order[live index] = desired index
            let old = live_items.clone();
            for (li, &di) in order.iter().enumerate() {
                live_items[li] = old[di].clone();
            }
            let mut to_live = vec![0; items.len()];
            for (li, &di) in order.iter().enumerate() {
                to_live[di] = li;
            }
            for (di, d) in items.iter().enumerate() {
                let p = format!("{ptr}/{di}");
                reorder(kind, root, d, &mut live_items[to_live[di]], &p, perms, rng);
            }
            if order.iter().enumerate().any(|(i, &d)| i != d) {
                perms.insert(ptr.to_string(), to_live);
            }
        }
        _ => {}
    }
}
