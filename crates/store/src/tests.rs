use super::*;
use driftd_core::manifest::{self, LoadOptions};

fn objects(text: &str) -> Vec<ManifestObject> {
    manifest::parse_text(text, "app.yaml", &LoadOptions::default()).unwrap()
}

fn cm(name: &str, value: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: \"{value}\"\n---\n"
    )
}

fn commit(store: &mut Store, source: &str, text: &str) -> Result<CommitOutcome, StoreError> {
    let objs = objects(text);
    store.commit(&CommitRequest {
        source,
        message: "msg",
        author: "alice",
        objects: &objs,
        committed_at: None,
        skipped: 0,
    })
}

fn created(outcome: CommitOutcome) -> RevisionInfo {
    match outcome {
        CommitOutcome::Created(r) => r,
        other => panic!("expected a new revision, got {other:?}"),
    }
}

#[test]
fn commit_then_unchanged_then_new_revision() {
    let mut store = Store::open_in_memory().unwrap();
    let r1 = created(commit(&mut store, "web", &(cm("a", "1") + &cm("b", "1"))).unwrap());
    assert_eq!(r1.object_count, 2);
    assert_eq!(r1.source, "web");
    // Same content in another order and key order: unchanged.
    let reordered = "apiVersion: v1\nkind: ConfigMap\ndata: {k: \"1\"}\nmetadata: {name: b}\n---\n"
        .to_string()
        + &cm("a", "1");
    match commit(&mut store, "web", &reordered).unwrap() {
        CommitOutcome::Unchanged(r) => assert_eq!(r.id, r1.id),
        other => panic!("{other:?}"),
    }
    let r2 = created(commit(&mut store, "web", &(cm("a", "2") + &cm("b", "1"))).unwrap());
    assert!(r2.id > r1.id);
    assert_ne!(r2.content_hash, r1.content_hash);
    let history = store.history("web").unwrap();
    assert_eq!(
        history.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![r2.id, r1.id]
    );
    assert!(store.history("nope").unwrap().is_empty());
    let sources = store.sources().unwrap();
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].latest.as_ref().unwrap().id, r2.id);
}

#[test]
fn desired_state_has_newest_revisions_and_previous_objects() {
    let mut store = Store::open_in_memory().unwrap();
    created(commit(&mut store, "web", &(cm("a", "1") + &cm("b", "1"))).unwrap());
    let r2 = created(commit(&mut store, "web", &(cm("a", "2") + &cm("c", "1"))).unwrap());
    let r3 = created(commit(&mut store, "db", &cm("d", "1")).unwrap());
    let state = store.desired_state().unwrap();
    let mut ids: Vec<i64> = state.revisions.iter().map(|r| r.id).collect();
    ids.sort();
    assert_eq!(ids, vec![r2.id, r3.id]);
    let find = |name: &str| state.objects.iter().find(|o| o.key.name == name);
    let a = find("a").unwrap();
    assert_eq!(a.revision, r2.id);
    assert_eq!(a.object["data"]["k"], "2");
    assert_eq!(a.previous.as_ref().unwrap()["data"]["k"], "1");
    assert!(find("b").is_none(), "b was removed in the newest revision");
    assert!(find("c").unwrap().previous.is_none(), "c is new");
    assert_eq!(find("d").unwrap().source, "db");
    assert_eq!(a.api_version, "v1");
    assert_eq!(a.key.namespace.as_deref(), Some("default"));
}

#[test]
fn objects_owned_by_another_source_are_rejected() {
    let mut store = Store::open_in_memory().unwrap();
    created(commit(&mut store, "web", &cm("shared", "1")).unwrap());
    let err = commit(&mut store, "db", &(cm("own", "1") + &cm("shared", "1"))).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Rejected(_)));
    assert!(msg.contains("ConfigMap default/shared"), "{msg}");
    assert!(msg.contains("app.yaml: document 1"), "{msg}");
    assert!(msg.contains("\"web\""), "{msg}");
    assert_eq!(store.sources().unwrap().len(), 1, "nothing written");
    // Once web drops it, db may take it.
    created(commit(&mut store, "web", &cm("other", "1")).unwrap());
    created(commit(&mut store, "db", &cm("shared", "1")).unwrap());
}

#[test]
fn bad_source_names_are_rejected() {
    let mut store = Store::open_in_memory().unwrap();
    for name in ["", "has space", &"x".repeat(200)] {
        assert!(matches!(
            commit(&mut store, name, &cm("a", "1")),
            Err(StoreError::Rejected(_))
        ));
    }
}

