//! Which replica acts as leader: leader election on a `coordination.k8s.io/v1` Lease, as
//! client-go's `leaderelection` package does it. The elector drives the [`Leadership`]
//! handle that leader-only work consults; the handle lives with the engine, which asks it,
//! so the engine needs nothing of the election.
//!
//! Every replica watches, computes drift and serves `/drift` and `/metrics` from its own
//! database; only the acting leader publishes Events (and, later, releases stale locks and
//! remediates). Losing the Lease is not a crash: the replica stops acting as leader, keeps
//! serving, and tries to acquire again. On shutdown the leader releases the Lease so that a
//! follower takes over within one retry period instead of one lease duration.
//!
//! - `election`: the [`Elector`] state machine, over the [`LeaseApi`] trait;
//! - `kube`: the Lease through the Kubernetes API ([`KubeLease`]).

mod election;
mod kube;

pub use election::{Elector, LeaseApi, LeaseError, LeaseRecord, State, Timings, Versioned};
pub use kube::KubeLease;

pub use driftd_engine::{Leadership, Standing};

/// This replica's name in the Lease and in Events' `reportingInstance`: the pod name from the
/// downward API (`POD_NAME`), else `hostname_pid`, unique among processes on one host.
pub fn identity() -> String {
    identity_from(std::env::var("POD_NAME").ok())
}

fn identity_from(pod_name: Option<String>) -> String {
    match pod_name.filter(|n| !n.is_empty()) {
        Some(name) => name,
        None => {
            let host = hostname::get()
                .ok()
                .and_then(|h| h.into_string().ok())
                .unwrap_or_else(|| "driftd".into());
            format!("{host}_{}", std::process::id())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_the_pod_name_else_host_and_pid() {
        assert_eq!(
            identity_from(Some("driftd-7c9f-x2".into())),
            "driftd-7c9f-x2"
        );
        let fallback = identity_from(Some(String::new()));
        assert!(
            fallback.ends_with(&format!("_{}", std::process::id())),
            "{fallback}"
        );
    }
}
