//! How drift episodes end, as the engine derives it when they close, and what it tells its
//! outputs (episodes opened and closed, with their whole duration).

use super::*;
use driftd_store::{EpisodeEnd, EpisodeRecord, HistoryQuery};

/// ConfigMap `name` as the API server serves it after `writes`: (manager, time) in order,
/// each owning `data.k` (kube-apiserver moves a field to the manager that wrote it last;
/// the entries here keep their times so the newest is known).
fn written(name: &str, value: &str, writes: &[(&str, &str)]) -> Value {
    let data = json!({"f:data": {"f:k": {}}});
    let writes: Vec<(&str, &str, Value)> =
        writes.iter().map(|(m, t)| (*m, *t, data.clone())).collect();
    written_fields(name, value, &writes)
}

/// As [`written`], each write owning the fields it gives (FieldsV1).
fn written_fields(name: &str, value: &str, writes: &[(&str, &str, Value)]) -> Value {
    let mut object = one(&cm(name, value));
    object["metadata"]["managedFields"] = writes
        .iter()
        .map(|(manager, time, fields)| {
            json!({
                "manager": manager,
                "operation": "Update",
                "apiVersion": "v1",
                "time": time,
                "fieldsType": "FieldsV1",
                "fieldsV1": fields,
            })
        })
        .collect();
    object
}

impl Harness {
    fn history(&self) -> Vec<EpisodeRecord> {
        self.engine
            .store
            .episode_history(&HistoryQuery {
                limit: 100,
                ..Default::default()
            })
            .unwrap()
    }

    fn episodes_told(&self) -> Vec<String> {
        self.engine.outputs.episodes.clone()
    }
}

#[test]
fn a_revert_by_hand_ends_as_reverted_by_its_field_manager_with_who_changed_it() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "1")));
    h.apply(written(
        "a",
        "2",
        &[("kubectl-edit", "2026-11-30T10:00:00Z")],
    ));
    h.advance(SETTLE);
    assert_eq!(h.episodes_told(), ["opened shop/modified"]);
    h.advance(Duration::from_secs(55));
    h.apply(written(
        "a",
        "1",
        &[
            ("kubectl-edit", "2026-11-30T10:00:00Z"),
            ("kubectl-client-side-apply", "2026-11-30T10:01:00Z"),
        ],
    ));
    h.advance(SETTLE);
    // Drift seen at 10:00:00, its end settled 5 s after the revert at 10:01:00.
    assert_eq!(
        h.episodes_told(),
        ["opened shop/modified", "closed shop/modified 65s reverted"]
    );
    let record = &h.history()[0];
    assert_eq!(record.who.len(), 1);
    assert_eq!(record.who[0].manager, "kubectl-edit");
    assert_eq!(
        record.who[0].changed_at.as_deref(),
        Some("2026-11-30T10:00:00Z")
    );
    assert_eq!(record.ended, Some(EpisodeEnd::Reverted));
    assert_eq!(
        record.ended_by.as_deref(),
        Some("kubectl-client-side-apply")
    );
}

#[test]
fn a_controller_writing_elsewhere_after_the_revert_is_not_taken_for_the_reverter() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "1")));
    h.apply(written(
        "a",
        "2",
        &[("kubectl-edit", "2026-11-30T10:00:00Z")],
    ));
    h.advance(SETTLE);
    let data = json!({"f:data": {"f:k": {}}});
    // As the deployment controller annotates a Deployment it rolled out.
    let annotation = json!({"f:metadata": {"f:annotations": {"f:revision": {}}}});
    h.apply(written_fields(
        "a",
        "1",
        &[
            ("kubectl-edit", "2026-11-30T10:00:00Z", data.clone()),
            ("kubectl-client-side-apply", "2026-11-30T10:00:06Z", data),
            (
                "kube-controller-manager",
                "2026-11-30T10:00:07Z",
                annotation,
            ),
        ],
    ));
    h.advance(SETTLE);
    let record = &h.history()[0];
    assert_eq!(record.ended, Some(EpisodeEnd::Reverted));
    assert_eq!(
        record.ended_by.as_deref(),
        Some("kubectl-client-side-apply")
    );
}

#[test]
fn a_revert_written_by_driftd_is_reconciled() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "1")));
    h.apply(written(
        "a",
        "2",
        &[("kubectl-edit", "2026-11-30T10:00:00Z")],
    ));
    h.advance(SETTLE);
    h.apply(written(
        "a",
        "1",
        &[
            ("kubectl-edit", "2026-11-30T10:00:00Z"),
            ("driftd", "2026-11-30T10:00:07Z"),
        ],
    ));
    h.advance(SETTLE);
    let record = &h.history()[0];
    assert_eq!(record.ended, Some(EpisodeEnd::Reconciled));
    assert_eq!(record.ended_by.as_deref(), Some("driftd"));
}

#[test]
fn a_commit_of_what_is_live_ends_the_drift_as_committed() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "2")));
    h.advance(SETTLE);
    // The live value is accepted: committed, nothing changed live.
    h.commit("shop", &cm("a", "2"));
    assert_eq!(h.class("a"), Some(DriftClass::InSync));
    h.advance(SETTLE);
    assert_eq!(
        h.episodes_told(),
        ["opened shop/modified", "closed shop/modified 10s committed"]
    );
    let record = &h.history()[0];
    assert_eq!(record.ended, Some(EpisodeEnd::Committed));
    // test_support::commit commits as author "test".
    assert_eq!(
        record.ended_by.as_deref(),
        Some("test"),
        "the revision's author"
    );
}

#[test]
fn a_drifting_object_deleted_live_ends_as_deleted_and_a_missing_episode_begins() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "2")));
    h.advance(SETTLE);
    h.delete(one(&cm("a", "2")));
    h.advance(SETTLE);
    // The modified episode ends when the missing one begins: at the deletion, 5 s in.
    assert_eq!(
        h.episodes_told(),
        [
            "opened shop/modified",
            "closed shop/modified 5s deleted",
            "opened shop/missing"
        ]
    );
}

#[test]
fn an_object_removed_from_its_source_ends_as_no_longer_desired() {
    let mut h = Harness::start_with(&config(), &(cm("a", "1") + &cm("b", "1")));
    h.list(&configmaps(), live(&(cm("a", "1") + &cm("b", "2"))));
    h.advance(SETTLE);
    h.commit("shop", &cm("a", "1"));
    let ended: Vec<_> = h
        .history()
        .iter()
        .map(|r| (r.object.name.clone(), r.ended))
        .collect();
    assert_eq!(
        ended,
        [("b".to_string(), Some(EpisodeEnd::NoLongerDesired))]
    );
}

#[test]
fn an_episode_an_earlier_run_opened_is_told_closed_with_its_whole_duration() {
    let mut h = Harness::start_with(&config(), &cm("a", "1"));
    h.list(&configmaps(), live(&cm("a", "2")));
    h.advance(SETTLE);
    // Restarted an hour later; the drift ends then.
    let mut h = Harness::new(h.engine.store, &config(), "2026-11-30T11:00:00Z");
    h.load();
    h.list(&configmaps(), live(&cm("a", "1")));
    h.advance(SETTLE);
    assert_eq!(
        h.episodes_told(),
        ["closed shop/modified 3605s reverted"],
        "from 10:00:00, when the first run saw it, to 11:00:05"
    );
}
