//! Kubernetes Events (events.k8s.io/v1, through kube-runtime's `Recorder`) on drifting
//! objects: `DriftDetected` when drift starts or its changed paths change (`UncommittedApply`
//! when the live object equals an open intent instead, `StaleConfigConsumer` on a workload
//! whose running pods read a Secret/ConfigMap older than the live one), `DriftResolved` when
//! it ends; and on
//! deploy locks: `StaleLock` when one becomes stale, `StaleLockReleased` when this replica
//! released one. The engine never waits on the API: requests go through a bounded queue to
//! one publishing task, and a full queue drops (and counts) rather than stalls drift.
//!
//! The task publishes at a bounded rate (`[events] max_per_second` with a `burst`, a token
//! bucket as client-go's EventBroadcaster uses), so a cold start with thousands of drifting
//! objects does not flood the API server; the Recorder folds repeats into Event series. The
//! queue is sized from the drift state: it holds up to two Events per tracked object (a
//! Detected and a Resolved) and never fewer than `[events] queue_min`; only past that bound,
//! which settled drift alone cannot reach, is an Event dropped and counted in
//! `driftd_kube_events_dropped_total`. `driftd_kube_events_queued` shows the backlog.
//!
//! An Event needs an object it is about, in whose namespace it is created. A lock Event is
//! about the holder Pod when the holder is (was) one, deleted or not (`kubectl get events
//! --field-selector involvedObject.name=POD` finds it); otherwise about driftd's own leader
//! Lease in driftd's namespace, the object that stands for driftd in the cluster.
//!
//! Publishing Events is leader-only work: the task sends nothing while this replica is not
//! the acting leader (a request queued before leadership was lost is dropped and counted;
//! one already sent completes).

use super::metrics::Metrics;
use driftd_config::EventsConfig;
use driftd_core::report::{DriftClass, DriftEntry, StaleConfigNote, StaleLock};
use driftd_engine::Leadership;
use driftd_engine::{LiveIdentity, LockAnnouncement, PodRef, SharedIndex};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

