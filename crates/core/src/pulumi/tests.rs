//! Against fixture files in Pulumi's own formats (tests/fixtures/pulumi/README.md names the
//! source of each): `pulumi stack export` output and the file backend's checkpoint (pulumi
//! `sdk/go/common/apitype/core.go`), and file-backend lock files (pulumi
//! `pkg/backend/diy/lock.go`).

use super::*;
use serde_json::json;

const EXPORT: &str = include_str!("../../../../tests/fixtures/pulumi/stack-export.json");
const CHECKPOINT: &str =
    include_str!("../../../../tests/fixtures/pulumi/backend/.pulumi/stacks/shop/dev.json");
const INTERRUPTED: &str = include_str!("../../../../tests/fixtures/pulumi/interrupted/export.json");
const INTERRUPTED_CHECKPOINT: &str = include_str!(
    "../../../../tests/fixtures/pulumi/interrupted/state/.pulumi/stacks/shop/dev.json"
);
const LOCK_PATH: &str = "tests/fixtures/pulumi/backend/.pulumi/locks/organization/shop/dev/0c7e5b7a-2f4d-4c1b-9a8e-3d6f1e2b4c5a.json";
const LOCK: &str = include_str!("../../../../tests/fixtures/pulumi/backend/.pulumi/locks/organization/shop/dev/0c7e5b7a-2f4d-4c1b-9a8e-3d6f1e2b4c5a.json");
const LEGACY_LOCK_PATH: &str =
    "/srv/state/.pulumi/locks/dev/9b1f0e4c-7d2a-4e6b-8c3f-1a5d7e9b2c40.json";
const LEGACY_LOCK: &str = include_str!("../../../../tests/fixtures/pulumi/legacy-backend/.pulumi/locks/dev/9b1f0e4c-7d2a-4e6b-8c3f-1a5d7e9b2c40.json");

fn urn(kind_and_name: &str) -> String {
    format!("urn:pulumi:dev::shop::{kind_and_name}")
}

#[test]
fn a_stack_export_yields_its_kubernetes_objects_from_their_inputs() {
    let export = parse_stack_export(EXPORT, "stack.json").unwrap();
    assert_eq!(export.stack.as_deref(), Some("dev"));
    assert_eq!(export.project.as_deref(), Some("shop"));
    let imported: Vec<(usize, &str)> = export
        .resources
        .iter()
        .map(|r| (r.index, r.object["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        imported,
        [
            (2, "Namespace"),
            (3, "ConfigMap"),
            (4, "Secret"),
            (5, "Deployment"),
            (6, "Service"),
            (8, "StatefulSet"),
            (12, "CustomResourceDefinition"),
            (13, "ClusterIssuer"),
        ]
    );
    let deploy = &export.resources[3].object;
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["image"],
        "ghcr.io/example/web:1.4.2"
    );
    // Only inputs: nothing the API server filled in (status, uid, defaults) is desired.
    assert!(deploy.get("status").is_none());
    assert!(deploy["metadata"].get("uid").is_none());
    assert!(deploy["spec"].get("strategy").is_none());
    // The autonamed ConfigMap keeps the name Pulumi gave it.
    assert_eq!(
        export.resources[1].object["metadata"]["name"],
        "web-config-6f2a1b0c"
    );
    // The Service's namespace came from the kubeconfig: only its outputs know it.
    assert_eq!(export.resources[4].object["metadata"]["namespace"], "shop");
    assert_eq!(export.other_resources, 1, "the AWS bucket");
}

#[test]
fn resources_that_are_not_objects_of_this_stack_are_skipped_with_the_reason() {
    let export = parse_stack_export(EXPORT, "stack.json").unwrap();
    let skipped: Vec<(&str, &str)> = export
        .skipped
        .iter()
        .map(|s| (s.resource_type.as_str(), s.reason))
        .collect();
    assert_eq!(
        skipped,
        [
            ("pulumi:providers:kubernetes", "Kubernetes provider, not an object"),
            (
                "kubernetes:helm.sh/v3:Chart",
                "component resource: its objects are listed as its children"
            ),
            (
                "kubernetes:apps/v1:DeploymentPatch",
                "patch of an object another tool owns (server-side apply)"
            ),
            (
                "kubernetes:core/v1:ConfigMap",
                "read with .get(), not managed by this stack"
            ),
            (
                "kubernetes:helm.sh/v3:Release",
                "Pulumi resource that is not a Kubernetes object (its objects belong to Helm or to its children)"
            ),
        ]
    );
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
                     "metadata": {"name": "migrate-3c9d2a1b", "namespace": "shop"}});
    assert_eq!(
        export.pending_operations,
        [PendingOperation {
            index: 0,
            urn: urn("kubernetes:batch/v1:Job::migrate"),
            operation: "creating".into(),
            object: Some(job),
            skipped: None,
        }]
    );
}

