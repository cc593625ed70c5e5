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
        source: source.into(),
        revision: 1,
        api_version: "v1".into(),
        kind: key.kind.clone(),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        class,
        since: (class != DriftClass::InSync).then_some(since),
        changes: vec![],
        patch: Default::default(),
        ignored: vec![],
        intent: None,
    }
}

/// Commits the objects of `yaml` as the whole of `source`.
pub fn commit(store: &mut Store, source: &str, yaml: &str) {
    let objects = manifest::parse_text(yaml, "test.yaml", &LoadOptions::default()).unwrap();
    store
        .commit(&CommitRequest {
            source,
            message: "test",
            author: "test",
            objects: &objects,
            committed_at: None,
        })
        .unwrap();
}
