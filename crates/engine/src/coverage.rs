//! Coverage (`[unmanaged]`): live objects of covered kinds and namespaces that no source
//! desires, no controller owns and Kubernetes did not create are reported as `unmanaged`.
//! Off (no kinds) unless configured.

use driftd_config::{ConfigError, UnmanagedConfig};
use driftd_core::diff::pointer;
use driftd_core::report::{DriftClass, DriftEntry};
use driftd_k8s::{ObjectKey, TypeKey};
use jiff::Timestamp;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The `[unmanaged]` configuration, resolved, and the unmanaged objects found.
#[derive(Debug, Default)]
pub struct Coverage {
    kinds: BTreeSet<TypeKey>,
    namespaces: BTreeSet<String>,
    /// Unmanaged live objects (identity only) and the kind whose watcher saw them.
    unmanaged: BTreeMap<ObjectKey, TypeKey>,
}

impl Coverage {
    pub fn new(config: &UnmanagedConfig) -> Result<Coverage, ConfigError> {
        let kinds = config.type_keys().map_err(|err| ConfigError {
            origin: "config".into(),
            key: "unmanaged.kinds".into(),
            reason: err.to_string(),
        })?;
        Ok(Coverage {
            kinds: kinds.into_iter().collect(),
            namespaces: config.namespaces.iter().cloned().collect(),
            unmanaged: BTreeMap::new(),
        })
    }

    pub fn is_on(&self) -> bool {
        !self.kinds.is_empty()
    }

    /// The covered kinds: each is watched.
    pub fn kinds(&self) -> impl Iterator<Item = &TypeKey> {
        self.kinds.iter()
    }

    pub fn covers_type(&self, kind: &TypeKey) -> bool {
        self.kinds.contains(kind)
    }

    /// Whether `key` is of a covered kind in a covered namespace.
    pub fn covers_key(&self, key: &ObjectKey) -> bool {
        self.kind_of(key).is_some()
            && (self.namespaces.is_empty()
                || key
                    .namespace
                    .as_ref()
                    .is_some_and(|ns| self.namespaces.contains(ns)))
    }

    /// The covered kind `key` is an object of, if any.
    pub fn kind_of(&self, key: &ObjectKey) -> Option<&TypeKey> {
        self.kinds.iter().find(|t| t.is_kind_of(key))
    }

    /// A live object of covered kind `kind` that no source desires, as its watcher saw it:
    /// unmanaged unless a controller (ownerReference) or Kubernetes itself created it.
    pub fn observe(
        &mut self,
        kind: &TypeKey,
        key: &ObjectKey,
        object: &Value,
        now: Timestamp,
    ) -> Change {
        let owned = pointer::at(object, &["metadata", "ownerReferences"])
            .and_then(Value::as_array)
            .is_some_and(|refs| !refs.is_empty());
        if owned || !self.covers_key(key) || created_by_kubernetes(key) {
            return if self.forget(key) {
                Change::Removed
            } else {
                Change::None
            };
        }
        if self.unmanaged.contains_key(key) {
            return Change::None;
        }
        self.unmanaged.insert(key.clone(), kind.clone());
        Change::Added(Box::new(DriftEntry {
            since: Some(now),
            ..DriftEntry::new(
                String::new(),
                0,
                kind.api_version.clone(),
                key,
                DriftClass::Unmanaged,
            )
        }))
    }

    /// `key` is deleted or desired now: no longer unmanaged. True if it was.
    pub fn forget(&mut self, key: &ObjectKey) -> bool {
        self.unmanaged.remove(key).is_some()
    }

    /// A list of `kind` ended: unmanaged objects it did not return are gone (returned).
    pub fn retain_listed(&mut self, kind: &TypeKey, listed: &HashSet<ObjectKey>) -> Vec<ObjectKey> {
        let gone: Vec<ObjectKey> = self
            .unmanaged
            .iter()
            .filter(|(k, t)| *t == kind && !listed.contains(*k))
            .map(|(k, _)| k.clone())
            .collect();
        for key in &gone {
            self.unmanaged.remove(key);
        }
        gone
    }

