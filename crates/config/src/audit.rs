//! `[audit]`: the API server's audit events, taken in to say who made each change.

use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// `[audit]`: where audit events come from (the webhook `POST /audit`, an audit log file),
/// who may post them, the limits of the webhook, and how long events wait to be joined to
/// the change they made. Off until a webhook credential or a log path is set.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    /// A file holding the bearer token kube-apiserver's webhook backend sends (the `token`
    /// of the user in its `--audit-webhook-config-file`). Read at start.
    pub webhook_token_file: Option<PathBuf>,
    /// Also accept callers that presented a TLS client certificate the web config's
    /// `client_ca_file` verified (its `client_auth_type` must ask for one).
    pub webhook_client_certificates: bool,
    /// A kube-apiserver audit log (`--audit-log-path`, `--audit-log-format=json`) followed
    /// from its end; a rotated or truncated file is reopened.
    pub log_path: Option<PathBuf>,
    /// The largest `POST /audit` body taken (413 above).
    pub max_body_bytes: usize,
    /// `POST /audit` requests a second on average (a token bucket; 429 above).
    pub max_requests_per_second: f64,
    /// Requests that may come at once before `max_requests_per_second` applies.
    pub burst: u32,
    /// How long an audit event is kept to be joined to a change seen later.
    pub retention_seconds: f64,
    /// Audit events kept at most (the oldest go first): bounds the memory whatever the
    /// API server sends.
    pub max_events: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            webhook_token_file: None,
            webhook_client_certificates: false,
            log_path: None,
            max_body_bytes: 4 << 20,
            max_requests_per_second: 50.0,
            burst: 100,
            retention_seconds: 600.0,
            max_events: 50_000,
        }
    }
}

impl AuditConfig {
    /// Whether `POST /audit` is served.
    pub fn webhook(&self) -> bool {
        self.webhook_token_file.is_some() || self.webhook_client_certificates
    }

    /// Whether audit events are taken in at all.
    pub fn enabled(&self) -> bool {
        self.webhook() || self.log_path.is_some()
    }

    pub fn retention(&self) -> Duration {
        Duration::from_secs_f64(self.retention_seconds)
    }

    /// The webhook token, read from `webhook_token_file` (surrounding whitespace dropped, as
    /// kube-apiserver's token files are read). The error names the file, never its content.
    pub fn webhook_token(&self) -> Result<Option<String>, String> {
        let Some(path) = &self.webhook_token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let token = text.trim();
        if token.is_empty() {
            return Err(format!("{} holds no token", path.display()));
        }
        Ok(Some(token.to_string()))
    }

    /// Why the section is invalid: (key, reason).
    pub(super) fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if !(1024..=(256 << 20)).contains(&self.max_body_bytes) {
            return Err(("audit.max_body_bytes", "must be between 1024 and 268435456"));
        }
        if !(self.max_requests_per_second > 0.0 && self.max_requests_per_second <= 100_000.0) {
            return Err((
                "audit.max_requests_per_second",
                "must be above 0 and at most 100000",
            ));
        }
        if self.burst == 0 {
            return Err(("audit.burst", "must be at least 1"));
        }
        if !(1.0..=86_400.0).contains(&self.retention_seconds) {
            return Err(("audit.retention_seconds", "must be between 1 and 86400"));
        }
        if !(1..=10_000_000).contains(&self.max_events) {
            return Err(("audit.max_events", "must be between 1 and 10000000"));
        }
        Ok(())
    }
}
