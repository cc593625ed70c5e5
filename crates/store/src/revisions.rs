//! Sources and their immutable revisions: commit, listings, and the current desired state.

use super::secrets::{stored_form, HashKey, Key};
use super::{
    key_from_db, ns_to_db, ts_from_db, ts_to_db, DesiredObject, DesiredState, DesiredText,
    RevisionInfo, SourceSummary, StoreError,
};
use driftd_core::manifest::Desired;
use driftd_core::par;
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Longest accepted source name; names show up in tables, metrics labels and Events.
const MAX_SOURCE_NAME: usize = 128;

/// JSON with object keys sorted at every level and no whitespace, so equal content always
/// hashes equal whatever key order the files used.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// Keys and scalars are written by serde_json itself (the same escaping as `to_string`),
/// straight into `out`: a commit of 100,000 objects spent 18% of its time here when each key
/// was copied into a `Value` and rendered into a `String` of its own.
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, k).expect("a key writes to memory");
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => serde_json::to_writer(out, scalar).expect("a scalar writes to memory"),
    }
}

/// sha256 (hex) over the canonical JSON array of the stored objects sorted by key:
/// independent of file names, file order and key order, so moving manifests around is not a
/// new revision. Over the stored form, where Secret values are keyed hashes, so the hash
/// printed by `history` and `sources` cannot be brute-forced back to a short Secret value.
pub(crate) fn content_hash<'a>(
    objects: impl IntoIterator<Item = (&'a ObjectKey, &'a Value)>,
) -> String {
    canonical_hash(
        objects
            .into_iter()
            .map(|(key, object)| (key, canonical_json(object)))
            .collect(),
    )
}

/// [`content_hash`] of objects already in canonical JSON.
fn canonical_hash(mut objects: Vec<(&ObjectKey, String)>) -> String {
    objects.sort_by(|a, b| a.0.cmp(b.0));
    let mut hasher = Sha256::new();
    hasher.update(b"[");
    for (i, (_, text)) in objects.iter().enumerate() {
        if i > 0 {
            hasher.update(b",");
        }
        hasher.update(text.as_bytes());
    }
    hasher.update(b"]");
    hex::encode(hasher.finalize())
}

/// Checks a source name before anything is opened or written (names end up in tables,
/// metric labels and Events, so they stay short and plain).
pub fn validate_source_name(name: &str) -> Result<(), StoreError> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/');
    if name.is_empty() || name.len() > MAX_SOURCE_NAME || !name.chars().all(ok_char) {
        return Err(StoreError::Rejected(format!(
            "invalid source name {name:?}: use 1 to {MAX_SOURCE_NAME} characters from \
             letters, digits, '-', '_', '.' and '/'"
        )));
    }
    Ok(())
}

const REVISION_COLUMNS: &str = "r.id, s.name, r.author, r.message, r.committed_at, \
                                r.content_hash, r.object_count, r.skipped_count";

fn revision_from_row(row: &rusqlite::Row) -> rusqlite::Result<RevisionInfo> {
    Ok(RevisionInfo {
        id: row.get(0)?,
        source: row.get(1)?,
        author: row.get(2)?,
        message: row.get(3)?,
        committed_at: ts_from_db(row, 4)?,
        content_hash: row.get(5)?,
        object_count: row.get::<_, i64>(6)? as usize,
        skipped_count: row.get::<_, i64>(7)? as usize,
    })
}

pub(super) fn newest_revision(
    conn: &Connection,
    source: &str,
) -> rusqlite::Result<Option<RevisionInfo>> {
    conn.query_row(
        &format!(
            "SELECT {REVISION_COLUMNS} FROM revisions r JOIN sources s ON s.id = r.source_id \
             WHERE s.name = ?1 ORDER BY r.id DESC LIMIT 1"
        ),
        [source],
        revision_from_row,
    )
    .optional()
}