#[test]
fn encrypted_secrets_are_left_out_and_named_never_copied() {
    let export = parse_stack_export(EXPORT, "stack.json").unwrap();
    assert_eq!(
        export.left_out,
        [
            LeftOut {
                urn: urn("kubernetes:core/v1:Secret::db-credentials"),
                field: "data".into(),
                why: LeftOutWhy::Encrypted
            },
            LeftOut {
                urn: urn("kubernetes:apps/v1:Deployment::web"),
                field: "spec.template.spec.containers[0].env[1].value".into(),
                why: LeftOutWhy::Encrypted
            },
        ]
    );
    let secret = &export.resources[2].object;
    assert!(secret.get("data").is_none());
    assert_eq!(secret["type"], "Opaque");
    let env = &export.resources[3].object["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(
        env[1],
        json!({"name": "API_TOKEN"}),
        "the name stays, the value goes"
    );
    let all = serde_json::to_string(
        &export
            .resources
            .iter()
            .map(|r| &r.object)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(
        !all.contains("ciphertext") && !all.contains(SIG_KEY),
        "{all}"
    );
}

#[test]
fn plaintext_secrets_are_imported_only_into_a_secrets_data() {
    // `pulumi stack export --show-secrets`: every secret in plaintext.
    let export = parse_stack_export(INTERRUPTED, "export.json").unwrap();
    let secret = &export.resources[1].object;
    assert_eq!(secret["kind"], "Secret");
    assert_eq!(
        secret["stringData"],
        json!({"token": "s3cr3t-api-token-4b1d"}),
        "the store keeps a Secret's values as keyed hashes"
    );
    // Anywhere else the plaintext would be stored as it is: left out and named.
    let env = &export.resources[2].object["spec"]["template"]["spec"]["containers"][0]["env"];
    assert_eq!(env[1], json!({"name": "API_TOKEN"}));
    let field = "spec.template.spec.containers[0].env[1].value";
    let web = urn("kubernetes:apps/v1:Deployment::web");
    let plaintext: Vec<(&str, &str)> = export
        .left_out
        .iter()
        .filter(|l| l.why == LeftOutWhy::Plaintext)
        .map(|l| (l.urn.as_str(), l.field.as_str()))
        .collect();
    assert_eq!(
        plaintext,
        [(web.as_str(), field), (web.as_str(), field)],
        "resource and pending operation"
    );
    let all = serde_json::to_string(&(
        export
            .resources
            .iter()
            .map(|r| &r.object)
            .collect::<Vec<_>>(),
        export
            .pending_operations
            .iter()
            .map(|p| &p.object)
            .collect::<Vec<_>>(),
    ))
    .unwrap();
    assert!(!all.contains("tok-plain-7f3a"), "{all}");
}

#[test]
fn plaintext_secrets_from_show_secrets_are_imported() {
    let text = json!({
        "version": 3,
        "deployment": {"resources": [{
            "urn": "urn:pulumi:dev::p::kubernetes:core/v1:Secret::s",
            "custom": true,
            "type": "kubernetes:core/v1:Secret",
            "inputs": {
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "s", "annotations": {"a.example.com/x": "1"}},
                "stringData": {SIG_KEY: SECRET_SIG, "plaintext": "{\"password\":\"hunter2\"}"},
                "data": {"k": "04da6b54-80e4-46f7-96ec-b56ff0331ba9"}
            }
        }]}
    })
    .to_string();
    let export = parse_stack_export(&text, "s.json").unwrap();
    assert_eq!(
        export.resources[0].object["stringData"],
        json!({"password": "hunter2"})
    );
    assert_eq!(
        export.left_out,
        [LeftOut {
            urn: "urn:pulumi:dev::p::kubernetes:core/v1:Secret::s".into(),
            field: "data.k".into(),
            why: LeftOutWhy::Unknown
        }]
    );
    assert_eq!(
        child_path("metadata.annotations", "a.example.com/x"),
        "metadata.annotations[\"a.example.com/x\"]"
    );
}

