//! The `/_sim/` admin endpoints: fault injection, mutating webhooks, latency, compaction,
//! closing watches, restarting a container, the history limit, statistics, and the
//! benchmark's bulk load and bulk edit. Also the meter of watch events written to streams,
//! so a benchmark can tell whether the simulator or its client limited a run.

use super::{error_response, json_response, not_found_path, parse_body, App, Fault};
use crate::status::ApiError;
use crate::store::bulk::{BulkEdit, BulkEditReport, BulkLoadReport};
use crate::store::webhook::MutatingWebhook;
use crate::store::Store;
use axum::body::Bytes;
use axum::http::Method;
use axum::response::Response;
use serde::de::{SeqAccess, Visitor};
use serde::Serialize;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counts watch events written to streams, and times them against the latest bulk edit.
pub struct Delivery {
    events: AtomicU64,
    bytes: AtomicU64,
    epoch: Instant,
    /// When the last event was written, in nanoseconds since `epoch`.
    last_event: AtomicU64,
    edit: Mutex<Option<EditRun>>,
}

struct EditRun {
    start: Instant,
    events_before: u64,
}

/// Watch events written since a bulk edit started, and at what rate (first edit to last
/// event written).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryStats {
    pub watch_events_delivered: u64,
    pub delivery_seconds: f64,
    pub delivery_events_per_second: f64,
}

/// A bulk edit's report with the delivery measured until it returned.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkEditOutcome {
    #[serde(flatten)]
    pub edit: BulkEditReport,
    #[serde(flatten)]
    pub delivery: DeliveryStats,
}

impl Default for Delivery {
    fn default() -> Self {
        Delivery {
            events: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            epoch: Instant::now(),
            last_event: AtomicU64::new(0),
            edit: Mutex::new(None),
        }
    }
}

impl Delivery {
    /// `events` watch events in `bytes` bytes were just written to a stream.
    pub fn record(&self, events: u64, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if events > 0 {
            self.events.fetch_add(events, Ordering::Relaxed);
            let now = self.epoch.elapsed().as_nanos() as u64;
            self.last_event.fetch_max(now, Ordering::Relaxed);
        }
    }

    fn start_edit(&self) {
        *self.edit.lock().unwrap_or_else(|e| e.into_inner()) = Some(EditRun {
            start: Instant::now(),
            events_before: self.events.load(Ordering::Relaxed),
        });
    }

    /// Delivery since the latest bulk edit started (None before the first).
    pub fn since_edit(&self) -> Option<DeliveryStats> {
        let guard = self.edit.lock().unwrap_or_else(|e| e.into_inner());
        let run = guard.as_ref()?;
        let delivered = self.events.load(Ordering::Relaxed) - run.events_before;
        let last = self.epoch + Duration::from_nanos(self.last_event.load(Ordering::Relaxed));
        let seconds = last
            .checked_duration_since(run.start)
            .unwrap_or_default()
            .as_secs_f64();
        Some(DeliveryStats {
            watch_events_delivered: delivered,
            delivery_seconds: seconds,
            delivery_events_per_second: if seconds > 0.0 {
                delivered as f64 / seconds
            } else {
                0.0
            },
        })
    }
}

/// Runs a bulk edit (blocking: call off the async runtime) and reports it with the
/// delivery measured so far, from the first modification stored (preparing them through
/// the write path comes first and is reported apart).
pub fn bulk_edit(app: &App, spec: &BulkEdit) -> Result<BulkEditOutcome, ApiError> {
    let prepared = app.store.prepare_edits(spec)?;
    app.delivery.start_edit();
    let edit = app.store.apply_edits(prepared, spec.rate);
    *app.last_edit.lock().unwrap_or_else(|e| e.into_inner()) = Some(edit.clone());
    let delivery = app.delivery.since_edit().expect("an edit started");
    Ok(BulkEditOutcome { edit, delivery })
}