/// Whether the newest revision of source `source` holds the key (?2..?5): one primary-key
/// lookup.
const IN_OWN_HEAD: &str = "SELECT 1 FROM revision_objects
     WHERE revision_id = (SELECT MAX(r.id) FROM revisions r
                          JOIN sources s ON s.id = r.source_id WHERE s.name = ?1)
       AND grp = ?2 AND kind = ?3 AND namespace = ?4 AND name = ?5";

/// The other source (not ?1) whose newest revision holds the key (?2..?5), with that
/// revision: the rows of this one key only, found through `revision_objects_by_key`.
const OWNER_OF_KEY: &str = "SELECT s.name, o.revision_id FROM revision_objects o
     JOIN revisions r ON r.id = o.revision_id
     JOIN sources s ON s.id = r.source_id
     WHERE o.grp = ?2 AND o.kind = ?3 AND o.namespace = ?4 AND o.name = ?5
       AND s.name != ?1
       AND o.revision_id = (SELECT MAX(id) FROM revisions WHERE source_id = r.source_id)
     LIMIT 1";

/// The source other than `source` whose newest revision owns `key`, with that revision.
///
/// Reads only this key's rows, never another source's object set: a small commit next to a
/// large source costs a few index lookups, not the large source's keys in memory. A key the
/// source's own newest revision already holds is owned by no other source (every write of a
/// newest revision, commit, intent or import, runs this check first, so newest revisions
/// never share a key), and is answered by one primary-key lookup.
fn owner_of(
    conn: &Connection,
    source: &str,
    key: &ObjectKey,
) -> rusqlite::Result<Option<(String, i64)>> {
    let ns = ns_to_db(&key.namespace);
    let args = params![source, key.group, key.kind, ns, key.name];
    if conn
        .prepare_cached(IN_OWN_HEAD)?
        .query_row(args, |_| Ok(()))
        .optional()?
        .is_some()
    {
        return Ok(None);
    }
    conn.prepare_cached(OWNER_OF_KEY)?
        .query_row(args, |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()
}

/// One object as the store keeps it, for a revision or an intent: the body as JSON text
/// (Secret values replaced by keyed hashes), the values sealed when an encryption key is
/// configured, and where it came from, so errors can point at the file.
pub(super) struct StoredObject {
    pub key: ObjectKey,
    pub api_version: String,
    pub body: String,
    pub sealed: Option<Vec<u8>>,
    pub origin_file: String,
    pub origin_document: i64,
}

impl StoredObject {
    fn origin(&self) -> String {
        format!("{}: document {}", self.origin_file, self.origin_document)
    }
}

/// The keys a write stores Secret values with.
pub(super) struct Sealing<'a> {
    pub hash: HashKey,
    pub encryption: Option<&'a Key>,
}

/// Checks what can be checked without the database (source name, no object twice) and
/// returns the content hash and the objects as stored: the same rules for a commit and for
/// an intent.
pub(super) fn validate_objects<O: Desired>(
    source: &str,
    objects: &[O],
    sealing: &Sealing,
) -> Result<(String, Vec<StoredObject>), StoreError> {
    // A Helm release's source (`helm:` and a namespace and a release name, which Kubernetes
    // names keep within the plain characters) or a Pulumi stack's (`pulumi:` and a project
    // and a stack, which Pulumi names keep so too).
    let imported = driftd_core::helm::parse_source(source)
        .or_else(|| driftd_core::pulumi::interrupted::parse_source(source));
    match imported {
        Some((first, second)) => validate_source_name(&format!("{first}/{second}"))?,
        None => validate_source_name(source)?,
    }
    let mut seen: HashMap<&ObjectKey, &O> = HashMap::new();
    for obj in objects {
        if let Some(first) = seen.insert(obj.key(), obj) {
            return Err(StoreError::Rejected(format!(
                "{} is given twice: {} and {}",
                obj.key(),
                first.origin(),
                obj.origin()
            )));
        }
    }
    // Object by object, on every core: each stored form is a tree only while its texts are
    // made (holding every form at once cost a copy of the whole source).
    let (canonical, stored) = par::map_ordered(objects, |obj| {
        // An object held as text is a tree only while this closure runs.
        let tree = obj.tree();
        let (body, sealed) = stored_form(&sealing.hash, sealing.encryption, obj.key(), &tree);
        let canonical = (obj.key(), canonical_json(&body));
        let stored = StoredObject {
            key: obj.key().clone(),
            api_version: obj.api_version().to_string(),
            body: body.to_string(),
            sealed,
            origin_file: obj.origin().file.clone(),
            origin_document: obj.origin().document as i64,
        };
        (canonical, stored)
    })
    .into_iter()
    .unzip();
    Ok((canonical_hash(canonical), stored))
}

