//! The desired-state store: SQLite (WAL), schema versioned by `PRAGMA user_version`.
//! Sources, immutable revisions, their objects, drift episodes, and the installation key.
//!
//! OWNER: store+manifest helper. Interface fixed; bodies are stubs until implemented.

use crate::k8s::ObjectKey;
use crate::manifest::ManifestObject;
use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

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

/// Handle on the SQLite database. Not `Sync`: keep one per task/thread.
pub struct Store {
    _conn: rusqlite::Connection,
}

impl Store {
    /// Opens (creating and migrating if needed) the database at `path`.
    pub fn open(_path: &Path) -> Result<Store, StoreError> {
        unimplemented!()
    }
    /// Atomically records a new revision, or nothing if content equals the newest one.
    pub fn commit(&mut self, _req: &CommitRequest) -> Result<CommitOutcome, StoreError> {
        unimplemented!()
    }
    pub fn sources(&self) -> Result<Vec<SourceSummary>, StoreError> {
        unimplemented!()
    }
    /// Revisions of one source, newest first.
    pub fn history(&self, _source: &str) -> Result<Vec<RevisionInfo>, StoreError> {
        unimplemented!()
    }
    pub fn desired_state(&self) -> Result<DesiredState, StoreError> {
        unimplemented!()
    }
    /// Changes whenever another connection commits (`PRAGMA data_version`): cheap to poll.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        unimplemented!()
    }
    /// Random key created with the database; keys the HMAC that stands in for Secret values.
    pub fn installation_key(&self) -> Result<Vec<u8>, StoreError> {
        unimplemented!()
    }
    /// Episodes not yet resolved.
    pub fn open_episodes(&self) -> Result<Vec<Episode>, StoreError> {
        unimplemented!()
    }
    /// Opens an episode, or updates class/paths/last_seen of the open one for `key`.
    pub fn record_drift(
        &self,
        _key: &ObjectKey,
        _source: &str,
        _class: &str,
        _at: Timestamp,
        _paths: &[String],
    ) -> Result<Episode, StoreError> {
        unimplemented!()
    }
    /// Closes the open episode of `key`, if any.
    pub fn resolve_drift(&self, _key: &ObjectKey, _at: Timestamp) -> Result<(), StoreError> {
        unimplemented!()
    }
}