mod queue;
pub use queue::{EventQueue, RateLimit};
use tokio::time::Instant;

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
    pub fn detected(entry: &DriftEntry, live: Option<&LiveIdentity>) -> EventRequest {
        if let (DriftClass::StaleConfig | DriftClass::Unmanaged, Some(note)) =
            (entry.class, &entry.stale_config)
        {
            return EventRequest::stale_config(entry, note, live);
        }
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
        let stale = match &entry.stale_config {
            Some(note) => format!("; also {}", stale_pods(note)),
            None => String::new(),
        };
        let who = who_note(entry);
        let undo = match entry.undo_command() {
            Some(command) => format!(". Undo it: `{command}`"),
            None => String::new(),
        };
        EventRequest {
            reference: reference(entry, live),
            type_: EventType::Warning,
            reason: "DriftDetected",
            note: truncate(format!(
                "{what}{who}; desired by revision {} of source {}{stale}{undo}",
                entry.revision, entry.source
            )),
        }
    }

    /// `StaleConfigConsumer`: running pods of the workload started before the content of a
    /// Secret/ConfigMap they read (names and times only, never a value), and the fix.
    pub fn stale_config(
        entry: &DriftEntry,
        note: &StaleConfigNote,
        live: Option<&LiveIdentity>,
    ) -> EventRequest {
        EventRequest {
            reference: reference(entry, live),
            type_: EventType::Warning,
            reason: "StaleConfigConsumer",
            note: truncate(format!(
                "{}. Fix: `{}`",
                upper_first(&stale_pods(note)),
                note.fix
            )),
        }
    }

    /// `DriftResolved`: the live object matches its desired state again.
    pub fn resolved(entry: &DriftEntry, live: Option<&LiveIdentity>) -> EventRequest {
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

impl EventRequest {
    /// `Remediated` (Normal) or `RemediationFailed` (Warning) about an object of a
    /// `remediation = "auto"` source; `detail` names fields and managers, never values.
    pub fn remediation(
        entry: &DriftEntry,
        outcome: driftd_store::RemediationOutcome,
        detail: &str,
    ) -> EventRequest {
        let (type_, reason) = match outcome {
            driftd_store::RemediationOutcome::Applied => (EventType::Normal, "Remediated"),
            driftd_store::RemediationOutcome::Failed => (EventType::Warning, "RemediationFailed"),
        };
        EventRequest {
            reference: reference(entry, None),
            type_,
            reason,
            note: truncate(format!("source {}: {detail}", entry.source)),
        }
    }
}

/// "2 pod(s) run on config older than the live one: Secret/db changed 2026-..., read by
/// web-1 (env), web-2 (env); ..." (names, ways of reading and times only).
fn stale_pods(note: &StaleConfigNote) -> String {
    let configs: Vec<String> = note
        .configs
        .iter()
        .map(|c| {
            let pods: Vec<String> = c
                .pods
                .iter()
                .map(|p| format!("{} ({})", p.name, p.reads.join(", ")))
                .collect();
            format!(
                "{} changed {}, read by {}",
                c.config,
                c.changed_at,
                pods.join(", ")
            )
        })
        .collect();
    format!(
        "{} pod(s) run on config older than the live one: {}",
        note.pod_count(),
        configs.join("; ")
    )
}

fn upper_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `; changed by alice via kubectl-patch (patch, metadata match)` when the API server's
/// audit events named the people behind the changes (`; deleted by ...` for a missing
/// object); empty otherwise.
fn who_note(entry: &DriftEntry) -> String {
    let Some(who) = entry.who.as_deref().filter(|w| !w.is_empty()) else {
        return String::new();
    };
    let mut people: Vec<String> = who.iter().map(|w| w.summary()).collect();
    people.dedup();
    let verb = match entry.class {
        DriftClass::Missing => "deleted",
        _ => "changed",
    };
    format!("; {verb} by {}", people.join(", "))
}

/// The changed fields with who last wrote them (never values: Secrets stay secret).
fn field_list(entry: &DriftEntry) -> String {
    let fields: Vec<String> = entry
        .changes
        .to_vec()
        .into_iter()
        .map(|c| match c.manager {
            Some(m) => format!("{} (by {m})", c.field),
            None => c.field,
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

fn reference(entry: &DriftEntry, live: Option<&LiveIdentity>) -> ObjectReference {
    ObjectReference {
        api_version: Some(entry.api_version.clone()),
        kind: Some(entry.kind.clone()),
        name: Some(entry.name.clone()),
        namespace: entry.namespace.clone(),
        uid: live.and_then(|l| l.uid.clone()),
        resource_version: live.and_then(|l| l.resource_version.clone()),
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

/// The engine's side of the queue: never blocks, never fails (the publishing task applies
/// the bound, so the engine's hot path takes no lock of the drift index).
#[derive(Clone)]
pub struct EventSink {
    sender: mpsc::UnboundedSender<EventRequest>,
}

impl EventSink {
    pub fn send(&self, request: EventRequest, metrics: &Metrics) {
        if self.sender.send(request).is_err() {
            metrics.events_dropped.inc();
        }
    }
}

/// Starts the publishing task, reporting as `config.reporting_controller` / `instance` (the
/// replica's identity, as in the leader Lease); `index` sizes the queue. The task ends once
/// every [`EventSink`] is dropped and the queue is drained.
pub fn spawn(
    client: kube::Client,
    config: &EventsConfig,
    instance: &str,
    index: SharedIndex,
    metrics: Arc<Metrics>,
    leadership: Leadership,
) -> (EventSink, JoinHandle<()>) {
    let reporter = Reporter {
        controller: config.reporting_controller.clone(),
        instance: Some(instance.to_string()),
    };
    let recorder = Recorder::new(client, reporter);
    let publish = move |request: EventRequest| {
        let recorder = recorder.clone();
        async move {
            let event = Event {
                type_: request.type_,
                reason: request.reason.to_string(),
                note: Some(request.note.clone()),
                action: match request.reason {
                    "Remediated" | "RemediationFailed" => "Remediate",
                    _ => "Compare",
                }
                .into(),
                secondary: None,
            };
            recorder
                .publish(&event, &request.reference)
                .await
                .map_err(|err| err.to_string())
        }
    };
    let tracked = move || {
        let index = index.read().unwrap_or_else(|e| e.into_inner());
        index.len() + index.locks().len()
    };
    spawn_with(config, tracked, metrics, leadership, publish)
}

/// [`spawn`] with the publishing and the object count given (tests publish to a list).
pub fn spawn_with<P, F>(
    config: &EventsConfig,
    tracked: impl Fn() -> usize + Send + 'static,
    metrics: Arc<Metrics>,
    leadership: Leadership,
    publish: P,
) -> (EventSink, JoinHandle<()>)
where
    P: Fn(EventRequest) -> F + Send + 'static,
    F: std::future::Future<Output = Result<(), String>> + Send,
{
    let (sender, mut receiver) = mpsc::unbounded_channel::<EventRequest>();
    let mut queue = EventQueue::new(config.queue_min);
    let mut limit = RateLimit::new(config.max_per_second, config.burst, Instant::now());
    let task = tokio::spawn(async move {
        let mut open = true;
        loop {
            let next = match queue.is_empty() {
                true => None,
                false => Some(limit.ready_at(Instant::now())),
            };
            tokio::select! {
                received = receiver.recv(), if open => match received {
                    Some(request) => {
                        if let Err(reason) = queue.push(request, tracked()) {
                            metrics.events_dropped.inc();
                            tracing::warn!(
                                reason,
                                queued = queue.len(),
                                "Event queue full: Event dropped"
                            );
                        }
                    }
                    None => open = false,
                },
                _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now)), if next.is_some() => {
                    let Some(request) = queue.pop() else { continue };
                    limit.take(Instant::now());
                    if !leadership.is_leader() {
                        metrics.events_dropped.inc();
                        tracing::debug!(
                            reason = request.reason,
                            "no longer the leader: Event dropped"
                        );
                    } else if let Err(err) = publish(request.clone()).await {
                        metrics.events_dropped.inc();
                        tracing::warn!(reason = request.reason, error = %err, "cannot publish Event");
                    }
                }
                else => break,
            }
            metrics.events_queued.set(queue.len() as i64);
        }
    });
    (EventSink { sender }, task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftd_core::diff::{Change, ChangeOp};
    use driftd_core::report::{IntentRef, LockKind};
    use std::time::Duration;

    fn lease() -> ObjectReference {
        ObjectReference {
            kind: Some("Lease".into()),
            namespace: Some("driftd".into()),
            name: Some("driftd".into()),
            ..Default::default()
        }
    }

    fn request(n: usize) -> EventRequest {
        EventRequest {
            reference: lease(),
            type_: EventType::Warning,
            reason: "DriftDetected",
            note: format!("object {n}"),
        }
    }

    fn config(per_second: f64, burst: u32) -> EventsConfig {
        EventsConfig {
            max_per_second: per_second,
            burst,
            ..EventsConfig::default()
        }
    }

    fn metrics() -> Arc<Metrics> {
        let index = Arc::new(std::sync::RwLock::new(driftd_engine::DriftIndex::new(10)));
        Arc::new(Metrics::new(index, Leadership::always()))
    }

    #[test]
    fn stale_config_names_configs_pods_and_the_fix_and_rides_on_other_drift() {
        let mut entry: DriftEntry = serde_json::from_value(serde_json::json!({
            "source": "shop", "revision": 2, "apiVersion": "apps/v1", "kind": "Deployment",
            "namespace": "shop", "name": "web", "class": "stale_config", "changes": [],
            "stale_config": {
                "fix": "kubectl rollout restart deployment/web -n shop",
                "configs": [{"config": "Secret/web-db", "changed_at": "2026-11-30T10:00:00Z",
                             "pods": [{"name": "web-1", "started_at": "2026-11-30T09:00:00Z",
                                       "reads": ["env", "subPath"]}]}]
            }
        }))
        .unwrap();
        let request = EventRequest::detected(&entry, None);
        assert_eq!(request.reason, "StaleConfigConsumer");
        assert_eq!(request.reference.name.as_deref(), Some("web"));
        assert_eq!(
            request.note,
            "1 pod(s) run on config older than the live one: Secret/web-db changed \
             2026-11-30T10:00:00Z, read by web-1 (env, subPath). Fix: \
             `kubectl rollout restart deployment/web -n shop`"
        );
        // Modified wins; its Event still says so.
        entry.class = DriftClass::Modified;
        let request = EventRequest::detected(&entry, None);
        assert_eq!(request.reason, "DriftDetected");
        assert!(
            request.note.ends_with("; also 1 pod(s) run on config older than the live one: Secret/web-db changed 2026-11-30T10:00:00Z, read by web-1 (env, subPath). Undo it: `driftd reconcile --source shop --object Deployment.apps/shop/web --apply`"),
            "{}",
            request.note
        );
    }

    /// A cold start that finds 5,000 drifting objects: every Event is published, none
    /// dropped, and never faster than the configured rate.
    #[tokio::test(start_paused = true)]
    async fn a_cold_start_with_5000_drifting_objects_publishes_every_event_at_the_rate() {
        let metrics = metrics();
        let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = sent.clone();
        let (sink, task) = spawn_with(
            &config(500.0, 100),
            || 5_000,
            metrics.clone(),
            Leadership::always(),
            move |request: EventRequest| {
                log.lock().unwrap().push((Instant::now(), request.note));
                async { Ok(()) }
            },
        );
        let start = Instant::now();
        for n in 0..5_000 {
            sink.send(request(n), &metrics);
        }
        drop(sink);
        task.await.unwrap();
        let sent = sent.lock().unwrap();
        assert_eq!(sent.len(), 5_000);
        assert_eq!(metrics.events_dropped.get(), 0);
        assert_eq!(metrics.events_queued.get(), 0);
        assert_eq!(sent[4_999].1, "object 4999", "in order");
        for (k, (at, _)) in sent.iter().enumerate().skip(100) {
            let earliest = Duration::from_secs_f64((k + 1 - 100) as f64 / 500.0);
            assert!(
                *at - start + Duration::from_millis(1) >= earliest,
                "event {k} went at {:?}, before {earliest:?}",
                *at - start
            );
        }
        let took = sent[4_999].0 - start;
        assert!(took < Duration::from_secs(11), "took {took:?} at 500/s");
    }

    /// Past the bound (a flapping storm beyond two Events per object), Events are dropped
    /// and counted rather than queued without end.
    #[tokio::test(start_paused = true)]
    async fn past_the_bound_events_are_dropped_and_counted() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let metrics = metrics();
        let published = Arc::new(AtomicUsize::new(0));
        let count = published.clone();
        let (sink, task) = spawn_with(
            &EventsConfig {
                queue_min: 10,
                ..config(1.0, 1)
            },
            || 2,
            metrics.clone(),
            Leadership::always(),
            move |_request: EventRequest| {
                count.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            },
        );
        for n in 0..50 {
            sink.send(request(n), &metrics);
        }
        // Time is paused and this loop never idles the runtime: the task takes everything
        // in and publishes at most its one-Event burst.
        let seen = || {
            published.load(Ordering::SeqCst)
                + metrics.events_queued.get() as usize
                + metrics.events_dropped.get() as usize
        };
        while seen() < 50 {
            tokio::task::yield_now().await;
        }
        assert!(published.load(Ordering::SeqCst) <= 1);
        assert!(metrics.events_queued.get() <= 10, "bounded queue");
        let dropped = metrics.events_dropped.get();
        assert!(dropped >= 39, "dropped {dropped}");
        drop(sink);
        task.await.unwrap();
        assert_eq!(
            metrics.events_dropped.get(),
            dropped,
            "the queued ones go out"
        );
        assert_eq!(published.load(Ordering::SeqCst) as u64 + dropped, 50);
    }

    #[test]
    fn an_uncommitted_apply_names_the_intent_and_the_ways_out_never_values() {
        let key = driftd_engine::test_support::configmap("shop", "db");
        let mut entry = driftd_engine::test_support::entry(
            "shop",
            &key,
            DriftClass::Uncommitted,
            "2026-01-01T10:00:00Z".parse().unwrap(),
        );
        entry.changes = vec![Change {
            path: "/data/password".into(),
            op: ChangeOp::Replace,
            desired: Some(serde_json::Value::from("hmac:aaaa")),
            live: Some(serde_json::Value::from("hmac:bbbb")),
            field: "data.password".into(),
            manager: Some("kubectl".into()),
            changed_at: None,
        }]
        .into();
        entry.intent = Some(Box::new(IntentRef {
            id: 7,
            state: "interrupted".into(),
            holder: "pod:ci/deploy-x".into(),
            author: "alice".into(),
            created_at: "2026-01-01T10:00:00Z".parse().unwrap(),
            keep: "driftd intent commit 7".into(),
            revert: "apply this entry's `patch` to the live object, then `driftd intent release 7`"
                .into(),
        }));
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
    fn drift_detected_names_the_people_the_audit_events_named() {
        let key = driftd_engine::test_support::configmap("shop", "web");
        let mut entry = driftd_engine::test_support::entry(
            "shop",
            &key,
            DriftClass::Modified,
            "2026-01-01T10:00:00Z".parse().unwrap(),
        );
        entry.changes = vec![Change {
            path: "/data/LOG_LEVEL".into(),
            op: ChangeOp::Replace,
            desired: Some(serde_json::Value::from("info")),
            live: Some(serde_json::Value::from("debug")),
            field: "data.LOG_LEVEL".into(),
            manager: Some("kubectl-patch".into()),
            changed_at: Some("2026-01-01T09:59:58Z".into()),
        }]
        .into();
        entry.who = Some(Box::new(vec![driftd_core::report::Who {
            manager: "kubectl-patch".into(),
            changed_at: Some("2026-01-01T09:59:58Z".into()),
            user: driftd_core::audit::AuditUser {
                username: "alice".into(),
                groups: vec!["dev".into()],
            },
            impersonated_user: Some(driftd_core::audit::AuditUser {
                username: "deployer".into(),
                groups: vec![],
            }),
            source_ips: vec!["10.0.0.7".into()],
            user_agent: "kubectl/v1.32.0".into(),
            verb: "patch".into(),
            audit_id: "a1".into(),
            matched: driftd_core::report::Matched::Metadata,
        }]));
        let request = EventRequest::detected(&entry, None);
        assert_eq!(request.reason, "DriftDetected");
        assert!(
            request.note.starts_with(
                "1 field(s) differ: data.LOG_LEVEL (by kubectl-patch); changed by alice (as \
                 deployer) via kubectl-patch (patch, metadata match); desired by revision 1"
            ),
            "{}",
            request.note
        );
        assert!(!request.note.contains("debug"));
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
