//! Intents: every transition, the illegal ones, the lock, derived expiry (with a clock the
//! test moves), and that a refused operation leaves the database file as it was.

use super::*;
use driftd_core::manifest::{self, LoadOptions};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

const T0: i64 = 1_700_000_000;

fn objects(text: &str) -> Vec<ManifestObject> {
    manifest::parse_text(text, "app.yaml", &LoadOptions::default()).unwrap()
}

fn cm(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: \"{value}\"\n---\n"
    )
}

/// A store on a file whose clock stands still until the test moves it.
struct Fixture {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    store: Store,
    seconds: Arc<AtomicI64>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        let mut store = Store::open(&path).unwrap();
        let seconds = Arc::new(AtomicI64::new(T0));
        let clock = seconds.clone();
        store.set_clock(move || Timestamp::from_second(clock.load(Ordering::SeqCst)).unwrap());
        Fixture {
            _dir: dir,
            path,
            store,
            seconds,
        }
    }

    fn advance(&self, seconds: i64) {
        self.seconds.fetch_add(seconds, Ordering::SeqCst);
    }

    fn at(&self, offset: i64) -> Timestamp {
        Timestamp::from_second(T0 + offset).unwrap()
    }

    fn begin(&mut self, source: &str, text: &str, ttl: u64) -> Result<IntentInfo, StoreError> {
        let objs = objects(text);
        self.store.begin_intent(&BeginRequest {
            source,
            holder: "pod:ci/runner-1",
            author: "alice",
            message: "deploy v2",
            ttl: Duration::from_secs(ttl),
            objects: &objs,
            skipped: 0,
        })
    }

    fn commit(&mut self, source: &str, text: &str) -> CommitOutcome {
        let objs = objects(text);
        self.store
            .commit(&CommitRequest {
                source,
                message: "direct",
                author: "bob",
                objects: &objs,
                committed_at: None,
                skipped: 0,
            })
            .unwrap()
    }

    /// sha256 of the database file and its WAL: "nothing written" made checkable.
    fn fingerprint(&self) -> (String, Option<String>) {
        let hash = |p: &std::path::Path| hex::encode(Sha256::digest(std::fs::read(p).unwrap()));
        let wal = std::path::PathBuf::from(format!("{}-wal", self.path.display()));
        (hash(&self.path), wal.exists().then(|| hash(&wal)))
    }

    fn actions(&self, source: &str) -> Vec<(i64, String, String)> {
        let mut events: Vec<(i64, String, String)> = self
            .store
            .timeline(source)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e {
                HistoryEntry::Intent(e) => Some((e.intent_id, e.action.to_string(), e.actor)),
                HistoryEntry::Revision(_) | HistoryEntry::Remediation(_) => None,
            })
            .collect();
        events.reverse();
        events
    }
}

fn created(outcome: CommitOutcome) -> RevisionInfo {
    match outcome {
        CommitOutcome::Created(r) => r,
        other => panic!("expected a new revision, got {other:?}"),
    }
}

#[test]
fn begin_records_a_pending_intent_with_its_objects_and_takes_the_lock() {
    let mut f = Fixture::new();
    let intent = f
        .begin("web", &(cm("a", "1") + &cm("b", "1")), 600)
        .unwrap();
    assert_eq!(intent.state, IntentState::Pending);
    assert_eq!(intent.source, "web");
    assert_eq!(intent.holder, "pod:ci/runner-1");
    assert_eq!(intent.holder_pod(), Some(("ci", "runner-1")));
    assert_eq!(intent.object_count, 2);
    assert_eq!(intent.created_at, f.at(0));
    assert_eq!(intent.expires_at, f.at(600));
    assert_eq!(intent.ttl_seconds, 600);
    assert_eq!(intent.revision_id, None);
    assert_eq!(f.store.intent(intent.id).unwrap().unwrap(), intent);

    let open = f.store.open_intents().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].intent, intent);
    let names: Vec<&str> = open[0]
        .objects
        .iter()
        .map(|o| o.key.name.as_str())
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(open[0].objects[0].api_version, "v1");
    assert_eq!(open[0].objects[0].object["data"]["k"], "1");

    // Nothing committed yet: the source has no revision and is not listed as a source.
    assert!(f.store.desired_state().unwrap().objects.is_empty());
    assert!(f.store.sources().unwrap().is_empty());
    assert_eq!(
        f.actions("web"),
        [(intent.id, "begin".into(), "alice".into())]
    );
}

