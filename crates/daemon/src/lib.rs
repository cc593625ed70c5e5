//! driftd's daemon: the wiring of `driftd serve` and what only the daemon needs.
//!
//! The jobs live in crates below it, whose arrows point one way: `driftd-watch` (the watch
//! port and its kube implementation) <- `driftd-engine` (the engine and the drift index)
//! <- `driftd-export` (`/drift`, `/metrics`, Events) <- `driftd-cluster` (apply,
//! reconcile, remediate, dry runs, the cluster log, Helm), with `driftd-config` read by
//! all. What stays here: `serve` (wiring), `leader` (the Lease election, which drives the
//! engine's leadership handle), `hash_key` (the hash key kept in a Kubernetes Secret,
//! read, and at the first start created, before anything else starts), `audit_log` (the
//! audit log file `serve` follows) and `retention` (closed drift episodes deleted past
//! `[history] retention_days`).

pub mod audit_log;
pub mod hash_key;
pub mod leader;
pub mod retention;
pub mod serve;
