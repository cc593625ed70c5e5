//! kube-apiserver's audit events (`audit.k8s.io/v1` `Event` and `EventList`), reduced to the
//! metadata that tells who made a write: what `serve` takes in from the audit webhook and
//! from audit log files, and what the engine joins to the changes it reports.
//!
//! The shapes are those of `staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go`. The
//! request and response bodies an event may carry (levels `Request` and `RequestResponse`)
//! can hold Secret values: they are read past without being kept, except the response
//! object's `metadata.resourceVersion`, the version the write produced, which the exact
//! join needs.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The verbs of writes that change an object (`create`, `update`, `patch`, `delete`); reads,
/// watches and `deletecollection` (whose objects the event does not name) are not joined.
pub const WRITE_VERBS: [&str; 4] = ["create", "update", "patch", "delete"];

/// kube-apiserver's `validation.FieldManagerMaxLength`: a field manager derived from the
/// User-Agent is cut to this many bytes.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// A user as an audit event names it (`authentication.k8s.io/v1` `UserInfo`, less `uid`
/// and `extra`, which can carry credentials' details and are not shown).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AuditUser {
    pub username: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// The object an audit event is about (`ObjectReference`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditObject {
    /// `""` for the core group.
    #[serde(default)]
    pub api_group: String,
    /// The plural resource (`deployments`).
    #[serde(default)]
    pub resource: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
}

/// One successful write, as driftd keeps it from an audit event: metadata only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditRecord {
    pub audit_id: String,
    /// One of [`WRITE_VERBS`].
    pub verb: String,
    pub object: AuditObject,
    pub user: AuditUser,
    pub impersonated_user: Option<AuditUser>,
    pub source_ips: Vec<String>,
    pub user_agent: String,
    /// The field manager this write recorded in `managedFields`, as kube-apiserver derives it
    /// (`managerOrUserAgent`): the request's `fieldManager` parameter, else
    /// [`prefix_from_user_agent`].
    pub field_manager: String,
    pub received: Timestamp,
    /// When the response was complete (`stageTimestamp` of stage `ResponseComplete`).
    pub completed: Timestamp,
    /// The `metadata.resourceVersion` of the response object, when the event carries it
    /// (level `RequestResponse`): the version this write produced.
    pub resource_version: Option<String>,
}

/// An audit event as sent, with only the fields read declared: serde reads past the rest,
/// `requestObject` and all of `responseObject` but its resourceVersion included.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireEvent {
    #[serde(default, rename = "auditID")]
    audit_id: String,
    #[serde(default)]
    stage: String,
    #[serde(default, rename = "requestURI")]
    request_uri: String,
    #[serde(default)]
    verb: String,
    #[serde(default)]
    user: AuditUser,
    #[serde(default)]
    impersonated_user: Option<AuditUser>,
    #[serde(default, rename = "sourceIPs")]
    source_ips: Vec<String>,
    #[serde(default)]
    user_agent: String,
    #[serde(default)]
    object_ref: Option<AuditObject>,
    #[serde(default)]
    response_status: Option<WireStatus>,
    #[serde(default)]
    response_object: Option<WireObject>,
    request_received_timestamp: Option<Timestamp>,
    stage_timestamp: Option<Timestamp>,
}

#[derive(Debug, Deserialize)]
struct WireStatus {
    #[serde(default)]
    code: Option<u16>,
}

#[derive(Debug, Deserialize)]
struct WireObject {
    #[serde(default)]
    metadata: Option<WireMeta>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    #[serde(default)]
    resource_version: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireList {
    #[serde(default)]
    kind: String,
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    items: Vec<WireEvent>,
}

/// A body or line that is not an audit event (list); the message says what is wrong and
/// never quotes the input (it may hold Secret values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuditParseError(String);

/// The writes of an `audit.k8s.io/v1` `EventList` body, as the webhook backend posts it.
/// Events of other stages, reads, failed writes and events naming no object are left out.
pub fn parse_event_list(body: &[u8]) -> Result<Vec<AuditRecord>, AuditParseError> {
    let list: WireList = serde_json::from_slice(body).map_err(|e| {
        AuditParseError(format!(
            "not an audit.k8s.io/v1 EventList (JSON error at line {} column {}: {})",
            e.line(),
            e.column(),
            classify(&e)
        ))
    })?;
    if list.kind != "EventList" || !list.api_version.starts_with("audit.k8s.io/") {
        return Err(AuditParseError(format!(
            "not an audit.k8s.io/v1 EventList (kind {:?}, apiVersion {:?})",
            list.kind, list.api_version
        )));
    }
    Ok(list.items.into_iter().filter_map(record).collect())
}

/// The write of one JSON line of an audit log (`--audit-log-format=json`: one `Event` a
/// line); `Ok(None)` for an event that is not a successful write.
pub fn parse_event_line(line: &[u8]) -> Result<Option<AuditRecord>, AuditParseError> {
    let event: WireEvent = serde_json::from_slice(line).map_err(|e| {
        AuditParseError(format!(
            "not an audit event (JSON error at column {}: {})",
            e.column(),
            classify(&e)
        ))
    })?;
    Ok(record(event))
}

/// What kind of JSON error, without serde's message (which may quote a value).
fn classify(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "read error",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "a field has the wrong type",
        serde_json::error::Category::Eof => "unexpected end of input",
    }
}

/// The record of a successful write's `ResponseComplete` event, if it is one.
fn record(event: WireEvent) -> Option<AuditRecord> {
    if event.stage != "ResponseComplete" || !WRITE_VERBS.contains(&event.verb.as_str()) {
        return None;
    }
    let code = event.response_status.and_then(|s| s.code)?;
    if !(200..300).contains(&code) {
        return None;
    }
    let object = event.object_ref.filter(|o| !o.name.is_empty())?;
    let completed = event.stage_timestamp?;
    let received = event.request_received_timestamp.unwrap_or(completed);
    let field_manager = field_manager_param(&event.request_uri)
        .unwrap_or_else(|| prefix_from_user_agent(&event.user_agent));
    Some(AuditRecord {
        audit_id: event.audit_id,
        verb: event.verb,
        object: AuditObject {
            namespace: object.namespace.filter(|n| !n.is_empty()),
            subresource: object.subresource.filter(|s| !s.is_empty()),
            ..object
        },
        user: event.user,
        impersonated_user: event.impersonated_user.filter(|u| !u.username.is_empty()),
        source_ips: event.source_ips,
        user_agent: event.user_agent,
        field_manager,
        received,
        completed,
        resource_version: event
            .response_object
            .and_then(|o| o.metadata)
            .and_then(|m| m.resource_version)
            .filter(|rv| !rv.is_empty()),
    })
}

/// The `fieldManager` query parameter of a request URI, if set and not empty.
fn field_manager_param(uri: &str) -> Option<String> {
    let query = uri.split_once('?')?.1;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == "fieldManager")
        .map(|(_, v)| percent_decode(v))
        .filter(|v| !v.is_empty())
}

/// `%XX` and `+` of a query value, as Go's `url.QueryUnescape`.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len()
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit() =>
            {
                let hex = |b: u8| (b as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The default field manager kube-apiserver derives from a User-Agent
/// (`prefixFromUserAgent`, staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go):
/// the text before the first `/`, without unprintable characters, cut to 128 bytes.
pub fn prefix_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
