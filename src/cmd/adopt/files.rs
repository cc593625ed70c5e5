//! The manifest files `driftd adopt` edits: finding the file an object was committed from
//! among `-f`, showing an edit as a unified diff, and writing it atomically.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// Every manifest file under `paths` (folders walked recursively for *.yaml, *.yml, *.json,
/// as `commit` walks them; a file named explicitly is taken whatever its extension).
pub fn manifest_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = BTreeSet::new();
    for p in paths {
        if p.as_os_str() == "-" {
            anyhow::bail!("-f -: adopt edits files, it cannot read standard input");
        }
        walk(p, true, &mut out).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
    }
    Ok(out.into_iter().collect())
}

fn walk(path: &Path, named: bool, out: &mut BTreeSet<PathBuf>) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            walk(&entry?.path(), false, out)?;
        }
    } else if named
        || path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
    {
        out.insert(path.to_path_buf());
    }
    Ok(())
}

/// The normal components of a path (`./a/../b` -> `b`), to compare paths given from
/// different working directories.
fn components(path: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            Component::Normal(s) => out.push(s.to_string_lossy().into_owned()),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// The file of `files` that `origin` (the path `commit` was given) names: the same file, or
/// failing that the only one whose path ends with the other's (the commit ran from another
/// directory). `None` when no file, or more than one, fits.
pub fn find_origin<'a>(origin: &str, files: &'a [PathBuf]) -> Option<&'a PathBuf> {
    let origin_path = Path::new(origin);
    if let Ok(canonical) = std::fs::canonicalize(origin_path) {
        if let Some(f) = files
            .iter()
            .find(|f| std::fs::canonicalize(f).is_ok_and(|c| c == canonical))
        {
            return Some(f);
        }
    }
    let want = components(origin_path);
    let fits: Vec<&PathBuf> = files
        .iter()
        .filter(|f| {
            let have = components(f);
            !want.is_empty() && !have.is_empty() && (have.ends_with(&want) || want.ends_with(&have))
        })
        .collect();
    match fits.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

/// A unified diff of one file (`--- a/path`, `+++ b/path`, hunks with `context` lines).
pub fn unified_diff(path: &Path, before: &str, after: &str, context: usize) -> String {
    // Relative to the working directory where it can be, as `git diff` names files.
    let relative = std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf());
    let name = relative.display().to_string();
    let name = name.trim_start_matches("./").trim_start_matches('/');
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(context)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// Replaces `path`'s content with `text` atomically: a temporary file beside it (same
/// permissions), synced, renamed over it; a reader sees the old file or the new, never half.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.driftd-adopt.{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let permissions = std::fs::metadata(path)?.permissions();
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::set_permissions(&tmp, permissions)?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        anyhow::bail!("cannot write {}: {e}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_is_found_from_another_working_directory() {
        let files = vec![
            PathBuf::from("/repo/deploy/web.yaml"),
            PathBuf::from("/repo/deploy/db.yaml"),
        ];
        assert_eq!(find_origin("deploy/web.yaml", &files), Some(&files[0]));
        assert_eq!(
            find_origin("./deploy/../deploy/db.yaml", &files),
            Some(&files[1])
        );
        assert_eq!(find_origin("other/web.yaml", &files), None);
        // Two files fit: neither is guessed.
        let twins = vec![PathBuf::from("/a/web.yaml"), PathBuf::from("/b/web.yaml")];
        assert_eq!(find_origin("web.yaml", &twins), None);
    }

    #[test]
    fn the_diff_has_git_style_headers_and_hunks() {
        let diff = unified_diff(Path::new("./k/web.yaml"), "a: 1\nb: 2\n", "a: 1\nb: 3\n", 3);
        // The shape `diff -u` and `git diff` print.
        assert_eq!(
            diff,
            "--- a/k/web.yaml\n+++ b/k/web.yaml\n@@ -1,2 +1,2 @@\n a: 1\n-b: 2\n+b: 3\n"
        );
    }
}
