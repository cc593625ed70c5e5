//! The real-manifest corpora (`shared/real-manifests`, `shared/real-manifests-2`) applied to
//! the simulator with the real kubectl, as their authors say to apply them, read back, and
//! found in sync by `driftd check` given each file as it is committed: custom resources
//! without their CRD, which `check` resolves from the live objects, included.
//!
//! The simulator shares driftd's Kubernetes knowledge (defaulting, admission, CRD schemas),
//! so this shows that the real binaries, kubectl and the protocol work together on real
//! input, not that kube-apiserver stores these objects so.
//!
//! How it is read back: in the version each object was committed in, as `driftd serve`
//! watches the committed apiVersion (`kubectl get` of `kind.group` alone answers the
//! preferred version: an `autoscaling/v1` HorizontalPodAutoscaler would come back as v2).
//! One `kubectl get` per version, each keeping the objects committed in that version.
//!
//! How it is applied: Namespaces and CustomResourceDefinitions first (files are retried
//! until the kinds they need are served); `kubectl apply --server-side` for a file with an
//! object too large for the last-applied annotation (kube-prometheus's README applies its
//! CRDs that way); every folder's objects without a namespace in a namespace of their own
//! (the corpus has several examples defining the same names), except that a file setting
//! up a LimitRange or ResourceQuota, in a folder with several such files, gets a namespace of
//! its own: each documentation example that constrains a namespace creates one for itself
//! (kubernetes/website `admin/resource`), and one example's LimitRange would otherwise
//! refuse or default another's Pods. An object that cannot be applied as it is is left out
//! and listed with the reason (a Pod naming a PriorityClass no corpus file defines, which
//! kube's Priority admission plugin refuses).

use crate::real_manifests::corpus_files;
use crate::scaffold::{shared_dir, Sim, DRIFTD};
use driftd_core::manifest::{self, LoadOptions};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// kube-apiserver's limit on all annotations together, which the last-applied annotation of
/// a client-side apply (the whole object) must fit in.
const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// One corpus file as it is applied: the documents kept, where, and how.
struct Planned {
    /// The corpus file, relative to the corpus root.
    name: String,
    /// What kubectl applies and `check` compares: the file, or a copy without left-out
    /// documents.
    path: PathBuf,
    /// `-n` for kubectl and driftd: set when no document names a namespace.
    namespace: Option<String>,
    server_side: bool,
    defines_namespace: bool,
    defines_crd: bool,
    /// `kind.version.group` of every object, for reading them back in their version.
    kinds: BTreeSet<String>,
    /// The apiVersion each object is committed in, by `(group, kind, namespace, name)`.
    versions: BTreeMap<LiveKey, String>,
    /// Namespaces its namespaced objects live in.
    namespaces: BTreeSet<String>,
}

/// The YAML documents of a file (`---` lines separate them).
fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        let t = line.trim_end();
        if t == "---" || t.starts_with("--- ") {
            docs.push(String::new());
        } else {
            let last = docs.last_mut().unwrap();
            last.push_str(line);
            last.push('\n');
        }
    }
    docs
}

/// What `kubectl get` takes to read a kind in one version: `kind.version.group`, or the
/// kind alone in the core group (which has one version, and whose `kind.v1` kubectl would
/// read as group `v1`).
fn kind_version_group(kind: &str, api_version: &str) -> String {
    match api_version.split_once('/') {
        Some((group, version)) => format!("{}.{version}.{group}", kind.to_lowercase()),
        None => kind.to_lowercase(),
    }
}

/// An object's identity across versions: group, kind, namespace ("" when none), name.
type LiveKey = (String, String, String, String);

fn live_key(object: &Value) -> LiveKey {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    let api_version = text("/apiVersion");
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    (
        group.to_string(),
        text("/kind").to_string(),
        text("/metadata/namespace").to_string(),
        text("/metadata/name").to_string(),
    )
}

