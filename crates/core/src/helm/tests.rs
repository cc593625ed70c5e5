use super::*;
use flate2::{write::GzEncoder, Compression};
use serde_json::{json, Value};
use std::io::Write;

/// The manifest Helm records for the chart `helm create web` makes (see the fixture's README).
const WEB_MANIFEST: &str = include_str!("../../../../tests/fixtures/helm-release/web-0.1.0.yaml");

/// A release as Helm 3 marshals `pkg/release/release.go` `Release` (with `info.go` `Info`,
/// the chart's metadata, the user's values in `config`, hooks kept apart from `manifest`).
fn release_json(version: i64, status: &str, manifest: &str) -> Value {
    json!({
        "name": "web",
        "info": {
            "first_deployed": "2026-11-30T09:00:00.123456789Z",
            "last_deployed": "2026-12-01T09:00:00.5Z",
            "deleted": "",
            "description": "Upgrade complete",
            "status": status,
            "notes": "1. Get the application URL by running these commands:"
        },
        "chart": {
            "metadata": {"name": "web", "version": "0.1.0", "appVersion": "1.16.0",
                         "apiVersion": "v2", "type": "application",
                         "description": "A Helm chart for Kubernetes"},
            "lock": null,
            "templates": [{"name": "templates/service.yaml", "data": "YXBpVmVyc2lvbjogdjEK"}],
            "values": {"replicaCount": 1},
            "schema": null,
            "files": []
        },
        "config": {"database": {"password": "hunter2-in-values"}},
        "manifest": manifest,
        "hooks": [{"name": "web-test-connection", "kind": "Pod",
                   "path": "web/templates/tests/test-connection.yaml",
                   "events": ["test"], "last_run": {"started_at": "", "completed_at": "",
                   "phase": ""}}],
        "version": version,
        "namespace": "shop"
    })
}

/// `pkg/storage/driver/util.go` `encodeRelease`: JSON, gzip at best compression, standard
/// base64. The result is what `data.release` of the Secret holds (the API's own base64 of
/// `data` is undone by the client).
fn encode_release(release: &Value) -> Vec<u8> {
    let json = serde_json::to_vec(release).unwrap();
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(&json).unwrap();
    base64::engine::general_purpose::STANDARD
        .encode(gz.finish().unwrap())
        .into_bytes()
}

#[test]
fn decodes_a_release_as_helm_3_encodes_it() {
    let data = encode_release(&release_json(3, "pending-upgrade", WEB_MANIFEST));
    let release = decode_release("shop/sh.helm.release.v1.web.v3", &data).unwrap();
    assert_eq!(release.name, "web");
    assert_eq!(release.namespace, "shop");
    assert_eq!(release.version, 3);
    assert_eq!(release.status, Status::PendingUpgrade);
    assert_eq!(release.chart_label(), "chart web 0.1.0");
    assert_eq!(
        release.last_deployed,
        Some("2026-12-01T09:00:00.5Z".parse().unwrap())
    );
    assert_eq!(release.manifest, WEB_MANIFEST);
    assert_eq!(release.source(), "helm:shop/web");
    assert!(
        !format!("{release:?}").contains("hunter2"),
        "the values are not kept"
    );
}

#[test]
fn a_release_stored_before_compression_is_plain_json_in_base64() {
    // decodeRelease skips gunzip when the gzip magic is absent.
    let json = serde_json::to_vec(&release_json(1, "deployed", "")).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(json);
    let release = decode_release("shop/s", data.as_bytes()).unwrap();
    assert_eq!(release.status, Status::Deployed);
}

#[test]
fn go_zero_time_is_no_time() {
    let mut value = release_json(1, "pending-install", "");
    value["info"]["last_deployed"] = json!("0001-01-01T00:00:00Z");
    let release = decode_release("shop/s", &encode_release(&value)).unwrap();
    assert_eq!(release.last_deployed, None);
}

