//! What kube-apiserver adds to an object on write beyond the defaults of its declared fields
//! ([`driftd_k8s::defaults`], applied first): allocations (clusterIPs, nodePorts, a Job's
//! uid), values derived from the object's identity (a Job's generated selector and labels),
//! create-only behaviour of the registry strategies (initial `status`, a Pod's phase and QoS
//! class, a Namespace's `kubernetes` finalizer), the Secret conversion that folds
//! `stringData` into `data`, and what the JSON encoder prints for zero values
//! (`creationTimestamp: null` in embedded ObjectMeta).
//!
//! Sources, all in kubernetes/kubernetes: `pkg/registry/core/service/storage/alloc.go` and
//! `storage.go`, `pkg/registry/batch/job/strategy.go`, `pkg/registry/core/namespace/strategy.go`,
//! `pkg/registry/core/pod/strategy.go`, `pkg/apis/core/v1/conversion.go`, and the other
//! registries' `PrepareForCreate` (status reset).
//!
//! The store calls [`on_create`] and [`on_update`] with an allocator that knows which
//! clusterIPs and nodePorts are taken; [`as_created`] is for tests and one-off use: it
//! allocates from a hash of the object's identity and cannot guarantee uniqueness.

use std::collections::{BTreeSet, HashMap};

use driftd_k8s::defaults::fields::{
    child, default_ptr, default_str, for_each_item, map, no_labels,
};
use driftd_k8s::kinds::split_api_version;
use driftd_k8s::merge_keys::pod_spec_prefix;
use driftd_k8s::quantity;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

/// Hands out the cluster-unique values kube-apiserver allocates on create.
///
/// A trait so the store owns the allocation state (what its Services hold) and tests can
/// allocate deterministically.
pub trait Allocator {
    /// A free ClusterIP from the service CIDR, or `None` when the range is exhausted.
    fn cluster_ip(&mut self) -> Option<String>;
    /// A free NodePort from 30000-32767, or `None` when the range is exhausted.
    fn node_port(&mut self) -> Option<u16>;
    /// A new object UID (RFC 4122 UUID, like `uuid.NewUUID()`).
    fn uid(&mut self) -> String;
    /// The time a create stamps into the status it sets (a PersistentVolume's
    /// `lastPhaseTransitionTime`): the server's clock, in seconds as metav1.Time encodes.
    fn now(&mut self) -> String {
        jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    }
}

/// First address and size of the default service CIDR 10.96.0.0/12.
pub(crate) const SERVICE_CIDR_FIRST: u32 = u32::from_be_bytes([10, 96, 0, 0]);
pub(crate) const SERVICE_CIDR_SIZE: u32 = 1 << 20;
/// kube-apiserver's default `--service-node-port-range`.
pub(crate) const NODE_PORT_MIN: u16 = 30000;
pub(crate) const NODE_PORT_MAX: u16 = 32767;