/// Plans every corpus file; documents left out are added to `left_out` with the reason.
fn plan(
    root: &Path,
    work: &Path,
    scopes: &BTreeMap<(String, String), bool>,
    left_out: &mut Vec<String>,
) -> Vec<Planned> {
    let mut files = Vec::new();
    corpus_files(root, &mut files);
    files.sort();
    let load = |file: &Path| {
        let options = LoadOptions {
            custom_scopes: scopes.clone(),
            ..LoadOptions::default()
        };
        manifest::load(std::slice::from_ref(&file.to_path_buf()), &options)
            .map(|l| l.objects)
            .unwrap_or_default()
    };
    // Files that constrain the namespace they are applied in, by folder.
    let mut constraining: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    // PriorityClasses there will be: the corpus's and the two kube-apiserver creates.
    let mut priority_classes: BTreeSet<String> =
        ["system-cluster-critical", "system-node-critical"]
            .map(String::from)
            .into();
    for file in &files {
        for o in load(file) {
            match (o.key.group.as_str(), o.key.kind.as_str()) {
                ("", "LimitRange" | "ResourceQuota") => {
                    constraining
                        .entry(file.parent().unwrap().to_path_buf())
                        .or_default()
                        .insert(file.clone());
                }
                ("scheduling.k8s.io", "PriorityClass") => {
                    priority_classes.insert(o.key.name.clone());
                }
                _ => {}
            }
        }
    }
    let mut folders: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut planned = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let name = file.strip_prefix(root).unwrap().display().to_string();
        let folder = file.parent().unwrap().to_path_buf();
        let n = folders.len();
        let folder_ns = folders
            .entry(folder)
            .or_insert_with(|| format!("rm-{n}"))
            .clone();
        let text = std::fs::read_to_string(file).unwrap();
        let docs = documents(&text);
        let read = |doc: &str, default_namespace: &str| {
            let options = LoadOptions {
                default_namespace: default_namespace.to_string(),
                custom_scopes: scopes.clone(),
                ..LoadOptions::default()
            };
            manifest::read_text(doc, &name, &options).unwrap_or_else(|e| panic!("{name}: {e}"))
        };
        // Whether a document names a namespace: read with a namespace none of them has.
        const UNSET: &str = "zz-namespace-not-given";
        let names_namespace = docs.iter().any(|d| {
            read(d, UNSET)
                .objects
                .iter()
                .any(|o| o.key.namespace.as_deref().is_some_and(|ns| ns != UNSET))
        });
        let own_namespace = constraining
            .get(file.parent().unwrap())
            .is_some_and(|files| files.len() > 1 && files.contains(file));
        let namespace = (!names_namespace).then(|| {
            if own_namespace {
                format!("{folder_ns}-{index}")
            } else {
                folder_ns.clone()
            }
        });
        let default_namespace = namespace.clone().unwrap_or_else(|| "default".into());
        let mut kept = String::new();
        let mut p = Planned {
            name: name.clone(),
            path: file.clone(),
            namespace,
            server_side: false,
            defines_namespace: false,
            defines_crd: false,
            kinds: BTreeSet::new(),
            versions: BTreeMap::new(),
            namespaces: BTreeSet::new(),
        };
        let mut dropped = false;
        for (i, doc) in docs.iter().enumerate() {
            let loaded = read(doc, &default_namespace);
            if !loaded.skipped.is_empty() {
                for skipped in &loaded.skipped {
                    left_out.push(format!(
                        "{name}: document {i}: {skipped} (kube-apiserver names it on create; `kubectl apply` refuses it)"
                    ));
                }
                dropped = true;
                continue;
            }
            let objects = loaded.objects;
            if objects.is_empty() {
                continue;
            }
            let missing_class = objects.iter().find_map(|o| {
                let class = o.object.pointer("/spec/priorityClassName")?.as_str()?;
                (o.key.group.is_empty() && o.key.kind == "Pod" && !priority_classes.contains(class))
                    .then(|| class.to_string())
            });
            if let Some(class) = missing_class {
                left_out.push(format!(
                    "{name}: document {i}: a Pod of PriorityClass {class}, which no corpus file defines (kube's Priority admission plugin refuses it)"
                ));
                dropped = true;
                continue;
            }
            let mut duplicate = None;
            for o in &objects {
                let key = o.key.to_string();
                if let Some(first) = seen.get(&key) {
                    duplicate = Some(format!("{key} is also defined by {first}"));
                }
            }
            if let Some(reason) = duplicate {
                left_out.push(format!(
                    "{name}: document {i}: {reason} (one object, one definition)"
                ));
                dropped = true;
                continue;
            }
            for o in &objects {
                seen.insert(o.key.to_string(), name.clone());
                let api_version = o.object["apiVersion"].as_str().unwrap_or("").to_string();
                p.kinds
                    .insert(kind_version_group(&o.key.kind, &api_version));
                let key = (
                    o.key.group.clone(),
                    o.key.kind.clone(),
                    o.key.namespace.clone().unwrap_or_default(),
                    o.key.name.clone(),
                );
                p.versions.insert(key, api_version);
                if let Some(ns) = &o.key.namespace {
                    p.namespaces.insert(ns.clone());
                }
                p.defines_namespace |= o.key.group.is_empty() && o.key.kind == "Namespace";
                p.defines_crd |= o.key.kind == "CustomResourceDefinition";
                p.server_side |= last_applied_size(&o.object) > ANNOTATIONS_LIMIT;
            }
            kept.push_str("---\n");
            kept.push_str(doc);
        }
        if p.kinds.is_empty() {
            continue;
        }
        if dropped {
            let copy = work.join(format!("kept-{}.yaml", planned.len()));
            std::fs::write(&copy, kept).unwrap();
            p.path = copy;
        }
        planned.push(p);
    }
    planned
}