#[test]
fn objects_pass_the_same_validation_as_committed_manifests() {
    let export = parse_stack_export(EXPORT, "stack.json").unwrap();
    let objects = manifest_objects(&export, "stack.json", &LoadOptions::default()).unwrap();
    let keys: Vec<String> = objects.iter().map(|o| o.key.to_string()).collect();
    assert_eq!(
        keys,
        [
            "Namespace shop",
            "ConfigMap shop/web-config-6f2a1b0c",
            "Secret shop/db-credentials",
            "Deployment.apps shop/web",
            "Service shop/web",
            "StatefulSet.apps shop/redis-master",
            "CustomResourceDefinition.apiextensions.k8s.io clusterissuers.cert-manager.io",
            // Cluster-scoped by the CRD in the same export: no namespace.
            "ClusterIssuer.cert-manager.io letsencrypt",
        ]
    );
    assert_eq!(objects[4].origin.to_string(), "stack.json: document 6");

    // A resource that is not a valid object is named by index and URN.
    let mut broken = export.clone();
    broken.resources[1].object["metadata"] = json!({"labels": {}});
    let err = manifest_objects(&broken, "stack.json", &LoadOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "stack.json: resources[3] ({}): field metadata.name is required",
            urn("kubernetes:core/v1:ConfigMap::web-config")
        )
    );
    let mut twice = export.clone();
    let copy = KubernetesResource {
        index: 99,
        urn: "urn:pulumi:dev::shop::kubernetes:core/v1:Namespace::again".into(),
        ..twice.resources[0].clone()
    };
    twice.resources.push(copy);
    let err = manifest_objects(&twice, "stack.json", &LoadOptions::default()).unwrap_err();
    assert!(
        err.to_string().ends_with(&format!(
            "Namespace shop is also managed by {}",
            urn("kubernetes:core/v1:Namespace::shop")
        )),
        "{err}"
    );
}

#[test]
fn a_file_backend_checkpoint_reads_like_an_export() {
    let export = parse_stack_export(CHECKPOINT, "dev.json").unwrap();
    assert_eq!(export.resources.len(), 1);
    assert_eq!(
        export.resources[0].object["metadata"]["name"],
        "web-config-6f2a1b0c"
    );
}

#[test]
fn what_is_not_a_stack_export_is_refused_with_the_reason() {
    for (text, reason) in [
        ("{", "invalid JSON"),
        (
            "{\"version\": 1, \"deployment\": {}}",
            "deployment version 1 is not supported",
        ),
        ("{\"version\": 3}", "no \"deployment\""),
        (
            "{\"version\": 3, \"deployment\": {\"resources\": 5}}",
            "\"resources\" is not a list",
        ),
    ] {
        let err = parse_stack_export(text, "x.json").unwrap_err().to_string();
        assert!(
            err.starts_with("x.json: not a Pulumi stack export: "),
            "{err}"
        );
        assert!(err.contains(reason), "{reason:?} in {err}");
    }
}

#[test]
fn a_project_layout_lock_names_stack_holder_and_the_cancel_command() {
    let lock = parse_lock(Path::new(LOCK_PATH), LOCK).unwrap();
    assert_eq!(
        lock,
        PulumiLock {
            org: Some("organization".into()),
            project: Some("shop".into()),
            stack: "dev".into(),
            id: "0c7e5b7a-2f4d-4c1b-9a8e-3d6f1e2b4c5a".into(),
            pid: 30553,
            username: "pulumi-kubernetes-operator".into(),
            hostname: "shop-dev-workspace-0".into(),
            timestamp: "2024-05-14T07:12:44.918273645Z".parse().unwrap(),
            backend_root: "tests/fixtures/pulumi/backend".into(),
        }
    );
    assert_eq!(
        lock.holder(),
        "pulumi-kubernetes-operator@shop-dev-workspace-0 (pid 30553)"
    );
    assert_eq!(
        lock.cancel_command(),
        "PULUMI_BACKEND_URL=file://tests/fixtures/pulumi/backend pulumi cancel --yes --stack organization/shop/dev"
    );
}

