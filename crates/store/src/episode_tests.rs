//! Drift episodes as a service level: what a write opened and closed, how episodes end,
//! who changed them, the history query and retention.

use super::*;
use driftd_core::report::{DriftClass, DriftFilter};
use jiff::Timestamp;

fn key(name: &str) -> ObjectKey {
    ObjectKey {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: Some("default".into()),
        name: name.into(),
    }
}

fn t(s: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + s).unwrap()
}

fn changer(manager: &str, at: &str) -> Changer {
    Changer {
        manager: manager.into(),
        changed_at: Some(at.into()),
        user: None,
    }
}

fn drifting<'a>(
    key: &'a ObjectKey,
    class: &'a str,
    at: Timestamp,
    who: &'a [Changer],
) -> EpisodeWrite<'a> {
    EpisodeWrite::Drifting {
        key,
        source: "web",
        class,
        at,
        paths: &[],
        who,
        replaced: if class == "missing" {
            EpisodeEnd::Deleted
        } else {
            EpisodeEnd::ClassChanged
        },
    }
}

fn resolved(key: &ObjectKey, at: Timestamp, how: EpisodeEnd) -> EpisodeWrite<'_> {
    EpisodeWrite::Resolved {
        key,
        at,
        ending: Ending::new(how),
    }
}

fn all(store: &Store) -> Vec<EpisodeRecord> {
    store
        .episode_history(&HistoryQuery {
            limit: 100,
            ..Default::default()
        })
        .unwrap()
}

#[test]
fn an_episode_opened_by_an_earlier_run_closes_with_its_whole_duration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let web = key("web");
    {
        let store = Store::open(&path).unwrap();
        let changes = store
            .write_episodes(&[drifting(&web, "modified", t(0), &[])])
            .unwrap();
        assert_eq!(
            changes.opened,
            vec![OpenedEpisode {
                source: "web".into(),
                class: "modified".into()
            }]
        );
        // The same drift again opens nothing.
        let changes = store
            .write_episodes(&[drifting(&web, "modified", t(30), &[])])
            .unwrap();
        assert_eq!(changes, EpisodeChanges::default());
    }
    // Another process (a restarted daemon) closes it an hour later.
    let store = Store::open(&path).unwrap();
    let changes = store
        .write_episodes(&[resolved(&web, t(3600), EpisodeEnd::Reverted)])
        .unwrap();
    assert_eq!(changes.closed.len(), 1);
    let closed = &changes.closed[0];
    assert_eq!((closed.first_seen, closed.resolved_at), (t(0), t(3600)));
    assert_eq!(closed.seconds(), 3600.0);
    assert_eq!(closed.ended, EpisodeEnd::Reverted);
    // Nothing open: closing again closes nothing (nothing would be observed twice).
    let changes = store
        .write_episodes(&[resolved(&web, t(3700), EpisodeEnd::Reverted)])
        .unwrap();
    assert!(changes.closed.is_empty());
}

#[test]
fn a_drift_that_becomes_missing_ends_its_episode_as_deleted_and_another_class_as_changed() {
    let store = Store::open_in_memory().unwrap();
    let web = key("web");
    store
        .write_episodes(&[drifting(&web, "modified", t(0), &[])])
        .unwrap();
    let changes = store
        .write_episodes(&[drifting(&web, "missing", t(10), &[])])
        .unwrap();
    assert_eq!(changes.closed[0].ended, EpisodeEnd::Deleted);
    assert_eq!(changes.closed[0].class, "modified");
    assert_eq!(changes.opened[0].class, "missing");
    let changes = store
        .write_episodes(&[drifting(&web, "uncommitted", t(20), &[])])
        .unwrap();
    assert_eq!(changes.closed[0].ended, EpisodeEnd::ClassChanged);
    let history = all(&store);
    let ends: Vec<_> = history
        .iter()
        .map(|r| (r.class.as_str(), r.ended))
        .collect();
    assert_eq!(
        ends,
        [
            ("uncommitted", None),
            ("missing", Some(EpisodeEnd::ClassChanged)),
            ("modified", Some(EpisodeEnd::Deleted)),
        ]
    );
}