#[test]
fn a_second_begin_is_refused_naming_the_lock_and_writes_nothing() {
    let mut f = Fixture::new();
    let first = f.begin("web", &cm("a", "1"), 600).unwrap();
    f.advance(125);
    let before = f.fingerprint();
    let err = f.begin("web", &cm("a", "2"), 600).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Locked(_)), "{err:?}");
    for expected in [
        format!("locked by intent {} (pending)", first.id),
        "held by pod:ci/runner-1".into(),
        "begun 2m 5s ago by alice".into(),
        "expires in 7m 55s".into(),
        format!("`driftd intent release {}`", first.id),
    ] {
        assert!(msg.contains(&expected), "{expected:?} in {msg}");
    }
    assert_eq!(f.fingerprint(), before, "a refused begin writes nothing");

    // Expired, it still holds the lock: that is what makes it a stale lock.
    f.advance(600);
    let msg = f.begin("web", &cm("a", "2"), 600).unwrap_err().to_string();
    assert!(msg.contains("(expired)"), "{msg}");
    assert!(msg.contains("expired 2m 5s ago"), "{msg}");
    assert_eq!(f.fingerprint(), before);

    // Other sources are not locked by it.
    f.begin("db", &cm("pg", "1"), 600).unwrap();
}

#[test]
fn rejected_begins_leave_the_database_unchanged() {
    let mut f = Fixture::new();
    created(f.commit("web", &cm("shared", "1")));
    let before = f.fingerprint();
    let owned = f.begin("db", &(cm("own", "1") + &cm("shared", "1")), 60);
    let msg = owned.unwrap_err().to_string();
    assert!(msg.contains("already owned by source \"web\""), "{msg}");
    assert!(msg.contains("app.yaml: document 1"), "{msg}");
    let mut objs = objects(&cm("dup", "1"));
    objs.push(objs[0].clone());
    let err = f
        .store
        .begin_intent(&BeginRequest {
            source: "other",
            holder: "h",
            author: "a",
            message: "",
            ttl: Duration::from_secs(60),
            objects: &objs,
            skipped: 0,
        })
        .unwrap_err();
    assert!(err.to_string().contains("is given twice"), "{err}");
    for (source, holder, ttl) in [
        ("bad name", "h", 60),
        ("other", "  ", 60),
        ("other", "h", 0),
        ("other", "h", 8 * 24 * 3600),
    ] {
        let objs = objects(&cm("zed", "1"));
        let err = f
            .store
            .begin_intent(&BeginRequest {
                source,
                holder,
                author: "a",
                message: "",
                ttl: Duration::from_secs(ttl),
                objects: &objs,
                skipped: 0,
            })
            .unwrap_err();
        assert!(matches!(err, StoreError::Rejected(_)), "{err:?}");
    }
    assert_eq!(f.fingerprint(), before, "rejected begins write nothing");
    assert!(f.store.intents(None, true).unwrap().is_empty());
}

