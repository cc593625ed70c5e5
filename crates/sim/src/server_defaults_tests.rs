use super::*;

fn created(api_version: &str, kind: &str, v: Value) -> Value {
    let mut v = v;
    as_created(api_version, kind, &mut v);
    v
}

/// Hands out fixed values in order, so a test can tell which allocation went where.
struct Sequence {
    next_ip: u32,
    next_port: u16,
    next_uid: u32,
}

impl Sequence {
    fn new() -> Self {
        Sequence {
            next_ip: 10,
            next_port: NODE_PORT_MIN,
            next_uid: 1,
        }
    }
}

impl Allocator for Sequence {
    fn cluster_ip(&mut self) -> Option<String> {
        self.next_ip += 1;
        Some(std::net::Ipv4Addr::from(SERVICE_CIDR_FIRST + self.next_ip).to_string())
    }
    fn node_port(&mut self) -> Option<u16> {
        self.next_port += 1;
        Some(self.next_port)
    }
    fn uid(&mut self) -> String {
        self.next_uid += 1;
        format!("uid-{}", self.next_uid)
    }
}

fn container_template(containers: Value) -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}})
}

#[test]
fn workloads_get_zero_status_and_printed_zero_creation_timestamps() {
    let d = created(
        "apps/v1",
        "Deployment",
        json!({"metadata": {"name": "web"}, "spec": {"template":
            container_template(json!([{"name": "web", "image": "nginx:1.27"}]))}}),
    );
    assert_eq!(d["status"], json!({}));
    assert_eq!(d["spec"]["replicas"], 1, "declared defaults come first");
    let meta = d["spec"]["template"]["metadata"].as_object().unwrap();
    assert_eq!(meta.get("creationTimestamp"), Some(&Value::Null));

    let s = created(
        "apps/v1",
        "StatefulSet",
        json!({"metadata": {"name": "db"}, "spec": {"volumeClaimTemplates": [{"metadata": {"name": "data"}}]}}),
    );
    assert_eq!(s["status"], json!({"availableReplicas": 0, "replicas": 0}));
    let claim = &s["spec"]["volumeClaimTemplates"][0]["metadata"];
    assert_eq!(claim.get("creationTimestamp"), Some(&Value::Null));

    let c = created(
        "batch/v1",
        "CronJob",
        json!({"metadata": {"name": "nightly"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "volumes": [{"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}}}}}}),
    );
    let jt = &c["spec"]["jobTemplate"];
    for meta in [
        &jt["metadata"],
        &jt["spec"]["template"]["metadata"],
        &jt["spec"]["template"]["spec"]["volumes"][0]["ephemeral"]["volumeClaimTemplate"]
            ["metadata"],
    ] {
        assert_eq!(meta.get("creationTimestamp"), Some(&Value::Null), "{meta}");
    }
    let ds = created(
        "apps/v1",
        "DaemonSet",
        json!({"metadata": {"name": "agent"}, "spec": {}}),
    );
    assert_eq!(ds["status"]["numberReady"], 0);
    let rs = created(
        "apps/v1",
        "ReplicaSet",
        json!({"metadata": {"name": "rs"}, "spec": {}}),
    );
    assert_eq!(rs["status"], json!({"replicas": 0}));
}

#[test]
fn pod_phase_and_qos_class_on_create_only() {
    let d = created(
        "v1",
        "Pod",
        json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {
            "containers": [{"name": "a", "image": "busybox:1.36",
                "resources": {"limits": {"cpu": "250m", "memory": "64Mi"}}}]}}),
    );
    assert_eq!(
        d["status"],
        json!({"phase": "Pending", "qosClass": "Guaranteed"})
    );
    let be = created(
        "v1",
        "Pod",
        json!({"metadata": {"name": "q"}, "spec": {"containers": [{"name": "a", "image": "x:1"}]}}),
    );
    assert_eq!(be["status"]["qosClass"], "BestEffort");
    let bu = created(
        "v1",
        "Pod",
        json!({"metadata": {"name": "r"}, "spec": {"containers": [{"name": "a", "image": "x:1",
            "resources": {"requests": {"cpu": "100m"}}}]}}),
    );
    assert_eq!(bu["status"]["qosClass"], "Burstable");

    // An update keeps whatever status it carries.
    let mut running = json!({"metadata": {"name": "p"}, "spec": {"containers": []},
        "status": {"phase": "Running", "qosClass": "BestEffort"}});
    on_update(&mut Sequence::new(), "v1", "Pod", &be, &mut running);
    assert_eq!(running["status"]["phase"], "Running");
}

#[test]
fn job_generated_selector_and_labels() {
    let mut alloc = Sequence::new();
    let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "migrate", "namespace": "default", "uid": "1111-2222"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "m", "image": "app:1"}]}}}});
    on_create(&mut alloc, "batch/v1", "Job", &mut j);
    let spec = &j["spec"];
    assert_eq!(spec["backoffLimit"], 6, "declared defaults come first");
    assert_eq!(
        spec["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "1111-2222"}})
    );
    let want_labels = json!({
        "job-name": "migrate", "batch.kubernetes.io/job-name": "migrate",
        "controller-uid": "1111-2222", "batch.kubernetes.io/controller-uid": "1111-2222"});
    assert_eq!(spec["template"]["metadata"]["labels"], want_labels);
    assert_eq!(j["metadata"]["labels"], want_labels);
    assert_eq!(j["status"], json!({}));

    // A template with labels: the Job shares the template's labels, generated ones too.
    let mut j = json!({"metadata": {"name": "t"},
        "spec": {"template": {"metadata": {"labels": {"app": "t"}}, "spec": {}}}});
    on_create(&mut alloc, "batch/v1", "Job", &mut j);
    assert_eq!(j["metadata"]["uid"], "uid-2");
    assert_eq!(
        j["metadata"]["labels"],
        j["spec"]["template"]["metadata"]["labels"]
    );
    assert_eq!(j["metadata"]["labels"]["app"], "t");
    assert_eq!(j["metadata"]["labels"]["controller-uid"], "uid-2");

    // Own labels are kept; a missing uid is allocated.
    let mut j = json!({"metadata": {"name": "w", "labels": {"team": "a"}},
        "spec": {"parallelism": 3, "template": {"metadata": {"labels": {"app": "w"}}, "spec": {}}}});
    on_create(&mut alloc, "batch/v1", "Job", &mut j);
    assert_eq!(j["metadata"]["uid"], "uid-3");
    assert_eq!(j["metadata"]["labels"], json!({"team": "a"}));
    assert_eq!(
        j["spec"]["template"]["metadata"]["labels"]["controller-uid"],
        "uid-3"
    );

    // manualSelector: true leaves the selector alone.
    let mut j = json!({"metadata": {"name": "m", "uid": "u"}, "spec": {"manualSelector": true,
        "selector": {"matchLabels": {"x": "y"}}, "template": {"metadata": {"labels": {"x": "y"}}}}});
    on_create(&mut alloc, "batch/v1", "Job", &mut j);
    assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"x": "y"}}));
    assert_eq!(
        j["spec"]["template"]["metadata"]["labels"],
        json!({"x": "y"})
    );

    // An update generates nothing and keeps the uid.
    let old = j.clone();
    let mut upd = json!({"metadata": {"name": "m"}, "spec": {"manualSelector": false,
        "template": {"metadata": {"labels": {"x": "y"}}}}});
    on_update(&mut alloc, "batch/v1", "Job", &old, &mut upd);
    assert_eq!(upd["metadata"]["uid"], "u");
    assert!(upd["spec"].get("selector").is_none());
}