/// All annotations of `object` once a client-side apply adds its last-applied annotation
/// (the object as JSON, under `kubectl.kubernetes.io/last-applied-configuration`).
fn last_applied_size(object: &Value) -> usize {
    let existing: usize = object
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    existing + "kubectl.kubernetes.io/last-applied-configuration".len() + object.to_string().len()
}

/// One `kubectl apply` of several planned files that share its flags; its stderr on failure.
fn apply(sim: &Sim, batch: &[&Planned]) -> Result<(), String> {
    let mut args = vec!["apply".to_string()];
    if batch[0].server_side {
        args.push("--server-side".into());
    }
    if let Some(ns) = &batch[0].namespace {
        args.extend(["-n".into(), ns.clone()]);
    }
    for p in batch {
        args.extend(["-f".into(), p.path.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sim.kubectl_output(&args, None);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
#[cfg_attr(
    not(shared_material),
    ignore = "needs ../shared/ (the real-manifest corpora), which is not beside this clone"
)]
fn every_real_object_applied_with_kubectl_reads_back_in_sync() {
    applied_reads_back_in_sync("real-manifests");
}

#[test]
#[cfg_attr(
    not(shared_material),
    ignore = "needs ../shared/ (the real-manifest corpora), which is not beside this clone"
)]
fn every_object_of_the_second_corpus_applied_with_kubectl_reads_back_in_sync() {
    applied_reads_back_in_sync("real-manifests-2");
}

