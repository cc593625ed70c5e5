//! driftd's drift engine and what it publishes: watch messages and the desired state in,
//! the drift index, episodes and announcements out. It has no kube client: the watchers
//! (`driftd-watch`) implement its watch port.
//!
//! The engine ([`Engine`]) is the index's only writer; HTTP handlers and the metrics read it
//! through [`SharedIndex`]. Its parts, one concern each:
//! - `desired`: the desired state, reloaded when someone commits;
//! - `list_states`: the list lifecycle of every watched kind (what exists, what is judged);
//! - `settle`: when a drift state held long enough for Events and episodes;
//! - `coverage`: `[unmanaged]` objects; `hpa`: autoscalers owning `spec.replicas`;
//! - `crds`: the CRDs custom resources are compared by (committed, else the cluster's);
//! - `dry_run_answers`: server-side dry-run answers of `compare = "dry-run"` sources;
//! - `intents`: open intents, what `uncommitted` objects equal;
//! - `holders`: the pods holding deploy locks; `locks`: which locks are stale (`local`:
//!   holder processes of this host; `release`: releases asked of the cluster log);
//! - `stale_config`: running pods older than the Secrets/ConfigMaps they read;
//! - `tracked`: the judged objects with their live copies (kept packed: see
//!   `driftd_watch::packed`: one `Packing` value shared with the watchers that pack them);
//! - `last_seen`: open episodes' `last_seen` kept current, a step at a time;
//! - `expired_rules`: expired ignore rules, each logged once;
//! - `memory`: freed heap pages given back after bursts;
//! - `leadership`: whether this replica acts as leader (the daemon's elector drives it);
//! - `audit_trail`: recent writes from audit events, joined to changes to say who made them;
//! - `index`: the published state; `outputs`: counters and Events; `clock`: time.

mod audit_trail;
mod clock;
mod coverage;
mod crds;
mod desired;
mod dry_run_answers;
mod engine;
mod expired_rules;
mod holders;
mod hpa;
mod index;
mod intents;
mod last_seen;
mod leadership;
mod list_states;
mod locks;
mod memory;
mod outputs;
mod settle;
mod stale_config;
mod tracked;

#[cfg(any(test, feature = "testing"))]
pub use clock::ManualClock;
pub use clock::{Clock, SystemClock};
pub use dry_run_answers::{DryRunAnswer, DryRunOutcome, DryRunRequest};
pub use engine::{AuditBatches, Engine, EngineError};
pub use holders::Holders;
pub use index::{
    DriftIndex, Page, PageError, SharedIndex, WatchHealth, DEFAULT_PAGE_SIZE,
    INCONSISTENT_CONTINUE, MAX_PAGE_SIZE, MAX_SNAPSHOTS, MAX_SNAPSHOT_KEYS, SNAPSHOT_TTL,
};
pub use leadership::{Leadership, Standing};
pub use locks::local::{LocalHolders, Process, Processes};
pub use locks::release::{ClusterRelease, ClusterReleased, ReleaseOutcome};
pub use locks::{holder_names, judge_all, PodRef};
pub use memory::{return_freed_pages_promptly, small_pages_only};
pub use outputs::{Announcement, LiveIdentity, LockAnnouncement, Outputs};

/// Helpers for unit tests, here and in the crates above the engine.
#[cfg(any(test, feature = "testing"))]
pub mod test_support;
