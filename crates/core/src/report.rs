//! What driftd reports, as every output shares it: the drift classes, one object's drift
//! entry (the element of `GET /drift`), the filters of that query, and the response body.
//! The daemon serializes these and `driftd drift` deserializes the same types, so the wire
//! format has one definition.

use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

mod details;
pub use details::{Changes, DriftPatch};
mod who;
pub use who::{Matched, Who};

pub use crate::verdict::{DriftClass, IgnoredCount, SchemaUse, UnknownClass};

/// The drift state of one desired object, as `/drift` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftEntry {
    /// Empty (and left out of JSON) for `unmanaged` objects, which no source owns.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    pub revision: i64,
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    pub class: DriftClass,
    /// When the object started drifting; absent while in sync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<Timestamp>,
    pub changes: Changes,
    /// RFC 6902 patch that, applied to the live object, restores the desired fields (Secret
    /// values as hash placeholders: not directly applicable to Secrets).
    #[serde(default, skip_serializing_if = "DriftPatch::is_empty")]
    pub patch: DriftPatch,
    /// Differences hidden by ignore rules, per rule, so an over-broad rule can be noticed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored: Vec<IgnoredCount>,
    /// For `uncommitted` objects: the open intent whose objects the live one equals. Boxed,
    /// as `dry_run`: few entries have one, and the daemon keeps an entry per object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Box<IntentRef>>,
    /// For a custom resource compared with its live object (absent for built-in kinds):
    /// `crd` when compared by its CRD's structural schema, `none` when no CRD was known and
    /// the plain rules applied (no defaults, lists position by position).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaUse>,
    /// For objects of a `compare = "dry-run"` source: what their last server-side dry run
    /// said, so a comparison against the server's answer is told apart from one by the
    /// static model, and a refused or failed dry run is seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<Box<DryRunNote>>,
    /// For a workload (Deployment, StatefulSet, DaemonSet) with running pods older than the
    /// content of a Secret or ConfigMap they read: which pods, which config, and the fix.
    /// The class is `stale_config` when nothing else drifts; a `modified`, `missing`,
    /// `uncommitted` or `unmanaged` entry keeps its class and still carries this.
    ///
    /// Boxed, as `intent` and `dry_run`: few entries have one, and an entry without it then
    /// fits mimalloc's 256-byte class instead of the 320-byte one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_config: Option<Box<StaleConfigNote>>,
    /// True while the watch of this object's kind is failing: the entry shows the live
    /// object as last seen, and a change made since may be missing (see
    /// [`DriftResponse::stale`]). Set when answered, never stored.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stale: bool,
    /// For a custom resource whose CRD is neither committed nor served by the cluster:
    /// `unresolved`, as nothing tells whether its kind is namespaced (it is keyed with the
    /// namespace it was committed with until something does). Set when answered, never
    /// stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeNote>,
    /// Who made the changes, per managedFields entry they cite (or who deleted a missing
    /// object), from the API server's audit events; absent without a matching event, when
    /// the changes' `manager` is all that is known. Boxed: few entries have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub who: Option<Box<Vec<Who>>>,
}

/// What is known of a custom kind's scope (see [`DriftEntry::scope`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScopeNote {
    /// No committed CRD and no cluster tells it.
    Unresolved,
}

/// How the server-side dry run of one object went (`compare = "dry-run"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DryRunNote {
    /// `expected`: compared against the server's answer; `rejected`: the server refused the
    /// manifest (the object's class is `rejected`); `error`: the request failed (network,
    /// 5xx) and the object keeps the judgement of its last answer.
    pub state: String,
    /// The server's message (rejected) or the failure (error); absent for `expected`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the answer (or failure) came.
    pub at: Timestamp,
}

/// Pods of one workload that run on configuration older than the live one: they started
/// before the current content of a Secret/ConfigMap they read, and read it in a way that does
/// not update (env, envFrom, subPath, or a volume within the kubelet's sync period).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleConfigNote {
    /// The command that replaces the pods, e.g. `kubectl rollout restart deployment/web -n shop`.
    pub fix: String,
    /// One per stale config, by config name.
    pub configs: Vec<StaleConfigUse>,
}

