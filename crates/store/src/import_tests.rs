//! Imports from the cluster log: numbers kept, order by number whatever the arrival order,
//! idempotence, Secret values stored as `commit` stores them, intents through their states,
//! and refusals said once.

use super::*;
use driftd_core::manifest::{self, LoadOptions};

fn objects(text: &str) -> Vec<ManifestObject> {
    manifest::parse_text(text, "app.yaml", &LoadOptions::default()).unwrap()
}

fn cm(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: app\n\
         data:\n  k: \"{value}\"\n---\n"
    )
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + second).unwrap()
}

fn revision(store: &mut Store, id: i64, source: &str, text: &str) -> RevisionImport {
    let objs = objects(text);
    store
        .import_revision(&ClusterRevision {
            id,
            source,
            author: "ci@runner",
            message: &format!("cluster revision {id}"),
            committed_at: at(id),
            objects: &objs,
            intent: None,
            actor: "ci@runner",
        })
        .unwrap()
}

fn intent(store: &mut Store, id: i64, source: &str, text: &str) -> IntentImport {
    let objs = objects(text);
    store
        .import_intent(&ClusterIntent {
            id,
            source,
            holder: "pod:ci/deploy-1",
            author: "alice",
            message: "deploy",
            created_at: at(id),
            ttl_seconds: 600,
            expires_at: at(id + 600),
            objects: &objs,
        })
        .unwrap()
}

fn newest(store: &Store, source: &str) -> i64 {
    store.history(source).unwrap()[0].id
}

#[test]
fn revisions_keep_their_cluster_number_author_message_and_time_and_import_once() {
    let mut store = Store::open_in_memory().unwrap();
    let RevisionImport::Created {
        revision: rev,
        newest,
    } = revision(&mut store, 7, "shop", &cm("a", "1"))
    else {
        panic!("not created")
    };
    assert!(newest);
    assert_eq!(
        (rev.id, rev.author.as_str(), rev.message.as_str()),
        (7, "ci@runner", "cluster revision 7")
    );
    assert_eq!(rev.committed_at, at(7));
    assert_eq!(store.history("shop").unwrap(), vec![rev]);
    assert_eq!(
        revision(&mut store, 7, "shop", &cm("a", "1")),
        RevisionImport::Known
    );
    assert_eq!(store.imported_ids().unwrap().revisions, [7].into());
}

#[test]
fn a_revision_numbered_below_the_newest_is_recorded_below_it_whatever_the_arrival_order() {
    let mut store = Store::open_in_memory().unwrap();
    assert!(matches!(
        revision(&mut store, 5, "shop", &cm("a", "new")),
        RevisionImport::Created { newest: true, .. }
    ));
    // Number 3 arrives late (its writer stalled): it is history, not the desired state.
    assert!(matches!(
        revision(&mut store, 3, "shop", &cm("a", "old")),
        RevisionImport::Created { newest: false, .. }
    ));
    assert_eq!(newest(&store, "shop"), 5);
    let ids: Vec<i64> = store
        .history("shop")
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, [5, 3]);
    let desired = store.desired_state().unwrap();
    assert_eq!(desired.objects.len(), 1);
    assert_eq!(desired.objects[0].object["data"]["k"], "new");
    assert_eq!(desired.objects[0].revision, 5);

    // The same log in order ends in the same state.
    let mut ordered = Store::open_in_memory().unwrap();
    revision(&mut ordered, 3, "shop", &cm("a", "old"));
    revision(&mut ordered, 5, "shop", &cm("a", "new"));
    assert_eq!(
        ordered.history("shop").unwrap(),
        store.history("shop").unwrap()
    );
}

#[test]
fn content_equal_to_the_newest_is_unchanged_and_still_imported_once() {
    let mut store = Store::open_in_memory().unwrap();
    revision(&mut store, 1, "shop", &cm("a", "1"));
    let RevisionImport::Unchanged(rev) = revision(&mut store, 2, "shop", &cm("a", "1")) else {
        panic!("not unchanged")
    };
    assert_eq!(rev.id, 1);
    assert_eq!(
        revision(&mut store, 2, "shop", &cm("a", "1")),
        RevisionImport::Known
    );
    assert_eq!(store.history("shop").unwrap().len(), 1);
}

