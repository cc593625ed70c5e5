//! The table on realistic manifests: what a manifest commits by leaving fields out, and
//! what it never gets from the table (allocations, identity-derived values, status).
//! Kube's own cases are in `oracle/`.

use serde_json::{json, Value};

use super::apply;

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
        spec["template"]["metadata"],
        json!({"labels": {"app": "web"}})
    );
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
    assert!(d.get("status").is_none(), "no status is created");
}

#[test]
fn an_explicit_pull_policy_is_kept() {
    let d = defaulted(
        "v1",
        "Pod",
        json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "image": "busybox", "imagePullPolicy": "Never"},
            {"name": "b", "image": "busybox"}]}}),
    );
    assert_eq!(d["spec"]["containers"][0]["imagePullPolicy"], "Never");
    assert_eq!(d["spec"]["containers"][1]["imagePullPolicy"], "Always");
}

#[test]
fn pod_only_defaults() {
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
    assert!(
        d.get("status").is_none(),
        "phase and QoS class are the server's"
    );
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
    assert_eq!(tpl["metadata"], json!({}));
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
fn job_defaults_without_identity() {
    let job = defaulted(
        "batch/v1",
        "Job",
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "m", "namespace": "shop"},
               "spec": {"template": {"metadata": {"labels": {"app": "m"}},
                        "spec": {"restartPolicy": "Never",
                                 "containers": [{"name": "c", "image": "m:1"}]}}}}),
    );
    let spec = &job["spec"];
    assert_eq!(spec["completions"], 1);
    assert_eq!(spec["parallelism"], 1);
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["manualSelector"], false);
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    // No uid, no generated selector or labels: those derive from the Job's identity.
    assert!(job["metadata"].get("uid").is_none());
    assert!(spec.get("selector").is_none());
    assert_eq!(job["metadata"]["labels"], json!({"app": "m"}));
    assert_eq!(spec["template"]["metadata"]["labels"], json!({"app": "m"}));
    let c = &spec["template"]["spec"]["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");

    // Own labels are kept; parallelism alone leaves completions unset.
    let j = defaulted(
        "batch/v1",
        "Job",
        json!({"metadata": {"name": "w", "labels": {"team": "a"}},
            "spec": {"parallelism": 3, "template": {"metadata": {"labels": {"app": "w"}}, "spec": {}}}}),
    );
    assert_eq!(j["metadata"]["labels"], json!({"team": "a"}));
    assert!(j["spec"].get("completions").is_none());
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
    assert!(jt["spec"].get("backoffLimit").is_none());
    assert_eq!(
        jt["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
}

#[test]
fn service_defaults_but_no_allocations() {
    let svc = defaulted(
        "v1",
        "Service",
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "web", "namespace": "shop"},
               "spec": {"type": "NodePort", "selector": {"app": "web"},
                        "ports": [{"port": 80}, {"port": 443, "targetPort": "https"}]}}),
    );
    let spec = &svc["spec"];
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["externalTrafficPolicy"], "Cluster");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(
        spec["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 80},
               {"port": 443, "targetPort": "https", "protocol": "TCP"}])
    );
    for allocated in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        assert!(spec.get(allocated).is_none(), "{allocated}: {spec}");
    }
    assert!(spec["ports"][0].get("nodePort").is_none());
    assert!(svc.get("status").is_none());

    let c = defaulted(
        "v1",
        "Service",
        json!({"metadata": {"name": "c"}, "spec": {"sessionAffinity": "ClientIP"}}),
    );
    assert_eq!(
        c["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );
    let lb = defaulted(
        "v1",
        "Service",
        json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"}}),
    );
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    let e = defaulted(
        "v1",
        "Service",
        json!({"metadata": {"name": "e"}, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
    );
    assert!(e["spec"].get("internalTrafficPolicy").is_none());
}

#[test]
fn secret_type_but_string_data_kept() {
    let secret = defaulted(
        "v1",
        "Secret",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
               "stringData": {"k": "v"}}),
    );
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["stringData"], json!({"k": "v"}));
    assert!(secret.get("data").is_none());
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
    assert!(p.get("status").is_none());
    let p = defaulted(
        "v1",
        "PersistentVolumeClaim",
        json!({"metadata": {"name": "data"}, "spec": {}, "status": {}}),
    );
    assert_eq!(p["status"], json!({"phase": "Pending"}));

    let n = defaulted("v1", "Namespace", json!({"metadata": {"name": "team-a"}}));
    assert_eq!(
        n,
        json!({"metadata": {"name": "team-a",
            "labels": {"kubernetes.io/metadata.name": "team-a"}}}),
        "the finalizer and phase are the server's"
    );
    let n = defaulted(
        "v1",
        "Namespace",
        json!({"metadata": {"name": "t"}, "status": {"phase": "Terminating"}}),
    );
    assert_eq!(n["status"]["phase"], "Terminating");

    let cm = defaulted(
        "v1",
        "ConfigMap",
        json!({"metadata": {"name": "c"}, "data": {"k": "v"}}),
    );
    assert_eq!(cm, json!({"metadata": {"name": "c"}, "data": {"k": "v"}}));
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

    let ingress = json!({"metadata": {"name": "i"}, "spec": {"rules": [{"http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}});
    assert_eq!(
        defaulted("networking.k8s.io/v1", "Ingress", ingress.clone()),
        ingress,
        "no ingressClassName, no status"
    );

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
    assert!(crd.get("status").is_none());
}

#[test]
fn custom_resources_and_unknown_kinds_are_untouched() {
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 3}});
    assert_eq!(defaulted("example.com/v1", "Widget", w.clone()), w);
}
