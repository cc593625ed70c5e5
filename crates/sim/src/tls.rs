//! HTTPS for the simulator (`SimOptions::tls`, `driftd sim --tls`), with a self-signed
//! certificate for 127.0.0.1 made at start and given in the kubeconfig.
//!
//! Needed for bearer tokens: kubectl (client-go's `clientcmd`) only sends a kubeconfig
//! user's credentials when the server's URL is `https` (`DirectClientConfig.ClientConfig`:
//! "only try to read the auth information if we are secure"), so the users of audited
//! writes can only be told apart over TLS.

use axum::extract::connect_info::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tower::ServiceExt;

/// A self-signed certificate for 127.0.0.1 and localhost, and the server configuration
/// that presents it.
pub struct Tls {
    /// The certificate in PEM, for the kubeconfig's `certificate-authority-data`.
    pub cert_pem: String,
    config: Arc<rustls::ServerConfig>,
}

impl Tls {
    pub fn new() -> std::io::Result<Tls> {
        let other = |e: String| std::io::Error::other(e);
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .map_err(|e| other(e.to_string()))?;
        let key = rustls_pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| other(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(vec![made.cert.der().clone()], key)
            .map_err(|e| other(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Tls {
            cert_pem: made.cert.pem(),
            config: Arc::new(config),
        })
    }
}

/// Serves `router` over TLS on `listener` until `stop` changes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: &Tls,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(_) => continue,
            },
            _ = stop.changed() => return,
        };
        let acceptor = acceptor.clone();
        let router = router.clone();
        tokio::spawn(async move {
            let Ok(stream) = acceptor.accept(stream).await else {
                return;
            };
            let service = hyper::service::service_fn(
                move |mut request: hyper::Request<hyper::body::Incoming>| {
                    request
                        .extensions_mut()
                        .insert(ConnectInfo::<SocketAddr>(peer));
                    router.clone().oneshot(request.map(axum::body::Body::new))
                },
            );
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