#[test]
fn renew_moves_expiry_and_expiry_is_derived_from_the_clock() {
    let mut f = Fixture::new();
    let intent = f.begin("web", &cm("a", "1"), 60).unwrap();
    f.advance(59);
    assert_eq!(
        f.store.intent(intent.id).unwrap().unwrap().state,
        IntentState::Pending
    );
    f.advance(1);
    // Exactly at expires_at it has expired: nobody renewed within the TTL.
    let read = f.store.intent(intent.id).unwrap().unwrap();
    assert_eq!(read.state, IntentState::Expired);
    assert!(read.state.is_open() && read.state.holds_lock());
    assert_eq!(
        f.store.open_intents().unwrap()[0].intent.state,
        IntentState::Expired
    );
    assert_eq!(
        f.store.intents(Some("web"), false).unwrap()[0].state,
        IntentState::Expired
    );

    // The daemon records the expiry once, however often it looks.
    assert!(f.store.record_intent_expiry(intent.id, "driftd").unwrap());
    assert!(!f.store.record_intent_expiry(intent.id, "driftd").unwrap());

    // Its holder comes back before anyone released it: renewing revives it.
    let renewed = f.store.renew_intent(intent.id, None, "runner").unwrap();
    assert_eq!(renewed.state, IntentState::Pending);
    assert_eq!(renewed.expires_at, f.at(120));
    f.advance(30);
    let renewed = f
        .store
        .renew_intent(intent.id, Some(Duration::from_secs(300)), "runner")
        .unwrap();
    assert_eq!((renewed.ttl_seconds, renewed.expires_at), (300, f.at(390)));
    assert!(
        !f.store.record_intent_expiry(intent.id, "driftd").unwrap(),
        "not expired"
    );
    assert_eq!(
        f.actions("web"),
        [
            (intent.id, "begin".into(), "alice".into()),
            (intent.id, "expire-detected".into(), "driftd".into()),
            (intent.id, "revive".into(), "runner".into()),
        ],
        "plain renewals are heartbeats, not history"
    );
}

#[test]
fn commit_makes_a_new_revision_in_commit_order_and_unchanged_content_says_so() {
    let mut f = Fixture::new();
    let r1 = created(f.commit("web", &cm("a", "1")));
    let intent = f
        .begin("web", &(cm("a", "2") + &cm("b", "1")), 600)
        .unwrap();
    // A revision of another source committed while the deploy runs gets the next id.
    let r2 = created(f.commit("db", &cm("pg", "1")));
    f.advance(10);
    let (committed, outcome) = f.store.commit_intent(intent.id, "pod:ci/runner-1").unwrap();
    let r3 = created(outcome);
    assert!(r1.id < r2.id && r2.id < r3.id, "ids follow commit order");
    assert_eq!(
        (r3.author.as_str(), r3.message.as_str()),
        ("alice", "deploy v2")
    );
    assert_eq!(r3.committed_at, f.at(10));
    assert_eq!(r3.content_hash, intent.content_hash);
    assert_eq!(committed.state, IntentState::Committed);
    assert_eq!(committed.revision_id, Some(r3.id));
    assert_eq!(committed.ended_at, Some(f.at(10)));
    assert_eq!(committed.ended_by.as_deref(), Some("pod:ci/runner-1"));
    assert!(f.store.open_intents().unwrap().is_empty());
    let state = f.store.desired_state().unwrap();
    let a = state.objects.iter().find(|o| o.key.name == "a").unwrap();
    assert_eq!(
        (a.revision, &a.object["data"]["k"]),
        (r3.id, &Value::from("2"))
    );
    assert_eq!(a.previous.as_ref().unwrap()["data"]["k"], "1");

    // The lock is free again; the same content once more commits as "unchanged".
    let again = f
        .begin("web", &(cm("b", "1") + &cm("a", "2")), 600)
        .unwrap();
    let (committed, outcome) = f.store.commit_intent(again.id, "ci").unwrap();
    match outcome {
        CommitOutcome::Unchanged(r) => assert_eq!(r.id, r3.id),
        other => panic!("{other:?}"),
    }
    assert_eq!(committed.revision_id, Some(r3.id));
    assert!(committed.end_reason.unwrap().contains("unchanged"));
    assert_eq!(
        f.store.history("web").unwrap().len(),
        2,
        "no duplicate revision"
    );
}

