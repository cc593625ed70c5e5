//! The pods that hold deploy locks: intents held by `pod:NAMESPACE/NAME`, and Pulumi locks
//! whose hostname is a pod's name. One watcher per pod name (a `metadata.name` field
//! selector across namespaces), started and stopped as locks come and go, so a holder's
//! deletion is known from the one watch event that says so.
//!
//! Whether a holder lives is only known once its watcher finished a list: before that the
//! answer is [`Liveness::Unknown`], never "gone" (a pod not listed yet is not a deleted
//! pod). A re-list keeps the last known pods until it ends, as `lists` does for desired
//! objects.

use crate::watch::{Applied, WatchControl, WatchEvent, WatcherId};
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
    Alive,
    /// Confirmed gone: nobody will ever release the lock it holds.
    Gone {
        why: Gone,
        since: Timestamp,
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
}

impl Named {
    fn pod_gone(&mut self, namespace: &str, now: Timestamp) {
        if self.pods.remove(namespace).is_some() {
            self.deleted.insert(namespace.to_string(), now);
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
                for ns in listed.keys() {
                    self.deleted.remove(ns);
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
        let judge = |ns: &str, pod: &PodFacts| match (&pod.finished, pod.created) {
            (Some((phase, since)), _) => Some((
                Gone::Finished {
                    namespace: ns.to_string(),
                    phase: phase.clone(),
                },
                *since,
            )),
            (None, Some(created)) if created > taken + REPLACED_MARGIN => Some((
                Gone::Replaced {
                    namespace: ns.to_string(),
                    created,
                },
                created,
            )),
            _ => None,
        };
        let gone = |(why, since)| Liveness::Gone { why, since };
        match namespace {
            Some(ns) => match self.pods.get(ns) {
                Some(pod) => judge(ns, pod).map_or(Liveness::Alive, gone),
                None => gone((
                    Gone::Deleted {
                        namespace: ns.to_string(),
                    },
                    self.deleted.get(ns).copied().unwrap_or(listed_at),
                )),
            },
            // By name only (a Pulumi hostname): a pod of that name that lives is the holder;
            // a name never seen as a pod may be a laptop's hostname: unknown, not gone.
            None => {
                let judged: Vec<_> = self.pods.iter().map(|(ns, p)| judge(ns, p)).collect();
                if judged.iter().any(Option::is_none) {
                    return Liveness::Alive;
                }
                if let Some(first) = judged.into_iter().flatten().next() {
                    return gone(first);
                }
                match self.deleted.iter().max_by_key(|(_, at)| **at) {
                    Some((ns, at)) => gone((
                        Gone::Deleted {
                            namespace: ns.clone(),
                        },
                        *at,
                    )),
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
                self.names.insert(
                    name.clone(),
                    Named {
                        watcher,
                        listed_at: None,
                        listing: None,
                        pods: BTreeMap::new(),
                        deleted: BTreeMap::new(),
                    },
                );
            }
        }
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
        Named {
            watcher: WatcherId(1),
            listed_at: None,
            listing: None,
            pods: BTreeMap::new(),
            deleted: BTreeMap::new(),
        }
    }

    const TAKEN: &str = "2026-01-01T10:00:00Z";

    #[test]
    fn not_listed_is_unknown_and_a_delete_event_is_gone_at_once() {
        let mut n = named();
        let t = at(TAKEN);
        n.step(&WatchEvent::Init, t);
        n.step(
            &WatchEvent::apply(pod("shop", "2026-01-01T09:00:00Z", "Running")),
            t,
        );
        assert_eq!(n.liveness(Some("shop"), t), Liveness::Unknown, "listing");
        assert!(n.step(&WatchEvent::InitDone, t));
        assert_eq!(n.liveness(Some("shop"), t), Liveness::Alive);
        assert!(
            matches!(
                n.liveness(Some("ci"), t),
                Liveness::Gone {
                    why: Gone::Deleted { .. },
                    ..
                }
            ),
            "listed, and not there: gone"
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
                since: deleted_at
            }
        );
    }

    #[test]
    fn a_finished_or_newer_pod_of_the_name_is_not_the_holder() {
        let mut n = named();
        let t = at(TAKEN);
        n.step(&WatchEvent::Init, t);
        n.step(
            &WatchEvent::apply(pod("shop", "2026-01-01T10:00:20Z", "Running")),
            t,
        );
        n.step(&WatchEvent::InitDone, t);
        assert_eq!(
            n.liveness(Some("shop"), t),
            Liveness::Alive,
            "created within the clock-skew margin"
        );
        n.step(
            &WatchEvent::apply(pod("shop", "2026-01-01T10:00:20Z", "Failed")),
            at("2026-01-01T10:07:00Z"),
        );
        assert_eq!(
            n.liveness(Some("shop"), t),
            Liveness::Gone {
                why: Gone::Finished {
                    namespace: "shop".into(),
                    phase: "Failed".into()
                },
                since: at("2026-01-01T10:07:00Z")
            }
        );
        // Deleted and recreated by its StatefulSet: a newer pod.
        n.step(
            &WatchEvent::apply(pod("shop", "2026-01-01T10:09:00Z", "Running")),
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
            &WatchEvent::apply(pod("pulumi", "2026-01-01T09:00:00Z", "Running")),
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
            Liveness::Gone { why: Gone::Deleted { .. }, since } if since == at("2026-01-01T11:00:00Z")
        ));
    }
}
