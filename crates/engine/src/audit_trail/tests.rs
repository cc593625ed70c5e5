//! The join's two modes, its refusals and its bounds. Times as kube-apiserver writes them:
//! a managedFields entry's `time` is a `metav1.Time`, RFC 3339 to the second (truncated); an
//! audit event's timestamps are `MicroTime`s.

use super::*;
use driftd_core::audit::AuditObject;
use driftd_core::diff::ChangeOp;
use serde_json::json;

fn deployment() -> ObjectKey {
    ObjectKey {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: Some("shop".into()),
        name: "web".into(),
    }
}

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

/// A `verb` of Deployment shop/web by `user` through `manager`, in flight from `received`
/// to `completed`.
fn write(user: &str, manager: &str, verb: &str, received: &str, completed: &str) -> AuditRecord {
    AuditRecord {
        audit_id: format!("{user}-{received}"),
        verb: verb.into(),
        object: AuditObject {
            api_group: "apps".into(),
            resource: "deployments".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
            subresource: None,
        },
        user: AuditUser {
            username: user.into(),
            groups: vec!["system:authenticated".into()],
        },
        impersonated_user: None,
        source_ips: vec!["10.0.0.7".into()],
        user_agent: "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9".into(),
        field_manager: manager.into(),
        received: at(received),
        completed: at(completed),
        resource_version: None,
    }
}

fn change(manager: &str, time: &str) -> Change {
    Change {
        path: "/spec/replicas".into(),
        op: ChangeOp::Replace,
        desired: Some(json!(2)),
        live: Some(json!(5)),
        field: "spec.replicas".into(),
        manager: Some(manager.into()),
        changed_at: Some(time.into()),
    }
}

fn live(rv: &str) -> Value {
    json!({"metadata": {"name": "web", "namespace": "shop", "resourceVersion": rv}})
}

fn trail(records: Vec<AuditRecord>) -> AuditTrail {
    let mut trail = AuditTrail::new(Duration::from_secs(600), 100);
    for r in records {
        trail.insert(r, at("2026-12-07T10:00:05Z"));
    }
    trail
}

fn users(found: &[Who]) -> Vec<(&str, Matched)> {
    found
        .iter()
        .map(|w| (w.user.username.as_str(), w.matched))
        .collect()
}

#[test]
fn a_write_in_flight_during_the_entrys_second_by_its_manager_is_its_author() {
    let t = trail(vec![
        write(
            "bob",
            "kubectl-edit",
            "patch",
            "2026-12-07T09:59:40.1Z",
            "2026-12-07T09:59:40.2Z",
        ),
        write(
            "alice",
            "kubectl-edit",
            "patch",
            "2026-12-07T10:00:01.25Z",
            "2026-12-07T10:00:01.262Z",
        ),
    ]);
    let changes = [change("kubectl-edit", "2026-12-07T10:00:01Z")];
    let found = t.who(
        &deployment(),
        DriftClass::Modified,
        Some(&live("9")),
        &changes,
    );
    assert_eq!(users(&found), [("alice", Matched::Metadata)]);
    assert_eq!(found[0].manager, "kubectl-edit");
    assert_eq!(found[0].changed_at.as_deref(), Some("2026-12-07T10:00:01Z"));
    assert_eq!(found[0].source_ips, ["10.0.0.7"]);
    assert_eq!(found[0].verb, "patch");
}

