//! What every connection to the database sets, and the few SQLite operations the store runs
//! outside any one table's module: checkpoints and retries while another process holds the
//! write lock.

use super::{StoreError, BUSY_TIMEOUT};
use rusqlite::config::DbConfig;
use rusqlite::Connection;

/// What every connection to a database sets for itself (SQLite keeps these per connection),
/// once the file's journal mode is settled; `file` is false in memory.
pub(crate) fn connection_settings(conn: &Connection, file: bool) -> rusqlite::Result<()> {
    if file {
        conn.pragma_update(None, "synchronous", "NORMAL")?;
    }
    conn.pragma_update(None, "foreign_keys", true)?;
    // Plans that never depend on bound values: otherwise SQLite (built with STAT4)
    // re-prepares a cached statement whenever some parameters change, which was most of
    // a commit's time (`perf`: `sqlite3Reprepare` under the per-object ownership check).
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // What is deleted or rewritten (a value replaced by its hash, a rotated ciphertext)
    // is overwritten with zeros, not left in free pages of the file.
    conn.pragma_update(None, "secure_delete", true)?;
    Ok(())
}

/// Copies the WAL into the database file and empties it.
pub(crate) fn checkpoint(conn: &Connection) -> Result<(), StoreError> {
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}

/// Runs `op` again while SQLite reports the database busy or locked, up to [`BUSY_TIMEOUT`].
pub(crate) fn retry_busy<T>(mut op: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
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
