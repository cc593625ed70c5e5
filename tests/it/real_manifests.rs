//! Every object of the real-manifest corpora (`shared/real-manifests`, 439 objects from six
//! public repositories, and `shared/real-manifests-2`, 719 from eight more; all valid for a
//! real API server) is accepted by the manifest reader file by file, or skipped with its
//! reason stated, and `driftd commit` of each file alone succeeds: custom resources whose
//! CRD is in another file (or not in the corpus at all) included, as a team commits them
//! when someone else installed the operator.

use crate::commit_cli::{driftd, stderr};
use crate::scaffold::shared_dir;
use driftd_core::manifest::{self, LoadOptions};
use std::path::{Path, PathBuf};

/// The corpora, with their object counts as their SOURCES.md give them (List items one by
/// one).
const CORPORA: [(&str, usize); 2] = [("real-manifests", 439), ("real-manifests-2", 719)];

pub(crate) fn corpus_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            corpus_files(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(path);
        }
    }
}

/// Every file of the corpus `name`, sorted.
pub(crate) fn corpus(name: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    corpus_files(&shared_dir().join(name), &mut files);
    files.sort();
    files
}

#[test]
#[cfg_attr(
    not(shared_material),
    ignore = "needs ../shared/ (the real-manifest corpora), which is not beside this clone"
)]
fn every_real_object_is_accepted_or_skipped_with_a_reason() {
    for (name, objects) in CORPORA {
        let files = corpus(name);
        let (mut accepted, mut skipped, mut warnings) = (0, Vec::new(), Vec::new());
        let (mut refused, mut unresolved) = (Vec::new(), 0);
        for file in &files {
            match manifest::load(std::slice::from_ref(file), &LoadOptions::default()) {
                Ok(loaded) => {
                    accepted += loaded.objects.len();
                    unresolved += loaded.unresolved_kinds().values().sum::<usize>();
                    skipped.extend(loaded.skipped.iter().map(|s| s.to_string()));
                    warnings.extend(loaded.warnings.iter().map(|w| w.to_string()));
                }
                Err(e) => refused.push(e.to_string()),
            }
        }
        assert!(
            refused.is_empty(),
            "{name}: refused:\n{}",
            refused.join("\n")
        );
        println!(
            "{name}: {} files: {accepted} objects accepted ({unresolved} custom resources whose CRD is not in their file), {} skipped, {} warnings",
            files.len(),
            skipped.len(),
            warnings.len()
        );
        for s in skipped.iter().chain(&warnings) {
            println!("  {s}");
        }
        assert_eq!(accepted + skipped.len(), objects, "{name}");
        assert!(
            unresolved > 0,
            "{name} has custom resources without their CRD"
        );
        assert!(
            skipped
                .iter()
                .all(|s| s.contains("with generateName")
                    && s.contains("no live object can be matched")),
            "{skipped:?}"
        );
    }
}

#[test]
#[cfg_attr(
    not(shared_material),
    ignore = "needs ../shared/ (the real-manifest corpora), which is not beside this clone"
)]
fn driftd_commit_of_each_real_file_alone_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = CORPORA.iter().flat_map(|(name, _)| corpus(name)).collect();
    // Each commit mostly waits for SQLite's syncs: four at a time.
    let indexed: Vec<(usize, &PathBuf)> = files.iter().enumerate().collect();
    std::thread::scope(|scope| {
        for chunk in indexed.chunks(indexed.len().div_ceil(4)) {
            let dir = dir.path();
            scope.spawn(move || {
                for (i, file) in chunk {
                    commit_one(dir, *i, file);
                }
            });
        }
    });
}

/// Commits `file` alone into a new database; it must succeed.
fn commit_one(dir: &Path, i: usize, file: &Path) {
    let db = format!("case{i}.db");
    let out = driftd(
        dir,
        &[
            "commit",
            "--db",
            &db,
            "--source",
            "app",
            "-f",
            file.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success(), "{}: {}", file.display(), stderr(&out));
    let _ = std::fs::remove_file(dir.join(&db));
}