/// One config whose current content some pods of the workload have not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleConfigUse {
    /// `Secret/NAME` or `ConfigMap/NAME` (in the workload's namespace).
    pub config: String,
    /// When driftd first saw the config's current content (its change).
    pub changed_at: Timestamp,
    /// The stale pods, by name.
    pub pods: Vec<StalePod>,
}

/// A running pod with containers started before their config changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StalePod {
    pub name: String,
    /// When the earliest of those containers started (its `startedAt`).
    pub started_at: Timestamp,
    /// How those containers read the config: `env`, `envFrom`, `subPath`, `volume`.
    pub reads: Vec<String>,
    /// Those containers, by name: a container restarted since the change read it anew,
    /// so a pod can hold stale and fresh containers at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<String>,
}

impl StaleConfigNote {
    /// Stale pods, each counted once even when it reads several stale configs.
    pub fn pod_count(&self) -> usize {
        let mut names: Vec<&str> = self
            .configs
            .iter()
            .flat_map(|c| c.pods.iter().map(|p| p.name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        names.len()
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The open intent (a deploy recorded before it applied, never committed) that explains an
/// `uncommitted` object, with the two ways out, so on-call does not have to look them up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntentRef {
    pub id: i64,
    /// `pending` (its deploy may still be running), `expired`, `failed` or `interrupted`.
    pub state: String,
    /// Who holds (held) it: `pod:NAMESPACE/NAME` or free text.
    pub holder: String,
    pub author: String,
    pub created_at: Timestamp,
    /// If the change should stay: the command that commits the intent.
    pub keep: String,
    /// If it should go: how to undo it (the entry's `patch`, or deleting an object only the
    /// intent wanted), then the command that releases the intent.
    pub revert: String,
}

impl DriftEntry {
    /// The entry of object `key` (of `api_version`, committed by `source` at `revision`)
    /// judged `class`, with nothing else said yet: each judgement fills in what it found.
    pub fn new(
        source: String,
        revision: i64,
        api_version: String,
        key: &ObjectKey,
        class: DriftClass,
    ) -> DriftEntry {
        DriftEntry {
            source,
            revision,
            api_version,
            kind: key.kind.clone(),
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            class,
            since: None,
            changes: Changes::default(),
            patch: DriftPatch::default(),
            ignored: Vec::new(),
            intent: None,
            schema: None,
            dry_run: None,
            stale_config: None,
            stale: false,
            scope: None,
            who: None,
        }
    }

    /// Paths of the changes: what Events and episodes compare to tell a new drift from the
    /// same drift seen again.
    pub fn paths(&self) -> Vec<String> {
        self.changes.paths()
    }

    /// The object's identity.
    pub fn key(&self) -> ObjectKey {
        ObjectKey {
            group: driftd_k8s::kinds::split_api_version(&self.api_version)
                .0
                .to_string(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// The command that puts this one object back as committed, where a command can:
    /// `driftd reconcile` of its source limited to it (for an unfinished deploy's object,
    /// after releasing the intent, as the intent's `revert` says). Pods on stale config are
    /// replaced instead (`stale_config.fix`); nothing undoes an unmanaged object or a
    /// refused dry run.
    pub fn undo_command(&self) -> Option<String> {
        match self.class {
            DriftClass::Modified | DriftClass::Missing if !self.source.is_empty() => {
                Some(reconcile_command(&self.source, &self.key()))
            }
            DriftClass::Uncommitted => self.intent.as_ref().map(|i| i.revert.clone()),
            _ => None,
        }
    }
}

/// `driftd reconcile --source SOURCE --object OBJECT --apply`: restores one object of a
/// source as its newest revision has it.
pub fn reconcile_command(source: &str, key: &ObjectKey) -> String {
    format!(
        "driftd reconcile --source {} --object {} --apply",
        crate::text::shell_quote(source),
        crate::text::shell_quote(&driftd_k8s::object_ref::ObjectRef::of(key))
    )
}

/// Filters of `GET /drift` (and `driftd drift`); `None` matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriftFilter {
    pub source: Option<String>,
    pub namespace: Option<String>,
    pub kind: Option<String>,
    /// One class; without it, every class but `in_sync`.
    pub class: Option<DriftClass>,
}

/// A query the `/drift` filters cannot answer: an unknown parameter or class. Answered with
/// 400 and this message rather than an empty list that looks like "no drift".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("unknown filter `{0}`; valid filters: {valid}", valid = DriftFilter::PARAMS.join(", "))]
    UnknownParam(String),
    #[error(transparent)]
    UnknownClass(#[from] UnknownClass),
}

impl DriftFilter {
    /// The query parameters `/drift` understands.
    pub const PARAMS: [&'static str; 4] = ["source", "namespace", "kind", "class"];

    /// Builds a filter from query pairs; empty values match everything.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<DriftFilter, FilterError> {
        let mut filter = DriftFilter::default();
        for (key, value) in pairs {
            let value = (!value.is_empty()).then(|| value.to_string());
            match key {
                "source" => filter.source = value,
                "namespace" => filter.namespace = value,
                "kind" => filter.kind = value,
                "class" => filter.class = value.map(|v| v.parse()).transpose()?,
                other => return Err(FilterError::UnknownParam(other.to_string())),
            }
        }
        Ok(filter)
    }

    /// The filter as query pairs (what `driftd drift` sends).
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        for (key, value) in [
            ("source", self.source.clone()),
            ("namespace", self.namespace.clone()),
            ("kind", self.kind.clone()),
            ("class", self.class.map(|c| c.as_str().to_string())),
        ] {
            if let Some(value) = value {
                pairs.push((key, value));
            }
        }
        pairs
    }

    pub fn matches(&self, entry: &DriftEntry) -> bool {
        let eq = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        eq(&self.source, &entry.source)
            && eq(&self.namespace, entry.namespace.as_deref().unwrap_or(""))
            && eq(&self.kind, &entry.kind)
            && match self.class {
                Some(class) => class == entry.class,
                None => entry.class != DriftClass::InSync,
            }
    }
}

/// Body of `GET /drift`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftResponse {
    /// False until every watcher finished its first list: the answer may be incomplete.
    pub ready: bool,
    /// Kinds whose watch is failing (API errors, server unreachable), with since when:
    /// their objects are marked `stale`. Empty when every watch is healthy.
    #[serde(default)]
    pub stale: Vec<StaleKind>,
    /// Why the replica that answers publishes no Kubernetes Events (it is not the leader,
    /// or cannot take the leader Lease); absent while it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_events: Option<String>,
    /// Each with its `undo` command where one exists ([`DriftEntry::undo_command`]), made
    /// as the answer is written rather than kept in every entry.
    #[serde(serialize_with = "entries_with_undo")]
    pub objects: Vec<DriftEntry>,
    /// Opaque: sent back as `?continue=` (with the same filters), it answers the next page
    /// of the same list. Absent on the last page, as Kubernetes' `metadata.continue`.
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub continue_token: Option<String>,
    /// Entries after this page while `continue` is set (Kubernetes'
    /// `metadata.remainingItemCount`).
    #[serde(
        rename = "remainingItemCount",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub remaining_item_count: Option<u64>,
}

/// An entry as `/drift` writes it: its fields and the command that undoes it.
#[derive(Serialize)]
struct AnsweredEntry<'a> {
    #[serde(flatten)]
    entry: &'a DriftEntry,
    #[serde(skip_serializing_if = "Option::is_none")]
    undo: Option<String>,
}

fn entries_with_undo<S: serde::Serializer>(
    entries: &[DriftEntry],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(entries.iter().map(|entry| AnsweredEntry {
        entry,
        undo: entry.undo_command(),
    }))
}

/// A watched kind whose list or watch has failed since `since` and not succeeded again:
/// what driftd shows of its objects is the last state it saw, and a change made since may
/// be missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaleKind {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    /// The first failed attempt of this outage.
    pub since: Timestamp,
}

impl StaleKind {
    /// The plain-words line `driftd drift` and the drift page show for `stale` (empty when
    /// nothing is stale): the earliest time and every kind.
    pub fn summary(stale: &[StaleKind]) -> Option<String> {
        let since = stale.iter().map(|s| s.since).min()?;
        let kinds: Vec<&str> = stale.iter().map(|s| s.kind.as_str()).collect();
        Some(format!(
            "data stale since {} for {}: {}; the API server has not answered driftd's watch \
             since then, so a change made after it may not be shown",
            since.strftime("%Y-%m-%d %H:%M:%S UTC"),
            if kinds.len() == 1 { "kind" } else { "kinds" },
            kinds.join(", ")
        ))
    }
}

/// What holds a stale lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockKind {
    /// A driftd intent (`driftd intent begin`, `driftd run`) holding its source's lock.
    Intent,
    /// A lock file of Pulumi's file backend (`.pulumi/locks/...`).
    Pulumi,
    /// A Helm release version left `pending-install|upgrade|rollback`: Helm refuses the
    /// next operation on the release until it is rolled back or uninstalled.
    Helm,
}

