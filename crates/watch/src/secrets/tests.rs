//! The fold of list+watch events into the followed map. Expected values follow the
//! list+watch contract kube-runtime's watcher documents for its `Event` (`kube-runtime/src/
//! watcher.rs`: `Init` starts a re-list, `InitApply` objects belong to it, `InitDone` ends it
//! and what was not re-listed is gone) and that the Secrets follower kept before it ran on
//! driftd's own list+watch.

use super::*;
use crate::Applied;
use serde_json::json;

fn key(s: &Secret) -> String {
    s.metadata.name.clone().unwrap_or_default()
}

fn secret(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns"}})
}

fn apply(name: &str) -> WatchEvent {
    WatchEvent::Apply(Applied::unpacked(secret(name)))
}

fn names(fold: &Fold) -> Vec<(String, usize)> {
    fold.objects
        .iter()
        .map(|(k, (s, _))| (k.clone(), *s))
        .collect()
}

#[test]
fn a_list_is_reported_once_it_ends_and_replaces_only_its_own_scope() {
    let mut fold = Fold::new(key);
    assert_eq!(fold.step(0, WatchEvent::Init), Ok(None));
    assert_eq!(
        fold.step(0, apply("a")),
        Ok(None),
        "listed, not reported yet"
    );
    assert!(fold.objects.is_empty());
    assert_eq!(
        fold.step(0, WatchEvent::InitDone),
        Ok(Some(Change::Listed { scope: 0 }))
    );
    fold.step(1, WatchEvent::Init).unwrap();
    fold.step(1, apply("b")).unwrap();
    fold.step(1, WatchEvent::InitDone).unwrap();
    assert_eq!(names(&fold), [("a".into(), 0), ("b".into(), 1)]);

    // Scope 0 lists again without "a" (deleted while its watch was down): "a" is gone,
    // scope 1's "b" stays.
    fold.step(0, WatchEvent::Init).unwrap();
    fold.step(0, apply("c")).unwrap();
    assert_eq!(
        names(&fold),
        [("a".into(), 0), ("b".into(), 1)],
        "until it ends"
    );
    fold.step(0, WatchEvent::InitDone).unwrap();
    assert_eq!(names(&fold), [("b".into(), 1), ("c".into(), 0)]);
}

#[test]
fn watched_changes_are_reported_as_they_come_and_a_deletion_carries_the_secret() {
    let mut fold = Fold::new(key);
    fold.step(0, WatchEvent::Init).unwrap();
    fold.step(0, WatchEvent::InitDone).unwrap();
    assert_eq!(
        fold.step(0, apply("a")),
        Ok(Some(Change::Applied { key: "a".into() }))
    );
    assert_eq!(fold.step(0, WatchEvent::Bookmark("7".into())), Ok(None));
    let deleted = fold.step(0, WatchEvent::Delete(secret("a"))).unwrap();
    let Some(Change::Deleted { key, secret }) = deleted else {
        panic!("a deletion: {deleted:?}")
    };
    assert_eq!(key, "a");
    assert_eq!(secret.metadata.namespace.as_deref(), Some("ns"));
    assert!(fold.objects.is_empty());
}

#[test]
fn an_object_that_is_not_a_secret_is_skipped_without_quoting_it() {
    let mut fold = Fold::new(key);
    fold.step(0, WatchEvent::Init).unwrap();
    fold.step(0, WatchEvent::InitDone).unwrap();
    let bad = json!({"metadata": {"name": "x", "namespace": "ns"}, "data": {"k": "hunter2"}});
    let problem = fold
        .step(0, WatchEvent::Apply(Applied::unpacked(bad)))
        .unwrap_err();
    assert!(problem.contains("ns/x"), "{problem}");
    assert!(!problem.contains("hunter2"), "{problem}");
    assert!(fold.objects.is_empty());
}
