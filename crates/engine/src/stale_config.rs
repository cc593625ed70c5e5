//! Pods running on stale config (`stale_config`): which running pods of a Deployment,
//! StatefulSet or DaemonSet have a container that started before the current content of a
//! Secret or ConfigMap it reads, in a way that does not bring it the change.
//!
//! Pure bookkeeping, no I/O: the engine feeds it the Pods, ReplicaSets, Secrets and
//! ConfigMaps its watchers see ([`StaleConfigs::observe`]), writes the content records it
//! hands back ([`StaleConfigs::take_writes`]) and publishes what [`StaleConfigs::flush`]
//! says changed. Only what the judgement needs is kept: per pod its owner and phase, and
//! per container that reads a config when its run started and the configs it reads (pods
//! reading none are not kept at all); per config a content hash and when driftd first saw
//! that content; per ReplicaSet its Deployment.
//!
//! When a content was first seen: the moment a watch delivered it; with no record of the
//! config yet (first start), the newest `managedFields` time whose `fieldsV1` touches
//! `f:data` or `f:binaryData` (the last write of the content that the API server recorded),
//! else its `creationTimestamp`.
//!
//! The judgement is per container, because the kubelet resolves a container's `env` and
//! `envFrom` and takes its `subPath` files at every start of that container
//! (`pkg/kubelet/kuberuntime/kuberuntime_container.go`, `startContainer` ->
//! `generateContainerConfig`), not when the pod was accepted (`status.startTime`, which
//! comes before: a pod that waited for a missing Secret, `CreateContainerConfigError`,
//! started once it existed). A container is stale for config C when its run started
//! (`state.running.startedAt`; an init container's last run, `state.terminated.startedAt`
//! too) before C's content was first seen, so a container restarted since reads the new
//! content and one waiting or exited holds none. The exception is a whole-volume mount:
//! the kubelet refreshes those files at its sync, so a container whose every reading of C
//! is one is stale only until the sync period has passed. Start times have a resolution of
//! one second, so a container that started within the second of the change is taken as
//! having read the new content (no alarm that a rollout right after a change would raise
//! for nothing). A pod is reported with its stale containers.

use driftd_core::diff::managed;
use driftd_core::report::{StaleConfigNote, StaleConfigUse, StalePod};
use driftd_k8s::consumption::{consumed, ConfigKind, ConfigRef, Via};
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_store::{ConfigContent, ContentChange};
use hmac::{Hmac, Mac};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use sha2::Sha256;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// A config's identity: namespace, kind, name.
type ConfigKey = (String, ConfigKind, String);

/// A pod's controller: (kind, name), e.g. (`ReplicaSet`, `web-5d4f`).
type Owner = (String, String);

/// How many earlier contents of a config are remembered: enough to see a change reverted
/// (a hand edit put back by `reconcile` or remediation, a rollback) a few times over.
const EARLIER_CONTENTS: usize = 8;

/// A config's current content as far as the judgement cares, with the contents it had
/// before (newest first, each with when it was first seen).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Content {
    hash: [u8; 32],
    first_seen: Timestamp,
    earlier: Vec<([u8; 32], Timestamp)>,
}

impl Content {
    /// Whether a container that started at `started` read this very content: it started
    /// after the content was first seen, or while the config last held the same content
    /// before (a change since reverted: A, B, then A again leaves A's readers up to date).
    /// Start times have one-second resolution: only a container that started in an earlier
    /// second than a change surely read what came before it. Older than what is
    /// remembered: not known to match, so stale.
    fn read_by_container_started(&self, started: Timestamp) -> bool {
        if started.as_second() >= self.first_seen.as_second() {
            return true;
        }
        self.earlier
            .iter()
            .find(|(_, seen)| started.as_second() >= seen.as_second())
            .is_some_and(|(hash, _)| *hash == self.hash)
    }

    /// The history after this content is replaced: it comes first, the oldest falls off.
    fn then_earlier(&self) -> Vec<([u8; 32], Timestamp)> {
        std::iter::once((self.hash, self.first_seen))
            .chain(self.earlier.iter().cloned())
            .take(EARLIER_CONTENTS)
            .collect()
    }
}

/// What is kept of a pod that reads at least one config.
#[derive(Debug, Clone, PartialEq)]
struct PodFacts {
    owner: Option<Owner>,
    /// `status.phase` is Running and the pod is not being deleted.
    running: bool,
    /// Its containers that read a config.
    containers: Vec<ContainerFacts>,
}

