//! `tls_server_config` as a rustls `ServerConfig` (ring provider, as kube uses), with Go's
//! names and defaults: TLS 1.2 to 1.3, `cipher_suites` for TLS 1.2 only (Go ignores the
//! list for TLS 1.3), the server's order of preference, client certificates verified
//! against `client_ca_file`.

use super::{join_dir, TlsFileConfig};
use rustls::crypto::{ring, CryptoProvider, SupportedKxGroup};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, SupportedCipherSuite, SupportedProtocolVersion};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Go's cipher suite names (`tls.CipherSuites()`) and the rustls suite of each; `None` for
/// those rustls does not implement (CBC, RSA key exchange).
const CIPHER_SUITES: [(&str, Option<SupportedCipherSuite>); 17] = {
    use ring::cipher_suite as cs;
    [
        ("TLS_AES_128_GCM_SHA256", Some(cs::TLS13_AES_128_GCM_SHA256)),
        ("TLS_AES_256_GCM_SHA384", Some(cs::TLS13_AES_256_GCM_SHA384)),
        (
            "TLS_CHACHA20_POLY1305_SHA256",
            Some(cs::TLS13_CHACHA20_POLY1305_SHA256),
        ),
        (
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            Some(cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
        ),
        (
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            Some(cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384),
        ),
        (
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            Some(cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256),
        ),
        (
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            Some(cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384),
        ),
        (
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            Some(cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256),
        ),
        (
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            Some(cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256),
        ),
        ("TLS_RSA_WITH_AES_128_CBC_SHA", None),
        ("TLS_RSA_WITH_AES_256_CBC_SHA", None),
        ("TLS_RSA_WITH_AES_128_GCM_SHA256", None),
        ("TLS_RSA_WITH_AES_256_GCM_SHA384", None),
        ("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", None),
        ("TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", None),
        ("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", None),
        ("TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", None),
    ]
};

/// Suites Go's HTTP/2 server requires one of when `cipher_suites` is set (RFC 7540 9.2.2).
const HTTP2_REQUIRED: [&str; 2] = [
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
];

/// Builds the server's TLS configuration; errors name the key.
pub(super) fn server_config(
    c: &TlsFileConfig,
    dir: &Path,
    http2: bool,
) -> Result<rustls::ServerConfig, String> {
    let cert = match (c.cert_file.as_str(), c.cert.as_str()) {
        ("", "") => return Err("missing one of cert or cert_file".into()),
        ("", inline) => Pem::Inline(inline.to_string()),
        (file, _) => Pem::File("cert_file", join_dir(dir, file)),
    };
    let key = match (c.key_file.as_str(), c.key.as_str()) {
        ("", "") => return Err("missing one of key or key_file".into()),
        ("", inline) => Pem::Inline(inline.to_string()),
        (file, _) => Pem::File("key_file", join_dir(dir, file)),
    };
    if c.client_allowed_sans.is_some() {
        return Err(
            "key `tls_server_config.client_allowed_sans` is not supported by driftd; \
             restrict clients with client_ca_file and RequireAndVerifyClientCert"
                .into(),
        );
    }
    let versions = versions(c)?;
    let provider = Arc::new(provider(c, &versions, http2)?);
    let resolver = Reloading::new(cert, key, provider.clone())?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("key `tls_server_config`: {e}"))?;
    let mut config = match client_verifier(c, dir, &provider)? {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    }
    .with_cert_resolver(Arc::new(resolver));
    config.ignore_client_order = c.prefer_server_cipher_suites.unwrap_or(true);
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(config)
}

/// `min_version`..=`max_version` (default TLS12..=TLS13).
fn versions(c: &TlsFileConfig) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    let parse = |key: &str, value: Option<&str>, default: u8| -> Result<u8, String> {
        match value {
            None => Ok(default),
            Some("TLS13") => Ok(13),
            Some("TLS12") => Ok(12),
            Some(old @ ("TLS10" | "TLS11")) => Err(format!(
                "key `tls_server_config.{key}`: {old} is not supported (driftd's TLS library, \
                 rustls, implements TLS 1.2 and 1.3 only)"
            )),
            Some(other) => Err(format!(
                "key `tls_server_config.{key}`: unknown TLS version: {other} \
                 (known: TLS10, TLS11, TLS12, TLS13)"
            )),
        }
    };
    let min = parse("min_version", c.min_version.as_deref(), 12)?;
    let max = parse("max_version", c.max_version.as_deref(), 13)?;
    if min > max {
        return Err(format!(
            "key `tls_server_config.min_version`: TLS{min} is above max_version TLS{max}"
        ));
    }
    Ok(
        [(12, &rustls::version::TLS12), (13, &rustls::version::TLS13)]
            .into_iter()
            .filter(|(v, _)| (min..=max).contains(v))
            .map(|(_, version)| version)
            .collect(),
    )
}

