//! Moving the hash key out of the database: where each value comes from, what is left in the
//! file, that the move is one transaction, and what a database without a key of its own says.

use super::*;
use crate::{CommitRequest, Key};
use driftd_core::diff::{ClusterFacts, CompareInput, Differ, DriftClass};
use driftd_core::manifest::{self, LoadOptions};
use std::path::Path;

const NEW: [u8; 32] = [9; 32];

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn secret(name: &str, password: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n  namespace: app\n\
         stringData:\n  password: {password}\ndata:\n  token: {}\n",
        b64(&format!("token-of-{name}"))
    )
}

fn key(name: &str) -> ObjectKey {
    ObjectKey {
        group: String::new(),
        kind: "Secret".into(),
        namespace: Some("app".into()),
        name: name.into(),
    }
}

/// The Secret as the API server returns it: `stringData` folded into base64 `data`.
fn live(name: &str, password: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": name, "namespace": "app", "uid": "u"},
        "data": {"password": b64(password), "token": b64(&format!("token-of-{name}"))}})
}

fn commit(store: &mut Store, source: &str, yaml: &str) {
    let objects = manifest::parse_text(yaml, "a.yaml", &LoadOptions::default()).unwrap();
    store
        .commit(&CommitRequest {
            source,
            message: "",
            author: "alice",
            objects: &objects,
            committed_at: None,
            skipped: 0,
        })
        .unwrap();
}

fn keys(hash: Option<[u8; 32]>, encryption: Option<[u8; 32]>) -> SecretKeys {
    SecretKeys {
        hash: hash.map(|k| Key::from_bytes(k, "hash")),
        encryption: encryption.map(|k| Key::from_bytes(k, "enc")),
        previous: Vec::new(),
    }
}

/// The class of the stored Secret `name` against a live one, compared as the daemon does.
fn class(store: &Store, name: &str, live: &Value) -> DriftClass {
    let state = store.desired_state().unwrap();
    let desired = state.objects.iter().find(|o| o.key == key(name)).unwrap();
    Differ::new(&store.installation_key().unwrap())
        .compare(&CompareInput {
            desired: &desired.object,
            live: Some(live),
            previous: desired.previous.as_ref(),
            facts: &ClusterFacts::default(),
        })
        .class
}

fn meta_keys(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare("SELECT key FROM meta ORDER BY key").unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

fn bodies(path: &Path) -> Vec<(String, String)> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare("SELECT name, body FROM revision_objects ORDER BY revision_id, name")
        .unwrap();
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.collect::<rusqlite::Result<_>>().unwrap()
}

/// A database as a local run made it (installation key in `meta`): Secret `sealed` kept
/// sealed, `plain`, `drifted` and `gone` kept only as hashes.
fn local_database(path: &Path) {
    let mut store = Store::open_with_keys(path, keys(None, Some([1; 32]))).unwrap();
    commit(&mut store, "sealed", &secret("sealed", "pw-sealed"));
    let mut store = Store::open(path).unwrap();
    let hashed_only = [
        secret("plain", "pw-plain"),
        secret("drifted", "pw-drifted"),
        secret("gone", "pw-gone"),
    ];
    commit(&mut store, "other", &hashed_only.join("---\n"));
    assert_eq!(meta_keys(path), ["hash_key_id", "installation_key"]);
}

#[test]
fn moving_out_rehashes_from_sealed_and_live_values_and_leaves_no_key_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    local_database(&path);

    let mut store = Store::open_with_keys(&path, keys(Some(NEW), Some([1; 32]))).unwrap();
    // Until moved, the configured key is refused: the hashes are under the database's key.
    assert!(matches!(
        store.installation_key(),
        Err(StoreError::HashKeyMismatch { .. })
    ));
    let pending = store.pending_key_move().unwrap().unwrap();
    assert_eq!(
        pending.live_needed,
        [key("drifted"), key("gone"), key("plain")],
        "the sealed one needs nothing from the cluster"
    );
    let cluster: BTreeMap<ObjectKey, Value> = [
        (key("plain"), live("plain", "pw-plain")),
        (key("drifted"), live("drifted", "changed-by-hand")),
    ]
    .into();
    let report = store.move_hash_key(&cluster).unwrap();
    assert_eq!(
        report,
        KeyMoveReport {
            from_sealed: 1,
            from_live: 1,
            unrecoverable: vec![
                "Secret app/drifted (revision 2 of source other)".into(),
                "Secret app/gone (revision 2 of source other)".into(),
            ],
            key_removed: true,
        }
    );
    assert_eq!(meta_keys(&path), ["hash_key_id"], "no key left in the file");
    assert_eq!(store.installation_key().unwrap(), NEW.to_vec());
    for name in ["sealed", "plain"] {
        let committed = format!("pw-{name}");
        assert_eq!(
            class(&store, name, &live(name, &committed)),
            DriftClass::InSync
        );
        assert_eq!(
            class(&store, name, &live(name, "other")),
            DriftClass::Modified
        );
    }
    // What could not be recovered reads as changed, as it did before the move (the live
    // value differed, or there was none), even once the committed value is back.
    for name in ["drifted", "gone"] {
        let committed = format!("pw-{name}");
        assert_eq!(
            class(&store, name, &live(name, &committed)),
            DriftClass::Modified
        );
    }
    // The drifted Secret's token, which the live Secret still held, was recovered: only
    // the lost value reads as changed.
    let state = store.desired_state().unwrap();
    let drifted = state
        .objects
        .iter()
        .find(|o| o.key == key("drifted"))
        .unwrap();
    let comparison = Differ::new(&NEW).compare(&CompareInput {
        desired: &drifted.object,
        live: Some(&live("drifted", "pw-drifted")),
        previous: None,
        facts: &ClusterFacts::default(),
    });
    let paths: Vec<&str> = comparison.changes.iter().map(|c| c.path.as_str()).collect();
    assert_eq!(paths, ["/stringData/password"]);

    // Done once: nothing pending, and a second move changes nothing.
    assert_eq!(store.pending_key_move().unwrap(), None);
    let before = bodies(&path);
    assert_eq!(
        store.move_hash_key(&cluster).unwrap(),
        KeyMoveReport::default()
    );
    assert_eq!(bodies(&path), before);
    // Committing the manifests again restores the comparison of what was lost.
    commit(
        &mut store,
        "other",
        &[
            secret("plain", "pw-plain"),
            secret("drifted", "pw-drifted"),
            secret("gone", "pw-gone"),
        ]
        .join("---\n"),
    );
    let committed = live("drifted", "pw-drifted");
    assert_eq!(class(&store, "drifted", &committed), DriftClass::InSync);
}