/// `GET /_sim/stats`.
pub fn stats(app: &App) -> Value {
    let mut v = json!({
        "resourceVersion": app.store.current_rv().to_string(),
        "openWatches": app.open_watches.load(Ordering::SeqCst),
        "objects": app.store.object_count(),
        "storedBytes": app.store.stored_bytes(),
        "historyLength": app.store.history_len(),
        "controllers": app.controllers,
        "watchEvents": app.delivery.events.load(Ordering::Relaxed),
        "watchBytes": app.delivery.bytes.load(Ordering::Relaxed),
        "tokenReviews": app.auth.reviews().0,
        "subjectAccessReviews": app.auth.reviews().1,
    });
    let last = app
        .last_edit
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    if let (Some(edit), Some(delivery)) = (last, app.delivery.since_edit()) {
        v["bulkEdit"] =
            serde_json::to_value(BulkEditOutcome { edit, delivery }).expect("reports serialize");
    }
    v
}

/// Feeds every object of a bulk-load body to `add`: a JSON array, a `List` (`items`), or
/// objects one after another (NDJSON); an array is read element by element, never whole.
fn each_object(body: &[u8], mut add: impl FnMut(Value)) -> Result<(), ApiError> {
    struct Each<'a, F>(&'a mut F);
    impl<'de, F: FnMut(Value)> Visitor<'de> for Each<'_, F> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of objects")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while let Some(v) = seq.next_element::<Value>()? {
                (self.0)(v);
            }
            Ok(())
        }
    }
    let bad = |e: serde_json::Error| ApiError::bad_request(format!("bulk-load: {e}"));
    let text = body.trim_ascii_start();
    if text.starts_with(b"[") {
        use serde::Deserializer;
        let mut de = serde_json::Deserializer::from_slice(text);
        de.deserialize_seq(Each(&mut add)).map_err(bad)?;
        return de.end().map_err(bad);
    }
    for v in serde_json::Deserializer::from_slice(text).into_iter::<Value>() {
        match v.map_err(bad)? {
            Value::Object(mut m) if m.get("items").is_some_and(Value::is_array) => {
                if let Some(Value::Array(items)) = m.remove("items") {
                    items.into_iter().for_each(&mut add);
                }
            }
            other => add(other),
        }
    }
    Ok(())
}

/// Loads a bulk-load body (blocking: call off the async runtime).
pub fn bulk_load(store: &Store, body: &[u8]) -> Result<BulkLoadReport, ApiError> {
    let mut loader = store.bulk_loader();
    each_object(body, |o| loader.add(o))?;
    Ok(loader.finish())
}

pub(super) async fn request(app: &Arc<App>, method: &Method, path: &str, body: Bytes) -> Response {
    let path = path.trim_end_matches('/');
    let result = match (method.as_str(), path) {
        ("POST", "bulk-load") => {
            let store = app.store.clone();
            blocking(move || bulk_load(&store, &body)).await
        }
        ("POST", "bulk-edit") => {
            let app = app.clone();
            blocking(move || {
                let spec: BulkEdit = serde_json::from_slice(&body)
                    .map_err(|e| ApiError::bad_request(format!("bulk-edit: {e}")))?;
                bulk_edit(&app, &spec)
            })
            .await
        }
        _ => simple(app, method, path, &body),
    };
    match result {
        Ok(v) => json_response(200, &v),
        Err(e) => error_response(&e),
    }
}

/// Runs store work on a blocking thread and answers with its report.
async fn blocking<T: Serialize + Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<Value, ApiError> {
    let report = tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::new(500, "InternalError", e.to_string()))??;
    Ok(serde_json::to_value(report).expect("reports serialize"))
}