fn applied_reads_back_in_sync(corpus: &str) {
    let started = Instant::now();
    let root = shared_dir().join(corpus);
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());

    // The scopes the corpus's CRDs give, so the plan keys custom resources as the cluster
    // will (which file names a namespace, which needs one made).
    let mut all = Vec::new();
    corpus_files(&root, &mut all);
    let scopes: BTreeMap<(String, String), bool> = all
        .iter()
        .flat_map(|f| {
            manifest::load(std::slice::from_ref(f), &LoadOptions::default())
                .unwrap()
                .objects
        })
        .filter_map(|o| manifest::crd_scope(&o.key.kind, &o.object))
        .collect();
    let mut left_out = Vec::new();
    let planned = plan(&root, dir.path(), &scopes, &mut left_out);
    let defined: BTreeSet<String> = planned
        .iter()
        .filter(|p| p.defines_namespace)
        .flat_map(|p| {
            let options = LoadOptions {
                custom_scopes: scopes.clone(),
                ..LoadOptions::default()
            };
            manifest::load(std::slice::from_ref(&p.path), &options)
                .unwrap()
                .objects
        })
        .filter(|o| o.key.group.is_empty() && o.key.kind == "Namespace")
        .map(|o| o.key.name)
        .collect();
    let needed: BTreeSet<&String> = planned.iter().flat_map(|p| &p.namespaces).collect();
    for ns in needed.into_iter().filter(|ns| !defined.contains(*ns)) {
        let out = sim.kubectl_output(&["create", "namespace", ns.as_str()], None);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() || err.contains("AlreadyExists"),
            "{ns}: {err}"
        );
    }
    // One kubectl call per phase (Namespaces, CRDs, the rest), namespace and apply mode;
    // a call that fails (a kind not served yet) is made again, as apply is idempotent.
    let mut batches: BTreeMap<(u8, Option<String>, bool), Vec<&Planned>> = BTreeMap::new();
    for p in &planned {
        let phase = if p.defines_namespace {
            0
        } else if p.defines_crd {
            1
        } else {
            2
        };
        batches
            .entry((phase, p.namespace.clone(), p.server_side))
            .or_default()
            .push(p);
    }
    let mut pending: Vec<Vec<&Planned>> = batches.into_values().collect();
    // Retried for a minute, and for as long as a pass applies something (a slow pass on
    // a busy machine must not cut the retries short).
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last_errors = Vec::new();
    let mut progressed = true;
    while !pending.is_empty() && (progressed || Instant::now() < deadline) {
        last_errors.clear();
        let before = pending.len();
        pending.retain(|batch| match apply(&sim, batch) {
            Ok(()) => false,
            Err(e) => {
                last_errors.push(e);
                true
            }
        });
        progressed = pending.len() < before;
        if !pending.is_empty() {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    assert!(
        pending.is_empty(),
        "not applied:\n{}",
        last_errors.join("\n")
    );
    let applied = started.elapsed();

    // Read everything back, with managedFields (who changed what): one `kubectl get` per
    // version, each object kept from the read in the version it was committed in.
    let versions: BTreeMap<&LiveKey, &String> = planned.iter().flat_map(|p| &p.versions).collect();
    let kinds: BTreeSet<&String> = planned.iter().flat_map(|p| &p.kinds).collect();
    let mut by_version: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for k in kinds {
        // `kind.version.group`: the version is the second part.
        let version = k.split('.').nth(1).unwrap_or("").to_string();
        by_version.entry(version).or_default().push(k.as_str());
    }
    let mut items: BTreeMap<LiveKey, Value> = BTreeMap::new();
    for kinds in by_version.values() {
        let list = sim.kubectl(&[
            "get",
            kinds.join(",").as_str(),
            "-A",
            "-o",
            "json",
            "--show-managed-fields",
        ]);
        let list: Value = serde_json::from_str(&list).unwrap();
        for item in list["items"].as_array().into_iter().flatten() {
            let key = live_key(item);
            let committed_here = versions
                .get(&key)
                .is_none_or(|v| item["apiVersion"].as_str() == Some(v.as_str()));
            if committed_here {
                items.entry(key).or_insert_with(|| item.clone());
            }
        }
    }
    let live_count = items.len();
    let read_back = started.elapsed() - applied;
    let live = serde_json::json!({"apiVersion": "v1", "kind": "List",
        "items": items.into_values().collect::<Vec<_>>()});
    let live_path = dir.path().join("live.json");
    std::fs::write(&live_path, live.to_string()).unwrap();

    // One `check` per namespace choice: every object must be in sync.
    let mut groups: BTreeMap<Option<String>, Vec<&Planned>> = BTreeMap::new();
    for p in &planned {
        groups.entry(p.namespace.clone()).or_default().push(p);
    }
    let mut drift = Vec::new();
    for (ns, files) in &groups {
        let mut cmd = Command::new(DRIFTD);
        cmd.args(["check", "--format", "json", "-n"])
            .arg(ns.as_deref().unwrap_or("default"))
            .arg("--live")
            .arg(&live_path)
            .arg("--desired");
        for p in files {
            cmd.arg(&p.path);
        }
        let out = cmd.output().unwrap();
        match out.status.code() {
            Some(0) => {}
            Some(1) => {
                let report: Value = serde_json::from_slice(&out.stdout).unwrap();
                for o in report["objects"].as_array().into_iter().flatten() {
                    drift.push(format!(
                        "{} {}/{} {}: {}",
                        o["kind"],
                        o["namespace"].as_str().unwrap_or(""),
                        o["name"],
                        o["class"],
                        o["changes"]
                    ));
                }
            }
            _ => panic!(
                "check of {:?} failed: {}",
                files.iter().map(|p| &p.name).collect::<Vec<_>>(),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }
    println!(
        "{corpus}: {} files applied in {:.1}s ({} server-side), {live_count} live objects read back in {:.1}s, {} checks in {:.1}s; {} documents left out:",
        planned.len(),
        applied.as_secs_f64(),
        planned.iter().filter(|p| p.server_side).count(),
        read_back.as_secs_f64(),
        groups.len(),
        (started.elapsed() - applied - read_back).as_secs_f64(),
        left_out.len()
    );
    for l in &left_out {
        println!("  {l}");
    }
    assert!(
        drift.is_empty(),
        "{} objects not in sync:\n{}",
        drift.len(),
        drift.join("\n")
    );
}
