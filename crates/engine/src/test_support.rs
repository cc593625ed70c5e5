//! Helpers shared by the daemon's unit tests.

use driftd_core::manifest::{self, LoadOptions};
use driftd_core::report::{DriftClass, DriftEntry};
use driftd_k8s::ObjectKey;
use driftd_store::{CommitRequest, Store};
use jiff::Timestamp;

/// The key of ConfigMap `name` in `namespace`.
pub fn configmap(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey {
        group: String::new(),
        kind: "ConfigMap".into(),
        namespace: Some(namespace.into()),
        name: name.into(),
    }
}

/// The index entry of ConfigMap `key` of `source` (empty for unmanaged objects) in `class`,
/// drifting since `since` unless in sync.
pub fn entry(source: &str, key: &ObjectKey, class: DriftClass, since: Timestamp) -> DriftEntry {
    DriftEntry {
        since: (class != DriftClass::InSync).then_some(since),
        ..DriftEntry::new(source.into(), 1, "v1".into(), key, class)
    }
}

/// The objects of `yaml` as `commit` reads them; the tests' custom kind `Widget.example.com`
/// is declared namespaced (`--namespaced`), as no CRD comes with it.
pub fn parse(yaml: &str) -> Vec<manifest::ManifestObject> {
    let mut options = LoadOptions::default();
    options
        .custom_scopes
        .insert(("example.com".into(), "Widget".into()), true);
    manifest::parse_text(yaml, "test.yaml", &options).unwrap()
}

/// Commits the objects of `yaml` as the whole of `source`.
pub fn commit(store: &mut Store, source: &str, yaml: &str) {
    let objects = parse(yaml);
    store
        .commit(&CommitRequest {
            source,
            message: "test",
            author: "test",
            objects: &objects,
            committed_at: None,
            skipped: 0,
        })
        .unwrap();
}

/// [`driftd_watch::WatchEvent::apply`] of `object`, packed by a packing of its own: copies
/// packed without a dictionary unpack with any packing, the engine's included.
pub fn watch_apply(object: serde_json::Value) -> driftd_watch::WatchEvent {
    driftd_watch::WatchEvent::apply(object, &driftd_watch::packed::Packing::new())
}
