//! Content of the cluster's Secrets and ConfigMaps as driftd saw it: a hash (keyed for
//! Secrets: never a value) and when driftd first saw that content, so pods started before
//! a change can be told from pods started after it, across restarts.

use super::{ts_from_db, ts_to_db, StoreError};
use jiff::Timestamp;
use rusqlite::{params, Connection, Transaction, TransactionBehavior};

/// One Secret's or ConfigMap's current content, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigContent {
    pub namespace: String,
    /// `Secret` or `ConfigMap`.
    pub kind: String,
    pub name: String,
    /// Hash of `data` and `binaryData`: an HMAC under the database's hash key, prefixed with a
    /// tag naming that key (`TAG:HEX`).
    pub hash: String,
    /// When driftd first saw this content.
    pub first_seen: Timestamp,
    /// The contents the config had before, newest first, each hash (tagged as `hash`) with
    /// when it was first seen: a pod that started while the config last held its current
    /// content read that content.
    pub earlier: Vec<(String, Timestamp)>,
}

/// A change to the recorded contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContentChange {
    /// The config has this content now (new, or changed).
    Seen(ConfigContent),
    /// The config is gone from the cluster.
    Gone {
        namespace: String,
        kind: String,
        name: String,
    },
}

pub(super) fn config_contents(conn: &Connection) -> Result<Vec<ConfigContent>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT namespace, kind, name, hash, first_seen, earlier FROM config_contents
         ORDER BY namespace, kind, name",
    )?;
    let rows = stmt.query_map([], |row| {
        let earlier: String = row.get(5)?;
        Ok(ConfigContent {
            namespace: row.get(0)?,
            kind: row.get(1)?,
            name: row.get(2)?,
            hash: row.get(3)?,
            first_seen: ts_from_db(row, 4)?,
            // Unreadable history (never written so) is no history: pods look stale, the safe side.
            earlier: serde_json::from_str(&earlier).unwrap_or_default(),
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Writes `changes` in one transaction (a list of thousands of Secrets is one write).
pub(super) fn record(conn: &Connection, changes: &[ContentChange]) -> Result<(), StoreError> {
    if changes.is_empty() {
        return Ok(());
    }
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    {
        let mut upsert = tx.prepare_cached(
            "INSERT INTO config_contents (namespace, kind, name, hash, first_seen, earlier)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (namespace, kind, name) DO UPDATE
             SET hash = excluded.hash, first_seen = excluded.first_seen,
                 earlier = excluded.earlier",
        )?;
        let mut delete = tx.prepare_cached(
            "DELETE FROM config_contents WHERE namespace = ?1 AND kind = ?2 AND name = ?3",
        )?;
        for change in changes {
            match change {
                ContentChange::Seen(c) => {
                    upsert.execute(params![
                        c.namespace,
                        c.kind,
                        c.name,
                        c.hash,
                        ts_to_db(c.first_seen),
                        serde_json::to_string(&c.earlier).expect("hashes and times serialize")
                    ])?;
                }
                ContentChange::Gone {
                    namespace,
                    kind,
                    name,
                } => {
                    delete.execute(params![namespace, kind, name])?;
                }
            }
        }
    }
    tx.commit()?;
    Ok(())
}
