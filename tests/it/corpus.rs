//! The golden corpus of the differ (tests/corpus/, described in tests/corpus/README.md).
//!
//! * `corpus_cases_match_the_differ` runs the real `driftd check` on every case and demands
//!   exactly the expected class and changes: the set of (path, op), and for each change its
//!   `desired`, `live`, `manager` and `changed_at`; zero false positives, zero false
//!   negatives. The restoring patch of a drifting object, applied to the live object,
//!   must bring it back in sync (checked by `driftd check` again). No form of any Secret
//!   value, however short, may appear in any output (`secrets`).
//! * `managed_fields::live_managed_fields_follow_the_field_manager_model` keeps the hand-built
//!   `managedFields` (where `manager` and `changed_at` come from) consistent with how
//!   kube-apiserver's field manager records writes.
//! * `in_sync_live_objects_agree_with_server_defaults` checks the corpus against the
//!   simulator's defaulting: every field a live object of an in-sync case has beyond the
//!   manifest must be produced by `driftd_sim::server_defaults` (or be listed as set by
//!   someone else).
//! * `corpus_is_well_formed` keeps the corpus itself honest: size, balance, coverage, a
//!   README per case, and every expected change complete and resolving where it points.

mod managed_fields;
mod real_pods;
mod secrets;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use driftd_core::manifest::{self, LoadOptions};
use driftd_k8s::admission::{self, AdmissionFacts};
use driftd_k8s::crd::CrdSchemas;
use driftd_k8s::{merge_keys, ObjectKey};
use driftd_sim::server_defaults;
use serde_json::Value;

