//! The importer without a cluster: release Secrets as Helm 3 writes them, fed as the
//! watcher would, and what the store then holds.

use super::*;
use base64::Engine as _;
use driftd_store::IntentState;
use flate2::{write::GzEncoder, Compression};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::ByteString;
use serde_json::json;
use std::io::Write;

fn manifest(image: &str) -> String {
    format!(
        "---\n# Source: web/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\n\
         metadata:\n  name: web\ndata:\n  image: \"{image}\"\n"
    )
}

/// A release Secret as Helm 3's Secrets driver writes it (`pkg/storage/driver/secrets.go`
/// `newSecretsObject`; payload per `util.go` `encodeRelease`: JSON, gzip, base64).
fn release_secret(ns: &str, version: i64, status: &str, image: &str) -> Secret {
    let release = json!({
        "name": "web", "namespace": ns, "version": version,
        "info": {"status": status, "last_deployed": "2026-12-01T09:00:00Z",
                 "first_deployed": "2026-12-01T08:00:00Z", "description": "Install complete"},
        "chart": {"metadata": {"name": "web", "version": "0.1.0"}},
        "config": {"password": "hunter2"},
        "manifest": manifest(image),
    });
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(&serde_json::to_vec(&release).unwrap())
        .unwrap();
    let text = base64::engine::general_purpose::STANDARD.encode(gz.finish().unwrap());
    secret(ns, version, status, text.into_bytes())
}

fn secret(ns: &str, version: i64, status: &str, data: Vec<u8>) -> Secret {
    let labels = [
        ("name", "web".to_string()),
        ("owner", "helm".to_string()),
        ("status", status.to_string()),
        ("version", version.to_string()),
    ];
    Secret {
        metadata: ObjectMeta {
            name: Some(format!("sh.helm.release.v1.web.v{version}")),
            namespace: Some(ns.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.clone()))
                    .collect(),
            ),
            resource_version: Some(format!("{version}-{status}")),
            creation_timestamp: Some(Time("2026-12-01T09:00:00Z".parse().unwrap())),
            ..Default::default()
        },
        type_: Some(helm::RELEASE_TYPE.into()),
        data: Some([(helm::DATA_KEY.to_string(), ByteString(data))].into()),
        ..Default::default()
    }
}

fn importer(scopes: Vec<Option<String>>) -> Importer {
    Importer {
        store: Store::open_in_memory().unwrap(),
        scopes,
        stale_after: Duration::from_secs(900),
        decoded: HashMap::new(),
        warned: HashSet::new(),
    }
}

fn put(objects: &mut Followed, s: Secret) -> Change {
    let key = key_of(&s);
    objects.insert(key.clone(), (0, s));
    Change::Applied { key }
}

fn desired_image(store: &Store) -> Vec<String> {
    store
        .desired_state()
        .unwrap()
        .objects
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o.source,
                o.object["data"]["image"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn releases_become_sources_and_follow_upgrades_without_a_commit() {
    let mut imp = importer(vec![None]);
    let mut objects = Followed::new();
    put(
        &mut objects,
        release_secret("shop", 1, "deployed", "nginx:1.16"),
    );
    imp.changed(&objects, &Change::Listed { scope: 0 });
    assert_eq!(desired_image(&imp.store), ["helm:shop/web nginx:1.16"]);

    // `helm upgrade`: version 2 recorded pending-upgrade first.
    let change = put(
        &mut objects,
        release_secret("shop", 2, "pending-upgrade", "nginx:1.17"),
    );
    imp.changed(&objects, &change);
    let open = imp.store.open_intents().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].intent.source, "helm:shop/web");
    assert_eq!(
        open[0].intent.holder,
        "helm pending-upgrade of version 2; last deployed version 1"
    );
    assert_eq!(open[0].objects[0].object["data"]["image"], "nginx:1.17");
    assert_eq!(desired_image(&imp.store), ["helm:shop/web nginx:1.16"]);

    // Then version 1 superseded and version 2 deployed, one write at a time.
    let change = put(
        &mut objects,
        release_secret("shop", 1, "superseded", "nginx:1.16"),
    );
    imp.changed(&objects, &change);
    assert_eq!(
        imp.store.open_intents().unwrap().len(),
        1,
        "still in flight"
    );
    let change = put(
        &mut objects,
        release_secret("shop", 2, "deployed", "nginx:1.17"),
    );
    imp.changed(&objects, &change);
    assert!(imp.store.open_intents().unwrap().is_empty());
    assert_eq!(desired_image(&imp.store), ["helm:shop/web nginx:1.17"]);
    let intents = imp.store.intents(Some("helm:shop/web"), true).unwrap();
    assert_eq!(intents[0].state, IntentState::Committed);
    assert_eq!(imp.store.history("helm:shop/web").unwrap().len(), 2);

    // `helm uninstall`: Helm deletes every version's Secret.
    for key in objects.keys().cloned().collect::<Vec<_>>() {
        let (_, s) = objects.remove(&key).unwrap();
        imp.changed(
            &objects,
            &Change::Deleted {
                key,
                secret: Box::new(s),
            },
        );
    }
    assert!(imp.store.sources().unwrap().is_empty());
    assert!(desired_image(&imp.store).is_empty());
}

#[test]
fn an_unreadable_version_is_left_out_named_by_its_secret() {
    let mut imp = importer(vec![None]);
    let mut objects = Followed::new();
    put(
        &mut objects,
        release_secret("shop", 1, "deployed", "nginx:1.16"),
    );
    let change = put(
        &mut objects,
        secret("shop", 2, "deployed", b"H4sI-broken".to_vec()),
    );
    imp.changed(&objects, &change);
    assert_eq!(desired_image(&imp.store), ["helm:shop/web nginx:1.16"]);
    let warned: Vec<&String> = imp.warned.iter().collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("Helm release Secret shop/sh.helm.release.v1.web.v2"),
        "{warned:?}"
    );
    assert!(!warned[0].contains("H4sI"), "{warned:?}");
}

#[test]
fn a_release_gone_while_driftd_was_down_is_retired_at_the_next_list_of_its_scope() {
    let mut imp = importer(vec![Some("shop".into()), Some("ci".into())]);
    let mut objects = Followed::new();
    put(
        &mut objects,
        release_secret("shop", 1, "deployed", "nginx:1.16"),
    );
    imp.changed(&objects, &Change::Listed { scope: 0 });
    assert_eq!(imp.store.helm_sources().unwrap(), ["helm:shop/web"]);
    // A list of another namespace does not judge releases of this one.
    imp.changed(&Followed::new(), &Change::Listed { scope: 1 });
    assert_eq!(imp.store.helm_sources().unwrap(), ["helm:shop/web"]);
    // Listed again without it: uninstalled meanwhile.
    imp.changed(&Followed::new(), &Change::Listed { scope: 0 });
    assert!(imp.store.helm_sources().unwrap().is_empty());
}
