//! driftd's daemon: watches the cluster, keeps the drift index current, and publishes it.
//!
//! Dependencies point one way: `watch` (watcher messages and control, the packed copies
//! watchers make; the kube client [`watch::Supervisor`]) <- `drift` (the engine, the drift
//! index it writes, the [`drift::Leadership`] handle it consults) <- `export` (`/drift`,
//! `/metrics` rendered from the index, Events) <- `serve` (wiring). `config` is the
//! daemon's configuration, read by all. `leader` (the Lease election) drives the
//! leadership handle. `dry_run` is the task that asks the API server for server-side dry
//! runs on the engine's behalf.
//! `cluster_log` and `helm` import desired state recorded in the cluster (driftd's own
//! records, Helm's releases) into the store, which the engine polls; `cluster_log` also
//! writes the releases the engine asks of it (a stale lock held in the cluster log).
//! `hash_key` reads (and at the first start creates) the hash key kept in a Kubernetes
//! Secret, and moves a database that still keeps its own key to it. `apply` is the one
//! place that writes objects (server-side apply in plan order, for `driftd reconcile` and
//! `remediate`, the leader's task for `remediation = "auto"` sources); `reconcile` reads a
//! source's revision, plan and differences for both.

pub mod apply;
pub mod cluster_log;
pub mod config;
pub mod drift;
pub mod dry_run;
pub mod export;
pub mod hash_key;
pub mod helm;
pub mod leader;
pub mod pulumi;
pub mod reconcile;
pub mod remediate;
pub mod serve;
pub mod watch;

#[cfg(test)]
mod test_support;
