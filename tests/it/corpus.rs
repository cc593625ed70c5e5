//! The golden corpus of the differ (tests/corpus/, described in tests/corpus/README.md).
//!
//! * `corpus_cases_match_the_differ` runs the real `driftd check` on every case and demands
//!   exactly the expected class and set of (path, op): zero false positives, zero false
//!   negatives, and no Secret value anywhere in the output.
//! * `managed_fields::live_managed_fields_follow_the_field_manager_model` keeps the hand-built
//!   `managedFields` (where `manager` and `changed_at` come from) consistent with how
//!   kube-apiserver's field manager records writes.
//! * `in_sync_live_objects_agree_with_server_defaults` checks the corpus against the
//!   simulator's defaulting: every field a live object of an in-sync case has beyond the
//!   manifest must be produced by `sim::defaults` (or be listed as set by someone else).
//! * `corpus_is_well_formed` keeps the corpus itself honest: size, balance, coverage, and
//!   every expected path resolving where it claims to point.

mod managed_fields;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64::Engine as _;
use driftd_core::manifest::{self, LoadOptions};
use driftd_k8s::defaults;
use driftd_k8s::{merge_keys, ObjectKey};
use serde_json::Value;

struct Case {
    name: String,
    dir: PathBuf,
    desired_text: String,
    live: Value,
    expected: Value,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn load_cases() -> Vec<Case> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("tests/corpus exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let read = |f: &str| {
                std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{name}/{f}: {e}"))
            };
            let parse = |f: &str| -> Value {
                serde_json::from_str(&read(f)).unwrap_or_else(|e| panic!("{name}/{f}: {e}"))
            };
            Case {
                desired_text: read("desired.yaml"),
                live: parse("live.json"),
                expected: parse("expected.json"),
                name,
                dir,
            }
        })
        .collect()
}

