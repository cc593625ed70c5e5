//! Outputs: HTTP API (`/drift`, `/metrics`, health), Prometheus metrics, Kubernetes Events.

pub mod events;
pub mod http;
pub mod metrics;
