//! Secret values at rest: what the file holds, what comparisons and restores get back, key
//! rotation, a change of hash key, the migration from clear values, permissions and the
//! wording of errors.

use super::*;
use base64::Engine as _;
use driftd_core::diff::{secret, ClusterFacts, CompareInput, Differ, DriftClass};
use driftd_core::manifest::{self, LoadOptions};
use std::os::unix::fs::PermissionsExt;

const PASSWORD: &str = "store-test-password-Qx81";
const TOKEN: &str = "store-test-token-Lm27";

fn secret_yaml(password: &str) -> String {
    let token = base64::engine::general_purpose::STANDARD.encode(TOKEN);
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: app\n\
         stringData:\n  password: {password}\ndata:\n  token: {token}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: app\n\
         data:\n  level: info\n"
    )
}

fn objects(text: &str) -> Vec<ManifestObject> {
    manifest::parse_text(text, "app.yaml", &LoadOptions::default()).unwrap()
}

fn commit(store: &mut Store, text: &str) -> Result<CommitOutcome, StoreError> {
    let objs = objects(text);
    store.commit(&CommitRequest {
        source: "app",
        message: "",
        author: "alice",
        objects: &objs,
        committed_at: None,
        skipped: 0,
    })
}

fn secret_key() -> ObjectKey {
    ObjectKey {
        group: String::new(),
        kind: "Secret".into(),
        namespace: Some("app".into()),
        name: "db".into(),
    }
}

fn keys(encryption: Option<u8>, previous: &[u8], hash: Option<u8>) -> SecretKeys {
    SecretKeys {
        hash: hash.map(|b| Key::from_bytes([b; 32], &format!("hash-{b}"))),
        encryption: encryption.map(|b| Key::from_bytes([b; 32], &format!("enc-{b}"))),
        previous: previous
            .iter()
            .map(|b| Key::from_bytes([*b; 32], &format!("enc-{b}")))
            .collect(),
    }
}

/// Every spelling of `value` that would give it away.
fn forms(value: &str) -> Vec<String> {
    let b64 = &base64::engine::general_purpose::STANDARD;
    vec![
        value.to_string(),
        b64.encode(value),
        b64.encode(value).trim_end_matches('=').to_string(),
        hex::encode(value),
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(value.as_bytes())),
    ]
}

/// The database's files, read raw after the store is closed.
fn raw_files(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    for suffix in ["-wal", "-shm"] {
        let mut p = path.as_os_str().to_os_string();
        p.push(suffix);
        bytes.extend(std::fs::read(PathBuf::from(p)).unwrap_or_default());
    }
    bytes
}

fn assert_absent(bytes: &[u8], values: &[&str]) {
    let text = String::from_utf8_lossy(bytes);
    for value in values {
        for form in forms(value) {
            assert!(
                !text.contains(&form),
                "the database holds a form of {value:?}"
            );
        }
    }
}

fn live(password: &str) -> serde_json::Value {
    let b64 = &base64::engine::general_purpose::STANDARD;
    serde_json::json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "db", "namespace": "app", "uid": "u1"},
        "data": {"password": b64.encode(password), "token": b64.encode(TOKEN)}})
}

/// Compares the stored desired Secret with a live one, as the daemon does.
fn compare_stored(store: &Store, live: &serde_json::Value) -> driftd_core::diff::Comparison {
    let state = store.desired_state().unwrap();
    let desired = state
        .objects
        .iter()
        .find(|o| o.key == secret_key())
        .unwrap();
    Differ::new(&store.installation_key().unwrap()).compare(&CompareInput {
        desired: &desired.object,
        live: Some(live),
        previous: desired.previous.as_ref(),
        facts: &ClusterFacts::default(),
    })
}

