//! Opening the database as the commands that only read it do.

use driftd_store::Store;
use std::path::Path;

/// Opens a database that must already exist: listing commands never create one, so a
/// mistyped `--db` is reported instead of silently showing an empty, new database. With the
/// keys DRIFTD_CONFIG and DRIFTD_SECRETS_* configure, like every command: whichever opens a
/// database first migrates it, and should keep what a configured key lets it keep.
pub fn open_existing(db: &Path) -> anyhow::Result<Store> {
    let keys = crate::cmd::store::KeyArgs::from_env().load()?;
    crate::cmd::store::open(existing(db)?, keys)
}

/// `db`, if it exists.
pub fn existing(db: &Path) -> anyhow::Result<&Path> {
    if !db.exists() {
        anyhow::bail!(
            "database {} does not exist (set --db or DRIFTD_DB; `driftd commit` creates it)",
            db.display()
        );
    }
    Ok(db)
}
