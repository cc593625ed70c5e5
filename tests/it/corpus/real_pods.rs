//! Every bare Pod of the real-manifest collection (`../shared/real-manifests`, SOURCES.md
//! there), as a real cluster stores it, is in sync: the live object is built by two steps
//! independent of the differ, kube-apiserver's defaulting and create-time behaviour (the
//! simulator's `server_defaults::as_created`) and the default admission chain
//! (`driftd_k8s::admission`: service account token volume and mounts, default toleration
//! seconds, priority), then compared.

use std::path::{Path, PathBuf};

use driftd_core::diff::{ClusterFacts, CompareInput, Differ, DriftClass};
use driftd_core::manifest::{self, LoadOptions};
use driftd_k8s::admission::{self, AdmissionFacts};
use driftd_sim::server_defaults;
use serde_json::{json, Value};

/// `shared/` beside the repository (for a git worktree, beside its main checkout).
fn shared_dir() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let git_common = std::process::Command::new("git")
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .current_dir(repo)
        .output()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("../../shared"));
    [Ok(repo.join("../shared"))]
        .into_iter()
        .chain([git_common])
        .flatten()
        .find(|d| d.join("real-manifests/SOURCES.md").exists())
        .expect("shared/real-manifests beside the repository")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// The ten lists the admission chain appends to when the manifest already has them:
/// volumes, every (init) container's volumeMounts, tolerations.
fn appended_to_existing_lists(desired: &Value, live: &Value) -> usize {
    let mut lists = vec!["/spec/volumes".to_string(), "/spec/tolerations".to_string()];
    for list in ["containers", "initContainers"] {
        for i in 0..desired["spec"][list].as_array().map_or(0, Vec::len) {
            lists.push(format!("/spec/{list}/{i}/volumeMounts"));
        }
    }
    lists
        .iter()
        .filter(|p| {
            let len = |v: &Value| v.pointer(p).and_then(Value::as_array).map(Vec::len);
            matches!((len(desired), len(live)), (Some(d), Some(l)) if l > d)
        })
        .count()
}

#[test]
fn every_bare_pod_of_the_real_manifests_is_in_sync_with_admission_additions() {
    let root = shared_dir().join("real-manifests");
    let mut files = Vec::new();
    yaml_files(&root, &mut files);
    files.sort();
    let differ = Differ::new(b"real-pods");
    let facts = ClusterFacts::default();
    let (mut pods, mut appended, mut failures) = (0, 0, Vec::new());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        // Files the collection skips for a reason (generateName, templates) do not parse.
        let Ok(objects) = manifest::parse_text(&text, &name, &LoadOptions::default()) else {
            continue;
        };
        for (i, d) in objects.iter().filter(|o| o.key.kind == "Pod").enumerate() {
            pods += 1;
            let mut live = d.object.clone();
            server_defaults::as_created("v1", "Pod", &mut live);
            let mut draw = pods * 7 + i;
            let token = admission::token_volume_name(|n| {
                draw = draw * 31 + 11;
                draw % n
            });
            admission::admit("Pod", &mut live, &AdmissionFacts::default(), &token);
            live["metadata"]["uid"] = json!(format!("uid-{pods}"));
            live["metadata"]["resourceVersion"] = json!("1");
            live["spec"]["nodeName"] = json!("node-1");
            appended += appended_to_existing_lists(&d.object, &live);
            let c = differ.compare(&CompareInput {
                desired: &d.object,
                live: Some(&live),
                previous: None,
                facts: &facts,
            });
            if c.class != DriftClass::InSync {
                let changes: Vec<String> = c.changes.iter().map(|c| c.field.clone()).collect();
                failures.push(format!("{name} ({}): {}", d.key, changes.join(", ")));
            }
        }
    }
    assert_eq!(pods, 17, "the collection's bare Pods (SOURCES.md)");
    assert!(
        appended >= 9,
        "admission appended to lists the manifests have only {appended} times"
    );
    assert!(
        failures.is_empty(),
        "{} of {pods} bare Pods drift:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}
