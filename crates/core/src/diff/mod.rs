//! The comparison of a desired object with its live counterpart: a pure function, no I/O.
//!
//! It reports what a person or an unfinished deploy changed, never what kube-apiserver or a
//! controller did by design. The committed state is the manifest plus kube-apiserver's
//! deterministic defaults (`driftd_k8s::defaults::apply`, built-in kinds only): every
//! field that defaulted object sets is compared, so a hand edit of a defaulted field
//! (`suspend`, `type`, `imagePullPolicy`, an omitted `replicas`) is drift, while allocated
//! values, server metadata, `status` and fields nobody committed are not. Equal values in
//! other spellings are equal, keyed lists match by key, atomic lists of built-in kinds must
//! match exactly (one `replace` of the whole list otherwise), fields controllers own are
//! skipped, and Secret values are only ever shown as keyed hashes.
//!
//! Files: `walk` (the walk over the defaulted desired object, three-way prune), `lists`,
//! `normalize` (spellings), `pointer` (paths), `managed` (managedFields attribution),
//! `secret`, `rules` (ignore rules).

pub mod dry_run;
mod list_items;
pub mod managed;
pub mod normalize;
pub mod pointer;
pub mod pruned;
pub mod rules;
pub mod secret;
mod walk;

pub use managed::ManagerMatch;
pub use pruned::{pruned_fields, PrunedFields};
pub use rules::{ExpiredRule, IgnoreRule, RuleError, RuleSet};

use driftd_k8s::crd::CrdSchemas;
use driftd_k8s::ObjectKey;
use pointer::{field_names, pointer, Seg, Side};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use walk::{Context, RawChange, Walker};

use serde::Serialize;
use serde_json::Value;

pub use crate::verdict::{DriftClass, IgnoredCount, SchemaUse};

/// RFC 6902 operation that would bring the live object back to the desired one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeOp {
    Add,
    Remove,
    Replace,
}

/// One difference. Secret values never appear: `desired`/`live` hold a keyed hash instead.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Change {
    /// RFC 6901 pointer into the desired object (into the live list for an extra item); for
    /// a field only the server defaults set, where it would sit in the desired object; a
    /// Secret value the manifest gives in `stringData` is at `/stringData/<key>`.
    pub path: String,
    pub op: ChangeOp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub desired: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<Value>,
    /// Readable form: `spec.template.spec.containers[name=app].image`.
    pub field: String,
    /// Field manager that last wrote this field live (from managedFields), and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manager: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<String>,
}

/// The result of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub class: DriftClass,
    pub changes: Vec<Change>,
    /// Patch that applied to the live object restores the desired fields. Secret values in
    /// it are hashes too, so it is for showing, not for applying to Secrets.
    pub patch: json_patch::Patch,
    /// How many differences each ignore rule or annotation hid (only rules that hid some).
    pub ignored: Vec<IgnoredCount>,
    /// For a custom resource only (absent for built-in kinds): whether it was compared by
    /// its CRD's structural schema (`crd`: pruned, defaulted, lists by list type) or, the
    /// CRD being unknown, by the plain rules (`none`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaUse>,
}

/// Annotation on a desired object: comma-separated ignore pointers for that object.
pub const IGNORE_ANNOTATION: &str = "driftd.io/ignore";
/// Annotation on a desired object: `"false"` skips the object (always in sync).
pub const COMPARE_ANNOTATION: &str = "driftd.io/compare";
/// How the per-object annotation is named in `Comparison::ignored`.
pub const ANNOTATION_RULE: &str = "annotation driftd.io/ignore";

/// Checks the driftd annotations of a desired object, so a typo is reported where the
/// object was written instead of silently ignoring nothing. The error names the annotation.
pub fn validate_annotations(desired: &Value) -> Result<(), String> {
    let Some(annotations) = desired
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    if let Some(v) = annotations.get(IGNORE_ANNOTATION) {
        let v = v
            .as_str()
            .ok_or_else(|| format!("annotation {IGNORE_ANNOTATION}: must be a string"))?;
        rules::annotation_patterns(v)
            .map_err(|e| format!("annotation {IGNORE_ANNOTATION}: {e}"))?;
    }
    if let Some(v) = annotations.get(COMPARE_ANNOTATION) {
        if !matches!(v.as_str(), Some("true") | Some("false")) {
            return Err(format!(
                "annotation {COMPARE_ANNOTATION}: must be \"true\" or \"false\""
            ));
        }
    }
    Ok(())
}

