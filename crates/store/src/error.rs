//! Store failures, each worded for the user who has to act on it.

use crate::{LockHeld, WrongState};

/// Store failures; each names what the user can do about it. Each says SQLite's message
/// once: none exposes the SQLite error as its `source`, so a printed chain does not repeat it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database {path}: {message}")]
    Open { path: String, message: String },
    #[error("database: {}", sqlite_message(.0))]
    Sqlite(rusqlite::Error),
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
    /// A key file that cannot be read or holds no key. Never shows the file's content.
    #[error("key file {path}: {reason}")]
    KeyFile { path: String, reason: String },
    /// The stored Secret hashes were made with another hash key than the configured one.
    #[error(
        "database {database}: its Secret values are hashed with {stored}, but this driftd is \
         configured with {configured}; hashes under one key cannot be compared with values \
         hashed under another. Configure the same hash key again (secrets.hash_key_secret or \
         secrets.hash_key_file), or rehash the stored values with `driftd store rekey` (it \
         needs their encrypted copies, or, to move the installation key out of the database, \
         the cluster's Secrets)"
    )]
    HashKeyMismatch {
        database: String,
        stored: String,
        configured: String,
    },
    /// Stored Secret values that are needed and not available (never kept, or no key).
    #[error("{0}")]
    SecretValues(String),
    /// The database's hash key lives outside it (moved out), and none is configured.
    #[error(
        "database {database}: its Secret values are hashed with a key kept outside the \
         database (id {id}), and this driftd is configured with none: set \
         secrets.hash_key_secret (DRIFTD_SECRETS_HASH_KEY_SECRET) and driftd's namespace as \
         `driftd serve` has them (with a kubeconfig that may read that Secret), or \
         secrets.hash_key_file"
    )]
    NoHashKey { database: String, id: String },
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e)
    }
}

/// SQLite's own words for an error, without rusqlite's `Error code N:` prefix.
fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(message)) => message.clone(),
        rusqlite::Error::SqliteFailure(code, None) => {
            rusqlite::ffi::code_to_str(code.extended_code).to_string()
        }
        other => other.to_string(),
    }
}

/// An error opening `path`: SQLite's message, without the path rusqlite adds to it.
pub(crate) fn open_error(path: &str, e: rusqlite::Error) -> StoreError {
    let message = sqlite_message(&e);
    let message = message
        .strip_suffix(path)
        .and_then(|m| m.strip_suffix(": "))
        .map_or(message.clone(), str::to_string);
    StoreError::Open {
        path: path.to_string(),
        message,
    }
}
