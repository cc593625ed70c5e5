//! What `/drift` costs as the drift index grows: the first page of the default size (what
//! `driftd bench` reports as `drift_query_ms`), the page after it (served from the first
//! page's snapshot), and the whole list at once (what `/drift` answered before it paged),
//! each including the JSON encoding of the answer. No HTTP and no engine: the index filled
//! directly, so the figures are the index's and the encoder's alone.
//!
//! Run with `cargo bench --bench drift_page` (default N = 100000 and 1000000), or
//! `cargo bench --bench drift_page -- 1000000`. For each N, 5% of the objects drift (the
//! mix's share, as in `driftd bench`), each with one changed image and its patch; the three
//! measurements are interleaved over several rounds and their medians printed with the
//! ratio of the whole list to the first page.

use driftd_core::report::{DriftEntry, DriftFilter};
use driftd_engine::{DriftIndex, DEFAULT_PAGE_SIZE};
use driftd_k8s::ObjectKey;
use serde_json::json;
use std::time::Instant;

const ROUNDS: usize = 7;

fn entry(i: usize, drifting: bool) -> (ObjectKey, DriftEntry) {
    let namespace = format!("team-{:03}", i % 500);
    let name = format!("web-{i:07}");
    let mut value = json!({
        "source": format!("shop-{}", i % 20),
        "revision": 3,
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": namespace,
        "name": name,
        "class": "in_sync",
        "changes": [],
    });
    if drifting {
        value["class"] = json!("modified");
        value["since"] = json!("2026-11-28T16:42:07Z");
        value["changes"] = json!([{
            "path": "/spec/template/spec/containers/0/image",
            "op": "replace",
            "desired": "registry.example.com/shop/web:2.4.1",
            "live": "registry.example.com/shop/web:2.5.0-hotfix",
            "field": "spec.template.spec.containers[name=web].image",
            "manager": "kubectl-set",
            "changed_at": "2026-11-28T16:42:07Z",
        }]);
        value["patch"] = json!([{
            "op": "replace",
            "path": "/spec/template/spec/containers/0/image",
            "value": "registry.example.com/shop/web:2.4.1",
        }]);
    }
    let entry: DriftEntry = serde_json::from_value(value).expect("a valid drift entry");
    let key = ObjectKey {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: Some(namespace),
        name,
    };
    (key, entry)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let counts: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let counts = if counts.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        counts
    };
    println!(
        "{:>9} {:>8} {:>14} {:>13} {:>15} {:>8}",
        "objects", "drifting", "first_page_ms", "next_page_ms", "whole_list_ms", "ratio"
    );
    for n in counts {
        let mut index = DriftIndex::new(10_000);
        let mut drifting = 0;
        for i in 0..n {
            let drifts = i % 20 == 0;
            drifting += usize::from(drifts);
            let (key, entry) = entry(i, drifts);
            index.upsert(key, entry);
        }
        index.set_ready(true);
        let filter = DriftFilter::default();
        let (mut first, mut next, mut whole) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            let start = Instant::now();
            let page = index
                .page(&filter, DEFAULT_PAGE_SIZE, None, Instant::now())
                .expect("a first page");
            let body = serde_json::to_vec(&page.objects).unwrap();
            first.push(ms(start));
            assert_eq!(page.objects.len(), DEFAULT_PAGE_SIZE.min(drifting));
            assert!(!body.is_empty());

            // One page holds everything below the default size: no next page to time.
            if let Some(token) = page.continue_token {
                let start = Instant::now();
                let page = index
                    .page(&filter, DEFAULT_PAGE_SIZE, Some(&token), Instant::now())
                    .expect("the next page");
                let body = serde_json::to_vec(&page.objects).unwrap();
                next.push(ms(start));
                assert!(!body.is_empty());
            }

            let start = Instant::now();
            let all = index.query(&filter);
            let body = serde_json::to_vec(&all).unwrap();
            whole.push(ms(start));
            assert_eq!(all.len(), drifting);
            assert!(!body.is_empty());
        }
        let (first, whole) = (median(first), median(whole));
        let next = if next.is_empty() {
            f64::NAN
        } else {
            median(next)
        };
        println!(
            "{n:>9} {drifting:>8} {first:>14.1} {next:>13.2} {whole:>15.1} {:>7.1}x",
            whole / first
        );
    }
}