struct Case {
    name: String,
    dir: PathBuf,
    desired_text: String,
    live: Value,
    expected: Value,
    /// `crd.yaml`: the CustomResourceDefinition of the case's custom resource as the
    /// cluster has it, passed to `driftd check` as a further `--live` input.
    crd: Option<PathBuf>,
    /// `dry-run.json`: the server's answer to a server-side dry run of the manifest, passed
    /// as `--expected` (the case is compared as a `compare = "dry-run"` source).
    dry_run: Option<PathBuf>,
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
                crd: Some(dir.join("crd.yaml")).filter(|p| p.exists()),
                dry_run: Some(dir.join("dry-run.json")).filter(|p| p.exists()),
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
    let mut options = LoadOptions::default();
    if let Some(crd) = &case.crd {
        options.custom_scopes.extend(crd_scopes(crd));
    }
    // Kinds the case defines no CRD for take their scope from the live objects, as `check`
    // does: the cluster they came from served them.
    for item in live_items(&case.live) {
        if let (Some((group, _)), Some(kind)) = (
            item["apiVersion"].as_str().and_then(|v| v.split_once('/')),
            item["kind"].as_str(),
        ) {
            let namespaced = item["metadata"]["namespace"].is_string();
            options
                .custom_scopes
                .entry((group.to_string(), kind.to_string()))
                .or_insert(namespaced);
        }
    }
    manifest::parse_text(&case.desired_text, "desired.yaml", &options)
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

/// ((group, kind), namespaced) of every CRD in a case's `crd.yaml`: the scope a cluster
/// serving that CRD gives its custom resources (scope is never guessed).
fn crd_scopes(crd_yaml: &Path) -> Vec<((String, String), bool)> {
    let text = std::fs::read_to_string(crd_yaml).unwrap();
    manifest::parse_text(&text, "crd.yaml", &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", crd_yaml.display()))
        .iter()
        .map(|o| {
            let spec = &o.object["spec"];
            let key = (
                spec["group"].as_str().unwrap().to_string(),
                spec["names"]["kind"].as_str().unwrap().to_string(),
            );
            (key, spec["scope"] == "Namespaced")
        })
        .collect()
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

/// The fields of a change compared with expected.json besides `path` and `op`.
const CHANGE_FIELDS: [&str; 4] = ["desired", "live", "manager", "changed_at"];

/// The plain values of every Secret the case holds, desired or live.
fn secret_values(case: &Case) -> Vec<Vec<u8>> {
    let desired = desired_objects(case);
    let objects = desired.iter().map(|d| &d.object);
    secrets::plain_values(objects.chain(live_items(&case.live)))
}

/// `driftd check` of `desired` against `live` (and the case's CRD, live too), hashing
/// Secret values under the runner's key.
fn check(case: &Case, desired: &Path, live: &Path, format: &str) -> Output {
    let expected = case
        .dry_run
        .iter()
        .flat_map(|p| [Path::new("--expected"), p]);
    Command::new(env!("CARGO_BIN_EXE_driftd"))
        .arg("check")
        .arg("--desired")
        .arg(desired)
        .arg("--live")
        .arg(live)
        .args(&case.crd)
        .args(expected)
        .args(["--format", format, "--hash-key", secrets::HASH_KEY])
        .env_remove("DRIFTD_CHECK_HASH_KEY")
        .output()
        .expect("driftd runs")
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
    let desired = case.dir.join("desired.yaml");
    let output = check(case, &desired, &case.dir.join("live.json"), "json");
    let table = check(case, &desired, &case.dir.join("live.json"), "table");
    let plain = secret_values(case);
    for out in [&output, &table] {
        let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        if let Some(form) = secrets::leak(&text, &plain) {
            return Err(format!("the output shows {form}"));
        }
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let class = case.expected["class"].as_str().unwrap();
    let want_code = if class == "in_sync" { 0 } else { 1 };
    let code = output.status.code();
    if code != Some(want_code) || table.status.code() != Some(want_code) {
        return Err(format!(
            "exit code {code:?} (table: {:?}), want {want_code}; stderr: {}",
            table.status.code(),
            stderr.trim()
        ));
    }
    let report: Value = serde_json::from_str(&stdout)
        .map_err(|e| format!("stdout is not JSON ({e}): {}", stdout.trim()))?;
    let objects = report["objects"]
        .as_array()
        .ok_or_else(|| format!("no \"objects\" list in {report}"))?;
    if class == "in_sync" {
        if case.dry_run.is_some() && static_model_is_in_sync(case) {
            return Err("in sync without the dry-run answer too: the case proves nothing".into());
        }
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
    let got = object["changes"]
        .as_array()
        .ok_or("object has no changes list")?;
    let got_keys: BTreeSet<(String, String)> = got
        .iter()
        .map(|c| {
            (
                c["path"].as_str().unwrap_or("?").to_string(),
                c["op"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let want = expected_changes(&case.expected);
    if got_keys != want || got.len() != want.len() {
        let extra: Vec<_> = got_keys.difference(&want).collect();
        let missing: Vec<_> = want.difference(&got_keys).collect();
        return Err(format!(
            "changes differ: unexpected {extra:?}, missing {missing:?} ({} reported)",
            got.len()
        ));
    }
    for w in case.expected["changes"].as_array().unwrap() {
        let g = got
            .iter()
            .find(|g| g["path"] == w["path"] && g["op"] == w["op"])
            .unwrap();
        for field in CHANGE_FIELDS {
            let Some(want) = w.get(field) else { continue };
            let want = secrets::resolve_expected(want);
            if g[field] != want {
                return Err(format!(
                    "{} {} {field}: got {}, want {want}",
                    w["op"], w["path"], g[field]
                ));
            }
        }
    }
    if class == "missing" {
        return match object["patch"].as_array() {
            Some(ops) if !ops.is_empty() => Err(format!("a missing object with a patch: {ops:?}")),
            _ => Ok(()),
        };
    }
    patch_restores_sync(case, object, &plain)
}

/// Whether the static model (no `--expected`) finds a dry-run case in sync: an in-sync
/// dry-run case must hold what only the server's answer explains.
fn static_model_is_in_sync(case: &Case) -> bool {
    let without = Case {
        dry_run: None,
        name: case.name.clone(),
        dir: case.dir.clone(),
        desired_text: String::new(),
        live: Value::Null,
        expected: Value::Null,
        crd: case.crd.clone(),
    };
    let out = check(
        &without,
        &case.dir.join("desired.yaml"),
        &case.dir.join("live.json"),
        "json",
    );
    out.status.code() == Some(0)
}

/// Applies the drifting object's restoring patch to its live object and runs `driftd check`
/// on the result, which must be in sync. Secret values in the patch are placeholders (keyed
/// hashes): each must be the hash of a value the case holds, and is replaced by that value
/// (base64, as `data` holds it) before the patch is applied.
fn patch_restores_sync(case: &Case, object: &Value, plain: &[Vec<u8>]) -> Result<(), String> {
    let ops = object["patch"].as_array().ok_or("no patch")?;
    // Besides one operation per change, `test`s guard the list items it goes through.
    let changing = ops.iter().filter(|op| op["op"] != "test").count();
    if changing != object["changes"].as_array().map_or(0, Vec::len) {
        return Err(format!(
            "{changing} patch operations for the changes: {ops:?}"
        ));
    }
    let ops: Vec<Value> = ops
        .iter()
        .map(|op| {
            let mut op = op.clone();
            if let Some(v) = op.get("value") {
                op["value"] = secrets::unredact(v, plain)?;
            }
            Ok(op)
        })
        .collect::<Result<_, String>>()?;
    let patch: json_patch::Patch =
        serde_json::from_value(Value::Array(ops)).map_err(|e| format!("patch: {e}"))?;
    let mut live = case.live.clone();
    let key = (object["kind"].clone(), object["name"].clone());
    let target = if live["kind"] == "List" {
        live["items"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|l| (l["kind"].clone(), l["metadata"]["name"].clone()) == key)
            .ok_or("the drifting object is not live")?
    } else {
        &mut live
    };
    json_patch::patch(target, &patch).map_err(|e| format!("the patch does not apply: {e}"))?;
    let dir = tempfile::tempdir().unwrap();
    let patched = dir.path().join("patched.json");
    std::fs::write(&patched, serde_json::to_string(&live).unwrap()).unwrap();
    let again = check(case, &case.dir.join("desired.yaml"), &patched, "json");
    if again.status.code() != Some(0) {
        return Err(format!(
            "still drifting after the restoring patch: {}{}",
            String::from_utf8_lossy(&again.stdout),
            String::from_utf8_lossy(&again.stderr)
        ));
    }
    Ok(())
}

// ------------------------------------------------------------------------------------
// Consistency of the corpus with the simulator's defaults (crates/sim/src/server_defaults.rs)

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

/// The CRDs of the case's `crd.yaml`.
fn case_crds(case: &Case) -> Vec<CrdSchemas> {
    let Some(path) = &case.crd else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(path).unwrap();
    manifest::parse_text(&text, "crd.yaml", &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
        .iter()
        .map(|o| CrdSchemas::from_crd(&o.object).unwrap_or_else(|e| panic!("{}: {e}", case.name)))
        .collect()
}

/// What kube-apiserver stores for the desired object `d` of a case whose live object is
/// `live`: a custom resource pruned and defaulted by its CRD in `crd.yaml`; a built-in
/// object defaulted (the simulator's `server_defaults`) and, for a Pod, admitted by the
/// default admission chain with the token volume name the live Pod got.
fn as_stored(case: &Case, d: &manifest::ManifestObject, live: &Value) -> Value {
    let mut stored = with_allocations(&d.object, live);
    let crds = case_crds(case);
    if let Some(crd) = crds
        .iter()
        .find(|c| c.group == d.key.group && c.kind == d.key.kind)
    {
        crd.as_served(&mut stored)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        return stored;
    }
    server_defaults::as_created(&d.api_version, &d.key.kind, &mut stored);
    if d.key.kind == "Pod" {
        let token = live["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["name"].as_str())
            .find(|n| n.starts_with(admission::TOKEN_VOLUME_PREFIX))
            .unwrap_or("kube-api-access-none");
        admission::admit("Pod", &mut stored, &AdmissionFacts::default(), token);
    }
    stored
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
            let defaulted = as_stored(&case, &d, live);
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
        "corpus and the simulator's defaults (driftd_sim::server_defaults) disagree:\n  {}",
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
        if !case.dir.join("README.md").exists() {
            problems.push(format!(
                "{}: no README.md saying what the case is",
                case.name
            ));
        }
        for c in case.expected["changes"].as_array().into_iter().flatten() {
            for field in CHANGE_FIELDS {
                if c.get(field).is_none() {
                    problems.push(format!("{}: {} has no {field}", case.name, c["path"]));
                }
            }
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
            let defaulted = as_stored(case, d, live);
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

/// `driftd commit` of a case whose manifest sets fields its CRD prunes names them on stderr
/// (a warning: the commit succeeds).
#[test]
fn commit_warns_about_fields_the_crd_prunes() {
    let case = corpus_dir().join("servicemonitor-pruned-fields-in-sync");
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_driftd"))
        .args(["commit", "--source", "monitoring", "--db"])
        .arg(tmp.path().join("driftd.db"))
        .arg("-f")
        .arg(case.join("crd.yaml"))
        .arg(case.join("desired.yaml"))
        .output()
        .expect("driftd runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: ServiceMonitor.monitoring.coreos.com monitoring/kube-state-metrics"
        ) && stderr.contains("spec.endpoints[0].scrapeInterval, spec.targetLabel"),
        "{stderr}"
    );
}
