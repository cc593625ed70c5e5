//! Several `driftd commit` processes on one database at once, as CI jobs of different teams
//! do: none may fail with "database is locked", and two sources racing for one object must
//! end with exactly one owner.

use driftd_store::Store;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_driftd");

fn spawn_commit(db: &Path, source: &str, manifest: &str) -> Child {
    let mut child = Command::new(BIN)
        .args(["commit", "--source", source, "-f", "-"])
        .env("DRIFTD_DB", db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("driftd starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(manifest.as_bytes())
        .unwrap();
    child
}

fn configmap(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n")
}

#[test]
fn parallel_commits_to_a_fresh_database_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    let children: Vec<Child> = (0..6)
        .map(|i| spawn_commit(&db, &format!("team{i}"), &configmap(&format!("cm{i}"))))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = Store::open(&db).unwrap();
    assert_eq!(store.sources().unwrap().len(), 6);
    assert_eq!(store.desired_state().unwrap().objects.len(), 6);
}

#[test]
fn two_sources_racing_for_one_object_end_with_one_owner() {
    for round in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("d.db");
        // Create the database first so the race is about the object, not the schema.
        drop(Store::open(&db).unwrap());
        let contested = configmap("contested");
        let a = spawn_commit(&db, "a", &contested);
        let b = spawn_commit(&db, "b", &contested);
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let codes = [a.status.code(), b.status.code()];
        assert!(
            codes.contains(&Some(0)) && codes.contains(&Some(2)),
            "round {round}: exactly one commit wins, got {codes:?}\n{}\n{}",
            String::from_utf8_lossy(&a.stderr),
            String::from_utf8_lossy(&b.stderr)
        );
        let loser = if a.status.success() { &b } else { &a };
        assert!(String::from_utf8_lossy(&loser.stderr).contains("already owned by source"));
        let state = Store::open(&db).unwrap().desired_state().unwrap();
        assert_eq!(state.objects.len(), 1, "round {round}");
    }
}
