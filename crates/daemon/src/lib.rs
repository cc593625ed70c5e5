//! driftd's daemon: watches the cluster, keeps the drift index current, and publishes it.
//!
//! Data flows one way: `watch` (kube-runtime watchers) -> `drift` (the engine: desired state,
//! live copies, comparisons, the drift index) -> `export` (`/drift`, `/metrics`, Events).
//! `serve` wires them together; `config` is the daemon's configuration.

pub mod config;
pub mod drift;
pub mod export;
pub mod serve;
pub mod watch;

/// Errors the daemon's library calls end in; each says what to do next where it can.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] driftd_store::StoreError),
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Result alias used across the daemon.
pub type Result<T, E = Error> = std::result::Result<T, E>;