/// Facts about the cluster beyond the object itself that decide what is drift.
#[derive(Debug, Clone)]
pub struct ClusterFacts {
    /// Scale targets of HorizontalPodAutoscalers ([`driftd_k8s::hpa_scale_target`]): their
    /// `spec.replicas` belongs to the autoscaler.
    pub hpa_targets: HashSet<ObjectKey>,
    /// Managers whose fields in live `managedFields` are never drift. Default:
    /// `kube-controller-manager` through the `scale` subresource (HPA and other scalers).
    pub controller_managers: Vec<ManagerMatch>,
    /// CRDs by (group, kind) ([`CrdSchemas::key`]): custom resources of these kinds are
    /// compared by their version's structural schema. From the desired state, else the
    /// cluster.
    pub custom_schemas: HashMap<(String, String), Arc<CrdSchemas>>,
}

impl ClusterFacts {
    /// Adds the schemas of every CustomResourceDefinition among `objects` (a later CRD of
    /// the same kind wins); CRDs that do not read into structural schemas are returned with
    /// why, and left out.
    pub fn add_crds<'a>(
        &mut self,
        objects: impl IntoIterator<Item = &'a Value>,
    ) -> Vec<driftd_k8s::crd::SchemaError> {
        let mut errors = Vec::new();
        for o in objects {
            if o.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
                continue;
            }
            match CrdSchemas::from_crd(o) {
                Ok(s) => {
                    self.custom_schemas.insert(s.key(), Arc::new(s));
                }
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// The CRD of a custom resource's kind, if known.
    pub fn crd_of(&self, api_version: &str, kind: &str) -> Option<&Arc<CrdSchemas>> {
        let group = driftd_k8s::kinds::split_api_version(api_version).0;
        self.custom_schemas
            .get(&(group.to_string(), kind.to_string()))
    }
}

impl Default for ClusterFacts {
    fn default() -> Self {
        ClusterFacts {
            hpa_targets: HashSet::new(),
            custom_schemas: HashMap::new(),
            controller_managers: vec![ManagerMatch {
                manager: "kube-controller-manager".into(),
                subresource: Some("scale".into()),
            }],
        }
    }
}

/// Inputs of one comparison.
pub struct CompareInput<'a> {
    pub desired: &'a Value,
    /// `None` when the object does not exist live.
    pub live: Option<&'a Value>,
    /// The object as the source's previous revision had it (fields removed since are drift).
    pub previous: Option<&'a Value>,
    pub facts: &'a ClusterFacts,
}

/// The desired side of a comparison as it is compared: Secret `stringData` folded into
/// `data` and, for built-in kinds, kube-apiserver's deterministic defaults applied; for a
/// custom resource whose CRD is known, pruned and defaulted by its schema as the server
/// returns it. Making it costs a deep copy of the object, so the daemon keeps one per
/// desired object instead of paying that on every watch event.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedDesired {
    stored: Value,
    previous: Option<Value>,
    /// The CRD the object was prepared by (custom resources only).
    crd: Option<Arc<CrdSchemas>>,
    /// Fields of the manifest the CRD's schema prunes (`spec.foo`): never live, not drift.
    pruned: Vec<String>,
}

impl PreparedDesired {
    /// Paths of the manifest's fields its CRD's schema prunes on every write: they never
    /// exist live (what `driftd commit` warns about).
    pub fn pruned(&self) -> &[String] {
        &self.pruned
    }
}

/// Compares objects; holds the installation key for Secret hashes and the ignore rules.
pub struct Differ {
    secret_key: Vec<u8>,
    rules: RuleSet,
    now: Option<jiff::Timestamp>,
}

impl Differ {
    /// `secret_key` keys the Secret value hashes: the installation key in the daemon (hashes
    /// stay comparable across restarts), any random key for one-off runs.
    pub fn new(secret_key: &[u8]) -> Differ {
        Differ {
            secret_key: secret_key.to_vec(),
            rules: RuleSet::default(),
            now: None,
        }
    }

