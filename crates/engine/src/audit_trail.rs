//! Recent writes from the API server's audit events, and the join that names the person
//! behind a drift entry's changes.
//!
//! What can be known: a change cites the managedFields entry that owns its field (`manager`,
//! and `time`, to the second). managedFields records no resourceVersion, and a field's owner
//! entry is moved to the time of that manager's latest write that changed its fields. So:
//!
//! - **`resourceVersion`**: the live object's `metadata.resourceVersion` is the version the
//!   newest write produced. An audit event whose response object has that version (level
//!   `RequestResponse`) is that write; if its field manager is the changes' manager, the
//!   write is that manager's newest one, the one the entry's time is of.
//! - **`metadata`**: otherwise (level `Metadata`, as for Secrets, or the newest write was by
//!   someone else), a write of the same object by the same field manager (the request's
//!   `fieldManager`, else kube-apiserver's `prefixFromUserAgent` of its User-Agent) whose
//!   request was in flight during the entry's second: received before the second ended and
//!   completed after it began. When writes by different users fit, nothing is said: a
//!   guess would name the wrong person.
//!
//! A `missing` object names who deleted it: the newest `delete` of it kept.
//!
//! Events arrive before or after the watch event of their write; both orders end the same
//! way, as the engine judges an entry again when an event that concerns it arrives. Memory
//! is bounded: events are kept for `retention` and at most `max_events` of them, oldest
//! first out.

use driftd_core::audit::{AuditRecord, AuditUser};
use driftd_core::diff::Change;
use driftd_core::report::{DriftClass, Matched, Who};
use driftd_k8s::ObjectKey;
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// Where an audit event's object is: group, namespace, name (the resource is compared per
/// lookup, as a key names a kind, not a resource).
type Place = (String, Option<String>, String);

/// The recent writes, by object.
pub struct AuditTrail {
    by_object: HashMap<Place, VecDeque<Arc<AuditRecord>>>,
    /// Every kept record's place, oldest first, with when it was taken in.
    arrivals: VecDeque<(Timestamp, Place)>,
    retention: Duration,
    max_events: usize,
}

impl AuditTrail {
    pub fn new(retention: Duration, max_events: usize) -> AuditTrail {
        AuditTrail {
            by_object: HashMap::new(),
            arrivals: VecDeque::new(),
            retention,
            max_events: max_events.max(1),
        }
    }