#[test]
fn episodes_keep_first_seen_until_resolved() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let key = ObjectKey {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: Some("default".into()),
        name: "web".into(),
    };
    let t = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
    {
        let store = Store::open(&path).unwrap();
        let e = store
            .record_drift(&key, "web", "modified", t(0), &["spec.replicas".into()])
            .unwrap();
        assert_eq!((e.first_seen, e.last_seen), (t(0), t(0)));
        let e = store
            .record_drift(
                &key,
                "web",
                "modified",
                t(10),
                &["spec.replicas".into(), "spec.template".into()],
            )
            .unwrap();
        assert_eq!((e.first_seen, e.last_seen), (t(0), t(10)));
        assert_eq!(e.paths.len(), 2);
        // Out-of-order report does not move last_seen back.
        let e = store
            .record_drift(&key, "web", "modified", t(5), &[])
            .unwrap();
        assert_eq!(e.last_seen, t(10));
    }
    // A restart (new connection) keeps "drifting since".
    let store = Store::open(&path).unwrap();
    let open = store.open_episodes().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].first_seen, t(0));
    // Another class is another episode: the modified one ends as the missing one begins.
    let e = store
        .record_drift(&key, "web", "missing", t(20), &[])
        .unwrap();
    assert_eq!((e.first_seen, e.class.as_str()), (t(20), "missing"));
    let open = store.open_episodes().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].class, "missing");
    store.resolve_drift(&key, t(30)).unwrap();
    assert!(store.open_episodes().unwrap().is_empty());
    store.resolve_drift(&key, t(31)).unwrap();
    // Drifting again is a new episode.
    let e = store
        .record_drift(&key, "web", "modified", t(40), &[])
        .unwrap();
    assert_eq!(e.first_seen, t(40));
    assert_eq!(e.resolved_at, None);
}

#[test]
fn one_batch_of_episode_writes_opens_updates_and_closes_as_single_writes_do() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("d.db")).unwrap();
    let key = |name: &str| ObjectKey {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: Some("default".into()),
        name: name.into(),
    };
    let t = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
    let (a, b, c, d) = (key("a"), key("b"), key("c"), key("d"));
    store
        .record_drift(&a, "web", "modified", t(0), &["data.x".into()])
        .unwrap();
    store
        .record_drift(&d, "web", "modified", t(0), &["data.x".into()])
        .unwrap();
    store
        .record_drift(&c, "web", "modified", t(0), &[])
        .unwrap();
    let paths = ["data.y".to_string()];
    store
        .write_episodes(&[
            // Same class, other paths: the episode goes on.
            EpisodeWrite::Drifting {
                key: &a,
                source: "web",
                class: "modified",
                at: t(10),
                paths: &paths,
                who: &[],
                replaced: EpisodeEnd::ClassChanged,
            },
            // Another class: a new episode from now, as `record_drift` does.
            EpisodeWrite::Drifting {
                key: &d,
                source: "web",
                class: "deleted",
                at: t(10),
                paths: &paths,
                who: &[],
                replaced: EpisodeEnd::ClassChanged,
            },
            EpisodeWrite::Drifting {
                key: &b,
                source: "web",
                class: "modified",
                at: t(10),
                paths: &paths,
                who: &[],
                replaced: EpisodeEnd::ClassChanged,
            },
            EpisodeWrite::Resolved {
                key: &c,
                at: t(10),
                ending: Ending::new(EpisodeEnd::Reverted),
            },
        ])
        .unwrap();
    let open: Vec<(String, String, Timestamp, Timestamp, Vec<String>)> = store
        .open_episodes()
        .unwrap()
        .into_iter()
        .map(|e| (e.key.name, e.class, e.first_seen, e.last_seen, e.paths))
        .collect();
    assert_eq!(
        open,
        [
            (
                "a".into(),
                "modified".into(),
                t(0),
                t(10),
                vec!["data.y".to_string()]
            ),
            (
                "d".into(),
                "deleted".into(),
                t(10),
                t(10),
                vec!["data.y".to_string()]
            ),
            (
                "b".into(),
                "modified".into(),
                t(10),
                t(10),
                vec!["data.y".to_string()]
            ),
        ]
    );
}

