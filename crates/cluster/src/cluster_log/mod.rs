//! The cluster log: revisions and intents recorded as Secrets of driftd types in driftd's
//! namespace (`driftd commit|intent|run --cluster`), which every `driftd serve` replica
//! imports into its own database. The Kubernetes API is then the replicated log: RBAC on
//! those Secrets decides who may commit, `resourceVersion` conflicts serialize racing
//! deployers, and a replica that starts late catches up from the objects. The leader
//! writes to it too: an automatic release of a stale lock held there (`releaser`). The CLI
//! reads it whole for its `--cluster` listings (`snapshot`).

pub mod format;
mod importer;
mod releaser;
mod snapshot;
mod writer;

pub use importer::spawn as spawn_importer;
pub use releaser::spawn as spawn_releaser;
pub use snapshot::snapshot;
pub use writer::{ClusterLog, End, LogError, NewIntent, NewRevision};

use driftd_core::manifest::{ManifestObject, Origin};
use format::RecordObject;

impl From<&ManifestObject> for RecordObject {
    fn from(o: &ManifestObject) -> RecordObject {
        RecordObject {
            key: o.key.clone(),
            api_version: o.api_version.clone(),
            file: o.origin.file.clone(),
            document: o.origin.document,
            object: o.object.clone(),
        }
    }
}

impl From<RecordObject> for ManifestObject {
    fn from(o: RecordObject) -> ManifestObject {
        ManifestObject {
            origin: Origin {
                file: o.file,
                document: o.document,
            },
            key: o.key,
            api_version: o.api_version,
            object: o.object,
            // Recorded as committed; `serve` resolves scopes from discovery either way.
            scope_unresolved: false,
        }
    }
}