/// Refuses objects owned by another source's newest revision. Call inside the write
/// transaction, so no other commit can take an object between this check and the insert.
pub(super) fn check_owners(
    conn: &Connection,
    source: &str,
    objects: &[StoredObject],
) -> Result<(), StoreError> {
    for obj in objects {
        if let Some((other, revision)) = owner_of(conn, source, &obj.key)? {
            return Err(StoreError::Rejected(format!(
                "{} ({}) is already owned by source {other:?} (revision {revision}); \
                 an object can belong to one source only: remove it from one of them",
                obj.key,
                obj.origin()
            )));
        }
    }
    Ok(())
}

/// Inserts `objects` into `table` (`revision_objects` or `intent_objects`, whose owner
/// column is `owner_column`) under `owner`.
pub(super) fn insert_objects(
    conn: &Connection,
    table: &str,
    owner_column: &str,
    owner: i64,
    objects: &[StoredObject],
) -> Result<(), StoreError> {
    let mut insert = conn.prepare(&format!(
        "INSERT INTO {table}
         ({owner_column}, grp, kind, namespace, name, api_version, body, sealed, origin_file,
          origin_document)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    ))?;
    // In key order, the order of the primary key and of the by-key index: each row then
    // lands next to the one before, instead of on a page long since out of SQLite's cache.
    // (In input order, a commit of 100,000 objects needed a page cache of 400 MB not to
    // spill and read back its pages; in key order SQLite's default 2 MB does, faster.)
    let mut in_key_order: Vec<&StoredObject> = objects.iter().collect();
    in_key_order.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    for obj in in_key_order {
        insert.execute(params![
            owner,
            obj.key.group,
            obj.key.kind,
            ns_to_db(&obj.key.namespace),
            obj.key.name,
            obj.api_version,
            obj.body,
            obj.sealed,
            obj.origin_file,
            obj.origin_document,
        ])?;
    }
    Ok(())
}

/// Stores the sealed values of `objects` where revision `revision` (same content, so the
/// same hashes) has none: committing unchanged manifests again once an encryption key is
/// configured keeps their values from then on, without a new revision.
pub(super) fn fill_sealed(
    conn: &Connection,
    revision: i64,
    objects: &[StoredObject],
) -> Result<(), StoreError> {
    let mut update = conn.prepare(
        "UPDATE revision_objects SET sealed = ?1
         WHERE revision_id = ?2 AND grp = ?3 AND kind = ?4 AND namespace = ?5 AND name = ?6
           AND sealed IS NULL AND body = ?7",
    )?;
    for obj in objects {
        if let Some(sealed) = &obj.sealed {
            update.execute(params![
                sealed,
                revision,
                obj.key.group,
                obj.key.kind,
                ns_to_db(&obj.key.namespace),
                obj.key.name,
                obj.body
            ])?;
        }
    }
    Ok(())
}

/// What a new revision row says about itself.
pub(super) struct NewRevision<'a> {
    /// The id to take (an import keeps the cluster's number); `None`: the next one.
    pub id: Option<i64>,
    pub source: &'a str,
    pub author: &'a str,
    pub message: &'a str,
    pub committed_at: Timestamp,
    pub content_hash: &'a str,
    /// Objects of the input left out (`generateName` without a `name`).
    pub skipped: usize,
}