#[test]
fn secret_values_are_stored_as_commit_stores_them() {
    const PASSWORD: &str = "import-test-password-Zq93";
    let secret = format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: app\n\
         stringData:\n  password: {PASSWORD}\n"
    );
    let keys = || SecretKeys {
        hash: Some(Key::from_bytes([4; 32], "hash")),
        encryption: Some(Key::from_bytes([5; 32], "enc")),
        previous: vec![],
    };
    let dir = tempfile::tempdir().unwrap();
    let (imported_path, committed_path) = (dir.path().join("i.db"), dir.path().join("c.db"));
    let mut imported = Store::open_with_keys(&imported_path, keys()).unwrap();
    let mut committed = Store::open_with_keys(&committed_path, keys()).unwrap();
    revision(&mut imported, 9, "app", &secret);
    let objs = objects(&secret);
    committed
        .commit(&CommitRequest {
            source: "app",
            message: "",
            author: "alice",
            objects: &objs,
            committed_at: None,
            skipped: 0,
        })
        .unwrap();
    let (i, c) = (
        &imported.desired_state().unwrap(),
        &committed.desired_state().unwrap(),
    );
    assert_eq!(
        i.objects[0].object, c.objects[0].object,
        "the same keyed hashes"
    );
    assert_eq!(i.revisions[0].content_hash, c.revisions[0].content_hash);
    // Sealed under the encryption key: restorable, never in clear in the file.
    let key = &i.objects[0].key;
    let restored = imported.desired_with_values("app", key).unwrap().unwrap();
    assert_eq!(restored["stringData"]["password"], PASSWORD);
    drop(imported);
    let raw = std::fs::read(&imported_path).unwrap();
    assert!(!raw
        .windows(PASSWORD.len())
        .any(|w| w == PASSWORD.as_bytes()));
}

#[test]
fn an_object_owned_by_another_source_is_refused_once() {
    let mut store = Store::open_in_memory().unwrap();
    revision(&mut store, 1, "shop", &cm("a", "1"));
    let RevisionImport::Refused(reason) = revision(&mut store, 2, "web", &cm("a", "2")) else {
        panic!("not refused")
    };
    assert!(
        reason.contains("already owned by source \"shop\""),
        "{reason}"
    );
    assert_eq!(
        revision(&mut store, 2, "web", &cm("a", "2")),
        RevisionImport::Known
    );
    assert!(store.history("web").unwrap().is_empty());
    assert_eq!(store.imported_ids().unwrap().revisions, [1, 2].into());
}

#[test]
fn a_number_taken_by_a_local_write_is_refused_naming_the_way_out() {
    let mut store = Store::open_in_memory().unwrap();
    let objs = objects(&cm("local", "1"));
    store
        .commit(&CommitRequest {
            source: "infra",
            message: "",
            author: "bob",
            objects: &objs,
            committed_at: None,
            skipped: 0,
        })
        .unwrap();
    let RevisionImport::Refused(reason) = revision(&mut store, 1, "shop", &cm("a", "1")) else {
        panic!("not refused")
    };
    assert!(
        reason.contains("start this replica with a new database"),
        "{reason}"
    );
    let IntentImport::Begun(_) = intent(&mut store, 1, "shop", &cm("a", "1")) else {
        panic!("intent ids are their own sequence")
    };
}

#[test]
fn an_intent_keeps_its_number_lock_expiry_and_ends_as_the_cluster_says() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(100));
    revision(&mut store, 1, "shop", &cm("a", "1"));
    let IntentImport::Begun(begun) = intent(&mut store, 4, "shop", &cm("a", "2")) else {
        panic!("not begun")
    };
    assert_eq!(
        (begun.id, begun.state, begun.cluster),
        (4, IntentState::Pending, true)
    );
    assert_eq!(begun.expires_at, at(604));
    assert_eq!(begun.release_command(), "driftd intent release 4 --cluster");
    assert_eq!(begun.commit_command(), "driftd intent commit 4 --cluster");
    assert_eq!(
        intent(&mut store, 4, "shop", &cm("a", "2")),
        IntentImport::Known
    );

    // A second pending intent of the source cannot hold the lock here either.
    let IntentImport::Refused(reason) = intent(&mut store, 6, "shop", &cm("a", "3")) else {
        panic!("not refused")
    };
    assert!(reason.contains("locked here by intent 4"), "{reason}");

    let renewed = store
        .import_renewal(4, 900, at(1000), "pod:ci/deploy-1")
        .unwrap();
    assert_eq!(renewed.unwrap().expires_at, at(1000));
    assert_eq!(store.import_renewal(4, 900, at(1000), "x").unwrap(), None);

    let failed = store
        .import_intent_end(4, IntentAction::Fail, "pod:ci/deploy-1", "exit 1", at(200))
        .unwrap()
        .unwrap();
    assert_eq!(
        (failed.state, failed.ended_at),
        (IntentState::Failed, Some(at(200)))
    );
    assert_eq!(
        store
            .import_intent_end(4, IntentAction::Fail, "x", "again", at(201))
            .unwrap(),
        None
    );
    // A newer revision of the cluster supersedes the failed deploy, as a local commit does.
    revision(&mut store, 8, "shop", &cm("a", "3"));
    assert_eq!(
        store.intent(4).unwrap().unwrap().state,
        IntentState::Superseded
    );
}

