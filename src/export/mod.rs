//! Outputs: HTTP API, Prometheus metrics, Kubernetes Events.
