//! Apply order of a source's objects (`driftd plan`, `driftd reconcile`, remediation): a
//! pure function of the objects, so the CLI and the daemon order the same way.
//!
//! The order is a topological sort of a dependency graph, picking among the objects whose
//! dependencies are all placed the one that comes first in Helm's install order:
//! - explicit edges: the `config.kubernetes.io/depends-on` annotation, in kubernetes-sigs/
//!   cli-utils' format (`pkg/object/dependson/strings.go`): comma-separated references,
//!   `group/namespaces/namespace/kind/name` for namespaced objects and `group/kind/name`
//!   for cluster-scoped ones, the core group empty (`/namespaces/app/Secret/db`);
//! - implicit edges, as cli-utils adds them (`pkg/object/graph/depends.go`): a custom
//!   resource depends on the CustomResourceDefinition of its group and kind, a namespaced
//!   object on its Namespace, when the source holds them;
//! - no edge between two objects: Helm's `InstallOrder` by kind (helm/helm
//!   `pkg/releaseutil/kind_sorter.go` in Helm 3, `pkg/release/v1/util/kind_sorter.go` in
//!   Helm 4), unknown kinds after all known ones and alphabetically by kind among themselves
//!   (`lessByKind`); within one kind by namespace and name (Helm keeps the chart's file
//!   order there, which a committed revision does not record).
//!
//! A dependency the source does not hold is *external*: the plan lists it, and the caller,
//! which can ask the cluster, refuses the plan with [`Plan::check_external`] when it does
//! not exist there either. A cycle is refused naming its objects.

use driftd_k8s::ObjectKey;
use serde::Serialize;
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};

#[cfg(test)]
mod tests;

/// The annotation naming the objects an object must be applied after.
pub const DEPENDS_ON: &str = "config.kubernetes.io/depends-on";

/// Helm's install order by kind (helm/helm `pkg/releaseutil/kind_sorter.go`,
/// `InstallOrder`, as of Helm 3.17 / 4.0): earlier kinds are applied first.
pub const HELM_INSTALL_ORDER: &[&str] = &[
    "PriorityClass",
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

/// One object to order: its identity and its manifest (annotations, CRD names).
#[derive(Debug, Clone, Copy)]
pub struct PlanInput<'a> {
    pub key: &'a ObjectKey,
    pub object: &'a Value,
}

/// Why a dependency edge exists, shown by `driftd plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Because {
    /// The object's `config.kubernetes.io/depends-on` annotation names it.
    DependsOn,
    /// A custom resource waits for the CustomResourceDefinition of its kind.
    Crd,
    /// A namespaced object waits for its Namespace.
    Namespace,
}

/// One dependency of a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dependency {
    #[serde(flatten)]
    pub key: ObjectKey,
    pub because: Because,
    /// Not an object of the source: it must already exist in the cluster.
    pub external: bool,
}

/// One object in apply order with what it waits for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    #[serde(flatten)]
    pub key: ObjectKey,
    pub depends_on: Vec<Dependency>,
}

/// The apply order of a source's objects.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub steps: Vec<Step>,
}

/// Why no order exists.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The annotation does not parse (cli-utils refuses the same values).
    #[error("{object}: invalid {DEPENDS_ON} annotation {value:?}: {reason}")]
    InvalidAnnotation {
        object: Box<ObjectKey>,
        value: String,
        reason: String,
    },
    /// Objects wait for each other: the cycle, first object repeated at the end.
    #[error("dependency cycle: {}", render_cycle(.cycle))]
    Cycle { cycle: Vec<ObjectKey> },
    /// Dependencies neither in the source nor in the cluster, as (object, dependency).
    #[error("{}", render_missing(.missing))]
    MissingDependency {
        missing: Vec<(ObjectKey, ObjectKey)>,
    },
}

fn render_cycle(cycle: &[ObjectKey]) -> String {
    cycle
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" -> ")
}