#[test]
fn service_cluster_ip_allocation() {
    let mut alloc = Sequence::new();
    let mut s = json!({"metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    on_create(&mut alloc, "v1", "Service", &mut s);
    let spec = &s["spec"];
    assert_eq!(spec["type"], "ClusterIP", "declared defaults come first");
    assert_eq!(spec["clusterIP"], "10.96.0.11");
    assert_eq!(spec["clusterIPs"], json!(["10.96.0.11"]));
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert!(spec["ports"][0].get("nodePort").is_none());
    assert_eq!(s["status"], json!({"loadBalancer": {}}));

    // The identity allocator stays inside 10.96.0.0/12 and is stable per object.
    let t =
        json!({"metadata": {"name": "web", "namespace": "a"}, "spec": {"ports": [{"port": 80}]}});
    let a = created("v1", "Service", t.clone());
    assert_eq!(a, created("v1", "Service", t));
    let ip: std::net::Ipv4Addr = a["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
    assert_eq!(ip.octets()[0], 10);
    assert!((96..112).contains(&ip.octets()[1]), "{ip} in 10.96.0.0/12");
}

#[test]
fn service_node_ports_and_load_balancer() {
    let mut alloc = Sequence::new();
    let mut s = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer",
        "externalTrafficPolicy": "Local", "ports": [{"port": 80}, {"port": 81, "nodePort": 30081}]}});
    on_create(&mut alloc, "v1", "Service", &mut s);
    let spec = &s["spec"];
    assert_eq!(spec["ports"][0]["nodePort"], 30001);
    assert_eq!(spec["ports"][1]["nodePort"], 30081);
    assert_eq!(spec["healthCheckNodePort"], 30002);

    let mut n =
        json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    on_create(&mut alloc, "v1", "Service", &mut n);
    assert_eq!(n["spec"]["ports"][0]["nodePort"], 30003);
    assert!(n["spec"].get("healthCheckNodePort").is_none());

    // An update that omits allocated values keeps them and allocates nothing.
    let mut upd =
        json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}});
    on_update(&mut alloc, "v1", "Service", &n, &mut upd);
    assert_eq!(upd["spec"]["clusterIP"], n["spec"]["clusterIP"]);
    assert_eq!(upd["spec"]["ports"][0]["nodePort"], 30003);
    assert_eq!(alloc.next_port, 30003);

    // Without allocateLoadBalancerNodePorts a LoadBalancer gets no node ports.
    let mut quiet = json!({"metadata": {"name": "q"}, "spec": {"type": "LoadBalancer",
        "allocateLoadBalancerNodePorts": false, "ports": [{"port": 80}]}});
    on_create(&mut alloc, "v1", "Service", &mut quiet);
    assert!(quiet["spec"]["ports"][0].get("nodePort").is_none());
}

