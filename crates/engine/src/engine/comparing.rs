//! What a comparison is made with: the ignore rules (the differ), and the cluster facts it
//! needs beyond the two objects: the CRDs custom resources are compared by, and which
//! objects an autoscaler owns `spec.replicas` of. Held watch events wait here to be compared
//! together (`judging`).

use super::judging::Held;
use crate::crds::Crds;
use crate::expired_rules::ExpiredRules;
use crate::hpa::Autoscalers;
use crate::index::SharedIndex;
use driftd_config::Config;
use driftd_core::diff::{ClusterFacts, Differ};
use driftd_k8s::ObjectKey;
use serde_json::Value;
use std::collections::HashSet;

/// See the module documentation.
pub(super) struct Comparing {
    pub(super) differ: Differ,
    pub(super) facts: ClusterFacts,
    /// The CRDs custom resources are compared by (their schemas are published in `facts`).
    pub(super) crds: Crds,
    autoscalers: Autoscalers,
    /// Ignore rules already reported as expired.
    expired_rules: ExpiredRules,
    /// Watch events held to be judged together on every core.
    pub(super) held: Held,
}

impl Comparing {
    /// The rules of `config`, with `key` for the hashes of Secret values.
    pub(super) fn new(key: &[u8], config: &Config) -> Comparing {
        Comparing {
            differ: Differ::new(key).with_rules(config.rule_set()),
            facts: ClusterFacts {
                controller_managers: config.controller_managers.clone(),
                ..ClusterFacts::default()
            },
            crds: Crds::default(),
            autoscalers: Autoscalers::default(),
            expired_rules: ExpiredRules::default(),
            held: Held::default(),
        }
    }

    /// HPA `hpa` is now `object` (`None`: gone). Returns the objects whose autoscaler
    /// changed: their `spec.replicas` is to be compared anew.
    pub(super) fn autoscaler_changed(
        &mut self,
        hpa: ObjectKey,
        object: Option<&Value>,
    ) -> Vec<ObjectKey> {
        let affected = self.autoscalers.apply(hpa, object);
        self.publish_autoscalers(affected)
    }

    /// A list of HPAs ended with `listed` existing; as [`Comparing::autoscaler_changed`].
    pub(super) fn autoscalers_listed(&mut self, listed: &HashSet<ObjectKey>) -> Vec<ObjectKey> {
        let affected = self.autoscalers.retain_listed(listed);
        self.publish_autoscalers(affected)
    }

    /// HPAs are not watched any more (nothing scalable is desired).
    pub(super) fn forget_autoscalers(&mut self) {
        self.autoscalers.clear();
        self.facts.hpa_targets.clear();
    }

    fn publish_autoscalers(&mut self, affected: Vec<ObjectKey>) -> Vec<ObjectKey> {
        if !affected.is_empty() {
            self.facts.hpa_targets = self.autoscalers.targets();
        }
        affected
    }

    /// Logs ignore rules that expired since the last check and publishes how many are.
    pub(super) fn report_expired_rules(&mut self, index: &SharedIndex) {
        let expired = self.differ.expired_rules();
        self.expired_rules.report(&expired);
        index.write().unwrap().set_rules_expired(expired.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hpa(name: &str, target: &str) -> (ObjectKey, Value) {
        let object = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target}}});
        (ObjectKey::of(&object).unwrap(), object)
    }

    #[test]
    fn the_facts_say_which_objects_an_autoscaler_owns_the_replicas_of() {
        let mut comparing = Comparing::new(b"k", &Config::default());
        let (key, object) = hpa("web", "web");
        let affected = comparing.autoscaler_changed(key.clone(), Some(&object));
        assert_eq!(affected.len(), 1, "{affected:?}");
        assert_eq!(affected[0].kind, "Deployment");
        assert_eq!(affected[0].name, "web");
        assert!(comparing.facts.hpa_targets.contains(&affected[0]));

        let listed: HashSet<ObjectKey> = HashSet::new();
        assert_eq!(
            comparing.autoscalers_listed(&listed),
            affected,
            "the HPA is gone"
        );
        assert!(comparing.facts.hpa_targets.is_empty());

        comparing.autoscaler_changed(key, Some(&object));
        comparing.forget_autoscalers();
        assert!(comparing.facts.hpa_targets.is_empty());
    }
}