#[test]
fn committed_values_are_kept_only_as_keyed_hashes_that_still_compare() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let mut store = Store::open(&path).unwrap();
    commit(&mut store, &secret_yaml(PASSWORD)).unwrap();
    let stored = store.desired_state().unwrap();
    let db = stored
        .objects
        .iter()
        .find(|o| o.key == secret_key())
        .unwrap();
    assert!(secret::holds_hashes(&db.object), "{}", db.object);

    assert_eq!(
        compare_stored(&store, &live(PASSWORD)).class,
        DriftClass::InSync
    );
    let changed = compare_stored(&store, &live("changed-by-hand"));
    assert_eq!(changed.class, DriftClass::Modified);
    let change = &changed.changes[0];
    assert_eq!(change.path, "/stringData/password");
    // The same 16 digits a comparison of the manifest itself shows.
    let key = store.installation_key().unwrap();
    assert_eq!(
        change.desired.as_ref().unwrap(),
        &secret::redact_value(
            &key,
            &serde_json::json!(base64::engine::general_purpose::STANDARD.encode(PASSWORD))
        )
    );

    let err = store
        .desired_with_values("app", &secret_key())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Secret app/db")
            && err.contains("manifest again")
            && err.contains("secrets.encryption_key_file"),
        "{err}"
    );
    drop(store);
    assert_absent(&raw_files(&path), &[PASSWORD, TOKEN]);
}

#[test]
fn with_an_encryption_key_the_values_come_back_and_only_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let mut store = Store::open_with_keys(&path, keys(Some(1), &[], None)).unwrap();
    commit(&mut store, &secret_yaml(PASSWORD)).unwrap();
    let restored = store
        .desired_with_values("app", &secret_key())
        .unwrap()
        .unwrap();
    assert_eq!(restored, objects(&secret_yaml(PASSWORD))[0].object);
    assert_eq!(
        store
            .desired_with_values(
                "app",
                &ObjectKey {
                    name: "cfg".into(),
                    kind: "ConfigMap".into(),
                    ..secret_key()
                }
            )
            .unwrap()
            .unwrap()["data"]["level"],
        "info",
        "other kinds come back as stored"
    );
    drop(store);
    assert_absent(&raw_files(&path), &[PASSWORD, TOKEN]);

    // Without the key the values stay closed, and the message says which key is missing.
    let store = Store::open(&path).unwrap();
    let err = store
        .desired_with_values("app", &secret_key())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Secret app/db") && err.contains("no encryption key is configured"),
        "{err}"
    );
}

#[test]
fn same_content_is_unchanged_and_a_key_configured_later_keeps_the_values_from_then_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let first = match commit(&mut Store::open(&path).unwrap(), &secret_yaml(PASSWORD)).unwrap() {
        CommitOutcome::Created(r) => r,
        other => panic!("{other:?}"),
    };
    // The content hash is over the hashed form, under this database's key.
    let plain: Vec<_> = objects(&secret_yaml(PASSWORD))
        .into_iter()
        .map(|o| (o.key, o.object))
        .collect();
    assert_ne!(
        first.content_hash,
        revisions::content_hash(plain.iter().map(|(k, v)| (k, v)))
    );
    let mut store = Store::open_with_keys(&path, keys(Some(7), &[], None)).unwrap();
    match commit(&mut store, &secret_yaml(PASSWORD)).unwrap() {
        CommitOutcome::Unchanged(r) => assert_eq!(r.id, first.id),
        other => panic!("same content, no new revision: {other:?}"),
    }
    let restored = store.desired_with_values("app", &secret_key()).unwrap();
    assert_eq!(
        restored.unwrap()["stringData"]["password"],
        PASSWORD,
        "the unchanged commit stored the values sealed"
    );
    assert!(matches!(
        commit(&mut store, &secret_yaml("another")).unwrap(),
        CommitOutcome::Created(_)
    ));
    // Another database (another installation key): another content hash for the same files.
    let mut other = Store::open_in_memory().unwrap();
    match commit(&mut other, &secret_yaml(PASSWORD)).unwrap() {
        CommitOutcome::Created(r) => assert_ne!(r.content_hash, first.content_hash),
        o => panic!("{o:?}"),
    }
}

fn sealed_key_ids(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT sealed FROM revision_objects WHERE sealed IS NOT NULL
             UNION ALL SELECT sealed FROM intent_objects WHERE sealed IS NOT NULL",
        )
        .unwrap();
    stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .map(|b| hex::encode(secrets::sealed_by(&b.unwrap()).unwrap()))
        .collect()
}

