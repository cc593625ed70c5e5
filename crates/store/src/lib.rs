//! The desired-state store: SQLite (WAL), schema versioned by `PRAGMA user_version`.
//! Sources, immutable revisions, their objects, intents (the write-ahead log of deploys and
//! the per-source lock), drift episodes, and the installation key.
//!
//! Several processes share one database file (`driftd commit` while `driftd serve` runs), so
//! every write is one `BEGIN IMMEDIATE` transaction and readers poll `data_version` to learn
//! that someone else committed.

mod episodes;
mod history;
mod intents;
mod revisions;
mod schema;

use driftd_core::manifest::ManifestObject;
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use rusqlite::Connection;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

pub use history::{HistoryEntry, IntentEvent};
pub use intents::{
    holder_pod, BeginRequest, IntentAction, IntentInfo, IntentObject, IntentState, LockHeld,
    OpenIntent, WrongState, MAX_TTL, MIN_TTL,
};
pub use revisions::{canonical_json, content_hash, validate_source_name};

/// Store failures; each names what the user can do about it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database {path}: {source}")]
    Open {
        path: String,
        source: rusqlite::Error,
    },
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("{0}")]
    Rejected(String),
    /// The file's schema cannot be used by this binary (written by a newer driftd).
    #[error("{0}")]
    Schema(String),
    #[error("no intent {0} in this database")]
    IntentNotFound(i64),
    /// `begin` on a source whose lock another intent holds.
    #[error("{0}")]
    Locked(Box<LockHeld>),
    /// A transition the intent's state does not allow (committing an aborted intent).
    #[error("{0}")]
    WrongState(Box<WrongState>),
}

/// Metadata of one committed revision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RevisionInfo {
    pub id: i64,
    pub source: String,
    pub author: String,
    pub message: String,
    pub committed_at: Timestamp,
    pub content_hash: String,
    pub object_count: usize,
}

/// A source and its newest revision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceSummary {
    pub name: String,
    pub latest: Option<RevisionInfo>,
}

/// What `commit` did.
#[derive(Debug, Clone, PartialEq)]
pub enum CommitOutcome {
    Created(RevisionInfo),
    /// Identical content to the newest revision: nothing written.
    Unchanged(RevisionInfo),
}

/// A commit to make: the whole object set of one source.
pub struct CommitRequest<'a> {
    pub source: &'a str,
    pub message: &'a str,
    pub author: &'a str,
    pub objects: &'a [ManifestObject],
    /// When it was committed; `None` is now. A revision imported from elsewhere (another
    /// replica, the cluster) keeps its original time.
    pub committed_at: Option<Timestamp>,
}

/// One object of the current desired state (newest revision of its source).
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredObject {
    pub source: String,
    pub revision: i64,
    pub key: ObjectKey,
    pub api_version: String,
    pub object: Value,
    /// The same object as the source's previous revision had it, if it was there.
    pub previous: Option<Value>,
}

/// The newest committed revision of every source, with their objects.
#[derive(Debug, Clone, Default)]
pub struct DesiredState {
    pub revisions: Vec<RevisionInfo>,
    pub objects: Vec<DesiredObject>,
}

/// A drift episode: one continuous stretch during which an object drifted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    pub key: ObjectKey,
    pub source: String,
    pub class: String,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    pub resolved_at: Option<Timestamp>,
    pub paths: Vec<String>,
}

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Handle on the SQLite database. Not `Sync`: keep one per task/thread.
pub struct Store {
    conn: Connection,
    clock: Box<dyn Fn() -> Timestamp + Send>,
}

impl Store {
    /// Opens (creating and migrating if needed) the database at `path`.
    ///
    /// Opening an up-to-date database writes nothing to it.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let display = path.display().to_string();
        let open_err = |source| StoreError::Open {
            path: display.clone(),
            source,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        Self::setup(conn, &display, true)
    }