/// One container that reads a config.
#[derive(Debug, Clone, PartialEq)]
struct ContainerFacts {
    name: String,
    /// When the run it is in started (an init container's: the last run, finished or
    /// not); `None` while it does not run (waiting, e.g. `CreateContainerConfigError`, or
    /// exited): it holds no config then.
    started: Option<Timestamp>,
    /// Each config it reads, with every way it reads it.
    reads: BTreeMap<ConfigRef, BTreeSet<Via>>,
}

/// See the module documentation.
#[derive(Debug)]
pub struct StaleConfigs {
    enabled: bool,
    sync: SignedDuration,
    key: Vec<u8>,
    /// Names the hash key in stored hashes (`TAG:HEX`): a record made under another key
    /// (`secrets.hash_key_file` changed) cannot be compared and counts as no record.
    key_tag: String,
    contents: HashMap<ConfigKey, Content>,
    /// Configs deleted within [`TOMBSTONE_TTL`], with their last content and when they went:
    /// one re-created with the same content (a delete and re-apply) did not change for the
    /// pods that read it before.
    tombstones: HashMap<ConfigKey, (Content, Timestamp)>,
    /// ReplicaSets owned by a Deployment: (namespace, ReplicaSet) -> Deployment.
    replica_sets: HashMap<(String, String), String>,
    /// Pods that read configs, by (namespace, name).
    pods: BTreeMap<(String, String), PodFacts>,
    /// The last judgement: stale workloads with their note.
    judged: BTreeMap<ObjectKey, StaleConfigNote>,
    /// Namespaces to judge again at the next flush (a config or ReplicaSet changed).
    dirty: BTreeSet<String>,
    /// Pod owners (namespace, (kind, name)) whose workload to judge again: a pod's change
    /// only touches its own workload, so a busy namespace is not judged whole per pod event.
    dirty_owners: BTreeSet<(String, Owner)>,
    /// When a namespace must be judged again because a volume's sync period ends.
    due: BTreeMap<String, Timestamp>,
    writes: Vec<ContentChange>,
}

/// How long a deleted config's last content is remembered (in memory only).
const TOMBSTONE_TTL: SignedDuration = SignedDuration::from_hours(1);

/// The kinds the judgement reads, as (apiVersion, kind).
const WATCHED: [(&str, &str); 4] = [
    ("v1", "Pod"),
    ("apps/v1", "ReplicaSet"),
    ("v1", "Secret"),
    ("v1", "ConfigMap"),
];

/// The kinds the judgement reads.
pub fn watched_kinds() -> [TypeKey; 4] {
    WATCHED.map(|(api_version, kind)| TypeKey {
        api_version: api_version.into(),
        kind: kind.into(),
    })
}