#[test]
fn a_revert_after_an_applied_remediation_is_remediated_by_its_actor() {
    let store = Store::open_in_memory().unwrap();
    let (web, api) = (key("web"), key("api"));
    let remediation = |key: &ObjectKey, at, outcome| RemediationEvent {
        source: "web".into(),
        revision: 1,
        key: key.clone(),
        at,
        actor: "driftd/pod-1".into(),
        outcome,
        detail: "modified".into(),
    };
    // A remediation of an earlier episode of `web` does not count for this one.
    store
        .record_remediation(&remediation(&web, t(-100), RemediationOutcome::Applied))
        .unwrap();
    store
        .write_episodes(&[
            drifting(&web, "modified", t(0), &[]),
            drifting(&api, "modified", t(0), &[]),
        ])
        .unwrap();
    store
        .record_remediation(&remediation(&web, t(5), RemediationOutcome::Applied))
        .unwrap();
    store
        .record_remediation(&remediation(&api, t(5), RemediationOutcome::Failed))
        .unwrap();
    let changes = store
        .write_episodes(&[
            resolved(&web, t(10), EpisodeEnd::Reverted),
            resolved(&api, t(10), EpisodeEnd::Reverted),
        ])
        .unwrap();
    let ends: Vec<_> = changes.closed.iter().map(|c| c.ended).collect();
    assert_eq!(ends, [EpisodeEnd::Remediated, EpisodeEnd::Reverted]);
    let history = all(&store);
    let web_record = history.iter().find(|r| r.object == web).unwrap();
    assert_eq!(web_record.ended_by.as_deref(), Some("driftd/pod-1"));
    let api_record = history.iter().find(|r| r.object == api).unwrap();
    assert_eq!(api_record.ended_by, None);
}

#[test]
fn who_keeps_every_manager_that_changed_the_drifting_fields() {
    let store = Store::open_in_memory().unwrap();
    let web = key("web");
    let first = [changer("kubectl-edit", "2026-12-01T10:00:00Z")];
    let second = [
        changer("kubectl-edit", "2026-12-01T11:00:00Z"),
        changer("helm", "2026-12-01T11:30:00Z"),
    ];
    store
        .write_episodes(&[drifting(&web, "modified", t(0), &first)])
        .unwrap();
    store
        .write_episodes(&[drifting(&web, "modified", t(10), &second)])
        .unwrap();
    store
        .write_episodes(&[EpisodeWrite::Resolved {
            key: &web,
            at: t(20),
            ending: Ending {
                how: EpisodeEnd::Reverted,
                by: Some("kubectl-client-side-apply"),
            },
        }])
        .unwrap();
    let record = &all(&store)[0];
    assert_eq!(record.who, second);
    assert_eq!(record.ended, Some(EpisodeEnd::Reverted));
    assert_eq!(
        record.ended_by.as_deref(),
        Some("kubectl-client-side-apply")
    );
    assert_eq!((record.opened_at, record.closed_at), (t(0), Some(t(20))));
}

#[test]
fn people_named_after_the_drift_was_recorded_join_its_open_episode_only() {
    let store = Store::open_in_memory().unwrap();
    let (web, api) = (key("web"), key("api"));
    let edit = changer("kubectl-edit", "2026-12-01T10:00:00Z");
    store
        .write_episodes(&[drifting(
            &web,
            "modified",
            t(0),
            std::slice::from_ref(&edit),
        )])
        .unwrap();
    let alice = Changer {
        user: Some("alice".into()),
        ..edit.clone()
    };
    let deleted_by_bob = Changer {
        manager: String::new(),
        changed_at: None,
        user: Some("bob".into()),
    };
    store
        .add_episode_changers(&[
            (&web, vec![alice.clone()]),
            (&api, vec![deleted_by_bob.clone()]),
        ])
        .unwrap();
    let records = all(&store);
    assert_eq!(records.len(), 1, "api had no open episode: none is opened");
    assert_eq!(records[0].who, std::slice::from_ref(&alice));
    // A later write of the same manager without a person keeps the person; a newer write
    // by the same manager is someone's else until named.
    store
        .write_episodes(&[drifting(
            &web,
            "modified",
            t(5),
            std::slice::from_ref(&edit),
        )])
        .unwrap();
    assert_eq!(all(&store)[0].who, [alice]);
    let newer = changer("kubectl-edit", "2026-12-01T11:00:00Z");
    store
        .write_episodes(&[drifting(
            &web,
            "modified",
            t(9),
            std::slice::from_ref(&newer),
        )])
        .unwrap();
    assert_eq!(all(&store)[0].who, [newer]);
}

