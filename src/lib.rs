//! driftd: tells a Kubernetes team which live objects differ from the desired state they
//! last committed, how, since when, and why.
//!
//! Data flows one way (see README "Architecture"):
//! `manifest` (parse+validate) -> `store` (SQLite) ; `watch` (kube watchers) -> `diff`
//! (pure compare) -> `drift` (index + episodes) -> `export` (/drift, /metrics, Events).

pub mod cmd;
pub mod config;
pub mod demo;
pub mod diff;
pub mod drift;
pub mod export;
pub mod k8s;
pub mod manifest;
pub mod serve;
pub mod sim;
pub mod store;
pub mod watch;

/// Errors a driftd library call can end in; each says what to do next where it can.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Manifest(#[from] manifest::ManifestError),
    #[error(transparent)]
    Store(#[from] store::StoreError),
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;
