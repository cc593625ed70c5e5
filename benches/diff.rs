//! How much `Differ::compare` costs per watch event, next to the cheapest things a differ could
//! do instead: `json_patch::diff` of the two objects, and plain `serde_json` equality (of the
//! live object with an identical copy, so that every field is visited).
//!
//! Then the desired side's normalization alone (`Differ::prepare`: kube-apiserver's defaults
//! and the other rules that make the committed form), with its share of each comparison.
//!
//! Run with `cargo bench --bench diff` (add words to keep only cases whose name contains one
//! of them). Plain `Instant` loops with a warm-up; prints ns/op and the ratio to each baseline.
//!
//! Live objects are built the way the simulator (and kube-apiserver) store them: the
//! committed object as `kubectl apply` sends it, with the last-applied annotation, API
//! defaults, identity metadata, managedFields of the client and of the controller, and status.

use driftd_core::diff::{ClusterFacts, CompareInput, Differ, DriftClass};
use driftd_sim::fields;
use driftd_sim::server_defaults;
use serde_json::{json, Value};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

const WARM_UP: Duration = Duration::from_millis(300);
const MEASURE: Duration = Duration::from_secs(1);

/// The example app's Deployment, exactly as `driftd commit` stores it.
fn example_deployment() -> Value {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/app/20-web.yaml");
    let objects = driftd_core::manifest::load(&[file], &Default::default())
        .unwrap_or_else(|e| panic!("example app: {e}"));
    objects
        .objects
        .into_iter()
        .find(|o| o.key.kind == "Deployment")
        .expect("the example app has a Deployment")
        .object
}

fn write<'a>(manager: &'a str, subresource: Option<&'a str>, time: &'a str) -> fields::Write<'a> {
    fields::Write {
        manager,
        subresource,
        api_version: "apps/v1",
        time,
    }
}

/// `desired` as the cluster holds it after `kubectl apply` and one controller sync.
fn live_of(desired: &Value) -> Value {
    let mut live = desired.clone();
    live["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": format!("{desired}\n"),
    });
    server_defaults::as_created("apps/v1", "Deployment", &mut live);
    let md = live["metadata"].as_object_mut().unwrap();
    md.insert("uid".into(), json!("6f1c7c1e-3a8e-4d0b-9d55-3f0b3c1e9a42"));
    md.insert("resourceVersion".into(), json!("48213"));
    md.insert("generation".into(), json!(1));
    md.insert("creationTimestamp".into(), json!("2026-11-30T05:00:00Z"));
    let t0 = "2026-11-30T05:00:00Z";
    fields::record(
        "Deployment",
        None,
        &mut live,
        &write("kubectl-client-side-apply", None, t0),
    );

    // The deployment controller: revision annotation on the object, then status.
    let before = live.clone();
    live["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!("1");
    fields::record(
        "Deployment",
        Some(&before),
        &mut live,
        &write("kube-controller-manager", None, t0),
    );
    let before = live.clone();
    let replicas = live["spec"]["replicas"].clone();
    live["status"] = json!({
        "observedGeneration": 1,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability.",
             "lastUpdateTime": t0, "lastTransitionTime": t0},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet \"web-7d4b9c8f6d\" has successfully progressed.",
             "lastUpdateTime": t0, "lastTransitionTime": t0},
        ],
    });
    fields::record(
        "Deployment",
        Some(&before),
        &mut live,
        &write("kube-controller-manager", Some("status"), t0),
    );
    live
}

/// `live` after `kubectl set image` (a hand edit, recorded in managedFields).
fn hand_edited(live: &Value) -> Value {
    edited_by_hand(live, None)
}

/// `live` after `kubectl set image` and, if `env_step` is given, `kubectl set env` of every
/// `env_step`-th literal variable: one hand edit recorded in managedFields, with as many
/// changes inside the keyed `env` list as the list is long / `env_step`.
fn edited_by_hand(live: &Value, env_step: Option<usize>) -> Value {
    let mut edited = live.clone();
    let container = &mut edited["spec"]["template"]["spec"]["containers"][0];
    container["image"] = json!("nginx:1.28");
    if let (Some(step), Some(env)) = (env_step, container["env"].as_array_mut()) {
        for (i, var) in env
            .iter_mut()
            .filter(|v| v.get("value").is_some())
            .enumerate()
        {
            if i % step == 0 {
                var["value"] = json!(format!("edited-{i}"));
            }
        }
    }
    edited["metadata"]["generation"] = json!(2);
    edited["metadata"]["resourceVersion"] = json!("48290");
    fields::record(
        "Deployment",
        Some(live),
        &mut edited,
        &write("kubectl-set", None, "2026-11-30T05:10:00Z"),
    );
    edited
}

/// The example Deployment with `n` literal environment variables in its container.
fn with_env(desired: &Value, n: usize) -> Value {
    let mut big = desired.clone();
    let env = big["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array_mut()
        .unwrap();
    for i in 0..n {
        env.push(json!({"name": format!("SETTING_{i:04}"), "value": format!("value-{i}")}));
    }
    big
}

/// Nanoseconds per call of `f`: warm up, then call in batches for [`MEASURE`]. With
/// `DIFF_BENCH_CALLS=n` set, exactly `n` calls and no warm-up instead, so that an instruction
/// count (`valgrind --tool=callgrind`), immune to the noise of a shared machine, divides by
/// a known number of calls.
fn ns_per_op<R>(mut f: impl FnMut() -> R) -> f64 {
    if let Some(n) = std::env::var("DIFF_BENCH_CALLS")
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| *n > 0)
    {
        let started = Instant::now();
        for _ in 0..n {
            black_box(f());
        }
        return started.elapsed().as_nanos() as f64 / f64::from(n);
    }
    let started = Instant::now();
    while started.elapsed() < WARM_UP {
        black_box(f());
    }
    let mut calls = 0u64;
    let started = Instant::now();
    while started.elapsed() < MEASURE {
        for _ in 0..16 {
            black_box(f());
        }
        calls += 16;
    }
    started.elapsed().as_nanos() as f64 / calls as f64
}