/// Formats 16 random bytes as a version-4 UUID.
pub(crate) fn uuid_v4(mut b: [u8; 16]) -> String {
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Allocates from a hash of the object's identity: the same object always gets the same
/// values, and no state is kept.
pub struct IdentityAllocator {
    rng: rand::rngs::StdRng,
}

impl IdentityAllocator {
    /// An allocator seeded from `object`'s kind, namespace and name.
    pub fn for_object(object: &Value) -> Self {
        use sha2::Digest;
        let meta = &object["metadata"];
        let id = format!(
            "{}/{}/{}",
            object["kind"].as_str().unwrap_or(""),
            meta["namespace"].as_str().unwrap_or(""),
            meta["name"].as_str().unwrap_or("")
        );
        let digest = sha2::Sha256::digest(id.as_bytes());
        let mut seed = [0u8; 8];
        seed.copy_from_slice(&digest[..8]);
        IdentityAllocator {
            rng: rand::rngs::StdRng::seed_from_u64(u64::from_le_bytes(seed)),
        }
    }
}

impl Allocator for IdentityAllocator {
    fn cluster_ip(&mut self) -> Option<String> {
        let off = self.rng.random_range(2..SERVICE_CIDR_SIZE - 1);
        Some(std::net::Ipv4Addr::from(SERVICE_CIDR_FIRST + off).to_string())
    }
    fn node_port(&mut self) -> Option<u16> {
        Some(self.rng.random_range(NODE_PORT_MIN..=NODE_PORT_MAX))
    }
    fn uid(&mut self) -> String {
        uuid_v4(self.rng.random())
    }
}

/// `object` as kube-apiserver stores a create: declared defaults, then what the server adds.
/// Allocations (clusterIP, nodePort, a Job's uid) come from a hash of the object's identity.
pub fn as_created(api_version: &str, kind: &str, object: &mut Value) {
    let mut alloc = IdentityAllocator::for_object(object);
    on_create(&mut alloc, api_version, kind, object);
}

/// Defaults and create-time registry behaviour (allocations, generated Job selector,
/// initial status) for a new `object`.
pub fn on_create(alloc: &mut dyn Allocator, api_version: &str, kind: &str, object: &mut Value) {
    serve(alloc, api_version, kind, object, None);
}

/// Defaults for the new version `new` of an existing object `old` (PUT/PATCH): values
/// kube-apiserver allocated and keeps across updates (clusterIPs, nodePorts,
/// healthCheckNodePort, Namespace finalizers, a Job's uid) are carried over from `old` when
/// `new` omits them, and nothing is allocated again that was kept.
pub fn on_update(
    alloc: &mut dyn Allocator,
    api_version: &str,
    kind: &str,
    old: &Value,
    new: &mut Value,
) {
    serve(alloc, api_version, kind, new, Some(old));
}

fn serve(
    alloc: &mut dyn Allocator,
    api_version: &str,
    kind: &str,
    object: &mut Value,
    old: Option<&Value>,
) {
    if !object.is_object() {
        return;
    }
    let (group, _) = split_api_version(api_version);
    // SetDefaults_Job hands the Job its template's label map itself (Go map aliasing), so
    // labels the strategy later adds to the template show on the Job too.
    let job_shares_template_labels = (group, kind) == ("batch", "Job") && no_labels(object);
    driftd_k8s::defaults::apply(api_version, kind, object);
    let create = old.is_none();
    match (group, kind) {
        ("", "Pod") if create => pod_status(object),
        ("", "ReplicationController") | ("apps", "ReplicaSet") => {
            initial_status(object, json!({"replicas": 0}))
        }
        ("", "Service") => service(alloc, object, old),
        ("", "Secret") => driftd_k8s::secret::fold_string_data(object),
        ("", "PersistentVolumeClaim") => initial_status(object, json!({"phase": "Pending"})),
        // PrepareForCreate with PersistentVolumeLastPhaseTransitionTime (GA and locked on
        // since v1.31): phase Pending, stamped with the time of the create.
        ("", "PersistentVolume") if create => {
            let now = alloc.now();
            initial_status(
                object,
                json!({"phase": "Pending", "lastPhaseTransitionTime": now}),
            )
        }
        // The zero v2 status as the encoder writes it: desiredReplicas and currentMetrics
        // have no omitempty (a nil list is null), currentReplicas and conditions have.
        ("", "Node") => node_status(object),
        ("autoscaling", "HorizontalPodAutoscaler") if create => initial_status(
            object,
            json!({"currentMetrics": null, "desiredReplicas": 0}),
        ),
        ("", "Namespace") => namespace(object, old),
        ("apps", "Deployment") | ("batch", "CronJob") => initial_status(object, json!({})),
        ("apps", "StatefulSet") => {
            initial_status(object, json!({"availableReplicas": 0, "replicas": 0}))
        }
        ("apps", "DaemonSet") => initial_status(
            object,
            json!({
                "currentNumberScheduled": 0,
                "desiredNumberScheduled": 0,
                "numberMisscheduled": 0,
                "numberReady": 0
            }),
        ),
        ("batch", "Job") => job(alloc, object, old, job_shares_template_labels),
        ("networking.k8s.io", "Ingress") => initial_status(object, json!({"loadBalancer": {}})),
        ("apiextensions.k8s.io", "CustomResourceDefinition") if create => crd_status(object),
        _ => {}
    }
    let embeds_object_meta = matches!(
        (group, kind),
        ("", "Pod" | "PodTemplate" | "ReplicationController")
            | (
                "apps",
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
            )
            | ("batch", "Job" | "CronJob")
    );
    if embeds_object_meta {
        zero_creation_timestamps(kind, object);
    }
}

/// Status of a freshly created object: strategies reset it, the encoder prints the zero
/// struct with its non-omitempty fields.
fn initial_status(object: &mut Value, status: Value) {
    if let Some(m) = map(object) {
        default_ptr(m, "status", status);
    }
}

/// A Node's status as the encoder writes it: the kubelet's endpoint and the system info are
/// structs without omitempty (their zero values printed: port 0, ten empty strings), so a
/// Node created without them (no kubelet has reported) shows them all the same.
fn node_status(object: &mut Value) {
    let Some(m) = map(object) else { return };
    let Some(status) = map(child(m, "status")) else {
        return;
    };
    if let Some(endpoints) = map(child(status, "daemonEndpoints")) {
        if let Some(kubelet) = map(child(endpoints, "kubeletEndpoint")) {
            default_ptr(kubelet, "Port", json!(0));
        }
    }
    if let Some(info) = map(child(status, "nodeInfo")) {
        for f in [
            "machineID",
            "systemUUID",
            "bootID",
            "kernelVersion",
            "osImage",
            "containerRuntimeVersion",
            "kubeletVersion",
            "kubeProxyVersion",
            "operatingSystem",
            "architecture",
        ] {
            default_ptr(info, f, json!(""));
        }
    }
}

/// `metadata.creationTimestamp: null` in embedded ObjectMeta (pod templates, a CronJob's
/// job template, claim templates): metav1.Time is a struct, so the encoder prints it even
/// when zero. The declared defaults have created those `metadata` objects already.
fn zero_creation_timestamps(kind: &str, object: &mut Value) {
    fn zero(meta: Option<&mut Value>) {
        if let Some(meta) = meta.and_then(map) {
            meta.entry("creationTimestamp").or_insert(Value::Null);
        }
    }
    fn pointer<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
        path.iter().try_fold(v, |v, k| v.get_mut(*k))
    }
    if let Some(prefix) = pod_spec_prefix(kind) {
        let (template, _) = prefix.split_at(prefix.len() - 1);
        if !template.is_empty() {
            zero(pointer(object, template).and_then(|t| t.get_mut("metadata")));
        }
        if let Some(spec) = pointer(object, prefix) {
            for_each_item(spec.get_mut("volumes"), |v| {
                zero(v.pointer_mut("/ephemeral/volumeClaimTemplate/metadata"));
            });
        }
    }
    match kind {
        "CronJob" => zero(object.pointer_mut("/spec/jobTemplate/metadata")),
        "StatefulSet" => for_each_item(object.pointer_mut("/spec/volumeClaimTemplates"), |t| {
            zero(t.get_mut("metadata"))
        }),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Pods (pkg/registry/core/pod/strategy.go PrepareForCreate)

fn pod_status(object: &mut Value) {
    let qos = object
        .get("spec")
        .and_then(Value::as_object)
        .map_or("BestEffort", qos_class);
    initial_status(object, json!({"phase": "Pending", "qosClass": qos}));
}

/// `qos.GetPodQOS` for containers and init containers (cpu and memory only).
fn qos_class(spec: &Map<String, Value>) -> &'static str {
    let mut any = false;
    let mut guaranteed = true;
    for list in ["containers", "initContainers"] {
        for c in spec
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let res = &c["resources"];
            let (req, lim) = (&res["requests"], &res["limits"]);
            for r in ["cpu", "memory"] {
                let (rq, lm) = (req.get(r), lim.get(r));
                if rq.is_some() || lm.is_some() {
                    any = true;
                }
                match (rq, lm) {
                    (Some(a), Some(b)) if quantity::equal_values(a, b) => {}
                    (None, Some(_)) => {} // requests default to limits on Pods
                    _ => guaranteed = false,
                }
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

// ---------------------------------------------------------------------------------------
// Services (pkg/registry/core/service/storage/alloc.go, storage.go)

fn service(alloc: &mut dyn Allocator, object: &mut Value, old: Option<&Value>) {
    let Some(m) = map(object) else { return };
    let has_selector = m["spec"]
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|s| !s.is_empty());
    let Some(spec) = map(child(m, "spec")) else {
        return;
    };
    let svc_type = spec["type"].as_str().unwrap_or("ClusterIP").to_string();
    // Keep what was allocated before (storage.go patchAllocatedValues).
    if let Some(old_spec) = old.and_then(|o| o.get("spec")).and_then(Value::as_object) {
        carry_over_allocations(old_spec, spec);
    }
    if svc_type != "ExternalName" {
        allocate_cluster_ips(alloc, spec, has_selector);
        let needs_node_ports = svc_type == "NodePort"
            || (svc_type == "LoadBalancer"
                && spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)));
        if needs_node_ports {
            allocate_node_ports(alloc, spec);
        }
        let local = spec.get("externalTrafficPolicy") == Some(&json!("Local"));
        if svc_type == "LoadBalancer" && local {
            let unset = spec
                .get("healthCheckNodePort")
                .is_none_or(|n| n.as_i64().unwrap_or(0) == 0);
            if unset {
                if let Some(port) = alloc.node_port() {
                    spec.insert("healthCheckNodePort".into(), json!(port));
                }
            }
        }
    }
    initial_status(object, json!({"loadBalancer": {}}));
}

/// initNodePorts: ports with the same number (53/TCP and 53/UDP) share one node port, a
/// requested one if any entry asks for it.
fn allocate_node_ports(alloc: &mut dyn Allocator, spec: &mut Map<String, Value>) {
    let mut by_port: HashMap<i64, i64> = spec
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["port"].as_i64()?, p["nodePort"].as_i64()?)))
        .filter(|(_, np)| *np != 0)
        .collect();
    for_each_item(spec.get_mut("ports"), |p| {
        let Some(p) = map(p) else { return };
        let unset = p
            .get("nodePort")
            .is_none_or(|n| n.as_i64().unwrap_or(0) == 0);
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        if unset {
            let np = match by_port.get(&port) {
                Some(np) => Some(*np),
                None => alloc.node_port().map(i64::from),
            };
            if let Some(np) = np {
                by_port.insert(port, np);
                p.insert("nodePort".into(), json!(np));
            }
        }
    });
}

