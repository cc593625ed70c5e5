//! An object named on a command line: `KIND[.GROUP]/[NAMESPACE/]NAME`, as the commands that
//! act on one object (`reconcile --object`) take it and as `/drift` prints it in the
//! commands it suggests.

use crate::ObjectKey;

/// A command-line name of one object. Without a group it matches the kind in any group
/// (`Deployment/shop/web`); without a namespace, only a cluster-scoped object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: String,
    pub group: Option<String>,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    /// Reads `KIND[.GROUP]/[NAMESPACE/]NAME`; the error says the form.
    pub fn parse(text: &str) -> Result<ObjectRef, String> {
        let wrong = || {
            format!(
                "`{text}` is not KIND[.GROUP]/NAMESPACE/NAME (or KIND[.GROUP]/NAME for a cluster-scoped object), e.g. Deployment.apps/shop/web"
            )
        };
        let parts: Vec<&str> = text.split('/').collect();
        let (kind_group, namespace, name) = match parts.as_slice() {
            [kg, name] => (*kg, None, *name),
            [kg, ns, name] => (*kg, Some(ns.to_string()), *name),
            _ => return Err(wrong()),
        };
        let (kind, group) = match kind_group.split_once('.') {
            Some((k, g)) => (k, Some(g.to_string())),
            None => (kind_group, None),
        };
        if kind.is_empty() || name.is_empty() || namespace.as_deref() == Some("") {
            return Err(wrong());
        }
        Ok(ObjectRef {
            kind: kind.to_string(),
            group,
            namespace,
            name: name.to_string(),
        })
    }

    /// The exact name of `key` in this form (group included, so it matches that one kind).
    pub fn of(key: &ObjectKey) -> String {
        let kind = match key.group.as_str() {
            "" => key.kind.clone(),
            g => format!("{}.{g}", key.kind),
        };
        match &key.namespace {
            Some(ns) => format!("{kind}/{ns}/{}", key.name),
            None => format!("{kind}/{}", key.name),
        }
    }

    pub fn matches(&self, key: &ObjectKey) -> bool {
        key.kind == self.kind
            && self.group.as_deref().is_none_or(|g| g == key.group)
            && key.namespace == self.namespace
            && key.name == self.name
    }
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(g) = &self.group {
            write!(f, ".{g}")?;
        }
        if let Some(ns) = &self.namespace {
            write!(f, "/{ns}")?;
        }
        write!(f, "/{}", self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(group: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            group: group.into(),
            kind: kind.into(),
            namespace: ns.map(str::to_string),
            name: name.into(),
        }
    }

    #[test]
    fn names_round_trip_and_match_their_object_only() {
        let web = key("apps", "Deployment", Some("shop"), "web");
        let role = key("rbac.authorization.k8s.io", "ClusterRole", None, "view");
        for k in [&web, &role] {
            let r = ObjectRef::parse(&ObjectRef::of(k)).unwrap();
            assert!(r.matches(k), "{r}");
            assert_eq!(r.to_string(), ObjectRef::of(k));
        }
        assert_eq!(ObjectRef::of(&web), "Deployment.apps/shop/web");
        let any_group = ObjectRef::parse("Deployment/shop/web").unwrap();
        assert!(any_group.matches(&web));
        assert!(!any_group.matches(&key("apps", "Deployment", Some("other"), "web")));
        assert!(!ObjectRef::parse("Deployment/web").unwrap().matches(&web));
        assert!(!ObjectRef::parse("Deployment.extensions/shop/web")
            .unwrap()
            .matches(&web));
        for bad in [
            "web",
            "Deployment/",
            "/shop/web",
            "Deployment//web",
            "a/b/c/d",
        ] {
            assert!(ObjectRef::parse(bad).is_err(), "{bad}");
        }
    }
}