#[test]
fn a_request_straddling_the_second_matches_and_one_outside_it_does_not() {
    // Received in the second before, completed in the entry's second: the write's time,
    // between the two, may be in the entry's second.
    let straddling = trail(vec![write(
        "alice",
        "kubectl-edit",
        "update",
        "2026-12-07T10:00:00.98Z",
        "2026-12-07T10:00:01.01Z",
    )]);
    let changes = [change("kubectl-edit", "2026-12-07T10:00:01Z")];
    let found = straddling.who(&deployment(), DriftClass::Modified, None, &changes);
    assert_eq!(users(&found), [("alice", Matched::Metadata)]);
    let before = trail(vec![write(
        "alice",
        "kubectl-edit",
        "update",
        "2026-12-07T10:00:00.50Z",
        "2026-12-07T10:00:00.99Z",
    )]);
    assert!(before
        .who(&deployment(), DriftClass::Modified, None, &changes)
        .is_empty());
    let after = trail(vec![write(
        "alice",
        "kubectl-edit",
        "update",
        "2026-12-07T10:00:02.00Z",
        "2026-12-07T10:00:02.01Z",
    )]);
    assert!(after
        .who(&deployment(), DriftClass::Modified, None, &changes)
        .is_empty());
}

#[test]
fn another_manager_another_object_or_another_kind_is_not_the_author() {
    let mut configmap = write(
        "carol",
        "kubectl-edit",
        "patch",
        "2026-12-07T10:00:01.2Z",
        "2026-12-07T10:00:01.3Z",
    );
    configmap.object.api_group = String::new();
    configmap.object.resource = "configmaps".into();
    let mut replicaset = write(
        "dave",
        "kubectl-edit",
        "patch",
        "2026-12-07T10:00:01.2Z",
        "2026-12-07T10:00:01.3Z",
    );
    replicaset.object.resource = "replicasets".into();
    let mut other = write(
        "erin",
        "kubectl-edit",
        "patch",
        "2026-12-07T10:00:01.2Z",
        "2026-12-07T10:00:01.3Z",
    );
    other.object.name = "api".into();
    let t = trail(vec![
        write(
            "alice",
            "kubectl-scale",
            "patch",
            "2026-12-07T10:00:01.2Z",
            "2026-12-07T10:00:01.3Z",
        ),
        configmap,
        replicaset,
        other,
    ]);
    let changes = [change("kubectl-edit", "2026-12-07T10:00:01Z")];
    assert!(t
        .who(&deployment(), DriftClass::Modified, None, &changes)
        .is_empty());
}

#[test]
fn two_people_in_the_same_second_through_the_same_tool_name_nobody() {
    let t = trail(vec![
        write(
            "alice",
            "kubectl-edit",
            "patch",
            "2026-12-07T10:00:01.2Z",
            "2026-12-07T10:00:01.3Z",
        ),
        write(
            "bob",
            "kubectl-edit",
            "patch",
            "2026-12-07T10:00:01.5Z",
            "2026-12-07T10:00:01.6Z",
        ),
    ]);
    let changes = [change("kubectl-edit", "2026-12-07T10:00:01Z")];
    assert!(t
        .who(&deployment(), DriftClass::Modified, None, &changes)
        .is_empty());
}

#[test]
fn the_response_objects_resource_version_matches_exactly_whatever_the_time() {
    let mut newest = write(
        "alice",
        "kubectl-edit",
        "update",
        "2026-12-07T10:00:03.2Z",
        "2026-12-07T10:00:03.3Z",
    );
    newest.resource_version = Some("4711".into());
    // bob's write was in the entry's second too, but the live object is alice's version.
    let t = trail(vec![
        write(
            "bob",
            "kubectl-edit",
            "update",
            "2026-12-07T10:00:01.2Z",
            "2026-12-07T10:00:01.3Z",
        ),
        newest,
    ]);
    let changes = [change("kubectl-edit", "2026-12-07T10:00:01Z")];
    let found = t.who(
        &deployment(),
        DriftClass::Modified,
        Some(&live("4711")),
        &changes,
    );
    assert_eq!(users(&found), [("alice", Matched::ResourceVersion)]);
    // Another live version: the write of that version is not kept, so the time decides.
    let found = t.who(
        &deployment(),
        DriftClass::Modified,
        Some(&live("4712")),
        &changes,
    );
    assert_eq!(users(&found), [("bob", Matched::Metadata)]);
}

