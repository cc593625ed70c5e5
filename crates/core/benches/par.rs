//! `driftd_core::par` against `rayon` on the workloads driftd hands to `par`, in one
//! process, interleaved round by round so both see the same machine load:
//! - `ordered`: a commit's canonical text and hash of every object (`par::map_ordered`, as
//!   the store's revisions and the manifest resolver call it);
//! - `owned`: owned objects serialized in threads of at least 256 items (`par::map_owned`,
//!   as the watchers repack kept copies);
//! - `consumed`: a burst of watch events compared by the differ, results consumed in input
//!   order (`par::map_consumed` with chunks of 16, as the engine judges events). The rayon
//!   side maps in parallel and then consumes in order, what a caller on rayon would write.
//!
//! Every round runs each workload once through each implementation, which one first
//! alternating, and prints both times; the end prints each one's median and the ratio
//! rayon / par (above 1: rayon slower), with the spread of the per-round ratios.
//!
//! Run: `cargo bench -p driftd-core --bench par` (ROUNDS=n to change the 15 rounds).

use driftd_core::diff::{ClusterFacts, CompareInput, Differ};
use driftd_core::par;
use rayon::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::hint::black_box;
use std::time::{Duration, Instant};

fn deployment(i: usize) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": format!("app-{i}"), "namespace": "team",
                     "labels": {"app": format!("app-{i}"), "tier": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": format!("app-{i}")}},
            "template": {
                "metadata": {"labels": {"app": format!("app-{i}")}},
                "spec": {"containers": [{
                    "name": "web",
                    "image": format!("registry.example/web:{}", i % 7),
                    "ports": [{"containerPort": 8080}],
                    "env": [{"name": "MODE", "value": "prod"}, {"name": "N", "value": i.to_string()}],
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}
                }]}
            }
        }
    })
}

/// The live side: the desired object as the server returns it, one image changed in a tenth.
fn live(i: usize) -> Value {
    let mut object = deployment(i);
    object["metadata"]["uid"] = json!(format!("uid-{i}"));
    object["metadata"]["resourceVersion"] = json!(i.to_string());
    if i.is_multiple_of(10) {
        object["spec"]["template"]["spec"]["containers"][0]["image"] =
            json!("registry.example/web:hand");
    }
    object
}

fn canonical_hash(object: &Value) -> [u8; 32] {
    Sha256::digest(serde_json::to_vec(object).expect("serializes")).into()
}

fn time<R>(f: impl FnOnce() -> R) -> Duration {
    let start = Instant::now();
    black_box(f());
    start.elapsed()
}

struct Workload {
    name: &'static str,
    par: Box<dyn Fn() -> Duration>,
    rayon: Box<dyn Fn() -> Duration>,
}

fn workloads() -> Vec<Workload> {
    let objects: &'static [Value] = Vec::leak((0..20_000).map(deployment).collect());
    let pairs: &'static [(Value, Value)] =
        Vec::leak((0..5_000).map(|i| (deployment(i), live(i))).collect());
    let differ: &'static Differ = Box::leak(Box::new(Differ::new(b"bench key")));
    let facts: &'static ClusterFacts = Box::leak(Box::new(ClusterFacts::default()));
    let compare = move |(desired, live): &(Value, Value)| {
        differ
            .compare(&CompareInput {
                desired,
                live: Some(live),
                previous: None,
                facts,
            })
            .changes
            .len()
    };
    vec![
        Workload {
            name: "ordered",
            par: Box::new(|| time(|| par::map_ordered(objects, canonical_hash))),
            rayon: Box::new(|| {
                time(|| {
                    objects
                        .par_iter()
                        .with_min_len(256)
                        .map(canonical_hash)
                        .collect::<Vec<_>>()
                })
            }),
        },
        Workload {
            name: "owned",
            // The copy is made outside the timing on both sides.
            par: Box::new(|| {
                let items = objects.to_vec();
                time(move || par::map_owned(items, 256, |o| serde_json::to_vec(&o).unwrap()))
            }),
            rayon: Box::new(|| {
                let items = objects.to_vec();
                time(move || {
                    items
                        .into_par_iter()
                        .with_min_len(256)
                        .map(|o| serde_json::to_vec(&o).unwrap())
                        .collect::<Vec<_>>()
                })
            }),
        },
        Workload {
            name: "consumed",
            par: Box::new(move || {
                let items: Vec<&(Value, Value)> = pairs.iter().collect();
                let mut sum = 0;
                let took = time(|| par::map_consumed(items, 16, compare, |n| sum += n));
                black_box(sum);
                took
            }),
            rayon: Box::new(move || {
                let items: Vec<&(Value, Value)> = pairs.iter().collect();
                let mut sum = 0;
                let took = time(|| {
                    items
                        .into_par_iter()
                        .with_min_len(16)
                        .map(compare)
                        .collect::<Vec<_>>()
                        .into_iter()
                        .for_each(|n| sum += n)
                });
                black_box(sum);
                took
            }),
        },
    ]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n % 2 {
        1 => values[n / 2],
        _ => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "threads available: {threads}; rayon pool: {}",
        rayon::current_num_threads()
    );
    let workloads = workloads();
    // One warm-up of each: thread pools started, allocator and caches settled.
    for w in &workloads {
        (w.par)();
        (w.rayon)();
    }
    let mut times: Vec<(Vec<f64>, Vec<f64>)> = vec![(vec![], vec![]); workloads.len()];
    for round in 0..rounds {
        let mut line = format!("round {round:2}:");
        for (w, (par_ms, rayon_ms)) in workloads.iter().zip(times.iter_mut()) {
            let (p, r) = if round % 2 == 0 {
                let p = (w.par)();
                (p, (w.rayon)())
            } else {
                let r = (w.rayon)();
                ((w.par)(), r)
            };
            let (p, r) = (p.as_secs_f64() * 1e3, r.as_secs_f64() * 1e3);
            par_ms.push(p);
            rayon_ms.push(r);
            line += &format!("  {} par {p:7.2} ms rayon {r:7.2} ms", w.name);
        }
        println!("{line}");
    }
    println!();
    for (w, (par_ms, rayon_ms)) in workloads.iter().zip(times) {
        let ratios: Vec<f64> = par_ms.iter().zip(&rayon_ms).map(|(p, r)| r / p).collect();
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        let (p, r) = (median(par_ms), median(rayon_ms));
        println!(
            "{:9} median par {p:7.2} ms  rayon {r:7.2} ms  rayon/par {:.3}  (per-round ratio median {:.3}, range {lo:.3}-{hi:.3})",
            w.name,
            r / p,
            median(ratios),
        );
    }
}
