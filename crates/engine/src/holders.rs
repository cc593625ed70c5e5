//! The pods that hold deploy locks: intents held by `pod:NAMESPACE/NAME`, and Pulumi locks
//! whose hostname is a pod's name. One watcher per pod name (a `metadata.name` field
//! selector across namespaces), started and stopped as locks come and go, so a holder's
//! deletion is known from the one watch event that says so.
//!
//! Whether a holder lives is only known once its watcher finished a list: before that the
//! answer is [`Liveness::Unknown`], never "gone" (a pod not listed yet is not a deleted
//! pod). A re-list keeps the last known pods until it ends, as `lists` does for desired
//! objects.
//!
//! A name nobody ever saw as a pod proves nothing: it may be a typo in `--holder` while the
//! deploy that gave it runs and renews its lock. So a holder is only gone once a pod of
//! that name was seen, and a lock may only be released automatically when this replica saw
//! the holder running (by uid) and then saw that uid deleted, finished or replaced by a
//! newer pod ([`Liveness::Gone`]'s `seen_alive`). What a replica saw is forgotten when it
//! restarts: a holder gone meanwhile is then judged by its lock's TTL alone.

use driftd_watch::{Applied, WatchControl, WatchEvent, WatcherId};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A pod created this long after a lock was taken is a newer pod of the same name (a
/// StatefulSet's pod recreated), not the lock's holder. The margin absorbs clock skew
/// between the deployer's node (which timed the lock) and the API server.
const REPLACED_MARGIN: SignedDuration = SignedDuration::from_secs(30);

/// What a lock's holder pod is known to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    /// Not listed yet, or (by name only) never seen as a pod while watched.
    Unknown,
    /// Listed, and no pod of that name was ever seen in the namespace: a name given wrong,
    /// or a pod gone before this replica watched it. Proves nothing either way.
    NeverSeen,
    Alive,
    /// Confirmed gone: nobody will ever release the lock it holds.
    Gone {
        why: Gone,
        since: Timestamp,
        /// This replica saw the holder running (by uid), then saw it go: the one case in
        /// which a lock may be released without a person.
        seen_alive: bool,
    },
}

/// Why a holder pod is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gone {
    /// Deleted (a watch event or a re-list said so), or absent from a complete list.
    Deleted { namespace: String },
    /// It exists but its containers ended (`Succeeded`/`Failed`, e.g. a deploy Job's pod).
    Finished { namespace: String, phase: String },
    /// A pod of that name exists, created after the lock was taken: not the holder.
    Replaced {
        namespace: String,
        created: Timestamp,
    },
}

impl Gone {
    /// How `/locks` and Events say it, for the pod `name`.
    pub fn describe(&self, name: &str) -> String {
        match self {
            Gone::Deleted { namespace } => {
                format!("holder pod {namespace}/{name} no longer exists")
            }
            Gone::Finished { namespace, phase } => {
                format!("holder pod {namespace}/{name} has finished (phase {phase})")
            }
            Gone::Replaced { namespace, created } => format!(
                "holder pod {namespace}/{name} was replaced: the pod of that name was created at \
                 {created}, after the lock was taken"
            ),
        }
    }

    pub fn namespace(&self) -> &str {
        match self {
            Gone::Deleted { namespace }
            | Gone::Finished { namespace, .. }
            | Gone::Replaced { namespace, .. } => namespace,
        }
    }
}

/// What liveness needs of one live pod.
#[derive(Debug, Clone, PartialEq)]
struct PodFacts {
    uid: Option<String>,
    created: Option<Timestamp>,
    /// `Succeeded` or `Failed`, and since when this replica knows it.
    finished: Option<(String, Timestamp)>,
}

impl PodFacts {
    fn of(pod: &Value, before: Option<&PodFacts>, now: Timestamp) -> PodFacts {
        let text = |p: &str| pod.pointer(p).and_then(Value::as_str);
        let finished = match text("/status/phase") {
            Some(phase @ ("Succeeded" | "Failed")) => Some(
                before
                    .and_then(|b| b.finished.clone())
                    .unwrap_or_else(|| (phase.to_string(), now)),
            ),
            _ => None,
        };
        PodFacts {
            uid: text("/metadata/uid").map(str::to_string),
            created: text("/metadata/creationTimestamp").and_then(|t| t.parse().ok()),
            finished,
        }
    }
}