fn carry_over_allocations(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let type_of = |m: &Map<String, Value>| {
        m.get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_string()
    };
    if type_of(old) != "ExternalName" && type_of(new) != "ExternalName" {
        for key in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            let unset = new.get(key).is_none_or(|v| v.is_null() || v == "");
            if unset {
                if let Some(v) = old.get(key) {
                    new.insert(key.into(), v.clone());
                }
            }
        }
    }
    let used: BTreeSet<i64> = new
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p["nodePort"].as_i64())
        .collect();
    let old_ports: Vec<Value> = old
        .get("ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for_each_item(new.get_mut("ports"), |p| {
        let Some(p) = map(p) else { return };
        if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
            return;
        }
        let same = old_ports.iter().find(|o| {
            o["port"] == p["port"] && o["protocol"] == p["protocol"] && o["nodePort"].is_i64()
        });
        if let Some(np) = same.and_then(|o| o["nodePort"].as_i64()) {
            if !used.contains(&np) {
                p.insert("nodePort".into(), json!(np));
            }
        }
    });
    if new.get("healthCheckNodePort").is_none() {
        if let Some(h) = old.get("healthCheckNodePort") {
            new.insert("healthCheckNodePort".into(), h.clone());
        }
    }
}

/// alloc.go initIPFamilyFields + allocClusterIPs for a single-stack IPv4 cluster.
fn allocate_cluster_ips(alloc: &mut dyn Allocator, spec: &mut Map<String, Value>, selector: bool) {
    let cluster_ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let first_of_ips = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .map(str::to_string);
    let ip = match (cluster_ip.as_str(), first_of_ips) {
        ("", Some(ip)) => ip,
        ("", None) => match alloc.cluster_ip() {
            Some(ip) => ip,
            None => return,
        },
        (ip, _) => ip.to_string(),
    };
    let headless = ip == "None";
    spec.insert("clusterIP".into(), json!(ip));
    default_ptr(spec, "clusterIPs", json!([ip]));
    if headless && !selector {
        // Headless without selector: RequireDualStack, both families listed.
        default_ptr(spec, "ipFamilyPolicy", json!("RequireDualStack"));
        default_ptr(spec, "ipFamilies", json!(["IPv4"]));
        let single = spec["ipFamilyPolicy"] == "SingleStack";
        if let Some(f) = spec.get_mut("ipFamilies").and_then(Value::as_array_mut) {
            if f.len() < 2 && !single {
                f.push(json!("IPv6"));
            }
        }
    } else {
        default_ptr(spec, "ipFamilyPolicy", json!("SingleStack"));
        default_ptr(spec, "ipFamilies", json!(["IPv4"]));
    }
}