/// Env list lengths of the scaling cases: each 4x the last, so linear cost grows ~4x a step.
const SIZES: [usize; 4] = [50, 200, 800, 3200];
/// One in this many literal env vars is edited by hand in the "edited" scaling cases.
const ENV_STEP: usize = 10;

struct Case {
    name: String,
    /// (scenario, env vars) for the scaling cases, whose growth is printed at the end.
    scaling: Option<(&'static str, usize)>,
    desired: Value,
    live: Value,
    expect: DriftClass,
}

fn main() {
    // With `harness = false` cargo passes `--bench`; other words filter the cases.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let desired = example_deployment();
    let live = live_of(&desired);
    let mut cases = vec![
        Case {
            name: "example Deployment, in sync".into(),
            scaling: None,
            desired: desired.clone(),
            live: live.clone(),
            expect: DriftClass::InSync,
        },
        Case {
            name: "example Deployment, image edited by hand".into(),
            scaling: None,
            live: hand_edited(&live),
            desired: desired.clone(),
            expect: DriftClass::Modified,
        },
    ];
    for n in SIZES {
        let big = with_env(&desired, n);
        let big_live = live_of(&big);
        cases.push(Case {
            name: format!("Deployment with {n} env vars, in sync"),
            scaling: Some(("in sync", n)),
            live: big_live.clone(),
            desired: big.clone(),
            expect: DriftClass::InSync,
        });
        cases.push(Case {
            name: format!("Deployment with {n} env vars, image + 1/{ENV_STEP} env edited"),
            scaling: Some(("edited", n)),
            live: edited_by_hand(&big_live, Some(ENV_STEP)),
            desired: big,
            expect: DriftClass::Modified,
        });
    }

    let differ = Differ::new(b"benchmark installation key, 32+ bytes long");
    let facts = ClusterFacts::default();
    println!(
        "{:<56} {:>12} {:>14} {:>10} {:>10} {:>10}",
        "case", "compare ns", "json-patch ns", "x patch", "eq ns", "x eq"
    );
    // (scenario, env vars, compare ns, json-patch ns) of the scaling cases run.
    let mut scaling = Vec::new();
    // (case, prepare ns, compare ns): the desired side's normalization within a comparison.
    let mut normalizing = Vec::new();
    for case in cases {
        if !filters.is_empty() && !filters.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        let input = CompareInput {
            desired: &case.desired,
            live: Some(&case.live),
            previous: None,
            facts: &facts,
        };
        // A timing of a wrong answer means nothing: say so next to the figures.
        let result = differ.compare(&input);
        if result.class != case.expect {
            let paths: Vec<&str> = result.changes.iter().map(|c| c.path.as_str()).collect();
            eprintln!(
                "warning: {}: expected {}, compare says {} at {paths:?}",
                case.name,
                case.expect.as_str(),
                result.class.as_str()
            );
        }
        let compare = ns_per_op(|| differ.compare(black_box(&input)));
        let patch = ns_per_op(|| json_patch::diff(black_box(&case.desired), black_box(&case.live)));
        // desired == live fails at the first key count; comparing live with an identical copy
        // walks the whole object, the fair floor for "look at every field once".
        let copy = case.live.clone();
        let equal = ns_per_op(|| black_box(&case.live) == black_box(&copy));
        println!(
            "{:<56} {:>12.0} {:>14.0} {:>10.2} {:>10.0} {:>10.1}",
            case.name,
            compare,
            patch,
            compare / patch,
            equal,
            compare / equal
        );
        if let Some((scenario, n)) = case.scaling {
            scaling.push((scenario, n, compare, patch));
        }
        let prepare = ns_per_op(|| Differ::prepare(black_box(&case.desired), None));
        normalizing.push((case.name, prepare, compare));
    }

    // Normalizing the desired side (API defaults, Secret `stringData` folded, null
    // creationTimestamps dropped) is part of every comparison: its own figure and share.
    if !normalizing.is_empty() {
        println!();
        println!(
            "{:<56} {:>12} {:>14}",
            "normalize the desired object", "prepare ns", "of compare"
        );
        for (name, prepare, compare) in normalizing {
            println!(
                "{name:<56} {prepare:>12.0} {:>13.0}%",
                100.0 * prepare / compare
            );
        }
    }

    // Growth between consecutive sizes: linear cost grows by the size ratio (4x), and
    // json-patch (linear by construction) measured in the same run is the yardstick.
    if scaling.is_empty() {
        return;
    }
    println!();
    println!(
        "{:<30} {:>12} {:>14} {:>16}",
        "growth (env vars)", "compare x", "json-patch x", "compare/patch"
    );
    for (i, &(scenario, n, compare, patch)) in scaling.iter().enumerate() {
        let Some(&(_, m, c0, p0)) = scaling[..i]
            .iter()
            .rev()
            .find(|(s, m, _, _)| *s == scenario && *m < n)
        else {
            continue;
        };
        println!(
            "{:<30} {:>12.2} {:>14.2} {:>16.2}",
            format!("{scenario} {m} -> {n}"),
            compare / c0,
            patch / p0,
            (compare / c0) / (patch / p0)
        );
    }
}
