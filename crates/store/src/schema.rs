//! Schema migrations: an append-only list of SQL steps, `PRAGMA user_version` = steps applied.
//!
//! Never edit a released step; add a new one. A database whose version is higher than the
//! number of steps here was written by a newer driftd and is refused rather than misread.

use super::secrets::SecretKeys;
use super::{rewrite, StoreError};
use rusqlite::{Connection, TransactionBehavior};

/// Forward migrations, applied in order. Namespaces are stored as `''` for cluster-scoped
/// objects so they take part in primary keys and unique indexes (SQL NULLs never collide).
pub(crate) const MIGRATIONS: &[&str] = &[
    // 1: initial schema.
    r#"
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value BLOB NOT NULL
    );
    CREATE TABLE sources (
        id         INTEGER PRIMARY KEY,
        name       TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL
    );
    CREATE TABLE revisions (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        source_id    INTEGER NOT NULL REFERENCES sources(id),
        author       TEXT NOT NULL,
        message      TEXT NOT NULL,
        committed_at TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        object_count INTEGER NOT NULL
    );
    CREATE INDEX revisions_by_source ON revisions(source_id, id);
    CREATE TABLE revision_objects (
        revision_id     INTEGER NOT NULL REFERENCES revisions(id),
        grp             TEXT NOT NULL,
        kind            TEXT NOT NULL,
        namespace       TEXT NOT NULL,
        name            TEXT NOT NULL,
        api_version     TEXT NOT NULL,
        body            TEXT NOT NULL,
        origin_file     TEXT NOT NULL,
        origin_document INTEGER NOT NULL,
        PRIMARY KEY (revision_id, grp, kind, namespace, name)
    ) WITHOUT ROWID;
    CREATE INDEX revision_objects_by_key ON revision_objects(grp, kind, namespace, name);
    CREATE TABLE episodes (
        id          INTEGER PRIMARY KEY,
        grp         TEXT NOT NULL,
        kind        TEXT NOT NULL,
        namespace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        source      TEXT NOT NULL,
        class       TEXT NOT NULL,
        first_seen  TEXT NOT NULL,
        last_seen   TEXT NOT NULL,
        resolved_at TEXT,
        paths       TEXT NOT NULL
    );
    -- At most one open episode per object.
    CREATE UNIQUE INDEX episodes_open ON episodes(grp, kind, namespace, name)
        WHERE resolved_at IS NULL;
    "#,
    // 2: intents, the write-ahead log of deploys. Sources are referenced by name: an intent
    // may be the first thing ever recorded for a source, and `sources` lists only sources
    // that have revisions.
    r#"
    CREATE TABLE intents (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        source       TEXT NOT NULL,
        holder       TEXT NOT NULL,
        state        TEXT NOT NULL CHECK (state IN
                     ('pending', 'committed', 'aborted', 'failed', 'interrupted', 'released',
                      'superseded')),
        author       TEXT NOT NULL,
        message      TEXT NOT NULL,
        created_at   TEXT NOT NULL,
        ttl_seconds  INTEGER NOT NULL,
        expires_at   TEXT NOT NULL,
        ended_at     TEXT,
        ended_by     TEXT,
        end_reason   TEXT,
        content_hash TEXT NOT NULL,
        object_count INTEGER NOT NULL,
        revision_id  INTEGER REFERENCES revisions(id)
    );
    CREATE INDEX intents_by_source ON intents(source, id);
    -- The lock: at most one pending intent per source (expired ones included: expiry is
    -- derived from expires_at, the row stays pending until someone releases it).
    CREATE UNIQUE INDEX intents_lock ON intents(source) WHERE state = 'pending';
    CREATE TABLE intent_objects (
        intent_id       INTEGER NOT NULL REFERENCES intents(id),
        grp             TEXT NOT NULL,
        kind            TEXT NOT NULL,
        namespace       TEXT NOT NULL,
        name            TEXT NOT NULL,
        api_version     TEXT NOT NULL,
        body            TEXT NOT NULL,
        origin_file     TEXT NOT NULL,
        origin_document INTEGER NOT NULL,
        PRIMARY KEY (intent_id, grp, kind, namespace, name)
    ) WITHOUT ROWID;
    -- Every transition of an intent (renewals excepted): the source's history shows them.
    CREATE TABLE intent_events (
        id        INTEGER PRIMARY KEY AUTOINCREMENT,
        intent_id INTEGER NOT NULL REFERENCES intents(id),
        source    TEXT NOT NULL,
        at        TEXT NOT NULL,
        action    TEXT NOT NULL,
        actor     TEXT NOT NULL,
        detail    TEXT NOT NULL
    );
    CREATE INDEX intent_events_by_source ON intent_events(source, id);
    "#,
    // 3: Secret values at rest. Bodies keep keyed hashes in place of the values; `sealed`
    // holds the values encrypted when an encryption key is configured. The data step
    // (`rewrite::hash_stored_values`) rewrites what older versions stored in clear.
    r#"
    ALTER TABLE revision_objects ADD COLUMN sealed BLOB;
    ALTER TABLE intent_objects ADD COLUMN sealed BLOB;
    "#,
    // 4: revisions and intents imported from the cluster log (`driftd commit|intent|run
    // --cluster`). They keep the cluster's numbers as their ids, so every replica orders and
    // names them alike; these tables tell them from rows written here directly, and make an
    // import idempotent. `refused`: why this database could not take it (an object owned by
    // another source), so it is said once, not on every pass.
    r#"
    CREATE TABLE cluster_revisions (
        id          INTEGER PRIMARY KEY,
        source      TEXT NOT NULL,
        revision_id INTEGER REFERENCES revisions(id),
        refused     TEXT,
        imported_at TEXT NOT NULL
    );
    CREATE TABLE cluster_intents (
        id          INTEGER PRIMARY KEY,
        source      TEXT NOT NULL,
        refused     TEXT,
        imported_at TEXT NOT NULL
    );
    "#,
    // 5: how many objects of the input a revision left out (an object with `generateName`
    // and no `name`, which no live object can be matched to), so `driftd sources` can say
    // so; an intent keeps it for the revision it becomes. Revisions written before this step skipped none that anyone counted: 0.
    r#"
    ALTER TABLE revisions ADD COLUMN skipped_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE intents ADD COLUMN skipped_count INTEGER NOT NULL DEFAULT 0;
    "#,
    // 6: the content of the cluster's Secrets and ConfigMaps as driftd saw it (`stale_config`):
    // a hash (keyed for Secrets, never a value) and when driftd first saw that content.
    r#"
    CREATE TABLE config_contents (
        namespace  TEXT NOT NULL,
        kind       TEXT NOT NULL,
        name       TEXT NOT NULL,
        hash       TEXT NOT NULL,
        first_seen TEXT NOT NULL,
        -- earlier contents, newest first: JSON [[hash, first_seen], ...]
        earlier    TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (namespace, kind, name)
    ) WITHOUT ROWID;
    "#,
    // 7: remediations the daemon made (`remediation = "auto"` sources), for the history.
    r#"
    CREATE TABLE remediations (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        source      TEXT NOT NULL,
        revision_id INTEGER NOT NULL,
        grp         TEXT NOT NULL,
        kind        TEXT NOT NULL,
        namespace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        at          TEXT NOT NULL,
        actor       TEXT NOT NULL,
        outcome     TEXT NOT NULL CHECK (outcome IN ('applied', 'failed')),
        detail      TEXT NOT NULL
    );
    CREATE INDEX remediations_by_source ON remediations(source, id);
    "#,
    // 8: how drift episodes ended, for the drift history: `who` changed the drifting fields
    // (JSON: [{"manager", "changed_at"}], a shape that may carry more about the person),
    // `ended` how the episode ended and `ended_by` who ended it, when known. NULL for
    // episodes written before this step. Closed episodes are deleted past the retention
    // (`history.retention_days`), oldest first, through `episodes_closed`.
    r#"
    ALTER TABLE episodes ADD COLUMN who TEXT;
    ALTER TABLE episodes ADD COLUMN ended TEXT;
    ALTER TABLE episodes ADD COLUMN ended_by TEXT;
    CREATE INDEX episodes_closed ON episodes(resolved_at) WHERE resolved_at IS NOT NULL;
    CREATE INDEX episodes_by_first_seen ON episodes(first_seen);
    "#,
    // 9: objects `driftd adopt --write` wrote back into their manifests, so that the commit
    // which then ends their drift is told apart as `adopted`. Deleted with the episodes past
    // the history's retention.
    r#"
    CREATE TABLE adoptions (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        source      TEXT NOT NULL,
        revision_id INTEGER NOT NULL,
        grp         TEXT NOT NULL,
        kind        TEXT NOT NULL,
        namespace   TEXT NOT NULL,
        name        TEXT NOT NULL,
        at          TEXT NOT NULL,
        actor       TEXT NOT NULL
    );
    CREATE INDEX adoptions_by_object ON adoptions(grp, kind, namespace, name, at);
    "#,
];