/// The pods of one name, by namespace, as its watcher reported them.
#[derive(Debug)]
struct Named {
    watcher: WatcherId,
    /// Set once a list ended: from then on absence means gone.
    listed_at: Option<Timestamp>,
    /// A list under way: what it returned so far.
    listing: Option<BTreeMap<String, PodFacts>>,
    pods: BTreeMap<String, PodFacts>,
    /// Namespaces whose pod of this name this replica saw deleted, and when.
    deleted: BTreeMap<String, Timestamp>,
    /// Pods of this name seen running (not finished), by namespace: uid and creation time.
    running: BTreeMap<String, BTreeMap<String, Option<Timestamp>>>,
}

impl Named {
    fn new(watcher: WatcherId) -> Named {
        Named {
            watcher,
            listed_at: None,
            listing: None,
            pods: BTreeMap::new(),
            deleted: BTreeMap::new(),
            running: BTreeMap::new(),
        }
    }

    fn pod_gone(&mut self, namespace: &str, now: Timestamp) {
        if self.pods.remove(namespace).is_some() {
            self.deleted.insert(namespace.to_string(), now);
        }
    }

    /// Remembers `facts` of the pod in `namespace` if it runs: its uid may be a holder's.
    fn note_running(&mut self, namespace: &str, facts: &PodFacts) {
        if let (None, Some(uid)) = (&facts.finished, &facts.uid) {
            self.running
                .entry(namespace.to_string())
                .or_default()
                .insert(uid.clone(), facts.created);
        }
    }

    /// One watch event at `now`; true if what is known changed.
    fn step(&mut self, event: &WatchEvent, now: Timestamp) -> bool {
        match event {
            WatchEvent::Init => {
                self.listing = Some(BTreeMap::new());
                false
            }
            WatchEvent::Apply(Applied { object: pod, .. }) => {
                let Some(ns) = namespace_of(pod) else {
                    return false;
                };
                if let Some(listing) = &mut self.listing {
                    let facts = PodFacts::of(pod, self.pods.get(ns), now);
                    listing.insert(ns.to_string(), facts);
                    return false;
                }
                let facts = PodFacts::of(pod, self.pods.get(ns), now);
                let changed = self.pods.get(ns) != Some(&facts);
                self.note_running(ns, &facts);
                self.pods.insert(ns.to_string(), facts);
                self.deleted.remove(ns);
                changed
            }
            WatchEvent::Delete(pod) => {
                let Some(ns) = namespace_of(pod) else {
                    return false;
                };
                if let Some(listing) = &mut self.listing {
                    listing.remove(ns);
                }
                self.pod_gone(ns, now);
                true
            }
            WatchEvent::InitDone => {
                let Some(listed) = self.listing.take() else {
                    return false;
                };
                let vanished: Vec<String> = self
                    .pods
                    .keys()
                    .filter(|ns| !listed.contains_key(*ns))
                    .cloned()
                    .collect();
                for ns in vanished {
                    // Deleted while the watch was down (its event compacted away).
                    self.pod_gone(&ns, now);
                }
                for (ns, facts) in &listed {
                    self.deleted.remove(ns);
                    self.note_running(ns, facts);
                }
                self.pods = listed;
                self.listed_at.get_or_insert(now);
                true
            }
            WatchEvent::NotServed
            | WatchEvent::Served { .. }
            | WatchEvent::Error(_)
            | WatchEvent::Opened
            | WatchEvent::Position(_)
            | WatchEvent::Bookmark(_) => false,
        }
    }

