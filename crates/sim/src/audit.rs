//! Audit events of the simulator's writes, sent as kube-apiserver's audit backends send
//! them: batches of `audit.k8s.io/v1` `EventList`s posted to a webhook named by a kubeconfig
//! file (`--audit-webhook-config-file`: the cluster's `server` is the URL, the user's
//! `token` the bearer token), and one `Event` a line appended to a log file
//! (`--audit-log-path` with `--audit-log-format=json`).
//!
//! Modelled: one `ResponseComplete` event per create, update, patch and delete (subresources
//! included, failures with their code), the user the request's bearer token authenticates
//! as (`system:anonymous` otherwise), the peer address as `sourceIPs`, the User-Agent, and
//! a policy of one level for Secrets and one for everything else (`Metadata`: no bodies;
//! `RequestResponse`: the request and response objects). Reads are not audited (a policy
//! with `None` for them). Not modelled: the other stages, policy files, `Request` level
//! (taken as `Metadata`), batching by size in bytes.

use jiff::Timestamp;
use serde::Deserialize;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::mpsc;

/// The verbs audited: writes that name one object.
pub const WRITE_VERBS: [&str; 4] = ["create", "update", "patch", "delete"];

/// How long a batch waits for more events (kube-apiserver's `--audit-webhook-batch-max-wait`
/// is 30 s; tests want their events soon).
const BATCH_WAIT: Duration = Duration::from_millis(100);

/// Events a batch holds at most (`--audit-webhook-batch-max-size`'s default).
const BATCH_MAX: usize = 400;

/// A policy level (`audit.k8s.io/v1` `Level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
pub enum Level {
    None,
    Metadata,
    /// Taken as `Metadata`.
    Request,
    #[default]
    RequestResponse,
}

impl Level {
    fn as_str(&self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata | Level::Request => "Metadata",
            Level::RequestResponse => "RequestResponse",
        }
    }

    pub fn parse(text: &str) -> Result<Level, String> {
        match text {
            "None" => Ok(Level::None),
            "Metadata" => Ok(Level::Metadata),
            "Request" => Ok(Level::Request),
            "RequestResponse" => Ok(Level::RequestResponse),
            other => Err(format!(
                "audit level {other:?} is not None, Metadata, Request or RequestResponse"
            )),
        }
    }
}

/// Where audit events go and at which level.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuditOptions {
    /// A kubeconfig naming the webhook, as kube-apiserver's `--audit-webhook-config-file`.
    pub webhook_config_file: Option<PathBuf>,
    /// A file events are appended to, one JSON `Event` a line.
    pub log_path: Option<PathBuf>,
    /// The level of every write but Secrets'.
    #[serde(default)]
    pub level: Level,
    /// The level of writes of Secrets (`Metadata` when absent: their bodies hold values).
    #[serde(default)]
    pub secrets_level: Option<Level>,
}

/// The webhook a kubeconfig names.
#[derive(Debug, Clone)]
struct Webhook {
    url: String,
    token: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Kubeconfig {
    #[serde(default)]
    clusters: Vec<NamedCluster>,
    #[serde(default)]
    users: Vec<NamedUser>,
    #[serde(default)]
    contexts: Vec<NamedContext>,
    #[serde(default, rename = "current-context")]
    current_context: String,
}

#[derive(Debug, Deserialize)]
struct NamedCluster {
    name: String,
    cluster: ClusterFields,
}

#[derive(Debug, Deserialize)]
struct ClusterFields {
    server: String,
}

#[derive(Debug, Deserialize)]
struct NamedUser {
    name: String,
    #[serde(default)]
    user: UserFields,
}

#[derive(Debug, Default, Deserialize)]
struct UserFields {
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<PathBuf>,
}

#[derive(Debug, Deserialize)]
struct NamedContext {
    name: String,
    context: ContextFields,
}

#[derive(Debug, Deserialize)]
struct ContextFields {
    cluster: String,
    #[serde(default)]
    user: String,
}

/// The webhook of kubeconfig `path`: its current context's cluster and user (the first
/// of each without a current context). Errors name the file.
fn read_webhook(path: &Path) -> Result<Webhook, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let config: Kubeconfig = serde_saphyr::from_str(&text)
        .map_err(|e| format!("{}: not a kubeconfig: {e}", path.display()))?;
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == config.current_context)
        .map(|c| &c.context);
    let cluster = match context {
        Some(c) => config.clusters.iter().find(|k| k.name == c.cluster),
        None => config.clusters.first(),
    }
    .ok_or_else(|| format!("{}: no cluster (its server is the webhook)", path.display()))?;
    let user = match context {
        Some(c) => config.users.iter().find(|u| u.name == c.user),
        None => config.users.first(),
    };
    let token = match user.map(|u| &u.user) {
        Some(UserFields {
            token: Some(token), ..
        }) => Some(token.clone()),
        Some(UserFields {
            token_file: Some(file),
            ..
        }) => Some(
            std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read tokenFile {}: {e}", file.display()))?
                .trim()
                .to_string(),
        ),
        _ => None,
    };
    Ok(Webhook {
        url: cluster.cluster.server.clone(),
        token,
    })
}

/// The audit backends, once configured.
#[derive(Default)]
pub struct Auditor {
    active: Mutex<Option<Active>>,
}

struct Active {
    level: Level,
    secrets_level: Level,
    events: mpsc::UnboundedSender<Value>,
}

