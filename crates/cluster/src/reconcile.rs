//! A source's committed revision against the cluster: its apply plan, which objects differ
//! live, what `--prune` would delete, and the steps [`crate::apply`] writes. Shared by
//! `driftd plan`, `driftd reconcile` and the daemon's remediation, so they agree.

use crate::apply::{ApplyError, ApplyStep, Cluster};
use driftd_core::diff::{ClusterFacts, CompareInput, Comparison, Differ, DriftClass};
use driftd_core::plan::{Plan, PlanError, PlanInput};
use driftd_k8s::ObjectKey;
use driftd_store::{RevisionInfo, Store, StoreError};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Why a source cannot be planned or reconciled.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("source {name:?} not found (known sources: {known})")]
    UnknownSource { name: String, known: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("source {name:?}, revision {revision}: {error}")]
    Plan {
        name: String,
        revision: i64,
        error: PlanError,
    },
    #[error("{0}")]
    Cluster(String),
    #[error(transparent)]
    Apply(#[from] ApplyError),
}

/// One object as a revision stores it (Secret values as keyed hashes).
#[derive(Debug, Clone)]
pub struct StoredObject {
    pub key: ObjectKey,
    pub api_version: String,
    pub object: Value,
}

/// The newest revision of one source, with the one before it (for `--prune`).
#[derive(Debug, Clone)]
pub struct SourceRevision {
    pub source: String,
    pub revision: RevisionInfo,
    pub objects: Vec<StoredObject>,
    pub previous: Vec<StoredObject>,
    /// Position of each object in `objects`, so a lookup by key stays O(1) at 10,000s.
    by_key: HashMap<ObjectKey, usize>,
}

fn stored(rows: Vec<(ObjectKey, String, Value)>) -> Vec<StoredObject> {
    rows.into_iter()
        .map(|(key, api_version, object)| StoredObject {
            key,
            api_version,
            object,
        })
        .collect()
}

/// Reads the newest revision of `source` (a Helm release is `helm:<namespace>/<name>`).
pub fn load(store: &Store, source: &str) -> Result<SourceRevision, ReconcileError> {
    let history = store.history(source)?;
    let Some(revision) = history.first().cloned() else {
        let known: Vec<String> = store.sources()?.into_iter().map(|s| s.name).collect();
        return Err(ReconcileError::UnknownSource {
            name: source.to_string(),
            known: if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            },
        });
    };
    let objects = stored(store.revision_objects(revision.id)?);
    let previous = match history.get(1) {
        Some(p) => stored(store.revision_objects(p.id)?),
        None => Vec::new(),
    };
    let by_key = objects
        .iter()
        .enumerate()
        .map(|(i, o)| (o.key.clone(), i))
        .collect();
    Ok(SourceRevision {
        source: source.to_string(),
        revision,
        objects,
        previous,
        by_key,
    })
}

impl SourceRevision {
    /// The apply order of the revision's objects.
    pub fn plan(&self) -> Result<Plan, ReconcileError> {
        let inputs: Vec<PlanInput> = self
            .objects
            .iter()
            .map(|o| PlanInput {
                key: &o.key,
                object: &o.object,
            })
            .collect();
        driftd_core::plan::plan(&inputs).map_err(|error| self.plan_error(error))
    }

    fn plan_error(&self, error: PlanError) -> ReconcileError {
        ReconcileError::Plan {
            name: self.source.clone(),
            revision: self.revision.id,
            error,
        }
    }

    /// The object of the revision with this key.
    pub fn object(&self, key: &ObjectKey) -> Option<&StoredObject> {
        self.by_key.get(key).map(|&i| &self.objects[i])
    }

    /// Refuses the plan when a dependency outside the source does not exist in the cluster.
    pub async fn check_external(
        &self,
        plan: &Plan,
        cluster: &mut Cluster,
    ) -> Result<(), ReconcileError> {
        let mut present = HashSet::new();
        for key in plan.external_keys() {
            let found = cluster.get(&key, None).await.map_err(|e| {
                ReconcileError::Cluster(format!(
                    "cannot check that {key} (a dependency outside source {:?}) exists in the \
                     cluster: {e}",
                    self.source
                ))
            })?;
            if found.is_some() {
                present.insert(key);
            }
        }
        plan.check_external(|k| present.contains(k))
            .map_err(|error| self.plan_error(error))
    }

