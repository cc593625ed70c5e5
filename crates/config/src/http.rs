//! `[http]`: the HTTP server's limits, the exporter-toolkit web config, and who may read
//! what (`auth`).

use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// `[http]`: the HTTP server's limits, so clients that connect and stay silent, send
/// headers slowly, or never read their answer cannot take every connection (or file
/// descriptor) and starve `/healthz`; and the optional TLS and basic-auth web config.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// A client must send a request's complete headers within this time of connecting (or,
    /// on a kept-alive HTTP/1.1 connection, of the previous answer), and finish the TLS
    /// handshake within it.
    pub header_read_timeout_seconds: f64,
    /// A connection with no request in progress is closed after this long.
    pub idle_timeout_seconds: f64,
    /// One request, from its headers to the last byte of the answer; a handler that takes
    /// longer answers 503.
    pub request_timeout_seconds: f64,
    /// Open connections at most; kept below the process's file-descriptor limit. At the cap
    /// a new connection closes the longest-idle one, so silent clients cannot lock out a
    /// health probe.
    pub max_connections: usize,
    /// Requests handled at once; more are answered 503 at once. `/healthz` and `/readyz`
    /// are not counted.
    pub max_in_flight_requests: usize,
    /// Prometheus exporter-toolkit web config file (`--web.config.file`): TLS, basic auth,
    /// response headers. Relative paths inside it are relative to its directory.
    pub web_config_file: Option<PathBuf>,
    /// Whether authentication (`basic_auth_users`, or `auth = "kubernetes"`) also guards
    /// `/healthz` and `/readyz`. Off by default: kubelet probes cannot send credentials
    /// without writing them into the Pod spec.
    pub health_requires_auth: bool,
    /// Who may read what: `"none"` leaves it to the web config (`basic_auth_users`, or
    /// nobody is asked); `"kubernetes"` asks the API server, as kube-rbac-proxy does in
    /// front of in-cluster exporters, so RBAC grants `/drift` and `/metrics` separately.
    pub auth: HttpAuth,
    /// How long a TokenReview or SubjectAccessReview answer is reused (0: ask every time),
    /// so a scrape every 15 s does not cost two API requests each; also how long a revoked
    /// token or permission may still pass.
    pub auth_cache_seconds: f64,
}

/// `[http] auth`.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum HttpAuth {
    #[default]
    None,
    /// A bearer token authenticated by a TokenReview, the request authorized by a
    /// SubjectAccessReview for its path (a non-resource URL) and verb.
    Kubernetes,
}

impl HttpConfig {
    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.header_read_timeout_seconds)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.idle_timeout_seconds)
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.request_timeout_seconds)
    }

    pub fn auth_cache(&self) -> Duration {
        Duration::from_secs_f64(self.auth_cache_seconds)
    }

    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        for (key, value) in [
            (
                "http.header_read_timeout_seconds",
                self.header_read_timeout_seconds,
            ),
            ("http.idle_timeout_seconds", self.idle_timeout_seconds),
            ("http.request_timeout_seconds", self.request_timeout_seconds),
        ] {
            if !(value > 0.0 && value <= 3600.0) {
                return Err((key, "must be greater than 0 and at most 3600".into()));
            }
        }
        if self.max_connections < MIN_CONNECTIONS {
            return Err((
                "http.max_connections",
                format!("must be at least {MIN_CONNECTIONS}"),
            ));
        }
        if self.max_in_flight_requests == 0 {
            return Err(("http.max_in_flight_requests", "must be at least 1".into()));
        }
        if !(self.auth_cache_seconds >= 0.0 && self.auth_cache_seconds <= 3600.0) {
            return Err((
                "http.auth_cache_seconds",
                "must be between 0 and 3600".into(),
            ));
        }
        Ok(())
    }
}

/// Fewer connections than this cannot serve a scrape, a probe and an engineer at once.
pub const MIN_CONNECTIONS: usize = 8;

impl Default for HttpConfig {
    /// Go's `http.Server` has no limits by default; these are what a small daemon needs:
    /// probes every few seconds, a scrape every 15-60 s, people now and then.
    fn default() -> Self {
        HttpConfig {
            header_read_timeout_seconds: 10.0,
            idle_timeout_seconds: 60.0,
            request_timeout_seconds: 30.0,
            max_connections: 512,
            max_in_flight_requests: 64,
            web_config_file: None,
            health_requires_auth: false,
            auth: HttpAuth::None,
            // k8s.io/apiserver's delegated authentication and authorization cache their
            // answers 10 s by default (kube-rbac-proxy keeps allowed ones 5 min).
            auth_cache_seconds: 10.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    fn load(text: &str, env: &[(&str, &str)]) -> Result<Config, String> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
        Config::load_with_env(Some(file.path()), |k| {
            env.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn auth_comes_from_the_file_or_the_environment() {
        assert_eq!(load("", &[]).unwrap().http.auth, HttpAuth::None);
        let file = load(
            "[http]\nauth = \"kubernetes\"\nauth_cache_seconds = 0\n",
            &[],
        )
        .unwrap();
        assert_eq!(file.http.auth, HttpAuth::Kubernetes);
        assert_eq!(file.http.auth_cache(), Duration::ZERO);
        let env = load("", &[("DRIFTD_HTTP_AUTH", "kubernetes")]).unwrap();
        assert_eq!(env.http.auth, HttpAuth::Kubernetes);
    }

    #[test]
    fn unknown_auth_modes_and_bad_cache_times_name_the_key() {
        let err = load("[http]\nauth = \"oidc\"\n", &[]).unwrap_err();
        assert!(err.contains("key `http.auth`"), "{err}");
        let err = load("", &[("DRIFTD_HTTP_AUTH", "basic")]).unwrap_err();
        assert!(err.contains("environment DRIFTD_HTTP_AUTH"), "{err}");
        let err = load("[http]\nauth_cache_seconds = -1\n", &[]).unwrap_err();
        assert!(err.contains("key `http.auth_cache_seconds`"), "{err}");
    }
}