/// Steps that rewrite data with Rust code, run right after the SQL step of the same number,
/// in the same transaction. They may use the keys of the process that migrates, and must
/// work without any. Returns whether they rewrote stored data.
fn data_step(
    version: usize,
    tx: &Connection,
    keys: &SecretKeys,
    database: &str,
) -> Result<bool, StoreError> {
    match version {
        3 => {
            ensure_installation_key(tx, keys)?;
            rewrite::hash_stored_values(tx, keys, database)
        }
        _ => Ok(false),
    }
}

/// Creates the random installation key, unless a hash key is configured: then the key lives
/// outside the database, and the database must not hold one a copy of it could use.
fn ensure_installation_key(conn: &Connection, keys: &SecretKeys) -> rusqlite::Result<()> {
    if keys.hash.is_some() {
        return Ok(());
    }
    let key: [u8; 32] = rand::random();
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('installation_key', ?1)",
        [&key[..]],
    )?;
    Ok(())
}

/// The schema version this binary writes.
pub(crate) fn current_version() -> i64 {
    MIGRATIONS.len() as i64
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |row| row.get(0))
}

/// Brings the schema up to date and, without a configured hash key, creates the
/// installation key, in one transaction.
/// Returns whether stored data was rewritten (the caller then checkpoints, so the file no
/// longer holds what was replaced).
///
/// Does not write when the database is already current, so opening a database only to read
/// it (or to be refused a commit) leaves the file untouched.
pub(crate) fn migrate(
    conn: &mut Connection,
    path: &str,
    keys: &SecretKeys,
) -> Result<bool, StoreError> {
    let supported = current_version();
    let found = user_version(conn)?;
    if found > supported {
        return Err(too_new(path, found, supported));
    }
    if found == supported {
        return Ok(false);
    }
    // IMMEDIATE: take the write lock before reading the version again, so two processes
    // opening a fresh database at once do not both run step 1.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = user_version(&tx)?;
    if found > supported {
        return Err(too_new(path, found, supported));
    }
    let mut rewrote = false;
    for (i, step) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        tx.execute_batch(step)?;
        rewrote |= data_step(i + 1, &tx, keys, path)?;
    }
    // PRAGMA cannot take bound parameters; the value is our own integer.
    tx.execute_batch(&format!("PRAGMA user_version = {supported}"))?;
    ensure_installation_key(&tx, keys)?;
    tx.commit()?;
    Ok(rewrote)
}

fn too_new(path: &str, found: i64, supported: i64) -> StoreError {
    StoreError::Schema(format!(
        "database {path} has schema version {found}, but this driftd only knows versions up to \
         {supported}: it was written by a newer driftd; upgrade driftd to use it"
    ))
}
