//! Lines as kube-apiserver's JSON audit backend writes them (one `audit.k8s.io/v1` `Event`
//! a line), appended, rotated as lumberjack does (rename, new file) and truncated.

use super::*;
use std::io::Write;

fn line(user: &str) -> String {
    format!(
        concat!(
            r#"{{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"id-{0}","#,
            r#""stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/configmaps/c?fieldManager=kubectl-edit","#,
            r#""verb":"update","user":{{"username":"{0}","groups":["system:authenticated"]}},"#,
            r#""sourceIPs":["10.0.0.7"],"userAgent":"kubectl/v1.32.0","#,
            r#""objectRef":{{"resource":"configmaps","namespace":"shop","name":"c","apiVersion":"v1"}},"#,
            r#""responseStatus":{{"metadata":{{}},"code":200}},"#,
            r#""requestReceivedTimestamp":"2026-12-07T10:00:01.250000Z","stageTimestamp":"2026-12-07T10:00:01.262000Z"}}"#,
            "\n"
        ),
        user
    )
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn users(records: Vec<AuditRecord>) -> Vec<String> {
    records.into_iter().map(|r| r.user.username).collect()
}

#[test]
fn new_lines_are_read_from_the_end_and_a_partial_line_waits_for_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    append(&path, &line("before-start"));
    let mut f = Follower::new(path.clone(), 1 << 20);
    f.open(true);
    assert!(f.read_new().is_empty());
    let alice = line("alice");
    let (head, tail) = alice.split_at(40);
    append(&path, head);
    assert!(f.read_new().is_empty());
    append(&path, tail);
    append(&path, &line("bob"));
    assert_eq!(users(f.read_new()), ["alice", "bob"]);
}

#[test]
fn a_rotated_log_is_read_to_its_end_then_the_new_file_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    append(&path, "");
    let mut f = Follower::new(path.clone(), 1 << 20);
    f.open(true);
    append(&path, &line("alice"));
    std::fs::rename(&path, dir.path().join("audit-2026-12-07T10-00-02.000.log")).unwrap();
    append(&path, &line("bob"));
    assert_eq!(users(f.read_new()), ["alice", "bob"]);
    append(&path, &line("carol"));
    assert_eq!(users(f.read_new()), ["carol"]);
}

#[test]
fn a_truncated_log_is_read_again_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    append(&path, "");
    let mut f = Follower::new(path.clone(), 1 << 20);
    f.open(true);
    append(&path, &line("alice"));
    append(&path, &line("bob"));
    assert_eq!(users(f.read_new()), ["alice", "bob"]);
    std::fs::write(&path, line("carol")).unwrap();
    assert_eq!(users(f.read_new()), ["carol"]);
}

#[test]
fn a_log_that_appears_later_is_read_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    let mut f = Follower::new(path.clone(), 1 << 20);
    f.open(true);
    assert!(f.read_new().is_empty());
    append(&path, &line("alice"));
    assert_eq!(users(f.read_new()), ["alice"]);
}

#[test]
fn an_overlong_or_broken_line_is_skipped_and_the_next_one_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    append(&path, "");
    let mut f = Follower::new(path.clone(), 2048);
    f.open(true);
    append(&path, &format!("{}\n", "x".repeat(100_000)));
    append(&path, "{\"not\": json\n");
    append(&path, &line("alice"));
    assert_eq!(users(f.read_new()), ["alice"]);
}
