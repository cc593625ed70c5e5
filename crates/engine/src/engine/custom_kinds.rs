//! The engine's side of custom resources: the CRDs they are compared by (committed, else
//! learnt from the cluster) and the scope their kind is served with. A CRD that changes
//! changes how its custom resources compare without any event on them, so they are prepared,
//! compared or listed again here.

use super::Engine;
use crate::crds::crd_kind;
use crate::crds::group_kind;
use crate::crds::is_custom;
use crate::crds::GroupKind;
use crate::outputs::Outputs;
use driftd_k8s::TypeKey;
use driftd_watch::WatchControl;
use serde_json::Value;
use std::collections::BTreeSet;

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// CRDs of `kinds` changed (learnt from the cluster, changed or gone there): their
    /// custom resources are prepared and compared again.
    pub(super) fn crds_changed(&mut self, kinds: BTreeSet<GroupKind>) {
        if kinds.is_empty() {
            return;
        }
        tracing::info!(kinds = ?kinds, "CustomResourceDefinitions changed; comparing their custom resources again");
        self.comparing.crds.publish(&mut self.comparing.facts);
        self.wanted
            .intents
            .reprepare(&self.wanted.desired, &self.comparing.facts, &kinds);
        let keys = self
            .wanted
            .tracked
            .keys_of(|t| is_custom(t) && kinds.contains(&group_kind(t)));
        for key in &keys {
            self.evaluate(key);
        }
    }

    /// A CRD changed in the cluster: kube-apiserver prunes and defaults its custom
    /// resources on every read (`customresource_handler.go`), so a `default:` it gained
    /// shows on objects nobody wrote since, and no watch event says so. The tracked kinds it
    /// defines are listed again (still judged on their copies meanwhile).
    pub(super) fn relist_defined_by(&mut self, crd: &Value) {
        let text = |p: &str| crd.pointer(p).and_then(Value::as_str).unwrap_or_default();
        let defined: GroupKind = (text("/spec/group").into(), text("/spec/names/kind").into());
        let kinds: BTreeSet<TypeKey> = self
            .wanted
            .tracked
            .kinds()
            .filter(|t| is_custom(t) && group_kind(t) == defined)
            .cloned()
            .collect();
        for kind in kinds {
            self.watching.relist(&kind, BTreeSet::new());
        }
    }

    /// Discovery says the cluster serves `kind` with this scope. A custom resource committed
    /// without its CRD was keyed as namespaced: if the kind is cluster-scoped, its objects
    /// are keyed again without a namespace (the desired state is loaded again to do so).
    pub(super) fn scope_learned(&mut self, kind: &TypeKey, namespaced: bool) {
        if !is_custom(kind) {
            return;
        }
        if self
            .wanted
            .desired
            .learn_scope(group_kind(kind), namespaced)
        {
            tracing::info!(kind = %kind, namespaced, "the cluster serves this kind with another scope than its objects were keyed with: keying them again");
            if let Err(err) = self.wanted.desired.load(&self.store) {
                tracing::warn!(error = %err, "cannot load the desired state again; the next poll tries");
                self.wanted.desired.reload_needed();
                return;
            }
            self.desired_loaded();
            self.tracking_changed();
        } else {
            self.publish_unresolved_scopes();
        }
    }

    /// Tells the index which tracked custom kinds nothing has given a scope yet (no CRD
    /// committed, not served by the cluster): their `/drift` entries say `scope: unresolved`.
    pub(super) fn publish_unresolved_scopes(&mut self) {
        let unresolved: BTreeSet<GroupKind> = self
            .wanted
            .tracked
            .kinds()
            .filter(|t| is_custom(t))
            .map(group_kind)
            .filter(|gk| {
                !self.comparing.crds.is_committed(gk) && !self.wanted.desired.scope_known(gk)
            })
            .collect();
        self.publication
            .index
            .write()
            .unwrap()
            .set_unresolved_scopes(unresolved);
    }

    /// Whether a custom resource of `kind` must wait for the cluster's CRDs to be listed
    /// before it is compared (else it would be compared schema-less first).
    pub(super) fn awaits_crds(&self, kind: &TypeKey) -> bool {
        is_custom(kind)
            && !self.comparing.crds.is_committed(&group_kind(kind))
            && !self.watching.lists.listed_once(&crd_kind())
    }
}