    /// Records kept now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.arrivals.len()
    }

    /// Keeps `record`, taken in at `now`; drops what is past retention or over the bound.
    pub fn insert(&mut self, record: AuditRecord, now: Timestamp) {
        let place = place_of(&record);
        self.by_object
            .entry(place.clone())
            .or_default()
            .push_back(Arc::new(record));
        self.arrivals.push_back((now, place));
        while self.arrivals.len() > self.max_events {
            self.drop_oldest();
        }
        self.expire(now);
    }

    /// Drops the records taken in longer than `retention` before `now`.
    pub fn expire(&mut self, now: Timestamp) {
        let retention = SignedDuration::try_from(self.retention).unwrap_or(SignedDuration::MAX);
        while self
            .arrivals
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > retention)
        {
            self.drop_oldest();
        }
    }

    /// The globally oldest record is the oldest of its object's.
    fn drop_oldest(&mut self) {
        let Some((_, place)) = self.arrivals.pop_front() else {
            return;
        };
        if let Some(records) = self.by_object.get_mut(&place) {
            records.pop_front();
            if records.is_empty() {
                self.by_object.remove(&place);
            }
        }
    }

    /// The kept writes of `key`'s object, oldest first.
    fn writes_of<'a>(&'a self, key: &'a ObjectKey) -> impl Iterator<Item = &'a AuditRecord> + 'a {
        let place = (key.group.clone(), key.namespace.clone(), key.name.clone());
        self.by_object
            .get(&place)
            .into_iter()
            .flatten()
            .map(|r| &**r)
            .filter(move |r| resource_is_kind(&r.object.resource, key))
    }

    /// Who made the `changes` of `key` judged `class`, live as `live` (see the module
    /// documentation); empty when no kept event tells.
    pub fn who(
        &self,
        key: &ObjectKey,
        class: DriftClass,
        live: Option<&Value>,
        changes: &[Change],
    ) -> Vec<Who> {
        if self.by_object.is_empty() {
            return Vec::new();
        }
        if class == DriftClass::Missing {
            return self
                .writes_of(key)
                .filter(|r| r.verb == "delete")
                .max_by_key(|r| r.completed)
                .map(|r| vec![who(r, "", None, Matched::Metadata)])
                .unwrap_or_default();
        }
        let live_rv = live
            .and_then(|l| l.pointer("/metadata/resourceVersion"))
            .and_then(Value::as_str);
        let cited: BTreeSet<(&str, &str)> = changes
            .iter()
            .filter_map(|c| Some((c.manager.as_deref()?, c.changed_at.as_deref()?)))
            .collect();
        let mut found = Vec::new();
        for (manager, changed_at) in cited {
            let writes: Vec<&AuditRecord> = self
                .writes_of(key)
                .filter(|r| r.verb != "delete" && r.field_manager == manager)
                .collect();
            let exact = live_rv.and_then(|rv| {
                writes
                    .iter()
                    .find(|r| r.resource_version.as_deref() == Some(rv))
            });
            if let Some(r) = exact {
                found.push(who(r, manager, Some(changed_at), Matched::ResourceVersion));
                continue;
            }
            let Ok(second) = changed_at.parse::<Timestamp>() else {
                continue;
            };
            let next = second + SignedDuration::from_secs(1);
            let in_flight: Vec<&&AuditRecord> = writes
                .iter()
                .filter(|r| r.received < next && r.completed >= second)
                .collect();
            let users: BTreeSet<(&AuditUser, Option<&AuditUser>)> = in_flight
                .iter()
                .map(|r| (&r.user, r.impersonated_user.as_ref()))
                .collect();
            if users.len() == 1 {
                let newest = in_flight.iter().max_by_key(|r| r.completed).unwrap();
                found.push(who(newest, manager, Some(changed_at), Matched::Metadata));
            }
        }
        found
    }
}

fn who(r: &AuditRecord, manager: &str, changed_at: Option<&str>, matched: Matched) -> Who {
    Who {
        manager: manager.to_string(),
        changed_at: changed_at.map(str::to_string),
        user: r.user.clone(),
        impersonated_user: r.impersonated_user.clone(),
        source_ips: r.source_ips.clone(),
        user_agent: r.user_agent.clone(),
        verb: r.verb.clone(),
        audit_id: r.audit_id.clone(),
        matched,
    }
}

fn place_of(r: &AuditRecord) -> Place {
    (
        r.object.api_group.clone(),
        r.object.namespace.clone(),
        r.object.name.clone(),
    )
}

/// Whether `resource` (plural) is `key`'s kind: by the built-in types' table; a kind it
/// does not know (a custom resource) is taken as any resource of its group, whose CRD
/// defines few kinds.
pub fn resource_is_kind(resource: &str, key: &ObjectKey) -> bool {
    match builtin_plural(&key.group, &key.kind) {
        Some(plural) => plural == resource,
        None => true,
    }
}

/// The plural of built-in kind `kind` of `group`.
fn builtin_plural(group: &str, kind: &str) -> Option<&'static str> {
    driftd_k8s::kinds::BUILTIN
        .iter()
        .find(|t| t.group == group && t.kind == kind)
        .map(|t| t.plural.as_str())
}

/// The kind of built-in resource `resource` (plural) of `group`, if it is one.
pub fn builtin_kind(group: &str, resource: &str) -> Option<&'static str> {
    driftd_k8s::kinds::BUILTIN
        .iter()
        .find(|t| t.group == group && t.plural == resource)
        .map(|t| t.kind.as_str())
}

#[cfg(test)]
mod tests;