#[test]
fn data_version_changes_when_another_connection_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let reader = Store::open(&path).unwrap();
    let mut writer = Store::open(&path).unwrap();
    let before = reader.data_version().unwrap();
    assert_eq!(
        reader.data_version().unwrap(),
        before,
        "stable without commits"
    );
    created(commit(&mut writer, "web", &cm("a", "1")).unwrap());
    assert_ne!(reader.data_version().unwrap(), before);
    assert_eq!(reader.desired_state().unwrap().objects.len(), 1);
}

#[test]
fn installation_key_is_random_and_stable() {
    let dir = tempfile::tempdir().unwrap();
    let (p1, p2) = (dir.path().join("1.db"), dir.path().join("2.db"));
    let k1 = Store::open(&p1).unwrap().installation_key().unwrap();
    assert_eq!(k1.len(), 32);
    assert_eq!(Store::open(&p1).unwrap().installation_key().unwrap(), k1);
    assert_ne!(Store::open(&p2).unwrap().installation_key().unwrap(), k1);
}

#[test]
fn migrations_set_user_version_and_refuse_newer_databases() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    drop(Store::open(&path).unwrap());
    let conn = Connection::open(&path).unwrap();
    let v: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, schema::current_version());
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.execute_batch(&format!("PRAGMA user_version = {}", v + 1))
        .unwrap();
    drop(conn);
    let err = Store::open(&path)
        .err()
        .expect("newer schema must be refused");
    assert!(matches!(err, StoreError::Schema(_)));
    assert!(err.to_string().contains("newer driftd"), "{err}");
}

#[test]
fn a_partly_migrated_database_is_brought_forward() {
    // Simulates a database written by an older driftd: version 0 with no tables.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    Connection::open(&path)
        .unwrap()
        .execute_batch("CREATE TABLE unrelated (x)")
        .unwrap();
    let mut store = Store::open(&path).unwrap();
    created(commit(&mut store, "web", &cm("a", "1")).unwrap());
}

#[test]
fn not_a_database_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    std::fs::write(&path, "this is not sqlite, just text that is long enough to have a header....................................").unwrap();
    let err = Store::open(&path).err().unwrap();
    assert!(matches!(err, StoreError::Open { .. }), "{err:?}");
    assert!(err.to_string().contains("d.db"), "{err}");
}

