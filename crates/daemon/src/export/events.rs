//! Kubernetes Events (events.k8s.io/v1, through kube-runtime's `Recorder`) on drifting
//! objects: `DriftDetected` when drift starts or its changed paths change (`UncommittedApply`
//! when the live object equals an open intent instead), `DriftResolved` when it ends; and on
//! deploy locks: `StaleLock` when one becomes stale, `StaleLockReleased` when this replica
//! released one. The engine never waits on the API: requests go through a bounded queue to
//! one publishing task, and a full queue drops (and counts) rather than stalls drift.
//!
//! An Event needs an object it is about, in whose namespace it is created. A lock Event is
//! about the holder Pod when the holder is (was) one, deleted or not (`kubectl get events
//! --field-selector regarding.name=POD` finds it); otherwise about driftd's own leader
//! Lease in driftd's namespace, the object that stands for driftd in the cluster.
//!
//! Publishing Events is leader-only work: the task sends nothing while this replica is not
//! the acting leader (a request queued before leadership was lost is dropped and counted;
//! one already sent completes).

use super::metrics::Metrics;
use crate::drift::{LockAnnouncement, PodRef};
use crate::leader::Leadership;
use driftd_core::report::{DriftClass, DriftEntry, StaleLock};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Events carry at most this many bytes of note (the API's limit is 1 kB).
const NOTE_LIMIT: usize = 1000;

/// One Event to publish.
#[derive(Debug, Clone)]
pub struct EventRequest {
    pub reference: ObjectReference,
    pub type_: EventType,
    pub reason: &'static str,
    pub note: String,
}

impl EventRequest {
    /// `DriftDetected`: names the changed fields (never values: Secrets stay secret).
    /// `UncommittedApply` for an object that equals an open intent.
    pub fn detected(entry: &DriftEntry, live: Option<&Value>) -> EventRequest {
        if let (DriftClass::Uncommitted, Some(intent)) = (entry.class, &entry.intent) {
            let what = match entry.changes.len() {
                0 => format!(
                    "{} {} exists as intent {} wanted it, but no revision of source {} has it",
                    entry.kind, entry.name, intent.id, entry.source
                ),
                n => format!(
                    "{n} field(s) differ from revision {} of source {} as intent {} wanted them: {}",
                    entry.revision,
                    entry.source,
                    intent.id,
                    field_list(entry)
                ),
            };
            return EventRequest {
                reference: reference(entry, live),
                type_: EventType::Warning,
                reason: "UncommittedApply",
                note: truncate(format!(
                    "{what}; intent {} is {}, held by {}. Keep it: `{}`; undo it: {}",
                    intent.id, intent.state, intent.holder, intent.keep, intent.revert
                )),
            };
        }
        let what = match entry.class {
            driftd_core::diff::DriftClass::Missing => {
                format!("{} {} is missing from the cluster", entry.kind, entry.name)
            }
            driftd_core::diff::DriftClass::Rejected => format!(
                "the API server refused a dry run of the committed manifest: {}",
                entry
                    .dry_run
                    .as_ref()
                    .and_then(|d| d.message.as_deref())
                    .unwrap_or("no message")
            ),
            _ => format!(
                "{} field(s) differ: {}",
                entry.changes.len(),
                field_list(entry)
            ),
        };
        EventRequest {
            reference: reference(entry, live),
            type_: EventType::Warning,
            reason: "DriftDetected",
            note: truncate(format!(
                "{what}; desired by revision {} of source {}",
                entry.revision, entry.source
            )),
        }
    }

    /// `DriftResolved`: the live object matches its desired state again.
    pub fn resolved(entry: &DriftEntry, live: Option<&Value>) -> EventRequest {
        EventRequest {
            reference: reference(entry, live),
            type_: EventType::Normal,
            reason: "DriftResolved",
            note: format!(
                "live object matches revision {} of source {} again",
                entry.revision, entry.source
            ),
        }
    }
}

/// The changed fields with who last wrote them (never values: Secrets stay secret).
fn field_list(entry: &DriftEntry) -> String {
    let fields: Vec<String> = entry
        .changes
        .iter()
        .map(|c| match &c.manager {
            Some(m) => format!("{} (by {m})", c.field),
            None => c.field.clone(),
        })
        .collect();
    fields.join(", ")
}

impl EventRequest {
    /// `StaleLock` or `StaleLockReleased`, about the holder pod if there is one, else about
    /// `home` (driftd's Lease).
    pub fn lock(
        what: &LockAnnouncement,
        lock: &StaleLock,
        pod: Option<&PodRef>,
        home: &ObjectReference,
    ) -> EventRequest {
        let reference = match pod {
            Some(pod) => ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                namespace: Some(pod.namespace.clone()),
                name: Some(pod.name.clone()),
                uid: pod.uid.clone(),
                ..Default::default()
            },
            None => home.clone(),
        };
        let which = format!(
            "{} lock {} of {} held by {}",
            lock.kind, lock.id, lock.source, lock.holder
        );
        let (type_, reason, note) = match what {
            LockAnnouncement::Stale => (
                EventType::Warning,
                "StaleLock",
                format!(
                    "{which} is stale: {}. Release it: `{}`",
                    lock.reason, lock.release
                ),
            ),
            LockAnnouncement::Released { actor } => (
                EventType::Normal,
                "StaleLockReleased",
                format!("{which} released automatically by {actor}: {}", lock.reason),
            ),
        };
        EventRequest {
            reference,
            type_,
            reason,
            note: truncate(note),
        }
    }
}