    /// The live objects of the revision (absent ones left out), and of the previous
    /// revision's objects the newest one dropped (candidates for `--prune`).
    pub async fn live(
        &self,
        cluster: &mut Cluster,
    ) -> Result<HashMap<ObjectKey, Value>, ReconcileError> {
        let mut live = HashMap::new();
        for o in self.objects.iter().chain(self.dropped()) {
            if let Some(v) = cluster
                .get(&o.key, Some(&o.api_version))
                .await
                .map_err(ReconcileError::Cluster)?
            {
                live.insert(o.key.clone(), v);
            }
        }
        Ok(live)
    }

    /// Objects of the previous revision that the newest one no longer has.
    pub fn dropped(&self) -> impl Iterator<Item = &StoredObject> {
        let now: HashSet<&ObjectKey> = self.objects.iter().map(|o| &o.key).collect();
        self.previous.iter().filter(move |o| !now.contains(&o.key))
    }

    /// Compares every object with its live counterpart, in plan order.
    pub fn compare(
        &self,
        plan: &Plan,
        differ: &Differ,
        live: &HashMap<ObjectKey, Value>,
    ) -> Vec<(ObjectKey, Comparison)> {
        let facts = self.facts(live);
        let previous = self.previous_objects();
        plan.steps
            .iter()
            .filter_map(|s| self.object(&s.key))
            .map(|o| {
                let comparison = differ.compare(&CompareInput {
                    desired: &o.object,
                    live: live.get(&o.key),
                    previous: previous.get(&o.key).copied(),
                    facts: &facts,
                });
                (o.key.clone(), comparison)
            })
            .collect()
    }

    /// The previous revision's objects by key (fields they set and this one dropped are
    /// drift while live still has them).
    pub fn previous_objects(&self) -> HashMap<&ObjectKey, &Value> {
        self.previous.iter().map(|o| (&o.key, &o.object)).collect()
    }

    /// What the comparison of this revision's objects needs to know beyond each object: the
    /// scale targets of its HPAs and the schemas of CRDs committed or live.
    pub fn facts(&self, live: &HashMap<ObjectKey, Value>) -> ClusterFacts {
        let mut facts = ClusterFacts::default();
        for o in self
            .objects
            .iter()
            .filter(|o| o.key.kind == "HorizontalPodAutoscaler")
        {
            facts
                .hpa_targets
                .extend(driftd_k8s::hpa_scale_target(&o.object));
        }
        let crds = self
            .objects
            .iter()
            .map(|o| &o.object)
            .chain(live.values())
            .filter(|o| o["kind"] == "CustomResourceDefinition");
        for bad in facts.add_crds(crds) {
            tracing::warn!("a CustomResourceDefinition is compared without its schema: {bad}");
        }
        facts
    }

    /// The steps that write `write` (with Secret values restored from the store) and wait
    /// for every dependency, in plan order. Refused, naming the Secret, when a Secret's
    /// values were never kept.
    pub fn steps(
        &self,
        store: &Store,
        plan: &Plan,
        write: &HashSet<ObjectKey>,
    ) -> Result<Vec<ApplyStep>, ReconcileError> {
        // What the written objects wait for: kept (without a manifest) for its apiVersion.
        let needed: HashSet<&ObjectKey> = plan
            .steps
            .iter()
            .filter(|s| write.contains(&s.key))
            .flat_map(|s| s.depends_on.iter().map(|d| &d.key))
            .collect();
        let mut steps = Vec::new();
        for s in &plan.steps {
            let Some(o) = self.object(&s.key) else {
                continue;
            };
            let manifest = match write.contains(&s.key) {
                true => Some(
                    store
                        .desired_with_values(&self.source, &s.key)?
                        .unwrap_or_else(|| o.object.clone()),
                ),
                false => None,
            };
            if manifest.is_none() && !needed.contains(&s.key) {
                continue;
            }
            steps.push(ApplyStep {
                key: s.key.clone(),
                api_version: o.api_version.clone(),
                manifest,
                depends_on: s.depends_on.iter().map(|d| d.key.clone()).collect(),
            });
        }
        Ok(steps)
    }
}

/// The objects a reconcile writes: those missing or differing live.
pub fn drifting(comparisons: &[(ObjectKey, Comparison)]) -> HashSet<ObjectKey> {
    comparisons
        .iter()
        .filter(|(_, c)| matches!(c.class, DriftClass::Modified | DriftClass::Missing))
        .map(|(k, _)| k.clone())
        .collect()
}