    /// The holder of a lock taken at `taken`, in `namespace` or (`None`) any namespace.
    fn liveness(&self, namespace: Option<&str>, taken: Timestamp) -> Liveness {
        let Some(listed_at) = self.listed_at else {
            return Liveness::Unknown;
        };
        // Created after the lock was taken (beyond the skew margin): not the holder.
        let newer =
            |created: Option<Timestamp>| created.is_some_and(|c| c > taken + REPLACED_MARGIN);
        // A pod of this name that could be the holder was seen running here.
        let seen_alive = |ns: &str| {
            self.running
                .get(ns)
                .is_some_and(|uids| uids.values().any(|created| !newer(*created)))
        };
        let judge = |ns: &str, pod: &PodFacts| {
            let gone = |why, since| {
                Some(Liveness::Gone {
                    why,
                    since,
                    seen_alive: seen_alive(ns),
                })
            };
            match &pod.finished {
                Some((phase, since)) => gone(
                    Gone::Finished {
                        namespace: ns.to_string(),
                        phase: phase.clone(),
                    },
                    *since,
                ),
                None => match pod.created {
                    Some(created) if newer(Some(created)) => gone(
                        Gone::Replaced {
                            namespace: ns.to_string(),
                            created,
                        },
                        created,
                    ),
                    _ => None,
                },
            }
        };
        let deleted = |ns: &str| {
            let since = self.deleted.get(ns).copied();
            (since.is_some() || seen_alive(ns)).then(|| Liveness::Gone {
                why: Gone::Deleted {
                    namespace: ns.to_string(),
                },
                since: since.unwrap_or(listed_at),
                seen_alive: seen_alive(ns),
            })
        };
        match namespace {
            Some(ns) => match self.pods.get(ns) {
                Some(pod) => judge(ns, pod).unwrap_or(Liveness::Alive),
                None => deleted(ns).unwrap_or(Liveness::NeverSeen),
            },
            // By name only (a Pulumi hostname): a pod of that name that lives is the holder;
            // a name never seen as a pod may be a laptop's hostname: unknown, not gone.
            None => {
                let judged: Vec<_> = self.pods.iter().map(|(ns, p)| judge(ns, p)).collect();
                if judged.iter().any(Option::is_none) {
                    return Liveness::Alive;
                }
                if let Some(first) = judged.into_iter().flatten().next() {
                    return first;
                }
                match self.deleted.iter().max_by_key(|(_, at)| **at) {
                    Some((ns, _)) => deleted(ns).unwrap_or(Liveness::Unknown),
                    None => Liveness::Unknown,
                }
            }
        }
    }
}

fn namespace_of(pod: &Value) -> Option<&str> {
    pod.pointer("/metadata/namespace").and_then(Value::as_str)
}

/// Every watched holder pod name.
#[derive(Debug, Default)]
pub struct Holders {
    names: BTreeMap<String, Named>,
}

impl Holders {
    /// Watches exactly the pods named `wanted`: starts watchers for new names, stops others.
    /// What was learnt of a name is forgotten with its watcher.
    pub fn sync(&mut self, wanted: &BTreeSet<String>, control: &mut impl WatchControl) {
        self.names.retain(|name, _| {
            let keep = wanted.contains(name);
            if !keep {
                control.stop_pods_named(name);
            }
            keep
        });
        for name in wanted {
            if !self.names.contains_key(name) {
                let watcher = control.start_pods_named(name);
                self.names.insert(name.clone(), Named::new(watcher));
            }
        }
    }

    /// The holders as one list of each name found them at `now` (`pods`: every pod of each
    /// name, in any namespace): what a replica starting now would know, for one-shot
    /// judgements such as `driftd locks --cluster`.
    pub fn listed(pods: BTreeMap<String, Vec<Value>>, now: Timestamp) -> Holders {
        let names = pods
            .into_iter()
            .map(|(name, pods)| {
                let mut named = Named::new(WatcherId(0));
                named.step(&WatchEvent::Init, now);
                for pod in pods {
                    // Holder pods are read, never kept: nothing to pack.
                    named.step(&WatchEvent::Apply(Applied::unpacked(pod)), now);
                }
                named.step(&WatchEvent::InitDone, now);
                (name, named)
            })
            .collect();
        Holders { names }
    }

    /// Whether `watcher` is a holder pod watcher (its messages are for [`Holders::step`]).
    pub fn owns(&self, watcher: WatcherId) -> bool {
        self.names.values().any(|n| n.watcher == watcher)
    }

    /// One event of holder pod watcher `watcher` at `now`; true if what is known changed.
    pub fn step(&mut self, watcher: WatcherId, event: &WatchEvent, now: Timestamp) -> bool {
        self.names
            .values_mut()
            .find(|n| n.watcher == watcher)
            .is_some_and(|n| n.step(event, now))
    }

    /// The pod `name` (in `namespace`, or any) holding a lock taken at `taken`.
    pub fn liveness(&self, namespace: Option<&str>, name: &str, taken: Timestamp) -> Liveness {
        self.names
            .get(name)
            .map_or(Liveness::Unknown, |n| n.liveness(namespace, taken))
    }

    /// The uid of the pod `namespace/name`, if it is known (for Event references).
    pub fn uid(&self, namespace: &str, name: &str) -> Option<String> {
        self.names.get(name)?.pods.get(namespace)?.uid.clone()
    }

    /// Whether every holder watcher finished a list (`/locks` is complete).
    pub fn all_listed(&self) -> bool {
        self.names.values().all(|n| n.listed_at.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(ns: &str, created: &str, phase: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "deploy-x", "namespace": ns, "uid": format!("uid-{ns}"),
                            "creationTimestamp": created},
               "status": {"phase": phase}})
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn named() -> Named {
        Named::new(WatcherId(1))
    }

    const TAKEN: &str = "2026-01-01T10:00:00Z";