    /// A private database in memory, for tests and one-shot tools.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory()?;
        Self::setup(conn, ":memory:", false)
    }

    fn setup(mut conn: Connection, display: &str, wal: bool) -> Result<Store, StoreError> {
        let open_err = |source| StoreError::Open {
            path: display.to_string(),
            source,
        };
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        if wal {
            // The first statement is where SQLite notices a file that is not a database.
            let mode: String =
                retry_busy(|| conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)))
                    .map_err(open_err)?;
            if !mode.eq_ignore_ascii_case("wal") {
                // WAL lets `driftd serve` keep reading while `driftd commit` writes. Switching
                // needs an exclusive lock, and SQLite answers BUSY at once (no busy handler)
                // while another process opens the same fresh file: retry within the timeout.
                retry_busy(|| {
                    conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                })
                .map_err(open_err)?;
            }
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(open_err)?;
        }
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(open_err)?;
        schema::migrate(&mut conn, display)?;
        Ok(Store {
            conn,
            clock: Box::new(Timestamp::now),
        })
    }

    /// Replaces the clock every timestamp the store writes, and every expiry it derives,
    /// comes from: tests and simulations move time without sleeping.
    pub fn set_clock(&mut self, clock: impl Fn() -> Timestamp + Send + 'static) {
        self.clock = Box::new(clock);
    }

    /// The store's current time.
    pub fn now(&self) -> Timestamp {
        (self.clock)()
    }

    /// Atomically records a new revision, or nothing if content equals the newest one.
    ///
    /// Rejected (and nothing written) when an object is owned by another source's newest
    /// revision: two sources fighting over one object would make drift meaningless.
    /// A new revision supersedes the source's failed and interrupted intents.
    pub fn commit(&mut self, req: &CommitRequest) -> Result<CommitOutcome, StoreError> {
        let now = self.now();
        revisions::commit(&mut self.conn, req, now)
    }

    /// Records a pending intent (the objects a deploy is about to apply) and takes the
    /// source's lock. Validated like [`Store::commit`]; refused with [`StoreError::Locked`]
    /// while another intent holds the lock, even an expired one. Nothing is written when
    /// refused.
    pub fn begin_intent(&mut self, req: &BeginRequest) -> Result<IntentInfo, StoreError> {
        let now = self.now();
        intents::begin(&mut self.conn, req, now)
    }

    /// Heartbeat: moves `expires_at` to now + TTL (`ttl` replaces the intent's TTL). Renewing
    /// an expired intent nobody released revives it (recorded in history).
    pub fn renew_intent(
        &mut self,
        id: i64,
        ttl: Option<Duration>,
        actor: &str,
    ) -> Result<IntentInfo, StoreError> {
        let now = self.now();
        intents::renew(&mut self.conn, id, ttl, actor, now)
    }

    /// Makes an open intent (pending, expired, failed or interrupted: a deploy that died may
    /// have applied everything) the source's newest committed revision, in one transaction. Content equal to the newest revision creates no revision
    /// ([`CommitOutcome::Unchanged`], which the intent then points at).
    pub fn commit_intent(
        &mut self,
        id: i64,
        actor: &str,
    ) -> Result<(IntentInfo, CommitOutcome), StoreError> {
        let now = self.now();
        intents::commit(&mut self.conn, id, actor, now)
    }

    /// Drops a pending intent: the deploy did not happen.
    pub fn abort_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::Abort, actor, reason)
    }

    /// The deploy ran and failed: what it wanted may be partly applied.
    pub fn fail_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::Fail, actor, reason)
    }

    /// The deploy was stopped by a signal: what it wanted may be partly applied.
    pub fn interrupt_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::Interrupt, actor, reason)
    }

    /// Explicit release by a named actor, of a pending, expired, failed or interrupted
    /// intent: frees the lock and stops the intent from explaining drift.
    pub fn release_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::Release, actor, reason)
    }

    /// Release decided by the daemon (holder pod gone for long enough): only for intents
    /// holding a lock, and recorded as `auto-release` so people can tell it apart.
    pub fn auto_release_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::AutoRelease, actor, reason)
    }

    fn finish_intent(
        &mut self,
        id: i64,
        action: IntentAction,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        let now = self.now();
        intents::finish(&mut self.conn, id, action, actor, reason, now)
    }

    /// Records in history that `actor` saw the intent expired; once per expiry, so a
    /// daemon can call it on every pass. `Ok(true)` when it recorded.
    pub fn record_intent_expiry(&mut self, id: i64, actor: &str) -> Result<bool, StoreError> {
        let now = self.now();
        intents::record_expiry(&mut self.conn, id, actor, now)
    }

    /// One intent, with its derived state.
    pub fn intent(&self, id: i64) -> Result<Option<IntentInfo>, StoreError> {
        intents::get(&self.conn, id, self.now())
    }

    /// Intents newest first, of one source or all; only open ones (pending, expired, failed,
    /// interrupted) unless `include_ended`.
    pub fn intents(
        &self,
        source: Option<&str>,
        include_ended: bool,
    ) -> Result<Vec<IntentInfo>, StoreError> {
        intents::list(&self.conn, source, include_ended, self.now())
    }

    /// Every open intent (pending, expired, failed, interrupted) with its objects, oldest
    /// first, read as one snapshot: what live objects may equal instead of the committed
    /// desired state, and the locks that may be stale.
    pub fn open_intents(&self) -> Result<Vec<OpenIntent>, StoreError> {
        intents::open_intents(&self.conn, self.now())
    }

    /// Revisions and intent transitions of one source, newest first.
    pub fn timeline(&self, source: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        history::timeline(&self.conn, source)
    }

    /// Every source with its newest revision, by name.
    pub fn sources(&self) -> Result<Vec<SourceSummary>, StoreError> {
        revisions::sources(&self.conn)
    }

    /// Revisions of one source, newest first (empty if the source is unknown).
    pub fn history(&self, source: &str) -> Result<Vec<RevisionInfo>, StoreError> {
        revisions::history(&self.conn, source)
    }

    /// The newest revision of every source with its objects, read as one consistent snapshot.
    pub fn desired_state(&self) -> Result<DesiredState, StoreError> {
        revisions::desired_state(&self.conn)
    }

    /// Changes whenever another connection commits (`PRAGMA data_version`): cheap to poll.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    /// Random key created with the database; keys the HMAC that stands in for Secret values.
    pub fn installation_key(&self) -> Result<Vec<u8>, StoreError> {
        Ok(self.conn.query_row(
            "SELECT value FROM meta WHERE key = 'installation_key'",
            [],
            |r| r.get(0),
        )?)
    }

    /// Episodes not yet resolved, oldest first.
    pub fn open_episodes(&self) -> Result<Vec<Episode>, StoreError> {
        episodes::open_episodes(&self.conn)
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
        episodes::record_drift(&self.conn, key, source, class, at, paths)
    }

    /// Closes the open episode of `key`, if any.
    pub fn resolve_drift(&self, key: &ObjectKey, at: Timestamp) -> Result<(), StoreError> {
        episodes::resolve_drift(&self.conn, key, at)
    }
}

/// Stored form of a namespace: `''` for cluster-scoped objects (see schema).
fn ns_to_db(ns: &Option<String>) -> &str {
    ns.as_deref().unwrap_or("")
}

fn ns_from_db(ns: String) -> Option<String> {
    (!ns.is_empty()).then_some(ns)
}

fn ts_to_db(ts: Timestamp) -> String {
    ts.to_string()
}

/// Reads a stored RFC 3339 timestamp from column `idx`.
fn ts_from_db(row: &rusqlite::Row, idx: usize) -> rusqlite::Result<Timestamp> {
    let text: String = row.get(idx)?;
    text.parse().map_err(|e: jiff::Error| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

#[cfg(test)]
mod intent_tests;
#[cfg(test)]
mod tests;

/// Runs `op` again while SQLite reports the database busy or locked, up to [`BUSY_TIMEOUT`].
fn retry_busy<T>(mut op: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match op() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}
