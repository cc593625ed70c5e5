//! The simulator's server-side behaviour agrees with the golden corpus: every in-sync case's
//! desired manifest, applied to the simulator with the real kubectl and read back with
//! `kubectl get -o json`, is in sync according to `driftd check`. A defaulting gap in the
//! simulator or a false positive in the differ fails here.

use crate::scaffold::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn in_sync_cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.json").exists())
        .filter(|p| {
            let expected: Value =
                serde_json::from_str(&std::fs::read_to_string(p.join("expected.json")).unwrap())
                    .unwrap();
            expected["class"] == "in_sync"
        })
        .collect();
    cases.sort();
    cases
}

/// The desired objects of a case, parsed by the binary itself (`check` on an empty live set
/// lists each as missing, with its identity).
fn desired_objects(desired: &Path, dir: &Path) -> Vec<Value> {
    let empty = dir.join("empty.json");
    std::fs::write(&empty, r#"{"apiVersion":"v1","kind":"List","items":[]}"#).unwrap();
    let mut args: Vec<String> = [
        "check",
        "--desired",
        desired.to_str().unwrap(),
        "--live",
        empty.to_str().unwrap(),
        "--format",
        "json",
    ]
    .map(String::from)
    .into();
    args.extend(custom_scope_flags(&desired.with_file_name("live.json")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = driftd(&args);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("check output: {}", String::from_utf8_lossy(&out.stderr)));
    report["objects"].as_array().unwrap().clone()
}

/// `--namespaced`/`--cluster-scoped` for the custom kinds of the case's live objects: the
/// cluster they came from served them with that scope, and `check` never guesses one.
fn custom_scope_flags(live_json: &Path) -> Vec<String> {
    let live: Value = serde_json::from_str(&std::fs::read_to_string(live_json).unwrap()).unwrap();
    let items = match live["items"].as_array() {
        Some(items) => items.clone(),
        None => vec![live],
    };
    let mut flags = Vec::new();
    for item in &items {
        let (Some(api_version), Some(kind)) = (item["apiVersion"].as_str(), item["kind"].as_str())
        else {
            continue;
        };
        let Some((group, _)) = api_version.split_once('/') else {
            continue;
        };
        if driftd_k8s::kinds::builtin(api_version, kind).is_some() {
            continue;
        }
        let flag = if item["metadata"]["namespace"].is_string() {
            "--namespaced"
        } else {
            "--cluster-scoped"
        };
        flags.extend([flag.to_string(), format!("{kind}.{group}")]);
    }
    flags
}

fn resource_arg(api_version: &str, kind: &str) -> String {
    match api_version.split_once('/') {
        Some((group, version)) => format!("{}.{version}.{group}", kind.to_lowercase()),
        None => kind.to_lowercase(),
    }
}

fn check_case(case: &Path) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let sim = Sim::start(tmp.path());
    let desired = case.join("desired.yaml");
    let objects = desired_objects(&desired, tmp.path());

    // Namespaces the case uses but does not create.
    let created: BTreeSet<&str> = objects
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .filter_map(|o| o["name"].as_str())
        .collect();
    let needed: BTreeSet<&str> = objects
        .iter()
        .filter_map(|o| o["namespace"].as_str())
        .filter(|ns| !created.contains(ns) && *ns != "default")
        .collect();
    for ns in needed {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let out = sim.kubectl_output(&["create", "-f", "-"], Some(&body.to_string()));
        if !out.status.success() {
            return Err(format!(
                "namespace {ns}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    // Custom resources whose CRD the case does not carry: serve their kind first, as the
    // cluster the live object came from did.
    for o in &objects {
        let api_version = o["apiVersion"].as_str().unwrap();
        let kind = o["kind"].as_str().unwrap();
        let Some((group, version)) = api_version.split_once('/') else {
            continue;
        };
        let builtin = driftd_k8s::kinds::builtin(api_version, kind).is_some();
        let carried = objects
            .iter()
            .any(|c| c["kind"] == "CustomResourceDefinition");
        if builtin || carried || !group.contains('.') {
            continue;
        }
        let plural = format!("{}s", kind.to_lowercase());
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {
                "group": group,
                "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(), "listKind": format!("{kind}List")},
                "scope": if o["namespace"].is_string() { "Namespaced" } else { "Cluster" },
                "versions": [{"name": version, "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
            }
        });
        let out = sim.kubectl_output(&["apply", "-f", "-"], Some(&crd.to_string()));
        if !out.status.success() {
            return Err(format!(
                "CRD for {kind}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    // A CRD and its custom resources in one file: kubectl learns the new kind on a retry,
    // as it does against a real cluster.
    let mut applied = false;
    let mut last_error = String::new();
    for _ in 0..5 {
        let out = sim.kubectl_output(&["apply", "-f", desired.to_str().unwrap()], None);
        if out.status.success() {
            applied = true;
            break;
        }
        last_error = String::from_utf8_lossy(&out.stderr).into_owned();
    }
    if !applied {
        return Err(format!("kubectl apply: {last_error}"));
    }

    let mut items = Vec::new();
    for o in &objects {
        let resource = resource_arg(
            o["apiVersion"].as_str().unwrap(),
            o["kind"].as_str().unwrap(),
        );
        let name = o["name"].as_str().unwrap();
        let mut args = vec![
            "get",
            resource.as_str(),
            name,
            "-o",
            "json",
            "--show-managed-fields",
        ];
        if let Some(ns) = o["namespace"].as_str() {
            args.extend(["-n", ns]);
        }
        let out = sim.kubectl_output(&args, None);
        if !out.status.success() {
            return Err(format!(
                "kubectl get {resource} {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        items.push(serde_json::from_slice::<Value>(&out.stdout).unwrap());
    }
    let live = tmp.path().join("live.json");
    std::fs::write(
        &live,
        json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    let out = driftd(&[
        "check",
        "--desired",
        desired.to_str().unwrap(),
        "--live",
        live.to_str().unwrap(),
        "--format",
        "json",
    ]);
    match out.status.code() {
        Some(0) => Ok(()),
        _ => Err(format!(
            "not in sync after applying to the simulator: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

#[test]
fn in_sync_corpus_cases_stay_in_sync_on_the_simulator() {
    let cases = in_sync_cases();
    assert!(
        cases.len() >= 30,
        "the corpus has its in-sync half: {}",
        cases.len()
    );
    let failures: Vec<String> = std::thread::scope(|scope| {
        let chunks: Vec<Vec<PathBuf>> = cases
            .chunks(cases.len().div_ceil(4))
            .map(|c| c.to_vec())
            .collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|case| {
                            check_case(case).err().map(|e| {
                                format!("{}: {e}", case.file_name().unwrap().to_string_lossy())
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} of {} in-sync cases drift on the simulator:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
