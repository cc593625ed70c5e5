//! Pulumi stacks as sources: the state's objects are a revision once, each operation left
//! pending an `interrupted` intent held by the update, which stands while later states
//! still record it and ends with the first that does not.

use super::*;
use crate::{BeginRequest, IntentState, Store, HELM_ID_BASE};
use driftd_core::manifest::{self, LoadOptions};
use std::time::Duration;

const SOURCE: &str = "pulumi:shop/dev";

fn objects(name: &str, image: &str) -> Vec<ManifestObject> {
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  image: \"{image}\"\n"
    );
    let options = LoadOptions {
        default_namespace: "shop".into(),
        ..LoadOptions::default()
    };
    manifest::parse_text(&text, "dev.yaml", &options).unwrap()
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + second).unwrap()
}

fn op(operation: &str, name: &str, second: i64) -> Interrupted {
    let mut op = Interrupted::new(
        "organization/shop/dev",
        at(second),
        operation,
        &format!("urn:pulumi:dev::shop::kubernetes:core/v1:ConfigMap::{name}"),
    );
    op.backend = Some("file:///srv/pulumi".into());
    op
}

/// A state written at `second` with `web` at `image` and `pending` operations.
fn sync(
    store: &mut Store,
    second: i64,
    image: &str,
    pending: &[(Interrupted, Vec<ManifestObject>)],
) -> PulumiOutcome {
    let objects = objects("web", image);
    let pending: Vec<PulumiPending> = pending
        .iter()
        .map(|(operation, objects)| PulumiPending { operation, objects })
        .collect();
    store
        .sync_pulumi(&PulumiSync {
            source: SOURCE,
            objects: &objects,
            author: ACTOR,
            message: "pulumi: state of organization/shop/dev",
            at: Some(at(second)),
            pending: &pending,
            imported: true,
        })
        .unwrap()
}

#[test]
fn a_pending_update_is_an_interrupted_intent_until_a_state_without_it() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(1000));
    let first = sync(&mut store, 100, "web:1.4.2", &[]);
    let CommitOutcome::Created(rev) = &first.revision else {
        panic!("{first:?}")
    };
    assert!(rev.id >= HELM_ID_BASE, "{}", rev.id);
    assert_eq!(rev.committed_at, at(100));
    assert_eq!(store.pulumi_sources().unwrap(), [SOURCE]);

    // `pulumi up` killed while updating web to 1.4.3: the state still has web at 1.4.2.
    let update = (op("updating", "web", 200), objects("web", "web:1.4.3"));
    let out = sync(&mut store, 200, "web:1.4.2", std::slice::from_ref(&update));
    assert!(matches!(out.revision, CommitOutcome::Unchanged(_)));
    let [begun] = &out.begun[..] else {
        panic!("{out:?}")
    };
    assert_eq!(begun.state, IntentState::Interrupted);
    assert!(begun.id >= HELM_ID_BASE);
    assert_eq!(
        begun.holder,
        "pulumi update of organization/shop/dev at 2027-01-15T08:03:20Z"
    );
    assert_eq!(begun.created_at, at(200), "when the update wrote it");
    assert_eq!(begun.author, "pulumi");
    // Pulumi's ways out, not driftd's.
    assert_eq!(
        begun.commit_command(),
        "PULUMI_BACKEND_URL=file:///srv/pulumi pulumi refresh --yes --stack organization/shop/dev"
    );
    assert!(begun
        .release_command()
        .ends_with("pulumi stack import --stack organization/shop/dev"));
    let open = store.open_intents().unwrap();
    assert_eq!(open[0].objects[0].object["data"]["image"], "web:1.4.3");
    // Pulumi's record decides it: driftd's own commit and release refuse and change nothing.
    let commit = store
        .commit_intent(begun.id, ACTOR)
        .unwrap_err()
        .to_string();
    assert!(commit.contains("driftd does not commit it"), "{commit}");
    assert!(
        commit.contains("pulumi refresh --yes --stack organization/shop/dev"),
        "{commit}"
    );
    let release = store
        .release_intent(begun.id, ACTOR, "done")
        .unwrap_err()
        .to_string();
    assert!(release.contains("driftd does not release it"), "{release}");
    assert!(release.contains("pulumi stack import"), "{release}");
    assert_eq!(store.open_intents().unwrap(), open);

    // Written again (a later operation of the same update): the same intent stands.
    let again = sync(&mut store, 230, "web:1.4.2", std::slice::from_ref(&update));
    assert_eq!((again.begun.len(), again.standing.len()), (0, 1));
    assert_eq!(again.standing[0].id, begun.id);

    // `pulumi up` again, to the end: web at 1.4.3, nothing pending.
    let done = sync(&mut store, 300, "web:1.4.3", &[]);
    assert!(matches!(done.revision, CommitOutcome::Created(_)));
    let [ended] = &done.ended[..] else {
        panic!("{done:?}")
    };
    assert_eq!(ended.state, IntentState::Superseded);
    assert!(store.open_intents().unwrap().is_empty());
}

