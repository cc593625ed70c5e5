//! The web config file of Prometheus exporters (`--web.config.file`, exporter-toolkit's
//! `web/tls_config.go`): TLS, basic authentication and response headers in one YAML file,
//! so a Prometheus scrape config written for node_exporter works against driftd unchanged.
//!
//! Field names, defaults and checks follow exporter-toolkit: unknown keys are errors
//! (`yaml.UnmarshalStrict`), relative paths are relative to the file's directory, TLS is on
//! when any of `cert`, `cert_file`, `key`, `key_file`, `client_ca`, `client_ca_file` or
//! `client_auth_type` is set, `basic_auth_users` values are bcrypt hashes, only five
//! response headers may be set. What rustls cannot do (TLS 1.0/1.1, CBC cipher suites,
//! P-521) and what would accept unverified client certificates is refused at start with
//! the key named; so is `client_allowed_sans` and `rate_limit`, not implemented here.
//!
//! Unlike exporter-toolkit, the file is read once at start (restart to change users or
//! TLS policy); the certificate and key files are re-read when they change, so a rotated
//! certificate (cert-manager) is served without a restart.

mod tls;

use axum::http::{HeaderName, HeaderValue};
use serde::de::IgnoredAny;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A web config file that cannot be used; names the file and the key.
#[derive(Debug, thiserror::Error)]
#[error("web config {file}: {problem}")]
pub struct WebConfigError {
    pub file: String,
    pub problem: String,
}

/// What the HTTP server does with a loaded web config file.
#[derive(Clone)]
pub struct WebConfig {
    /// TLS, when the file configures it.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// `basic_auth_users`: user name to bcrypt hash; empty means no authentication.
    pub users: BTreeMap<String, String>,
    /// `http_server_config.headers`, added to every answer.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// `http_server_config.http2`: offered over TLS only (exporter-toolkit: "HTTP/2 is only
    /// supported with TLS"); plain connections speak HTTP/1.1.
    pub http2: bool,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("headers", &self.headers)
            .field("http2", &self.http2)
            .finish()
    }
}

impl Default for WebConfig {
    /// No web config file: plain HTTP/1.1, no authentication, no extra headers.
    fn default() -> Self {
        WebConfig {
            tls: None,
            users: BTreeMap::new(),
            headers: Vec::new(),
            http2: true,
        }
    }
}

/// The file as exporter-toolkit's `Config` has it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct FileConfig {
    tls_server_config: TlsFileConfig,
    http_server_config: HttpServerConfig,
    basic_auth_users: BTreeMap<String, String>,
    rate_limit: Option<IgnoredAny>,
}

/// `tls_server_config`; an empty string is unset, as in Go.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct TlsFileConfig {
    cert: String,
    key: String,
    client_ca: String,
    cert_file: String,
    key_file: String,
    client_auth_type: String,
    client_ca_file: String,
    client_allowed_sans: Option<IgnoredAny>,
    cipher_suites: Vec<String>,
    curve_preferences: Vec<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    prefer_server_cipher_suites: Option<bool>,
}

impl TlsFileConfig {
    /// exporter-toolkit's `IsEnabled`: any TLS field set turns TLS on.
    fn is_enabled(&self) -> bool {
        [
            &self.cert,
            &self.cert_file,
            &self.key,
            &self.key_file,
            &self.client_ca,
            &self.client_ca_file,
            &self.client_auth_type,
        ]
        .iter()
        .any(|s| !s.is_empty())
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct HttpServerConfig {
    http2: bool,
    headers: BTreeMap<String, String>,
}

impl Default for HttpServerConfig {
    fn default() -> Self {
        HttpServerConfig {
            http2: true,
            headers: BTreeMap::new(),
        }
    }
}

/// exporter-toolkit's `extraHTTPHeaders`: the headers that may be set, with their allowed
/// values where the header is an enumeration.
const EXTRA_HEADERS: [(&str, &[&str]); 5] = [
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

impl WebConfig {
    /// Reads and checks `path`, loading the certificates it names.
    pub fn load(path: &Path) -> Result<WebConfig, WebConfigError> {
        let fail = |problem: String| WebConfigError {
            file: path.display().to_string(),
            problem,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| fail(format!("cannot read the file: {e}")))?;
        let file: FileConfig = if text.trim().is_empty() {
            FileConfig::default()
        } else {
            serde_saphyr::from_str_with_options(&text, yaml_options())
                .map_err(|e| fail(format!("not a web config: {e}")))?
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        file.into_web_config(dir).map_err(fail)
    }
}

/// Strict YAML as Go's `yaml.UnmarshalStrict` reads it (a key given twice is an error), and
/// errors that do not quote the file: it may hold a private key inline.
fn yaml_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.with_snippet = false;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    options
}

impl FileConfig {
    fn into_web_config(self, dir: &Path) -> Result<WebConfig, String> {
        if self.rate_limit.is_some() {
            return Err(
                "key `rate_limit` is not supported by driftd; bound load with \
                 [http] max_in_flight_requests instead"
                    .into(),
            );
        }
        for (user, hash) in &self.basic_auth_users {
            check_bcrypt(hash).map_err(|reason| {
                format!(
                    "key `basic_auth_users.{}`: {reason}",
                    driftd_core::text::escape_control(user)
                )
            })?;
        }
        let headers = check_headers(&self.http_server_config.headers)?;
        let http2 = self.http_server_config.http2;
        let tls = if self.tls_server_config.is_enabled() {
            Some(Arc::new(tls::server_config(
                &self.tls_server_config,
                dir,
                http2,
            )?))
        } else {
            None
        };
        Ok(WebConfig {
            tls,
            users: self.basic_auth_users,
            headers,
            http2,
        })
    }
}

/// Go's `bcrypt.Cost` check: the value must be a bcrypt hash, not a password.
fn check_bcrypt(hash: &str) -> Result<(), String> {
    hash.parse::<bcrypt::HashParts>()
        .map(|_| ())
        .map_err(|e| format!("not a bcrypt hash ({e}); hash the password, e.g. `htpasswd -nBC 10 \"\" | tr -d ':\\n'`"))
}

/// exporter-toolkit's `validateHeaderConfig`.
fn check_headers(
    headers: &BTreeMap<String, String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let key = format!("http_server_config.headers.{name}");
        let Some((_, allowed)) = EXTRA_HEADERS.iter().find(|(n, _)| n == name) else {
            let names: Vec<&str> = EXTRA_HEADERS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "key `{key}`: HTTP header {name:?} can not be configured; these can: {}",
                names.join(", ")
            ));
        };
        if !allowed.is_empty() && !allowed.contains(&value.as_str()) {
            return Err(format!(
                "key `{key}`: invalid value for {name}. Expected one of: {allowed:?}, but got: {value:?}"
            ));
        }
        if value.is_empty() {
            continue; // "Unset if blank."
        }
        let header_value = HeaderValue::from_str(value)
            .map_err(|_| format!("key `{key}`: not a valid header value"))?;
        let name = HeaderName::from_bytes(name.as_bytes()).expect("allowed header names");
        out.push((name, header_value));
    }
    Ok(out)
}

/// A path of the file, relative to its directory unless absolute (`config_util.JoinDir`).
fn join_dir(dir: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    }
}

#[cfg(test)]
mod tests;
