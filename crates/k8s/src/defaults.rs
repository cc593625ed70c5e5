//! Server-side defaults as kube-apiserver's defaulting functions set them.
//!
//! A live object differs from the manifest that created it by everything kube-apiserver adds:
//! the `SetDefaults_*` functions run on decode, the registry strategies run on create
//! (status reset, Job selector, Namespace finalizer, Service IP/port allocation), and the
//! JSON encoder prints zero-valued structs (`creationTimestamp: null`, `status: {}`). The
//! simulator calls this module so its objects look like a real v1.32 cluster's, and the
//! differ's tests use it to check that the golden corpus agrees.
//!
//! Sources, all in kubernetes/kubernetes: `pkg/apis/core/v1/defaults.go`,
//! `pkg/apis/apps/v1/defaults.go`, `pkg/apis/batch/v1/defaults.go`,
//! `pkg/apis/autoscaling/v2/defaults.go`, `pkg/apis/rbac/v1/defaults.go`,
//! `pkg/apis/networking/v1/defaults.go`,
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go`,
//! `pkg/registry/batch/job/strategy.go`, `pkg/registry/core/namespace/strategy.go`,
//! `pkg/registry/core/pod/strategy.go`, `pkg/registry/core/service/storage/alloc.go`.
//!
//! Admission plugins are out of scope (they are not defaulting): DefaultStorageClass,
//! DefaultIngressClass, ServiceAccount (pod `serviceAccountName`, token volume), Priority and
//! DefaultTolerationSeconds only touch Pods/PVCs/Ingresses when configured.
//!
//! Which entry point the simulator should call: [`apply_with`] on create and
//! [`apply_update`] on update, both with one long-lived [`ClusterAllocator`], so cluster IPs
//! and node ports are unique. [`apply`] is for tests and one-off use: it allocates
//! deterministically from the object's identity and cannot guarantee uniqueness.

use std::collections::{BTreeSet, HashSet};

use base64::Engine as _;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use crate::kinds::split_api_version;
use crate::quantity;

/// Hands out the cluster-unique values kube-apiserver allocates on create.
///
/// A trait so the simulator owns the allocation state (one per simulated cluster) instead
/// of a global, and tests can plug in fixed values.
pub trait Allocator {
    /// A free ClusterIP from the service CIDR, or `None` when the range is exhausted.
    fn cluster_ip(&mut self) -> Option<String>;
    /// A free NodePort from 30000-32767, or `None` when the range is exhausted.
    fn node_port(&mut self) -> Option<u16>;
    /// A new object UID (RFC 4122 UUID, like `uuid.NewUUID()`).
    fn uid(&mut self) -> String;
}

/// First and last address of the default service CIDR 10.96.0.0/12.
const SERVICE_CIDR_FIRST: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const SERVICE_CIDR_SIZE: u32 = 1 << 20;
/// kube-apiserver's default `--service-node-port-range`.
const NODE_PORT_MIN: u16 = 30000;
const NODE_PORT_MAX: u16 = 32767;

/// Allocation state of one simulated cluster: 10.96.0.0/12 service IPs (10.96.0.1 reserved
/// for the `kubernetes` Service, like kube-apiserver) and node ports 30000-32767, picked at
/// random like the apiserver's bitmap allocators.
#[derive(Debug)]
pub struct ClusterAllocator {
    rng: rand::rngs::StdRng,
    used_ips: HashSet<u32>,
    used_ports: HashSet<u16>,
}

impl Default for ClusterAllocator {
    fn default() -> Self {
        Self::new()
    }
}

impl ClusterAllocator {
    /// An allocator with a random seed.
    pub fn new() -> Self {
        Self::seeded(rand::rng().random())
    }

    /// A reproducible allocator (same seed, same sequence of IPs, ports and UIDs).
    pub fn seeded(seed: u64) -> Self {
        let mut a = ClusterAllocator {
            rng: rand::rngs::StdRng::seed_from_u64(seed),
            used_ips: HashSet::new(),
            used_ports: HashSet::new(),
        };
        a.reserve_cluster_ip("10.96.0.1");
        a
    }

    /// Marks `ip` as taken (a user-chosen clusterIP, or a restored object). Returns false if
    /// it was already taken or is outside the service CIDR.
    pub fn reserve_cluster_ip(&mut self, ip: &str) -> bool {
        match ip_offset(ip) {
            Some(off) => self.used_ips.insert(off),
            None => false,
        }
    }

    /// Frees `ip` when its Service is deleted.
    pub fn release_cluster_ip(&mut self, ip: &str) {
        if let Some(off) = ip_offset(ip) {
            self.used_ips.remove(&off);
        }
    }

    /// Marks a user-chosen node port as taken; false if taken or out of range.
    pub fn reserve_node_port(&mut self, port: u16) -> bool {
        (NODE_PORT_MIN..=NODE_PORT_MAX).contains(&port) && self.used_ports.insert(port)
    }

    /// Frees a node port when its Service is deleted or changes type.
    pub fn release_node_port(&mut self, port: u16) {
        self.used_ports.remove(&port);
    }

    /// Reserves every clusterIP and nodePort `service` already carries (e.g. set by the user).
    pub fn reserve_service(&mut self, service: &Value) {
        let spec = &service["spec"];
        for ip in spec["clusterIPs"].as_array().into_iter().flatten() {
            if let Some(ip) = ip.as_str() {
                self.reserve_cluster_ip(ip);
            }
        }
        if let Some(ip) = spec["clusterIP"].as_str() {
            self.reserve_cluster_ip(ip);
        }
        for port in spec["ports"].as_array().into_iter().flatten() {
            if let Some(p) = port["nodePort"]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
            {
                self.reserve_node_port(p);
            }
        }
        if let Some(p) = spec["healthCheckNodePort"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
        {
            self.reserve_node_port(p);
        }
    }
}

fn ip_offset(ip: &str) -> Option<u32> {
    let addr: std::net::Ipv4Addr = ip.parse().ok()?;
    let v = u32::from(addr);
    (SERVICE_CIDR_FIRST..SERVICE_CIDR_FIRST + SERVICE_CIDR_SIZE)
        .contains(&v)
        .then(|| v - SERVICE_CIDR_FIRST)
}

impl Allocator for ClusterAllocator {
    fn cluster_ip(&mut self) -> Option<String> {
        // Usable offsets exclude the network (0) and broadcast (size-1) addresses.
        let usable = SERVICE_CIDR_SIZE - 2;
        if self.used_ips.len() as u32 >= usable {
            return None;
        }
        let start = self.rng.random_range(1..SERVICE_CIDR_SIZE - 1);
        (0..usable)
            .map(|i| 1 + (start - 1 + i) % usable)
            .find(|off| !self.used_ips.contains(off))
            .map(|off| {
                self.used_ips.insert(off);
                std::net::Ipv4Addr::from(SERVICE_CIDR_FIRST + off).to_string()
            })
    }

    fn node_port(&mut self) -> Option<u16> {
        let span = NODE_PORT_MAX - NODE_PORT_MIN + 1;
        let start = self.rng.random_range(0..span);
        (0..span)
            .map(|i| NODE_PORT_MIN + (start + i) % span)
            .find(|p| !self.used_ports.contains(p))
            .inspect(|p| {
                self.used_ports.insert(*p);
            })
    }

    fn uid(&mut self) -> String {
        let b: [u8; 16] = self.rng.random();
        format_uuid(b)
    }
}

/// Formats 16 random bytes as a version-4 UUID.
fn format_uuid(mut b: [u8; 16]) -> String {
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

/// Allocates from a hash of the object's identity: stable for the same object, no state.
/// Used by [`apply`] only.
struct IdentityAllocator {
    rng: rand::rngs::StdRng,
}

impl IdentityAllocator {
    fn for_object(object: &Value) -> Self {
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
        format_uuid(self.rng.random())
    }
}

/// Applies kube-apiserver's defaults for `api_version`/`kind` to `object` in place, as on
/// create. Allocations (clusterIP, nodePort, Job uid) come from a hash of the object's
/// identity; the simulator should use [`apply_with`] instead.
pub fn apply(api_version: &str, kind: &str, object: &mut Value) {
    let mut alloc = IdentityAllocator::for_object(object);
    apply_with(&mut alloc, api_version, kind, object);
}

/// Applies defaults and create-time registry behaviour (allocations, generated Job
/// selector, initial status) to a new `object`.
pub fn apply_with(alloc: &mut dyn Allocator, api_version: &str, kind: &str, object: &mut Value) {
    apply_inner(alloc, api_version, kind, object, None);
}

/// Applies defaults to the new version `new` of an existing object `old` (PUT/PATCH):
/// values kube-apiserver allocated and keeps across updates (clusterIPs, nodePorts,
/// healthCheckNodePort, Namespace finalizers, the Job's generated selector) are carried
/// over from `old` when `new` omits them, and nothing is allocated again that was kept.
pub fn apply_update(
    alloc: &mut dyn Allocator,
    api_version: &str,
    kind: &str,
    old: &Value,
    new: &mut Value,
) {
    apply_inner(alloc, api_version, kind, new, Some(old));
}

/// Applies only the *declared* defaults: every deterministic default kube-apiserver's
/// `SetDefaults_*` functions give a manifest (so it is part of what the team committed),
/// but nothing allocated or derived from the object's identity (clusterIP(s), ipFamilies,
/// ipFamilyPolicy, nodePort, healthCheckNodePort, uid, the Job's generated selector and
/// labels), no `status`, no `creationTimestamp: null` in embedded metadata, and no Secret
/// `stringData` folding (the differ keeps `stringData` paths). The differ calls this on a
/// copy of the desired object, so a hand edit of a defaulted field is drift.
pub fn apply_declared(api_version: &str, kind: &str, object: &mut Value) {
    if !object.is_object() {
        return;
    }
    let had_status = object.get("status").is_some();
    let mut alloc = NoAllocator;
    apply_mode(&mut alloc, api_version, kind, object, None, true);
    if !had_status {
        if let Some(m) = map(object) {
            m.remove("status");
        }
    }
    strip_null_creation_timestamps(object);
}

/// Refuses every allocation; `apply_declared` never reaches a call (the paths that allocate
/// are skipped in declared mode), this only keeps the signatures shared.
struct NoAllocator;

impl Allocator for NoAllocator {
    fn cluster_ip(&mut self) -> Option<String> {
        None
    }
    fn node_port(&mut self) -> Option<u16> {
        None
    }
    fn uid(&mut self) -> String {
        String::new()
    }
}

/// Removes the `creationTimestamp: null` the encoder prints in embedded ObjectMeta: it is
/// not a default anyone declares.
fn strip_null_creation_timestamps(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Object(meta)) = m.get_mut("metadata") {
                if meta.get("creationTimestamp") == Some(&Value::Null) {
                    meta.remove("creationTimestamp");
                }
            }
            m.values_mut().for_each(strip_null_creation_timestamps);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_null_creation_timestamps),
        _ => {}
    }
}

fn apply_inner(
    alloc: &mut dyn Allocator,
    api_version: &str,
    kind: &str,
    object: &mut Value,
    old: Option<&Value>,
) {
    apply_mode(alloc, api_version, kind, object, old, false);
}

/// `declared`: skip allocations, identity-derived values and Secret folding
/// ([`apply_declared`]).
fn apply_mode(
    alloc: &mut dyn Allocator,
    api_version: &str,
    kind: &str,
    object: &mut Value,
    old: Option<&Value>,
    declared: bool,
) {
    if !object.is_object() {
        return;
    }
    let (group, version) = split_api_version(api_version);
    match (group, kind) {
        ("", "Pod") => pod(object, old.is_none() && !declared),
        ("", "PodTemplate") => pod_template(&mut object["template"]),
        ("", "ReplicationController") => replication_controller(object),
        ("", "Service") => service(alloc, object, old, declared),
        ("", "Secret") => secret(object, declared),
        ("", "PersistentVolumeClaim") => pvc(object),
        ("", "Namespace") => namespace(object, old),
        ("apps", "Deployment") => deployment(object),
        ("apps", "ReplicaSet") => replica_set(object),
        ("apps", "StatefulSet") => stateful_set(object),
        ("apps", "DaemonSet") => daemon_set(object),
        ("batch", "Job") => job(alloc, object, old, declared),
        ("batch", "CronJob") => cron_job(object),
        ("autoscaling", "HorizontalPodAutoscaler") => hpa(object, version),
        ("networking.k8s.io", "NetworkPolicy") => network_policy(object),
        ("networking.k8s.io", "Ingress") => ingress(object),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => role_binding(object),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(object, old.is_none()),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// JSON helpers. Go's "unset" is a missing key, `null`, or the zero value for non-pointers.

fn map(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

/// The object at `key`, created as `{}` if missing or null.
fn child<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Value {
    let slot = m.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = json!({});
    }
    slot
}

/// Sets `key` if it is missing or null (a Go pointer field).
fn default_ptr(m: &mut Map<String, Value>, key: &str, value: Value) {
    match m.get(key) {
        None | Some(Value::Null) => {
            m.insert(key.to_string(), value);
        }
        _ => {}
    }
}

/// Sets `key` if missing, null or "" (a Go string field compared with "").
fn default_str(m: &mut Map<String, Value>, key: &str, value: &str) {
    match m.get(key) {
        None | Some(Value::Null) => {
            m.insert(key.to_string(), json!(value));
        }
        Some(Value::String(s)) if s.is_empty() => {
            m.insert(key.to_string(), json!(value));
        }
        _ => {}
    }
}

/// Sets `key` if missing, null or 0 (a Go int field compared with 0).
fn default_int(m: &mut Map<String, Value>, key: &str, value: i64) {
    match m.get(key) {
        None | Some(Value::Null) => {
            m.insert(key.to_string(), json!(value));
        }
        Some(v) if v.as_i64() == Some(0) => {
            m.insert(key.to_string(), json!(value));
        }
        _ => {}
    }
}

fn for_each_item(v: Option<&mut Value>, mut f: impl FnMut(&mut Value)) {
    if let Some(Value::Array(items)) = v {
        items.iter_mut().for_each(&mut f);
    }
}

/// `metadata.creationTimestamp: null` on embedded ObjectMeta (pod templates, PVC templates):
/// metav1.Time is a struct, so the v1.32 encoder prints it even when zero.
fn embedded_metadata(m: &mut Map<String, Value>) {
    if let Some(meta) = map(child(m, "metadata")) {
        meta.entry("creationTimestamp").or_insert(Value::Null);
    }
}

/// Status of a freshly created object: strategies reset it, the encoder prints the zero
/// struct with its non-omitempty fields.
fn initial_status(m: &mut Map<String, Value>, status: Value) {
    default_ptr(m, "status", status);
}

/// SetDefaults_ResourceList: every quantity rounded up to milli and stored canonically.
fn resource_list(v: Option<&mut Value>) {
    if let Some(Value::Object(list)) = v {
        for q in list.values_mut() {
            if let Some(parsed) = quantity::parse_value(q) {
                *q = json!(parsed.rounded_up_to_milli().canonical());
            }
        }
    }
}

/// A single Quantity field: decoded and re-encoded, so stored canonically.
fn quantity_field(m: &mut Map<String, Value>, key: &str) {
    if let Some(q) = m.get_mut(key) {
        if let Some(parsed) = quantity::parse_value(q) {
            *q = json!(parsed.canonical());
        }
    }
}

fn resource_requirements(v: Option<&mut Value>) {
    if let Some(r) = v.and_then(map) {
        resource_list(r.get_mut("limits"));
        resource_list(r.get_mut("requests"));
    }
}

// ---------------------------------------------------------------------------------------
// core/v1: pods and pod templates (pkg/apis/core/v1/defaults.go)

fn pod(object: &mut Value, create: bool) {
    let Some(m) = map(object) else { return };
    let Some(spec) = map(child(m, "spec")) else {
        return;
    };
    pod_spec(spec);
    // SetDefaults_Pod (Pods only, not templates): requests default to limits.
    for list in ["containers", "initContainers"] {
        for_each_item(spec.get_mut(list), |c| {
            let Some(c) = map(c) else { return };
            let Some(res) = c.get_mut("resources").and_then(map) else {
                return;
            };
            let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
                return;
            };
            if let Some(requests) = map(child(res, "requests")) {
                for (k, v) in limits {
                    requests.entry(k).or_insert(v);
                }
            }
        });
    }
    default_ptr(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork") == Some(&json!(true)) {
        for list in ["containers", "initContainers"] {
            for_each_item(spec.get_mut(list), |c| {
                for_each_item(c.get_mut("ports"), |p| {
                    if let Some(p) = map(p) {
                        if let Some(cp) = p.get("containerPort").cloned() {
                            default_int(p, "hostPort", cp.as_i64().unwrap_or(0));
                        }
                    }
                });
            });
        }
    }
    if create {
        // pod strategy PrepareForCreate: Pending with the computed QoS class.
        let qos = qos_class(spec);
        initial_status(m, json!({"phase": "Pending", "qosClass": qos}));
    }
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

/// A PodTemplateSpec: embedded metadata plus SetDefaults_PodSpec and nested defaults.
fn pod_template(template: &mut Value) {
    if template.is_null() {
        *template = json!({});
    }
    let Some(t) = map(template) else { return };
    embedded_metadata(t);
    if let Some(spec) = map(child(t, "spec")) {
        pod_spec(spec);
    }
}

fn pod_spec(spec: &mut Map<String, Value>) {
    default_str(spec, "dnsPolicy", "ClusterFirst");
    default_str(spec, "restartPolicy", "Always");
    default_ptr(spec, "securityContext", json!({}));
    default_ptr(spec, "terminationGracePeriodSeconds", json!(30));
    default_str(spec, "schedulerName", "default-scheduler");
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for_each_item(spec.get_mut(list), container);
    }
    for_each_item(spec.get_mut("volumes"), volume);
    resource_requirements(spec.get_mut("resources"));
    resource_list(spec.get_mut("overhead"));
}

/// Pull policy from the image reference (`parsers.ParseImageName`): no tag and no digest
/// means `latest`.
fn image_pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((n, _)) => (n, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, t)| t);
    match tag {
        Some("latest") => "Always",
        Some(_) => "IfNotPresent",
        None if digest => "IfNotPresent",
        None => "Always",
    }
}

fn container(c: &mut Value) {
    let Some(c) = map(c) else { return };
    if matches!(c.get("imagePullPolicy"), None | Some(Value::Null))
        || c.get("imagePullPolicy") == Some(&json!(""))
    {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = image_pull_policy(image);
        c.insert("imagePullPolicy".into(), json!(policy));
    }
    default_str(c, "terminationMessagePath", "/dev/termination-log");
    default_str(c, "terminationMessagePolicy", "File");
    for_each_item(c.get_mut("ports"), |p| {
        if let Some(p) = map(p) {
            default_str(p, "protocol", "TCP");
        }
    });
    for_each_item(c.get_mut("env"), |e| {
        if let Some(from) = e.get_mut("valueFrom").and_then(map) {
            field_refs(from);
        }
    });
    for probe_name in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = c.get_mut(probe_name).and_then(map) {
            default_int(p, "timeoutSeconds", 1);
            default_int(p, "periodSeconds", 10);
            default_int(p, "successThreshold", 1);
            default_int(p, "failureThreshold", 3);
            handler(p);
        }
    }
    if let Some(lc) = c.get_mut("lifecycle").and_then(map) {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = lc.get_mut(hook).and_then(map) {
                handler(h);
            }
        }
    }
    resource_requirements(c.get_mut("resources"));
}

/// Probe/lifecycle handler: SetDefaults_HTTPGetAction, and grpc `service` (`+default=""`).
fn handler(h: &mut Map<String, Value>) {
    if let Some(get) = h.get_mut("httpGet").and_then(map) {
        default_str(get, "path", "/");
        default_str(get, "scheme", "HTTP");
    }
    if let Some(grpc) = h.get_mut("grpc").and_then(map) {
        default_ptr(grpc, "service", json!(""));
    }
}

/// fieldRef apiVersion (SetDefaults_ObjectFieldSelector) and resourceFieldRef divisor (a
/// non-pointer Quantity, printed as "0" when unset).
fn field_refs(m: &mut Map<String, Value>) {
    if let Some(f) = m.get_mut("fieldRef").and_then(map) {
        default_str(f, "apiVersion", "v1");
    }
    if let Some(r) = m.get_mut("resourceFieldRef").and_then(map) {
        default_ptr(r, "divisor", json!("0"));
        quantity_field(r, "divisor");
    }
}

fn volume(v: &mut Value) {
    let Some(v) = map(v) else { return };
    // SetDefaults_Volume: a volume with no source is an emptyDir.
    if !v.iter().any(|(k, val)| k != "name" && !val.is_null()) {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = v.get_mut(source).and_then(map) {
            default_ptr(s, "defaultMode", json!(420));
        }
    }
    if let Some(d) = v.get_mut("downwardAPI").and_then(map) {
        for_each_item(d.get_mut("items"), |i| {
            if let Some(i) = map(i) {
                field_refs(i);
            }
        });
    }
    if let Some(p) = v.get_mut("projected").and_then(map) {
        for_each_item(p.get_mut("sources"), |s| {
            let Some(s) = map(s) else { return };
            if let Some(t) = s.get_mut("serviceAccountToken").and_then(map) {
                default_ptr(t, "expirationSeconds", json!(3600));
            }
            if let Some(d) = s.get_mut("downwardAPI").and_then(map) {
                for_each_item(d.get_mut("items"), |i| {
                    if let Some(i) = map(i) {
                        field_refs(i);
                    }
                });
            }
        });
    }
    if let Some(h) = v.get_mut("hostPath").and_then(map) {
        default_ptr(h, "type", json!(""));
    }
    if let Some(e) = v.get_mut("emptyDir").and_then(map) {
        quantity_field(e, "sizeLimit");
    }
    if let Some(tpl) = v
        .get_mut("ephemeral")
        .and_then(map)
        .and_then(|e| e.get_mut("volumeClaimTemplate"))
        .and_then(map)
    {
        embedded_metadata(tpl);
        if let Some(spec) = map(child(tpl, "spec")) {
            pvc_spec(spec);
        }
    }
}

fn replication_controller(object: &mut Value) {
    let Some(m) = map(object) else { return };
    let Some(spec) = map(child(m, "spec")) else {
        return;
    };
    default_ptr(spec, "replicas", json!(1));
    let labels = spec
        .get("template")
        .and_then(|t| t.get("metadata"))
        .and_then(|md| md.get("labels"))
        .filter(|l| l.is_object())
        .cloned();
    if let Some(labels) = labels {
        if spec
            .get("selector")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            spec.insert("selector".into(), labels.clone());
        }
        if let Some(meta) = map(child(m, "metadata")) {
            if meta
                .get("labels")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty)
            {
                meta.insert("labels".into(), labels);
            }
        }
    }
    if let Some(spec) = m.get_mut("spec").and_then(map) {
        if spec.contains_key("template") {
            pod_template(&mut spec["template"]);
        }
    }
    initial_status(m, json!({"replicas": 0}));
}

// ---------------------------------------------------------------------------------------
// core/v1: Service (defaults.go SetDefaults_Service + service/storage/alloc.go)

fn service(alloc: &mut dyn Allocator, object: &mut Value, old: Option<&Value>, declared: bool) {
    let Some(m) = map(object) else { return };
    let has_selector = m["spec"]
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|s| !s.is_empty());
    let Some(spec) = map(child(m, "spec")) else {
        return;
    };
    default_str(spec, "sessionAffinity", "None");
    match spec["sessionAffinity"].as_str() {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    default_str(spec, "type", "ClusterIP");
    let svc_type = spec["type"].as_str().unwrap_or("ClusterIP").to_string();
    for_each_item(spec.get_mut("ports"), |p| {
        let Some(p) = map(p) else { return };
        default_str(p, "protocol", "TCP");
        let unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(t) => t.as_i64() == Some(0) || t.as_str() == Some(""),
        };
        if unset {
            if let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    });
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    // service.ExternallyAccessible
    let external = svc_type == "LoadBalancer"
        || svc_type == "NodePort"
        || (svc_type == "ClusterIP" && has_external_ips);
    if external {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(svc_type.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        default_ptr(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if svc_type == "LoadBalancer" {
        default_ptr(spec, "allocateLoadBalancerNodePorts", json!(true));
    }

    if declared {
        // Everything below is allocation (alloc.go), not defaulting.
        return;
    }
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
            // initNodePorts: ports with the same number (53/TCP and 53/UDP) share one node
            // port, a requested one if any entry asks for it.
            let mut by_port: std::collections::HashMap<i64, i64> = spec
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| Some((p["port"].as_i64()?, p["nodePort"].as_i64()?)))
                .filter(|(_, np)| *np != 0)
                .collect();
            for_each_item(spec.get_mut("ports"), |p| {
                if let Some(p) = map(p) {
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
                }
            });
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
    initial_status(m, json!({"loadBalancer": {}}));
}

fn carry_over_allocations(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let old_type = old
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    let new_type = new
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if old_type != "ExternalName" && new_type != "ExternalName" {
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
// core/v1: Secret, PVC, Namespace

fn secret(object: &mut Value, declared: bool) {
    let Some(m) = map(object) else { return };
    default_str(m, "type", "Opaque");
    if declared {
        return;
    }
    // Convert_v1_Secret_To_core_Secret: stringData is write-only, merged over data.
    if let Some(Value::Object(string_data)) = m.remove("stringData") {
        let engine = base64::engine::general_purpose::STANDARD;
        if let Some(data) = map(child(m, "data")) {
            for (k, v) in string_data {
                let s = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                data.insert(k, json!(engine.encode(s.as_bytes())));
            }
        }
    }
}

fn pvc_spec(spec: &mut Map<String, Value>) {
    default_ptr(spec, "volumeMode", json!("Filesystem"));
    resource_requirements(spec.get_mut("resources"));
}

fn pvc(object: &mut Value) {
    let Some(m) = map(object) else { return };
    if let Some(spec) = map(child(m, "spec")) {
        pvc_spec(spec);
    }
    if let Some(status) = map(child(m, "status")) {
        default_str(status, "phase", "Pending");
    }
}

fn namespace(object: &mut Value, old: Option<&Value>) {
    let Some(m) = map(object) else { return };
    if let Some(name) = m
        .get("metadata")
        .and_then(|md| md.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
    {
        if let Some(labels) = map(child(m, "metadata")).map(|md| child(md, "labels")) {
            if let Some(labels) = map(labels) {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
    }
    match old {
        None => {
            // namespace strategy PrepareForCreate: the "kubernetes" finalizer is required.
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
            initial_status(m, json!({"phase": "Active"}));
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
// apps/v1 (pkg/apis/apps/v1/defaults.go)

fn spec_of(object: &mut Value) -> Option<&mut Map<String, Value>> {
    map(child(map(object)?, "spec"))
}

fn template_of(spec: &mut Map<String, Value>) {
    pod_template(spec.entry("template").or_insert(Value::Null));
}

fn deployment(object: &mut Value) {
    if let Some(spec) = spec_of(object) {
        default_ptr(spec, "replicas", json!(1));
        if let Some(strategy) = map(child(spec, "strategy")) {
            default_str(strategy, "type", "RollingUpdate");
            if strategy["type"] == "RollingUpdate" {
                if let Some(ru) = map(child(strategy, "rollingUpdate")) {
                    default_ptr(ru, "maxUnavailable", json!("25%"));
                    default_ptr(ru, "maxSurge", json!("25%"));
                }
            }
        }
        default_ptr(spec, "revisionHistoryLimit", json!(10));
        default_ptr(spec, "progressDeadlineSeconds", json!(600));
        template_of(spec);
    }
    if let Some(m) = map(object) {
        initial_status(m, json!({}));
    }
}

fn replica_set(object: &mut Value) {
    if let Some(spec) = spec_of(object) {
        default_ptr(spec, "replicas", json!(1));
        template_of(spec);
    }
    if let Some(m) = map(object) {
        initial_status(m, json!({"replicas": 0}));
    }
}

fn stateful_set(object: &mut Value) {
    if let Some(spec) = spec_of(object) {
        default_str(spec, "podManagementPolicy", "OrderedReady");
        if let Some(us) = map(child(spec, "updateStrategy")) {
            if us.get("type").is_none_or(|t| t.is_null() || t == "") {
                us.insert("type".into(), json!("RollingUpdate"));
                default_ptr(us, "rollingUpdate", json!({}));
            }
            if us["type"] == "RollingUpdate" {
                if let Some(ru) = us.get_mut("rollingUpdate").and_then(map) {
                    default_ptr(ru, "partition", json!(0));
                    // maxUnavailable: only with the alpha MaxUnavailableStatefulSet gate.
                }
            }
        }
        // StatefulSetAutoDeletePVC is GA (on) in v1.32.
        if let Some(p) = map(child(spec, "persistentVolumeClaimRetentionPolicy")) {
            default_str(p, "whenDeleted", "Retain");
            default_str(p, "whenScaled", "Retain");
        }
        default_ptr(spec, "replicas", json!(1));
        default_ptr(spec, "revisionHistoryLimit", json!(10));
        for_each_item(spec.get_mut("volumeClaimTemplates"), |pvc_tpl| {
            let Some(t) = map(pvc_tpl) else { return };
            // Embedded PVCs are full objects: TypeMeta and zero metadata are printed.
            default_str(t, "apiVersion", "v1");
            default_str(t, "kind", "PersistentVolumeClaim");
            embedded_metadata(t);
            if let Some(s) = map(child(t, "spec")) {
                pvc_spec(s);
            }
            if let Some(status) = map(child(t, "status")) {
                default_str(status, "phase", "Pending");
            }
        });
        template_of(spec);
    }
    if let Some(m) = map(object) {
        initial_status(m, json!({"availableReplicas": 0, "replicas": 0}));
    }
}

fn daemon_set(object: &mut Value) {
    if let Some(spec) = spec_of(object) {
        if let Some(us) = map(child(spec, "updateStrategy")) {
            default_str(us, "type", "RollingUpdate");
            if us["type"] == "RollingUpdate" {
                if let Some(ru) = map(child(us, "rollingUpdate")) {
                    default_ptr(ru, "maxUnavailable", json!(1));
                    default_ptr(ru, "maxSurge", json!(0));
                }
            }
        }
        default_ptr(spec, "revisionHistoryLimit", json!(10));
        template_of(spec);
    }
    if let Some(m) = map(object) {
        initial_status(
            m,
            json!({
                "currentNumberScheduled": 0,
                "desiredNumberScheduled": 0,
                "numberMisscheduled": 0,
                "numberReady": 0
            }),
        );
    }
}

// ---------------------------------------------------------------------------------------
// batch/v1 (pkg/apis/batch/v1/defaults.go, pkg/registry/batch/job/strategy.go)

/// SetDefaults_Job fields (also used for a CronJob's jobTemplate? No: kube-apiserver does
/// not default a JobTemplateSpec's JobSpec; only its pod template).
fn job_spec(spec: &mut Map<String, Value>) {
    let unset = |s: &Map<String, Value>, k: &str| s.get(k).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    default_ptr(spec, "parallelism", json!(1));
    if unset(spec, "backoffLimit") {
        let v = if unset(spec, "backoffLimitPerIndex") {
            6
        } else {
            i32::MAX as i64
        };
        spec.insert("backoffLimit".into(), json!(v));
    }
    default_ptr(spec, "completionMode", json!("NonIndexed"));
    default_ptr(spec, "suspend", json!(false));
    let has_pfp = !unset(spec, "podFailurePolicy");
    default_ptr(
        spec,
        "podReplacementPolicy",
        json!(if has_pfp {
            "Failed"
        } else {
            "TerminatingOrFailed"
        }),
    );
    default_ptr(spec, "manualSelector", json!(false));
    if let Some(pfp) = spec.get_mut("podFailurePolicy").and_then(map) {
        for_each_item(pfp.get_mut("rules"), |r| {
            for_each_item(r.get_mut("onPodConditions"), |c| {
                if let Some(c) = map(c) {
                    default_str(c, "status", "True");
                }
            });
        });
    }
}

fn job(alloc: &mut dyn Allocator, object: &mut Value, old: Option<&Value>, declared: bool) {
    let Some(m) = map(object) else { return };
    if declared {
        // No uid, no generated selector or labels (job strategy, identity-derived).
        let Some(spec) = map(child(m, "spec")) else {
            return;
        };
        job_spec(spec);
        template_of(spec);
        copy_template_labels(m);
        return;
    }
    let meta = map(child(m, "metadata")).expect("metadata is an object");
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
    job_spec(spec);
    template_of(spec);
    if old.is_none() && spec.get("manualSelector") != Some(&json!(true)) {
        generate_selector(spec, &name, &uid);
    }
    // SetDefaults_Job: a Job without labels takes its template's. Defaulting runs again
    // when the created object is decoded from storage, after generateSelector, so the
    // generated labels are copied too (what `kubectl get job -o yaml` shows).
    copy_template_labels(m);
    if old.is_none() {
        initial_status(m, json!({}));
    }
}

/// SetDefaults_Job: a Job without labels takes its template's.
fn copy_template_labels(m: &mut Map<String, Value>) {
    let tpl_labels = m
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|md| md.get("labels"))
        .cloned();
    if let (Some(labels), Some(meta)) = (tpl_labels, map(child(m, "metadata"))) {
        if meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            meta.insert("labels".into(), labels);
        }
    }
}

/// job strategy generateSelector: job-name and controller-uid labels (legacy and
/// `batch.kubernetes.io/` prefixed) on the template, selector on the controller uid.
fn generate_selector(spec: &mut Map<String, Value>, name: &str, uid: &str) {
    if let Some(t) = spec.get_mut("template").and_then(map) {
        if let Some(meta) = map(child(t, "metadata")) {
            if let Some(labels) = map(child(meta, "labels")) {
                for key in ["job-name", "batch.kubernetes.io/job-name"] {
                    labels.entry(key).or_insert(json!(name));
                }
                for key in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
                    labels.entry(key).or_insert(json!(uid));
                }
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

fn cron_job(object: &mut Value) {
    if let Some(spec) = spec_of(object) {
        default_str(spec, "concurrencyPolicy", "Allow");
        default_ptr(spec, "suspend", json!(false));
        default_ptr(spec, "successfulJobsHistoryLimit", json!(3));
        default_ptr(spec, "failedJobsHistoryLimit", json!(1));
        if let Some(jt) = map(child(spec, "jobTemplate")) {
            embedded_metadata(jt);
            if let Some(js) = map(child(jt, "spec")) {
                template_of(js);
            }
        }
    }
    if let Some(m) = map(object) {
        initial_status(m, json!({}));
    }
}

// ---------------------------------------------------------------------------------------
// autoscaling, networking, rbac, apiextensions

fn hpa(object: &mut Value, version: &str) {
    let Some(spec) = spec_of(object) else { return };
    default_ptr(spec, "minReplicas", json!(1));
    if version != "v2" {
        return;
    }
    let empty = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    for_each_item(spec.get_mut("metrics"), |metric| {
        if let Some(metric) = map(metric) {
            for source in metric.values_mut().filter_map(map) {
                if let Some(t) = source.get_mut("target").and_then(map) {
                    quantity_field(t, "value");
                    quantity_field(t, "averageValue");
                }
            }
        }
    });
    // SetDefaults_HorizontalPodAutoscalerBehavior: only when behavior is given.
    if let Some(b) = spec.get_mut("behavior").and_then(map) {
        let up = json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15}
            ]
        });
        let down = json!({
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]
        });
        for (key, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let rules = map(child(b, key)).expect("object");
            for (k, v) in defaults.as_object().expect("object") {
                default_ptr(rules, k, v.clone());
            }
        }
    }
}

fn network_policy(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    for dir in ["ingress", "egress"] {
        for_each_item(spec.get_mut(dir), |rule| {
            for_each_item(rule.get_mut("ports"), |p| {
                if let Some(p) = map(p) {
                    default_str(p, "protocol", "TCP");
                }
            });
        });
    }
    let empty_types = spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty_types {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec.insert("policyTypes".into(), types);
    }
}

/// networking/v1 has no Ingress defaults (pathType is required); only the zero status.
fn ingress(object: &mut Value) {
    if let Some(m) = map(object) {
        initial_status(m, json!({"loadBalancer": {}}));
    }
}

fn role_binding(object: &mut Value) {
    let Some(m) = map(object) else { return };
    if let Some(rr) = m.get_mut("roleRef").and_then(map) {
        default_str(rr, "apiGroup", "rbac.authorization.k8s.io");
    }
    for_each_item(m.get_mut("subjects"), |s| {
        let Some(s) = map(s) else { return };
        if matches!(
            s.get("kind").and_then(Value::as_str),
            Some("User" | "Group")
        ) {
            default_str(s, "apiGroup", "rbac.authorization.k8s.io");
        }
    });
}

fn crd(object: &mut Value, create: bool) {
    let Some(m) = map(object) else { return };
    let Some(spec) = map(child(m, "spec")) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(map) {
        if let Some(kind) = names
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_string)
        {
            default_str(names, "singular", &kind.to_lowercase());
            if !kind.is_empty() {
                default_str(names, "listKind", &format!("{kind}List"));
            }
        }
    }
    default_ptr(spec, "conversion", json!({"strategy": "None"}));
    if let Some(svc) = spec
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(map)
    {
        default_ptr(svc, "port", json!(443));
    }
    let storage = spec
        .get("versions")
        .and_then(Value::as_array)
        .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
        .and_then(|v| v["name"].as_str())
        .map(str::to_string);
    if create {
        let stored: Vec<String> = storage.into_iter().collect();
        initial_status(
            m,
            json!({"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": stored}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(api_version: &str, kind: &str, v: Value) -> Value {
        let mut v = v;
        apply(api_version, kind, &mut v);
        v
    }

    fn container_template(containers: Value) -> Value {
        json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}})
    }

    #[test]
    fn deployment_gets_strategy_limits_and_pod_template_defaults() {
        let d = defaulted(
            "apps/v1",
            "Deployment",
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": container_template(json!([{
                        "name": "web", "image": "nginx:1.27",
                        "ports": [{"containerPort": 80}],
                        "resources": {"limits": {"cpu": "1000m", "memory": "1.5Gi"},
                                      "requests": {"cpu": 0.5, "memory": "1024Mi"}},
                        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                        "livenessProbe": {"httpGet": {"port": 80}},
                        "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5}
                    }]))
                }
            }),
        );
        let spec = &d["spec"];
        assert_eq!(spec["replicas"], 1);
        assert_eq!(
            spec["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(spec["revisionHistoryLimit"], 10);
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        assert_eq!(
            spec["template"]["metadata"]["creationTimestamp"],
            Value::Null
        );
        assert!(spec["template"]["metadata"]
            .as_object()
            .unwrap()
            .contains_key("creationTimestamp"));
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Always");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["schedulerName"], "default-scheduler");
        assert_eq!(pod["securityContext"], json!({}));
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        assert!(pod.get("enableServiceLinks").is_none(), "Pods only");
        let c = &pod["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c["terminationMessagePolicy"], "File");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        assert_eq!(
            c["resources"],
            json!({"limits": {"cpu": "1", "memory": "1536Mi"}, "requests": {"cpu": "500m", "memory": "1Gi"}})
        );
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], 5);
        assert_eq!(c["readinessProbe"]["grpc"]["service"], "");
        assert_eq!(d["status"], json!({}));
    }

    #[test]
    fn image_pull_policy_follows_the_tag() {
        for (image, want) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry:5000/team/app", "Always"),
            ("registry:5000/team/app:v2", "IfNotPresent"),
            ("nginx@sha256:abcd", "IfNotPresent"),
            ("nginx:latest@sha256:abcd", "Always"),
        ] {
            assert_eq!(image_pull_policy(image), want, "{image}");
        }
        let d = defaulted(
            "v1",
            "Pod",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [
                {"name": "a", "image": "busybox", "imagePullPolicy": "Never"}]}}),
        );
        assert_eq!(d["spec"]["containers"][0]["imagePullPolicy"], "Never");
    }

    #[test]
    fn pod_only_defaults_and_status() {
        let d = defaulted(
            "v1",
            "Pod",
            json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {
                "hostNetwork": true,
                "containers": [{"name": "a", "image": "busybox:1.36",
                    "ports": [{"containerPort": 8080}],
                    "resources": {"limits": {"cpu": "250m", "memory": "64Mi"}}}]}}),
        );
        let spec = &d["spec"];
        assert_eq!(spec["enableServiceLinks"], true);
        let c = &spec["containers"][0];
        assert_eq!(
            c["resources"]["requests"],
            json!({"cpu": "250m", "memory": "64Mi"})
        );
        assert_eq!(c["ports"][0]["hostPort"], 8080);
        assert_eq!(
            d["status"],
            json!({"phase": "Pending", "qosClass": "Guaranteed"})
        );
        let be = defaulted(
            "v1",
            "Pod",
            json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "a", "image": "x:1"}]}}),
        );
        assert_eq!(be["status"]["qosClass"], "BestEffort");
        let bu = defaulted(
            "v1",
            "Pod",
            json!({"metadata": {"name": "r"}, "spec": {"containers": [{"name": "a", "image": "x:1",
                "resources": {"requests": {"cpu": "100m"}}}]}}),
        );
        assert_eq!(bu["status"]["qosClass"], "Burstable");
    }

    #[test]
    fn volumes() {
        let d = defaulted(
            "v1",
            "Pod",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [], "volumes": [
                {"name": "scratch"},
                {"name": "cfg", "configMap": {"name": "cfg"}},
                {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}},
                {"name": "dapi", "downwardAPI": {"items": [{"path": "l", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "c", "resourceFieldRef": {"containerName": "a", "resource": "limits.cpu"}}]}},
                {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                {"name": "host", "hostPath": {"path": "/var/log"}},
                {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "1024Mi"}},
                {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1000Mi"}}}}}}
            ]}}),
        );
        let v = &d["spec"]["volumes"];
        assert_eq!(v[0], json!({"name": "scratch", "emptyDir": {}}));
        assert_eq!(v[1]["configMap"]["defaultMode"], 420);
        assert_eq!(v[2]["secret"]["defaultMode"], 256);
        assert_eq!(v[3]["downwardAPI"]["defaultMode"], 420);
        assert_eq!(
            v[3]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
            "v1"
        );
        assert_eq!(
            v[3]["downwardAPI"]["items"][1]["resourceFieldRef"]["divisor"],
            "0"
        );
        assert_eq!(v[4]["projected"]["defaultMode"], 420);
        assert_eq!(
            v[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
        assert_eq!(v[5]["hostPath"]["type"], "");
        assert_eq!(v[6]["emptyDir"]["sizeLimit"], "1Gi");
        let tpl = &v[7]["ephemeral"]["volumeClaimTemplate"];
        assert_eq!(tpl["spec"]["volumeMode"], "Filesystem");
        assert_eq!(tpl["spec"]["resources"]["requests"]["storage"], "1000Mi");
        assert!(tpl["metadata"]
            .as_object()
            .unwrap()
            .contains_key("creationTimestamp"));
    }

    #[test]
    fn stateful_set_defaults_and_claim_templates() {
        let d = defaulted(
            "apps/v1",
            "StatefulSet",
            json!({"metadata": {"name": "db"}, "spec": {
                "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                "template": container_template(json!([{"name": "db", "image": "postgres:16"}])),
                "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}}}]
            }}),
        );
        let spec = &d["spec"];
        assert_eq!(spec["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            spec["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(
            spec["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(spec["replicas"], 1);
        assert_eq!(spec["revisionHistoryLimit"], 10);
        let pvc = &spec["volumeClaimTemplates"][0];
        assert_eq!(pvc["apiVersion"], "v1");
        assert_eq!(pvc["kind"], "PersistentVolumeClaim");
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"], json!({"phase": "Pending"}));
        // OnDelete keeps no rollingUpdate.
        let d = defaulted(
            "apps/v1",
            "StatefulSet",
            json!({"metadata": {"name": "db"}, "spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(d["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    }

    #[test]
    fn daemon_set_and_replica_set() {
        let d = defaulted(
            "apps/v1",
            "DaemonSet",
            json!({"metadata": {"name": "agent"}, "spec": {}}),
        );
        assert_eq!(
            d["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        let d = defaulted(
            "apps/v1",
            "DaemonSet",
            json!({"metadata": {"name": "agent"}, "spec": {"updateStrategy": {"type": "OnDelete"}}}),
        );
        assert_eq!(d["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        let r = defaulted(
            "apps/v1",
            "ReplicaSet",
            json!({"metadata": {"name": "rs"}, "spec": {}}),
        );
        assert_eq!(r["spec"]["replicas"], 1);
    }

    #[test]
    fn job_generated_selector_and_labels() {
        let mut alloc = ClusterAllocator::seeded(7);
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "migrate", "namespace": "default", "uid": "1111-2222"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "m", "image": "app:1"}]}}}});
        apply_with(&mut alloc, "batch/v1", "Job", &mut j);
        let spec = &j["spec"];
        assert_eq!(spec["completions"], 1);
        assert_eq!(spec["parallelism"], 1);
        assert_eq!(spec["backoffLimit"], 6);
        assert_eq!(spec["completionMode"], "NonIndexed");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["manualSelector"], false);
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(
            spec["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "1111-2222"}})
        );
        let want_labels = json!({
            "job-name": "migrate", "batch.kubernetes.io/job-name": "migrate",
            "controller-uid": "1111-2222", "batch.kubernetes.io/controller-uid": "1111-2222"});
        assert_eq!(spec["template"]["metadata"]["labels"], want_labels);
        assert_eq!(j["metadata"]["labels"], want_labels);
        assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");

        // Own labels are kept; a missing uid is allocated; parallelism alone keeps completions unset.
        let mut j = json!({"metadata": {"name": "w", "labels": {"team": "a"}},
            "spec": {"parallelism": 3, "template": {"metadata": {"labels": {"app": "w"}}, "spec": {}}}});
        apply_with(&mut alloc, "batch/v1", "Job", &mut j);
        let uid = j["metadata"]["uid"].as_str().unwrap().to_string();
        assert_eq!(uid.len(), 36);
        assert_eq!(j["metadata"]["labels"], json!({"team": "a"}));
        assert!(j["spec"].get("completions").is_none());
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"]["controller-uid"],
            uid
        );
        assert_eq!(j["spec"]["template"]["metadata"]["labels"]["app"], "w");

        // manualSelector: true leaves the selector alone.
        let mut j = json!({"metadata": {"name": "m", "uid": "u"}, "spec": {"manualSelector": true,
            "selector": {"matchLabels": {"x": "y"}}, "template": {"metadata": {"labels": {"x": "y"}}}}});
        apply_with(&mut alloc, "batch/v1", "Job", &mut j);
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"x": "y"}}));
        assert_eq!(
            j["spec"]["template"]["metadata"]["labels"],
            json!({"x": "y"})
        );
    }

    #[test]
    fn cron_job_defaults_only_the_pod_template_inside_the_job_template() {
        let d = defaulted(
            "batch/v1",
            "CronJob",
            json!({"metadata": {"name": "nightly"}, "spec": {"schedule": "0 3 * * *",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                    "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        );
        let spec = &d["spec"];
        assert_eq!(spec["concurrencyPolicy"], "Allow");
        assert_eq!(spec["suspend"], false);
        assert_eq!(spec["successfulJobsHistoryLimit"], 3);
        assert_eq!(spec["failedJobsHistoryLimit"], 1);
        let jt = &spec["jobTemplate"];
        assert!(jt["metadata"]
            .as_object()
            .unwrap()
            .contains_key("creationTimestamp"));
        assert!(jt["spec"].get("backoffLimit").is_none());
        assert_eq!(
            jt["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
    }

    #[test]
    fn service_cluster_ip_defaults_and_allocation() {
        let mut alloc = ClusterAllocator::seeded(1);
        let mut s = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}});
        apply_with(&mut alloc, "v1", "Service", &mut s);
        let spec = &s["spec"];
        assert_eq!(spec["type"], "ClusterIP");
        assert_eq!(spec["sessionAffinity"], "None");
        assert_eq!(spec["internalTrafficPolicy"], "Cluster");
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
        assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
        assert!(spec.get("externalTrafficPolicy").is_none());
        assert_eq!(
            spec["ports"],
            json!([{"port": 80, "protocol": "TCP", "targetPort": 80},
                   {"port": 443, "targetPort": "https", "protocol": "TCP"}])
        );
        let ip: std::net::Ipv4Addr = spec["clusterIP"].as_str().unwrap().parse().unwrap();
        assert_eq!(ip.octets()[0], 10);
        assert!((96..112).contains(&ip.octets()[1]), "{ip} in 10.96.0.0/12");
        assert_eq!(spec["clusterIPs"], json!([spec["clusterIP"]]));
        assert_eq!(s["status"], json!({"loadBalancer": {}}));

        // A second service never gets the same IP from the same allocator.
        let mut t = json!({"metadata": {"name": "other"}, "spec": {"ports": [{"port": 80}]}});
        apply_with(&mut alloc, "v1", "Service", &mut t);
        assert_ne!(t["spec"]["clusterIP"], s["spec"]["clusterIP"]);
    }

    #[test]
    fn service_node_ports_and_load_balancer() {
        let mut alloc = ClusterAllocator::seeded(2);
        let mut s = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer",
            "externalTrafficPolicy": "Local", "ports": [{"port": 80}, {"port": 81, "nodePort": 30081}]}});
        alloc.reserve_service(&s);
        apply_with(&mut alloc, "v1", "Service", &mut s);
        let spec = &s["spec"];
        assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
        assert_eq!(spec["externalTrafficPolicy"], "Local");
        let np = spec["ports"][0]["nodePort"].as_u64().unwrap();
        assert!((30000..=32767).contains(&np));
        assert_ne!(np, 30081);
        assert_eq!(spec["ports"][1]["nodePort"], 30081);
        assert!(spec["healthCheckNodePort"].as_u64().is_some());

        let mut n = json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        apply_with(&mut alloc, "v1", "Service", &mut n);
        assert_eq!(n["spec"]["externalTrafficPolicy"], "Cluster");
        assert!(n["spec"].get("allocateLoadBalancerNodePorts").is_none());

        // An update that omits allocated values keeps them.
        let mut upd = json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
        apply_update(&mut alloc, "v1", "Service", &n, &mut upd);
        assert_eq!(upd["spec"]["clusterIP"], n["spec"]["clusterIP"]);
        assert_eq!(
            upd["spec"]["ports"][0]["nodePort"],
            n["spec"]["ports"][0]["nodePort"]
        );
    }

    #[test]
    fn same_port_number_shares_a_node_port() {
        let mut alloc = ClusterAllocator::seeded(4);
        let mut s = json!({"metadata": {"name": "dns"}, "spec": {"type": "NodePort", "ports": [
            {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
            {"name": "dns-udp", "port": 53, "protocol": "UDP"},
            {"name": "metrics", "port": 9153}]}});
        apply_with(&mut alloc, "v1", "Service", &mut s);
        let ports = &s["spec"]["ports"];
        assert_eq!(ports[0]["nodePort"], ports[1]["nodePort"]);
        assert_ne!(ports[0]["nodePort"], ports[2]["nodePort"]);
    }

    #[test]
    fn headless_and_external_name_services() {
        let h = defaulted(
            "v1",
            "Service",
            json!({"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "selector": {"app": "db"}}}),
        );
        assert_eq!(h["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(h["spec"]["ipFamilyPolicy"], "SingleStack");
        let ns = defaulted(
            "v1",
            "Service",
            json!({"metadata": {"name": "ext"}, "spec": {"clusterIP": "None"}}),
        );
        assert_eq!(ns["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(ns["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
        let e = defaulted(
            "v1",
            "Service",
            json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
        );
        assert!(e["spec"].get("clusterIP").is_none());
        assert!(e["spec"].get("internalTrafficPolicy").is_none());
        assert!(e["spec"].get("ipFamilies").is_none());
        let c = defaulted(
            "v1",
            "Service",
            json!({"metadata": {"name": "c"}, "spec": {"sessionAffinity": "ClientIP"}}),
        );
        assert_eq!(
            c["spec"]["sessionAffinityConfig"],
            json!({"clientIP": {"timeoutSeconds": 10800}})
        );
    }

    #[test]
    fn apply_is_deterministic_per_object() {
        let s = json!({"metadata": {"name": "web", "namespace": "a"}, "spec": {"ports": [{"port": 80}]}});
        let a = defaulted("v1", "Service", s.clone());
        let b = defaulted("v1", "Service", s);
        assert_eq!(a, b);
    }

    #[test]
    fn secret_string_data_is_folded_into_data() {
        let s = defaulted(
            "v1",
            "Secret",
            json!({"metadata": {"name": "s"}, "data": {"a": "b2xk", "keep": "eA=="},
                   "stringData": {"a": "new", "user": "admin"}}),
        );
        assert_eq!(s["type"], "Opaque");
        assert!(s.get("stringData").is_none());
        assert_eq!(
            s["data"],
            json!({"a": "bmV3", "keep": "eA==", "user": "YWRtaW4="})
        );
        let t = defaulted(
            "v1",
            "Secret",
            json!({"metadata": {"name": "t"}, "type": "kubernetes.io/tls", "data": {}}),
        );
        assert_eq!(t["type"], "kubernetes.io/tls");
    }

    #[test]
    fn pvc_and_namespace() {
        let p = defaulted(
            "v1",
            "PersistentVolumeClaim",
            json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1024Mi"}}}}),
        );
        assert_eq!(p["spec"]["volumeMode"], "Filesystem");
        assert_eq!(p["spec"]["resources"]["requests"]["storage"], "1Gi");
        assert_eq!(p["status"], json!({"phase": "Pending"}));

        let n = defaulted("v1", "Namespace", json!({"metadata": {"name": "team-a"}}));
        assert_eq!(
            n["metadata"]["labels"]["kubernetes.io/metadata.name"],
            "team-a"
        );
        assert_eq!(n["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(n["status"], json!({"phase": "Active"}));

        let cm = defaulted(
            "v1",
            "ConfigMap",
            json!({"metadata": {"name": "c"}, "data": {"k": "v"}}),
        );
        assert_eq!(cm, json!({"metadata": {"name": "c"}, "data": {"k": "v"}}));
    }

    #[test]
    fn reapplying_keeps_existing_status_and_is_idempotent() {
        // The simulator also runs `apply` on updates: existing status must survive.
        let n = defaulted(
            "v1",
            "Namespace",
            json!({"metadata": {"name": "t"}, "spec": {"finalizers": ["kubernetes"]},
                   "status": {"phase": "Terminating"}}),
        );
        assert_eq!(n["status"]["phase"], "Terminating");
        let p = defaulted(
            "v1",
            "Pod",
            json!({"metadata": {"name": "p"}, "spec": {"containers": []},
                   "status": {"phase": "Running", "qosClass": "BestEffort"}}),
        );
        assert_eq!(p["status"]["phase"], "Running");
        for (av, kind, obj) in [
            (
                "apps/v1",
                "Deployment",
                json!({"metadata": {"name": "d"}, "spec": {"template": container_template(json!([{"name": "a", "image": "a"}]))}}),
            ),
            (
                "batch/v1",
                "Job",
                json!({"metadata": {"name": "j", "uid": "u1"}, "spec": {"template": {"spec": {}}}}),
            ),
            (
                "v1",
                "Service",
                json!({"metadata": {"name": "s"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}),
            ),
        ] {
            let once = defaulted(av, kind, obj);
            assert_eq!(
                defaulted(av, kind, once.clone()),
                once,
                "{kind} defaults are idempotent"
            );
        }
    }

    #[test]
    fn hpa_v2_metrics_and_behavior() {
        let h = defaulted(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 5,
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}),
        );
        assert_eq!(h["spec"]["minReplicas"], 1);
        assert_eq!(
            h["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}])
        );
        assert!(h["spec"].get("behavior").is_none());

        let h = defaulted(
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            json!({"metadata": {"name": "web"}, "spec": {"maxReplicas": 5,
                "metrics": [{"type": "Resource", "resource": {"name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "1024Mi"}}}],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}}}),
        );
        let b = &h["spec"]["behavior"];
        assert_eq!(b["scaleDown"]["stabilizationWindowSeconds"], 300);
        assert_eq!(b["scaleDown"]["selectPolicy"], "Max");
        assert_eq!(
            b["scaleDown"]["policies"],
            json!([{"type": "Percent", "value": 100, "periodSeconds": 15}])
        );
        assert_eq!(b["scaleUp"]["stabilizationWindowSeconds"], 0);
        assert_eq!(
            b["scaleUp"]["policies"][0],
            json!({"type": "Pods", "value": 4, "periodSeconds": 15})
        );
        assert_eq!(
            h["spec"]["metrics"][0]["resource"]["target"]["averageValue"],
            "1Gi"
        );
    }

    #[test]
    fn rbac_network_policy_ingress_crd() {
        let rb = defaulted(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            json!({"metadata": {"name": "rb"}, "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "User", "name": "alice"},
                             {"kind": "ServiceAccount", "name": "bot", "namespace": "ci"}]}),
        );
        assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
        assert_eq!(rb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
        assert!(rb["subjects"][1].get("apiGroup").is_none());

        let np = defaulted(
            "networking.k8s.io/v1",
            "NetworkPolicy",
            json!({"metadata": {"name": "np"}, "spec": {"podSelector": {},
                "egress": [{"ports": [{"port": 53}]}]}}),
        );
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");

        let ing = defaulted(
            "networking.k8s.io/v1",
            "Ingress",
            json!({"metadata": {"name": "i"}, "spec": {"rules": [{"http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
        );
        assert_eq!(ing["status"], json!({"loadBalancer": {}}));
        assert!(ing["spec"].get("ingressClassName").is_none());

        let crd = defaulted(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com",
                "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true}]}}),
        );
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
    }

    #[test]
    fn custom_resources_and_unknown_kinds_are_untouched() {
        let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}});
        assert_eq!(defaulted("example.com/v1", "Widget", w.clone()), w);
    }

    #[test]
    fn allocator_reservations() {
        let mut a = ClusterAllocator::seeded(3);
        assert!(
            !a.reserve_cluster_ip("10.96.0.1"),
            "kubernetes service IP is reserved"
        );
        assert!(a.reserve_cluster_ip("10.100.0.5"));
        assert!(!a.reserve_cluster_ip("10.100.0.5"));
        assert!(!a.reserve_cluster_ip("192.168.0.1"));
        a.release_cluster_ip("10.100.0.5");
        assert!(a.reserve_cluster_ip("10.100.0.5"));
        assert!(a.reserve_node_port(30000));
        assert!(!a.reserve_node_port(30000));
        assert!(!a.reserve_node_port(80));
        let mut seen = HashSet::new();
        for _ in 0..2767 {
            assert!(seen.insert(a.node_port().unwrap()));
        }
        assert_eq!(a.node_port(), None, "range exhausted");
        let u = a.uid();
        assert_eq!(&u[14..15], "4");
    }

    fn declared(api_version: &str, kind: &str, v: Value) -> Value {
        let mut v = v;
        apply_declared(api_version, kind, &mut v);
        v
    }

    #[test]
    fn declared_mode_has_the_defaults_but_no_allocations_or_status() {
        let svc = declared(
            "v1",
            "Service",
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "web", "namespace": "shop"},
                   "spec": {"type": "NodePort", "selector": {"app": "web"},
                            "ports": [{"port": 80}]}}),
        );
        let spec = &svc["spec"];
        assert_eq!(spec["sessionAffinity"], "None");
        assert_eq!(spec["externalTrafficPolicy"], "Cluster");
        assert_eq!(spec["ports"][0]["targetPort"], 80);
        assert_eq!(spec["ports"][0]["protocol"], "TCP");
        for allocated in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            assert!(spec.get(allocated).is_none(), "{allocated}: {spec}");
        }
        assert!(spec["ports"][0].get("nodePort").is_none());
        assert!(svc.get("status").is_none());

        let job = declared(
            "batch/v1",
            "Job",
            json!({"apiVersion": "batch/v1", "kind": "Job",
                   "metadata": {"name": "m", "namespace": "shop"},
                   "spec": {"template": {"metadata": {"labels": {"app": "m"}},
                            "spec": {"restartPolicy": "Never",
                                     "containers": [{"name": "c", "image": "m:1"}]}}}}),
        );
        assert!(job["metadata"].get("uid").is_none());
        assert!(job["spec"].get("selector").is_none());
        assert_eq!(job["metadata"]["labels"], json!({"app": "m"}));
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"],
            json!({"app": "m"})
        );
        assert_eq!(job["spec"]["suspend"], false);
        assert_eq!(job["spec"]["backoffLimit"], 6);
        assert!(job["spec"]["template"]["metadata"]
            .get("creationTimestamp")
            .is_none());
        let c = &job["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "IfNotPresent");

        let secret = declared(
            "v1",
            "Secret",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                   "stringData": {"k": "v"}}),
        );
        assert_eq!(secret["type"], "Opaque");
        assert_eq!(secret["stringData"], json!({"k": "v"}));
        assert!(secret.get("data").is_none());

        // Custom resources: untouched.
        let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {"a": 1}});
        assert_eq!(declared("example.com/v1", "Widget", cr.clone()), cr);
    }

    #[test]
    fn declared_defaults_are_a_subset_of_the_served_object() {
        // Whatever apply_declared adds, a create through the simulator has the same value.
        let objects = [
            (
                "apps/v1",
                "Deployment",
                json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"selector": {"matchLabels": {"app": "web"}},
                         "template": container_template(json!([{"name": "web", "image": "web:1",
                            "ports": [{"containerPort": 80}],
                            "readinessProbe": {"httpGet": {"port": 80}}}]))}}),
            ),
            (
                "batch/v1",
                "CronJob",
                json!({"apiVersion": "batch/v1", "kind": "CronJob",
                "metadata": {"name": "c", "namespace": "shop"},
                "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template":
                    container_template(json!([{"name": "c", "image": "c"}]))}}}}),
            ),
            (
                "v1",
                "Service",
                json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "s", "namespace": "shop"},
                "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                         "ports": [{"port": 53, "protocol": "UDP"}]}}),
            ),
            (
                "v1",
                "Namespace",
                json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "shop"}}),
            ),
        ];
        fn subset(d: &Value, s: &Value, path: &str) {
            match (d, s) {
                (Value::Object(dm), Value::Object(sm)) => {
                    for (k, v) in dm {
                        let sv = sm.get(k).unwrap_or_else(|| panic!("{path}/{k} not served"));
                        subset(v, sv, &format!("{path}/{k}"));
                    }
                }
                (Value::Array(da), Value::Array(sa)) => {
                    assert_eq!(da.len(), sa.len(), "{path}");
                    for (i, (dv, sv)) in da.iter().zip(sa).enumerate() {
                        subset(dv, sv, &format!("{path}/{i}"));
                    }
                }
                _ => assert_eq!(d, s, "{path}"),
            }
        }
        for (api_version, kind, object) in objects {
            let d = declared(api_version, kind, object.clone());
            let served = defaulted(api_version, kind, object);
            subset(&d, &served, kind);
        }
    }
}
