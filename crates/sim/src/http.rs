//! HTTP front: parses Kubernetes REST paths, applies fault injection and latency, and maps
//! verbs onto the store (list/watch/get/create/update/patch/delete, status and scale
//! subresources), discovery, Table output and the `/_sim` admin endpoints.

use super::discovery;
use super::openapi;
use super::status::ApiError;
use super::store::{scale_of, Change, DeleteOpts, ListParams, Notice, Store, WriteCtx};
use super::table;
use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use driftd_k8s::kinds::ResourceType;
use driftd_k8s::selector::Selector;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// "Fail the next `count` requests for `resource` (plural, or `*`) with `code`",
/// optionally only for one `verb` (list, watch, get, create, update, patch, delete).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Fault {
    pub resource: String,
    #[serde(default)]
    pub verb: Option<String>,
    pub count: u32,
    pub code: u16,
}

/// State shared by all requests.
pub struct App {
    pub store: Store,
    pub faults: Mutex<Vec<Fault>>,
    pub latency: Mutex<Duration>,
    pub bookmark_interval: Duration,
    pub open_watches: AtomicUsize,
    pub addr: String,
}

fn json_response(code: u16, v: &Value) -> Response {
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn error_response(e: &ApiError) -> Response {
    json_response(e.code, &e.to_status())
}

fn not_found_path() -> ApiError {
    ApiError::new(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

/// What a request path names once the group/version prefix is stripped.
struct Target {
    info: ResourceType,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

fn verb_of(method: &Method, t: &Target, watch: bool) -> &'static str {
    match (method.as_str(), t.name.is_some()) {
        ("GET", false) if watch => "watch",
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", false) => "deletecollection",
        ("DELETE", true) => "delete",
        _ => "unknown",
    }
}

/// The field manager as kube-apiserver's `managerOrUserAgent` derives it: the
/// `fieldManager` parameter, else the User-Agent up to its first `/` (printable characters,
/// at most 128). A client sending neither (kube-rs sends no User-Agent) gets "" and its
/// managedFields entries carry no manager name, as on a real cluster.
fn manager_of(q: &HashMap<String, String>, headers: &HeaderMap) -> String {
    if let Some(m) = q.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.clone();
    }
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    ua.split('/')
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(128)
        .collect()
}

fn truthy(q: &HashMap<String, String>, k: &str) -> bool {
    q.get(k).is_some_and(|v| v == "1" || v == "true")
}

/// The single entry point: everything is routed by hand because Kubernetes paths are
/// shaped by discovery data (and CRDs change it at runtime).
pub async fn handle(
    State(app): State<Arc<App>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().trim_end_matches('/').to_string();
    let q: HashMap<String, String> = Query::try_from_uri(&uri)
        .map(|Query(q)| q)
        .unwrap_or_default();
    if let Some(admin) = path.strip_prefix("/_sim/") {
        return admin_request(&app, &method, admin, &body);
    }
    let latency = *app.latency.lock().unwrap_or_else(|e| e.into_inner());
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let resp = route(&app, &method, &path, &q, &headers, body).await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    tracing::debug!(%method, path = %uri.path(), status = resp.status().as_u16(), "request");
    resp
}

async fn route(
    app: &Arc<App>,
    method: &Method,
    path: &str,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let types = app.store.types();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        [] => {
            return Ok(json_response(
                200,
                &json!({"paths": ["/api", "/api/v1", "/apis", "/version"]}),
            ))
        }
        ["version"] => return Ok(json_response(200, &discovery::version())),
        ["healthz"] | ["livez"] | ["readyz"] => return Ok((StatusCode::OK, "ok").into_response()),
        ["openapi", "v3"] => return Ok(json_response(200, &openapi::root(&types))),
        ["openapi", "v3", gv @ ..] => {
            return openapi::gv_document(&gv.join("/"), &types)
                .map(|d| json_response(200, &d))
                .ok_or_else(not_found_path)
        }
        ["api"] | ["apis"] if discovery::wants_aggregated(accept) => {
            let doc = discovery::aggregated(segs == ["api"], &types);
            return Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, discovery::AGGREGATED_V2)],
                doc.to_string(),
            )
                .into_response());
        }
        ["api"] => return Ok(json_response(200, &discovery::api_versions(&app.addr))),
        ["apis"] => return Ok(json_response(200, &discovery::api_group_list(&types))),
        ["api", "v1"] => {
            return discovery::resource_list("", "v1", &types)
                .map(|d| json_response(200, &d))
                .ok_or_else(not_found_path)
        }
        ["apis", g] => {
            return discovery::api_group(g, &types)
                .map(|d| json_response(200, &d))
                .ok_or_else(not_found_path)
        }
        ["apis", g, v] => {
            return discovery::resource_list(g, v, &types)
                .map(|d| json_response(200, &d))
                .ok_or_else(not_found_path)
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return Err(not_found_path()),
    };
    let find = |plural: &str| {
        types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
            .cloned()
    };
    let namespaced_target = match rest {
        ["namespaces", ns, plural, tail @ ..] if tail.len() <= 2 => {
            find(plural).filter(|t| t.namespaced).map(|info| Target {
                info,
                namespace: Some(ns.to_string()),
                name: tail.first().map(|s| s.to_string()),
                subresource: tail.get(1).map(|s| s.to_string()),
            })
        }
        _ => None,
    };
    let target = match namespaced_target {
        Some(t) => t,
        None => match rest {
            [plural, tail @ ..] if tail.len() <= 2 => {
                let info = find(plural).ok_or_else(not_found_path)?;
                if info.namespaced && !tail.is_empty() {
                    return Err(not_found_path());
                }
                Target {
                    info,
                    namespace: None,
                    name: tail.first().map(|s| s.to_string()),
                    subresource: tail.get(1).map(|s| s.to_string()),
                }
            }
            _ => return Err(not_found_path()),
        },
    };
    if let Some(sub) = &target.subresource {
        if !target.info.has(sub) {
            return Err(not_found_path());
        }
    }
    let verb = verb_of(method, &target, truthy(q, "watch"));
    if let Some(e) = take_fault(app, &target.info.plural, verb) {
        return Err(e);
    }
    let ctx = WriteCtx {
        manager: manager_of(q, headers),
        dry_run: q.get("dryRun").is_some_and(|d| d == "All"),
        apply: None,
    };
    let store = &app.store;
    let info = &target.info;
    let ns = target.namespace.as_deref();
    let wants_table = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"));
    let columns = wants_table.then(|| store.printer_columns(info)).flatten();
    let include = q
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    match (verb, target.name.as_deref(), target.subresource.as_deref()) {
        ("list", _, _) => {
            let list = store.list(info, &list_params(q, ns)?)?;
            if wants_table {
                let items = list["items"].as_array().cloned().unwrap_or_default();
                return Ok(json_response(
                    200,
                    &table::table_with(
                        &info.kind,
                        columns.as_deref(),
                        &items,
                        list["metadata"].clone(),
                        include,
                    ),
                ));
            }
            Ok(json_response(200, &list))
        }
        ("watch", _, _) => {
            // `kubectl get -w` asks for Tables: each event then carries a one-row Table.
            let table = wants_table.then(|| (columns.clone(), include.to_string()));
            start_watch(app, info.clone(), q, ns, table)
        }
        ("create", None, None) => {
            let obj = parse_body(&body)?;
            let created = store.create(info, ns, obj, &ctx)?;
            Ok(json_response(201, &created))
        }
        ("deletecollection", None, None) => {
            let mut p = list_params(q, ns)?;
            p.limit = None;
            p.continue_token = None;
            let list = store.list(info, &p)?;
            let mut deleted = Vec::new();
            for item in list["items"].as_array().into_iter().flatten() {
                let name = item
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let item_ns = item.pointer("/metadata/namespace").and_then(Value::as_str);
                if let Ok(d) = store.delete(info, item_ns, name, None, ctx.dry_run) {
                    deleted.push(d);
                }
            }
            Ok(json_response(
                200,
                &json!({"kind": format!("{}List", info.kind), "apiVersion": info.api_version(),
                "metadata": {"resourceVersion": store.current_rv().to_string()}, "items": deleted}),
            ))
        }
        ("get", Some(name), None) | ("get", Some(name), Some("status")) => {
            let obj = store.get(info, ns, name)?;
            if wants_table {
                return Ok(json_response(
                    200,
                    &table::table_with(&info.kind, columns.as_deref(), &[obj], json!({}), include),
                ));
            }
            Ok(json_response(200, &obj))
        }
        ("get", Some(name), Some("scale")) => {
            Ok(json_response(200, &scale_of(&store.get(info, ns, name)?)))
        }
        ("update", Some(name), sub @ (None | Some("status"))) => {
            let obj = parse_body(&body)?;
            Ok(json_response(
                200,
                &store.update(info, ns, name, obj, sub, &ctx)?,
            ))
        }
        ("update", Some(name), Some("scale")) => {
            let scale = parse_body(&body)?;
            let updated = write_scale(store, info, ns, name, &ctx, move |_| Ok(scale))?;
            Ok(json_response(200, &updated))
        }
        ("patch", Some(name), sub) => {
            let ctype = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            if ctype == "application/apply-patch+yaml" && sub.is_none() {
                let text = std::str::from_utf8(&body)
                    .map_err(|_| ApiError::bad_request("apply configuration is not UTF-8"))?;
                let config: Value = serde_saphyr::from_str(text).map_err(|e| {
                    ApiError::bad_request(format!("error decoding YAML apply configuration: {e}"))
                })?;
                // Server-side apply takes the manager only from fieldManager, never the User-Agent.
                let ctx = WriteCtx {
                    manager: q.get("fieldManager").cloned().unwrap_or_default(),
                    ..ctx
                };
                let (obj, created) =
                    store.apply(info, ns, name, config, &ctx, truthy(q, "force"))?;
                return Ok(json_response(if created { 201 } else { 200 }, &obj));
            }
            let patch_type = PatchType::from_content_type(&ctype, info)?;
            let patch: Value = serde_json::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            let kind = info.kind.clone();
            if sub == Some("scale") {
                let updated = write_scale(store, info, ns, name, &ctx, move |scale| {
                    patch_type.apply("Scale", scale, &patch)
                })?;
                return Ok(json_response(200, &updated));
            }
            let out = store.write(info, ns, name, sub, &ctx, move |old| {
                let mut new = patch_type.apply(&kind, old, &patch)?;
                // A patch that does not mention resourceVersion carries no precondition.
                if patch.pointer("/metadata/resourceVersion").is_none()
                    && patch_type != PatchType::Json
                {
                    if let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                        md.remove("resourceVersion");
                    }
                }
                Ok(new)
            })?;
            Ok(json_response(200, &out))
        }
        ("delete", Some(name), None) => {
            let body_opts: Value = if body.is_empty() {
                json!({})
            } else {
                parse_body(&body)?
            };
            let s = |p: &str| {
                body_opts
                    .pointer(p)
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            let opts = DeleteOpts {
                precondition_rv: s("/preconditions/resourceVersion"),
                precondition_uid: s("/preconditions/uid"),
                propagation: s("/propagationPolicy")
                    .or_else(|| q.get("propagationPolicy").cloned())
                    .or_else(|| {
                        // The deprecated orphanDependents flag, still sent by old clients.
                        (body_opts.get("orphanDependents") == Some(&json!(true)))
                            .then(|| "Orphan".into())
                    }),
                dry_run: ctx.dry_run
                    || body_opts
                        .get("dryRun")
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().any(|d| d == "All")),
            };
            let deletion = store.delete_with(info, ns, name, &opts)?;
            if !deletion.gone || (info.kind == "Pod" && !info.custom) {
                // Not deleted yet (finalizers), or a Pod (graceful deletion): kube-apiserver
                // returns the object.
                return Ok(json_response(200, &deletion.object));
            }
            let uid = deletion
                .object
                .pointer("/metadata/uid")
                .cloned()
                .unwrap_or(Value::Null);
            let mut details =
                json!({"name": name, "group": info.group, "kind": info.plural, "uid": uid});
            if info.group.is_empty() {
                details.as_object_mut().map(|d| d.remove("group"));
            }
            Ok(json_response(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Success", "details": details}),
            ))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

fn write_scale(
    store: &Store,
    info: &ResourceType,
    ns: Option<&str>,
    name: &str,
    ctx: &WriteCtx,
    f: impl FnOnce(&Value) -> Result<Value, ApiError>,
) -> Result<Value, ApiError> {
    let updated = store.write(info, ns, name, Some("scale"), ctx, move |old| {
        let scale = f(&scale_of(old))?;
        let replicas = scale
            .pointer("/spec/replicas")
            .cloned()
            .ok_or_else(|| ApiError::bad_request("Scale spec.replicas is required"))?;
        let mut new = old.clone();
        new["spec"]["replicas"] = replicas;
        if let Some(rv) = scale.pointer("/metadata/resourceVersion") {
            new["metadata"]["resourceVersion"] = rv.clone();
        } else if let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            md.remove("resourceVersion");
        }
        Ok(new)
    })?;
    Ok(scale_of(&updated))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PatchType {
    Merge,
    Json,
    Strategic,
}

impl PatchType {
    fn from_content_type(ctype: &str, info: &ResourceType) -> Result<PatchType, ApiError> {
        let accepted = if info.custom {
            "application/json-patch+json, application/merge-patch+json"
        } else {
            "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json"
        };
        match ctype {
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/json-patch+json" => Ok(PatchType::Json),
            // Custom resources have no Go struct to read merge keys from, so kube-apiserver
            // refuses strategic merge patches for them with 415.
            "application/strategic-merge-patch+json"
                if !info.custom && super::smp::supported(&info.api_version(), &info.kind) =>
            {
                Ok(PatchType::Strategic)
            }
            _ => Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!("the body of the request was in an unknown format - accepted media types include: {accepted}"),
            )),
        }
    }

    fn apply(self, kind: &str, old: &Value, patch: &Value) -> Result<Value, ApiError> {
        match self {
            PatchType::Merge => {
                let mut doc = old.clone();
                json_patch::merge(&mut doc, patch);
                Ok(doc)
            }
            PatchType::Json => {
                let ops: json_patch::Patch =
                    serde_json::from_value(patch.clone()).map_err(|e| {
                        ApiError::bad_request(format!("error decoding json patch: {e}"))
                    })?;
                let mut doc = old.clone();
                json_patch::patch(&mut doc, &ops)
                    .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
                Ok(doc)
            }
            PatchType::Strategic => {
                super::smp::apply(kind, old, patch).map_err(|e| ApiError::bad_request(e.0))
            }
        }
    }
}