#[test]
fn a_commit_ends_drift_as_adopted_only_after_adopt_wrote_the_object_since_it_began() {
    let store = Store::open_in_memory().unwrap();
    let (web, api, db) = (key("web"), key("api"), key("db"));
    // db was adopted during an earlier episode, which a revert ended.
    store
        .write_episodes(&[drifting(&db, "modified", t(0), &[])])
        .unwrap();
    store
        .record_adoptions("web", 1, std::slice::from_ref(&db), t(5), "carol")
        .unwrap();
    store
        .write_episodes(&[resolved(&db, t(8), EpisodeEnd::Reverted)])
        .unwrap();
    store
        .write_episodes(&[
            drifting(&web, "modified", t(10), &[]),
            drifting(&api, "modified", t(10), &[]),
            drifting(&db, "modified", t(10), &[]),
        ])
        .unwrap();
    store
        .record_adoptions("web", 1, std::slice::from_ref(&web), t(20), "alice")
        .unwrap();
    let committed = |key| EpisodeWrite::Resolved {
        key,
        at: t(30),
        ending: Ending {
            how: EpisodeEnd::Committed,
            by: Some("bob"),
        },
    };
    let closed = store
        .write_episodes(&[committed(&web), committed(&api), committed(&db)])
        .unwrap();
    let ended: Vec<(String, Option<EpisodeEnd>, Option<String>)> = all(&store)
        .into_iter()
        .filter(|r| r.closed_at == Some(t(30)))
        .map(|r| (r.object.name, r.ended, r.ended_by))
        .collect();
    let expect = |name: &str, how, by: &str| (name.to_string(), Some(how), Some(by.to_string()));
    let mut ended = ended;
    ended.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        ended,
        [
            expect("api", EpisodeEnd::Committed, "bob"),
            expect("db", EpisodeEnd::Committed, "bob"),
            expect("web", EpisodeEnd::Adopted, "alice"),
        ]
    );
    assert_eq!(closed.closed.len(), 3);
    // Past the retention, adoptions go with the episodes.
    store.prune_episodes(t(100), 100).unwrap();
    let left: i64 = store
        .conn
        .query_row("SELECT COUNT(*) FROM adoptions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

#[test]
fn history_takes_the_drift_filters_and_a_window() {
    let store = Store::open_in_memory().unwrap();
    let (a, b, c) = (key("a"), key("b"), key("c"));
    let mut cm = key("cm");
    cm.group = String::new();
    cm.kind = "ConfigMap".into();
    cm.namespace = Some("other".into());
    // a: [0, 100], b: [200, 300], c: open since 400, cm: missing, open since 500.
    store
        .write_episodes(&[drifting(&a, "modified", t(0), &[])])
        .unwrap();
    store
        .write_episodes(&[resolved(&a, t(100), EpisodeEnd::Reverted)])
        .unwrap();
    store
        .write_episodes(&[drifting(&b, "modified", t(200), &[])])
        .unwrap();
    store
        .write_episodes(&[resolved(&b, t(300), EpisodeEnd::Committed)])
        .unwrap();
    store
        .write_episodes(&[drifting(&c, "modified", t(400), &[])])
        .unwrap();
    store
        .write_episodes(&[drifting(&cm, "missing", t(500), &[])])
        .unwrap();
    let names = |query: HistoryQuery| -> Vec<String> {
        store
            .episode_history(&HistoryQuery {
                limit: if query.limit == 0 { 100 } else { query.limit },
                ..query
            })
            .unwrap()
            .into_iter()
            .map(|r| r.object.name)
            .collect()
    };
    assert_eq!(names(HistoryQuery::default()), ["cm", "c", "b", "a"]);
    let window = |since: Option<i64>, until: Option<i64>| HistoryQuery {
        since: since.map(t),
        until: until.map(t),
        ..Default::default()
    };
    // Episodes that overlap the window, bounds included.
    assert_eq!(names(window(Some(100), None)), ["cm", "c", "b", "a"]);
    assert_eq!(names(window(Some(101), None)), ["cm", "c", "b"]);
    assert_eq!(names(window(Some(301), Some(450))), ["c"]);
    assert_eq!(names(window(None, Some(199))), ["a"]);
    assert_eq!(names(window(None, Some(200))), ["b", "a"]);
    let filtered = |filter: DriftFilter| HistoryQuery {
        filter,
        ..Default::default()
    };
    assert_eq!(
        names(filtered(DriftFilter {
            class: Some(DriftClass::Missing),
            ..Default::default()
        })),
        ["cm"]
    );
    assert_eq!(
        names(filtered(DriftFilter {
            namespace: Some("default".into()),
            kind: Some("Deployment".into()),
            source: Some("web".into()),
            ..Default::default()
        })),
        ["c", "b", "a"]
    );
    assert!(names(filtered(DriftFilter {
        source: Some("nope".into()),
        ..Default::default()
    }))
    .is_empty());
    assert_eq!(
        names(HistoryQuery {
            limit: 2,
            ..Default::default()
        }),
        ["cm", "c"]
    );
}

#[test]
fn retention_deletes_closed_episodes_past_it_in_batches_and_never_open_ones() {
    let store = Store::open_in_memory().unwrap();
    let keys: Vec<ObjectKey> = (0..5).map(|n| key(&format!("o{n}"))).collect();
    for (n, key) in keys.iter().enumerate() {
        store
            .write_episodes(&[drifting(key, "modified", t(0), &[])])
            .unwrap();
        // o0..o3 closed at 10, 20, 30, 40; o4 stays open.
        if n < 4 {
            store
                .write_episodes(&[resolved(key, t(10 * (n as i64 + 1)), EpisodeEnd::Reverted)])
                .unwrap();
        }
    }
    // Closed before 35: o0, o1, o2, two at a time, oldest first.
    assert_eq!(store.prune_episodes(t(35), 2).unwrap(), 2);
    let left: Vec<String> = all(&store).into_iter().map(|r| r.object.name).collect();
    assert_eq!(left.len(), 3);
    assert!(left.contains(&"o2".to_string()), "{left:?}");
    assert_eq!(store.prune_episodes(t(35), 2).unwrap(), 1);
    assert_eq!(store.prune_episodes(t(35), 2).unwrap(), 0);
    let mut left: Vec<String> = all(&store).into_iter().map(|r| r.object.name).collect();
    left.sort();
    assert_eq!(left, ["o3", "o4"]);
    // The open one stays whatever the cut-off.
    while store.prune_episodes(t(1_000_000), 2).unwrap() > 0 {}
    let left: Vec<String> = all(&store).into_iter().map(|r| r.object.name).collect();
    assert_eq!(left, ["o4"]);
}

#[test]
fn episodes_of_an_older_database_are_kept_without_an_ending() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        let tx = conn.transaction().unwrap();
        for step in &schema::MIGRATIONS[..7] {
            tx.execute_batch(step).unwrap();
        }
        tx.execute_batch(
            "PRAGMA user_version = 7;
             INSERT INTO episodes (grp, kind, namespace, name, source, class, first_seen,
                                   last_seen, resolved_at, paths)
             VALUES ('apps', 'Deployment', 'default', 'old', 'web', 'modified',
                     '2023-11-14T22:13:20Z', '2023-11-14T22:13:30Z', '2023-11-14T22:13:40Z',
                     '[\"/spec/replicas\"]'),
                    ('apps', 'Deployment', 'default', 'open', 'web', 'modified',
                     '2023-11-14T22:13:20Z', '2023-11-14T22:13:30Z', NULL, '[]');",
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let store = Store::open(&path).unwrap();
    let history = all(&store);
    let old = history.iter().find(|r| r.object.name == "old").unwrap();
    assert_eq!((old.ended, old.who.len()), (None, 0));
    assert_eq!(old.closed_at, Some(t(20)));
    assert_eq!(old.paths, ["/spec/replicas"]);
    // The episode left open is closed by this version with its ending and whole duration.
    let changes = store
        .write_episodes(&[resolved(&key("open"), t(120), EpisodeEnd::Committed)])
        .unwrap();
    assert_eq!(changes.closed[0].seconds(), 120.0);
}
