//! Fuzzing the differ and JSON Pointer handling on stable Rust. The differ must never panic
//! whatever the two sides hold, and every object the manifest reader accepts from the
//! near-valid generator is in sync with itself as the simulator stores it. Pointers round
//! trip through escaping for any field name.
//!
//! The second is a consistency check, not a fidelity one: the simulator's
//! `server_defaults` and the differ share the knowledge crate's defaulting table, so a
//! default wrong in both passes. What pins the table to kube-apiserver is the ported
//! `defaults_test.go` cases (`driftd_k8s::defaults`'s oracle) and the property tests
//! (`proptests`), whose live objects are written without the table.
//!
//! A short run by default; `DRIFTD_FUZZ_CASES=100000 cargo test --release -p driftd-core
//! fuzz_` for a long one. Failures are kept in `proptest-regressions/` and replayed first.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::pointer::{self, Seg, Side};
use super::{ClusterFacts, CompareInput, Differ, DriftClass};
use crate::manifest::fuzz::valid_objects;
use crate::manifest::{read_text, LoadOptions};
use driftd_k8s::testing::{any_json, fuzz_config};

/// An object of a kind the differ treats specially, with arbitrary content.
fn object(body: Value) -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
        ("autoscaling/v2", "HorizontalPodAutoscaler"),
        ("example.com/v1", "Widget"),
    ])
    .prop_map(move |(api_version, kind)| {
        let mut o = json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": "x", "namespace": "default"}});
        if let Value::Object(extra) = &body {
            for (k, v) in extra {
                o[k] = v.clone();
            }
        }
        o
    })
}

fn compare(desired: &Value, live: Option<&Value>, previous: Option<&Value>) -> super::Comparison {
    Differ::new(b"fuzz").compare(&CompareInput {
        desired,
        live,
        previous,
        facts: &ClusterFacts::default(),
    })
}

proptest! {
    #![proptest_config(fuzz_config(256))]

    #[test]
    fn fuzz_differ_never_panics(
        d in any_json().prop_flat_map(object),
        l in any_json().prop_flat_map(object),
        p in proptest::option::of(any_json().prop_flat_map(object)),
        raw in any::<bool>(),
    ) {
        if raw {
            // Not even objects: the differ is handed whatever a watch could deliver.
            let _ = compare(&d["spec"], Some(&l["spec"]), None);
        }
        let c = compare(&d, Some(&l), p.as_ref());
        for change in &c.changes {
            prop_assert!(change.path.is_empty() || change.path.starts_with('/'));
        }
        let _ = compare(&d, None, p.as_ref());
    }

    /// Consistency of the differ with the simulator's store (see the module doc).
    #[test]
    fn fuzz_accepted_objects_are_in_sync_with_themselves_as_stored(
        picks in prop::collection::vec(0usize..9, 1..4),
        edits in prop::collection::vec((0usize..4, "[a-z]{1,8}", any_json()), 0..3),
    ) {
        let all = valid_objects();
        let mut objects: Vec<Value> = picks.iter().map(|&i| all[i].clone()).collect();
        // New fields anywhere at the top level of the spec (what a CR or a newer API has).
        for (target, key, value) in &edits {
            let n = objects.len();
            if let Some(spec) = objects[target % n].get_mut("spec").and_then(Value::as_object_mut) {
                spec.insert(key.clone(), value.clone());
            }
        }
        let text = objects.iter().map(|o| o.to_string()).collect::<Vec<_>>().join("\n");
        let loaded = read_text(&text, "fuzz.json", &LoadOptions::default());
        prop_assume!(loaded.is_ok(), "an edit made the input invalid");
        let loaded = loaded.unwrap();
        let mut facts = ClusterFacts::default();
        facts.add_crds(loaded.objects.iter().map(|o| &o.object));
        for o in &loaded.objects {
            let mut live = o.object.clone();
            let api_version = o.api_version.clone();
            driftd_sim::server_defaults::as_created(&api_version, &o.key.kind, &mut live);
            let c = Differ::new(b"fuzz").compare(&CompareInput {
                desired: &o.object,
                live: Some(&live),
                previous: None,
                facts: &facts,
            });
            prop_assert_eq!(c.class, DriftClass::InSync, "{} {:?}", o.key, c.changes);
        }
    }

    #[test]
    fn fuzz_pointer_escaping_round_trips(
        names in prop::collection::vec(".{0,12}", 0..6),
        items in prop::collection::vec(proptest::option::of(0usize..50), 0..6),
    ) {
        for name in &names {
            prop_assert_eq!(&pointer::unescape(&pointer::escape(name)), name);
            prop_assert!(!pointer::escape(name).contains('/'));
        }
        let mut segs: Vec<Seg> = names.iter().cloned().map(Seg::Field).collect();
        for (i, index) in items.iter().enumerate() {
            segs.insert(i.min(segs.len()), Seg::Item { desired: *index, live: *index, key: None });
        }
        let p = pointer::pointer(&segs, Side::Live);
        // One `/`-separated token per segment, each unescaping to its field name.
        let tokens: Vec<String> = p.split('/').skip(1).map(pointer::unescape).collect();
        prop_assert_eq!(tokens.len(), segs.len(), "{}", p);
        for (token, seg) in tokens.iter().zip(&segs) {
            match seg {
                Seg::Field(name) => prop_assert_eq!(token, name),
                Seg::Item { live, .. } => prop_assert_eq!(token, &live.unwrap_or(0).to_string()),
            }
        }
        let _ = pointer::display(&segs);
    }
}