// ---------------------------------------------------------------------------------------
// Namespaces (pkg/registry/core/namespace/strategy.go)

fn namespace(object: &mut Value, old: Option<&Value>) {
    let Some(m) = map(object) else { return };
    match old {
        None => {
            // PrepareForCreate: the "kubernetes" finalizer is required.
            if let Some(spec) = map(child(m, "spec")) {
                let fins = spec.entry("finalizers").or_insert(json!([]));
                if fins.is_null() {
                    *fins = json!([]);
                }
                if let Some(f) = fins.as_array_mut() {
                    if !f.iter().any(|x| x == "kubernetes") {
                        f.push(json!("kubernetes"));
                    }
                }
            }
            default_ptr(m, "status", json!({"phase": "Active"}));
        }
        Some(old) => {
            // PrepareForUpdate: finalizers and status only change through subresources.
            if let Some(f) = old.get("spec").and_then(|s| s.get("finalizers")) {
                if let Some(spec) = map(child(m, "spec")) {
                    spec.insert("finalizers".into(), f.clone());
                }
            }
            if let Some(s) = old.get("status") {
                m.insert("status".into(), s.clone());
            }
        }
    }
    if let Some(status) = map(child(m, "status")) {
        default_str(status, "phase", "Active");
    }
}

// ---------------------------------------------------------------------------------------
// Jobs (pkg/registry/batch/job/strategy.go)

