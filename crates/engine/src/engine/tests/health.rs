//! Honest staleness: a kind's watch is unhealthy from its first failed attempt until the
//! server answers again (its objects marked `stale`, the kinds listed with since when, every
//! failure counted), and a server whose resourceVersion went back (an etcd restore) makes
//! the kind list afresh.

use super::*;
use driftd_core::report::{DriftFilter, StaleKind};

fn failed() -> WatchEvent {
    WatchEvent::Error(WatchError::NoResourceVersion)
}

fn at(ts: &str) -> Timestamp {
    ts.parse().unwrap()
}

/// The live ConfigMap `name` with `data.k = value` at resourceVersion `rv`.
fn cm_at(name: &str, value: &str, rv: &str) -> Value {
    let mut o = one(&cm(name, value));
    o["metadata"]["resourceVersion"] = json!(rv);
    o
}

impl Harness {
    /// (name, stale) of every ConfigMap entry `/drift` would answer, in sync or not.
    fn stale_marks(&self) -> Vec<(String, bool)> {
        let index = self.index.read().unwrap();
        let mut marks: Vec<(String, bool)> = [None, Some(DriftClass::InSync)]
            .into_iter()
            .flat_map(|class| {
                index.query(&DriftFilter {
                    class,
                    ..DriftFilter::default()
                })
            })
            .map(|e| (e.name, e.stale))
            .collect();
        marks.sort();
        marks
    }

    fn stale_kinds(&self) -> Vec<StaleKind> {
        self.index.read().unwrap().stale_kinds()
    }

    fn health(&self) -> (bool, Option<Timestamp>, Option<Timestamp>) {
        let index = self.index.read().unwrap();
        let h = index
            .watch_health()
            .iter()
            .find(|h| h.kind == configmaps())
            .expect("ConfigMaps are watched")
            .clone();
        (h.healthy, h.unhealthy_since, h.last_event)
    }
}

#[test]
fn a_failed_attempt_makes_the_kind_stale_until_the_server_answers_again() {
    let mut h = Harness::start_with(&config(), &(cm("a", "1") + &cm("b", "1")));
    let t0 = h.clock.wall();
    assert_eq!(
        h.health(),
        (false, None, None),
        "no answer yet: not healthy, not stale"
    );
    assert!(h.stale_kinds().is_empty());
    h.list(&configmaps(), live(&(cm("a", "1") + &cm("b", "2"))));
    assert_eq!(h.health(), (true, None, Some(t0)));
    assert_eq!(h.stale_marks(), [("a".into(), false), ("b".into(), false)]);

    // The API server answers 503: the first failure starts the outage...
    h.clock.advance(Duration::from_secs(10));
    let t1 = h.clock.wall();
    h.send(&configmaps(), vec![failed()]);
    assert_eq!(h.health(), (false, Some(t1), Some(t0)));
    assert_eq!(
        h.stale_kinds(),
        [StaleKind {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            since: t1,
        }]
    );
    assert_eq!(h.stale_marks(), [("a".into(), true), ("b".into(), true)]);
    assert!(h.ready(), "an outage does not make driftd unready");
    assert_eq!(
        h.class("b"),
        Some(DriftClass::Modified),
        "the last verdict stays"
    );

    // ...and keeps its start through every retry, each one counted.
    h.clock.advance(Duration::from_secs(30));
    h.send(&configmaps(), vec![failed(), failed()]);
    assert_eq!(h.health().1, Some(t1));
    assert_eq!(h.engine.outputs.watch_errors["ConfigMap"], 3);

    // A failure of a replaced watcher is counted, but says nothing of the current one.
    let old = h.watcher(&configmaps());
    h.engine.relist_periodically();
    h.send(&configmaps(), vec![WatchEvent::Opened]);
    assert!(h.health().0);
    h.engine.handle([WatchMessage {
        type_key: configmaps(),
        watcher: old,
        event: failed(),
    }]);
    assert_eq!(h.engine.outputs.watch_errors["ConfigMap"], 4);
    assert!(
        h.health().0,
        "a replaced watcher's failure is not this one's"
    );

    // The server answers again (a watch opens): healthy, nothing stale.
    h.send(&configmaps(), vec![failed()]);
    let t2 = h.clock.wall();
    h.clock.advance(Duration::from_secs(5));
    h.send(&configmaps(), vec![WatchEvent::Opened]);
    let t3 = h.clock.wall();
    assert_eq!(h.health(), (true, None, Some(t3)));
    assert!(h.stale_kinds().is_empty(), "since {t2}");
    assert_eq!(h.stale_marks(), [("a".into(), false), ("b".into(), false)]);
}