    #[test]
    fn not_listed_is_unknown_and_a_delete_event_is_gone_at_once() {
        let mut n = named();
        let t = at(TAKEN);
        n.step(&WatchEvent::Init, t);
        n.step(
            &WatchEvent::Apply(Applied::unpacked(pod(
                "shop",
                "2026-01-01T09:00:00Z",
                "Running",
            ))),
            t,
        );
        assert_eq!(n.liveness(Some("shop"), t), Liveness::Unknown, "listing");
        assert!(n.step(&WatchEvent::InitDone, t));
        assert_eq!(n.liveness(Some("shop"), t), Liveness::Alive);
        assert_eq!(
            n.liveness(Some("ci"), t),
            Liveness::NeverSeen,
            "listed, and never there: no proof of anything"
        );
        let deleted_at = at("2026-01-01T10:05:00Z");
        assert!(n.step(
            &WatchEvent::Delete(pod("shop", "2026-01-01T09:00:00Z", "Running")),
            deleted_at
        ));
        assert_eq!(
            n.liveness(Some("shop"), t),
            Liveness::Gone {
                why: Gone::Deleted {
                    namespace: "shop".into()
                },
                since: deleted_at,
                seen_alive: true
            }
        );
    }

    #[test]
    fn a_finished_or_newer_pod_of_the_name_is_not_the_holder() {
        let mut n = named();
        let t = at(TAKEN);
        n.step(&WatchEvent::Init, t);
        n.step(
            &WatchEvent::Apply(Applied::unpacked(pod(
                "shop",
                "2026-01-01T10:00:20Z",
                "Running",
            ))),
            t,
        );
        n.step(&WatchEvent::InitDone, t);
        assert_eq!(
            n.liveness(Some("shop"), t),
            Liveness::Alive,
            "created within the clock-skew margin"
        );
        n.step(
            &WatchEvent::Apply(Applied::unpacked(pod(
                "shop",
                "2026-01-01T10:00:20Z",
                "Failed",
            ))),
            at("2026-01-01T10:07:00Z"),
        );
        assert_eq!(
            n.liveness(Some("shop"), t),
            Liveness::Gone {
                why: Gone::Finished {
                    namespace: "shop".into(),
                    phase: "Failed".into()
                },
                since: at("2026-01-01T10:07:00Z"),
                seen_alive: true
            }
        );
        // Deleted and recreated by its StatefulSet: a newer pod.
        n.step(
            &WatchEvent::Apply(Applied::unpacked(pod(
                "shop",
                "2026-01-01T10:09:00Z",
                "Running",
            ))),
            t,
        );
        let Liveness::Gone { why, .. } = n.liveness(Some("shop"), t) else {
            panic!("replaced")
        };
        assert!(why.describe("deploy-x").contains("was replaced"), "{why:?}");
        assert_eq!(
            n.liveness(Some("shop"), at("2026-01-01T10:09:00Z")),
            Liveness::Alive
        );
    }

    #[test]
    fn by_name_only_a_name_never_seen_as_a_pod_is_unknown() {
        let mut n = named();
        let t = at(TAKEN);
        n.step(&WatchEvent::Init, t);
        n.step(&WatchEvent::InitDone, t);
        assert_eq!(n.liveness(None, t), Liveness::Unknown, "a laptop, maybe");
        n.step(
            &WatchEvent::Apply(Applied::unpacked(pod(
                "pulumi",
                "2026-01-01T09:00:00Z",
                "Running",
            ))),
            t,
        );
        assert_eq!(n.liveness(None, t), Liveness::Alive);
        // A re-list without it: deleted while the watch was down.
        n.step(&WatchEvent::Init, t);
        assert_eq!(
            n.liveness(None, t),
            Liveness::Alive,
            "until the re-list ends"
        );
        n.step(&WatchEvent::InitDone, at("2026-01-01T11:00:00Z"));
        assert!(matches!(
            n.liveness(None, t),
            Liveness::Gone { why: Gone::Deleted { .. }, since, .. } if since == at("2026-01-01T11:00:00Z")
        ));
    }

    /// `pod` with uid `uid`.
    fn with_uid(mut pod: Value, uid: &str) -> Value {
        pod["metadata"]["uid"] = json!(uid);
        pod
    }

    fn seen_alive(liveness: Liveness) -> Option<bool> {
        match liveness {
            Liveness::Gone { seen_alive, .. } => Some(seen_alive),
            _ => None,
        }
    }

    // The rule of the module documentation, case by case: a lock is released without a
    // person only when this replica saw its holder running, by uid, and then saw it go.