#[test]
fn a_revision_committing_an_imported_intent_commits_it_at_the_cluster_number() {
    let mut store = Store::open_in_memory().unwrap();
    intent(&mut store, 2, "shop", &cm("a", "2"));
    let objs = objects(&cm("a", "2"));
    let imported = store
        .import_revision(&ClusterRevision {
            id: 3,
            source: "shop",
            author: "alice",
            message: "deploy",
            committed_at: at(3),
            objects: &objs,
            intent: Some(2),
            actor: "pod:ci/deploy-1",
        })
        .unwrap();
    assert!(matches!(
        imported,
        RevisionImport::Created { newest: true, .. }
    ));
    let committed = store.intent(2).unwrap().unwrap();
    assert_eq!(
        (
            committed.state,
            committed.revision_id,
            committed.ended_by.as_deref()
        ),
        (IntentState::Committed, Some(3), Some("pod:ci/deploy-1"))
    );
    assert_eq!(newest(&store, "shop"), 3);
    assert!(
        store.intents(Some("shop"), false).unwrap().is_empty(),
        "the lock is free"
    );
}

#[test]
fn an_intent_of_the_cluster_log_is_never_ended_here_alone() {
    // Released here only, it stays pending in the cluster: the lock every `driftd run
    // --cluster` is refused by. Each local write is refused naming the command that ends
    // it there; the import of that end is what changes it here.
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(100));
    intent(&mut store, 4, "shop", &cm("a", "1"));
    let refused = |result: Result<IntentInfo, StoreError>, verb: &str| {
        let err = result.unwrap_err().to_string();
        assert!(
            err.contains("came from the cluster log")
                && err.contains(&format!("`driftd intent {verb} 4 --cluster`")),
            "{err}"
        );
    };
    refused(store.release_intent(4, "ops", "gone"), "release");
    refused(store.auto_release_intent(4, "driftd/r0", "gone"), "release");
    refused(store.abort_intent(4, "ops", ""), "abort");
    refused(store.fail_intent(4, "ops", ""), "fail");
    refused(store.renew_intent(4, None, "ops"), "renew");
    refused(store.commit_intent(4, "ops").map(|(i, _)| i), "commit");
    assert_eq!(
        store.intent(4).unwrap().unwrap().state,
        IntentState::Pending
    );

    let released = store
        .import_intent_end(
            4,
            IntentAction::AutoRelease,
            "driftd/r0",
            "pod gone",
            at(150),
        )
        .unwrap()
        .expect("ended by the import");
    assert_eq!(released.state, IntentState::Released);
    assert_eq!(released.ended_by.as_deref(), Some("driftd/r0"));
}

#[test]
fn a_refused_import_does_not_make_a_local_intent_of_that_number_a_cluster_one() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(100));
    let objs = objects(&cm("a", "1"));
    let local = store
        .begin_intent(&BeginRequest {
            source: "shop",
            holder: "alice@laptop (pid 7)",
            author: "alice",
            message: "",
            ttl: std::time::Duration::from_secs(600),
            objects: &objs,
            skipped: 0,
        })
        .unwrap();
    let IntentImport::Refused(_) = intent(&mut store, local.id, "other", &cm("b", "1")) else {
        panic!("the number is taken here")
    };
    let read = store.intent(local.id).unwrap().unwrap();
    assert!(!read.cluster, "written here, so ended here");
    store.release_intent(local.id, "alice", "").unwrap();
}