    /// Of the covered live objects, how many a source owns (`None`: coverage is off).
    /// `driftd_coverage_ratio` is that over all covered live objects.
    pub fn owned<'a>(&self, live: impl Iterator<Item = &'a ObjectKey>) -> Option<usize> {
        self.is_on()
            .then(|| live.filter(|key| self.covers_key(key)).count())
    }
}

/// What [`Coverage::observe`] changed.
#[derive(Debug, PartialEq)]
pub enum Change {
    None,
    /// Newly unmanaged: publish this entry.
    Added(Box<DriftEntry>),
    /// No longer unmanaged: withdraw its entry.
    Removed,
}

/// Objects Kubernetes itself creates in every namespace without an ownerReference; never
/// reported as unmanaged.
fn created_by_kubernetes(key: &ObjectKey) -> bool {
    matches!(
        (key.kind.as_str(), key.name.as_str()),
        ("ConfigMap", "kube-root-ca.crt") | ("ServiceAccount", "default")
    ) || (key.kind == "Service"
        && key.name == "kubernetes"
        && key.namespace.as_deref() == Some("default"))
        || (key.kind == "Namespace"
            && matches!(
                key.name.as_str(),
                "default" | "kube-system" | "kube-public" | "kube-node-lease"
            ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn coverage(kinds: &[&str], namespaces: &[&str]) -> Coverage {
        Coverage::new(&UnmanagedConfig {
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
        })
        .unwrap()
    }

    fn cm(namespace: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": namespace}})
    }

    #[test]
    fn only_unowned_objects_in_covered_namespaces_are_unmanaged() {
        let mut c = coverage(&["ConfigMap"], &["shop"]);
        let kind = c.kinds().next().unwrap().clone();
        let now = Timestamp::UNIX_EPOCH;
        let mut observe = |object: &Value| {
            let key = ObjectKey::of(object).unwrap();
            c.observe(&kind, &key, object, now)
        };
        assert!(
            matches!(observe(&cm("shop", "stray")), Change::Added(e) if e.class == DriftClass::Unmanaged && e.since == Some(now))
        );
        assert_eq!(observe(&cm("shop", "stray")), Change::None, "reported once");
        assert_eq!(observe(&cm("other", "stray")), Change::None);
        assert_eq!(observe(&cm("shop", "kube-root-ca.crt")), Change::None);
        let mut adopted = cm("shop", "stray");
        adopted["metadata"]["ownerReferences"] = json!([{"kind": "Deployment", "name": "web"}]);
        assert_eq!(
            observe(&adopted),
            Change::Removed,
            "a controller adopted it"
        );
    }

    #[test]
    fn owned_counts_covered_live_objects_and_is_absent_when_off() {
        let c = coverage(&["ConfigMap"], &[]);
        let keys = [
            ObjectKey::of(&cm("a", "x")).unwrap(),
            ObjectKey::of(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "a"}})).unwrap(),
        ];
        assert_eq!(c.owned(keys.iter()), Some(1));
        assert_eq!(coverage(&[], &[]).owned(keys.iter()), None);
    }

    #[test]
    fn a_list_drops_unmanaged_objects_it_did_not_return() {
        let mut c = coverage(&["ConfigMap"], &[]);
        let kind = c.kinds().next().unwrap().clone();
        let (a, b) = (cm("n", "a"), cm("n", "b"));
        let (ka, kb) = (ObjectKey::of(&a).unwrap(), ObjectKey::of(&b).unwrap());
        c.observe(&kind, &ka, &a, Timestamp::UNIX_EPOCH);
        c.observe(&kind, &kb, &b, Timestamp::UNIX_EPOCH);
        assert_eq!(c.retain_listed(&kind, &[ka.clone()].into()), vec![kb]);
        assert!(c.forget(&ka));
    }
}