#[test]
fn asking_the_server_where_it_is_does_not_make_a_failing_watch_healthy() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "1")));
    h.send(&configmaps(), vec![failed()]);
    // The list of one object before a resumed watch succeeds, the watch itself fails.
    h.send(
        &configmaps(),
        vec![WatchEvent::Position("7".into()), failed()],
    );
    assert!(!h.health().0);
    assert_eq!(h.stale_marks(), [("a".into(), true)]);
    // A bookmark comes only on a working watch: it ends the outage, and is the last event.
    h.clock.advance(Duration::from_secs(3));
    h.send(&configmaps(), vec![WatchEvent::Bookmark("8".into())]);
    assert_eq!(h.health(), (true, None, Some(h.clock.wall())));
    assert_eq!(h.stale_marks(), [("a".into(), false)]);
}

#[test]
fn a_resource_version_going_back_lists_the_kind_afresh() {
    let mut h = Harness::start_with(&config(), &(cm("a", "1") + &cm("b", "1")));
    // A listed object's version is when it last changed, not the server's position.
    let mut events = vec![WatchEvent::Init];
    events.push(watch_apply(cm_at("a", "1", "40")));
    events.push(watch_apply(cm_at("b", "1", "12")));
    events.push(WatchEvent::InitDone);
    events.push(WatchEvent::Position("100".into()));
    h.send(&configmaps(), events);
    assert_eq!(h.engine.watching.watches.log, ["start ConfigMap"]);

    // Watch events and bookmarks move the position forward; an opaque one is not compared.
    h.send(
        &configmaps(),
        vec![
            watch_apply(cm_at("a", "1", "120")),
            WatchEvent::Position("150".into()),
            WatchEvent::Position("not-a-number".into()),
            WatchEvent::Position("150".into()),
        ],
    );
    assert_eq!(h.engine.watching.watches.log, ["start ConfigMap"]);

    // The etcd state is restored to version 100; meanwhile `b` was edited by hand (at 101
    // in the new timeline). A watch resumed from 150 would never see it. The server's
    // current version, asked before the watch resumes, gives it away.
    h.send(&configmaps(), vec![WatchEvent::Position("101".into())]);
    assert_eq!(
        h.engine.watching.watches.log,
        ["start ConfigMap", "restart ConfigMap"]
    );
    assert!(h.ready(), "a re-list keeps judging on the last live copies");
    assert_eq!(h.class("b"), Some(DriftClass::InSync));
    h.send(
        &configmaps(),
        vec![
            WatchEvent::Init,
            watch_apply(cm_at("a", "1", "40")),
            watch_apply(cm_at("b", "2", "101")),
            WatchEvent::InitDone,
            WatchEvent::Position("101".into()),
        ],
    );
    assert_eq!(h.class("b"), Some(DriftClass::Modified));
    // The fresh list is the new truth: lower than before, but no second restart.
    assert_eq!(h.engine.watching.watches.log.len(), 2);

    // Going back seen on a watch event itself (a server that kept the stream open).
    h.send(&configmaps(), vec![watch_apply(cm_at("a", "1", "90"))]);
    assert_eq!(
        h.engine.watching.watches.log,
        ["start ConfigMap", "restart ConfigMap", "restart ConfigMap"]
    );
}

/// What `driftd_watch_healthy` and `driftd_watch_last_event_timestamp_seconds` are
/// rendered from (driftd-export's metrics test renders the same health).
#[test]
fn the_metrics_families_follow_the_health() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "1")));
    let index = h.index.clone();
    let health = || {
        let index = index.read().unwrap();
        let health = index
            .watch_health()
            .iter()
            .find(|w| w.kind.kind == "ConfigMap")
            .cloned()
            .unwrap();
        (health.healthy, health.last_event)
    };
    let seen = at("2026-11-30T10:00:00Z");
    assert_eq!(health(), (true, Some(seen)));
    h.clock.advance(Duration::from_secs(60));
    h.send(&configmaps(), vec![failed()]);
    assert_eq!(
        health(),
        (false, Some(seen)),
        "the last answer, not the failure"
    );
}