/// One write, as the HTTP front saw it.
pub struct AuditedWrite<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub version: &'a str,
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    pub subresource: Option<&'a str>,
    pub request_uri: &'a str,
    pub user: Value,
    pub source_ip: String,
    pub user_agent: &'a str,
    pub received: Timestamp,
    pub code: u16,
    pub request: Option<&'a [u8]>,
    pub response: Option<&'a [u8]>,
}

impl Auditor {
    /// Sends events as `options` say from now on (replacing earlier options; the earlier
    /// backends send what they hold, then stop). Errors name the webhook config file.
    pub fn configure(&self, options: &AuditOptions) -> Result<(), String> {
        let webhook = options
            .webhook_config_file
            .as_deref()
            .map(read_webhook)
            .transpose()?;
        let (events, queue) = mpsc::unbounded_channel();
        tokio::spawn(send(queue, webhook, options.log_path.clone()));
        *self.active.lock().unwrap_or_else(|e| e.into_inner()) = Some(Active {
            level: options.level,
            secrets_level: options.secrets_level.unwrap_or(Level::Metadata),
            events,
        });
        Ok(())
    }

    /// Whether writes are audited.
    pub fn on(&self) -> bool {
        self.active
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Audits `write`, completed now.
    pub fn record(&self, write: AuditedWrite<'_>) {
        let guard = self.active.lock().unwrap_or_else(|e| e.into_inner());
        let Some(active) = guard.as_ref() else {
            return;
        };
        let level = if write.group.is_empty() && write.resource == "secrets" {
            active.secrets_level
        } else {
            active.level
        };
        if level == Level::None {
            return;
        }
        let _ = active.events.send(event(&write, level));
    }
}

/// The `audit.k8s.io/v1` `Event` of `w` at `level`.
fn event(w: &AuditedWrite<'_>, level: Level) -> Value {
    let response: Option<Value> = w.response.and_then(|b| serde_json::from_slice(b).ok());
    // kube-apiserver completes the reference from the object (a create's name).
    let name = w.name.map(str::to_string).or_else(|| {
        response
            .as_ref()
            .and_then(|r| r.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let mut object_ref = json!({"resource": w.resource, "apiVersion": w.version});
    if !w.group.is_empty() {
        object_ref["apiGroup"] = json!(w.group);
    }
    if let Some(ns) = w.namespace {
        object_ref["namespace"] = json!(ns);
    }
    if let Some(name) = name {
        object_ref["name"] = json!(name);
    }
    if let Some(sub) = w.subresource {
        object_ref["subresource"] = json!(sub);
    }
    let micro = |t: Timestamp| t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string();
    let mut e = json!({
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": level.as_str(),
        "auditID": uuid(),
        "stage": "ResponseComplete",
        "requestURI": w.request_uri,
        "verb": w.verb,
        "user": w.user,
        "sourceIPs": [w.source_ip],
        "userAgent": w.user_agent,
        "objectRef": object_ref,
        "responseStatus": {"metadata": {}, "code": w.code},
        "requestReceivedTimestamp": micro(w.received),
        "stageTimestamp": micro(Timestamp::now()),
        "annotations": {"authorization.k8s.io/decision": "allow"},
    });
    if level == Level::RequestResponse {
        if let Some(request) = w
            .request
            .and_then(|b| serde_json::from_slice::<Value>(b).ok())
        {
            e["requestObject"] = request;
        }
        if let Some(response) = response {
            e["responseObject"] = response;
        }
    }
    e
}

/// A random UUID v4 in its text form, as audit IDs are.
fn uuid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// Sends the queued events in batches until the auditor is reconfigured or dropped.
async fn send(
    mut queue: mpsc::UnboundedReceiver<Value>,
    webhook: Option<Webhook>,
    log_path: Option<PathBuf>,
) {
    let client = webhook.as_ref().map(|_| reqwest::Client::new());
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + BATCH_WAIT;
        while batch.len() < BATCH_MAX {
            match tokio::time::timeout_at(deadline, queue.recv()).await {
                Ok(Some(e)) => batch.push(e),
                _ => break,
            }
        }
        if let Some(path) = &log_path {
            append_lines(path, &batch);
        }
        if let (Some(webhook), Some(client)) = (&webhook, &client) {
            post(client, webhook, batch).await;
        }
    }
}

fn append_lines(path: &Path, batch: &[Value]) {
    let mut text = String::new();
    for e in batch {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(err) = written {
        tracing::warn!(path = %path.display(), error = %err, "cannot write the audit log");
    }
}

/// Posts one batch, retrying as the webhook backend does on errors and 429/5xx (a few
/// times, with backoff), then dropping it.
async fn post(client: &reqwest::Client, webhook: &Webhook, batch: Vec<Value>) {
    let body = json!({
        "kind": "EventList",
        "apiVersion": "audit.k8s.io/v1",
        "metadata": {},
        "items": batch,
    })
    .to_string();
    let mut wait = Duration::from_millis(100);
    for _ in 0..5 {
        let mut request = client
            .post(&webhook.url)
            .header("content-type", "application/json")
            .body(body.clone());
        if let Some(token) = &webhook.token {
            request = request.bearer_auth(token);
        }
        match request.send().await {
            Ok(r) if r.status().is_success() => return,
            Ok(r) if r.status().as_u16() == 429 || r.status().is_server_error() => {
                tracing::debug!(status = %r.status(), "audit webhook busy; retrying");
            }
            Ok(r) => {
                tracing::warn!(status = %r.status(), url = %webhook.url, "audit webhook refused a batch");
                return;
            }
            Err(err) => tracing::debug!(error = %err, "audit webhook unreachable; retrying"),
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
    }
    tracing::warn!(url = %webhook.url, "audit batch dropped after retries");
}

#[cfg(test)]
mod tests;
