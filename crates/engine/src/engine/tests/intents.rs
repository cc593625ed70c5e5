//! Uncommitted applies: live objects equal to what an open intent wanted, with the engine
//! driven as in the other engine tests and intents written through its store.

use super::*;
use driftd_store::{BeginRequest, IntentInfo};

impl Harness {
    /// Makes the store's clock the engine's wall clock, so intents expire on the test's time.
    pub(super) fn follow_clock(&mut self) {
        let clock = self.clock.clone();
        self.engine.store.set_clock(move || clock.wall());
    }

    /// Begins an intent of `source` for `yaml`, held by `holder`, and loads it.
    pub(super) fn begin(&mut self, source: &str, yaml: &str, holder: &str, ttl_secs: u64) -> i64 {
        let objects = crate::test_support::parse(yaml);
        let intent = self
            .engine
            .store
            .begin_intent(&BeginRequest {
                source,
                holder,
                author: "alice",
                message: "deploy",
                ttl: Duration::from_secs(ttl_secs),
                objects: &objects,
                skipped: 0,
            })
            .unwrap();
        self.engine.reload_intents();
        intent.id
    }

    /// Reads the intents (and desired state) again after a write through the store.
    pub(super) fn reload(&mut self) {
        self.load();
        self.engine.reload_intents();
    }

    pub(super) fn intent(&self, id: i64) -> IntentInfo {
        self.engine.store.intent(id).unwrap().unwrap()
    }
}

fn intent_of(h: &Harness, name: &str) -> Option<(i64, String)> {
    let entry = h.entry("ConfigMap", name)?;
    entry.intent.map(|i| (i.id, i.state))
}

#[test]
fn equal_to_an_open_intent_is_uncommitted_and_committing_it_is_in_sync() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.follow_clock();
    h.list(&configmaps(), live(&cm("a", "1")));
    let id = h.begin("shop", &cm("a", "2"), "pod:ci/deploy-x", 600);
    assert_eq!(
        h.class("a"),
        Some(DriftClass::InSync),
        "nothing applied yet"
    );

    // The deploy applies: the live object is what the intent wanted.
    h.apply(one(&cm("a", "2")));
    let a = h.entry("ConfigMap", "a").unwrap();
    assert_eq!(a.class, DriftClass::Uncommitted);
    let intent = a.intent.clone().unwrap();
    assert_eq!((intent.id, intent.state.as_str()), (id, "pending"));
    assert_eq!(intent.holder, "pod:ci/deploy-x");
    assert_eq!(intent.keep, format!("driftd intent commit {id}"));
    assert_eq!(
        intent.revert,
        format!(
            "`driftd intent release {id}`, then \
             `driftd reconcile --source shop --object ConfigMap/shop/a --apply`"
        )
    );
    assert_eq!(
        paths(&a),
        ["/data/k"],
        "changes against the committed revision"
    );
    assert_eq!(
        serde_json::to_value(&a.patch).unwrap(),
        json!([{"op": "replace", "path": "/data/k", "value": "1"}]),
        "the restoring patch"
    );

    // Different from both: modified. Back to the intent's: uncommitted again.
    h.apply(one(&cm("a", "3")));
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
    assert!(h.entry("ConfigMap", "a").unwrap().intent.is_none());
    h.apply(one(&cm("a", "2")));
    assert_eq!(h.class("a"), Some(DriftClass::Uncommitted));

    // The deploy is killed: the intent says so.
    h.engine
        .store
        .interrupt_intent(id, "run", "killed by SIGKILL")
        .unwrap();
    h.reload();
    assert_eq!(intent_of(&h, "a"), Some((id, "interrupted".into())));
    h.advance(SETTLE);
    assert_eq!(h.announced(), ["Uncommitted ConfigMap/a"]);
    assert_eq!(
        h.open_episodes(),
        [("a".to_string(), "uncommitted".to_string())]
    );

    // Kept: committing the intent makes it the desired state.
    h.engine.store.commit_intent(id, "ops").unwrap();
    h.reload();
    assert_eq!(h.class("a"), Some(DriftClass::InSync));
    h.advance(SETTLE);
    assert_eq!(
        h.announced(),
        ["Uncommitted ConfigMap/a", "Resolved ConfigMap/a"]
    );
}