#[test]
fn the_manifest_is_desired_state_without_hooks_and_in_the_release_namespace() {
    let cluster_role = "---\n# Source: web/templates/clusterrole.yaml\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: web-reader\nrules: []\n";
    let manifest = format!("{WEB_MANIFEST}{cluster_role}");
    let data = encode_release(&release_json(1, "deployed", &manifest));
    let release = decode_release("shop/sh.helm.release.v1.web.v1", &data).unwrap();
    let objects = desired_objects(&release, &LoadOptions::default()).unwrap();
    let keys: Vec<String> = objects.iter().map(|o| o.key.to_string()).collect();
    assert_eq!(objects.len(), 4, "{keys:?}");
    for o in &objects {
        assert_ne!(
            o.key.kind, "Pod",
            "the test hook is not desired state: {keys:?}"
        );
        assert!(o.origin.file.contains("Helm release shop/web version 1"));
        if o.key.kind == "ClusterRole" {
            assert_eq!(o.key.namespace, None);
            assert!(o.object.pointer("/metadata/namespace").is_none());
        } else {
            assert_eq!(o.key.namespace.as_deref(), Some("shop"), "{}", o.key);
            assert_eq!(o.object["metadata"]["namespace"], "shop");
        }
    }
    let deployment = objects.iter().find(|o| o.key.kind == "Deployment").unwrap();
    assert_eq!(
        deployment.object["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.16.0"
    );
}

#[test]
fn an_invalid_object_in_the_manifest_is_named_by_release_and_document() {
    let manifest = "---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n";
    let data = encode_release(&release_json(2, "deployed", manifest));
    let release = decode_release("shop/s", &data).unwrap();
    let err = desired_objects(&release, &LoadOptions::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("Helm release shop/web version 2: document 0: "),
        "{text}"
    );
    assert!(text.contains("metadata.name"), "{text}");
}

#[test]
fn a_gzip_bomb_is_refused() {
    let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
    let zeros = vec![b' '; 1024 * 1024];
    for _ in 0..=(MAX_RELEASE_BYTES / (1024 * 1024)) {
        gz.write_all(&zeros).unwrap();
    }
    let zipped = gz.finish().unwrap();
    assert!(zipped.len() < 1024 * 1024, "fits in a Secret");
    let data = base64::engine::general_purpose::STANDARD.encode(zipped);
    let err = decode_release("shop/sh.helm.release.v1.web.v1", data.as_bytes()).unwrap_err();
    assert_eq!(err.secret, "shop/sh.helm.release.v1.web.v1");
    assert!(err.reason.contains("more than 64 MiB"), "{err}");
}

#[test]
fn a_corrupt_payload_is_named_by_its_secret_without_its_bytes() {
    let secret = "shop/sh.helm.release.v1.web.v4";
    // JSON cut short right after a secret value.
    let full = serde_json::to_string(&release_json(4, "deployed", "")).unwrap();
    let cut = &full[..full.find("hunter2-in-values").unwrap() + 17];
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(cut.as_bytes()).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
    let err = decode_release(secret, data.as_bytes()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("Helm release Secret {secret}: ")),
        "{text}"
    );
    assert!(text.contains("truncated JSON"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");

    // A value of the wrong type: serde would quote it; the error does not.
    let mut value = release_json(4, "deployed", "");
    value["version"] = json!("hunter2");
    let err = decode_release(secret, &encode_release(&value)).unwrap_err();
    assert!(err.reason.contains("wrong shape"), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");

    // Gzip that breaks off: the gzip error, no bytes.
    let mut zipped = base64::engine::general_purpose::STANDARD
        .decode(encode_release(&release_json(4, "deployed", WEB_MANIFEST)))
        .unwrap();
    zipped.truncate(zipped.len() / 2);
    let data = base64::engine::general_purpose::STANDARD.encode(zipped);
    let err = decode_release(secret, data.as_bytes()).unwrap_err();
    assert!(err.reason.contains("not valid gzip"), "{err}");

    let err = decode_release(secret, b"not base64 at all!").unwrap_err();
    assert!(err.reason.contains("not base64"), "{err}");
    assert!(!err.to_string().contains("at all"), "{err}");

    let mut value = release_json(4, "in-orbit", "");
    value["info"]["status"] = json!("in-orbit");
    let err = decode_release(secret, &encode_release(&value)).unwrap_err();
    assert_eq!(err.reason, "info.status is not a Helm release status");
}

fn version(v: i64, status: Status) -> Release {
    Release {
        name: "web".into(),
        namespace: "shop".into(),
        version: v,
        status,
        chart: "web".into(),
        chart_version: "0.1.0".into(),
        last_deployed: None,
        manifest: String::new(),
    }
}

#[test]
fn standing_follows_helm_operations() {
    use Status::*;
    let at = |s: &Standing| {
        (
            s.deployed.map(|r| r.version),
            s.pending.map(|r| r.version),
            s.gone,
        )
    };
    let rollback_to = |v: &[Release]| standing(v).rollback_to;
    // An upgrade in flight.
    let v = [version(1, Deployed), version(2, PendingUpgrade)];
    assert_eq!(at(&standing(&v)), (Some(1), Some(2), false));
    // Between its two writes: old superseded, new not deployed yet.
    let v = [version(1, Superseded), version(2, PendingUpgrade)];
    assert_eq!(at(&standing(&v)), (None, Some(2), false));
    assert_eq!(rollback_to(&v), Some(1));
    // Done.
    let v = [version(1, Superseded), version(2, Deployed)];
    assert_eq!(at(&standing(&v)), (Some(2), None, false));
    // Failed upgrade: the old version stays deployed, nothing in flight.
    let v = [version(1, Deployed), version(2, Failed)];
    assert_eq!(at(&standing(&v)), (Some(1), None, false));
    // A first install in flight, and one that failed.
    assert_eq!(
        at(&standing(&[version(1, PendingInstall)])),
        (None, Some(1), false)
    );
    assert_eq!(at(&standing(&[version(1, Failed)])), (None, None, false));
    // A rollback in flight to what version 1 had.
    let v = [
        version(1, Superseded),
        version(2, Deployed),
        version(3, PendingRollback),
    ];
    assert_eq!(at(&standing(&v)), (Some(2), Some(3), false));
    assert_eq!(rollback_to(&v), Some(2));
    let v = [version(1, Failed), version(2, PendingInstall)];
    assert_eq!(rollback_to(&v), None, "never deployed: uninstall");
    // Uninstalled with --keep-history, and without (every Secret deleted).
    let v = [version(1, Superseded), version(2, Uninstalled)];
    assert_eq!(at(&standing(&v)), (None, None, true));
    assert_eq!(at(&standing(&[])), (None, None, true));
    // Mid-uninstall is not gone yet.
    assert_eq!(
        at(&standing(&[version(2, Uninstalling)])),
        (None, None, false)
    );
}

#[test]
fn a_pending_version_reads_back_from_its_holder_with_the_command_that_clears_it() {
    let lock = PendingLock {
        namespace: "shop".into(),
        name: "web".into(),
        version: 3,
        status: Status::PendingUpgrade,
        last_deployed: Some(2),
    };
    assert_eq!(
        lock.holder(),
        "helm pending-upgrade of version 3; last deployed version 2"
    );
    assert_eq!(
        PendingLock::parse("helm:shop/web", &lock.holder()),
        Some(lock.clone())
    );
    assert_eq!(lock.release_command(), "helm rollback web 2 -n shop");
    let first = PendingLock {
        last_deployed: None,
        status: Status::PendingInstall,
        version: 1,
        ..lock
    };
    assert_eq!(
        PendingLock::parse("helm:shop/web", &first.holder()),
        Some(first.clone())
    );
    assert_eq!(first.release_command(), "helm uninstall web -n shop");
    assert_eq!(
        PendingLock::parse("shop", &first.holder()),
        None,
        "not a Helm source"
    );
    assert_eq!(PendingLock::parse("helm:shop/web", "pod:ci/deploy-1"), None);
    assert_eq!(parse_source("helm:shop/web"), Some(("shop", "web")));
    assert_eq!(parse_source("helm:shop"), None);
}
