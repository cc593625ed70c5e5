//! Whether this replica acts as leader: the handle leader-only work consults (the engine
//! releasing stale locks, Events, remediation), driven by the daemon's Lease elector. It
//! lives here, beside the engine that reads it, so the engine and the outputs depend on a
//! value and not on how leadership is won.

use super::Clock;
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
    pub fn set_standing(&self, standing: Standing) {
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
    pub fn act_until(&self, until: Instant) {
        if let Mode::Elected { acting_until, .. } = &self.0.mode {
            *acting_until.lock().unwrap() = Some(until);
            self.0
                .changes
                .send_if_modified(|v| !std::mem::replace(v, true));
        }
    }

    /// The elector lost or is giving up the Lease: stop acting as leader at once.
    pub fn stop(&self) {
        if let Mode::Elected { acting_until, .. } = &self.0.mode {
            *acting_until.lock().unwrap() = None;
            self.0
                .changes
                .send_if_modified(|v| std::mem::replace(v, false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;
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
}