#[test]
fn a_legacy_layout_lock_has_no_project() {
    let lock = parse_lock(Path::new(LEGACY_LOCK_PATH), LEGACY_LOCK).unwrap();
    assert_eq!((&lock.org, &lock.project), (&None, &None));
    assert_eq!(lock.stack, "dev");
    assert_eq!(lock.backend_root, "/srv/state");
    assert_eq!(
        lock.timestamp,
        "2023-02-01T16:03:21.5Z".parse::<Timestamp>().unwrap(),
        "Go writes the local offset"
    );
    let lock = PulumiLock {
        backend_root: "/srv/pulumi state".into(),
        ..lock
    };
    assert_eq!(
        lock.cancel_command(),
        "PULUMI_BACKEND_URL='file:///srv/pulumi state' pulumi cancel --yes --stack dev"
    );
}

#[test]
fn what_is_not_a_lock_file_is_refused_with_the_reason() {
    for (path, content, reason) in [
        ("/x/locks/dev/a.json", LOCK, "not under .pulumi/locks/"),
        (
            "/x/.pulumi/locks/a/b/a.json",
            LOCK,
            "expected .pulumi/locks/",
        ),
        ("/x/.pulumi/locks/dev/a.lock", LOCK, "ends in .json"),
        (
            "/x/.pulumi/locks/dev/a.json",
            "{\"pid\": 1}",
            "invalid lock content",
        ),
        (
            "/x/.pulumi/locks/dev/a.json",
            "{\"pid\":1,\"username\":\"u\",\"hostname\":\"h\",\"timestamp\":\"yesterday\"}",
            "invalid lock content",
        ),
    ] {
        let err = parse_lock(Path::new(path), content)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("{path}: not a Pulumi lock file: ")),
            "{err}"
        );
        assert!(err.contains(reason), "{reason:?} in {err}");
    }
}

#[test]
fn a_lock_is_stale_when_its_pod_is_gone_or_it_is_too_old() {
    let lock = parse_lock(Path::new(LOCK_PATH), LOCK).unwrap();
    let now = lock.timestamp + SignedDuration::from_mins(30);
    let hour = Some(Duration::from_secs(3600));
    let gone = |name: &str| Some(name != "shop-dev-workspace-0");
    let there = |_: &str| Some(true);
    let unknown = |_: &str| None;
    assert_eq!(
        stale(&lock, now, hour, gone),
        Some(StaleReason::HolderPodGone {
            pod: "shop-dev-workspace-0".into()
        })
    );
    assert_eq!(
        stale(&lock, now, hour, gone).unwrap().to_string(),
        "its holder, pod shop-dev-workspace-0, no longer exists"
    );
    assert_eq!(stale(&lock, now, hour, there), None);
    assert_eq!(stale(&lock, now, hour, unknown), None);
    assert_eq!(
        stale(&lock, now, None, unknown),
        None,
        "no age limit configured"
    );
    let later = lock.timestamp + SignedDuration::from_hours(2);
    let reason = stale(&lock, later, hour, there).unwrap();
    assert_eq!(
        reason.to_string(),
        "it was taken 2h ago, longer than the allowed 1h"
    );
}

#[test]
fn an_interrupted_update_leaves_its_operation_with_the_new_inputs() {
    let export = parse_stack_export(INTERRUPTED, "export.json").unwrap();
    assert_eq!(
        export.time,
        Some("2026-11-30T10:02:17.504112Z".parse().unwrap()),
        "deployment.manifest.time, written with the writer's offset"
    );
    assert_eq!(
        export.qualified_stack, None,
        "an export does not name its stack"
    );
    let [op] = &export.pending_operations[..] else {
        panic!("{:?}", export.pending_operations)
    };
    assert_eq!((op.index, op.operation.as_str()), (0, "updating"));
    assert_eq!(op.urn, urn("kubernetes:apps/v1:Deployment::web"));
    let object = op.object.as_ref().unwrap();
    assert_eq!(
        object["spec"]["template"]["spec"]["containers"][0]["image"], "ghcr.io/example/web:1.5.0",
        "what the update was applying"
    );
    assert_eq!(
        export.resources[2].object["spec"]["template"]["spec"]["containers"][0]["image"],
        "ghcr.io/example/web:1.4.2",
        "what the state recorded before it"
    );
    let objects = pending_objects(&export, "export.json", &LoadOptions::default());
    let [(_, Ok(Some(object)))] = &objects[..] else {
        panic!("{objects:?}")
    };
    assert_eq!(object.key.to_string(), "Deployment.apps shop/web");
    assert_eq!(object.origin.to_string(), "export.json: document 0");
}