#[test]
fn same_port_number_shares_a_node_port() {
    let mut s = json!({"metadata": {"name": "dns"}, "spec": {"type": "NodePort", "ports": [
        {"name": "dns-tcp", "port": 53, "protocol": "TCP"},
        {"name": "dns-udp", "port": 53, "protocol": "UDP"},
        {"name": "metrics", "port": 9153}]}});
    on_create(&mut Sequence::new(), "v1", "Service", &mut s);
    let ports = &s["spec"]["ports"];
    assert_eq!(ports[0]["nodePort"], ports[1]["nodePort"]);
    assert_ne!(ports[0]["nodePort"], ports[2]["nodePort"]);
}

#[test]
fn headless_and_external_name_services() {
    let h = created(
        "v1",
        "Service",
        json!({"metadata": {"name": "db"}, "spec": {"clusterIP": "None", "selector": {"app": "db"}}}),
    );
    assert_eq!(h["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(h["spec"]["ipFamilyPolicy"], "SingleStack");
    let ns = created(
        "v1",
        "Service",
        json!({"metadata": {"name": "ext"}, "spec": {"clusterIP": "None"}}),
    );
    assert_eq!(ns["spec"]["ipFamilyPolicy"], "RequireDualStack");
    assert_eq!(ns["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
    let e = created(
        "v1",
        "Service",
        json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
    );
    assert!(e["spec"].get("clusterIP").is_none());
    assert!(e["spec"].get("ipFamilies").is_none());
    assert_eq!(e["status"], json!({"loadBalancer": {}}));
}

#[test]
fn secret_string_data_is_folded_into_data_on_write() {
    let s = created(
        "v1",
        "Secret",
        json!({"metadata": {"name": "s"}, "stringData": {"user": "admin"}}),
    );
    assert_eq!(
        s,
        json!({"metadata": {"name": "s"}, "type": "Opaque", "data": {"user": "YWRtaW4="}})
    );
}

#[test]
fn namespace_finalizer_and_phase() {
    let n = created("v1", "Namespace", json!({"metadata": {"name": "team-a"}}));
    assert_eq!(
        n["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert_eq!(n["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(n["status"], json!({"phase": "Active"}));

    // Updates cannot change finalizers or status (subresources only).
    let terminating = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Terminating"}});
    let mut upd = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": []}});
    on_update(
        &mut Sequence::new(),
        "v1",
        "Namespace",
        &terminating,
        &mut upd,
    );
    assert_eq!(upd["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(upd["status"]["phase"], "Terminating");
}

#[test]
fn pvc_ingress_and_crd_status() {
    let p = created(
        "v1",
        "PersistentVolumeClaim",
        json!({"metadata": {"name": "data"}, "spec": {}}),
    );
    assert_eq!(p["status"], json!({"phase": "Pending"}));
    let i = created(
        "networking.k8s.io/v1",
        "Ingress",
        json!({"metadata": {"name": "i"}, "spec": {}}),
    );
    assert_eq!(i["status"], json!({"loadBalancer": {}}));
    let crd = created(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {"group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced",
            "versions": [{"name": "v1beta1", "served": true, "storage": false},
                         {"name": "v1", "served": true, "storage": true}]}}),
    );
    assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
}

#[test]
fn creating_again_is_idempotent_and_keeps_status() {
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
        (
            "v1",
            "Namespace",
            json!({"metadata": {"name": "t"}, "spec": {"finalizers": ["kubernetes"]},
                   "status": {"phase": "Terminating"}}),
        ),
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            json!({"metadata": {"name": "h"}, "spec": {"behavior": {}}}),
        ),
    ] {
        let once = created(av, kind, obj);
        assert_eq!(
            created(av, kind, once.clone()),
            once,
            "{kind} defaults are idempotent"
        );
    }
}

#[test]
fn custom_resources_are_untouched() {
    let w = json!({"apiVersion": "example.com/v1", "kind": "Deployment", "metadata": {"name": "w"},
        "spec": {"template": {"metadata": {}}}});
    assert_eq!(created("example.com/v1", "Deployment", w.clone()), w);
}

#[test]
fn declared_defaults_are_a_subset_of_the_created_object() {
    // Whatever the differ commits as a default, a create through the simulator has too.
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
        let mut declared = object.clone();
        driftd_k8s::defaults::apply(api_version, kind, &mut declared);
        let served = created(api_version, kind, object);
        subset(&declared, &served, kind);
    }
}