fn simple(app: &App, method: &Method, path: &str, body: &Bytes) -> Result<Value, ApiError> {
    let body_json = || -> Result<Value, ApiError> {
        if body.is_empty() {
            Ok(json!({}))
        } else {
            parse_body(body)
        }
    };
    match (method.as_str(), path) {
        ("POST", "faults") => {
            let f: Fault = serde_json::from_value(body_json()?)
                .map_err(|e| ApiError::bad_request(format!("fault: {e}")))?;
            app.faults.lock().unwrap_or_else(|e| e.into_inner()).push(f);
            Ok(json!({"ok": true}))
        }
        ("DELETE", "faults") => {
            app.faults.lock().unwrap_or_else(|e| e.into_inner()).clear();
            Ok(json!({"ok": true}))
        }
        ("POST", "audit") => {
            let options: crate::audit::AuditOptions = serde_json::from_value(body_json()?)
                .map_err(|e| ApiError::bad_request(format!("audit: {e}")))?;
            app.audit
                .configure(&options)
                .map_err(|e| ApiError::bad_request(format!("audit: {e}")))?;
            Ok(json!({"ok": true}))
        }
        ("POST", "users") => {
            let body = body_json()?;
            let username = body
                .get("username")
                .and_then(Value::as_str)
                .filter(|u| !u.is_empty())
                .ok_or_else(|| {
                    ApiError::bad_request("users: {\"username\", \"groups\"?} expected")
                })?;
            let groups: Vec<String> = body
                .get("groups")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|g| g.as_str().map(str::to_string))
                .collect();
            let token = app.auth.tokens.add_user(username, groups);
            Ok(json!({"username": username, "token": token}))
        }
        ("POST", "latency") => {
            let ms = body_json()?
                .get("millis")
                .and_then(Value::as_u64)
                .ok_or_else(|| ApiError::bad_request("latency: {\"millis\": N} expected"))?;
            *app.latency.lock().unwrap_or_else(|e| e.into_inner()) = Duration::from_millis(ms);
            Ok(json!({"ok": true}))
        }
        ("POST", "compact") => {
            app.store.compact();
            Ok(json!({"ok": true, "resourceVersion": app.store.current_rv().to_string()}))
        }
        ("POST", "snapshot") => {
            let snapshot = app.store.snapshot();
            let rv = snapshot.resource_version();
            *app.snapshot.lock().unwrap_or_else(|e| e.into_inner()) = Some(snapshot);
            Ok(json!({"ok": true, "resourceVersion": rv.to_string()}))
        }
        ("POST", "restore") => {
            let snapshot = app.snapshot.lock().unwrap_or_else(|e| e.into_inner());
            let snapshot = snapshot.as_ref().ok_or_else(|| {
                ApiError::bad_request("restore: no snapshot; POST /_sim/snapshot first")
            })?;
            let rv = app.store.restore(snapshot);
            Ok(json!({"ok": true, "resourceVersion": rv.to_string()}))
        }
        ("POST", "close-watches") => {
            app.store.close_watches();
            Ok(json!({"ok": true}))
        }
        ("POST", "history-limit") => {
            let n = body_json()?
                .get("limit")
                .and_then(Value::as_u64)
                .ok_or_else(|| ApiError::bad_request("history-limit: {\"limit\": N} expected"))?;
            app.store.set_history_limit(n as usize);
            Ok(json!({"ok": true}))
        }
        ("POST", "webhooks") => {
            let hook: MutatingWebhook = serde_json::from_value(body_json()?)
                .map_err(|e| ApiError::bad_request(format!("webhook: {e}")))?;
            app.store.add_webhook(hook)?;
            Ok(json!({"ok": true}))
        }
        ("GET", "webhooks") => Ok(json!({"webhooks": app.store.webhooks()})),
        ("DELETE", "webhooks") => {
            app.store.clear_webhooks();
            Ok(json!({"ok": true}))
        }
        ("POST", "restart-container") => {
            let body = body_json()?;
            let field = |f: &str| {
                body.get(f).and_then(Value::as_str).ok_or_else(|| {
                    ApiError::bad_request(
                        "restart-container: {\"namespace\", \"pod\", \"container\"} expected",
                    )
                })
            };
            let exit_code = body.get("exitCode").and_then(Value::as_i64).unwrap_or(1);
            let pod = crate::controller::restart_container(
                &app.store,
                &app.kubelet,
                field("namespace")?,
                field("pod")?,
                field("container")?,
                exit_code,
            )?;
            Ok(json!({"ok": true, "status": pod["status"]}))
        }
        ("GET", "stats") => Ok(stats(app)),
        _ => Err(not_found_path()),
    }
}
