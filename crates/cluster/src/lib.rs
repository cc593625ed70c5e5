//! driftd's cluster client, shared by the CLI and `driftd serve`: everything that reads or
//! writes the cluster other than the watchers.
//!
//! `apply` is the one place that writes objects (server-side apply in plan order, for
//! `driftd reconcile` and `remediate`, the leader's task for `remediation = "auto"`
//! sources); `reconcile` reads a source's revision, plan and differences for both.
//! `dry_run_task` is the task that asks the API server for server-side dry runs on the engine's
//! behalf. `cluster_log` and `helm_importer` import desired state recorded in the cluster (driftd's
//! own records, Helm's releases) into the store, which the engine polls; `cluster_log` also
//! writes the releases the engine asks of it (a stale lock held in the cluster log).
//! `pulumi` imports Pulumi stacks' state.

pub mod apply;
pub mod cluster_log;
pub mod dry_run_task;
pub mod helm_importer;
pub mod pulumi;
pub mod reconcile;
pub mod remediate;