impl StaleConfigs {
    /// `key` keys the content hashes (the installation key: a Secret's hash says nothing of
    /// its value); `records` are the contents recorded by earlier runs.
    pub fn new(
        enabled: bool,
        kubelet_sync: std::time::Duration,
        key: &[u8],
        records: Vec<ConfigContent>,
    ) -> StaleConfigs {
        let key_tag = hex::encode(&hmac(key, b"driftd stale_config content hash")[..4]);
        let contents = records
            .into_iter()
            .filter_map(|r| {
                let kind = ConfigKind::parse(&r.kind)?;
                let (tag, hex_hash) = r.hash.split_once(':')?;
                if tag != key_tag {
                    return None;
                }
                let decode = |hex_hash: &str| {
                    let mut hash = [0u8; 32];
                    hex::decode_to_slice(hex_hash, &mut hash)
                        .ok()
                        .map(|()| hash)
                };
                let hash = decode(hex_hash)?;
                // Written with the same key as the current hash (one row, one key).
                let earlier = r
                    .earlier
                    .iter()
                    .filter_map(|(h, seen)| Some((decode(h.split_once(':')?.1)?, *seen)))
                    .collect();
                Some((
                    (r.namespace, kind, r.name),
                    Content {
                        hash,
                        first_seen: r.first_seen,
                        earlier,
                    },
                ))
            })
            .collect();
        StaleConfigs {
            enabled,
            sync: SignedDuration::try_from(kubelet_sync).unwrap_or(SignedDuration::MAX),
            key: key.to_vec(),
            key_tag,
            contents,
            tombstones: HashMap::new(),
            replica_sets: HashMap::new(),
            pods: BTreeMap::new(),
            judged: BTreeMap::new(),
            dirty: BTreeSet::new(),
            dirty_owners: BTreeSet::new(),
            due: BTreeMap::new(),
            writes: Vec::new(),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The kinds to watch (none when off).
    pub fn kinds(&self) -> Vec<TypeKey> {
        match self.enabled {
            true => watched_kinds().to_vec(),
            false => Vec::new(),
        }
    }

    /// Whether objects of `kind` feed the judgement.
    pub fn reads(&self, kind: &TypeKey) -> bool {
        // Compared in place: `watched_kinds` builds owned keys, and this runs on every event.
        self.enabled
            && WATCHED
                .iter()
                .any(|&(api_version, k)| kind.api_version == api_version && kind.kind == k)
    }

    /// A live object of `kind` is now `object` (`None`: deleted).
    pub fn observe(
        &mut self,
        kind: &TypeKey,
        key: &ObjectKey,
        object: Option<&Value>,
        now: Timestamp,
    ) {
        if !self.reads(kind) {
            return;
        }
        let Some(namespace) = key.namespace.clone() else {
            return;
        };
        let changed = match (kind.kind.as_str(), object) {
            ("Pod", object) => {
                let id = (namespace.clone(), key.name.clone());
                let new = object.and_then(pod_facts);
                let old = match &new {
                    Some(facts) if self.pods.get(&id) == Some(facts) => return,
                    Some(facts) => self.pods.insert(id, facts.clone()),
                    None => self.pods.remove(&id),
                };
                for owner in [old.and_then(|f| f.owner), new.and_then(|f| f.owner)]
                    .into_iter()
                    .flatten()
                {
                    self.dirty_owners.insert((namespace.clone(), owner));
                }
                return;
            }
            ("ReplicaSet", object) => {
                let rs = (namespace.clone(), key.name.clone());
                let deployment = object.and_then(|o| controller(o, "Deployment"));
                match deployment {
                    Some(d) => self.replica_sets.insert(rs, d.clone()).as_ref() != Some(&d),
                    None => self.replica_sets.remove(&rs).is_some(),
                }
            }
            (kind, object) => {
                let Some(kind) = ConfigKind::parse(kind) else {
                    return;
                };
                let config = (namespace.clone(), kind, key.name.clone());
                match object {
                    Some(object) => self.config_seen(config, object, now),
                    None => self.config_gone(config, now),
                }
            }
        };
        if changed {
            self.dirty.insert(namespace);
        }
    }

    /// A list of `kind` ended with `listed` existing: every other object of it is gone.
    pub fn retain_listed(&mut self, kind: &TypeKey, listed: &HashSet<ObjectKey>, now: Timestamp) {
        if !self.reads(kind) {
            return;
        }
        let exists = |ns: &str, name: &str| {
            listed.contains(&ObjectKey {
                group: kind.group().to_string(),
                kind: kind.kind.clone(),
                namespace: Some(ns.to_string()),
                name: name.to_string(),
            })
        };
        let mut gone_namespaces = BTreeSet::new();
        match kind.kind.as_str() {
            "Pod" => self.pods.retain(|(ns, name), _| {
                let keep = exists(ns, name);
                if !keep {
                    gone_namespaces.insert(ns.clone());
                }
                keep
            }),
            "ReplicaSet" => self.replica_sets.retain(|(ns, name), _| {
                let keep = exists(ns, name);
                if !keep {
                    gone_namespaces.insert(ns.clone());
                }
                keep
            }),
            other => {
                let Some(config_kind) = ConfigKind::parse(other) else {
                    return;
                };
                let gone: Vec<ConfigKey> = self
                    .contents
                    .keys()
                    .filter(|(ns, k, name)| *k == config_kind && !exists(ns, name))
                    .cloned()
                    .collect();
                for config in gone {
                    gone_namespaces.insert(config.0.clone());
                    self.config_gone(config, now);
                }
            }
        }
        self.dirty.extend(gone_namespaces);
    }

    /// Content records to write to the store (new, changed and deleted configs).
    pub fn take_writes(&mut self) -> Vec<ContentChange> {
        std::mem::take(&mut self.writes)
    }

    /// Judges again the namespaces where something changed, or where a volume's sync period
    /// ended by `now`; returns the workloads whose note changed (`None`: no longer stale).
    pub fn flush(&mut self, now: Timestamp) -> Vec<(ObjectKey, Option<StaleConfigNote>)> {
        self.tombstones
            .retain(|_, (_, gone)| gone.checked_add(TOMBSTONE_TTL).is_ok_and(|t| t > now));
        let expired: Vec<String> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(ns, _)| ns.clone())
            .collect();
        for ns in expired {
            self.due.remove(&ns);
            self.dirty.insert(ns);
        }
        let mut out = Vec::new();
        let dirty = std::mem::take(&mut self.dirty);
        // Pod events: only the workloads of the owners they touched, in namespaces not
        // judged whole anyway.
        let mut owners: BTreeMap<String, BTreeSet<ObjectKey>> = BTreeMap::new();
        for (ns, owner) in std::mem::take(&mut self.dirty_owners) {
            if dirty.contains(&ns) {
                continue;
            }
            if let Some(workload) = workload_of(&ns, &owner, &self.replica_sets) {
                owners.entry(ns).or_default().insert(workload);
            }
        }
        let whole = dirty.into_iter().map(|ns| (ns, None));
        let partial = owners.into_iter().map(|(ns, w)| (ns, Some(w)));
        for (ns, only) in whole.chain(partial) {
            let (judged, due) = judge_namespace(
                &ns,
                self.pods
                    .range((ns.clone(), String::new())..)
                    .take_while(|((n, _), _)| *n == ns)
                    .map(|((_, name), facts)| (name.as_str(), facts)),
                only.as_ref(),
                &self.replica_sets,
                &self.contents,
                now,
                self.sync,
            );
            // A partial pass knows only its workloads' next sync end: keep the earlier one.
            let due = match (&only, self.due.get(&ns)) {
                (Some(_), Some(known)) => Some(due.map_or(*known, |d| d.min(*known))),
                _ => due,
            };
            match due {
                Some(at) => self.due.insert(ns.clone(), at),
                None => self.due.remove(&ns),
            };
            let before: Vec<ObjectKey> = self
                .judged
                .keys()
                .filter(|k| k.namespace.as_deref() == Some(ns.as_str()))
                .filter(|k| only.as_ref().is_none_or(|o| o.contains(*k)))
                .filter(|k| !judged.contains_key(*k))
                .cloned()
                .collect();
            for key in before {
                self.judged.remove(&key);
                out.push((key, None));
            }
            for (key, note) in judged {
                if self.judged.get(&key) != Some(&note) {
                    self.judged.insert(key.clone(), note.clone());
                    out.push((key, Some(note)));
                }
            }
        }
        out
    }

    /// The stale pods of workload `key`, if it has any.
    pub fn note(&self, key: &ObjectKey) -> Option<&StaleConfigNote> {
        self.judged.get(key)
    }

    fn config_seen(&mut self, config: ConfigKey, object: &Value, now: Timestamp) -> bool {
        let hash = content_hash(&self.key, object);
        let (first_seen, earlier) =
            match (self.contents.get(&config), self.tombstones.remove(&config)) {
                (Some(c), _) if c.hash == hash => return false,
                (Some(c), _) => (now, c.then_earlier()),
                (None, Some((c, _))) if c.hash == hash => (c.first_seen, c.earlier),
                (None, Some((c, _))) => {
                    (content_written_at(object).unwrap_or(now), c.then_earlier())
                }
                (None, None) => (content_written_at(object).unwrap_or(now), Vec::new()),
            };
        let tagged = |hash: &[u8; 32]| format!("{}:{}", self.key_tag, hex::encode(hash));
        self.writes.push(ContentChange::Seen(ConfigContent {
            namespace: config.0.clone(),
            kind: config.1.as_str().to_string(),
            name: config.2.clone(),
            hash: tagged(&hash),
            first_seen,
            earlier: earlier.iter().map(|(h, seen)| (tagged(h), *seen)).collect(),
        }));
        self.contents.insert(
            config,
            Content {
                hash,
                first_seen,
                earlier,
            },
        );
        true
    }

    fn config_gone(&mut self, config: ConfigKey, now: Timestamp) -> bool {
        let Some(content) = self.contents.remove(&config) else {
            return false;
        };
        self.tombstones.insert(config.clone(), (content, now));
        self.writes.push(ContentChange::Gone {
            namespace: config.0,
            kind: config.1.as_str().to_string(),
            name: config.2,
        });
        true
    }
}

/// The stale workloads of namespace `ns` from its config-reading `pods` (of the workloads
/// in `only`, if given), and when the judgement changes by time alone next (a whole-volume
/// reading's sync period ends).
fn judge_namespace<'a>(
    ns: &str,
    pods: impl Iterator<Item = (&'a str, &'a PodFacts)>,
    only: Option<&BTreeSet<ObjectKey>>,
    replica_sets: &HashMap<(String, String), String>,
    contents: &HashMap<ConfigKey, Content>,
    now: Timestamp,
    sync: SignedDuration,
) -> (BTreeMap<ObjectKey, StaleConfigNote>, Option<Timestamp>) {
    // workload -> config -> (changed at, stale pods)
    type Uses = BTreeMap<ConfigRef, (Timestamp, Vec<StalePod>)>;
    let mut stale: BTreeMap<ObjectKey, Uses> = BTreeMap::new();
    let mut due: Option<Timestamp> = None;
    // Looked up once per owner and per config, not per pod: a workload's pods share them.
    let mut workloads: HashMap<&(String, String), Option<ObjectKey>> = HashMap::new();
    let mut content_of: HashMap<&ConfigRef, Option<&Content>> = HashMap::new();
    for (name, pod) in pods {
        let (true, Some(owner)) = (pod.running, &pod.owner) else {
            continue;
        };
        let workload = workloads
            .entry(owner)
            .or_insert_with(|| workload_of(ns, owner, replica_sets));
        let Some(workload) = workload
            .as_ref()
            .filter(|w| only.is_none_or(|o| o.contains(*w)))
        else {
            continue;
        };
        // Per config: when it changed, and this pod's stale containers (the earliest start,
        // how they read it, their names in the pod's order).
        type Here = (Timestamp, Timestamp, BTreeSet<Via>, Vec<String>);
        let mut stale_here: BTreeMap<&ConfigRef, Here> = BTreeMap::new();
        for container in &pod.containers {
            let Some(started) = container.started else {
                continue; // not running: it holds nothing it read
            };
            for (config, vias) in &container.reads {
                let content = content_of.entry(config).or_insert_with(|| {
                    contents.get(&(ns.to_string(), config.kind, config.name.clone()))
                });
                let Some(content) = content else {
                    continue; // absent (an optional reference): nothing was read
                };
                if content.read_by_container_started(started) {
                    continue;
                }
                if vias.iter().all(Via::refreshed_by_kubelet) {
                    let refreshed = content
                        .first_seen
                        .checked_add(sync)
                        .unwrap_or(Timestamp::MAX);
                    if refreshed <= now {
                        continue;
                    }
                    due = Some(due.map_or(refreshed, |d| d.min(refreshed)));
                }
                let here = stale_here
                    .entry(config)
                    .or_insert_with(|| (content.first_seen, started, BTreeSet::new(), Vec::new()));
                here.1 = here.1.min(started);
                here.2.extend(vias.iter().copied());
                here.3.push(container.name.clone());
            }
        }
        for (config, (changed_at, started_at, vias, containers)) in stale_here {
            stale
                .entry(workload.clone())
                .or_default()
                .entry(config.clone())
                .or_insert_with(|| (changed_at, Vec::new()))
                .1
                .push(StalePod {
                    name: name.to_string(),
                    started_at,
                    reads: vias.iter().map(|v| v.as_str().to_string()).collect(),
                    containers,
                });
        }
    }
    let notes = stale
        .into_iter()
        .map(|(workload, uses)| {
            let note = StaleConfigNote {
                fix: format!(
                    "kubectl rollout restart {}/{} -n {ns}",
                    workload.kind.to_lowercase(),
                    workload.name
                ),
                configs: uses
                    .into_iter()
                    .map(|(config, (changed_at, pods))| StaleConfigUse {
                        config: config.to_string(),
                        changed_at,
                        pods,
                    })
                    .collect(),
            };
            (workload, note)
        })
        .collect();
    (notes, due)
}