fn job(alloc: &mut dyn Allocator, object: &mut Value, old: Option<&Value>, shared_labels: bool) {
    let Some(m) = map(object) else { return };
    let Some(meta) = map(child(m, "metadata")) else {
        return;
    };
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let uid = match meta
        .get("uid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    {
        Some(u) => u.to_string(),
        None => {
            let u = old
                .and_then(|o| o["metadata"]["uid"].as_str())
                .map(str::to_string)
                .unwrap_or_else(|| alloc.uid());
            meta.insert("uid".into(), json!(u));
            u
        }
    };
    let Some(spec) = map(child(m, "spec")) else {
        return;
    };
    if old.is_none() && spec.get("manualSelector") != Some(&json!(true)) {
        generate_selector(spec, &name, &uid);
    }
    if shared_labels {
        if let Some(labels) = object.pointer("/spec/template/metadata/labels").cloned() {
            object["metadata"]["labels"] = labels;
        }
    }
    if old.is_none() {
        initial_status(object, json!({}));
    }
}

/// generateSelector: job-name and controller-uid labels (legacy and `batch.kubernetes.io/`
/// prefixed) on the template, selector on the controller uid.
fn generate_selector(spec: &mut Map<String, Value>, name: &str, uid: &str) {
    if let Some(t) = spec.get_mut("template").and_then(map) {
        if let Some(labels) = map(child(t, "metadata")).and_then(|md| map(child(md, "labels"))) {
            for key in ["job-name", "batch.kubernetes.io/job-name"] {
                labels.entry(key).or_insert(json!(name));
            }
            for key in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
                labels.entry(key).or_insert(json!(uid));
            }
        }
    }
    if let Some(sel) = map(child(spec, "selector")) {
        if let Some(ml) = map(child(sel, "matchLabels")) {
            ml.entry("batch.kubernetes.io/controller-uid")
                .or_insert(json!(uid));
        }
    }
}

// ---------------------------------------------------------------------------------------
// CustomResourceDefinitions

fn crd_status(object: &mut Value) {
    initial_status(
        object,
        json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": []}),
    );
    // SetDefaults_CustomResourceDefinition fills storedVersions now there is a status.
    driftd_k8s::defaults::apply(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        object,
    );
}

#[cfg(test)]
#[path = "server_defaults_tests.rs"]
mod tests;