/// The ring provider narrowed to `cipher_suites` (TLS 1.2) and `curve_preferences`.
fn provider(
    c: &TlsFileConfig,
    versions: &[&'static SupportedProtocolVersion],
    http2: bool,
) -> Result<CryptoProvider, String> {
    let mut provider = ring::default_provider();
    if !c.cipher_suites.is_empty() {
        let mut tls12 = Vec::new();
        for name in &c.cipher_suites {
            match CIPHER_SUITES.iter().find(|(n, _)| n == name) {
                None => {
                    return Err(format!(
                        "key `tls_server_config.cipher_suites`: unknown cipher: {name}"
                    ))
                }
                Some((_, None)) => {
                    return Err(format!(
                        "key `tls_server_config.cipher_suites`: {name} is not supported by \
                         driftd's TLS library (rustls implements ECDHE with AES-GCM or \
                         ChaCha20-Poly1305 only); remove it"
                    ))
                }
                Some((_, Some(suite))) if suite.version() == &rustls::version::TLS12 => {
                    tls12.push(*suite)
                }
                // Go ignores the list for TLS 1.3: those suites are always on.
                Some(_) => {}
            }
        }
        let tls12_on = versions.contains(&&rustls::version::TLS12);
        if http2
            && tls12_on
            && !HTTP2_REQUIRED
                .iter()
                .any(|r| c.cipher_suites.contains(&r.to_string()))
        {
            return Err(format!(
                "key `tls_server_config.cipher_suites`: TLSConfig.CipherSuites is missing an \
                 HTTP/2-required AES_128_GCM_SHA256 cipher (need at least one of {})",
                HTTP2_REQUIRED.join(" or ")
            ));
        }
        let mut suites: Vec<SupportedCipherSuite> = provider
            .cipher_suites
            .iter()
            .filter(|s| s.version() == &rustls::version::TLS13)
            .copied()
            .collect();
        suites.extend(tls12);
        provider.cipher_suites = suites;
    }
    if !c.curve_preferences.is_empty() {
        let mut groups: Vec<&'static dyn SupportedKxGroup> = Vec::new();
        for name in &c.curve_preferences {
            let group = match name.as_str() {
                "X25519" => ring::kx_group::X25519,
                "CurveP256" => ring::kx_group::SECP256R1,
                "CurveP384" => ring::kx_group::SECP384R1,
                "CurveP521" => {
                    return Err(
                        "key `tls_server_config.curve_preferences`: CurveP521 is not \
                         supported by driftd's TLS library (rustls with ring); remove it"
                            .into(),
                    )
                }
                other => {
                    return Err(format!(
                        "key `tls_server_config.curve_preferences`: unknown curve: {other}"
                    ))
                }
            };
            groups.push(group);
        }
        provider.kx_groups = groups;
    }
    Ok(provider)
}

/// `client_auth_type` with `client_ca_file`/`client_ca`. Policies that accept a client
/// certificate without verifying it are refused: they authenticate nobody.
fn client_verifier(
    c: &TlsFileConfig,
    dir: &Path,
    provider: &Arc<CryptoProvider>,
) -> Result<Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>, String> {
    let key = "key `tls_server_config.client_auth_type`";
    let (verify, optional) = match c.client_auth_type.as_str() {
        "" | "NoClientCert" => (false, false),
        "VerifyClientCertIfGiven" => (true, true),
        "RequireAndVerifyClientCert" => (true, false),
        unverified @ ("RequestClientCert" | "RequireAnyClientCert" | "RequireClientCert") => {
            return Err(format!(
                "{key}: {unverified} accepts client certificates without verifying them and \
                 is not supported; use RequireAndVerifyClientCert (or VerifyClientCertIfGiven) \
                 with client_ca_file"
            ))
        }
        other => return Err(format!("{key}: invalid ClientAuth: {other}")),
    };
    let ca = match (c.client_ca_file.as_str(), c.client_ca.as_str()) {
        ("", "") => None,
        ("", inline) => Some(Pem::Inline(inline.to_string())),
        (file, _) => Some(Pem::File("client_ca_file", join_dir(dir, file))),
    };
    let Some(ca) = ca else {
        if verify {
            return Err(format!(
                "{key}: {} needs client_ca_file (or client_ca) to verify client certificates \
                 against",
                c.client_auth_type
            ));
        }
        return Ok(None);
    };
    if !verify {
        return Err(
            "client CA's have been configured without a Client Auth Policy \
             (set tls_server_config.client_auth_type to RequireAndVerifyClientCert)"
                .into(),
        );
    }
    let mut roots = RootCertStore::empty();
    for cert in ca.certificates()? {
        roots
            .add(cert)
            .map_err(|e| format!("{}: not a CA certificate: {e}", ca.name()))?;
    }
    let mut builder =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
    if optional {
        builder = builder.allow_unauthenticated();
    }
    builder
        .build()
        .map(Some)
        .map_err(|e| format!("{}: {e}", ca.name()))
}

/// PEM text in a file or inline in the config.
#[derive(Debug, Clone)]
enum Pem {
    File(&'static str, PathBuf),
    Inline(String),
}

impl Pem {
    /// How errors name it: the key and, for a file, its path.
    fn name(&self) -> String {
        match self {
            Pem::File(key, path) => format!("{key} ({})", path.display()),
            Pem::Inline(_) => "inline PEM".into(),
        }
    }

    fn bytes(&self) -> Result<Vec<u8>, String> {
        match self {
            Pem::File(key, path) => std::fs::read(path)
                .map_err(|e| format!("failed to read {key} ({}): {e}", path.display())),
            Pem::Inline(text) => Ok(text.as_bytes().to_vec()),
        }
    }

    fn modified(&self) -> Option<SystemTime> {
        match self {
            Pem::File(_, path) => std::fs::metadata(path).and_then(|m| m.modified()).ok(),
            Pem::Inline(_) => None,
        }
    }

    fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, String> {
        let bytes = self.bytes()?;
        let certs: Vec<_> = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<_, _>>()
            .map_err(|e| format!("{}: not PEM certificates: {e}", self.name()))?;
        if certs.is_empty() {
            return Err(format!("{}: no PEM certificate in it", self.name()));
        }
        Ok(certs)
    }

    fn private_key(&self) -> Result<PrivateKeyDer<'static>, String> {
        // Never shows the key's content, only where it is.
        PrivateKeyDer::from_pem_slice(&self.bytes()?)
            .map_err(|e| format!("{}: no PEM private key in it ({e})", self.name()))
    }
}

/// The certificate and key, re-read when either file changes (checked at each handshake:
/// two `stat` calls), so a rotated certificate is served without a restart. A pair that
/// does not load (half-written, mismatched) keeps the previous one in use.
#[derive(Debug)]
struct Reloading {
    cert: Pem,
    key: Pem,
    provider: Arc<CryptoProvider>,
    current: Mutex<(Arc<CertifiedKey>, [Option<SystemTime>; 2])>,
}

impl Reloading {
    fn new(cert: Pem, key: Pem, provider: Arc<CryptoProvider>) -> Result<Reloading, String> {
        let stamp = [cert.modified(), key.modified()];
        let loaded = load_pair(&cert, &key, &provider)?;
        Ok(Reloading {
            cert,
            key,
            provider,
            current: Mutex::new((Arc::new(loaded), stamp)),
        })
    }
}

fn load_pair(cert: &Pem, key: &Pem, provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    CertifiedKey::from_der(cert.certificates()?, key.private_key()?, provider).map_err(|e| {
        format!(
            "failed to load X509KeyPair ({} and {}): {e}",
            cert.name(),
            key.name()
        )
    })
}

impl ResolvesServerCert for Reloading {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let stamp = [self.cert.modified(), self.key.modified()];
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if stamp != current.1 {
            match load_pair(&self.cert, &self.key, &self.provider) {
                Ok(loaded) => {
                    tracing::info!(cert = %self.cert.name(), "TLS certificate reloaded");
                    *current = (Arc::new(loaded), stamp);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "TLS certificate changed but does not load; serving the previous one")
                }
            }
        }
        Some(current.0.clone())
    }
}