fn desired_objects(case: &Case) -> Vec<manifest::ManifestObject> {
    manifest::parse_text(&case.desired_text, "desired.yaml", &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

fn live_items(live: &Value) -> Vec<&Value> {
    if live["kind"] == "List" {
        live["items"].as_array().unwrap().iter().collect()
    } else {
        vec![live]
    }
}

fn expected_changes(expected: &Value) -> BTreeSet<(String, String)> {
    expected["changes"]
        .as_array()
        .expect("changes is a list")
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap().to_string(),
                c["op"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every value a Secret in the case carries, plain and base64, that output must never show.
fn secret_values(case: &Case) -> Vec<String> {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut out = Vec::new();
    let mut collect = |obj: &Value| {
        if obj["kind"] != "Secret" {
            return;
        }
        for field in ["data", "stringData"] {
            for v in obj[field].as_object().into_iter().flat_map(|m| m.values()) {
                let Some(s) = v.as_str() else { continue };
                out.push(s.to_string());
                if let Ok(plain) = engine.decode(s) {
                    if let Ok(plain) = String::from_utf8(plain) {
                        out.push(plain);
                    }
                } else {
                    out.push(engine.encode(s));
                }
            }
        }
    };
    for d in desired_objects(case) {
        collect(&d.object);
    }
    for l in live_items(&case.live) {
        collect(l);
    }
    // Short values ("true", "yes") could appear legitimately elsewhere in the output.
    out.retain(|s| s.len() >= 6);
    out
}

#[test]
fn corpus_cases_match_the_differ() {
    let cases = load_cases();
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = run_case(case) {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus cases failed:\n  {}",
        failures.len(),
        cases.len(),
        failures.join("\n  ")
    );
}

fn run_case(case: &Case) -> Result<(), String> {
    let output = Command::new(env!("CARGO_BIN_EXE_driftd"))
        .arg("check")
        .arg("--desired")
        .arg(case.dir.join("desired.yaml"))
        .arg("--live")
        .arg(case.dir.join("live.json"))
        .args(["--format", "json"])
        .output()
        .map_err(|e| format!("cannot run driftd: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for secret in secret_values(case) {
        if stdout.contains(&secret) || stderr.contains(&secret) {
            return Err("a Secret value appears in the output".into());
        }
    }
    let class = case.expected["class"].as_str().unwrap();
    let want_code = if class == "in_sync" { 0 } else { 1 };
    let code = output.status.code();
    if code != Some(want_code) {
        return Err(format!(
            "exit code {code:?}, want {want_code}; stderr: {}",
            stderr.trim()
        ));
    }
    let report: Value = serde_json::from_str(&stdout)
        .map_err(|e| format!("stdout is not JSON ({e}): {}", stdout.trim()))?;
    let objects = report["objects"]
        .as_array()
        .ok_or_else(|| format!("no \"objects\" list in {report}"))?;
    if class == "in_sync" {
        if !objects.is_empty() {
            let found: Vec<String> = objects
                .iter()
                .map(|o| format!("{} {}: {}", o["kind"], o["name"], o["changes"]))
                .collect();
            return Err(format!("false positive: {}", found.join("; ")));
        }
        return Ok(());
    }
    let [object] = objects.as_slice() else {
        return Err(format!(
            "want exactly one drifting object, got {}",
            objects.len()
        ));
    };
    if object["class"] != class {
        return Err(format!("class {}, want {class}", object["class"]));
    }
    let got: BTreeSet<(String, String)> = object["changes"]
        .as_array()
        .ok_or("object has no changes list")?
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap_or("?").to_string(),
                c["op"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let want = expected_changes(&case.expected);
    if got != want {
        let extra: Vec<_> = got.difference(&want).collect();
        let missing: Vec<_> = want.difference(&got).collect();
        return Err(format!(
            "changes differ: unexpected {extra:?}, missing {missing:?}"
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------------------------
// Consistency of the corpus with src/sim/defaults.rs

/// Live fields that kube-apiserver's defaulting does not produce: identity and bookkeeping
/// the server, controllers and admission plugins write (RFC 6901 pointers, prefixes).
const NOT_DEFAULTS: &[&str] = &[
    "/metadata/uid",
    "/metadata/resourceVersion",
    "/metadata/generation",
    "/metadata/creationTimestamp",
    "/metadata/managedFields",
    "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration",
    "/metadata/annotations/deployment.kubernetes.io~1revision",
    "/metadata/annotations/pv.kubernetes.io~1bind-completed",
    "/metadata/annotations/pv.kubernetes.io~1bound-by-controller",
    "/metadata/annotations/volume.beta.kubernetes.io~1storage-provisioner",
    "/metadata/annotations/volume.kubernetes.io~1storage-provisioner",
    "/metadata/finalizers",   // kubernetes.io/pvc-protection, by admission
    "/status",                // controllers
    "/spec/volumeName",       // PV binder
    "/spec/storageClassName", // DefaultStorageClass admission (when not committed)
];

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Copies what kube-apiserver allocates (uid, clusterIPs, node ports) from `live`, so the
/// defaulted object is comparable: these are unique per cluster, not derivable.
fn with_allocations(desired: &Value, live: &Value) -> Value {
    let mut d = desired.clone();
    if let Some(uid) = live["metadata"]["uid"].as_str() {
        d["metadata"]["uid"] = Value::from(uid);
    }
    if live["kind"] == "Service" {
        let spec = &live["spec"];
        for key in ["clusterIP", "clusterIPs", "healthCheckNodePort"] {
            if !spec[key].is_null() && d["spec"].get(key).is_none() {
                d["spec"][key] = spec[key].clone();
            }
        }
        if let Some(ports) = d["spec"]["ports"].as_array_mut() {
            for p in ports {
                let live_port = spec["ports"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|lp| lp["port"] == p["port"]);
                if let Some(np) = live_port.and_then(|lp| lp.get("nodePort")) {
                    if p.get("nodePort").is_none() {
                        p["nodePort"] = np.clone();
                    }
                }
            }
        }
    }
    d
}

/// Walks `live`; every leaf not skipped must exist in `defaulted` with the same value.
fn check_leaves(
    kind: &str,
    live: &Value,
    defaulted: Option<&Value>,
    pointer: &str,
    fields: &mut Vec<String>,
    skip: &[String],
    problems: &mut Vec<String>,
) {
    if skip
        .iter()
        .any(|s| pointer == s || pointer.starts_with(&format!("{s}/")))
    {
        return;
    }
    match live {
        // Containers are walked even when the defaulted object lacks them, so a map whose
        // only entries are skipped (annotations holding last-applied) is no finding.
        Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                fields.push(k.clone());
                let p = format!("{pointer}/{}", escape(k));
                let counterpart = defaulted.and_then(|d| d.get(k));
                check_leaves(kind, v, counterpart, &p, fields, skip, problems);
                fields.pop();
            }
        }
        Value::Array(items) if !items.is_empty() => {
            let names: Vec<&str> = fields.iter().map(String::as_str).collect();
            let key = merge_keys::merge_key(kind, &names);
            for (i, item) in items.iter().enumerate() {
                let p = format!("{pointer}/{i}");
                let counterpart = match key {
                    Some(k) => defaulted
                        .and_then(Value::as_array)
                        .and_then(|d| d.iter().find(|x| x.get(k) == item.get(k))),
                    None => defaulted.and_then(|d| d.get(i)),
                };
                check_leaves(kind, item, counterpart, &p, fields, skip, problems);
            }
        }
        leaf => match defaulted {
            None => problems.push(format!("{pointer}: live has it, defaults do not")),
            Some(d) if d != leaf => {
                problems.push(format!("{pointer}: live {leaf}, defaults give {d}"))
            }
            Some(_) => {}
        },
    }
}

#[test]
fn in_sync_live_objects_agree_with_server_defaults() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in load_cases() {
        if case.expected["class"] != "in_sync" {
            continue;
        }
        let mut skip: Vec<String> = NOT_DEFAULTS.iter().map(|s| s.to_string()).collect();
        if let Some(extra) = case.expected["not_from_defaults"].as_array() {
            skip.extend(extra.iter().filter_map(Value::as_str).map(str::to_string));
        }
        let lives = live_items(&case.live);
        for d in desired_objects(&case) {
            let Some(live) = lives
                .iter()
                .find(|l| ObjectKey::of(l).as_ref() == Some(&d.key))
            else {
                failures.push(format!("{}: {} not found live", case.name, d.key));
                continue;
            };
            let mut defaulted = with_allocations(&d.object, live);
            defaults::apply(&d.api_version, &d.key.kind, &mut defaulted);
            let mut problems = Vec::new();
            check_leaves(
                &d.key.kind,
                live,
                Some(&defaulted),
                "",
                &mut Vec::new(),
                &skip,
                &mut problems,
            );
            checked += 1;
            for p in problems {
                failures.push(format!("{} ({}): {p}", case.name, d.key));
            }
        }
    }
    assert!(checked >= 30, "only {checked} in-sync objects checked");
    assert!(
        failures.is_empty(),
        "corpus and sim::defaults disagree:\n  {}",
        failures.join("\n  ")
    );
}

// ------------------------------------------------------------------------------------
// The corpus itself

fn resolves(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer).is_some()
}

#[test]
fn corpus_is_well_formed() {
    let cases = load_cases();
    let in_sync = cases
        .iter()
        .filter(|c| c.expected["class"] == "in_sync")
        .count();
    let drift = cases.len() - in_sync;
    assert!(cases.len() >= 60, "{} cases, want at least 60", cases.len());
    assert!(
        in_sync * 10 >= cases.len() * 4 && drift * 10 >= cases.len() * 4,
        "unbalanced corpus: {in_sync} in sync, {drift} drifting"
    );

    let mut kinds = BTreeSet::new();
    let mut problems = Vec::new();
    for case in &cases {
        let class = case.expected["class"].as_str().unwrap_or("");
        if !["in_sync", "modified", "missing"].contains(&class) {
            problems.push(format!("{}: unknown class {class:?}", case.name));
        }
        let changes = expected_changes(&case.expected);
        match class {
            "modified" if changes.is_empty() => {
                problems.push(format!("{}: modified without changes", case.name))
            }
            "in_sync" | "missing" if !changes.is_empty() => {
                problems.push(format!("{}: {class} with changes", case.name))
            }
            _ => {}
        }
        let desired = desired_objects(case);
        for d in &desired {
            kinds.insert(d.key.kind.clone());
        }
        let lives = live_items(&case.live);
        if class == "missing" {
            for d in &desired {
                if lives
                    .iter()
                    .any(|l| ObjectKey::of(l).as_ref() == Some(&d.key))
                {
                    problems.push(format!("{}: 'missing' object exists live", case.name));
                }
            }
            continue;
        }
        // Single-object drift cases: paths must resolve where the op says they point.
        if class == "modified" {
            let [d] = desired.as_slice() else {
                problems.push(format!("{}: drift cases hold one object", case.name));
                continue;
            };
            let live = lives[0];
            let mut defaulted = with_allocations(&d.object, live);
            defaults::apply(&d.api_version, &d.key.kind, &mut defaulted);
            for (path, op) in &changes {
                let ok = match op.as_str() {
                    "remove" => resolves(live, path),
                    "add" => resolves(&defaulted, path) || resolves(&d.object, path),
                    "replace" => {
                        (resolves(&defaulted, path) || resolves(&d.object, path))
                            && (resolves(live, path) || path.starts_with("/stringData/"))
                    }
                    _ => false,
                };
                if !ok {
                    problems.push(format!("{}: {op} {path} does not resolve", case.name));
                }
            }
        }
        for l in &lives {
            if l["metadata"]["uid"].is_null() || l["metadata"]["resourceVersion"].is_null() {
                problems.push(format!(
                    "{}: live object without server metadata",
                    case.name
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for kind in [
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "CronJob",
        "Service",
        "Ingress",
        "ConfigMap",
        "Secret",
        "Role",
        "RoleBinding",
        "HorizontalPodAutoscaler",
        "PersistentVolumeClaim",
        "Namespace",
        "CustomResourceDefinition",
        "Widget",
    ] {
        assert!(kinds.contains(kind), "no corpus case covers {kind}");
    }
}
