//! kube-apiserver's authorizer chain as the simulator models it: the `system:masters` group
//! is allowed everything (`authorizerfactory.NewPrivilegedGroups`, first in
//! `pkg/kubeapiserver/authorizer`), then RBAC over the stored ClusterRoles, Roles and their
//! bindings (`plugin/pkg/auth/authorizer/rbac/rbac.go`, `pkg/registry/rbac/validation/rule.go`
//! `VisitRulesFor`, and the matchers of `pkg/apis/rbac/v1/evaluation_helpers.go`).
//!
//! Not modelled: the Node authorizer (no kubelet identities exist here), aggregated
//! ClusterRoles (`aggregationRule` is filled by kube-controller-manager, which does not run),
//! the bootstrap roles a real cluster starts with, and field/label selectors of
//! resource attributes (authorization ignores them unless a webhook reads them).

use crate::store::Store;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// Who asks: a SubjectAccessReview's `spec.user`, `groups`, `uid`, `extra`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

/// What is asked (`authorizer.AttributesRecord`): a resource request, or a path.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Resource {
        verb: String,
        namespace: String,
        group: String,
        resource: String,
        subresource: String,
        name: String,
    },
    NonResource {
        verb: String,
        path: String,
    },
}

/// The authorizer's answer; the SubjectAccessReview status carries both fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub allowed: bool,
    /// Which binding allowed it, or why rules could not be read; empty otherwise.
    pub reason: String,
}

/// `user.SystemPrivilegedGroup`.
const PRIVILEGED_GROUP: &str = "system:masters";

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    #[serde(rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct RoleRef {
    kind: String,
    name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Binding {
    metadata: Meta,
    subjects: Vec<Subject>,
    role_ref: RoleRef,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Meta {
    name: String,
    namespace: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
struct Role {
    rules: Vec<PolicyRule>,
}

/// The RBAC objects one decision reads.
#[derive(Debug, Default)]
pub struct Policy {
    cluster_roles: BTreeMap<String, Value>,
    /// (namespace, name) -> Role.
    roles: BTreeMap<(String, String), Value>,
    cluster_role_bindings: Vec<Value>,
    /// namespace -> its RoleBindings.
    role_bindings: BTreeMap<String, Vec<Value>>,
}

impl Policy {
    /// The policy from objects as a client would write them (ClusterRole, Role,
    /// ClusterRoleBinding, RoleBinding; anything else is ignored).
    pub fn from_objects(objects: impl IntoIterator<Item = Value>) -> Policy {
        let mut policy = Policy::default();
        for object in objects {
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let ns = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string();
            match object["kind"].as_str().unwrap_or("") {
                "ClusterRole" => {
                    policy.cluster_roles.insert(name, object);
                }
                "Role" => {
                    policy.roles.insert((ns, name), object);
                }
                "ClusterRoleBinding" => policy.cluster_role_bindings.push(object),
                "RoleBinding" => policy.role_bindings.entry(ns).or_default().push(object),
                _ => {}
            }
        }
        policy
    }

    /// What `store` holds now; only the bindings `namespace` needs are read.
    pub fn load(store: &Store, namespace: &str) -> Policy {
        let mut objects = Vec::new();
        for plural in [
            "clusterroles",
            "clusterrolebindings",
            "roles",
            "rolebindings",
        ] {
            let Some(info) = store.resolve("rbac.authorization.k8s.io", "v1", plural) else {
                continue;
            };
            for (ns, name) in store.keys(&info) {
                if info.namespaced && ns != namespace {
                    continue;
                }
                let ns = (!ns.is_empty()).then_some(ns.as_str());
                if let Ok(object) = store.get(&info, ns, &name) {
                    objects.push(object);
                }
            }
        }
        Policy::from_objects(objects)
    }

    /// `GetRoleReferenceRules`; the error reads as the listers' NotFound.
    fn role_rules(&self, role_ref: &RoleRef, namespace: &str) -> Result<Vec<PolicyRule>, String> {
        let found = match role_ref.kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&role_ref.name).ok_or_else(|| {
                format!(
                    "clusterrole.rbac.authorization.k8s.io \"{}\" not found",
                    role_ref.name
                )
            })?,
            "Role" => self
                .roles
                .get(&(namespace.to_string(), role_ref.name.clone()))
                .ok_or_else(|| {
                    format!(
                        "role.rbac.authorization.k8s.io \"{}\" not found",
                        role_ref.name
                    )
                })?,
            other => return Err(format!("unsupported role reference kind: {other:?}")),
        };
        Ok(Role::deserialize(found).unwrap_or_default().rules)
    }
}

