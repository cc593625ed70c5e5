use super::*;
use serde_json::json;

fn reads(spec: &Value) -> Vec<(String, &'static str, String, bool)> {
    consumed(spec)
        .into_iter()
        .map(|c| {
            (
                c.config.to_string(),
                c.via.as_str(),
                c.container,
                c.optional,
            )
        })
        .collect()
}

fn row(
    config: &str,
    via: &'static str,
    container: &str,
    optional: bool,
) -> (String, &'static str, String, bool) {
    (config.to_string(), via, container.to_string(), optional)
}

#[test]
fn env_value_from_reads_secret_and_configmap_keys_with_their_optional_flag() {
    let spec = json!({"containers": [{"name": "app", "env": [
        {"name": "A", "value": "plain"},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
        {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode", "optional": true}}},
        {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    ]}]});
    assert_eq!(
        reads(&spec),
        [
            row("Secret/db", "env", "app", false),
            row("ConfigMap/cfg", "env", "app", true),
        ]
    );
}

#[test]
fn env_from_reads_whole_secrets_and_configmaps() {
    let spec = json!({"containers": [{"name": "app", "envFrom": [
        {"secretRef": {"name": "db", "optional": true}},
        {"prefix": "X_", "configMapRef": {"name": "cfg"}}
    ]}]});
    assert_eq!(
        reads(&spec),
        [
            row("Secret/db", "envFrom", "app", true),
            row("ConfigMap/cfg", "envFrom", "app", false),
        ]
    );
}

#[test]
fn volumes_are_read_per_mount_whole_or_through_sub_path() {
    let spec = json!({
        "volumes": [
            {"name": "tls", "secret": {"secretName": "tls", "optional": true}},
            {"name": "conf", "configMap": {"name": "nginx"}},
            {"name": "unused", "secret": {"secretName": "nobody-mounts-me"}},
            {"name": "scratch", "emptyDir": {}}
        ],
        "containers": [
            {"name": "web", "volumeMounts": [
                {"name": "tls", "mountPath": "/tls"},
                {"name": "conf", "mountPath": "/etc/nginx/nginx.conf", "subPath": "nginx.conf"},
                {"name": "scratch", "mountPath": "/tmp"}
            ]},
            {"name": "sidecar", "volumeMounts": [
                {"name": "conf", "mountPath": "/conf/$(POD)", "subPathExpr": "$(POD)"},
                {"name": "conf", "mountPath": "/all"}
            ]}
        ]
    });
    assert_eq!(
        reads(&spec),
        [
            row("Secret/tls", "volume", "web", true),
            row("ConfigMap/nginx", "subPath", "sidecar", false),
            row("ConfigMap/nginx", "subPath", "web", false),
            row("ConfigMap/nginx", "volume", "sidecar", false),
        ]
    );
}

#[test]
fn projected_volume_sources_are_read_like_volumes() {
    let spec = json!({
        "volumes": [{"name": "all", "projected": {"sources": [
            {"secret": {"name": "db"}},
            {"configMap": {"name": "cfg", "optional": true}},
            {"serviceAccountToken": {"path": "token"}},
            {"downwardAPI": {"items": []}}
        ]}}],
        "containers": [{"name": "app", "volumeMounts": [{"name": "all", "mountPath": "/etc/all"}]}]
    });
    assert_eq!(
        reads(&spec),
        [
            row("Secret/db", "volume", "app", false),
            row("ConfigMap/cfg", "volume", "app", true),
        ]
    );
}

#[test]
fn init_and_ephemeral_containers_count_too() {
    let spec = json!({
        "initContainers": [{"name": "migrate", "envFrom": [{"secretRef": {"name": "db"}}]}],
        "containers": [{"name": "app"}],
        "ephemeralContainers": [{"name": "debug", "env": [
            {"name": "T", "valueFrom": {"secretKeyRef": {"name": "token", "key": "t"}}}
        ]}]
    });
    assert_eq!(
        reads(&spec),
        [
            row("Secret/db", "envFrom", "migrate", false),
            row("Secret/token", "env", "debug", false),
        ]
    );
}

#[test]
fn a_spec_reading_nothing_or_malformed_yields_nothing() {
    assert!(consumed(&json!({"containers": [{"name": "app", "image": "nginx"}]})).is_empty());
    assert!(consumed(&json!({"containers": "nope", "volumes": 3})).is_empty());
    assert!(consumed(&json!(null)).is_empty());
    // A reference without a name (the API refuses it) reads nothing.
    let spec = json!({"containers": [{"name": "a", "envFrom": [{"secretRef": {}}]}]});
    assert!(consumed(&spec).is_empty());
}

#[test]
fn only_a_whole_volume_is_refreshed_by_the_kubelet() {
    assert!(Via::Volume.refreshed_by_kubelet());
    for via in [Via::Env, Via::EnvFrom, Via::SubPath] {
        assert!(!via.refreshed_by_kubelet(), "{via:?}");
    }
}
