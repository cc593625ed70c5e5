//! `driftd import pulumi` with fixture files in Pulumi's own formats: `stack-export.json` is
//! `pulumi stack export` output, `backend/.pulumi/stacks/shop/dev.json` a file backend's
//! checkpoint (pulumi `sdk/go/common/apitype/core.go`; tests/fixtures/pulumi/README.md names
//! the source of every format). The interrupted `pulumi up` end to end is in
//! `pulumi_interrupted.rs`.

use crate::scaffold::DRIFTD;
use driftd_store::Store;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pulumi")
        .join(name)
}

fn driftd(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(DRIFTD)
        .args(args)
        .current_dir(dir)
        .env("DRIFTD_DB", dir.join("d.db"))
        .env("USER", "tester")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        let mut input = input;
        input.write_all(text.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

/// `driftd import pulumi --source shop ARGS`.
fn import(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut all = vec!["import", "pulumi", "--source", "shop"];
    all.extend(args);
    driftd(dir, &all, stdin)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every `ciphertext` in the export: none may show up anywhere driftd writes.
fn ciphertexts(export: &Value, out: &mut Vec<String>) {
    match export {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("ciphertext", Value::String(c)) => out.push(c.clone()),
                    _ => ciphertexts(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| ciphertexts(v, out)),
        _ => {}
    }
}

#[test]
fn a_stack_export_is_committed_with_its_kubernetes_objects_and_no_ciphertext() {
    let dir = tempfile::tempdir().unwrap();
    let export = fixture("stack-export.json");
    let out = import(dir.path(), &[export.to_str().unwrap()], None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    // The interrupted create of the Job is an intent with Pulumi's ways out; the export
    // names no backend, so the commands are for the project's directory.
    let job = "urn:pulumi:dev::shop::kubernetes:batch/v1:Job::migrate";
    assert_eq!(
        stdout,
        format!(
            "revision 1 of source shop (8 objects) from Pulumi stack shop/dev\n\
             intent 1 (interrupted, held by pulumi update of dev at 2024-05-14T07:12:58Z): \
             interrupted while creating {job}\n  \
             keep it:  pulumi refresh --yes --stack dev --import-pending-creates {job} \
             shop/migrate-3c9d2a1b\n  \
             drop it (after undoing the change):  pulumi stack export --stack dev | \
             pulumi stack import --stack dev\n"
        )
    );

    let store = Store::open(&dir.path().join("d.db")).unwrap();
    let state = store.desired_state().unwrap();
    let mut keys: Vec<String> = state.objects.iter().map(|o| o.key.to_string()).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "ClusterIssuer.cert-manager.io letsencrypt",
            "ConfigMap shop/web-config-6f2a1b0c",
            "CustomResourceDefinition.apiextensions.k8s.io clusterissuers.cert-manager.io",
            "Deployment.apps shop/web",
            "Namespace shop",
            "Secret shop/db-credentials",
            "Service shop/web",
            "StatefulSet.apps shop/redis-master",
        ]
    );
    let object = |kind: &str| {
        &state
            .objects
            .iter()
            .find(|o| o.key.kind == kind)
            .unwrap()
            .object
    };
    assert_eq!(
        object("Deployment")["spec"]["template"]["spec"]["containers"][0]["image"],
        "ghcr.io/example/web:1.4.2"
    );
    let secret = object("Secret");
    assert!(
        secret.get("data").is_none(),
        "ciphertext is not data: {secret}"
    );
    assert_eq!(secret["type"], "Opaque");
    let env = &object("Deployment")["spec"]["template"]["spec"]["containers"][0]["env"][1];
    assert_eq!(env, &serde_json::json!({"name": "API_TOKEN"}));
    assert_eq!(
        store.history("shop").unwrap()[0].message,
        "pulumi stack export of shop/dev"
    );
    drop(store);

    for (urn, field) in [
        (
            "urn:pulumi:dev::shop::kubernetes:core/v1:Secret::db-credentials",
            "data",
        ),
        (
            "urn:pulumi:dev::shop::kubernetes:apps/v1:Deployment::web",
            "spec.template.spec.containers[0].env[1].value",
        ),
    ] {
        let warning = format!("warning: {urn}: field {field} is a Pulumi secret");
        assert!(stderr.contains(&warning), "{warning:?} in {stderr}");
    }
    assert!(
        stderr.contains(
            "skipped urn:pulumi:dev::shop::kubernetes:apps/v1:DeploymentPatch::coredns-replicas"
        ),
        "{stderr}"
    );
    let mut secrets = Vec::new();
    ciphertexts(
        &serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap(),
        &mut secrets,
    );
    assert_eq!(
        secrets.len(),
        3,
        "the fixture's ciphertexts (inputs and outputs)"
    );
    let db = std::fs::read(dir.path().join("d.db")).unwrap();
    let wal = std::fs::read(dir.path().join("d.db-wal")).unwrap_or_default();
    for c in &secrets {
        assert!(
            !stderr.contains(c) && !stdout.contains(c),
            "ciphertext printed"
        );
        let c = c.as_bytes();
        for bytes in [&db, &wal] {
            assert!(!bytes.windows(c.len()).any(|w| w == c), "ciphertext stored");
        }
    }

    // The same export again is the same desired state.
    let out = import(dir.path(), &[export.to_str().unwrap()], None);
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(
            "unchanged: source shop is already at revision 1 from Pulumi stack shop/dev\n\
             intent 1 (interrupted, "
        ),
        "the same intent stands: {stdout}"
    );
}

#[test]
fn a_file_backend_checkpoint_imports_from_stdin_too() {
    let dir = tempfile::tempdir().unwrap();
    let checkpoint =
        std::fs::read_to_string(fixture("backend/.pulumi/stacks/shop/dev.json")).unwrap();
    let out = import(dir.path(), &["-m", "from state", "-"], Some(&checkpoint));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "revision 1 of source shop (1 object) from Pulumi stack shop/dev\n"
    );
}

#[test]
fn an_export_that_is_not_valid_is_refused_and_creates_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let mut export: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("stack-export.json")).unwrap())
            .unwrap();
    // The ClusterIssuer: no outputs to take a name from either.
    export["deployment"]["resources"][13]["inputs"]["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("name");
    std::fs::write(dir.path().join("broken.json"), export.to_string()).unwrap();
    let out = import(dir.path(), &["broken.json"], None);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: broken.json: resources[13] \
         (urn:pulumi:dev::shop::kubernetes:cert-manager.io/v1:ClusterIssuer::letsencrypt): \
         field metadata.name is required\n"
    );
    std::fs::write(dir.path().join("other.json"), "{\"version\": 3}").unwrap();
    let out = import(dir.path(), &["other.json"], None);
    assert!(
        text(&out.stderr).contains("other.json: not a Pulumi stack export"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("d.db").exists());
}
