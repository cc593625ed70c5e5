//! Every object of the real-manifest corpus (`shared/real-manifests`, 439 objects from six
//! public repositories, valid for a real API server) is accepted by the manifest reader, or
//! skipped with its reason stated, and `driftd commit` of each file succeeds.

use crate::commit_cli::{assert_ok, driftd, stderr};
use crate::scaffold::shared_dir;
use driftd_core::manifest::{self, LoadOptions};
use std::path::{Path, PathBuf};

/// Objects in the corpus, as its SOURCES.md counts them (List items one by one).
const CORPUS_OBJECTS: usize = 439;

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

/// The CRD files of the corpus (kube-prometheus ships its CRDs apart, in `setup/`): the
/// CRDs a cluster has before the custom resources are applied.
pub(crate) fn crd_files(files: &[PathBuf]) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains("\nkind: CustomResourceDefinition\n")
                && f.components().any(|c| c.as_os_str() == "setup")
        })
        .cloned()
        .collect()
}

#[test]
fn every_real_object_is_accepted_or_skipped_with_a_reason() {
    let root = shared_dir().join("real-manifests");
    let mut files = Vec::new();
    corpus_files(&root, &mut files);
    files.sort();
    let crds = crd_files(&files);
    let crd_scopes = manifest::load(&crds, &LoadOptions::default())
        .unwrap()
        .objects
        .iter()
        .filter_map(|o| manifest::crd_scope(&o.key.kind, &o.object))
        .collect();
    let options = LoadOptions {
        custom_scopes: crd_scopes,
        ..LoadOptions::default()
    };
    let (mut accepted, mut skipped, mut warnings) = (0, Vec::new(), Vec::new());
    let mut refused = Vec::new();
    for file in &files {
        match manifest::load(std::slice::from_ref(file), &options) {
            Ok(loaded) => {
                accepted += loaded.objects.len();
                skipped.extend(loaded.skipped.iter().map(|s| s.to_string()));
                warnings.extend(loaded.warnings.iter().map(|w| w.to_string()));
            }
            Err(e) => refused.push(e.to_string()),
        }
    }
    assert!(refused.is_empty(), "refused:\n{}", refused.join("\n"));
    println!(
        "{} files: {accepted} objects accepted, {} skipped, {} warnings",
        files.len(),
        skipped.len(),
        warnings.len()
    );
    for s in skipped.iter().chain(&warnings) {
        println!("  {s}");
    }
    assert_eq!(accepted + skipped.len(), CORPUS_OBJECTS);
    assert!(
        skipped
            .iter()
            .all(|s| s.contains("with generateName") && s.contains("no live object can be matched")),
        "{skipped:?}"
    );
}

#[test]
fn driftd_commit_of_each_real_file_succeeds() {
    let root = shared_dir().join("real-manifests");
    let mut files = Vec::new();
    corpus_files(&root, &mut files);
    files.sort();
    let crds = crd_files(&files);
    // A database that has the CRDs, as a cluster has them before custom resources.
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["commit", "--db", "crds.db", "--source", "crds"];
    for f in &crds {
        args.extend(["-f", f.to_str().unwrap()]);
    }
    assert_ok(&driftd(dir.path(), &args, None));
    let base = std::fs::read(dir.path().join("crds.db")).unwrap();
    let groups: Vec<String> = manifest::load(&crds, &LoadOptions::default())
        .unwrap()
        .objects
        .iter()
        .filter_map(|o| {
            o.object
                .pointer("/spec/group")?
                .as_str()
                .map(str::to_string)
        })
        .collect();
    // Each commit mostly waits for SQLite's syncs: four at a time.
    let indexed: Vec<(usize, &PathBuf)> = files.iter().enumerate().collect();
    std::thread::scope(|scope| {
        for chunk in indexed.chunks(indexed.len().div_ceil(4)) {
            let (dir, base, groups) = (dir.path(), &base, &groups);
            scope.spawn(move || {
                for (i, file) in chunk {
                    commit_one(dir, *i, file, base, groups);
                }
            });
        }
    });
}

/// Commits `file` alone into a database of its own (with the CRDs when it has custom
/// resources of theirs); it must succeed.
fn commit_one(dir: &Path, i: usize, file: &Path, base: &[u8], groups: &[String]) {
    let db = format!("case{i}.db");
    let text = std::fs::read_to_string(file).unwrap();
    if groups
        .iter()
        .any(|g| text.contains(&format!("apiVersion: {g}/")))
    {
        std::fs::write(dir.join(&db), base).unwrap();
    }
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
