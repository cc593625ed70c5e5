//! Watch streams: one task per watch reads the store's history from its position, turns
//! each change into the event this watch should see (selectors, namespace, Table shape)
//! and writes the lines in batches. Without selectors or Tables an event line is the stored
//! bytes wrapped in `{"type":…,"object":…}`, never a re-serialized tree.

use super::{list_params, truthy, App, Target};
use crate::status::ApiError;
use crate::store::{Change, ListParams, Stored, WatchStart};
use crate::table;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// How long a watch-list waits for a resourceVersion the server has not reached
/// (`blockTimeout` in `staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go`).
const FRESH_WAIT: Duration = Duration::from_secs(3);

/// Changes read from the history at a time.
const BATCH: usize = 512;
/// A batch of lines is sent once it holds this many bytes.
const FLUSH_BYTES: usize = 64 * 1024;

/// Decrements the open-watch gauge when a stream task ends, however it ends.
struct WatchGuard(Arc<App>);
impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What one watch sends: its type, namespace, selectors and shape.
struct Lens {
    info: ResourceType,
    ns: Option<String>,
    params: ListParams,
    /// `kubectl get -w` asks for Tables: each event then carries a one-row Table.
    table: Option<(Option<Vec<Value>>, String)>,
}

fn push_line(out: &mut Vec<u8>, kind: &str, object: &[u8]) {
    push_event(out, kind, |out| out.extend_from_slice(object));
}

/// Appends the event line whose object `object` writes (the stored text unpacked straight
/// into the batch).
fn push_event(out: &mut Vec<u8>, kind: &str, object: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    object(out);
    out.extend_from_slice(b"}\n");
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut out = Vec::new();
    push_line(&mut out, kind, object.to_string().as_bytes());
    Bytes::from(out)
}

impl Lens {
    fn selective(&self) -> bool {
        !self.params.labels.is_empty() || !self.params.fields.is_empty()
    }

    fn selected(&self, s: &Stored) -> bool {
        if !self.selective() {
            return true;
        }
        if self.params.fields.is_empty() {
            return self.params.labels.matches_labels(s.labels().as_ref());
        }
        let o = s.value_as(&self.info);
        self.params
            .labels
            .matches_labels(o.pointer("/metadata/labels"))
            && self.params.fields.matches(&o)
    }

    /// What a change means to this watch: its event type, or nothing when it concerns
    /// another type/namespace or never matched the selectors. Objects moving in or out of
    /// a selector appear as ADDED/DELETED, as kube-apiserver's cacher does.
    fn classify(&self, c: &Change) -> Option<&'static str> {
        if !c.concerns(&self.info) || self.ns.as_ref().is_some_and(|ns| ns != c.namespace()) {
            return None;
        }
        let now = self.selected(&c.object);
        let before = c.prev.as_ref().is_some_and(|p| self.selected(p));
        Some(match (c.kind, before, now) {
            ("DELETED", true, _) => "DELETED",
            ("DELETED", false, _) => return None,
            (_, true, true) => "MODIFIED",
            (_, false, true) => "ADDED",
            (_, true, false) => "DELETED",
            (_, false, _) => return None,
        })
    }

    /// Appends the event line for `object`.
    fn write(&self, out: &mut Vec<u8>, kind: &str, object: &Stored) {
        match &self.table {
            None => push_event(out, kind, |out| object.write_json_as(&self.info, out)),
            Some((columns, include)) => {
                let obj = object.value_as(&self.info);
                let rv = obj
                    .pointer("/metadata/resourceVersion")
                    .cloned()
                    .unwrap_or(json!(""));
                let t = table::table_with(
                    &self.info.kind,
                    columns.as_deref(),
                    std::slice::from_ref(&obj),
                    json!({"resourceVersion": rv}),
                    include,
                );
                push_line(out, kind, t.to_string().as_bytes());
            }
        }
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut md = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_end {
            md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        line(
            "BOOKMARK",
            &json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": md}),
        )
    }
}

type Tx = tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>;

/// Sends a batch of lines holding `events` events; false once the client is gone.
async fn send(app: &App, tx: &Tx, buf: &mut Vec<u8>, events: &mut u64) -> bool {
    if buf.is_empty() {
        return true;
    }
    let bytes = Bytes::from(std::mem::take(buf));
    let len = bytes.len() as u64;
    if tx.send(Ok(bytes)).await.is_err() {
        return false;
    }
    app.delivery.record(*events, len);
    *events = 0;
    true
}