#[test]
fn a_move_that_fails_midway_leaves_the_database_as_it_was_and_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    local_database(&path);
    let before = bodies(&path);
    let old_key = Store::open(&path).unwrap().installation_key().unwrap();
    // The failure comes after every Secret was rewritten, at the last step.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER crash BEFORE DELETE ON meta
             BEGIN SELECT RAISE(ABORT, 'simulated crash'); END;",
        )
        .unwrap();
    let cluster: BTreeMap<ObjectKey, Value> = [(key("plain"), live("plain", "pw-plain"))].into();
    let mut store = Store::open_with_keys(&path, keys(Some(NEW), None)).unwrap();
    let err = store.move_hash_key(&cluster).unwrap_err().to_string();
    assert!(err.contains("simulated crash"), "{err}");
    drop(store);

    assert_eq!(bodies(&path), before, "no Secret rewritten");
    assert_eq!(meta_keys(&path), ["hash_key_id", "installation_key"]);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.installation_key().unwrap(), old_key);
    assert_eq!(
        class(&store, "plain", &live("plain", "pw-plain")),
        DriftClass::InSync,
        "still usable with its own key"
    );
    drop(store);

    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TRIGGER crash")
        .unwrap();
    let mut store = Store::open_with_keys(&path, keys(Some(NEW), None)).unwrap();
    let report = store.move_hash_key(&cluster).unwrap();
    assert_eq!(report.from_live, 1);
    assert_eq!(meta_keys(&path), ["hash_key_id"]);
    assert_eq!(
        class(&store, "plain", &live("plain", "pw-plain")),
        DriftClass::InSync
    );
}

#[test]
fn a_database_made_with_an_outside_key_never_holds_one_and_says_which_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let mut store = Store::open_with_keys(&path, keys(Some(NEW), None)).unwrap();
    commit(&mut store, "app", &secret("db", "pw"));
    assert_eq!(store.pending_key_move().unwrap(), None);
    drop(store);
    assert_eq!(meta_keys(&path), ["hash_key_id"]);

    // Opened without the key: listing works, comparing and committing Secrets do not.
    let mut store = Store::open(&path).unwrap();
    assert_eq!(store.history("app").unwrap().len(), 1);
    assert_eq!(meta_keys(&path), ["hash_key_id"], "no key made on opening");
    let id = Key::from_bytes(NEW, "x").id();
    let err = store.installation_key().unwrap_err().to_string();
    assert!(
        err.contains(&format!("kept outside the database (id {id})"))
            && err.contains("secrets.hash_key_secret"),
        "{err}"
    );
    let objects =
        manifest::parse_text(&secret("db", "pw2"), "a.yaml", &LoadOptions::default()).unwrap();
    let refused = store.commit(&CommitRequest {
        source: "app",
        message: "",
        author: "alice",
        objects: &objects,
        committed_at: None,
        skipped: 0,
    });
    assert!(matches!(refused, Err(StoreError::NoHashKey { .. })));
}

#[test]
fn hashes_under_a_third_key_are_left_to_rekey() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    commit(
        &mut Store::open_with_keys(&path, keys(Some([5; 32]), None)).unwrap(),
        "app",
        &secret("db", "pw"),
    );
    // A local run added an installation key (a schema upgrade made without the key).
    Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO meta (key, value) VALUES ('installation_key', ?1)",
            [&[3u8; 32][..]],
        )
        .unwrap();
    let store = Store::open_with_keys(&path, keys(Some(NEW), None)).unwrap();
    assert_eq!(store.pending_key_move().unwrap(), None);
    let err = store.installation_key().unwrap_err().to_string();
    assert!(err.contains("another hash key, kept outside"), "{err}");
}

#[test]
fn without_secrets_the_move_only_deletes_the_key_and_the_config_contents() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let store = Store::open(&path).unwrap();
    store
        .record_config_contents(&[crate::ContentChange::Seen(crate::ConfigContent {
            namespace: "app".into(),
            kind: "Secret".into(),
            name: "db".into(),
            hash: "00000000:ab".into(),
            first_seen: "2026-01-01T00:00:00Z".parse().unwrap(),
            earlier: vec![],
        })])
        .unwrap();
    drop(store);
    let mut store = Store::open_with_keys(&path, keys(Some(NEW), None)).unwrap();
    assert_eq!(store.pending_key_move().unwrap(), Some(KeyMove::default()));
    let report = store.move_hash_key(&BTreeMap::new()).unwrap();
    assert!(report.key_removed && report.changed());
    assert_eq!(meta_keys(&path), ["hash_key_id"], "the new key's id only");
    assert!(store.config_contents().unwrap().is_empty());
}