#[test]
fn rekey_reseals_every_value_under_the_new_key_in_one_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    {
        let mut store = Store::open_with_keys(&path, keys(Some(1), &[], None)).unwrap();
        commit(&mut store, &secret_yaml(PASSWORD)).unwrap();
        commit(&mut store, &secret_yaml("second-password")).unwrap();
        let objs = objects(&secret_yaml("intent-password"));
        store
            .begin_intent(&BeginRequest {
                source: "app",
                holder: "ci",
                author: "alice",
                message: "",
                ttl: Duration::from_secs(600),
                objects: &objs,
                skipped: 0,
            })
            .unwrap();
    }
    let old = Key::from_bytes([1; 32], "old").id();
    let new = Key::from_bytes([2; 32], "new").id();
    assert_eq!(sealed_key_ids(&path), vec![old.clone(); 3]);

    // The old key is needed to open what it sealed: refused, nothing changed.
    let err = Store::open_with_keys(&path, keys(Some(2), &[], None))
        .unwrap()
        .rekey()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&old) && err.contains("previous_encryption_key_files"),
        "{err}"
    );
    assert_eq!(sealed_key_ids(&path), vec![old.clone(); 3]);

    let mut store = Store::open_with_keys(&path, keys(Some(2), &[1], None)).unwrap();
    let report = store.rekey().unwrap();
    assert_eq!(
        report,
        RekeyReport {
            resealed: 3,
            ..RekeyReport::default()
        }
    );
    assert_eq!(sealed_key_ids(&path), vec![new.clone(); 3]);
    assert_eq!(store.rekey().unwrap().already_current, 3, "idempotent");
    drop(store);
    // The old key can go now.
    let store = Store::open_with_keys(&path, keys(Some(2), &[], None)).unwrap();
    let restored = store.desired_with_values("app", &secret_key()).unwrap();
    assert_eq!(
        restored.unwrap()["stringData"]["password"],
        "second-password"
    );
    drop(store);
    assert_absent(
        &raw_files(&path),
        &[PASSWORD, "second-password", "intent-password", TOKEN],
    );
    // Without any encryption key, rekey would drop the values: refused.
    let err = Store::open(&path).unwrap().rekey().unwrap_err().to_string();
    assert!(err.contains("none is configured"), "{err}");
}

#[test]
fn a_new_hash_key_is_refused_until_rekey_rehashes_from_the_sealed_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    {
        let mut store = Store::open_with_keys(&path, keys(Some(1), &[], None)).unwrap();
        commit(&mut store, &secret_yaml(PASSWORD)).unwrap();
    }
    let mut store = Store::open_with_keys(&path, keys(Some(1), &[], Some(9))).unwrap();
    let err = commit(&mut store, &secret_yaml(PASSWORD))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("installation key kept in the database")
            && err.contains("hash key file hash-9")
            && err.contains("driftd store rekey"),
        "{err}"
    );
    assert!(store.installation_key().is_err(), "no comparisons either");
    // Listing still works: it needs no hash.
    let before = store.history("app").unwrap()[0].clone();

    let report = store.rekey().unwrap();
    assert!(report.rehashed);
    assert_eq!(store.installation_key().unwrap(), vec![9; 32]);
    assert_eq!(
        compare_stored(&store, &live(PASSWORD)).class,
        DriftClass::InSync
    );
    assert_eq!(
        compare_stored(&store, &live("other")).class,
        DriftClass::Modified
    );
    let after = store.history("app").unwrap()[0].clone();
    assert_ne!(after.content_hash, before.content_hash, "rehashed content");
    assert!(matches!(
        commit(&mut store, &secret_yaml(PASSWORD)).unwrap(),
        CommitOutcome::Unchanged(_)
    ));
}

#[test]
fn values_kept_only_as_hashes_cannot_move_to_a_new_hash_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    commit(&mut Store::open(&path).unwrap(), &secret_yaml(PASSWORD)).unwrap();
    let mut store = Store::open_with_keys(&path, keys(None, &[], Some(9))).unwrap();
    let err = store.rekey().unwrap_err().to_string();
    assert!(
        err.contains("Secret app/db (revision 1 of source app)")
            && err.contains("Keep the old hash key"),
        "{err}"
    );
    // Going back to the old key works as before.
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(
        compare_stored(&store, &live(PASSWORD)).class,
        DriftClass::InSync
    );
}

#[test]
fn a_hash_key_file_is_adopted_by_a_database_without_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    drop(Store::open(&path).unwrap());
    let mut store = Store::open_with_keys(&path, keys(None, &[], Some(5))).unwrap();
    assert_eq!(store.installation_key().unwrap(), vec![5; 32]);
    commit(&mut store, &secret_yaml(PASSWORD)).unwrap();
    assert_eq!(
        compare_stored(&store, &live(PASSWORD)).class,
        DriftClass::InSync
    );
    // From now on the installation key is the wrong one.
    assert!(matches!(
        Store::open(&path).unwrap().installation_key(),
        Err(StoreError::HashKeyMismatch { .. })
    ));
}

