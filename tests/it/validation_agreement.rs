//! `driftd commit` and the simulator agree on what kube-apiserver refuses: every object of
//! the one shared list ([`crate::validation::refused`]) is refused by `commit` (exit 2,
//! no database created) and by the simulator when the real kubectl creates it (nothing
//! stored), in the same words; every object of the shared accepted list
//! ([`crate::validation::ACCEPTED`], plus edge cases here) is accepted by both.

use crate::commit_cli::{driftd, stderr};
use crate::scaffold::Sim;
use crate::validation::{refused, ACCEPTED};
use driftd_core::manifest::{self, LoadOptions};
use std::path::Path;

/// What `commit` said about the refused object, without the `error: FILE: document N: `
/// that only a file reader can add.
fn commit_refusal(dir: &Path, file: &str) -> String {
    let out = driftd(
        dir,
        &["commit", "--db", "agree.db", "--source", "app", "-f", file],
        None,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "commit {file}: {err}");
    assert!(
        !dir.join("agree.db").exists(),
        "commit {file} created the database"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("commit {file}: no error line in {err}"));
    let prefix = format!("error: {file}: document 0: ");
    line.strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("commit {file}: {line:?} does not start with {prefix:?}"))
        .to_string()
}

/// The words kubectl must show for a refusal `commit` worded as `message`: kubectl prints a
/// `422 Invalid` from its causes (`The Kind "name" is invalid: field: ...`), so the part
/// after `is invalid: `; a `400` as the server's message. A kind discovery does not serve
/// never reaches the server: kubectl says `no matches for kind`, which `commit` follows with
/// the apiVersion to use.
fn kubectl_words(message: &str) -> String {
    if let Some((_, causes)) = message.split_once(" is invalid: ") {
        // Several causes: kubectl lists them one per line (`* field: ...`); the first one's
        // field, type and value (`metadata.name: Invalid value: "X"`) must be among them.
        if let Some(list) = causes.strip_prefix('[') {
            let parts: Vec<&str> = list.splitn(4, ": ").collect();
            return parts[..3.min(parts.len())].join(": ");
        }
        return causes.to_string();
    }
    match message.split_once("; ") {
        Some((head, _)) if head.starts_with("no matches for kind") => head.to_string(),
        _ => message.to_string(),
    }
}

/// `kind.group` (as kubectl takes it: `clusterrole.rbac.authorization.k8s.io`, the kind
/// alone for the core group) and name of the one object in `text`, read as a cluster's
/// object is read (not validated), so refused objects have one too; `None` if unreadable.
fn identity(text: &str) -> Option<(String, String)> {
    let options = LoadOptions {
        from_cluster: true,
        ..LoadOptions::default()
    };
    let loaded = manifest::read_text(text, "case.yaml", &options).ok()?;
    let key = &loaded.objects.first()?.key;
    let kind = key.kind.to_lowercase();
    let kind = if key.group.is_empty() {
        kind
    } else {
        format!("{kind}.{}", key.group)
    };
    Some((kind, key.name.clone()))
}

#[test]
fn commit_and_the_simulator_refuse_and_accept_the_same_objects_in_the_same_words() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let mut disagreements = Vec::new();
    let cases = refused();
    for (file, text, _) in &cases {
        std::fs::write(dir.path().join(file), text).unwrap();
        let message = commit_refusal(dir.path(), file);
        let path = dir.path().join(file);
        let out = sim.kubectl_output(&["create", "-f", path.to_str().unwrap()], None);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            !err.contains("hunter2"),
            "{file}: a Secret value leaked: {err}"
        );
        if out.status.success() {
            disagreements.push(format!(
                "{file}: commit refused ({message}), the simulator accepted it"
            ));
            continue;
        }
        let words = kubectl_words(&message);
        if !err.contains(&words) {
            disagreements.push(format!(
                "{file}: commit said {message:?}; kubectl said {err:?} (expected {words:?})"
            ));
        }
        // Nothing stored: the kind and name, when there are such, are not found.
        if let Some((kind, name)) = identity(text) {
            let got = sim.kubectl_output(
                &[
                    "get",
                    kind.as_str(),
                    name.as_str(),
                    "--ignore-not-found",
                    "-o",
                    "name",
                ],
                None,
            );
            let shown = String::from_utf8_lossy(&got.stdout);
            if !shown.trim().is_empty() {
                disagreements.push(format!("{file}: refused, yet the simulator stored {shown}"));
            }
        }
    }

    // Accepted by both: the shared list one document at a time, and edge cases at limits.
    let just_under = "x".repeat(256 * 1024 - "big".len());
    let accepted: Vec<String> = ACCEPTED
        .split("---\n")
        .map(str::to_string)
        .chain([
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: at-the-limit\n  annotations: {{big: {just_under}}}\n"),
            format!("apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: {}}}\nspec:\n  schedule: '@daily'\n  jobTemplate: {{spec: {{template: {{spec: {{restartPolicy: Never, containers: [{{name: c, image: i}}]}}}}}}}}\n", "c".repeat(52)),
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: 'system:metrics-server:system:auth-delegator'}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: 'system:auth-delegator'}\nsubjects: [{kind: ServiceAccount, name: m, namespace: kube-system}]\n".to_string(),
            "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: deny}\nspec: {podSelector: {}}\n".to_string(),
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: web}\nspec: {minAvailable: 1, selector: {matchLabels: {app: web}}}\n".to_string(),
            "apiVersion: v1\nkind: Endpoints\nmetadata: {name: ext}\nsubsets: [{addresses: [{ip: 10.0.0.1}], ports: [{port: 80}]}]\n".to_string(),
        ])
        .collect();
    for (i, text) in accepted.iter().enumerate() {
        let file = format!("ok-{i}.yaml");
        let path = dir.path().join(&file);
        std::fs::write(&path, text).unwrap();
        let source = format!("s{i}");
        let out = driftd(
            dir.path(),
            &[
                "commit",
                "--db",
                "ok.db",
                "--source",
                source.as_str(),
                "-f",
                file.as_str(),
            ],
            None,
        );
        if !out.status.success() {
            disagreements.push(format!("{file}: commit refused: {}", stderr(&out)));
        }
        let out = sim.kubectl_output(&["create", "-f", path.to_str().unwrap()], None);
        if !out.status.success() {
            disagreements.push(format!(
                "{file}: the simulator refused: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
            continue;
        }
        let (kind, name) = identity(text).unwrap();
        sim.kubectl(&["get", kind.as_str(), name.as_str(), "-o", "name"]);
    }
    println!(
        "{} refused and {} accepted objects compared",
        cases.len(),
        accepted.len()
    );
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}
