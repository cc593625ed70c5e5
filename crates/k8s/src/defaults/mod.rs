//! kube-apiserver's defaults for declared fields: its `SetDefaults_*` functions.
//!
//! A manifest that leaves a field to its default commits that default: `kubectl apply` of a
//! Deployment without `replicas` stores `replicas: 1`, and a hand edit to 3 later is drift.
//! [`apply`] gives a manifest every such default. It is deterministic and depends on the
//! object alone: nothing is allocated (clusterIP, nodePort, uid), nothing derives from the
//! object's identity (a Job's generated selector), no `status` is created, and write-time
//! conversions (Secret `stringData`) are left alone. What a server adds beyond this table
//! on create and update is the simulator's business (`driftd_sim::server_defaults`).
//!
//! The differ applies this table to the desired side; the simulator applies it first on
//! every write. So a wrong default here would be on both sides of a simulator test: the
//! `oracle` tests check the table against the cases of kube's own `defaults_test.go` files.
//!
//! Where a default sits inside `status` (a PVC's or Namespace's `phase`), it is applied when
//! the object carries a `status`, never by creating one.
//!
//! Sources, all in kubernetes/kubernetes: `pkg/apis/<group>/<version>/defaults.go` of every
//! group kube-apiserver v1.32 defaults (core, apps, batch, autoscaling, networking, rbac,
//! storage, scheduling, flowcontrol, discovery, admissionregistration),
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1/defaults.go`,
//! `staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/defaults.go`, the
//! `+default=` markers of `staging/src/k8s.io/api/core/v1/types.go`, and the generated
//! `zz_generated.defaults.go` beside each (which nested types get defaulted).
//! `upstream.tsv` lists every one of those functions with the function here that
//! implements it and the oracle tests that check it, or why it has no effect in driftd;
//! `extract_set_defaults.py` re-checks that list against a Kubernetes checkout. Feature
//! gates are taken at their v1.32 default, each named beside the default it decides.
//!
//! Admission plugins are out of scope (they are not defaulting): DefaultStorageClass,
//! DefaultIngressClass, ServiceAccount (pod `serviceAccountName`, token volume), Priority and
//! DefaultTolerationSeconds only touch Pods/PVCs/Ingresses when configured.

mod admissionregistration;
mod apiextensions;
mod apiregistration;
mod apps;
mod autoscaling;
mod batch;
mod core;
mod core_objects;
mod discovery;
pub mod fields;
mod flowcontrol;
mod image;
mod networking;
mod rbac;
mod scheduling;
mod storage;

#[cfg(test)]
mod oracle;
#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::kinds::split_api_version;

/// Applies kube-apiserver's defaults for declared fields of `api_version`/`kind` to
/// `object` in place. Kinds without defaults (and custom resources) are left untouched.
pub fn apply(api_version: &str, kind: &str, object: &mut Value) {
    if !object.is_object() {
        return;
    }
    let (group, version) = split_api_version(api_version);
    match (group, kind) {
        ("", "Pod") => core::pod(object),
        ("", "PodTemplate") => core::pod_template(&mut object["template"]),
        ("", "ReplicationController") => core::replication_controller(object),
        ("", "Service") => core_objects::service(object),
        ("", "Secret") => core_objects::secret(object),
        ("", "PersistentVolumeClaim") => core_objects::pvc(object),
        ("", "PersistentVolume") => core_objects::persistent_volume(object),
        ("", "Namespace") => core_objects::namespace(object),
        ("", "Endpoints") => core_objects::endpoints(object),
        ("", "Node") => core_objects::node(object),
        ("", "LimitRange") => core_objects::limit_range(object),
        ("", "ResourceQuota") => core_objects::resource_quota(object),
        ("apps", "Deployment") => apps::deployment(object),
        ("apps", "ReplicaSet") => apps::replica_set(object),
        ("apps", "StatefulSet") => apps::stateful_set(object),
        ("apps", "DaemonSet") => apps::daemon_set(object),
        ("batch", "Job") => batch::job(object),
        ("batch", "CronJob") => batch::cron_job(object),
        ("autoscaling", "HorizontalPodAutoscaler") => autoscaling::hpa(object, version),
        ("networking.k8s.io", "NetworkPolicy") => networking::network_policy(object),
        ("networking.k8s.io", "IngressClass") => networking::ingress_class(object),
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            rbac::role_binding(object)
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => apiextensions::crd(object),
        ("apiregistration.k8s.io", "APIService") => apiregistration::api_service(object),
        ("admissionregistration.k8s.io", kind) => admission_registration(kind, version, object),
        ("storage.k8s.io", "StorageClass") => storage::storage_class(object),
        ("storage.k8s.io", "CSIDriver") => storage::csi_driver(object),
        ("storage.k8s.io", "VolumeAttachment") => storage::volume_attachment(object),
        ("scheduling.k8s.io", "PriorityClass") => scheduling::priority_class(object),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => flowcontrol::flow_schema(object),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            flowcontrol::priority_level_configuration(object)
        }
        ("discovery.k8s.io", "EndpointSlice") => discovery::endpoint_slice(object),
        _ => {}
    }
}

/// The admissionregistration.k8s.io kinds, whose defaults depend on the version.
fn admission_registration(kind: &str, version: &str, object: &mut Value) {
    use admissionregistration::{binding, policy, webhook_configuration};
    match kind {
        "MutatingWebhookConfiguration" => webhook_configuration(object, version, true),
        "ValidatingWebhookConfiguration" => webhook_configuration(object, version, false),
        "ValidatingAdmissionPolicy" | "MutatingAdmissionPolicy" => policy(object),
        "ValidatingAdmissionPolicyBinding" | "MutatingAdmissionPolicyBinding" => {
            binding(object, version)
        }
        _ => {}
    }
}
