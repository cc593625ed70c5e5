//! Drift episodes: when an object started drifting, what about it, and when it stopped.
//! Kept in the database so "drifting since" survives daemon restarts.

use super::{key_from_db, ns_to_db, ts_from_db, ts_to_db, Episode, StoreError};
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

const COLUMNS: &str =
    "grp, kind, namespace, name, source, class, first_seen, last_seen, resolved_at, paths";

fn episode_from_row(row: &rusqlite::Row) -> rusqlite::Result<Episode> {
    let paths: String = row.get(9)?;
    let paths: Vec<String> = serde_json::from_str(&paths).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(9, rusqlite::types::Type::Text, Box::new(e))
    })?;
    let resolved_at = match row.get::<_, Option<String>>(8)? {
        None => None,
        Some(_) => Some(ts_from_db(row, 8)?),
    };
    Ok(Episode {
        key: key_from_db(row, 0)?,
        source: row.get(4)?,
        class: row.get(5)?,
        first_seen: ts_from_db(row, 6)?,
        last_seen: ts_from_db(row, 7)?,
        resolved_at,
        paths,
    })
}

pub(super) fn open_episodes(conn: &Connection) -> Result<Vec<Episode>, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM episodes WHERE resolved_at IS NULL ORDER BY id"
    ))?;
    let rows = stmt.query_map([], episode_from_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn open_episode(conn: &Connection, key: &ObjectKey) -> rusqlite::Result<Option<Episode>> {
    conn.query_row(
        &format!(
            "SELECT {COLUMNS} FROM episodes WHERE resolved_at IS NULL
             AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4"
        ),
        params![key.group, key.kind, ns_to_db(&key.namespace), key.name],
        episode_from_row,
    )
    .optional()
}

pub(super) fn record_drift(
    conn: &Connection,
    key: &ObjectKey,
    source: &str,
    class: &str,
    at: Timestamp,
    paths: &[String],
) -> Result<Episode, StoreError> {
    let paths_json = serde_json::to_string(paths).expect("a list of strings serializes");
    // IMMEDIATE: a read-then-write transaction must hold the write lock from the start, or
    // a concurrent writer makes its upgrade fail with SQLITE_BUSY without waiting.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    match open_episode(&tx, key)? {
        Some(open) => {
            // first_seen is deliberately left alone: an open episode keeps its start.
            // last_seen only moves forward, should two watchers report out of order.
            let last_seen = open.last_seen.max(at);
            tx.execute(
                "UPDATE episodes SET source = ?5, class = ?6, paths = ?7, last_seen = ?8
                 WHERE resolved_at IS NULL AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4",
                params![
                    key.group,
                    key.kind,
                    ns_to_db(&key.namespace),
                    key.name,
                    source,
                    class,
                    paths_json,
                    ts_to_db(last_seen)
                ],
            )?;
        }
        None => {
            tx.execute(
                "INSERT INTO episodes (grp, kind, namespace, name, source, class, first_seen, last_seen, resolved_at, paths)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, NULL, ?8)",
                params![
                    key.group,
                    key.kind,
                    ns_to_db(&key.namespace),
                    key.name,
                    source,
                    class,
                    ts_to_db(at),
                    paths_json
                ],
            )?;
        }
    }
    let episode = open_episode(&tx, key)?.expect("the open episode was just written");
    tx.commit()?;
    Ok(episode)
}

pub(super) fn resolve_drift(
    conn: &Connection,
    key: &ObjectKey,
    at: Timestamp,
) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE episodes SET resolved_at = ?5
         WHERE resolved_at IS NULL AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4",
        params![
            key.group,
            key.kind,
            ns_to_db(&key.namespace),
            key.name,
            ts_to_db(at)
        ],
    )?;
    Ok(())
}
