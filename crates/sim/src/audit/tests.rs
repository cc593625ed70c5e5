use super::*;

#[test]
fn the_webhook_is_the_current_contexts_cluster_and_user() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("webhook.yaml");
    // kube-apiserver's --audit-webhook-config-file format (a kubeconfig), as the
    // Kubernetes auditing documentation shows it.
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster:\n    server: http://127.0.0.1:1/x\n\
         - name: driftd\n  cluster:\n    server: http://127.0.0.1:9477/audit\n\
         users:\n- name: apiserver\n  user:\n    token: t0k3n\n\
         contexts:\n- name: webhook\n  context:\n    cluster: driftd\n    user: apiserver\n\
         current-context: webhook\n",
    )
    .unwrap();
    let webhook = read_webhook(&path).unwrap();
    assert_eq!(webhook.url, "http://127.0.0.1:9477/audit");
    assert_eq!(webhook.token.as_deref(), Some("t0k3n"));
    std::fs::write(&path, "clusters: 3\n").unwrap();
    let err = read_webhook(&path).unwrap_err();
    assert!(err.contains("webhook.yaml"), "{err}");
}

#[test]
fn secrets_are_audited_at_their_own_level_without_bodies_at_metadata() {
    let write = AuditedWrite {
        verb: "update",
        group: "",
        version: "v1",
        resource: "secrets",
        namespace: Some("shop"),
        name: Some("db"),
        subresource: None,
        request_uri: "/api/v1/namespaces/shop/secrets/db",
        user: json!({"username": "alice"}),
        source_ip: "127.0.0.1".into(),
        user_agent: "kubectl/v1.32.0",
        received: Timestamp::now(),
        code: 200,
        request: Some(br#"{"data": {"p": "aHVudGVy"}}"#),
        response: Some(
            br#"{"metadata": {"name": "db", "resourceVersion": "9"}, "data": {"p": "aHVudGVy"}}"#,
        ),
    };
    let metadata = event(&write, Level::Metadata);
    assert!(!metadata.to_string().contains("aHVudGVy"));
    assert_eq!(metadata["level"], "Metadata");
    assert_eq!(metadata["objectRef"]["name"], "db");
    let full = event(&write, Level::RequestResponse);
    assert_eq!(full["responseObject"]["metadata"]["resourceVersion"], "9");
}