/// The Deployment, StatefulSet or DaemonSet a pod belongs to (a Deployment's pods through
/// their ReplicaSet).
fn workload_of(
    ns: &str,
    (kind, name): &(String, String),
    replica_sets: &HashMap<(String, String), String>,
) -> Option<ObjectKey> {
    let (kind, name) = match kind.as_str() {
        "ReplicaSet" => (
            "Deployment",
            replica_sets.get(&(ns.to_string(), name.clone()))?.clone(),
        ),
        "StatefulSet" | "DaemonSet" => (kind.as_str(), name.clone()),
        _ => return None,
    };
    Some(ObjectKey {
        group: "apps".into(),
        kind: kind.into(),
        namespace: Some(ns.to_string()),
        name,
    })
}

/// What is kept of a pod: nothing when it reads no config.
fn pod_facts(pod: &Value) -> Option<PodFacts> {
    let mut containers: Vec<ContainerFacts> = Vec::new();
    for c in consumed(pod.get("spec").unwrap_or(&Value::Null)) {
        let i = match containers.iter().position(|f| f.name == c.container) {
            Some(i) => i,
            None => {
                containers.push(ContainerFacts {
                    started: container_started(pod, &c.container),
                    name: c.container,
                    reads: BTreeMap::new(),
                });
                containers.len() - 1
            }
        };
        containers[i]
            .reads
            .entry(c.config)
            .or_default()
            .insert(c.via);
    }
    if containers.is_empty() {
        return None;
    }
    let owner = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| Some((text(r, "kind")?, text(r, "name")?)));
    Some(PodFacts {
        owner,
        running: pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
            && pod.pointer("/metadata/deletionTimestamp").is_none(),
        containers,
    })
}