fn parse_body(body: &Bytes) -> Result<Value, ApiError> {
    if body.starts_with(super::proto::MAGIC) {
        return super::proto::decode(body)
            .map_err(|m| ApiError::new(415, "UnsupportedMediaType", m));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (not valid JSON: {e})"
        ))
    })
}

fn list_params(q: &HashMap<String, String>, ns: Option<&str>) -> Result<ListParams, ApiError> {
    let labels = Selector::parse_labels(q.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
    let fields = Selector::parse_fields(q.get("fieldSelector").map(String::as_str).unwrap_or(""))
        .map_err(ApiError::bad_request)?;
    let limit = match q.get("limit").filter(|l| !l.is_empty()) {
        Some(l) => Some(
            l.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {l:?}")))?,
        ),
        None => None,
    };
    Ok(ListParams {
        namespace: ns.map(str::to_string),
        labels,
        fields,
        resource_version: q.get("resourceVersion").cloned(),
        resource_version_match: q
            .get("resourceVersionMatch")
            .cloned()
            .filter(|s| !s.is_empty()),
        limit,
        continue_token: q.get("continue").cloned(),
    })
}

fn take_fault(app: &App, plural: &str, verb: &str) -> Option<ApiError> {
    let mut faults = app.faults.lock().unwrap_or_else(|e| e.into_inner());
    let idx = faults.iter().position(|f| {
        (f.resource == "*" || f.resource == plural) && f.verb.as_deref().is_none_or(|v| v == verb)
    })?;
    let f = &mut faults[idx];
    f.count -= 1;
    let code = f.code;
    if f.count == 0 {
        faults.remove(idx);
    }
    Some(ApiError::from_code(
        code,
        format!("injected fault: {verb} {plural} failed with {code}"),
    ))
}

fn watch_line(kind: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": kind, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

/// Decrements the open-watch gauge when a stream task ends, however it ends.
struct WatchGuard(Arc<App>);
impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.open_watches.fetch_sub(1, Ordering::SeqCst);
    }
}