    #[test]
    fn a_name_never_seen_as_a_pod_is_never_gone() {
        // `--holder pod:ci/deploy-y` where the deploy runs as ci/deploy-x: the list has no
        // pod of that name, nor does any later event.
        let mut n = named();
        let t = at(TAKEN);
        n.step(&WatchEvent::Init, t);
        n.step(&WatchEvent::InitDone, t);
        assert_eq!(n.liveness(Some("ci"), t), Liveness::NeverSeen);
        n.step(&WatchEvent::Init, at("2026-01-01T11:00:00Z"));
        n.step(&WatchEvent::InitDone, at("2026-01-01T11:00:00Z"));
        assert_eq!(
            n.liveness(Some("ci"), t),
            Liveness::NeverSeen,
            "a re-list changes nothing"
        );
    }

    #[test]
    fn seen_running_then_deleted_finished_or_replaced_is_gone_and_seen_alive() {
        let t = at(TAKEN);
        let running = with_uid(pod("ci", "2026-01-01T09:59:00Z", "Running"), "uid-a");
        let listed = |n: &mut Named| {
            n.step(&WatchEvent::Init, t);
            n.step(&WatchEvent::Apply(Applied::unpacked(running.clone())), t);
            n.step(&WatchEvent::InitDone, t);
            assert_eq!(n.liveness(Some("ci"), t), Liveness::Alive);
        };
        let later = at("2026-01-01T10:20:00Z");

        let mut deleted = named();
        listed(&mut deleted);
        deleted.step(&WatchEvent::Delete(running.clone()), later);
        assert_eq!(seen_alive(deleted.liveness(Some("ci"), t)), Some(true));

        let mut finished = named();
        listed(&mut finished);
        let failed = with_uid(pod("ci", "2026-01-01T09:59:00Z", "Failed"), "uid-a");
        finished.step(&WatchEvent::Apply(Applied::unpacked(failed)), later);
        assert_eq!(seen_alive(finished.liveness(Some("ci"), t)), Some(true));

        // Deleted while the watch was down, and its StatefulSet made a new one (uid-b).
        let mut replaced = named();
        listed(&mut replaced);
        replaced.step(&WatchEvent::Init, later);
        let newer = with_uid(pod("ci", "2026-01-01T10:19:00Z", "Running"), "uid-b");
        replaced.step(&WatchEvent::Apply(Applied::unpacked(newer)), later);
        replaced.step(&WatchEvent::InitDone, later);
        let liveness = replaced.liveness(Some("ci"), t);
        assert!(
            matches!(
                liveness,
                Liveness::Gone {
                    why: Gone::Replaced { .. },
                    seen_alive: true,
                    ..
                }
            ),
            "{liveness:?}"
        );
    }

    #[test]
    fn gone_without_having_been_seen_running_is_not_seen_alive() {
        let t = at(TAKEN);
        let later = at("2026-01-01T10:20:00Z");
        // First seen finished: a real pod, stale, but nobody here saw it run.
        let mut n = named();
        n.step(&WatchEvent::Init, later);
        let failed = with_uid(pod("ci", "2026-01-01T09:59:00Z", "Failed"), "uid-a");
        n.step(&WatchEvent::Apply(Applied::unpacked(failed.clone())), later);
        n.step(&WatchEvent::InitDone, later);
        assert_eq!(seen_alive(n.liveness(Some("ci"), t)), Some(false));
        n.step(&WatchEvent::Delete(failed), later);
        assert_eq!(seen_alive(n.liveness(Some("ci"), t)), Some(false));

        // Only a pod created after the lock was ever seen running: not the holder.
        let mut n = named();
        n.step(&WatchEvent::Init, later);
        let newer = with_uid(pod("ci", "2026-01-01T10:19:00Z", "Running"), "uid-b");
        n.step(&WatchEvent::Apply(Applied::unpacked(newer.clone())), later);
        n.step(&WatchEvent::InitDone, later);
        assert_eq!(
            seen_alive(n.liveness(Some("ci"), t)),
            Some(false),
            "replaced"
        );
        n.step(&WatchEvent::Delete(newer), later);
        assert_eq!(
            seen_alive(n.liveness(Some("ci"), t)),
            Some(false),
            "deleted"
        );

        // A replica that starts after the holder was deleted never saw it.
        let mut restarted = named();
        restarted.step(&WatchEvent::Init, later);
        restarted.step(&WatchEvent::InitDone, later);
        assert_eq!(restarted.liveness(Some("ci"), t), Liveness::NeverSeen);
    }
}
