//! core/v1 (`pkg/apis/core/v1/defaults.go`): pods, pod templates and ReplicationController,
//! with what they contain (containers, probes, volumes, the PVC spec of ephemeral volumes).
//! The other core kinds are in `core_objects`.

use serde_json::{json, Map, Value};

use super::fields::{
    child, declared_status, default_int, default_ptr, default_str, for_each_item, map,
    quantity_field, resource_list, resource_requirements,
};

pub(super) fn pod(object: &mut Value) {
    let Some(m) = map(object) else { return };
    // The ResourceList defaults inside a status the manifest carries: each container's
    // allocated and actual resources.
    if let Some(status) = declared_status(m) {
        for list in [
            "containerStatuses",
            "initContainerStatuses",
            "ephemeralContainerStatuses",
        ] {
            for_each_item(status.get_mut(list), |cs| {
                if let Some(cs) = map(cs) {
                    resource_list(cs.get_mut("allocatedResources"));
                    resource_requirements(cs.get_mut("resources"));
                }
            });
        }
    }
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
}

/// A PodTemplateSpec: its ObjectMeta (a non-pointer struct, so always present) and
/// SetDefaults_PodSpec with the nested defaults. A null or missing template is created
/// for the same reason.
pub(super) fn pod_template(template: &mut Value) {
    if template.is_null() {
        *template = json!({});
    }
    let Some(t) = map(template) else { return };
    child(t, "metadata");
    if let Some(spec) = map(child(t, "spec")) {
        pod_spec(spec);
    }
}

/// The pod template at `spec.template`, created if missing.
pub(super) fn template_of(spec: &mut Map<String, Value>) {
    pod_template(spec.entry("template").or_insert(Value::Null));
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

fn container(c: &mut Value) {
    let Some(c) = map(c) else { return };
    if matches!(c.get("imagePullPolicy"), None | Some(Value::Null))
        || c.get("imagePullPolicy") == Some(&json!(""))
    {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = super::image::pull_policy(image);
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

/// The field references of a downwardAPI volume or projection's items.
fn downward_api_items(source: Option<&mut Value>) {
    if let Some(d) = source.and_then(map) {
        for_each_item(d.get_mut("items"), |i| {
            if let Some(i) = map(i) {
                field_refs(i);
            }
        });
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
    downward_api_items(v.get_mut("downwardAPI"));
    if let Some(p) = v.get_mut("projected").and_then(map) {
        for_each_item(p.get_mut("sources"), |s| {
            let Some(s) = map(s) else { return };
            if let Some(t) = s.get_mut("serviceAccountToken").and_then(map) {
                default_ptr(t, "expirationSeconds", json!(3600));
            }
            downward_api_items(s.get_mut("downwardAPI"));
        });
    }
    in_tree_sources(v);
    if let Some(e) = v.get_mut("emptyDir").and_then(map) {
        quantity_field(e, "sizeLimit");
    }
    if let Some(tpl) = v
        .get_mut("ephemeral")
        .and_then(map)
        .and_then(|e| e.get_mut("volumeClaimTemplate"))
        .and_then(map)
    {
        child(tpl, "metadata");
        if let Some(spec) = map(child(tpl, "spec")) {
            pvc_spec(spec);
        }
    }
}

/// The in-tree sources' own defaults, shared by a pod's volumes and a PersistentVolume's
/// spec (whose RBD, iSCSI and ScaleIO sources are the `*PersistentVolumeSource` twins with
/// the same defaults): SetDefaults_HostPathVolumeSource, SetDefaults_AzureDiskVolumeSource,
/// and the `+default` markers of RBD, iSCSI and ScaleIO that defaulter-gen turns into code.
pub(super) fn in_tree_sources(v: &mut Map<String, Value>) {
    if let Some(h) = v.get_mut("hostPath").and_then(map) {
        default_ptr(h, "type", json!(""));
    }
    if let Some(a) = v.get_mut("azureDisk").and_then(map) {
        default_ptr(a, "cachingMode", json!("ReadWrite"));
        default_ptr(a, "kind", json!("Shared"));
        default_ptr(a, "fsType", json!("ext4"));
        default_ptr(a, "readOnly", json!(false));
    }
    if let Some(i) = v.get_mut("iscsi").and_then(map) {
        default_str(i, "iscsiInterface", "default");
    }
    if let Some(r) = v.get_mut("rbd").and_then(map) {
        default_str(r, "pool", "rbd");
        default_str(r, "user", "admin");
        default_str(r, "keyring", "/etc/ceph/keyring");
    }
    if let Some(s) = v.get_mut("scaleIO").and_then(map) {
        default_str(s, "storageMode", "ThinProvisioned");
        default_str(s, "fsType", "xfs");
    }
}

pub(super) fn replication_controller(object: &mut Value) {
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
}

/// SetDefaults_PersistentVolumeClaimSpec and the ResourceList defaults of its resources.
pub(super) fn pvc_spec(spec: &mut Map<String, Value>) {
    default_ptr(spec, "volumeMode", json!("Filesystem"));
    resource_requirements(spec.get_mut("resources"));
}