/// The privileged group first, then RBAC (`RBACAuthorizer.Authorize`): allowed by the first
/// rule that matches, the reason naming its binding; otherwise not allowed, the reason
/// listing the bindings whose roles could not be read.
pub fn authorize(policy: &Policy, user: &User, request: &Request) -> Decision {
    if user.groups.iter().any(|g| g == PRIVILEGED_GROUP) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let namespace = match request {
        Request::Resource { namespace, .. } => namespace.as_str(),
        Request::NonResource { .. } => "",
    };
    let mut errors = Vec::new();
    let cluster = policy.cluster_role_bindings.iter().map(|b| (b, ""));
    let local = policy
        .role_bindings
        .get(namespace)
        .filter(|_| !namespace.is_empty())
        .into_iter()
        .flatten()
        .map(|b| (b, namespace));
    for (binding, binding_ns) in cluster.chain(local) {
        let binding = Binding::deserialize(binding).unwrap_or_default();
        let Some(subject) = binding
            .subjects
            .iter()
            .find(|s| applies_to(user, s, binding_ns))
        else {
            continue;
        };
        let rules = match policy.role_rules(&binding.role_ref, binding_ns) {
            Ok(rules) => rules,
            Err(err) => {
                errors.push(err);
                continue;
            }
        };
        if rules.iter().any(|rule| rule_allows(request, rule)) {
            return Decision {
                allowed: true,
                reason: format!(
                    "RBAC: allowed by {}",
                    describe(&binding, subject, binding_ns)
                ),
            };
        }
    }
    // `utilerrors.NewAggregate(...).Error()`: one error alone, several in brackets.
    let reason = match errors.as_slice() {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => format!("RBAC: [{}]", many.join(", ")),
    };
    Decision {
        allowed: false,
        reason,
    }
}

/// `clusterRoleBindingDescriber` / `roleBindingDescriber` with `describeSubject`.
fn describe(binding: &Binding, subject: &Subject, binding_ns: &str) -> String {
    let who = match subject.kind.as_str() {
        "ServiceAccount" => {
            let ns = if subject.namespace.is_empty() {
                binding_ns
            } else {
                &subject.namespace
            };
            format!("{} {:?}", subject.kind, format!("{}/{ns}", subject.name))
        }
        _ => format!("{} {:?}", subject.kind, subject.name),
    };
    let name = if binding_ns.is_empty() {
        format!("ClusterRoleBinding {:?}", binding.metadata.name)
    } else {
        format!(
            "RoleBinding {:?}",
            format!("{}/{}", binding.metadata.name, binding.metadata.namespace)
        )
    };
    format!(
        "{name} of {} {:?} to {who}",
        binding.role_ref.kind, binding.role_ref.name
    )
}

/// `appliesToUser`: a ServiceAccount subject without a namespace takes the binding's.
fn applies_to(user: &User, subject: &Subject, binding_ns: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let ns = if subject.namespace.is_empty() {
                binding_ns
            } else {
                &subject.namespace
            };
            !ns.is_empty() && user.name == super::tokens::service_account_user(ns, &subject.name)
        }
        _ => false,
    }
}

/// `RuleAllows`.
pub fn rule_allows(request: &Request, rule: &PolicyRule) -> bool {
    match request {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            let combined = if subresource.is_empty() {
                resource.clone()
            } else {
                format!("{resource}/{subresource}")
            };
            verb_matches(rule, verb)
                && rule.api_groups.iter().any(|g| g == "*" || g == group)
                && resource_matches(rule, &combined, subresource)
                && (rule.resource_names.is_empty() || rule.resource_names.contains(name))
        }
        Request::NonResource { verb, path } => {
            verb_matches(rule, verb) && non_resource_url_matches(rule, path)
        }
    }
}

fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == "*" || v == verb)
}

/// `ResourceMatches`: `*`, the exact `resource/subresource`, or `*/subresource`.
fn resource_matches(rule: &PolicyRule, combined: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        r == "*"
            || r == combined
            || (!subresource.is_empty()
                && r.len() == subresource.len() + 2
                && r.starts_with("*/")
                && r.ends_with(subresource))
    })
}

/// `NonResourceURLMatches`: `*` matches every path; otherwise the exact path, or, for a
/// rule URL ending in `*`, any path starting with the rule URL less its trailing stars
/// (Go's `strings.TrimRight(ruleURL, "*")`: `/metrics*` covers `/metrics` and
/// `/metricsfoo`, `/foo/*` covers `/foo/bar` but not `/foo`).
pub fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|url| {
        url == "*"
            || url == path
            || (url.ends_with('*') && path.starts_with(url.trim_end_matches('*')))
    })
}