#[test]
fn a_checkpoint_names_its_stack_and_a_pending_create() {
    let export = parse_stack_export(INTERRUPTED_CHECKPOINT, "dev.json").unwrap();
    assert_eq!(
        export.qualified_stack.as_deref(),
        Some("organization/shop/dev")
    );
    let [op] = &export.pending_operations[..] else {
        panic!("{:?}", export.pending_operations)
    };
    assert_eq!(op.operation, "creating");
    assert_eq!(
        op.object.as_ref().unwrap()["metadata"]["name"],
        "web-flags-5d1e9c2a"
    );
    // A checkpoint holds ciphertext only: nothing of it is imported.
    assert!(export
        .left_out
        .iter()
        .all(|l| l.why == LeftOutWhy::Encrypted));
    assert!(!export.left_out.is_empty());
}

#[test]
fn a_pending_update_takes_a_namespace_only_the_last_state_knows() {
    let mut root: Value = serde_json::from_str(EXPORT).unwrap();
    // The Service's namespace came from the kubeconfig (only its outputs have it); an
    // update of it begins from a state without outputs (pulumi step_generator.go: the new
    // state's outputs are nil until the provider answers).
    let mut resource = root["deployment"]["resources"][6].clone();
    resource.as_object_mut().unwrap().remove("outputs");
    resource["inputs"]["spec"]["ports"][0]["port"] = json!(8080);
    let deleted = root["deployment"]["resources"][3].clone();
    root["deployment"]["pending_operations"] = json!([
        {"resource": resource, "type": "updating"},
        {"resource": deleted, "type": "deleting"},
        {"resource": root["deployment"]["resources"][10].clone(), "type": "reading"},
        {"resource": root["deployment"]["resources"][9].clone(), "type": "updating"},
    ]);
    let export = parse_stack_export(&root.to_string(), "x.json").unwrap();
    let ops = &export.pending_operations;
    assert_eq!(ops.len(), 4);
    assert_eq!(
        ops[0].object.as_ref().unwrap()["metadata"]["namespace"],
        "shop"
    );
    assert_eq!(
        (ops[1].object.as_ref(), ops[1].skipped),
        (None, None),
        "a delete applies no object"
    );
    assert_eq!(
        ops[3].skipped,
        Some("patch of an object another tool owns (server-side apply)")
    );
    let objects = pending_objects(&export, "x.json", &LoadOptions::default());
    let kinds: Vec<(&str, Option<String>)> = objects
        .iter()
        .map(|(op, o)| {
            (
                op.operation.as_str(),
                o.as_ref().unwrap().as_ref().map(|o| o.key.to_string()),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("updating", Some("Service shop/web".to_string())),
            ("deleting", None),
            ("updating", None),
        ],
        "a read changes nothing: no intent"
    );
}

#[test]
fn a_pending_object_kube_apiserver_would_refuse_is_named() {
    let mut root: Value = serde_json::from_str(EXPORT).unwrap();
    let inputs = &mut root["deployment"]["pending_operations"][0]["resource"]["inputs"];
    inputs["metadata"].as_object_mut().unwrap().remove("name");
    let export = parse_stack_export(&root.to_string(), "stack.json").unwrap();
    let objects = pending_objects(&export, "stack.json", &LoadOptions::default());
    let [(_, Err(err))] = &objects[..] else {
        panic!("{objects:?}")
    };
    assert!(
        err.to_string()
            == format!(
                "stack.json: pending_operations[0] ({}): field metadata.name is required",
                urn("kubernetes:batch/v1:Job::migrate")
            ),
        "{err}"
    );
}
