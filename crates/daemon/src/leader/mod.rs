//! Which replica acts as leader: leader election on a `coordination.k8s.io/v1` Lease, as
//! client-go's `leaderelection` package does it, and the [`Leadership`] handle that
//! leader-only work consults.
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

use crate::drift::Clock;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::watch;

/// Whether this replica acts as leader right now: the one question leader-only work asks.
///
/// Leadership is fenced by time: it lapses at the renew deadline of the last renewal even if
/// the elector is late to notice, so a stalled replica cannot act while another has taken
/// the Lease over.
#[derive(Clone)]
pub struct Leadership(Arc<Inner>);

struct Inner {
    mode: Mode,
    changes: watch::Sender<bool>,
    /// What the election last found, for people (see [`Standing`]).
    standing: Mutex<Standing>,
}

/// Where this replica stands in the election, as `/readyz`, the drift page and `driftd
/// drift` tell people: a replica that is not the leader publishes no Events (nor releases
/// locks or remediates), and an installation where no replica can lead (the Lease's
/// namespace missing, RBAC forbidding it) would otherwise only say so in a log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Leads: holds the Lease, or leader election is off.
    Leading,
    /// Has not reached the Lease yet.
    Starting,
    /// Another replica holds the Lease.
    Following { holder: String },
    /// Reading or writing the Lease fails; `why` says how (a namespace that does not exist,
    /// RBAC that forbids it, no answer).
    Failing { why: String },
}

impl Standing {
    /// Why this replica publishes no Events, in words; `None` while it leads.
    pub fn no_events_because(&self) -> Option<String> {
        match self {
            Standing::Leading => None,
            Standing::Starting => Some("it has not reached its leader Lease yet".into()),
            Standing::Following { holder } => Some(format!(
                "it is not the leader: replica {holder} holds the leader Lease and publishes them"
            )),
            Standing::Failing { why } => Some(format!(
                "it cannot take the leader Lease ({why}), so no replica may be publishing them"
            )),
        }
    }
}

enum Mode {
    /// Leader election is off: this replica is the only one.
    Always,
    /// Acting until this instant (`None`: not leading), read on `clock`.
    Elected {
        acting_until: Mutex<Option<Instant>>,
        clock: Arc<dyn Clock>,
    },
}

impl Leadership {
    /// For a replica without leader election: always the leader.
    pub fn always() -> Leadership {
        Leadership(Arc::new(Inner {
            mode: Mode::Always,
            changes: watch::channel(true).0,
            standing: Mutex::new(Standing::Leading),
        }))
    }

    /// For a replica with leader election: a follower until an [`Elector`] says otherwise.
    pub fn elected(clock: Arc<dyn Clock>) -> Leadership {
        Leadership(Arc::new(Inner {
            mode: Mode::Elected {
                acting_until: Mutex::new(None),
                clock,
            },
            changes: watch::channel(false).0,
            standing: Mutex::new(Standing::Starting),
        }))
    }

    /// Where this replica stands (see [`Standing`]). A leadership that lapsed by time, the
    /// elector not having noticed yet, is not `Leading`.
    pub fn standing(&self) -> Standing {
        let standing = self.0.standing.lock().unwrap().clone();
        match standing {
            Standing::Leading if !self.is_leader() => Standing::Failing {
                why: "its last renewal of the Lease is past the renew deadline".into(),
            },
            other => other,
        }
    }

    /// What the elector found.
    fn set_standing(&self, standing: Standing) {
        *self.0.standing.lock().unwrap() = standing;
    }

    /// True while this replica holds the Lease within its renew deadline (always true with
    /// leader election off). Cheap: a lock and a clock read.
    pub fn is_leader(&self) -> bool {
        match &self.0.mode {
            Mode::Always => true,
            Mode::Elected {
                acting_until,
                clock,
            } => acting_until
                .lock()
                .unwrap()
                .is_some_and(|until| clock.now() < until),
        }
    }

    /// Tells leader-only work when leadership starts (`true`) and stops (`false`).
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.0.changes.subscribe()
    }

    /// The elector acquired or renewed the Lease: act as leader until `until`.
    fn act_until(&self, until: Instant) {
        if let Mode::Elected { acting_until, .. } = &self.0.mode {
            *acting_until.lock().unwrap() = Some(until);
            self.0
                .changes
                .send_if_modified(|v| !std::mem::replace(v, true));
        }
    }

    /// The elector lost or is giving up the Lease: stop acting as leader at once.
    fn stop(&self) {
        if let Mode::Elected { acting_until, .. } = &self.0.mode {
            *acting_until.lock().unwrap() = None;
            self.0
                .changes
                .send_if_modified(|v| std::mem::replace(v, false));
        }
    }
}

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
    use crate::drift::ManualClock;
    use std::time::Duration;

    #[test]
    fn leadership_lapses_at_its_deadline_without_the_elector() {
        let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse().unwrap()));
        let leadership = Leadership::elected(clock.clone());
        let mut changes = leadership.subscribe();
        assert!(!leadership.is_leader());
        leadership.act_until(clock.now() + Duration::from_secs(10));
        assert!(leadership.is_leader());
        assert!(changes.has_changed().unwrap() && *changes.borrow_and_update());
        clock.advance(Duration::from_secs(10));
        assert!(!leadership.is_leader(), "acting past the renew deadline");
        leadership.stop();
        assert!(!*changes.borrow_and_update());
        assert!(Leadership::always().is_leader());
    }

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