#[test]
fn canonical_json_sorts_keys_at_every_level() {
    let v: Value = serde_json::from_str(r#"{"b":{"y":1,"x":[{"d":1,"c":"é"}]},"a":null}"#).unwrap();
    assert_eq!(
        canonical_json(&v),
        r#"{"a":null,"b":{"x":[{"c":"é","d":1}],"y":1}}"#
    );
    // Escapes, numbers and literals as serde_json writes them: revision hashes of earlier
    // commits depend on this text staying the same.
    let v: Value = serde_json::from_str(
        r#"{"z\"q":"tab\tnl\n\u0001/","n":[-1.5,1e3,0,true,false,null],"":{}}"#,
    )
    .unwrap();
    assert_eq!(
        canonical_json(&v),
        r#"{"":{},"n":[-1.5,1000.0,0,true,false,null],"z\"q":"tab\tnl\n\u0001/"}"#
    );
}

#[test]
fn a_version_4_database_gains_skipped_counts_of_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        let tx = conn.transaction().unwrap();
        for step in &schema::MIGRATIONS[..4] {
            tx.execute_batch(step).unwrap();
        }
        tx.execute_batch(
            "PRAGMA user_version = 4;
             INSERT INTO sources VALUES (1, 'old', '2026-01-01T00:00:00Z');
             INSERT INTO revisions VALUES (1, 1, 'a', '', '2026-01-01T00:00:00Z', 'h', 0);",
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    let objs = objects(&cm("a", "1"));
    let rev = created(
        store
            .commit(&CommitRequest {
                source: "web",
                message: "",
                author: "alice",
                objects: &objs,
                committed_at: None,
                skipped: 2,
            })
            .unwrap(),
    );
    assert_eq!(rev.skipped_count, 2);
    let sources = store.sources().unwrap();
    let counts: Vec<(&str, usize)> = sources
        .iter()
        .map(|s| (s.name.as_str(), s.latest.as_ref().unwrap().skipped_count))
        .collect();
    assert_eq!(counts, [("old", 0), ("web", 2)]);
    assert_eq!(store.history("web").unwrap()[0].skipped_count, 2);
}

#[test]
fn ownership_is_checked_per_key_and_crds_are_read_alone() {
    let mut store = Store::open_in_memory().unwrap();
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n---\n";
    let big: String = (0..300).map(|i| cm(&format!("big-{i}"), "1")).collect();
    created(commit(&mut store, "big", &format!("{crd}{big}")).unwrap());
    // An older revision of another source held a key the big source later dropped.
    created(commit(&mut store, "old", &cm("freed", "1")).unwrap());
    created(commit(&mut store, "old", &cm("kept", "1")).unwrap());

    // Only the newest revisions' CRDs come back, none of the 300 ConfigMaps.
    let crds = store.committed_crds().unwrap();
    assert_eq!(crds.len(), 1);
    assert_eq!(crds[0]["metadata"]["name"], "widgets.example.com");

    // A key another source's newest revision owns is refused, naming it.
    let err = commit(
        &mut store,
        "small",
        &(cm("mine", "1") + &cm("big-299", "1")),
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("is already owned by source \"big\" (revision 1)"),
        "{err}"
    );
    // A key only an older revision held is free; so is a new one.
    created(commit(&mut store, "small", &(cm("mine", "1") + &cm("freed", "1"))).unwrap());
    // The source's own keys stay its own on the next commit.
    created(
        commit(
            &mut store,
            "big",
            &format!("{crd}{big}{}", cm("extra", "1")),
        )
        .unwrap(),
    );
    let err = commit(&mut store, "big", &format!("{big}{}", cm("mine", "2"))).unwrap_err();
    assert!(
        err.to_string().contains("owned by source \"small\""),
        "{err}"
    );
    // Once the big source drops a key, another source can take it.
    created(commit(&mut store, "big", &cm("big-0", "1")).unwrap());
    created(
        commit(
            &mut store,
            "small",
            &(cm("mine", "1") + &cm("big-299", "1")),
        )
        .unwrap(),
    );
}

#[test]
fn an_intent_keeps_its_skipped_count_for_the_revision_it_becomes() {
    let mut store = Store::open_in_memory().unwrap();
    let objs = objects(&cm("a", "1"));
    let intent = store
        .begin_intent(&BeginRequest {
            source: "web",
            holder: "deployer",
            author: "alice",
            message: "",
            ttl: Duration::from_secs(60),
            objects: &objs,
            skipped: 3,
        })
        .unwrap();
    let (_, outcome) = store.commit_intent(intent.id, "deployer").unwrap();
    assert_eq!(created(outcome).skipped_count, 3);
    assert_eq!(
        store.sources().unwrap()[0]
            .latest
            .as_ref()
            .unwrap()
            .skipped_count,
        3
    );
}

#[test]
fn remediations_are_in_the_source_history_and_revision_objects_are_readable() {
    let mut store = Store::open_in_memory().unwrap();
    let r1 = created(commit(&mut store, "web", &(cm("a", "1") + &cm("b", "1"))).unwrap());
    let objects = store.revision_objects(r1.id).unwrap();
    let names: Vec<&str> = objects.iter().map(|(k, _, _)| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(objects[0].1, "v1");
    let key = objects[0].0.clone();
    // Where each came from, for `driftd adopt`: the second document of the same text.
    let origins = store.revision_origins(r1.id).unwrap();
    assert_eq!(origins[&objects[1].0].1, 1);
    assert_eq!(origins[&key], ("app.yaml".to_string(), 0));
    let at = store.now();
    for (outcome, detail) in [
        (RemediationOutcome::Failed, "conflict"),
        (RemediationOutcome::Applied, "modified"),
    ] {
        store
            .record_remediation(&RemediationEvent {
                source: "web".into(),
                revision: r1.id,
                key: key.clone(),
                at,
                actor: "driftd/replica-1".into(),
                outcome,
                detail: detail.into(),
            })
            .unwrap();
    }
    let timeline = store.timeline("web").unwrap();
    // Newest first: the two remediations, then the revision they restored.
    let HistoryEntry::Remediation(newest) = &timeline[0] else {
        panic!("{timeline:?}")
    };
    assert_eq!(newest.outcome, RemediationOutcome::Applied);
    assert_eq!(newest.actor, "driftd/replica-1");
    assert_eq!(newest.key, key);
    assert!(matches!(&timeline[1], HistoryEntry::Remediation(e) if e.detail == "conflict"));
    assert!(matches!(&timeline[2], HistoryEntry::Revision(r) if r.id == r1.id));
    assert!(store.timeline("other").unwrap().is_empty());
}

#[test]
fn a_version_5_database_gains_config_contents_and_keeps_its_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    {
        let mut conn = Connection::open(&path).unwrap();
        let tx = conn.transaction().unwrap();
        for step in &schema::MIGRATIONS[..5] {
            tx.execute_batch(step).unwrap();
        }
        tx.execute_batch(
            "PRAGMA user_version = 5;
             INSERT INTO sources VALUES (1, 'old', '2026-01-01T00:00:00Z');
             INSERT INTO revisions VALUES (1, 1, 'a', '', '2026-01-01T00:00:00Z', 'h', 0, 0);",
        )
        .unwrap();
        tx.commit().unwrap();
    }
    let store = Store::open(&path).unwrap();
    assert_eq!(store.history("old").unwrap().len(), 1, "revisions kept");
    assert!(store.config_contents().unwrap().is_empty());

    let at = |s: &str| -> Timestamp { s.parse().unwrap() };
    let seen = |kind: &str, name: &str, hash: &str, when: &str| ConfigContent {
        namespace: "shop".into(),
        kind: kind.into(),
        name: name.into(),
        hash: hash.into(),
        first_seen: at(when),
        earlier: vec![(format!("{hash}-before"), at("2026-01-15T00:00:00Z"))],
    };
    store
        .record_config_contents(&[
            ContentChange::Seen(seen("Secret", "db", "h1", "2026-02-01T00:00:00Z")),
            ContentChange::Seen(seen("ConfigMap", "db", "h2", "2026-02-01T00:00:01Z")),
            ContentChange::Seen(seen("ConfigMap", "gone", "h3", "2026-02-01T00:00:02Z")),
        ])
        .unwrap();
    // New content replaces the old, keyed by (namespace, kind, name); a deleted config goes.
    store
        .record_config_contents(&[
            ContentChange::Seen(seen("Secret", "db", "h4", "2026-03-01T00:00:00.5Z")),
            ContentChange::Gone {
                namespace: "shop".into(),
                kind: "ConfigMap".into(),
                name: "gone".into(),
            },
        ])
        .unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(
        store.config_contents().unwrap(),
        [
            seen("ConfigMap", "db", "h2", "2026-02-01T00:00:01Z"),
            seen("Secret", "db", "h4", "2026-03-01T00:00:00.5Z"),
        ]
    );
}

#[test]
fn a_scoped_handle_loads_only_its_sources() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut store = Store::open(&path).unwrap();
    created(commit(&mut store, "team-a/app", &cm("one", "1")).unwrap());
    created(commit(&mut store, "team-b/app", &cm("two", "2")).unwrap());
    let scope = SourceScope::new(&["team-a/*".to_string()]).unwrap();
    let scoped = Store::open(&path).unwrap().scoped(scope);
    let state = scoped.desired_state().unwrap();
    let names: Vec<&str> = state.objects.iter().map(|o| o.key.name.as_str()).collect();
    assert_eq!(names, ["one"]);
    let revisions: Vec<&str> = state.revisions.iter().map(|r| r.source.as_str()).collect();
    assert_eq!(revisions, ["team-a/app"]);
    // Object by object (the engine's compact load) sees the same.
    let mut streamed = Vec::new();
    let streamed_revisions = scoped
        .each_desired_object(|o| streamed.push(o.key.name))
        .unwrap();
    assert_eq!(streamed, ["one"]);
    let streamed_revisions: Vec<&str> = streamed_revisions
        .iter()
        .map(|r| r.source.as_str())
        .collect();
    assert_eq!(streamed_revisions, ["team-a/app"]);
    let sources: Vec<String> = scoped
        .sources()
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(sources, ["team-a/app"]);
    // The unscoped view (the CLI's) still has both.
    assert_eq!(store.sources().unwrap().len(), 2);
}