fn start_watch(
    app: &Arc<App>,
    info: ResourceType,
    q: &HashMap<String, String>,
    ns: Option<&str>,
    table: Option<(Option<Vec<Value>>, String)>,
) -> Result<Response, ApiError> {
    let p = list_params(q, ns)?;
    let bookmarks = truthy(q, "allowWatchBookmarks");
    let send_initial = truthy(q, "sendInitialEvents");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs);
    let rv = if send_initial {
        None
    } else {
        p.resource_version.as_deref()
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(256);
    let start = app.store.watch(&info, ns, rv);
    app.open_watches.fetch_add(1, Ordering::SeqCst);
    let guard = WatchGuard(app.clone());
    let app = app.clone();
    let ns = ns.map(str::to_string);
    let bookmark_every = app.bookmark_interval;
    tokio::spawn(async move {
        let _guard = guard;
        let start = match start {
            Ok(s) => s,
            Err(e) => {
                // Like kube-apiserver: the watch opens (200) and its first event is the error.
                let _ = tx.send(Ok(watch_line("ERROR", &e.to_status()))).await;
                return;
            }
        };
        let selected = |o: &Value| {
            p.labels.matches_labels(o.pointer("/metadata/labels")) && p.fields.matches_fields(o)
        };
        let bookmark = |rv: u64, initial_end: bool| {
            let mut md = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
            if initial_end {
                md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            }
            watch_line(
                "BOOKMARK",
                &json!({"kind": info.kind, "apiVersion": info.api_version(), "metadata": md}),
            )
        };
        // What a change means to this watch: its event type and object, or nothing when it
        // concerns another type/namespace or never matched the selectors. Objects moving in
        // or out of a selector appear as ADDED/DELETED, as kube-apiserver's cacher does.
        let classify = |c: &Change| -> Option<(&'static str, Value)> {
            if !super::store::sees(&info, c) || ns.as_ref().is_some_and(|ns| *ns != c.namespace) {
                return None;
            }
            let obj = Store::render(&info, &c.object);
            let now = selected(&obj);
            let before = c
                .prev
                .as_ref()
                .is_some_and(|p| selected(&Store::render(&info, p)));
            let kind = match (c.kind, before, now) {
                ("DELETED", true, _) => "DELETED",
                ("DELETED", false, _) => return None,
                (_, true, true) => "MODIFIED",
                (_, false, true) => "ADDED",
                (_, true, false) => "DELETED",
                (_, false, _) => return None,
            };
            Some((kind, obj))
        };
        let shape = |obj: &Value| match &table {
            Some((columns, include)) => table::table_with(
                &info.kind,
                columns.as_deref(),
                std::slice::from_ref(obj),
                json!({"resourceVersion": obj.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""))}),
                include,
            ),
            None => obj.clone(),
        };
        let mut last_rv = start.start_rv;
        for c in &start.initial {
            if let Some((kind, obj)) = classify(c) {
                if tx.send(Ok(watch_line(kind, &shape(&obj)))).await.is_err() {
                    return;
                }
            }
        }
        if send_initial && bookmarks && tx.send(Ok(bookmark(last_rv, true))).await.is_err() {
            return;
        }
        let mut notices = start.rx;
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut tick = tokio::time::interval(bookmark_every);
        tick.reset();
        loop {
            let sleep_until = deadline
                .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86400));
            tokio::select! {
                n = notices.recv() => match n {
                    Ok(Notice::Change(c)) => {
                        if c.rv <= last_rv {
                            continue;
                        }
                        let Some((kind, obj)) = classify(&c) else { continue };
                        last_rv = c.rv;
                        if tx.send(Ok(watch_line(kind, &shape(&obj)))).await.is_err() {
                            return;
                        }
                    }
                    Ok(Notice::CloseWatches) | Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        let e = ApiError::expired(format!("too old resource version: {last_rv} ({})", app.store.current_rv()));
                        let _ = tx.send(Ok(watch_line("ERROR", &e.to_status()))).await;
                        return;
                    }
                },
                _ = tick.tick(), if bookmarks => {
                    // Every change up to `now` is already queued on `notices` (changes are
                    // broadcast under the store lock), so drain before promising `now`.
                    let now = app.store.current_rv();
                    loop {
                        match notices.try_recv() {
                            Ok(Notice::Change(c)) => {
                                if let Some((kind, obj)) = classify(&c) {
                                    if tx.send(Ok(watch_line(kind, &shape(&obj)))).await.is_err() {
                                        return;
                                    }
                                }
                                last_rv = last_rv.max(c.rv);
                            }
                            Ok(Notice::CloseWatches) => return,
                            Err(_) => break,
                        }
                    }
                    last_rv = last_rv.max(now);
                    if tx.send(Ok(bookmark(last_rv, false))).await.is_err() {
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

fn admin_request(app: &App, method: &Method, path: &str, body: &Bytes) -> Response {
    let body_json = || -> Result<Value, ApiError> {
        if body.is_empty() {
            Ok(json!({}))
        } else {
            parse_body(body)
        }
    };
    let result: Result<Value, ApiError> = (|| match (method.as_str(), path.trim_end_matches('/')) {
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
        ("GET", "stats") => Ok(json!({
            "resourceVersion": app.store.current_rv().to_string(),
            "openWatches": app.open_watches.load(Ordering::SeqCst),
        })),
        _ => Err(not_found_path()),
    })();
    match result {
        Ok(v) => json_response(200, &v),
        Err(e) => error_response(&e),
    }
}
