//! Drift episodes: when an object started drifting, what about it, and when it stopped.
//! Kept in the database so "drifting since" survives daemon restarts.

use super::{key_from_db, ns_to_db, ts_from_db, ts_to_db, Episode, Store, StoreError};
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

/// One change to an object's drift episode. A settle step writes all of its changes in one
/// transaction: at 100,000 objects a transaction per episode was most of the engine's time
/// per watch event.
#[derive(Debug, Clone, Copy)]
pub enum EpisodeWrite<'a> {
    /// `key` drifts (`class`, at `paths`) as of `at`: opens its episode, or updates the open
    /// one of the same class (its `first_seen` stays; `last_seen` only moves forward, should
    /// two watchers report out of order); an open one of another class ends at `at`.
    Drifting {
        key: &'a ObjectKey,
        source: &'a str,
        class: &'a str,
        at: Timestamp,
        paths: &'a [String],
    },
    /// `key` stopped drifting at `at`: closes its open episode, if any.
    Resolved { key: &'a ObjectKey, at: Timestamp },
}

fn write_episodes(conn: &Connection, writes: &[EpisodeWrite]) -> Result<(), StoreError> {
    if writes.is_empty() {
        return Ok(());
    }
    // IMMEDIATE: a read-then-write transaction must hold the write lock from the start, or
    // a concurrent writer makes its upgrade fail with SQLITE_BUSY without waiting.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    {
        let mut last_seen = tx.prepare_cached(
            "SELECT last_seen, class FROM episodes WHERE resolved_at IS NULL
             AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4",
        )?;
        let mut update = tx.prepare_cached(
            "UPDATE episodes SET source = ?5, class = ?6, paths = ?7, last_seen = ?8
             WHERE resolved_at IS NULL AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4",
        )?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO episodes (grp, kind, namespace, name, source, class, first_seen, last_seen, resolved_at, paths)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?8, ?8, NULL, ?7)",
        )?;
        let mut resolve = tx.prepare_cached(
            "UPDATE episodes SET resolved_at = ?5
             WHERE resolved_at IS NULL AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4",
        )?;
        for write in writes {
            match *write {
                EpisodeWrite::Drifting {
                    key,
                    source,
                    class,
                    at,
                    paths,
                } => {
                    let paths = serde_json::to_string(paths).expect("a list of strings serializes");
                    let namespace = ns_to_db(&key.namespace);
                    let open = last_seen
                        .query_row(params![key.group, key.kind, namespace, key.name], |row| {
                            Ok((ts_from_db(row, 0)?, row.get::<_, String>(1)?))
                        })
                        .optional()?;
                    // Another class is another episode: the open one ends as this begins.
                    let open = match open {
                        Some((_, open_class)) if open_class != class => {
                            resolve.execute(params![
                                key.group,
                                key.kind,
                                namespace,
                                key.name,
                                ts_to_db(at)
                            ])?;
                            None
                        }
                        other => other.map(|(seen, _)| seen),
                    };
                    // Both take the key, source, class, paths and a time (`last_seen`, and
                    // `first_seen` too for a new episode).
                    let (write, time) = match open {
                        Some(open) => (&mut update, open.max(at)),
                        None => (&mut insert, at),
                    };
                    write.execute(params![
                        key.group,
                        key.kind,
                        namespace,
                        key.name,
                        source,
                        class,
                        paths,
                        ts_to_db(time)
                    ])?;
                }
                EpisodeWrite::Resolved { key, at } => {
                    resolve.execute(params![
                        key.group,
                        key.kind,
                        ns_to_db(&key.namespace),
                        key.name,
                        ts_to_db(at)
                    ])?;
                }
            }
        }
    }
    tx.commit()?;
    Ok(())
}

impl Store {
    /// Episodes not yet resolved, oldest first.
    pub fn open_episodes(&self) -> Result<Vec<Episode>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM episodes WHERE resolved_at IS NULL ORDER BY id"
        ))?;
        let rows = stmt.query_map([], episode_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Opens an episode, or updates class/paths/last_seen of the open one for `key`.
    ///
    /// `first_seen` of an open episode never changes, so a restarted daemon keeps
    /// reporting "drifting since" the moment drift was first seen.
    pub fn record_drift(
        &self,
        key: &ObjectKey,
        source: &str,
        class: &str,
        at: Timestamp,
        paths: &[String],
    ) -> Result<Episode, StoreError> {
        self.write_episodes(&[EpisodeWrite::Drifting {
            key,
            source,
            class,
            at,
            paths,
        }])?;
        Ok(open_episode(&self.conn, key)?.expect("the open episode was just written"))
    }

    /// Closes the open episode of `key`, if any.
    pub fn resolve_drift(&self, key: &ObjectKey, at: Timestamp) -> Result<(), StoreError> {
        self.write_episodes(&[EpisodeWrite::Resolved { key, at }])
    }

    /// Moves `last_seen` to `at` for at most `limit` open episodes, those with an id above
    /// `after`, in id order; returns the last id moved (`None`: none was left). Called in
    /// steps, each a short write: one statement over 50,000 open episodes held the engine's
    /// thread for 90-210 ms, which showed as the latency figure's p99.
    pub fn touch_open_episodes(
        &self,
        at: Timestamp,
        after: i64,
        limit: usize,
    ) -> Result<Option<i64>, StoreError> {
        let mut touch = self.conn.prepare_cached(
            "UPDATE episodes SET last_seen = ?1 WHERE id IN (
                 SELECT id FROM episodes WHERE resolved_at IS NULL AND id > ?2
                 ORDER BY id LIMIT ?3)
             RETURNING id",
        )?;
        let ids = touch.query_map(params![ts_to_db(at), after, limit as i64], |r| {
            r.get::<_, i64>(0)
        })?;
        let mut last = None;
        for id in ids {
            last = last.max(Some(id?));
        }
        Ok(last)
    }

    /// Writes several episode changes in one transaction: all or none.
    pub fn write_episodes(&self, writes: &[EpisodeWrite]) -> Result<(), StoreError> {
        write_episodes(&self.conn, writes)
    }
}