fn reference(entry: &DriftEntry, live: Option<&Value>) -> ObjectReference {
    let meta = live.and_then(|l| l.get("metadata"));
    let text = |field: &str| {
        meta.and_then(|m| m.get(field))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    ObjectReference {
        api_version: Some(entry.api_version.clone()),
        kind: Some(entry.kind.clone()),
        name: Some(entry.name.clone()),
        namespace: entry.namespace.clone(),
        uid: text("uid"),
        resource_version: text("resourceVersion"),
        ..Default::default()
    }
}

fn truncate(mut note: String) -> String {
    if note.len() > NOTE_LIMIT {
        let mut cut = NOTE_LIMIT - 3;
        while !note.is_char_boundary(cut) {
            cut -= 1;
        }
        note.truncate(cut);
        note.push_str("...");
    }
    note
}

/// The engine's side of the queue.
#[derive(Clone)]
pub struct EventSink {
    sender: mpsc::Sender<EventRequest>,
}

impl EventSink {
    pub fn send(&self, request: EventRequest, metrics: &Metrics) {
        if self.sender.try_send(request).is_err() {
            metrics.events_dropped.inc();
        }
    }
}

/// Starts the publishing task, reporting as `controller` / `instance` (the replica's
/// identity, as in the leader Lease). The task ends once every [`EventSink`] is dropped and
/// the queue is drained.
pub fn spawn(
    client: kube::Client,
    controller: &str,
    instance: &str,
    metrics: Arc<Metrics>,
    leadership: Leadership,
) -> (EventSink, JoinHandle<()>) {
    let (sender, mut receiver) = mpsc::channel::<EventRequest>(256);
    let reporter = Reporter {
        controller: controller.to_string(),
        instance: Some(instance.to_string()),
    };
    let recorder = Recorder::new(client, reporter);
    let task = tokio::spawn(async move {
        while let Some(request) = receiver.recv().await {
            if !leadership.is_leader() {
                metrics.events_dropped.inc();
                tracing::debug!(
                    reason = request.reason,
                    "no longer the leader: Event dropped"
                );
                continue;
            }
            let event = Event {
                type_: request.type_,
                reason: request.reason.to_string(),
                note: Some(request.note.clone()),
                action: "Compare".into(),
                secondary: None,
            };
            if let Err(err) = recorder.publish(&event, &request.reference).await {
                metrics.events_dropped.inc();
                tracing::warn!(reason = request.reason, error = %err, "cannot publish Event");
            }
        }
    });
    (EventSink { sender }, task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftd_core::diff::{Change, ChangeOp};
    use driftd_core::report::{IntentRef, LockKind};

    fn lease() -> ObjectReference {
        ObjectReference {
            kind: Some("Lease".into()),
            namespace: Some("driftd".into()),
            name: Some("driftd".into()),
            ..Default::default()
        }
    }

    #[test]
    fn an_uncommitted_apply_names_the_intent_and_the_ways_out_never_values() {
        let key = crate::test_support::configmap("shop", "db");
        let mut entry = crate::test_support::entry(
            "shop",
            &key,
            DriftClass::Uncommitted,
            "2026-01-01T10:00:00Z".parse().unwrap(),
        );
        entry.changes = vec![Change {
            path: "/data/password".into(),
            op: ChangeOp::Replace,
            desired: Some(Value::from("hmac:aaaa")),
            live: Some(Value::from("hmac:bbbb")),
            field: "data.password".into(),
            manager: Some("kubectl".into()),
            changed_at: None,
        }];
        entry.intent = Some(IntentRef {
            id: 7,
            state: "interrupted".into(),
            holder: "pod:ci/deploy-x".into(),
            author: "alice".into(),
            created_at: "2026-01-01T10:00:00Z".parse().unwrap(),
            keep: "driftd intent commit 7".into(),
            revert: "apply this entry's `patch` to the live object, then `driftd intent release 7`"
                .into(),
        });
        let request = EventRequest::detected(&entry, None);
        assert_eq!(request.reason, "UncommittedApply");
        assert_eq!(
            request.note,
            "1 field(s) differ from revision 1 of source shop as intent 7 wanted them: \
             data.password (by kubectl); intent 7 is interrupted, held by pod:ci/deploy-x. \
             Keep it: `driftd intent commit 7`; undo it: apply this entry's `patch` to the live \
             object, then `driftd intent release 7`"
        );
        assert!(!request.note.contains("hmac:"));
    }

    #[test]
    fn a_lock_event_is_about_its_holder_pod_else_driftds_lease() {
        let lock = StaleLock {
            kind: LockKind::Intent,
            source: "web".into(),
            id: "7".into(),
            holder: "pod:ci/deploy-x".into(),
            state: Some("pending".into()),
            created_at: "2026-01-01T10:00:00Z".parse().unwrap(),
            age_seconds: 0,
            since: "2026-01-01T10:05:00Z".parse().unwrap(),
            reason: "holder pod ci/deploy-x no longer exists".into(),
            release: "driftd intent release 7".into(),
            path: None,
        };
        let pod = PodRef {
            namespace: "ci".into(),
            name: "deploy-x".into(),
            uid: Some("u-1".into()),
        };
        let stale = EventRequest::lock(&LockAnnouncement::Stale, &lock, Some(&pod), &lease());
        assert_eq!(
            (stale.reason, stale.type_),
            ("StaleLock", EventType::Warning)
        );
        assert_eq!(stale.reference.kind.as_deref(), Some("Pod"));
        assert_eq!(stale.reference.namespace.as_deref(), Some("ci"));
        assert_eq!(stale.reference.uid.as_deref(), Some("u-1"));
        assert_eq!(
            stale.note,
            "intent lock 7 of web held by pod:ci/deploy-x is stale: holder pod ci/deploy-x no \
             longer exists. Release it: `driftd intent release 7`"
        );
        let released = EventRequest::lock(
            &LockAnnouncement::Released {
                actor: "driftd/replica-0".into(),
            },
            &lock,
            None,
            &lease(),
        );
        assert_eq!(released.reason, "StaleLockReleased");
        assert_eq!(released.reference, lease());
    }
}
