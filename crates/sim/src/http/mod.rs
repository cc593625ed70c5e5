//! HTTP front: parses Kubernetes REST paths, serves discovery, applies fault injection and
//! latency, and hands a resource request to [`verbs`] (list/get/create/update/patch/delete,
//! status and scale subresources, Table output), [`watch`] (watch streams) or, under
//! `/_sim/`, to [`admin`].

pub mod admin;
mod patch;
mod reviews;
mod verbs;
mod watch;

use super::discovery;
use super::openapi;
use super::status::ApiError;
use super::store::{ListParams, Store};
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use driftd_k8s::kinds::ResourceType;
use driftd_k8s::selector::Selector;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
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
    /// Watch events written to streams, for the delivery rate `/_sim/stats` reports.
    pub delivery: admin::Delivery,
    /// The latest bulk edit's report, for `/_sim/stats`.
    pub last_edit: Mutex<Option<crate::store::bulk::BulkEditReport>>,
    pub controllers: bool,
    /// What `/_sim/restore` goes back to (taken by `/_sim/snapshot`).
    pub snapshot: Mutex<Option<crate::store::restore::Snapshot>>,
    /// The pods waiting for a config: the controllers' kubelet and
    /// `/_sim/restart-container` share them.
    pub kubelet: Arc<crate::controller::Kubelet>,
    /// Tokens, and the review APIs' counters.
    pub auth: crate::auth::Auth,
    /// Audit events of writes, once `/_sim/audit` (or `driftd sim`'s flags) set backends.
    pub audit: crate::audit::Auditor,
}

fn json_response(code: u16, v: &Value) -> Response {
    bytes_response(code, Bytes::from(v.to_string()))
}

/// A JSON body already serialized (stored bytes, spliced lists).
fn bytes_response(code: u16, body: impl Into<Body>) -> Response {
    (
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        body.into(),
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
    ConnectInfo(peer): ConnectInfo<std::net::SocketAddr>,
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
        return admin::request(&app, &method, admin, body).await;
    }
    let latency = *app.latency.lock().unwrap_or_else(|e| e.into_inner());
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let request = Request {
        method: &method,
        path: &path,
        uri: &uri,
        q: &q,
        headers: &headers,
        peer,
    };
    let resp = route(&app, &request, body).await;
    let resp = match resp {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    tracing::debug!(%method, path = %uri.path(), status = resp.status().as_u16(), "request");
    resp
}

/// What routing and auditing read of a request besides its body.
struct Request<'a> {
    method: &'a Method,
    path: &'a str,
    uri: &'a Uri,
    q: &'a HashMap<String, String>,
    headers: &'a HeaderMap,
    peer: std::net::SocketAddr,
}

async fn route(app: &Arc<App>, request: &Request<'_>, body: Bytes) -> Result<Response, ApiError> {
    let Request {
        method,
        path,
        q,
        headers,
        ..
    } = *request;
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
        ["openapi", "v2"] => {
            return Ok((
                StatusCode::OK,
                [(header::CONTENT_TYPE, openapi::V2_PROTOBUF)],
                openapi::v2_document(),
            )
                .into_response())
        }
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
    if let Some(answer) = reviews::serve(app, method, &target, &body) {
        return answer;
    }
    if let Some(sub) = &target.subresource {
        if !target.info.has(sub) {
            return Err(not_found_path());
        }
    }
    let verb = verb_of(method, &target, truthy(q, "watch"));
    if let Some(e) = take_fault(app, &target.info.plural, verb) {
        return Err(e);
    }
    if verb == "watch" {
        return watch::start(app, &target, q, headers);
    }
    if !app.audit.on() || !crate::audit::WRITE_VERBS.contains(&verb) {
        return verbs::serve(app, verb, &target, q, headers, body);
    }
    let received = jiff::Timestamp::now();
    let answer = verbs::serve(app, verb, &target, q, headers, body.clone());
    Ok(audited(app, request, &target, verb, received, &body, answer).await)
}

/// Records the audit event of a write answered `answer`, and answers it.
async fn audited(
    app: &App,
    request: &Request<'_>,
    target: &Target,
    verb: &str,
    received: jiff::Timestamp,
    body: &Bytes,
    answer: Result<Response, ApiError>,
) -> Response {
    let response = answer.unwrap_or_else(|e| error_response(&e));
    let (parts, answer_body) = response.into_parts();
    let bytes = axum::body::to_bytes(answer_body, usize::MAX)
        .await
        .unwrap_or_default();
    let status = parts.status;
    let token = request
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let user = app
        .auth
        .tokens
        .user_of(&app.store, token)
        .map(|u| serde_json::to_value(u).unwrap_or_default())
        .unwrap_or_else(
            || json!({"username": "system:anonymous", "groups": ["system:unauthenticated"]}),
        );
    let request_uri = match request.uri.query() {
        Some(query) => format!("{}?{query}", request.uri.path()),
        None => request.uri.path().to_string(),
    };
    app.audit.record(crate::audit::AuditedWrite {
        verb,
        group: &target.info.group,
        version: &target.info.version,
        resource: &target.info.plural,
        namespace: target.namespace.as_deref(),
        name: target.name.as_deref(),
        subresource: target.subresource.as_deref(),
        request_uri: &request_uri,
        user,
        source_ip: request.peer.ip().to_string(),
        user_agent: request
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(""),
        received,
        code: status.as_u16(),
        request: (!body.is_empty()).then_some(&body[..]),
        response: status.is_success().then_some(&bytes[..]),
    });
    Response::from_parts(parts, Body::from(bytes))
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

/// A list or watch request's parameters for `info`. A field selector is converted for the
/// kind first, as kube-apiserver's `ListResource` does: a field the kind does not select on
/// is a 400 BadRequest whose message is the kind's refusal.
fn list_params(
    store: &Store,
    info: &ResourceType,
    q: &HashMap<String, String>,
    ns: Option<&str>,
) -> Result<ListParams, ApiError> {
    let labels = Selector::parse_labels(q.get("labelSelector").map(String::as_str).unwrap_or(""))
        .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
    let fields = store
        .field_labels(info)
        .selector(q.get("fieldSelector").map(String::as_str).unwrap_or(""))
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