#[test]
fn a_cleared_record_releases_the_intent_and_a_create_names_its_id() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(1000));
    sync(&mut store, 100, "web:1.4.2", &[]);
    let mut create = op("creating", "flags", 200);
    create.id = Some("shop/flags-1a2b".into());
    let pending = [(create, objects("flags-1a2b", "on"))];
    let begun = sync(&mut store, 200, "web:1.4.2", &pending).begun;
    assert_eq!(
        begun[0].commit_command(),
        "PULUMI_BACKEND_URL=file:///srv/pulumi pulumi refresh --yes --stack organization/shop/dev \
         --import-pending-creates urn:pulumi:dev::shop::kubernetes:core/v1:ConfigMap::flags \
         shop/flags-1a2b"
    );
    // A pending create survives later updates (pulumi snapshot.go carries it over): with
    // other changes, it still stands.
    let later = sync(&mut store, 250, "web:1.4.4", &pending);
    assert!(
        later.ended.is_empty() && later.standing.len() == 1,
        "{later:?}"
    );
    // `pulumi stack export | pulumi stack import`: the same objects, no pending operation.
    let cleared = sync(&mut store, 300, "web:1.4.4", &[]);
    assert!(matches!(cleared.revision, CommitOutcome::Unchanged(_)));
    assert_eq!(cleared.ended[0].state, IntentState::Released);
    assert_eq!(cleared.ended[0].ended_by.as_deref(), Some("pulumi"));
    assert!(store.open_intents().unwrap().is_empty());
}

#[test]
fn a_pending_delete_is_an_intent_without_objects_and_never_the_sources_lock() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(1000));
    let pending = [
        (op("deleting", "old", 200), vec![]),
        (op("updating", "web", 200), objects("web", "web:2")),
    ];
    let out = sync(&mut store, 200, "web:1", &pending);
    assert_eq!(out.begun.len(), 2);
    assert_eq!(out.begun[0].object_count, 0);
    assert_eq!(
        out.begun[0].holder, out.begun[1].holder,
        "one update holds both"
    );
    // Interrupted intents are no lock: a deploy of the source may begin.
    let begun = store.begin_intent(&BeginRequest {
        source: SOURCE,
        holder: "ci",
        author: "ci",
        message: "m",
        ttl: Duration::from_secs(60),
        objects: &objects("web", "web:3"),
        skipped: 0,
    });
    assert!(begun.is_ok(), "{begun:?}");
}

#[test]
fn a_removed_stack_stops_being_a_source() {
    let mut store = Store::open_in_memory().unwrap();
    sync(&mut store, 100, "web:1", &[]);
    let out = store
        .sync_pulumi(&PulumiSync {
            source: SOURCE,
            objects: &[],
            author: ACTOR,
            message: "pulumi: stack removed",
            at: None,
            pending: &[],
            imported: true,
        })
        .unwrap();
    assert!(matches!(out.revision, CommitOutcome::Created(_)));
    assert!(store.sources().unwrap().is_empty());
    assert!(store.pulumi_sources().unwrap().is_empty());
}

#[test]
fn a_local_import_takes_the_next_local_numbers() {
    let mut store = Store::open_in_memory().unwrap();
    let objects = objects("web", "web:1");
    let update = op("updating", "web", 200);
    let out = store
        .sync_pulumi(&PulumiSync {
            source: "shop",
            objects: &objects,
            author: "alice",
            message: "pulumi stack export of shop/dev",
            at: None,
            pending: &[PulumiPending {
                operation: &update,
                objects: &objects,
            }],
            imported: false,
        })
        .unwrap();
    let CommitOutcome::Created(rev) = &out.revision else {
        panic!("{out:?}")
    };
    assert_eq!((rev.id, out.begun[0].id), (1, 1));
}
