//! HorizontalPodAutoscalers seen live: an HPA owns `spec.replicas` of its scale target, so a
//! change of who autoscales what changes the target's drift.

use driftd_k8s::{ObjectKey, TypeKey};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The kind watched to learn the autoscalers (v2 serves every HPA, whatever version made it).
pub fn hpa_kind() -> TypeKey {
    TypeKey {
        api_version: "autoscaling/v2".into(),
        kind: "HorizontalPodAutoscaler".into(),
    }
}

/// Whether `kind` is [`hpa_kind`] (without building one: asked on every watch event).
pub fn is_hpa_kind(kind: &TypeKey) -> bool {
    kind.kind == "HorizontalPodAutoscaler" && kind.api_version == "autoscaling/v2"
}

/// Live HPAs and their scale targets.
#[derive(Debug, Default)]
pub struct Autoscalers {
    targets: HashMap<ObjectKey, ObjectKey>,
}

impl Autoscalers {
    /// Records the HPA `hpa` as it is live now (`None`: deleted). Returns the objects whose
    /// autoscaler changed, to compare again.
    pub fn apply(&mut self, hpa: ObjectKey, object: Option<&Value>) -> Vec<ObjectKey> {
        let target = object.and_then(driftd_k8s::hpa_scale_target);
        let old = match target.clone() {
            Some(t) => self.targets.insert(hpa, t),
            None => self.targets.remove(&hpa),
        };
        if old == target {
            return Vec::new();
        }
        [old, target].into_iter().flatten().collect()
    }

    /// A list of HPAs ended: those it did not return are gone. Returns the affected targets.
    pub fn retain_listed(&mut self, listed: &HashSet<ObjectKey>) -> Vec<ObjectKey> {
        let gone: Vec<ObjectKey> = self
            .targets
            .keys()
            .filter(|k| !listed.contains(*k))
            .cloned()
            .collect();
        gone.into_iter()
            .flat_map(|hpa| self.apply(hpa, None))
            .collect()
    }

    /// HPAs are no longer watched: forgets them all, returning their targets.
    pub fn clear(&mut self) -> Vec<ObjectKey> {
        self.targets.drain().map(|(_, target)| target).collect()
    }

    /// The objects some HPA scales, as the differ's `ClusterFacts` want them.
    pub fn targets(&self) -> HashSet<ObjectKey> {
        self.targets.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hpa(name: &str, target: &str) -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": name, "namespace": "shop"},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}}})
    }

    #[test]
    fn a_retargeted_or_vanished_hpa_names_the_targets_to_compare_again() {
        let mut a = Autoscalers::default();
        let key = ObjectKey::of(&hpa("h", "web")).unwrap();
        let names = |v: Vec<ObjectKey>| v.into_iter().map(|k| k.name).collect::<Vec<_>>();
        assert_eq!(names(a.apply(key.clone(), Some(&hpa("h", "web")))), ["web"]);
        assert!(a.apply(key.clone(), Some(&hpa("h", "web"))).is_empty());
        assert_eq!(
            names(a.apply(key.clone(), Some(&hpa("h", "api")))),
            ["web", "api"]
        );
        assert_eq!(a.targets().len(), 1);
        assert_eq!(names(a.retain_listed(&HashSet::new())), ["api"]);
        assert!(a.targets().is_empty());
    }

    #[test]
    fn the_watched_kind_is_recognised() {
        assert!(is_hpa_kind(&hpa_kind()));
        let v1 = TypeKey {
            api_version: "autoscaling/v1".into(),
            ..hpa_kind()
        };
        assert!(!is_hpa_kind(&v1));
    }
}
