//! Events shaped as kube-apiserver writes them: field names from
//! staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go, timestamps as `MicroTime`
//! (RFC 3339 with microseconds), the `fieldManager` parameter as `kubectl edit` sends it.

use super::*;
use serde_json::json;

fn event(level: &str, verb: &str, code: u16) -> serde_json::Value {
    let mut e = json!({
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": level,
        "auditID": "4f1ba6c5-5c39-4d8a-a6c5-0d2b4e3f1a77",
        "stage": "ResponseComplete",
        "requestURI": "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit",
        "verb": verb,
        "user": {"username": "alice", "uid": "u-1", "groups": ["dev", "system:authenticated"],
                 "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=ab"]}},
        "sourceIPs": ["10.0.0.7"],
        "userAgent": "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9",
        "objectRef": {"resource": "deployments", "namespace": "shop", "name": "web",
                      "apiGroup": "apps", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": code},
        "requestReceivedTimestamp": "2026-12-07T10:00:01.250000Z",
        "stageTimestamp": "2026-12-07T10:00:01.262000Z",
        "annotations": {"authorization.k8s.io/decision": "allow"}
    });
    if level == "RequestResponse" {
        e["requestObject"] = json!({"kind": "Secret", "data": {"password": "aHVudGVyMg=="}});
        e["responseObject"] = json!({"kind": "Secret", "metadata": {"resourceVersion": "4711"},
                                     "data": {"password": "aHVudGVyMg=="}});
    }
    e
}

fn list(items: Vec<serde_json::Value>) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"kind": "EventList", "apiVersion": "audit.k8s.io/v1",
                               "metadata": {}, "items": items}),
    )
    .unwrap()
}

#[test]
fn a_metadata_level_write_keeps_who_where_and_when() {
    let records = parse_event_list(&list(vec![event("Metadata", "patch", 200)])).unwrap();
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(r.verb, "patch");
    assert_eq!(r.user.username, "alice");
    assert_eq!(r.user.groups, ["dev", "system:authenticated"]);
    assert_eq!(r.source_ips, ["10.0.0.7"]);
    assert_eq!(r.field_manager, "kubectl-edit");
    assert_eq!(r.object.api_group, "apps");
    assert_eq!(r.object.resource, "deployments");
    assert_eq!(r.object.namespace.as_deref(), Some("shop"));
    assert_eq!(r.object.name, "web");
    assert_eq!(r.object.subresource, None);
    assert_eq!(r.received.to_string(), "2026-12-07T10:00:01.25Z");
    assert_eq!(r.completed.to_string(), "2026-12-07T10:00:01.262Z");
    assert_eq!(r.resource_version, None);
}

#[test]
fn a_request_response_event_gives_its_resource_version_and_no_body() {
    let records = parse_event_list(&list(vec![event("RequestResponse", "update", 200)])).unwrap();
    assert_eq!(records[0].resource_version.as_deref(), Some("4711"));
    // Nothing of either body is kept: the record's Debug form shows every field it has.
    let kept = format!("{:?}", records[0]);
    assert!(!kept.contains("aHVudGVyMg"), "{kept}");
    assert!(!kept.contains("X509SHA256"), "{kept}");
}

#[test]
fn only_successful_writes_at_response_complete_are_kept() {
    let mut received = event("Metadata", "patch", 200);
    received["stage"] = json!("RequestReceived");
    let mut unnamed = event("Metadata", "create", 201);
    unnamed["objectRef"]["name"] = json!("");
    let records = parse_event_list(&list(vec![
        event("Metadata", "get", 200),
        event("Metadata", "watch", 200),
        event("Metadata", "deletecollection", 200),
        event("Metadata", "patch", 409),
        event("Metadata", "update", 422),
        received,
        unnamed,
        event("Metadata", "create", 201),
        event("Metadata", "delete", 200),
    ]))
    .unwrap();
    let verbs: Vec<&str> = records.iter().map(|r| r.verb.as_str()).collect();
    assert_eq!(verbs, ["create", "delete"]);
}

#[test]
fn without_a_field_manager_parameter_the_user_agent_prefix_is_the_manager() {
    let mut e = event("Metadata", "update", 200);
    e["requestURI"] = json!("/apis/apps/v1/namespaces/shop/deployments/web");
    e["userAgent"] = json!("helm/v3.16.2 (linux/amd64)");
    let records = parse_event_list(&list(vec![e])).unwrap();
    assert_eq!(records[0].field_manager, "helm");
}

#[test]
fn prefix_from_user_agent_matches_kube_apiserver() {
    // create.go: up to the first '/', unprintable characters dropped, 128 bytes at most.
    assert_eq!(
        prefix_from_user_agent("kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9"),
        "kubectl"
    );
    assert_eq!(prefix_from_user_agent("kube\u{7}ctl"), "kubectl");
    assert_eq!(prefix_from_user_agent(""), "");
    assert_eq!(prefix_from_user_agent(&"é".repeat(100)).len(), 128);
    assert_eq!(prefix_from_user_agent(&"a".repeat(200)).len(), 128);
}

#[test]
fn a_percent_encoded_field_manager_is_decoded() {
    let mut e = event("Metadata", "patch", 200);
    e["requestURI"] = json!("/api/v1/namespaces/shop/configmaps/c?fieldManager=my%20tool&dryRun=");
    let records = parse_event_list(&list(vec![e])).unwrap();
    assert_eq!(records[0].field_manager, "my tool");
}

#[test]
fn an_audit_log_line_is_one_event() {
    let line = serde_json::to_vec(&event("Metadata", "patch", 200)).unwrap();
    let record = parse_event_line(&line).unwrap().unwrap();
    assert_eq!(record.user.username, "alice");
    let get = serde_json::to_vec(&event("Metadata", "get", 200)).unwrap();
    assert_eq!(parse_event_line(&get).unwrap(), None);
}

#[test]
fn bad_input_is_refused_without_quoting_it() {
    let err = parse_event_list(br#"{"kind": "EventList", "items": [{"verb": "s3cr3t"#).unwrap_err();
    assert!(!err.to_string().contains("s3cr3t"), "{err}");
    assert!(
        err.to_string().contains("not an audit.k8s.io/v1 EventList"),
        "{err}"
    );
    let err =
        parse_event_list(br#"{"kind": "PodList", "apiVersion": "v1", "items": []}"#).unwrap_err();
    assert!(err.to_string().contains("PodList"), "{err}");
    let err = parse_event_line(br#"{"verb": 12}"#).unwrap_err();
    assert!(err.to_string().contains("wrong type"), "{err}");
}
