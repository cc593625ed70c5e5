//! storage.k8s.io/v1: kubernetes/kubernetes `pkg/apis/storage/v1/defaults_test.go`
//! (commit 05c351a9). `TestSetDefaultStorageCapacityDisabled` is skipped: CSIStorageCapacity
//! is GA (locked on) in v1.32. That version of the file tests neither StorageClass's
//! `reclaimPolicy`, CSIDriver's `fsGroupPolicy`, `storageCapacity` or `seLinuxMount`, nor
//! a VolumeAttachment's inline spec; those cases are read off `pkg/apis/storage/v1/defaults.go`
//! and its `zz_generated.defaults.go`, an oracle of the source rather than of a kube test.

use serde_json::json;

use super::{defaulted, expect};

const API: &str = "storage.k8s.io/v1";

#[test]
fn test_set_default_storage_capacity_enabled() {
    let got = defaulted(API, "CSIDriver", json!({}));
    expect(
        "storageCapacity",
        &got,
        &[("/spec/storageCapacity", Some(json!(false)))],
    );
}

#[test]
fn test_set_default_volume_binding_mode() {
    let got = defaulted(API, "StorageClass", json!({"provisioner": "p"}));
    expect(
        "volumeBindingMode",
        &got,
        &[("/volumeBindingMode", Some(json!("Immediate")))],
    );
}

#[test]
fn test_set_default_csi_driver() {
    let got = defaulted(API, "CSIDriver", json!({}));
    expect(
        "CSIDriver",
        &got,
        &[
            ("/spec/attachRequired", Some(json!(true))),
            ("/spec/podInfoOnMount", Some(json!(false))),
            ("/spec/volumeLifecycleModes", Some(json!(["Persistent"]))),
            ("/spec/requiresRepublish", Some(json!(false))),
        ],
    );
}

#[test]
fn set_defaults_storage_class() {
    // `ReclaimPolicy == nil` -> Delete, `VolumeBindingMode == nil` -> Immediate; given
    // values stay.
    let got = defaulted(API, "StorageClass", json!({"provisioner": "p"}));
    assert_eq!(
        got,
        json!({"provisioner": "p", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
    );
    let given = json!({"provisioner": "p", "reclaimPolicy": "Retain",
                       "volumeBindingMode": "WaitForFirstConsumer"});
    assert_eq!(defaulted(API, "StorageClass", given.clone()), given);
}

#[test]
fn set_defaults_csi_driver() {
    // Every branch of SetDefaults_CSIDriver, SELinuxMountReadWriteOncePod on (beta, v1.32).
    let got = defaulted(API, "CSIDriver", json!({"spec": {}}));
    assert_eq!(
        got,
        json!({"spec": {"attachRequired": true, "podInfoOnMount": false,
            "storageCapacity": false, "fsGroupPolicy": "ReadWriteOnceWithFSType",
            "volumeLifecycleModes": ["Persistent"], "requiresRepublish": false,
            "seLinuxMount": false}})
    );
    let given = json!({"spec": {"attachRequired": false, "podInfoOnMount": true,
        "storageCapacity": true, "fsGroupPolicy": "File",
        "volumeLifecycleModes": ["Ephemeral"], "requiresRepublish": true,
        "seLinuxMount": true}});
    assert_eq!(defaulted(API, "CSIDriver", given.clone()), given);
}

#[test]
fn set_object_defaults_volume_attachment() {
    // zz_generated.defaults.go runs the core PersistentVolumeSpec defaults on the inline
    // spec: SetDefaults_ResourceList on capacity and the source's own defaults. The
    // PersistentVolume object's reclaim policy and volume mode are not among them.
    let got = defaulted(
        API,
        "VolumeAttachment",
        json!({"spec": {"attacher": "a", "nodeName": "n", "source": {"inlineVolumeSpec": {
            "capacity": {"storage": "1024Mi"}, "azureDisk": {"diskName": "d", "diskURI": "u"}}}}}),
    );
    let inline = &got["spec"]["source"]["inlineVolumeSpec"];
    assert_eq!(
        inline,
        &json!({"capacity": {"storage": "1Gi"}, "azureDisk": {"diskName": "d", "diskURI": "u",
            "cachingMode": "ReadWrite", "kind": "Shared", "fsType": "ext4", "readOnly": false}})
    );
}