/// Opens a watch on `target` and streams it from a task.
pub(super) fn start(
    app: &Arc<App>,
    target: &Target,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    let info = target.info.clone();
    let ns = target.namespace.clone();
    let wants_table = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"));
    let table = wants_table.then(|| {
        let include = q
            .get("includeObject")
            .map(String::as_str)
            .unwrap_or("Metadata");
        (app.store.printer_columns(&info), include.to_string())
    });
    let params = list_params(&app.store, &info, q, ns.as_deref())?;
    let bookmarks = truthy(q, "allowWatchBookmarks");
    let send_initial = truthy(q, "sendInitialEvents");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs);
    let rv = if send_initial {
        None
    } else {
        params.resource_version.as_deref()
    };
    // As kube-apiserver's watch cache (`cacher.go`, `waitUntilWatchCacheFreshAndForceAllEvents`):
    // a watch-list (sendInitialEvents) from a resourceVersion the server has not reached
    // waits up to 3 s for it, then fails with 504 "Too large resource version" as its first
    // event. A plain watch from such a version is accepted and stays silent until the
    // server gets there (the history read below has nothing after it).
    let wait_for = send_initial
        .then(|| params.resource_version.as_deref()?.parse::<u64>().ok())
        .flatten()
        .filter(|rv| *rv > 0);
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    // Subscribe before taking the position, so no change between the two is missed.
    let mut changes = app.store.changes_signal();
    let mut closes = app.store.closes_signal();
    changes.borrow_and_update();
    closes.borrow_and_update();
    let mut start = app.store.watch(&info, ns.as_deref(), rv);
    app.open_watches.fetch_add(1, Ordering::SeqCst);
    let guard = WatchGuard(app.clone());
    let app = app.clone();
    let lens = Lens {
        info,
        ns,
        params,
        table,
    };
    tokio::spawn(async move {
        let _guard = guard;
        if let Some(wanted) = wait_for {
            let deadline = tokio::time::Instant::now() + FRESH_WAIT;
            loop {
                changes.borrow_and_update();
                let current = app.store.current_rv();
                if current >= wanted {
                    start = app.store.watch(&lens.info, lens.ns.as_deref(), None);
                    break;
                }
                tokio::select! {
                    r = changes.changed() => if r.is_err() { return },
                    _ = tokio::time::sleep_until(deadline) => {
                        let status = crate::store::watch::too_large(wanted, current).to_status();
                        let _ = tx.send(Ok(line("ERROR", &status))).await;
                        return;
                    }
                    _ = tx.closed() => return,
                }
            }
        }
        let WatchStart { initial, from } = match start {
            Ok(s) => s,
            Err(e) => {
                // Like kube-apiserver: the watch opens (200) and its first event is the error.
                let _ = tx.send(Ok(line("ERROR", &e.to_status()))).await;
                return;
            }
        };
        let mut buf = Vec::new();
        let mut events = 0;
        for s in &initial {
            if lens.selected(s) {
                lens.write(&mut buf, "ADDED", s);
                events += 1;
                if buf.len() >= FLUSH_BYTES && !send(&app, &tx, &mut buf, &mut events).await {
                    return;
                }
            }
        }
        drop(initial);
        if !send(&app, &tx, &mut buf, &mut events).await {
            return;
        }
        let mut cursor = from;
        if send_initial && bookmarks && tx.send(Ok(lens.bookmark(cursor, true))).await.is_err() {
            return;
        }
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut tick = tokio::time::interval(app.bookmark_interval);
        tick.reset();
        loop {
            // Mark the signal seen, then read: a change committed after the read wakes us.
            changes.borrow_and_update();
            let batch = match app.store.changes_after(cursor, BATCH) {
                Ok(b) => b,
                Err(e) => {
                    let _ = tx.send(Ok(line("ERROR", &e.to_status()))).await;
                    return;
                }
            };
            if !batch.is_empty() {
                for c in &batch {
                    cursor = c.rv;
                    if let Some(kind) = lens.classify(c) {
                        lens.write(&mut buf, kind, &c.object);
                        events += 1;
                        if buf.len() >= FLUSH_BYTES && !send(&app, &tx, &mut buf, &mut events).await
                        {
                            return;
                        }
                    }
                }
                if !send(&app, &tx, &mut buf, &mut events).await {
                    return;
                }
                continue;
            }
            let sleep_until = deadline
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86400));
            tokio::select! {
                r = changes.changed() => if r.is_err() { return },
                _ = closes.changed() => return,
                _ = tick.tick(), if bookmarks => {
                    // Everything up to the cursor is sent; the history is read to the end.
                    // A watch from a version the server has not reached gets none until it
                    // does (the cacher sends no event at or below a watcher's version).
                    if cursor <= app.store.current_rv()
                        && tx.send(Ok(lens.bookmark(cursor, false))).await.is_err()
                    {
                        return;
                    }
                }
                _ = tokio::time::sleep_until(sleep_until), if deadline.is_some() => return,
                _ = tx.closed() => return,
            }
        }
    });
    let body = Body::from_stream(tokio_stream::wrappers::ReceiverStream::new(rx));
    Ok(Response::builder()
        .status(200)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::TRANSFER_ENCODING, "chunked")
        .body(body)
        .expect("static response parts"))
}