    /// Adds validated ignore rules (`RuleSet::new` / `RuleSet::from_toml`).
    pub fn with_rules(mut self, rules: RuleSet) -> Differ {
        self.rules = rules;
        self
    }

    /// Fixes the clock rule expiry is judged by (tests); the wall clock otherwise.
    pub fn at(mut self, now: jiff::Timestamp) -> Differ {
        self.now = Some(now);
        self
    }

    /// The ignore rules in force.
    pub fn rules(&self) -> &RuleSet {
        &self.rules
    }

    /// Rules past their expiry (no longer applied), for the daemon to log and count.
    pub fn expired_rules(&self) -> Vec<ExpiredRule> {
        self.rules.expired(self.clock())
    }

    fn clock(&self) -> jiff::Timestamp {
        self.now.unwrap_or_else(jiff::Timestamp::now)
    }

    /// Compares without a source name (rules with a `source` match never apply).
    pub fn compare(&self, input: &CompareInput) -> Comparison {
        self.compare_in(None, input)
    }

    /// Compares an object of source `source` (used by ignore rules' `source` match).
    pub fn compare_in(&self, source: Option<&str>, input: &CompareInput) -> Comparison {
        let prepared = Self::prepare_with(input.desired, input.previous, input.facts);
        self.compare_prepared(source, input, &prepared)
    }

    /// The desired side in the form it is compared in (see [`PreparedDesired`]), custom
    /// resources by their CRD's schema when `facts` know it.
    pub fn prepare_with(
        desired: &Value,
        previous: Option<&Value>,
        facts: &ClusterFacts,
    ) -> PreparedDesired {
        let mut prepared = Self::prepare(desired, previous);
        let kind = desired.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = desired
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if driftd_k8s::api_types::is_builtin(api_version, kind) {
            return prepared;
        }
        if let Some(crd) = facts.crd_of(api_version, kind) {
            let mut stored = prepared.stored.clone();
            // A version the CRD does not define is compared without a schema.
            if let Ok(served) = crd.as_served(&mut stored) {
                prepared.stored = stored;
                prepared.pruned = served.pruned;
                prepared.crd = Some(crd.clone());
            }
        }
        prepared
    }

    /// The desired side in the form it is compared in (see [`PreparedDesired`]), without
    /// any CRD schema: custom resources by the plain rules ([`Differ::prepare_with`] uses
    /// the CRDs `ClusterFacts` know).
    pub fn prepare(desired: &Value, previous: Option<&Value>) -> PreparedDesired {
        let kind = desired.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = desired
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut stored = normalize::desired_as_stored(kind, desired);
        if driftd_k8s::kinds::builtin(api_version, kind).is_some() {
            // Committed state = manifest + kube-apiserver's deterministic defaults: a field
            // the manifest leaves to a default was committed with that value.
            driftd_k8s::defaults::apply(api_version, kind, &mut stored);
            // A version stored as another is committed as it reads back.
            if let Some(read_back) = driftd_k8s::convert::read_back(&stored) {
                stored = read_back;
            }
            normalize::drop_null_creation_timestamps(&mut stored);
        }
        // The previous revision stays as written: only fields it *set* are pruned.
        let previous = previous.map(|p| normalize::desired_as_stored(kind, p));
        PreparedDesired {
            stored,
            previous,
            crd: None,
            pruned: Vec::new(),
        }
    }

