//! A commit of objects held as text is the same commit as of their trees, and a refused
//! one changes nothing.

use super::*;
use driftd_core::manifest::{self, CompactObject, LoadOptions};

fn trees(text: &str) -> Vec<ManifestObject> {
    manifest::parse_text(text, "app.yaml", &LoadOptions::default()).unwrap()
}

fn texts(objects: &[ManifestObject]) -> Vec<CompactObject> {
    objects
        .iter()
        .map(|o| CompactObject {
            origin: o.origin.clone(),
            key: o.key.clone(),
            api_version: o.api_version.clone(),
            text: o.object.to_string().into_boxed_str(),
            scope_unresolved: o.scope_unresolved,
        })
        .collect()
}

fn commit<O: manifest::Desired>(
    store: &mut Store,
    source: &str,
    objects: &[O],
) -> Result<CommitOutcome, StoreError> {
    store.commit(&CommitRequest {
        source,
        message: "msg",
        author: "alice",
        objects,
        committed_at: None,
        skipped: 0,
    })
}

const TWO: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: \"1\"}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {password: hunter2}\n";

#[test]
fn objects_as_text_commit_what_their_trees_commit() {
    let objects = trees(TWO);
    let mut store = Store::open_in_memory().unwrap();
    let CommitOutcome::Created(first) = commit(&mut store, "web", &texts(&objects)).unwrap() else {
        panic!("a first commit creates a revision");
    };
    // The same content as trees: the same content hash, so no new revision.
    match commit(&mut store, "web", &objects).unwrap() {
        CommitOutcome::Unchanged(r) => assert_eq!(r.id, first.id),
        other => panic!("{other:?}"),
    }
    // What was stored reads back as the trees, the Secret's value sealed as for trees.
    let mut other = Store::open_in_memory().unwrap();
    commit(&mut other, "web", &objects).unwrap();
    let state = store.desired_state().unwrap();
    let expected = other.desired_state().unwrap();
    assert_eq!(state.objects.len(), 2);
    for (got, want) in state.objects.iter().zip(&expected.objects) {
        assert_eq!((&got.key, &got.api_version), (&want.key, &want.api_version));
    }
    assert_eq!(state.objects[0].object, objects[0].object);
    assert_ne!(state.objects[1].object["stringData"]["password"], "hunter2");
}

#[test]
fn a_refused_commit_of_objects_as_text_changes_nothing() {
    let mut store = Store::open_in_memory().unwrap();
    commit(&mut store, "web", &texts(&trees(TWO))).unwrap();
    let before = (
        store.desired_state().unwrap().objects,
        store.history("web").unwrap(),
        store.sources().unwrap().len(),
    );
    // Another source takes the same ConfigMap beside one of its own: refused whole.
    let mine = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
    let err = commit(&mut store, "db", &texts(&trees(mine))).unwrap_err();
    assert!(matches!(err, StoreError::Rejected(_)), "{err}");
    let after = (
        store.desired_state().unwrap().objects,
        store.history("web").unwrap(),
        store.sources().unwrap().len(),
    );
    assert_eq!(after, before);
    assert!(store.history("db").unwrap().is_empty());
}
