//! The web config file checked as exporter-toolkit checks it (its `web/testdata` cases where
//! they apply), with certificates made here.

use super::*;
use std::io::Write;

/// A directory with `server.crt`/`server.key` (self-signed for localhost) and `web.yml`.
struct Dir {
    dir: tempfile::TempDir,
}

impl Dir {
    fn new() -> Dir {
        let dir = tempfile::tempdir().unwrap();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        std::fs::write(dir.path().join("server.crt"), cert.cert.pem()).unwrap();
        std::fs::write(
            dir.path().join("server.key"),
            cert.signing_key.serialize_pem(),
        )
        .unwrap();
        std::fs::write(dir.path().join("ca.crt"), cert.cert.pem()).unwrap();
        Dir { dir }
    }

    fn load(&self, yaml: &str) -> Result<WebConfig, WebConfigError> {
        let path = self.dir.path().join("web.yml");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(yaml.as_bytes())
            .unwrap();
        WebConfig::load(&path)
    }

    fn problem(&self, yaml: &str) -> String {
        match self.load(yaml) {
            Ok(config) => panic!("accepted: {config:?}"),
            Err(err) => err.to_string(),
        }
    }
}

const TLS: &str = "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n";

#[test]
fn an_empty_file_is_plain_http_without_authentication() {
    let dir = Dir::new();
    let config = dir.load("").unwrap();
    assert!(config.tls.is_none() && config.users.is_empty() && config.headers.is_empty());
    let config = dir
        .load("tls_server_config: {}\nbasic_auth_users: {}\n")
        .unwrap();
    assert!(config.tls.is_none());
}

#[test]
fn tls_with_relative_paths_and_go_defaults() {
    let dir = Dir::new();
    let config = dir.load(TLS).unwrap();
    let tls = config.tls.unwrap();
    assert_eq!(tls.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
    assert!(
        tls.ignore_client_order,
        "prefer_server_cipher_suites defaults to true"
    );
    let config = dir
        .load(&format!("{TLS}http_server_config:\n  http2: false\n"))
        .unwrap();
    assert_eq!(config.tls.unwrap().alpn_protocols, [b"http/1.1".to_vec()]);
}

#[test]
fn every_supported_key_loads() {
    let dir = Dir::new();
    let yaml = format!(
        "{TLS}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  \
         min_version: TLS12\n  max_version: TLS13\n  prefer_server_cipher_suites: false\n  \
         cipher_suites:\n    - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\n    \
         - TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256\n    - TLS_AES_128_GCM_SHA256\n  \
         curve_preferences: [X25519, CurveP256, CurveP384]\n\
         http_server_config:\n  headers:\n    X-Frame-Options: deny\n    \
         Strict-Transport-Security: max-age=31536000\n\
         basic_auth_users:\n  alice: $2y$10$qRTBuFoULoYNA7AQ/F3ck.trZBPyjV64.oA4ZsSBCIWvXuvQlQTuu\n"
    );
    let config = dir.load(&yaml).unwrap();
    assert!(!config.tls.unwrap().ignore_client_order);
    assert_eq!(config.users.len(), 1);
    let names: Vec<&str> = config.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["strict-transport-security", "x-frame-options"]);
}

#[test]
fn errors_name_the_key_as_exporter_toolkit_does() {
    let dir = Dir::new();
    for (yaml, expected) in [
        // web_config_junk_key.yml
        (
            "tls_server_config:\n  cert_filse: server.crt\n",
            "unknown field `cert_filse`, expected one of cert, key",
        ),
        (
            "basic_auth_users:\n  a: $2y$10$qRTBuFoULoYNA7AQ/F3ck.trZBPyjV64.oA4ZsSBCIWvXuvQlQTuu\n  \
             a: $2y$10$qRTBuFoULoYNA7AQ/F3ck.trZBPyjV64.oA4ZsSBCIWvXuvQlQTuu\n",
            "duplicate",
        ),
        ("tls_server_config:\n  key_file: server.key\n", "missing one of cert or cert_file"),
        ("tls_server_config:\n  cert_file: server.crt\n", "missing one of key or key_file"),
        (
            "tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n",
            "failed to read cert_file",
        ),
        (
            "basic_auth_users:\n  alice: hunter2\n",
            "key `basic_auth_users.alice`: not a bcrypt hash",
        ),
        (
            "http_server_config:\n  headers:\n    Content-Type: foo\n",
            "HTTP header \"Content-Type\" can not be configured",
        ),
        (
            "http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
            "invalid value for X-Frame-Options",
        ),
        ("rate_limit:\n  interval: 1s\n  burst: 5\n", "key `rate_limit` is not supported"),
    ] {
        let problem = dir.problem(yaml);
        assert!(problem.contains(expected), "{yaml}: {problem}");
        assert!(problem.contains("web.yml"), "names the file: {problem}");
    }
}

#[test]
fn what_rustls_cannot_do_is_refused_naming_the_key() {
    let dir = Dir::new();
    for (extra, key, expected) in [
        ("  min_version: TLS10\n", "min_version", "not supported"),
        (
            "  max_version: TLS14\n",
            "max_version",
            "unknown TLS version: TLS14",
        ),
        (
            "  min_version: TLS13\n  max_version: TLS12\n",
            "min_version",
            "above max_version",
        ),
        (
            "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA]\n",
            "cipher_suites",
            "not supported",
        ),
        (
            "  cipher_suites: [TLS_MADE_UP]\n",
            "cipher_suites",
            "unknown cipher: TLS_MADE_UP",
        ),
        // web_config_noAuth_noHTTP2Cipher.bad.yml
        (
            "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]\n",
            "cipher_suites",
            "HTTP/2-required",
        ),
        (
            "  curve_preferences: [CurveP521]\n",
            "curve_preferences",
            "CurveP521",
        ),
        (
            "  curve_preferences: [CurveP999]\n",
            "curve_preferences",
            "unknown curve",
        ),
        (
            "  client_auth_type: RequireAnyClientCert\n",
            "client_auth_type",
            "without verifying",
        ),
        (
            "  client_auth_type: Sometimes\n",
            "client_auth_type",
            "invalid ClientAuth",
        ),
        (
            "  client_auth_type: RequireAndVerifyClientCert\n",
            "client_auth_type",
            "needs client_ca_file",
        ),
        (
            "  client_allowed_sans: [a.example]\n",
            "client_allowed_sans",
            "not supported",
        ),
    ] {
        let problem = dir.problem(&format!("{TLS}{extra}"));
        assert!(
            problem.contains(&format!("tls_server_config.{key}")) && problem.contains(expected),
            "{extra}: {problem}"
        );
    }
    // web_config_noAuth.bad.yml: a client CA without a policy.
    let problem = dir.problem(&format!("{TLS}  client_ca_file: ca.crt\n"));
    assert!(
        problem.contains("without a Client Auth Policy"),
        "{problem}"
    );
    // The same suites without HTTP/2 are fine, as in Go.
    dir.load(&format!(
        "{TLS}  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384]\n\
         http_server_config:\n  http2: false\n"
    ))
    .unwrap();
}

#[test]
fn a_missing_file_is_named() {
    let err = WebConfig::load(Path::new("/nonexistent/web.yml")).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/web.yml"), "{err}");
}
