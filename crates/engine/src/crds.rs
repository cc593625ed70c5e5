//! The CustomResourceDefinitions custom resources are compared by: those committed in the
//! desired state (any source) win, else the cluster's, learnt by watching
//! `apiextensions.k8s.io/v1` CustomResourceDefinitions while any custom resource is tracked.
//! A CRD that changes (a new default, a new version) names the kinds to prepare again.

use driftd_core::diff::ClusterFacts;
use driftd_k8s::crd::CrdSchemas;
use driftd_k8s::{ObjectKey, TypeKey};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// A custom resource kind, as [`CrdSchemas::key`] names it: (group, kind).
pub type GroupKind = (String, String);

/// The kind watched to learn the cluster's CRDs.
pub fn crd_kind() -> TypeKey {
    TypeKey {
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
    }
}

/// Whether `kind` is [`crd_kind`] (asked on every watch event, so without building one).
pub fn is_crd_kind(kind: &TypeKey) -> bool {
    kind.kind == "CustomResourceDefinition" && kind.api_version == "apiextensions.k8s.io/v1"
}

/// Whether objects of `kind` are custom resources (compared by a CRD's schema if known).
pub fn is_custom(kind: &TypeKey) -> bool {
    let group = driftd_k8s::kinds::split_api_version(&kind.api_version).0;
    !driftd_k8s::kinds::is_builtin_group(group)
}

/// The group and kind of a custom resource type.
pub fn group_kind(kind: &TypeKey) -> GroupKind {
    let group = driftd_k8s::kinds::split_api_version(&kind.api_version).0;
    (group.to_string(), kind.kind.clone())
}

/// The known CRDs, committed and live.
#[derive(Debug, Default)]
pub struct Crds {
    committed: HashMap<GroupKind, Arc<CrdSchemas>>,
    /// Live CRDs by object name (what a deletion names).
    cluster: HashMap<String, Arc<CrdSchemas>>,
}

impl Crds {
    /// Takes the CRDs among the committed desired objects. Returns the kinds whose schemas
    /// changed. A CRD that does not read into structural schemas is logged and left out
    /// (its kind falls back to the cluster's CRD, else the plain rules).
    pub fn set_committed<'a>(
        &mut self,
        objects: impl IntoIterator<Item = &'a Value>,
    ) -> BTreeSet<GroupKind> {
        let before = self.effective();
        let mut committed = HashMap::new();
        for object in objects {
            if object.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
                continue;
            }
            match CrdSchemas::from_crd(object) {
                Ok(s) => {
                    committed.insert(s.key(), Arc::new(s));
                }
                Err(err) => {
                    let name = object
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    tracing::warn!(crd = name, error = %err, "committed CustomResourceDefinition has no usable schema; its custom resources are compared without it");
                }
            }
        }
        self.committed = committed;
        changed(&before, &self.effective())
    }

    /// A live CRD is now `object` (`None`: deleted). Returns the kinds whose schemas changed.
    pub fn apply_live(&mut self, key: &ObjectKey, object: Option<&Value>) -> BTreeSet<GroupKind> {
        let before = self.effective();
        let schemas = object.and_then(|o| match CrdSchemas::from_crd(o) {
            Ok(s) => Some(Arc::new(s)),
            Err(err) => {
                tracing::warn!(crd = %key.name, error = %err, "CustomResourceDefinition has no usable schema; its custom resources are compared without it");
                None
            }
        });
        match schemas {
            Some(s) => self.cluster.insert(key.name.clone(), s),
            None => self.cluster.remove(&key.name),
        };
        changed(&before, &self.effective())
    }

    /// A list of CRDs ended: those it did not return are gone.
    pub fn retain_listed(&mut self, listed: &HashSet<ObjectKey>) -> BTreeSet<GroupKind> {
        let before = self.effective();
        let names: HashSet<&str> = listed.iter().map(|k| k.name.as_str()).collect();
        self.cluster.retain(|name, _| names.contains(name.as_str()));
        changed(&before, &self.effective())
    }

    /// CRDs are no longer watched: the cluster's are forgotten.
    pub fn clear_live(&mut self) -> BTreeSet<GroupKind> {
        let before = self.effective();
        self.cluster.clear();
        changed(&before, &self.effective())
    }

    /// Whether the CRD of `kind` is committed (no need to wait for the cluster's).
    pub fn is_committed(&self, kind: &GroupKind) -> bool {
        self.committed.contains_key(kind)
    }

    /// The schemas in force: committed over live.
    pub fn effective(&self) -> HashMap<GroupKind, Arc<CrdSchemas>> {
        let mut all: HashMap<GroupKind, Arc<CrdSchemas>> = self
            .cluster
            .values()
            .map(|s| (s.key(), s.clone()))
            .collect();
        all.extend(self.committed.iter().map(|(k, s)| (k.clone(), s.clone())));
        all
    }

    /// Puts the schemas in force into `facts`.
    pub fn publish(&self, facts: &mut ClusterFacts) {
        facts.custom_schemas = self.effective();
    }
}