/// Writes a revision and its objects, creating the source on its first revision. Call
/// inside the write transaction, after the checks.
pub(super) fn insert_revision(
    conn: &Connection,
    rev: &NewRevision,
    objects: &[StoredObject],
    now: Timestamp,
) -> Result<RevisionInfo, StoreError> {
    let source_id: i64 = match conn
        .query_row(
            "SELECT id FROM sources WHERE name = ?1",
            [rev.source],
            |r| r.get(0),
        )
        .optional()?
    {
        Some(id) => id,
        None => {
            conn.execute(
                "INSERT INTO sources (name, created_at) VALUES (?1, ?2)",
                params![rev.source, ts_to_db(now)],
            )?;
            conn.last_insert_rowid()
        }
    };
    conn.execute(
        "INSERT INTO revisions (id, source_id, author, message, committed_at, content_hash,
                                object_count, skipped_count)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            rev.id,
            source_id,
            rev.author,
            rev.message,
            ts_to_db(rev.committed_at),
            rev.content_hash,
            objects.len() as i64,
            rev.skipped as i64
        ],
    )?;
    let revision_id = conn.last_insert_rowid();
    insert_objects(
        conn,
        "revision_objects",
        "revision_id",
        revision_id,
        objects,
    )?;
    Ok(RevisionInfo {
        id: revision_id,
        source: rev.source.to_string(),
        author: rev.author.to_string(),
        message: rev.message.to_string(),
        committed_at: rev.committed_at,
        content_hash: rev.content_hash.to_string(),
        object_count: objects.len(),
        skipped_count: rev.skipped,
    })
}

