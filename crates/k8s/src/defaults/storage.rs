//! storage.k8s.io/v1 (`pkg/apis/storage/v1/defaults.go`): StorageClass and CSIDriver, and
//! the PersistentVolumeSpec a VolumeAttachment may carry inline.

use serde_json::{json, Value};

use super::apps::spec_of;
use super::core_objects::persistent_volume_spec;
use super::fields::{default_list, default_ptr, map};

/// SetDefaults_StorageClass: volumes are deleted with their claim and bound at once.
pub(super) fn storage_class(object: &mut Value) {
    let Some(m) = map(object) else { return };
    default_ptr(m, "reclaimPolicy", json!("Delete"));
    default_ptr(m, "volumeBindingMode", json!("Immediate"));
}

/// SetDefaults_CSIDriver. `seLinuxMount` is defaulted behind SELinuxMountReadWriteOncePod,
/// beta and on by default in v1.32; the other defaults are unconditional there
/// (CSIStorageCapacity, CSIInlineVolume and CSIVolumeFSGroupPolicy are GA).
pub(super) fn csi_driver(object: &mut Value) {
    let Some(spec) = spec_of(object) else { return };
    default_ptr(spec, "attachRequired", json!(true));
    default_ptr(spec, "podInfoOnMount", json!(false));
    default_ptr(spec, "storageCapacity", json!(false));
    default_ptr(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    default_list(spec, "volumeLifecycleModes", json!(["Persistent"]));
    default_ptr(spec, "requiresRepublish", json!(false));
    default_ptr(spec, "seLinuxMount", json!(false));
}

/// VolumeAttachment has no SetDefaults_ function; defaulter-gen runs the core defaults of
/// the PersistentVolumeSpec in `spec.source.inlineVolumeSpec` (a migrated in-tree volume).
pub(super) fn volume_attachment(object: &mut Value) {
    if let Some(inline) = object
        .pointer_mut("/spec/source/inlineVolumeSpec")
        .and_then(map)
    {
        persistent_volume_spec(inline);
    }
}