fn render_missing(missing: &[(ObjectKey, ObjectKey)]) -> String {
    missing
        .iter()
        .map(|(object, dep)| {
            format!("{object} depends on {dep}, which is neither in the source nor in the cluster")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Parses one `config.kubernetes.io/depends-on` value into object keys, as cli-utils'
/// `UnmarshalDependencySet` does: `,`-separated, each reference trimmed, three fields
/// (cluster-scoped) or five with `namespaces` second; group and namespace may be empty,
/// kind and name may not.
pub fn parse_depends_on(value: &str) -> Result<Vec<ObjectKey>, String> {
    value
        .split(',')
        .map(|reference| {
            let reference = reference.trim();
            let fields: Vec<&str> = reference.split('/').collect();
            let (group, namespace, kind, name) = match fields.as_slice() {
                [group, kind, name] => (*group, None, *kind, *name),
                [group, "namespaces", ns, kind, name] => (*group, Some(*ns), *kind, *name),
                [_, _, _, _, _] => {
                    return Err(format!("missing \"namespaces\" field: {reference:?}"))
                }
                _ => {
                    return Err(format!(
                        "expected 3 fields (group/kind/name) or 5 \
                         (group/namespaces/namespace/kind/name): {reference:?}"
                    ))
                }
            };
            if kind.is_empty() {
                return Err(format!("kind is empty: {reference:?}"));
            }
            if name.is_empty() {
                return Err(format!("name is empty: {reference:?}"));
            }
            Ok(ObjectKey {
                group: group.to_string(),
                kind: kind.to_string(),
                namespace: namespace.filter(|ns| !ns.is_empty()).map(str::to_string),
                name: name.to_string(),
            })
        })
        .collect()
}

/// Rank of a kind in Helm's install order; unknown kinds after every known one, among
/// themselves by kind name (Helm's `lessByKind`). Deleting goes the other way.
pub fn kind_rank(kind: &str) -> (usize, String) {
    match HELM_INSTALL_ORDER.iter().position(|k| *k == kind) {
        Some(i) => (i, String::new()),
        None => (HELM_INSTALL_ORDER.len(), kind.to_string()),
    }
}

/// Sort key of an object when nothing else decides: kind rank, then namespace and name.
type Priority = ((usize, String), Option<String>, String, String);

fn priority(key: &ObjectKey) -> Priority {
    (
        kind_rank(&key.kind),
        key.namespace.clone(),
        key.name.clone(),
        key.group.clone(),
    )
}

/// Orders `objects` for applying (see the module documentation). External dependencies
/// are kept in the plan; [`Plan::check_external`] decides whether they exist.
pub fn plan(objects: &[PlanInput]) -> Result<Plan, PlanError> {
    let index: HashMap<&ObjectKey, usize> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| (o.key, i))
        .collect();
    // Custom resources' (group, kind) defined by CRDs of the source.
    let crds: HashMap<(String, String), usize> = objects
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            crate::manifest::crd_scope(&o.key.kind, o.object).map(|(gk, _)| (gk, i))
        })
        .collect();
    let mut deps: Vec<Vec<Dependency>> = Vec::with_capacity(objects.len());
    for o in objects {
        let mut mine: Vec<Dependency> = Vec::new();
        let mut push = |key: ObjectKey, because: Because| {
            if key == *o.key || mine.iter().any(|d| d.key == key) {
                // An object waits for itself only by its own annotation: a cycle.
                if key == *o.key && because == Because::DependsOn {
                    mine.push(Dependency {
                        external: false,
                        key,
                        because,
                    });
                }
                return;
            }
            let external = !index.contains_key(&key);
            mine.push(Dependency {
                key,
                because,
                external,
            });
        };
        if let Some(value) = o
            .object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(DEPENDS_ON))
        {
            let text = value.as_str().ok_or_else(|| PlanError::InvalidAnnotation {
                object: Box::new(o.key.clone()),
                value: value.to_string(),
                reason: "must be a string".into(),
            })?;
            let refs = parse_depends_on(text).map_err(|reason| PlanError::InvalidAnnotation {
                object: Box::new(o.key.clone()),
                value: text.to_string(),
                reason,
            })?;
            for r in refs {
                push(r, Because::DependsOn);
            }
        }
        if let Some(&crd) = crds.get(&(o.key.group.clone(), o.key.kind.clone())) {
            push(objects[crd].key.clone(), Because::Crd);
        }
        if let Some(ns) = &o.key.namespace {
            let namespace = ObjectKey {
                group: String::new(),
                kind: "Namespace".into(),
                namespace: None,
                name: ns.clone(),
            };
            if index.contains_key(&namespace) {
                push(namespace, Because::Namespace);
            }
        }
        deps.push(mine);
    }

    // Kahn's algorithm, taking the ready object of lowest priority first.
    let mut waiting: Vec<usize> = deps
        .iter()
        .map(|d| d.iter().filter(|d| !d.external).count())
        .collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); objects.len()];
    for (i, d) in deps.iter().enumerate() {
        for dep in d.iter().filter(|d| !d.external) {
            dependents[index[&dep.key]].push(i);
        }
    }
    let mut ready: BinaryHeap<Reverse<(Priority, usize)>> = waiting
        .iter()
        .enumerate()
        .filter(|(_, w)| **w == 0)
        .map(|(i, _)| Reverse((priority(objects[i].key), i)))
        .collect();
    let mut order = Vec::with_capacity(objects.len());
    while let Some(Reverse((_, i))) = ready.pop() {
        order.push(i);
        for &d in &dependents[i] {
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.push(Reverse((priority(objects[d].key), d)));
            }
        }
    }
    if order.len() < objects.len() {
        return Err(PlanError::Cycle {
            cycle: find_cycle(objects, &deps, &index, &waiting),
        });
    }
    let steps = order
        .into_iter()
        .map(|i| {
            let mut depends_on = std::mem::take(&mut deps[i]);
            depends_on.sort_by(|a, b| (a.because, &a.key).cmp(&(b.because, &b.key)));
            Step {
                key: objects[i].key.clone(),
                depends_on,
            }
        })
        .collect();
    Ok(Plan { steps })
}

