//! The database's files on disk: created private (0600), and reported when found readable
//! by others. SQLite gives the `-wal` and `-shm` files the main file's permissions, so a
//! database created 0600 keeps all three private.

use std::fmt;
use std::path::{Path, PathBuf};

/// A database file that others than its owner may read or write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InsecureFile {
    pub path: PathBuf,
    /// Permission bits (`0o644`).
    pub mode: u32,
}

impl fmt::Display for InsecureFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (mode {:04o})", self.path.display(), self.mode)
    }
}

/// One warning for the database files others can access, saying what they hold and the
/// command that fixes it; `None` when there are none.
pub fn insecure_warning(files: &[InsecureFile]) -> Option<String> {
    let join = |parts: Vec<String>, by: &str| parts.join(by);
    let (noun, verb, holds) = match files {
        [] => return None,
        [_] => ("file", "is", "it holds"),
        _ => ("files", "are", "they hold"),
    };
    Some(format!(
        "database {noun} {} {verb} accessible to group or others: {holds} the committed \
         desired state and keyed hashes of Secret values; restrict with `chmod 600 {}`",
        join(files.iter().map(InsecureFile::to_string).collect(), ", "),
        join(
            files.iter().map(|f| f.path.display().to_string()).collect(),
            " "
        )
    ))
}

/// The database file and the WAL and shared-memory files SQLite keeps beside it.
fn database_files(path: &Path) -> [PathBuf; 3] {
    let with = |suffix: &str| {
        let mut name = path.as_os_str().to_os_string();
        name.push(suffix);
        PathBuf::from(name)
    };
    [path.to_path_buf(), with("-wal"), with("-shm")]
}

/// Those of the database's files that exist and that group or others may access.
pub fn insecure_files(path: &Path) -> Vec<InsecureFile> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        database_files(path)
            .into_iter()
            .filter_map(|path| {
                let mode = std::fs::metadata(&path).ok()?.permissions().mode() & 0o777;
                (mode & 0o077 != 0).then_some(InsecureFile { path, mode })
            })
            .collect()
    }
    #[cfg(not(unix))]
    {
        let _ = database_files(path);
        Vec::new()
    }
}

/// Creates the database file with mode 0600 if it does not exist, before SQLite opens it
/// (SQLite would create it 0644 less the umask). A failure is left to SQLite to report.
pub(crate) fn create_private(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let _ = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
    }
    #[cfg(not(unix))]
    let _ = path;
}
