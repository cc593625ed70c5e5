//! Fields of desired custom resources that their CRD's schema prunes: kube-apiserver drops
//! them on every write, so they never exist live and are never compared. Usually a typo or
//! a field of another version of the CRD; `driftd commit` warns about them.

use super::{ClusterFacts, Differ};
use driftd_k8s::ObjectKey;
use serde_json::Value;

/// One desired custom resource that sets fields its CRD prunes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrunedFields {
    pub object: ObjectKey,
    /// The CRD's name (`routes.example.com`).
    pub crd: String,
    /// The pruned fields (`spec.timout`, `metadata.foo`), sorted.
    pub paths: Vec<String>,
}

impl std::fmt::Display for PrunedFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: the CustomResourceDefinition {} does not allow {}; kube-apiserver prunes {} on every write, so {} never compared",
            self.object,
            self.crd,
            self.paths.join(", "),
            if self.paths.len() == 1 { "it" } else { "them" },
            if self.paths.len() == 1 { "it is" } else { "they are" },
        )
    }
}

/// The desired custom resources among `objects` whose CRD (known to `facts`) prunes some of
/// their fields.
pub fn pruned_fields<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
    facts: &ClusterFacts,
) -> Vec<PrunedFields> {
    objects
        .into_iter()
        .filter_map(|o| {
            // Only a custom resource whose CRD is known can have fields pruned: the others
            // are not prepared (a commit of 100,000 built-in objects spent a tenth of its
            // time preparing them for nothing).
            let text = |field: &str| o.get(field).and_then(Value::as_str).unwrap_or("");
            let (api_version, kind) = (text("apiVersion"), text("kind"));
            if driftd_k8s::api_types::is_builtin(api_version, kind)
                || facts.crd_of(api_version, kind).is_none()
            {
                return None;
            }
            let prepared = Differ::prepare_with(o, None, facts);
            if prepared.pruned().is_empty() {
                return None;
            }
            let crd = prepared.crd.as_ref()?.name.clone();
            Some(PrunedFields {
                object: ObjectKey::of(o)?,
                crd,
                paths: prepared.pruned().to_vec(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_field_the_crd_does_not_allow_is_named() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"},
                "scope": "Namespaced", "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}});
        let ok = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "a", "namespace": "ns"}, "spec": {"size": 1}});
        let typo = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "b", "namespace": "ns"}, "spec": {"sise": 1}});
        let mut facts = ClusterFacts::default();
        facts.add_crds([&crd]);
        let found = pruned_fields([&ok, &typo, &crd], &facts);
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].to_string(),
            "Widget.example.com ns/b: the CustomResourceDefinition widgets.example.com does not \
             allow spec.sise; kube-apiserver prunes it on every write, so it is never compared"
        );
        assert!(
            pruned_fields([&typo], &ClusterFacts::default()).is_empty(),
            "no CRD known"
        );
    }
}