#[test]
fn the_newest_matching_intent_explains_and_an_ended_one_no_longer_does() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.follow_clock();
    h.list(&configmaps(), live(&cm("a", "2")));
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
    let first = h.begin("shop", &cm("a", "2"), "ci", 600);
    h.engine.store.fail_intent(first, "ci", "exit 1").unwrap();
    h.clock.advance(Duration::from_secs(1));
    let second = h.begin("shop", &cm("a", "2"), "ci", 600);
    h.engine
        .store
        .interrupt_intent(second, "ci", "SIGTERM")
        .unwrap();
    // An intent of another source wanting the same value does not count.
    h.begin("other", &cm("b", "1"), "ci", 600);
    h.reload();
    assert_eq!(intent_of(&h, "a"), Some((second, "interrupted".into())));

    h.engine.store.release_intent(second, "ops", "").unwrap();
    h.reload();
    assert_eq!(intent_of(&h, "a"), Some((first, "failed".into())));

    // A new revision supersedes the failed attempt: the live object is just modified.
    h.commit("shop", &cm("a", "9"));
    h.engine.reload_intents();
    assert_eq!(h.intent(first).state, driftd_store::IntentState::Superseded);
    assert_eq!(h.class("a"), Some(DriftClass::Modified));
    assert!(intent_of(&h, "a").is_none());
}

#[test]
fn an_object_only_an_intent_wants_is_uncommitted_while_it_exists_as_wanted() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.follow_clock();
    h.list(&configmaps(), live(&cm("a", "1")));
    let started = h.engine.watching.watches.log.len();
    let id = h.begin("shop", &(cm("a", "1") + &cm("new", "1")), "ci", 600);
    assert_eq!(
        h.engine.watching.watches.log[started..],
        ["restart ConfigMap"],
        "a list already delivered passed the new object over"
    );
    assert!(h.class("new").is_none(), "waits for the new list");
    h.list(&configmaps(), live(&cm("a", "1")));
    assert!(h.class("new").is_none(), "not applied: nothing to report");

    h.apply(one(&cm("new", "1")));
    let new = h.entry("ConfigMap", "new").unwrap();
    assert_eq!(new.class, DriftClass::Uncommitted);
    assert_eq!((new.source.as_str(), new.revision), ("shop", 0));
    let revert = new.intent.unwrap().revert;
    assert!(
        revert.contains("`kubectl -n shop delete configmap new`"),
        "{revert}"
    );
    // Changed by someone else: no intent explains it, and nothing committed wants it.
    h.apply(one(&cm("new", "2")));
    assert!(h.class("new").is_none());
    h.apply(one(&cm("new", "1")));
    h.delete(one(&cm("new", "1")));
    assert!(h.class("new").is_none(), "reverted by deleting it");

    h.apply(one(&cm("new", "1")));
    h.engine.store.commit_intent(id, "ops").unwrap();
    h.reload();
    assert_eq!(
        h.class("new"),
        Some(DriftClass::InSync),
        "kept: live copy kept too"
    );
}

#[test]
fn a_first_deploy_of_a_new_source_that_died_is_uncommitted() {
    let mut h = Harness::start(&config());
    h.follow_clock();
    let id = h.begin("web", &cm("w", "1"), "ci", 600);
    assert_eq!(h.engine.watching.watches.log, ["start ConfigMap"]);
    h.list(&configmaps(), live(&cm("w", "1")));
    assert_eq!(h.class("w"), Some(DriftClass::Uncommitted));
    let counts = h.index.read().unwrap().intents().clone();
    assert_eq!(counts.get(&("web".to_string(), "pending")), Some(&1));

    h.engine
        .store
        .abort_intent(id, "ci", "not deployed")
        .unwrap();
    h.reload();
    assert!(h.class("w").is_none());
    assert_eq!(
        h.engine.watching.watches.log,
        ["start ConfigMap", "stop ConfigMap"],
        "nothing wants ConfigMaps any more"
    );
    let counts = h.index.read().unwrap().intents().clone();
    assert_eq!(
        counts.get(&("web".to_string(), "aborted")),
        Some(&1),
        "recent"
    );
    assert_eq!(counts.get(&("web".to_string(), "pending")), None);
}
