//! driftd's outputs: HTTP API (`/drift`, `/metrics`, health), the drift page at `/`, Prometheus
//! metrics, Kubernetes Events, and the [`publisher::Publisher`] that feeds the engine's
//! outputs into them. Reads the drift index; the engine does not know this crate.

pub mod events;
pub mod http;
pub mod metrics;
pub mod page;
pub mod publisher;
pub mod store_errors;
pub mod web_config;