/// The kinds whose schemas differ between `a` and `b` (added, removed or changed).
fn changed(
    a: &HashMap<GroupKind, Arc<CrdSchemas>>,
    b: &HashMap<GroupKind, Arc<CrdSchemas>>,
) -> BTreeSet<GroupKind> {
    a.keys()
        .chain(b.keys())
        .filter(|k| match (a.get(*k), b.get(*k)) {
            (Some(x), Some(y)) => x != y,
            _ => true,
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(default: &str) -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "scope": "Namespaced",
                        "names": {"kind": "Widget", "plural": "widgets"},
                        "versions": [{"name": "v1", "served": true, "storage": true,
                            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                "spec": {"type": "object", "properties": {
                                    "size": {"type": "string", "default": default}}}}}}}]}})
    }

    fn widget() -> GroupKind {
        ("example.com".into(), "Widget".into())
    }

    #[test]
    fn committed_crds_win_over_the_cluster_and_changes_name_their_kinds() {
        let mut crds = Crds::default();
        let key = ObjectKey::of(&crd("small")).unwrap();
        assert_eq!(
            crds.apply_live(&key, Some(&crd("small"))),
            BTreeSet::from([widget()])
        );
        assert!(crds.apply_live(&key, Some(&crd("small"))).is_empty());
        let committed = crd("large");
        assert_eq!(crds.set_committed([&committed]), BTreeSet::from([widget()]));
        let size = |c: &Crds| {
            c.effective()[&widget()].versions[0]
                .schema
                .as_ref()
                .unwrap()
                .at(&[
                    driftd_k8s::crd::Step::Field("spec"),
                    driftd_k8s::crd::Step::Field("size"),
                ])
                .and_then(|s| s.default.clone())
        };
        assert_eq!(size(&crds), Some(json!("large")));
        assert!(
            crds.apply_live(&key, None).is_empty(),
            "the committed CRD still holds"
        );
        assert!(crds.is_committed(&widget()));
        assert_eq!(
            crds.set_committed(std::iter::empty()),
            BTreeSet::from([widget()])
        );
        assert!(crds.effective().is_empty());
        crds.apply_live(&key, Some(&crd("small")));
        assert_eq!(
            crds.retain_listed(&HashSet::new()),
            BTreeSet::from([widget()])
        );
    }

    #[test]
    fn custom_kinds_are_told_from_built_in_ones() {
        let t = |a: &str, k: &str| TypeKey {
            api_version: a.into(),
            kind: k.into(),
        };
        assert!(is_custom(&t("example.com/v1", "Widget")));
        assert!(!is_custom(&t("apps/v1", "Deployment")));
        assert!(!is_custom(&crd_kind()));
        assert!(is_crd_kind(&crd_kind()));
        assert_eq!(group_kind(&t("example.com/v1", "Widget")), widget());
    }
}