#[test]
fn open_episodes_are_touched_in_steps_and_closed_ones_never() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("d.db")).unwrap();
    let key = |n: usize| ObjectKey {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: Some("default".into()),
        name: format!("cm-{n}"),
    };
    let t = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
    for n in 0..7 {
        store
            .record_drift(&key(n), "web", "modified", t(0), &[])
            .unwrap();
    }
    store.resolve_drift(&key(3), t(5)).unwrap();
    let mut steps = Vec::new();
    let mut after = 0;
    while let Some(last) = store.touch_open_episodes(t(60), after, 2).unwrap() {
        steps.push(last);
        after = last;
    }
    assert_eq!(steps.len(), 3, "6 open episodes in steps of 2: {steps:?}");
    let open = store.open_episodes().unwrap();
    assert_eq!(open.len(), 6);
    assert!(open.iter().all(|e| e.last_seen == t(60)), "{open:?}");
    let closed: String = store
        .conn
        .query_row(
            "SELECT last_seen FROM episodes WHERE resolved_at IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        closed,
        ts_to_db(t(0)),
        "a closed episode keeps its last_seen"
    );
}

#[test]
fn new_databases_keep_object_rows_on_their_pages_and_old_ones_still_open() {
    let dir = tempfile::tempdir().unwrap();
    let page_size = |path: &std::path::Path| -> i64 {
        Connection::open(path)
            .unwrap()
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap()
    };
    // A Deployment-sized body (about 2 KB) stays on its b-tree page: no overflow page.
    let big = "x".repeat(2_000);
    let fresh = dir.path().join("new.db");
    let mut store = Store::open(&fresh).unwrap();
    created(commit(&mut store, "web", &cm("a", &big)).unwrap());
    drop(store);
    assert_eq!(page_size(&fresh), PAGE_SIZE);
    let overflow: i64 = Connection::open(&fresh)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM dbstat WHERE name = 'revision_objects' AND pagetype = 'overflow'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(overflow, 0);
    // A database created by an earlier driftd keeps its 4 KiB pages and works as before.
    let old = dir.path().join("old.db");
    Connection::open(&old)
        .unwrap()
        .execute_batch("PRAGMA page_size = 4096; CREATE TABLE t (x); DROP TABLE t;")
        .unwrap();
    let mut store = Store::open(&old).unwrap();
    created(commit(&mut store, "web", &cm("a", &big)).unwrap());
    let state = store.desired_state().unwrap();
    assert_eq!(state.objects.len(), 1);
    assert_eq!(state.objects[0].object["data"]["k"], big.as_str());
    drop(store);
    assert_eq!(page_size(&old), 4096);
}

