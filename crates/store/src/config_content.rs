//! Content of the cluster's Secrets and ConfigMaps as driftd saw it: a hash (keyed for
//! Secrets: never a value) and when driftd first saw that content, so pods started before
//! a change can be told from pods started after it, across restarts.

use super::{ts_from_db, ts_to_db, StoreError};
use jiff::Timestamp;
use rusqlite::{params, Connection, Transaction, TransactionBehavior};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Batches of changes a [`ContentWriter`] queues at most; past it, `record` waits for the
/// writer, so a stalled disk holds the engine back instead of growing memory.
const QUEUED_BATCHES: usize = 64;

/// How long a [`ContentWriter`] gathers batches into one transaction. A transaction per
/// batch of watch events (about 75 records at 25,000 events a second) rewrote the same
/// 16 KiB pages into the WAL over and over: the writer's thread used a tenth of a core at
/// 100,000 objects. Records are read back only at the next start.
const COALESCE: Duration = Duration::from_millis(250);

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

/// Writes content records on a connection and thread of their own, in the order given
/// (batches that come within [`COALESCE`] of each other in one transaction): at
/// 100,000 objects these writes were 7% of the engine's thread, the one that limits how many
/// watch events `driftd serve` takes in. Only the next start reads them back,
/// and dropping the writer waits for everything queued to be written.
pub struct ContentWriter {
    queue: Option<SyncSender<Vec<ContentChange>>>,
    failures: Receiver<StoreError>,
    thread: Option<JoinHandle<()>>,
}

impl ContentWriter {
    pub(super) fn start(conn: Connection) -> std::io::Result<ContentWriter> {
        let (queue, batches) = sync_channel::<Vec<ContentChange>>(QUEUED_BATCHES);
        let (failed, failures) = channel();
        let thread = std::thread::Builder::new()
            .name("driftd-contents".into())
            .spawn(move || {
                while let Ok(mut changes) = batches.recv() {
                    // What comes within the window joins the same transaction.
                    let until = Instant::now() + COALESCE;
                    while let Some(left) = until.checked_duration_since(Instant::now()) {
                        match batches.recv_timeout(left) {
                            Ok(more) => changes.extend(more),
                            Err(_) => break,
                        }
                    }
                    if let Err(err) = record(&conn, &changes) {
                        // The receiver is gone only with the writer, which waits for this.
                        let _ = failed.send(err);
                    }
                }
            })?;
        Ok(ContentWriter {
            queue: Some(queue),
            failures,
            thread: Some(thread),
        })
    }

    /// Queues `changes` to be written in one transaction after those queued before.
    pub fn record(&self, changes: Vec<ContentChange>) {
        if changes.is_empty() {
            return;
        }
        if let Some(queue) = &self.queue {
            // Fails only if the writer's thread panicked; `failures` cannot say more then.
            let _ = queue.send(changes);
        }
    }

    /// The writes that failed since the last call, oldest first.
    pub fn failures(&self) -> Vec<StoreError> {
        self.failures.try_iter().collect()
    }
}

impl Drop for ContentWriter {
    fn drop(&mut self) {
        drop(self.queue.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