#[test]
fn an_expired_intent_nobody_released_can_still_be_committed() {
    let mut f = Fixture::new();
    let intent = f.begin("web", &cm("a", "1"), 5).unwrap();
    f.advance(10);
    let (committed, outcome) = f.store.commit_intent(intent.id, "late").unwrap();
    assert_eq!(committed.state, IntentState::Committed);
    created(outcome);
}

#[test]
fn commit_is_refused_when_another_source_took_an_object_meanwhile() {
    let mut f = Fixture::new();
    let intent = f.begin("web", &cm("a", "1"), 600).unwrap();
    created(f.commit("db", &cm("a", "1")));
    let before = f.fingerprint();
    let err = f.store.commit_intent(intent.id, "ci").unwrap_err();
    assert!(
        err.to_string().contains("already owned by source \"db\""),
        "{err}"
    );
    assert_eq!(f.fingerprint(), before);
    assert_eq!(
        f.store.intent(intent.id).unwrap().unwrap().state,
        IntentState::Pending
    );
}

#[test]
fn illegal_transitions_are_refused_with_the_reason_and_change_nothing() {
    let mut f = Fixture::new();
    let intent = f.begin("web", &cm("a", "1"), 600).unwrap();
    let aborted = f
        .store
        .abort_intent(intent.id, "alice", "wrong branch")
        .unwrap();
    assert_eq!(aborted.state, IntentState::Aborted);
    assert!(!aborted.state.is_open());
    let before = f.fingerprint();
    let err = f.store.commit_intent(intent.id, "bob").unwrap_err();
    assert!(matches!(err, StoreError::WrongState(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "intent {} of source \"web\" is aborted (by alice at {}: wrong branch); only a \
             pending, expired, failed or interrupted intent can be committed",
            intent.id,
            f.at(0)
        )
    );
    for result in [
        f.store.abort_intent(intent.id, "bob", ""),
        f.store.fail_intent(intent.id, "bob", ""),
        f.store.interrupt_intent(intent.id, "bob", ""),
        f.store.release_intent(intent.id, "bob", ""),
        f.store.auto_release_intent(intent.id, "driftd", ""),
        f.store.renew_intent(intent.id, None, "bob"),
    ] {
        assert!(
            matches!(result, Err(StoreError::WrongState(_))),
            "{result:?}"
        );
    }
    let missing = f.store.commit_intent(999, "bob").unwrap_err();
    assert_eq!(missing.to_string(), "no intent 999 in this database");
    assert_eq!(f.fingerprint(), before, "refused transitions write nothing");
    assert_eq!(
        f.store.intent(intent.id).unwrap().unwrap().state,
        IntentState::Aborted
    );
}

#[test]
fn failed_and_interrupted_intents_stay_open_free_the_lock_and_are_superseded_by_a_commit() {
    let mut f = Fixture::new();
    created(f.commit("web", &cm("a", "1")));
    let failed = f.begin("web", &cm("a", "2"), 600).unwrap();
    let failed = f
        .store
        .fail_intent(failed.id, "runner", "exit code 3")
        .unwrap();
    assert_eq!(failed.state, IntentState::Failed);
    assert_eq!(failed.end_reason.as_deref(), Some("exit code 3"));
    let interrupted = f.begin("web", &cm("a", "3"), 600).unwrap();
    let interrupted = f
        .store
        .interrupt_intent(interrupted.id, "runner", "SIGTERM")
        .unwrap();
    assert_eq!(interrupted.state, IntentState::Interrupted);
    let open: Vec<(i64, IntentState)> = f
        .store
        .open_intents()
        .unwrap()
        .iter()
        .map(|o| (o.intent.id, o.intent.state))
        .collect();
    assert_eq!(
        open,
        [
            (failed.id, IntentState::Failed),
            (interrupted.id, IntentState::Interrupted)
        ],
        "open intents, oldest first"
    );
    // Neither holds the lock.
    let third = f.begin("web", &cm("a", "4"), 600).unwrap();
    // A direct commit that changes nothing writes nothing and supersedes nothing.
    assert!(matches!(
        f.commit("web", &cm("a", "1")),
        CommitOutcome::Unchanged(_)
    ));
    assert_eq!(f.store.open_intents().unwrap().len(), 3);
    let (_, outcome) = f.store.commit_intent(third.id, "runner").unwrap();
    let revision = created(outcome);
    assert!(f.store.open_intents().unwrap().is_empty());
    let superseded = f.store.intent(failed.id).unwrap().unwrap();
    assert_eq!(superseded.state, IntentState::Superseded);
    assert_eq!(
        superseded.end_reason,
        Some(format!("superseded by revision {}", revision.id))
    );
    assert_eq!(f.store.intents(Some("web"), false).unwrap(), []);
    assert_eq!(f.store.intents(Some("web"), true).unwrap().len(), 3);
}

#[test]
fn an_interrupted_deploy_can_be_kept_by_committing_its_intent() {
    let mut f = Fixture::new();
    created(f.commit("web", &cm("a", "1")));
    let failed = f.begin("web", &cm("a", "2"), 600).unwrap();
    f.store.fail_intent(failed.id, "runner", "exit 1").unwrap();
    let interrupted = f.begin("web", &cm("a", "3"), 600).unwrap();
    f.store
        .interrupt_intent(interrupted.id, "runner", "killed by SIGKILL")
        .unwrap();
    let (committed, outcome) = f.store.commit_intent(interrupted.id, "ops").unwrap();
    let revision = created(outcome);
    assert_eq!(committed.state, IntentState::Committed);
    assert_eq!(committed.revision_id, Some(revision.id));
    assert_eq!(
        f.store.intent(failed.id).unwrap().unwrap().state,
        IntentState::Superseded,
        "the older failed attempt is history now"
    );
    assert!(f.store.open_intents().unwrap().is_empty());
}

#[test]
fn a_direct_commit_supersedes_failed_intents_but_leaves_the_lock_alone() {
    let mut f = Fixture::new();
    let failed = f.begin("web", &cm("a", "2"), 600).unwrap();
    f.store
        .fail_intent(failed.id, "runner", "exit code 1")
        .unwrap();
    let pending = f.begin("web", &cm("a", "3"), 600).unwrap();
    created(f.commit("web", &cm("a", "9")));
    assert_eq!(
        f.store.intent(failed.id).unwrap().unwrap().state,
        IntentState::Superseded
    );
    assert_eq!(
        f.store.intent(pending.id).unwrap().unwrap().state,
        IntentState::Pending
    );
}

#[test]
fn release_frees_a_stale_lock_and_is_recorded_with_who() {
    let mut f = Fixture::new();
    let stale = f.begin("web", &cm("a", "1"), 60).unwrap();
    f.advance(3600);
    let released = f
        .store
        .release_intent(stale.id, "ops@laptop", "runner pod is gone")
        .unwrap();
    assert_eq!(released.state, IntentState::Released);
    assert_eq!(released.ended_by.as_deref(), Some("ops@laptop"));
    let next = f.begin("web", &cm("a", "1"), 60).unwrap();
    let auto = f
        .store
        .auto_release_intent(
            next.id,
            "driftd/replica-0",
            "holder pod ci/runner-1 is gone",
        )
        .unwrap();
    assert_eq!(auto.state, IntentState::Released);
    // Failed and interrupted intents can be released by hand, not automatically.
    let failed = f.begin("web", &cm("a", "1"), 60).unwrap();
    f.store.fail_intent(failed.id, "runner", "exit 1").unwrap();
    assert!(matches!(
        f.store.auto_release_intent(failed.id, "driftd", ""),
        Err(StoreError::WrongState(_))
    ));
    f.store.release_intent(failed.id, "ops", "").unwrap();
    let actions = f.actions("web");
    let who: Vec<(&str, &str)> = actions
        .iter()
        .map(|(_, a, w)| (a.as_str(), w.as_str()))
        .collect();
    assert_eq!(
        who,
        [
            ("begin", "alice"),
            ("release", "ops@laptop"),
            ("begin", "alice"),
            ("auto-release", "driftd/replica-0"),
            ("begin", "alice"),
            ("fail", "runner"),
            ("release", "ops"),
        ]
    );
}

#[test]
fn timeline_merges_revisions_and_transitions_newest_first() {
    let mut f = Fixture::new();
    let r1 = created(f.commit("web", &cm("a", "1")));
    f.advance(10);
    let intent = f.begin("web", &cm("a", "2"), 600).unwrap();
    f.advance(10);
    let (_, outcome) = f.store.commit_intent(intent.id, "runner").unwrap();
    let r2 = created(outcome);
    let lines: Vec<String> = f
        .store
        .timeline("web")
        .unwrap()
        .iter()
        .map(|e| match e {
            HistoryEntry::Revision(r) => format!("revision {}", r.id),
            HistoryEntry::Intent(e) => format!("{} intent {}: {}", e.action, e.intent_id, e.detail),
            HistoryEntry::Remediation(e) => format!("remediation of {}", e.key),
        })
        .collect();
    assert_eq!(
        lines,
        [
            format!("revision {}", r2.id),
            format!("commit intent {}: revision {}", intent.id, r2.id),
            format!(
                "begin intent {}: held by pod:ci/runner-1; 1 object; ttl 10m",
                intent.id
            ),
            format!("revision {}", r1.id),
        ]
    );
    let json = serde_json::to_value(f.store.timeline("web").unwrap()).unwrap();
    assert_eq!(json[0]["kind"], "revision");
    assert_eq!(json[0]["author"], "alice");
    assert_eq!(json[1]["kind"], "intent");
    assert_eq!(json[1]["action"], "commit");
    assert_eq!(json[1]["actor"], "runner");
    assert!(f.store.timeline("nope").unwrap().is_empty());
}

#[test]
fn a_commit_keeps_an_explicit_time() {
    let mut f = Fixture::new();
    let objs = objects(&cm("a", "1"));
    let then = Timestamp::from_second(1_600_000_000).unwrap();
    let r = created(
        f.store
            .commit(&CommitRequest {
                source: "web",
                message: "imported",
                author: "carol",
                objects: &objs,
                committed_at: Some(then),
                skipped: 0,
            })
            .unwrap(),
    );
    assert_eq!(r.committed_at, then);
    assert_eq!(f.store.history("web").unwrap()[0].committed_at, then);
}

#[test]
fn holders_name_a_pod_only_in_the_pod_form() {
    assert_eq!(holder_pod("pod:ci/runner-1"), Some(("ci", "runner-1")));
    for other in [
        "alice@laptop (pid 1)",
        "pod:ci",
        "pod:/x",
        "pod:ci/",
        "pod:a/b/c",
        "Pod:a/b",
    ] {
        assert_eq!(holder_pod(other), None, "{other}");
    }
}

#[test]
fn an_older_database_gains_the_intent_tables() {
    // A database at schema version 1 (what the previous driftd wrote) is migrated forward
    // on open, keeping its revisions.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute_batch(schema::MIGRATIONS[0]).unwrap();
        tx.execute_batch("PRAGMA user_version = 1").unwrap();
        tx.commit().unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    let objs = objects(&cm("a", "1"));
    store
        .begin_intent(&BeginRequest {
            source: "web",
            holder: "h",
            author: "a",
            message: "",
            ttl: Duration::from_secs(60),
            objects: &objs,
            skipped: 0,
        })
        .unwrap();
    let v: i64 = store
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, schema::current_version());
}
