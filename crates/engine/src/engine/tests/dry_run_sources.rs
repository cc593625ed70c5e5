//! `compare = "dry-run"` sources: objects judged against the server's dry-run answer once it
//! came (asked once per revision, again when a drift verdict would rest on an answer for an
//! older live version, and every refresh period); a refused dry run is `rejected`, a failed
//! one leaves the judgement as it was; Secrets stay on the static model.

use super::*;
use crate::dry_run_answers::{DryRunAnswer, DryRunOutcome, DryRunRequest};
use driftd_config::{Compare, SourceConfig};

const REFRESH: Duration = Duration::from_secs(60);

fn dry_run_config() -> Config {
    let mut c = config();
    c.sources = vec![SourceConfig {
        name: "shop".into(),
        compare: Compare::DryRun,
        remediation: Default::default(),
    }];
    c.dry_run.refresh_seconds = REFRESH.as_secs_f64();
    c
}

/// What a webhook makes of ConfigMap `a`: `data.k` rewritten to `mutated`, as live holds it
/// at `rv`.
fn mutated(rv: &str, value: &str) -> Value {
    let mut o = one(&cm("a", value));
    o["metadata"]["resourceVersion"] = json!(rv);
    o
}

fn secret() -> String {
    "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: shop}\nstringData: {p: hunter2}\n---\n".into()
}

struct DryRunHarness {
    h: Harness,
    requests: mpsc::UnboundedReceiver<DryRunRequest>,
}

impl DryRunHarness {
    fn start(yaml: &str) -> DryRunHarness {
        let mut store = Store::open_in_memory().unwrap();
        commit(&mut store, "shop", yaml);
        let mut h = Harness::new(store, &dry_run_config(), "2026-11-30T10:00:00Z");
        let (requests, inbox) = mpsc::unbounded_channel();
        let (_answers, answers) = mpsc::unbounded_channel();
        h.engine.set_dry_run(requests, answers);
        h.load();
        DryRunHarness { h, requests: inbox }
    }

    /// The requests sent since the last call: (name, revision, manifest's `data.k`).
    fn asked(&mut self) -> Vec<(String, i64, Value)> {
        let mut out = Vec::new();
        while let Ok(r) = self.requests.try_recv() {
            out.push((r.key.name, r.revision, r.manifest["data"]["k"].clone()));
        }
        out
    }

    fn answer(&mut self, revision: i64, outcome: DryRunOutcome) {
        let key = crate::test_support::configmap("shop", "a");
        self.h.engine.dry_run_answered(DryRunAnswer {
            key,
            revision,
            outcome,
        });
    }
}

#[test]
fn a_webhook_mutated_object_is_in_sync_against_the_dry_run_and_hand_edits_still_drift() {
    // The static model reports what the webhook did as drift.
    let mut plain = Harness::start_with(&config(), &cm("a", "1"));
    plain.list(&configmaps(), vec![mutated("5", "1-mutated")]);
    assert_eq!(plain.class("a"), Some(DriftClass::Modified));

    let mut d = DryRunHarness::start(&(cm("a", "1") + &secret()));
    assert!(
        d.asked().is_empty(),
        "nothing asked before the kind is listed"
    );
    d.h.list(&configmaps(), vec![mutated("5", "1-mutated")]);
    assert_eq!(d.asked(), [("a".to_string(), 1, json!("1"))]);
    assert_eq!(d.h.class("a"), None, "no verdict before the answer");

    d.answer(1, DryRunOutcome::Expected(mutated("5", "1-mutated")));
    let entry = d.h.entry("ConfigMap", "a").unwrap();
    assert_eq!(entry.class, DriftClass::InSync);
    assert_eq!(entry.dry_run.as_ref().unwrap().state, "expected");

    // A Secret of the source stays on the static model: never sent anywhere.
    let live_secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        "metadata": {"name": "s", "namespace": "shop", "resourceVersion": "3"},
        "data": {"p": "aHVudGVyMg=="}});
    d.h.list(&kind("v1", "Secret"), vec![live_secret]);
    assert_eq!(
        d.h.entry("Secret", "s")
            .map(|e| (e.class, e.dry_run.is_none())),
        Some((DriftClass::InSync, true))
    );
    assert!(d.asked().is_empty());

    // A hand edit: the answer was made against version 5, so the drift it shows is checked
    // with a fresh dry run first; meanwhile the object keeps its verdict.
    d.h.apply(mutated("6", "hand"));
    assert_eq!(d.asked(), [("a".to_string(), 1, json!("1"))]);
    assert_eq!(d.h.class("a"), Some(DriftClass::InSync));
    d.answer(1, DryRunOutcome::Expected(mutated("6", "1-mutated")));
    let entry = d.h.entry("ConfigMap", "a").unwrap();
    assert_eq!(entry.class, DriftClass::Modified);
    assert_eq!(paths(&entry), ["/data/k"]);
    assert_eq!(entry.changes.to_vec()[0].desired, Some(json!("1-mutated")));

    // Refreshed every period even when nothing changed.
    d.h.clock.advance(REFRESH);
    d.h.engine.refresh_dry_runs();
    assert_eq!(d.asked().len(), 1);
    // A failed request keeps the verdict and says why.
    d.answer(1, DryRunOutcome::Failed("connection refused".into()));
    let entry = d.h.entry("ConfigMap", "a").unwrap();
    assert_eq!(entry.class, DriftClass::Modified);
    let note = entry.dry_run.unwrap();
    assert_eq!(
        (note.state.as_str(), note.message.as_deref()),
        ("error", Some("connection refused"))
    );
    d.h.clock.advance(crate::dry_run_answers::RETRY);
    d.h.engine.refresh_dry_runs();
    assert_eq!(d.asked().len(), 1, "asked again after the retry delay");
}

#[test]
fn a_rejected_dry_run_is_a_finding_with_the_servers_message_and_old_answers_are_dropped() {
    let mut d = DryRunHarness::start(&cm("a", "1"));
    d.h.list(&configmaps(), vec![mutated("5", "1")]);
    assert_eq!(d.asked().len(), 1);
    d.h.commit("shop", &cm("a", "2"));
    assert_eq!(d.asked(), [("a".to_string(), 2, json!("2"))]);
    // The first revision's answer comes late: it judges nothing.
    d.answer(1, DryRunOutcome::Expected(mutated("5", "1")));
    assert_eq!(d.h.class("a"), None);

    let message = "admission webhook \"policy.example.com\" denied the request: k must be 1";
    d.answer(2, DryRunOutcome::Rejected(message.into()));
    let entry = d.h.entry("ConfigMap", "a").unwrap();
    assert_eq!(entry.class, DriftClass::Rejected);
    assert!(entry.changes.is_empty());
    assert_eq!(entry.dry_run.unwrap().message.as_deref(), Some(message));
    let body = serde_json::to_value(d.h.entry("ConfigMap", "a").unwrap()).unwrap();
    assert_eq!(body["class"], "rejected");
    assert_eq!(body["dry_run"]["state"], "rejected");
}