/// One cycle among the objects Kahn's algorithm could not place (`waiting` > 0): every
/// such object waits for another unplaced one, so following those edges repeats.
fn find_cycle(
    objects: &[PlanInput],
    deps: &[Vec<Dependency>],
    index: &HashMap<&ObjectKey, usize>,
    waiting: &[usize],
) -> Vec<ObjectKey> {
    let start = (0..objects.len())
        .filter(|&i| waiting[i] > 0)
        .min_by_key(|&i| priority(objects[i].key))
        .expect("an unplaced object");
    let mut path = vec![start];
    loop {
        let current = *path.last().expect("non-empty");
        let next = deps[current]
            .iter()
            .filter(|d| !d.external)
            .map(|d| index[&d.key])
            .filter(|&j| waiting[j] > 0)
            .min_by_key(|&j| priority(objects[j].key))
            .expect("an unplaced object waits for another unplaced one");
        if let Some(at) = path.iter().position(|&p| p == next) {
            let mut cycle: Vec<ObjectKey> =
                path[at..].iter().map(|&p| objects[p].key.clone()).collect();
            cycle.push(objects[next].key.clone());
            return cycle;
        }
        path.push(next);
    }
}

impl Plan {
    /// Every dependency outside the source, as (object, dependency), in plan order.
    pub fn external(&self) -> Vec<(&ObjectKey, &ObjectKey)> {
        self.steps
            .iter()
            .flat_map(|s| {
                s.depends_on
                    .iter()
                    .filter(|d| d.external)
                    .map(move |d| (&s.key, &d.key))
            })
            .collect()
    }

    /// Refuses the plan, naming every pair, when an external dependency does not exist
    /// (`exists` asks the cluster).
    pub fn check_external(
        &self,
        mut exists: impl FnMut(&ObjectKey) -> bool,
    ) -> Result<(), PlanError> {
        let missing: Vec<(ObjectKey, ObjectKey)> = self
            .external()
            .into_iter()
            .filter(|(_, dep)| !exists(dep))
            .map(|(o, d)| (o.clone(), d.clone()))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(PlanError::MissingDependency { missing })
        }
    }

    /// The distinct external dependencies, for the caller to look up.
    pub fn external_keys(&self) -> BTreeSet<ObjectKey> {
        self.external()
            .into_iter()
            .map(|(_, d)| d.clone())
            .collect()
    }
}