    /// As [`Differ::compare_in`], with the desired side prepared beforehand by
    /// [`Differ::prepare`] from `input.desired` and `input.previous`.
    pub fn compare_prepared(
        &self,
        source: Option<&str>,
        input: &CompareInput,
        prepared: &PreparedDesired,
    ) -> Comparison {
        let desired = input.desired;
        let annotation = |name: &str| {
            pointer::at(desired, &["metadata", "annotations", name]).and_then(Value::as_str)
        };
        if annotation(COMPARE_ANNOTATION).is_some_and(|v| v.trim().eq_ignore_ascii_case("false")) {
            return Comparison::empty(DriftClass::InSync);
        }
        let Some(live) = input.live else {
            return Comparison::empty(DriftClass::Missing);
        };
        let kind = desired.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = desired
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let builtin = driftd_k8s::kinds::builtin(api_version, kind).is_some();
        let version = driftd_k8s::kinds::split_api_version(api_version).1;
        let schema = prepared
            .crd
            .as_ref()
            .and_then(|crd| crd.version(version))
            .and_then(|v| v.schema.as_ref());
        let schema_use = (!driftd_k8s::api_types::is_builtin(api_version, kind)).then_some(
            if prepared.crd.is_some() {
                SchemaUse::Crd
            } else {
                SchemaUse::None
            },
        );

        // Desired Secret values kept as keyed hashes are compared with the live ones' hashes.
        let hashed_live = secret::comparable_live(
            &self.secret_key,
            kind,
            &prepared.stored,
            prepared.previous.as_ref(),
            live,
        );
        let mut walker = Walker::new(Context {
            api_version,
            kind,
            builtin,
            schema,
            desired: &prepared.stored,
        });
        walker.value(
            &mut Vec::new(),
            &prepared.stored,
            Some(hashed_live.as_ref().unwrap_or(live)),
            prepared.previous.as_ref(),
        );
        if walker.changes.is_empty() {
            // In sync, as most objects are: no owners to read, no rules to match.
            return Comparison {
                schema: schema_use,
                ..Comparison::empty(DriftClass::InSync)
            };
        }
        let parsed = managed::parse_texts(live, walker.changes.len());
        let entries = managed::entries(live, &parsed);
        let raw: Vec<RawChange> = walker
            .changes
            .into_iter()
            .filter(|c| !controller_owned(kind, desired, live, input.facts, &entries, &c.segs))
            .collect();

        // Ignore rules: the object's annotation first, then config rules in order.
        let mut ignorers: Vec<(String, Vec<rules::Pattern>, Option<&rules::CompiledRule>)> =
            Vec::new();
        if let Some(v) = annotation(IGNORE_ANNOTATION) {
            // Unparsable entries cannot match anything and are dropped here; inputs are
            // checked with `validate_annotations` where a file and document can be named.
            let pats = v
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .filter_map(|p| rules::Pattern::parse(p).ok())
                .collect();
            ignorers.push((ANNOTATION_RULE.to_string(), pats, None));
        }
        let facts = rules::ObjectFacts::of(desired, source);
        let now = self.clock();
        for r in self.rules.rules.iter().filter(|r| r.applies(&facts, now)) {
            ignorers.push((r.label.clone(), Vec::new(), Some(r)));
        }
        let mut counts = vec![0usize; ignorers.len()];

        let mut changes = Vec::new();
        let mut kept = Vec::new();
        for c in raw {
            // `c.segs` address the live object (patch, managedFields); `dsegs` the desired
            // one (they differ only for Secret `stringData`, stored as `data`).
            let dsegs = secret::desired_segs(kind, desired, &c.segs);
            let owner = managed::owner(&entries, &c.segs);
            let manager = owner.map(|o| o.manager);
            let hit = ignorers.iter().position(|(_, pats, rule)| {
                pats.iter().any(|p| p.matches(&dsegs) || p.matches(&c.segs))
                    || rule
                        .is_some_and(|r| r.ignores(&dsegs, manager) || r.ignores(&c.segs, manager))
            });
            if let Some(i) = hit {
                counts[i] += 1;
                continue;
            }
            let mut change = Change {
                path: pointer(&dsegs, Side::Desired),
                op: c.op,
                desired: c.desired.clone(),
                live: c.live.clone(),
                field: pointer::display(&dsegs),
                manager: manager.map(str::to_string),
                changed_at: owner.and_then(|o| o.time).map(str::to_string),
            };
            let names = field_names(&c.segs);
            if secret::is_secret_path(kind, &names) {
                let whole = names.len() < 2 || names == ["metadata", "annotations"];
                let r = |v: &Option<Value>| {
                    v.as_ref()
                        .map(|v| secret::redact(&self.secret_key, v, whole))
                };
                change.desired = r(&change.desired);
                change.live = r(&change.live);
            }
            kept.push((c.segs, change.clone()));
            changes.push(change);
        }
        let patch = build_patch(&kept, live);
        let ignored = ignorers
            .into_iter()
            .zip(counts)
            .filter(|(_, n)| *n > 0)
            .map(|((rule, _, _), count)| IgnoredCount { rule, count })
            .collect();
        Comparison {
            class: if changes.is_empty() {
                DriftClass::InSync
            } else {
                DriftClass::Modified
            },
            changes,
            patch,
            ignored,
            schema: schema_use,
        }
    }
}