pub(super) fn sources(conn: &Connection) -> Result<Vec<SourceSummary>, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT s.name, {REVISION_COLUMNS} FROM sources s
         LEFT JOIN revisions r ON r.id = (SELECT MAX(id) FROM revisions WHERE source_id = s.id)
         -- An uninstalled Helm release, a removed Pulumi stack, is no source any more (its
         -- history stays).
         WHERE NOT ((s.name LIKE 'helm:%' OR s.name LIKE 'pulumi:%') AND r.object_count = 0)
         ORDER BY s.name"
    ))?;
    let rows = stmt.query_map([], |row| {
        let name: String = row.get(0)?;
        let id: Option<i64> = row.get(1)?;
        let latest = match id {
            None => None,
            Some(_) => Some(RevisionInfo {
                id: row.get(1)?,
                source: row.get(2)?,
                author: row.get(3)?,
                message: row.get(4)?,
                committed_at: ts_from_db(row, 5)?,
                content_hash: row.get(6)?,
                object_count: row.get::<_, i64>(7)? as usize,
                skipped_count: row.get::<_, i64>(8)? as usize,
            }),
        };
        Ok(SourceSummary { name, latest })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn history(conn: &Connection, source: &str) -> Result<Vec<RevisionInfo>, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {REVISION_COLUMNS} FROM revisions r JOIN sources s ON s.id = r.source_id
         WHERE s.name = ?1 ORDER BY r.id DESC"
    ))?;
    let rows = stmt.query_map([source], revision_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// (key, apiVersion, body) of every object of one revision, in key order.
pub(super) fn revision_objects(
    conn: &Connection,
    revision: i64,
) -> Result<Vec<(ObjectKey, String, Value)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT grp, kind, namespace, name, api_version, body FROM revision_objects
         WHERE revision_id = ?1 ORDER BY grp, kind, namespace, name",
    )?;
    let rows = stmt.query_map([revision], |row| {
        let body: String = row.get(5)?;
        let body: Value = serde_json::from_str(&body).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(5, rusqlite::types::Type::Text, Box::new(e))
        })?;
        Ok((key_from_db(row, 0)?, row.get(4)?, body))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn revision_origins(
    conn: &Connection,
    revision: i64,
) -> Result<HashMap<ObjectKey, (String, usize)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT grp, kind, namespace, name, origin_file, origin_document FROM revision_objects
         WHERE revision_id = ?1",
    )?;
    let rows = stmt.query_map([revision], |row| {
        let document: i64 = row.get(5)?;
        Ok((
            key_from_db(row, 0)?,
            (row.get(4)?, usize::try_from(document).unwrap_or(0)),
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One object of a revision as stored.
pub(super) struct StoredBody {
    pub revision: i64,
    pub body: Value,
    pub sealed: Option<Vec<u8>>,
}

/// `key` as the newest revision of `source` stores it.
pub(super) fn newest_stored(
    conn: &Connection,
    source: &str,
    key: &ObjectKey,
) -> Result<Option<StoredBody>, StoreError> {
    let row = conn
        .query_row(
            "SELECT o.revision_id, o.body, o.sealed FROM revision_objects o
             WHERE o.revision_id = (SELECT MAX(r.id) FROM revisions r
                                    JOIN sources s ON s.id = r.source_id WHERE s.name = ?1)
               AND o.grp = ?2 AND o.kind = ?3 AND o.namespace = ?4 AND o.name = ?5",
            params![
                source,
                key.group,
                key.kind,
                ns_to_db(&key.namespace),
                key.name
            ],
            |r| Ok((r.get(0)?, r.get::<_, String>(1)?, r.get(2)?)),
        )
        .optional()?;
    row.map(|(revision, body, sealed)| {
        let body = serde_json::from_str(&body)
            .map_err(|e| StoreError::Schema(format!("stored {key} of revision {revision}: {e}")))?;
        Ok(StoredBody {
            revision,
            body,
            sealed,
        })
    })
    .transpose()
}

/// Objects of one kind (`group`/`kind`) in the newest revision of every source, as
/// stored, in key order. Reads that kind's rows through `revision_objects_by_key` only: what
/// `commit` needs of other sources (their CustomResourceDefinitions, for scopes) without
/// loading their other objects.
pub(super) fn newest_of_kind(
    conn: &Connection,
    group: &str,
    kind: &str,
) -> Result<Vec<Value>, StoreError> {
    let mut stmt = conn.prepare_cached(NEWEST_OF_KIND)?;
    let rows = stmt.query_map([group, kind], |row| {
        let body: String = row.get(0)?;
        serde_json::from_str(&body).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

const NEWEST_OF_KIND: &str = "SELECT o.body FROM revision_objects o
     JOIN revisions r ON r.id = o.revision_id
     WHERE o.grp = ?1 AND o.kind = ?2
       AND o.revision_id = (SELECT MAX(id) FROM revisions WHERE source_id = r.source_id)
     ORDER BY o.namespace, o.name";

pub(super) fn desired_state(conn: &Connection) -> Result<DesiredState, StoreError> {
    let mut objects = Vec::new();
    // Texts `each_desired_object` streams were checked to parse.
    let parse = |text: &str| serde_json::from_str::<Value>(text).expect("checked JSON parses");
    let revisions = each_desired_object(conn, |object| {
        objects.push(DesiredObject {
            object: parse(&object.body),
            previous: object.previous.as_deref().map(parse),
            source: object.source,
            revision: object.revision,
            key: object.key,
            api_version: object.api_version,
        })
    })?;
    Ok(DesiredState { revisions, objects })
}

/// The desired state object by object: `each` gets every object of the newest revision of
/// every source (with its previous revision's copy) as it is read, as checked JSON text, so
/// a reader that keeps objects in another form never holds the whole state as JSON trees at
/// once, nor builds a tree it does not need.
pub(super) fn each_desired_object(
    conn: &Connection,
    mut each: impl FnMut(DesiredText),
) -> Result<Vec<RevisionInfo>, StoreError> {
    // One read transaction: a commit landing halfway must not mix two revisions.
    let tx = conn.unchecked_transaction()?;
    let revisions: Vec<RevisionInfo> = sources(&tx)?.into_iter().filter_map(|s| s.latest).collect();
    for rev in &revisions {
        let previous_id: Option<i64> = tx.query_row(
            "SELECT MAX(r.id) FROM revisions r JOIN sources s ON s.id = r.source_id
             WHERE s.name = ?1 AND r.id < ?2",
            params![rev.source, rev.id],
            |r| r.get(0),
        )?;
        // The previous copy by primary key (a NULL revision matches nothing).
        let mut stmt = tx.prepare_cached(
            "SELECT o.grp, o.kind, o.namespace, o.name, o.api_version, o.body, p.body
             FROM revision_objects o
             LEFT JOIN revision_objects p ON p.revision_id = ?2 AND p.grp = o.grp
                 AND p.kind = o.kind AND p.namespace = o.namespace AND p.name = o.name
             WHERE o.revision_id = ?1 ORDER BY o.grp, o.kind, o.namespace, o.name",
        )?;
        let mut rows = stmt.query(params![rev.id, previous_id])?;
        while let Some(row) = rows.next()? {
            // Checked as JSON without building it (a tree is what readers avoid).
            let body = |i: usize| -> rusqlite::Result<Option<String>> {
                let text = row.get::<_, Option<String>>(i)?;
                if let Some(text) = &text {
                    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(
                            i,
                            rusqlite::types::Type::Text,
                            Box::new(e),
                        )
                    })?;
                }
                Ok(text)
            };
            each(DesiredText {
                source: rev.source.clone(),
                revision: rev.id,
                key: key_from_db(row, 0)?,
                api_version: row.get(4)?,
                body: body(5)?.unwrap_or_else(|| "null".into()),
                previous: body(6)?,
            });
        }
    }
    tx.finish()?;
    Ok(revisions)
}

/// Sources named `prefix...` (another tool's: `helm:`, `pulumi:`) this database tracks: those
/// with objects in their newest revision, or with an intent in `open_state`, the state that
/// tool's work in flight is recorded in (a first Helm install, an interrupted Pulumi update).
pub(super) fn tracked_with_prefix(
    conn: &Connection,
    prefix: &str,
    open_state: &str,
) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT s.name FROM sources s
         JOIN revisions r ON r.id = (SELECT MAX(id) FROM revisions WHERE source_id = s.id)
         WHERE s.name LIKE ?1 || '%' AND r.object_count > 0
         UNION
         SELECT source FROM intents WHERE source LIKE ?1 || '%' AND state = ?2
         ORDER BY 1",
    )?;
    let rows = stmt.query_map(rusqlite::params![prefix, open_state], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[cfg(test)]
mod plan_tests {
    //! The reads a commit makes of other sources go through indexes: no statement scans
    //! `revision_objects`, so their cost and memory do not grow with other sources' size.

    use super::*;

    fn plan(conn: &Connection, sql: &str, args: usize) -> Vec<String> {
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let values: Vec<rusqlite::types::Value> = (0..args)
            .map(|_| rusqlite::types::Value::Text(String::new()))
            .collect();
        stmt.query_map(rusqlite::params_from_iter(values), |r| {
            r.get::<_, String>(3)
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
    }

    #[test]
    fn ownership_and_crd_reads_search_indexes_and_scan_no_objects() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn, ":memory:", &Default::default()).unwrap();
        for (sql, args) in [(IN_OWN_HEAD, 5), (OWNER_OF_KEY, 5), (NEWEST_OF_KIND, 2)] {
            let steps = plan(&conn, sql, args);
            let objects: Vec<&String> = steps
                .iter()
                .filter(|s| s.contains(" o ") || s.contains("revision_objects"))
                .collect();
            assert!(!objects.is_empty(), "{sql}: {steps:?}");
            for step in &steps {
                assert!(
                    !step.starts_with("SCAN o") && !step.starts_with("SCAN revision_objects"),
                    "{sql}: {steps:?}"
                );
            }
        }
    }
}
