//! The realistic mix of objects the scale figures use: what a team's desired
//! state typically holds, so memory and time per object are measured on a fair sample.
//! Shared by the simulator's `scale` example and the engine benchmark.

use serde_json::{json, Value};

/// The mix: 40% Deployments (1-3 containers with env, probes, resources), then ConfigMaps,
/// Secrets, Services, ServiceAccounts, Roles, RoleBindings, Jobs and CronJobs.
pub fn mix(n: usize) -> (Vec<String>, Vec<Value>) {
    (namespaces(n), objects(n).collect())
}

/// The namespaces of a mix of `n` objects: one per thousand objects.
pub fn namespaces(n: usize) -> Vec<String> {
    (0..namespace_count(n)).map(namespace).collect()
}

/// The objects of [`mix`], made one at a time: a load of a million objects then never
/// holds a million trees (several GB) besides what it loads into.
pub fn objects(n: usize) -> impl Iterator<Item = Value> {
    let count = namespace_count(n);
    (0..n).map(move |i| object(i, &namespace(i % count)))
}

fn namespace_count(n: usize) -> usize {
    n.div_ceil(1000).max(1)
}

fn namespace(i: usize) -> String {
    format!("team-{i}")
}

fn container(i: usize, c: usize) -> Value {
    json!({
        "name": format!("c{c}"),
        "image": format!("registry.example.com/team/app-{}:1.{}.{}", i % 50, c, i % 10),
        "ports": [{"containerPort": 8080 + c, "name": format!("http{c}")}],
        "env": [
            {"name": "MODE", "value": "production"},
            {"name": "LOG_LEVEL", "value": if i.is_multiple_of(2) { "info" } else { "debug" }},
            {"name": "FEATURE_FLAGS", "value": format!("a,b,c{}", i % 5)},
        ],
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080 + c}, "periodSeconds": 5},
        "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080 + c}, "initialDelaySeconds": 10},
    })
}

fn object(i: usize, ns: &str) -> Value {
    let name = format!("obj-{i}");
    let labels = json!({"app": name, "team": format!("t{}", i % 7)});
    let meta = json!({"name": name, "namespace": ns, "labels": labels});
    match i % 20 {
        0..=7 => json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {
                "replicas": 1 + i % 2,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": (0..1 + i % 3).map(|c| container(i, c)).collect::<Vec<_>>()},
                },
            },
        }),
        8..=10 => json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
            "data": {"config.yaml": format!("replicas: {i}\nmode: production\n"), "color": "blue", "size": format!("{}", i % 100)},
        }),
        11 | 12 => json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": "Opaque",
            "data": {"password": "aHVudGVyMg==", "token": "c2VjcmV0LXRva2Vu"},
        }),
        13 | 14 => json!({
            "apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"selector": {"app": name}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
        }),
        15 => json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}),
        16 => json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta,
            "rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list", "watch"]}],
        }),
        17 => json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}],
        }),
        18 => json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "run", "image": "busybox:1.36", "command": ["sh", "-c", "true"]}]}}},
        }),
        _ => json!({
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta,
            "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "run", "image": "busybox:1.36", "command": ["sh", "-c", "date"]}]}}}}},
        }),
    }
}