impl Comparison {
    fn empty(class: DriftClass) -> Comparison {
        Comparison {
            class,
            changes: Vec::new(),
            patch: json_patch::Patch(Vec::new()),
            ignored: Vec::new(),
            schema: None,
        }
    }
}

/// Fields a controller owns by design: an HPA target's `spec.replicas`, an aggregated
/// ClusterRole's `rules`, anything the configured controller managers wrote.
fn controller_owned(
    kind: &str,
    desired: &Value,
    live: &Value,
    facts: &ClusterFacts,
    entries: &[managed::Entry],
    segs: &[Seg],
) -> bool {
    let names = field_names(segs);
    if names.starts_with(&["spec", "replicas"])
        && ObjectKey::of(desired).is_some_and(|key| facts.hpa_targets.contains(&key))
    {
        return true;
    }
    // The ClusterRole aggregation controller rewrites `rules` from the selected roles.
    if kind == "ClusterRole"
        && names.first() == Some(&"rules")
        && (desired.get("aggregationRule").is_some_and(|a| !a.is_null())
            || live.get("aggregationRule").is_some_and(|a| !a.is_null()))
    {
        return true;
    }
    managed::owned_by_any(entries, segs, &facts.controller_managers)
}

/// Orders removals so earlier ones never shift the positions later ones use: every
/// non-removal first (they use live positions as found), then removals in reverse document
/// order of their live path. Every list item a path goes through by position is guarded
/// first by a `test` of what identifies it (its merge key, else the whole item as `live`
/// has it), so a patch applied to an object that changed since fails instead of editing
/// another item.
fn build_patch(kept: &[(Vec<Seg>, Change)], live: &Value) -> json_patch::Patch {
    let live_order = |segs: &[Seg]| -> Vec<Result<usize, String>> {
        segs.iter()
            .map(|s| match s {
                Seg::Field(f) => Err(f.clone()),
                Seg::Item { live, desired, .. } => Ok(live.or(*desired).unwrap_or(0)),
            })
            .collect()
    };
    let mut tests: Vec<Value> = Vec::new();
    let mut guarded = HashSet::new();
    let mut ops = Vec::new();
    let mut removes = Vec::new();
    for (segs, change) in kept {
        for (i, seg) in segs.iter().enumerate() {
            let Seg::Item {
                live: Some(_), key, ..
            } = seg
            else {
                continue;
            };
            let item = pointer(&segs[..=i], Side::Live);
            if !guarded.insert(item.clone()) {
                continue;
            }
            let (path, value) = match key {
                Some((field, _)) => {
                    let path = format!("{item}/{}", pointer::escape(field));
                    let value = live.pointer(&path).cloned();
                    (path, value)
                }
                None => (item.clone(), live.pointer(&item).cloned()),
            };
            if let Some(value) = value {
                tests.push(serde_json::json!({"op": "test", "path": path, "value": value}));
            }
        }
        match change.op {
            ChangeOp::Replace => ops.push(serde_json::json!({
                "op": "replace", "path": pointer(segs, Side::Live), "value": change.desired,
            })),
            ChangeOp::Add => {
                let path = match segs.last() {
                    Some(Seg::Item { live: None, .. }) => {
                        format!("{}/-", pointer(&segs[..segs.len() - 1], Side::Live))
                    }
                    _ => pointer(segs, Side::Live),
                };
                ops.push(serde_json::json!({"op": "add", "path": path, "value": change.desired}));
            }
            ChangeOp::Remove => removes.push((live_order(segs), pointer(segs, Side::Live))),
        }
    }
    removes.sort_by(|a, b| b.0.cmp(&a.0));
    ops.extend(
        removes
            .into_iter()
            .map(|(_, path)| serde_json::json!({"op": "remove", "path": path})),
    );
    tests.extend(ops);
    serde_json::from_value(Value::Array(tests)).expect("patch operations are well-formed")
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fuzz;

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod schema_tests;