/// A schema-2 database with a Secret in clear, as the previous driftd wrote it.
fn schema2_with_clear_secret(path: &Path) {
    let mut conn = Connection::open(path).unwrap();
    let tx = conn.transaction().unwrap();
    for step in &schema::MIGRATIONS[..2] {
        tx.execute_batch(step).unwrap();
    }
    tx.execute_batch("PRAGMA user_version = 2").unwrap();
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('installation_key', ?1)",
        [&[3u8; 32][..]],
    )
    .unwrap();
    tx.execute(
        "INSERT INTO sources (id, name, created_at) VALUES (1, 'app', '2026-01-01T00:00:00Z')",
        [],
    )
    .unwrap();
    tx.execute(
        "INSERT INTO revisions VALUES (1, 1, 'a', '', '2026-01-01T00:00:00Z', 'old', 2)",
        [],
    )
    .unwrap();
    for o in objects(&secret_yaml(PASSWORD)) {
        tx.execute(
            "INSERT INTO revision_objects VALUES (1, ?1, ?2, ?3, ?4, 'v1', ?5, 'a.yaml', 1)",
            rusqlite::params![
                o.key.group,
                o.key.kind,
                ns_to_db(&o.key.namespace),
                o.key.name,
                o.object.to_string()
            ],
        )
        .unwrap();
    }
    tx.commit().unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
}

#[test]
fn the_migration_hashes_clear_values_and_seals_them_when_a_key_is_configured() {
    let dir = tempfile::tempdir().unwrap();
    for (name, keys) in [
        ("plain.db", SecretKeys::default()),
        ("keyed.db", keys(Some(4), &[], None)),
    ] {
        let path = dir.path().join(name);
        schema2_with_clear_secret(&path);
        assert!(String::from_utf8_lossy(&raw_files(&path)).contains(PASSWORD));
        let sealing = keys.encryption.is_some();
        let store = Store::open_with_keys(&path, keys).unwrap();
        assert_eq!(
            compare_stored(&store, &live(PASSWORD)).class,
            DriftClass::InSync,
            "{name}"
        );
        let revision = &store.history("app").unwrap()[0];
        assert_ne!(revision.content_hash, "old", "recomputed");
        assert_eq!(
            store.desired_with_values("app", &secret_key()).is_ok(),
            sealing,
            "{name}: values kept only with a key"
        );
        // While the store is still open: the rewrite is checkpointed into the file at once.
        assert_absent(&raw_files(&path), &[PASSWORD, TOKEN]);
        drop(store);
        assert_absent(&raw_files(&path), &[PASSWORD, TOKEN]);
    }
}

#[test]
fn the_database_and_its_wal_are_private_and_a_readable_one_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let mut store = Store::open(&path).unwrap();
    commit(&mut store, &secret_yaml(PASSWORD)).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let wal = dir.path().join("d.db-wal");
    let shm = dir.path().join("d.db-shm");
    assert!(wal.exists() && shm.exists(), "WAL mode, store open");
    for p in [&path, &wal, &shm] {
        assert_eq!(mode(p), 0o600, "{}", p.display());
    }
    assert!(store.insecure_files().is_empty());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let found = store.insecure_files();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].mode, 0o644);
    let text = insecure_warning(&found).unwrap();
    assert!(
        text.contains("d.db (mode 0644) is accessible") && text.contains("chmod 600"),
        "{text}"
    );
    assert_eq!(insecure_warning(&[]), None);
}

/// The error and its sources, as `anyhow` prints them with `{:#}`.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

#[test]
fn store_errors_say_sqlites_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/dir/d.db");
    let text = chain(&Store::open(&missing).err().unwrap());
    assert_eq!(
        text,
        format!(
            "database {}: unable to open database file",
            missing.display()
        )
    );
    let garbage = dir.path().join("garbage.db");
    std::fs::write(&garbage, "x".repeat(200)).unwrap();
    let text = chain(&Store::open(&garbage).err().unwrap());
    assert_eq!(
        text,
        format!("database {}: file is not a database", garbage.display())
    );
    let store = Store::open_in_memory().unwrap();
    store.conn.execute_batch("DROP TABLE episodes").unwrap();
    let text = chain(&store.open_episodes().unwrap_err());
    assert_eq!(text.matches("no such table").count(), 1, "{text}");
}
