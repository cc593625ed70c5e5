//! Who made a change, whichever comes first: the watch event that shows it or the audit
//! event that names its author.

use super::*;
use driftd_core::audit::{AuditObject, AuditRecord, AuditUser};
use driftd_core::report::Matched;

/// ConfigMap `a` as `kubectl edit` left it at 10:00:01: `data.k` is `2`, owned by
/// `kubectl-edit` since that second (managedFields `time` is RFC 3339 to the second).
fn edited() -> Value {
    let mut o = one(&cm("a", "2"));
    o["metadata"]["resourceVersion"] = json!("7");
    o["metadata"]["managedFields"] = json!([{
        "manager": "kubectl-edit",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2026-11-30T10:00:01Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:k": {}}}
    }]);
    o
}

/// The audit record of that edit by `user`.
fn edit_by(user: &str) -> AuditRecord {
    AuditRecord {
        audit_id: format!("id-{user}"),
        verb: "update".into(),
        object: AuditObject {
            api_group: String::new(),
            resource: "configmaps".into(),
            namespace: Some("shop".into()),
            name: "a".into(),
            subresource: None,
        },
        user: AuditUser {
            username: user.into(),
            groups: vec!["system:authenticated".into()],
        },
        impersonated_user: None,
        source_ips: vec!["192.0.2.10".into()],
        user_agent: "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9".into(),
        field_manager: "kubectl-edit".into(),
        received: "2026-11-30T10:00:01.100Z".parse().unwrap(),
        completed: "2026-11-30T10:00:01.120Z".parse().unwrap(),
        resource_version: None,
    }
}

fn who(h: &Harness) -> Vec<(String, Matched)> {
    h.entry("ConfigMap", "a")
        .and_then(|e| e.who)
        .map(|w| {
            w.iter()
                .map(|w| (w.user.username.clone(), w.matched))
                .collect()
        })
        .unwrap_or_default()
}

fn start() -> Harness {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "1")));
    assert_eq!(h.class("a"), Some(DriftClass::InSync));
    h
}

#[test]
fn an_audit_event_after_the_watch_event_names_the_author() {
    let mut h = start();
    h.apply(edited());
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
    assert!(who(&h).is_empty(), "no audit event yet: the manager alone");
    h.engine.audit_received(vec![edit_by("alice")]);
    assert_eq!(who(&h), [("alice".to_string(), Matched::Metadata)]);
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
}

#[test]
fn an_audit_event_before_the_watch_event_names_the_author() {
    let mut h = start();
    h.engine.audit_received(vec![edit_by("bob")]);
    h.apply(edited());
    assert_eq!(who(&h), [("bob".to_string(), Matched::Metadata)]);
}

#[test]
fn the_author_is_not_announced_twice_when_named_late() {
    let mut h = start();
    h.apply(edited());
    h.advance(SETTLE + Duration::from_secs(1));
    let announced = h.announced();
    h.engine.audit_received(vec![edit_by("alice")]);
    h.advance(SETTLE + Duration::from_secs(1));
    assert_eq!(h.announced(), announced);
}