#[test]
fn the_content_writer_writes_in_order_on_its_own_connection_and_reports_failures() {
    assert!(
        Store::open_in_memory()
            .unwrap()
            .content_writer()
            .unwrap()
            .is_none(),
        "no other connection reaches a database in memory"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.db");
    let store = Store::open(&path).unwrap();
    let at = |s: &str| -> Timestamp { s.parse().unwrap() };
    let seen = |name: &str, hash: &str| {
        ContentChange::Seen(ConfigContent {
            namespace: "shop".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            hash: hash.into(),
            first_seen: at("2026-02-01T00:00:00Z"),
            earlier: Vec::new(),
        })
    };
    let gone = |name: &str| ContentChange::Gone {
        namespace: "shop".into(),
        kind: "ConfigMap".into(),
        name: name.into(),
    };
    let writer = store
        .content_writer()
        .unwrap()
        .expect("a file has a writer");
    // Later batches win over earlier ones: the order is kept across batches.
    writer.record(vec![seen("a", "h1"), seen("b", "h1")]);
    writer.record(vec![seen("a", "h2"), gone("b")]);
    writer.record(vec![seen("b", "h3")]);
    writer.record(Vec::new());
    drop(writer);
    let hashes: Vec<(String, String)> = store
        .config_contents()
        .unwrap()
        .into_iter()
        .map(|c| (c.name, c.hash))
        .collect();
    assert_eq!(
        hashes,
        [("a".into(), "h2".into()), ("b".into(), "h3".into())],
        "everything queued is written before the writer is gone"
    );

    // A write that fails is reported, and the writer goes on.
    let writer = store.content_writer().unwrap().unwrap();
    store
        .conn
        .execute_batch("ALTER TABLE config_contents RENAME TO moved")
        .unwrap();
    writer.record(vec![seen("c", "h1")]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let failures = loop {
        let failures = writer.failures();
        if !failures.is_empty() || std::time::Instant::now() > deadline {
            break failures;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].to_string().contains("config_contents"),
        "{}",
        failures[0]
    );
    store
        .conn
        .execute_batch("ALTER TABLE moved RENAME TO config_contents")
        .unwrap();
    writer.record(vec![seen("c", "h1")]);
    drop(writer);
    assert_eq!(store.config_contents().unwrap().len(), 3);
}