impl LockKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            LockKind::Intent => "intent",
            LockKind::Pulumi => "pulumi",
            LockKind::Helm => "helm",
        }
    }
}

impl std::fmt::Display for LockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A deploy lock whose holder is gone or stopped renewing it: the next deploy of its source
/// blocks until someone releases it, so `/locks` says why and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaleLock {
    pub kind: LockKind,
    /// The driftd source of an intent (`helm:NAMESPACE/NAME` for a Helm release); the fully
    /// qualified stack of a Pulumi lock.
    pub source: String,
    /// The intent's id (a Helm version in flight is one too), or the Pulumi lock's id (its
    /// file name).
    pub id: String,
    /// Who took the lock: `pod:NAMESPACE/NAME`, free text, Helm's operation and version, or
    /// Pulumi's `user@host (pid N)`.
    pub holder: String,
    /// The intent's state (`pending` or `expired`), a Helm version's status
    /// (`pending-upgrade`, ...); absent for Pulumi locks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// When the lock was taken.
    pub created_at: Timestamp,
    /// Age of the lock when answered.
    pub age_seconds: i64,
    /// Since when it is stale (its expiry, or when its holder pod was seen gone).
    pub since: Timestamp,
    /// Why it is stale, e.g. `holder pod shop/deploy-x no longer exists`.
    pub reason: String,
    /// The exact command that releases it.
    pub release: String,
    /// The Pulumi lock file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Body of `GET /locks`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocksResponse {
    /// False until the holders' pods were listed and lock directories scanned once: a lock
    /// may be missing from the answer.
    pub ready: bool,
    pub locks: Vec<StaleLock>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_fits_a_256_byte_allocation() {
        // The daemon keeps one per desired object (boxed in its index): what is rare is boxed
        // so the common entry stays in mimalloc's 256-byte class.
        assert!(std::mem::size_of::<DriftEntry>() <= 256);
    }

    #[test]
    fn unknown_class_and_param_name_the_valid_ones() {
        let err = DriftFilter::from_pairs([("class", "modifed")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown class `modifed`; valid classes: in_sync, modified, missing, uncommitted, stale_config, unmanaged, rejected"
        );
        let err = DriftFilter::from_pairs([("klass", "modified")]).unwrap_err();
        assert!(
            err.to_string()
                .contains("valid filters: source, namespace, kind, class"),
            "{err}"
        );
        let f = DriftFilter::from_pairs([("class", "in_sync"), ("namespace", "")]).unwrap();
        assert_eq!(f.class, Some(DriftClass::InSync));
        assert_eq!(f.namespace, None);
        assert_eq!(
            DriftFilter::from_pairs(f.to_pairs().iter().map(|(k, v)| (*k, v.as_str()))).unwrap(),
            f
        );
    }
}