#[test]
fn each_managed_fields_entry_the_changes_cite_gets_its_author() {
    let t = trail(vec![
        write(
            "alice",
            "kubectl-edit",
            "patch",
            "2026-12-07T10:00:01.2Z",
            "2026-12-07T10:00:01.3Z",
        ),
        write(
            "bob",
            "kubectl-patch",
            "patch",
            "2026-12-07T10:00:03.2Z",
            "2026-12-07T10:00:03.3Z",
        ),
    ]);
    let mut image = change("kubectl-patch", "2026-12-07T10:00:03Z");
    image.path = "/spec/template/spec/containers/0/image".into();
    let changes = [
        change("kubectl-edit", "2026-12-07T10:00:01Z"),
        image,
        change("kubectl-edit", "2026-12-07T10:00:01Z"),
    ];
    let found = t.who(&deployment(), DriftClass::Modified, None, &changes);
    assert_eq!(
        users(&found),
        [("alice", Matched::Metadata), ("bob", Matched::Metadata)]
    );
}

#[test]
fn a_missing_object_names_who_deleted_it() {
    let t = trail(vec![
        write(
            "alice",
            "kubectl-edit",
            "patch",
            "2026-12-07T10:00:01.2Z",
            "2026-12-07T10:00:01.3Z",
        ),
        write(
            "bob",
            "kubectl",
            "delete",
            "2026-12-07T10:00:03.2Z",
            "2026-12-07T10:00:03.3Z",
        ),
    ]);
    let found = t.who(&deployment(), DriftClass::Missing, None, &[]);
    assert_eq!(users(&found), [("bob", Matched::Metadata)]);
    assert_eq!(found[0].verb, "delete");
    assert_eq!(found[0].changed_at, None);
}

#[test]
fn at_most_max_events_are_kept_the_oldest_going_first() {
    let mut t = AuditTrail::new(Duration::from_secs(600), 2);
    let now = at("2026-12-07T10:00:05Z");
    t.insert(
        write(
            "alice",
            "kubectl-edit",
            "patch",
            "2026-12-07T10:00:01.2Z",
            "2026-12-07T10:00:01.3Z",
        ),
        now,
    );
    t.insert(
        write(
            "bob",
            "kubectl-patch",
            "patch",
            "2026-12-07T10:00:02.2Z",
            "2026-12-07T10:00:02.3Z",
        ),
        now,
    );
    t.insert(
        write(
            "carol",
            "kubectl-scale",
            "patch",
            "2026-12-07T10:00:03.2Z",
            "2026-12-07T10:00:03.3Z",
        ),
        now,
    );
    assert_eq!(t.len(), 2);
    let alice = [change("kubectl-edit", "2026-12-07T10:00:01Z")];
    assert!(t
        .who(&deployment(), DriftClass::Modified, None, &alice)
        .is_empty());
    let carol = [change("kubectl-scale", "2026-12-07T10:00:03Z")];
    assert_eq!(
        users(&t.who(&deployment(), DriftClass::Modified, None, &carol)),
        [("carol", Matched::Metadata)]
    );
}

#[test]
fn events_older_than_the_retention_are_dropped() {
    let mut t = AuditTrail::new(Duration::from_secs(60), 100);
    t.insert(
        write(
            "alice",
            "kubectl-edit",
            "patch",
            "2026-12-07T10:00:01.2Z",
            "2026-12-07T10:00:01.3Z",
        ),
        at("2026-12-07T10:00:02Z"),
    );
    t.expire(at("2026-12-07T10:01:02Z"));
    assert_eq!(t.len(), 1);
    t.expire(at("2026-12-07T10:01:03Z"));
    assert_eq!(t.len(), 0);
    let alice = [change("kubectl-edit", "2026-12-07T10:00:01Z")];
    assert!(t
        .who(&deployment(), DriftClass::Modified, None, &alice)
        .is_empty());
}

#[test]
fn built_in_resources_name_their_kinds() {
    assert_eq!(builtin_kind("apps", "deployments"), Some("Deployment"));
    assert_eq!(builtin_kind("", "secrets"), Some("Secret"));
    assert_eq!(builtin_kind("example.com", "widgets"), None);
}
