//! What kube-controller-manager puts in every namespace: the `default` ServiceAccount
//! (serviceaccount controller) and the `kube-root-ca.crt` ConfigMap (root-ca-cert-publisher).

use super::{Types, MANAGER};
use crate::store::{Store, WriteCtx};
use serde_json::json;

pub(super) fn defaults(store: &Store, t: &Types, ns: &str) {
    let ctx = WriteCtx::controller(MANAGER);
    if store.get(&t.service_account, Some(ns), "default").is_err() {
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": ns}});
        let _ = store.create(&t.service_account, Some(ns), sa, &ctx);
    }
    if store
        .get(&t.configmap, Some(ns), "kube-root-ca.crt")
        .is_err()
    {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "kube-root-ca.crt", "namespace": ns,
                "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."},
            },
            "data": {"ca.crt": SIM_CA_PEM},
        });
        let _ = store.create(&t.configmap, Some(ns), cm, &ctx);
    }
}

/// A placeholder CA bundle (the simulator serves plain HTTP; nothing verifies against it).
const SIM_CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nZHJpZnRkLXNpbXVsYXRvci1wbGFjZWhvbGRlci1jYQ==\n-----END CERTIFICATE-----\n";