/// When the run container `name` is in started, as its status says: `state.running.
/// startedAt`, and for an init container also `state.terminated.startedAt` (what it made
/// from the config outlives it). A status that lists no such container (not what a
/// kubelet writes) falls back to the pod's `status.startTime`.
fn container_started(pod: &Value, name: &str) -> Option<Timestamp> {
    let time = |v: Option<&Value>| v?.as_str()?.parse::<Timestamp>().ok();
    for (list, init) in [
        ("initContainerStatuses", true),
        ("containerStatuses", false),
        ("ephemeralContainerStatuses", false),
    ] {
        let status = pod
            .pointer(&format!("/status/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(name));
        if let Some(status) = status {
            let running = time(status.pointer("/state/running/startedAt"));
            let finished = init
                .then(|| time(status.pointer("/state/terminated/startedAt")))
                .flatten();
            return running.or(finished);
        }
    }
    time(pod.pointer("/status/startTime"))
}

/// The name of `object`'s controller if it is of `kind`.
fn controller(object: &Value, kind: &str) -> Option<String> {
    object
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && r.get("kind").and_then(Value::as_str) == Some(kind)
        })
        .and_then(|r| text(r, "name"))
}

fn text(object: &Value, field: &str) -> Option<String> {
    object
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// HMAC-SHA256 of `data` and `binaryData` under `key` (serde_json maps are ordered, so the
/// same content always hashes alike); no value can be read back from it.
/// The keyed hash of `{"data":…,"binaryData":…}` as compact JSON, written straight into
/// the MAC: copying both maps into a new object to render it was most of what each
/// ConfigMap or Secret event cost here. The text (and so every recorded hash) is unchanged.
fn content_hash(key: &[u8], object: &Value) -> [u8; 32] {
    let mut mac =
        MacWriter(Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length"));
    let field = |name| object.get(name).unwrap_or(&Value::Null);
    mac.0.update(br#"{"data":"#);
    serde_json::to_writer(&mut mac, field("data")).expect("a MAC takes any bytes");
    mac.0.update(br#","binaryData":"#);
    serde_json::to_writer(&mut mac, field("binaryData")).expect("a MAC takes any bytes");
    mac.0.update(b"}");
    mac.0.finalize().into_bytes().into()
}

/// Lets serde_json write into a MAC.
struct MacWriter(Hmac<Sha256>);

impl std::io::Write for MacWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn hmac(key: &[u8], bytes: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(bytes);
    mac.finalize().into_bytes().into()
}

/// When the API server last recorded a write of the content: the newest `managedFields`
/// entry whose fields touch `data` or `binaryData`, else the object's creation.
fn content_written_at(object: &Value) -> Option<Timestamp> {
    let meta = object.get("metadata")?;
    let touched = meta
        .get("managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| {
            m.get("fieldsV1").is_some_and(|f| {
                managed::sets_top_level(f, "data") || managed::sets_top_level(f, "binaryData")
            })
        })
        .filter_map(|m| m.get("time")?.as_str()?.parse::<Timestamp>().ok())
        .max();
    touched.or_else(|| meta.get("creationTimestamp")?.as_str()?.parse().ok())
}

#[cfg(test)]
mod container_tests;
#[cfg(test)]
mod tests;
