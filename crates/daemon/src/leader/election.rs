//! The election, after client-go's `leaderelection.go` (`tryAcquireOrRenew`, `renew`,
//! `release`), as an explicit state machine ([`State`]) advanced by one function
//! ([`Elector::step`]).
//!
//! The rules, as client-go has them:
//! - A replica takes the Lease when it does not exist (create), names no holder (released),
//!   or has not changed for `leaseDurationSeconds` by the replica's *own* clock since it
//!   last saw it change. Timestamps in the Lease are informational; only their change
//!   counts, so clock skew between replicas does not matter (clock rate does).
//! - Every write carries the `resourceVersion` last read, so of two replicas racing for the
//!   Lease one gets `409 Conflict` (and one create gets `409 AlreadyExists`).
//! - The leader renews every retry period. It acts as leader only until the last renewal
//!   that succeeded plus the renew deadline (shorter than the lease duration, so it stops
//!   before any follower may take over), and never exits for it: it becomes a follower.
//! - On shutdown it writes an empty `holderIdentity` (client-go's `ReleaseOnCancel`), which
//!   a follower takes at its next try.
//!
//! One difference: client-go jitters followers' retries by up to 1.2 retry periods; driftd
//! retries every retry period, so a released Lease is taken within one.

use super::{Leadership, Standing};
use driftd_engine::Clock;
use jiff::Timestamp;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The election record a Lease's spec holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseRecord {
    /// Who holds the Lease; empty when released.
    pub holder: String,
    /// How long others wait, after last seeing the record change, before taking it over.
    pub lease_duration_seconds: i32,
    pub acquire_time: Option<Timestamp>,
    pub renew_time: Option<Timestamp>,
    /// How many times the Lease changed hands.
    pub transitions: i32,
}

/// A record as stored, with the `resourceVersion` the next write must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    pub record: LeaseRecord,
    pub resource_version: String,
}

/// Why a Lease request failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Someone wrote the Lease since it was read: lost a race (409 Conflict).
    #[error("the Lease changed since it was read (Conflict)")]
    Conflict,
    /// Someone created the Lease first (409 AlreadyExists).
    #[error("the Lease was created by another replica first (AlreadyExists)")]
    AlreadyExists,
    /// The Lease's namespace does not exist (create answered 404).
    #[error("namespace {0} does not exist: create it, or set `namespace` (DRIFTD_NAMESPACE) to one that does")]
    NoNamespace(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Api(#[from] kube::Error),
}

impl LeaseError {
    /// A lost race, expected when replicas start together: not worth a warning.
    fn is_race(&self) -> bool {
        matches!(self, LeaseError::Conflict | LeaseError::AlreadyExists)
    }
}

/// The Lease as the election needs it; [`super::KubeLease`] is the real one.
pub trait LeaseApi: Send + Sync {
    /// The Lease, or `None` if it does not exist.
    fn get(&self) -> impl Future<Output = Result<Option<Versioned>, LeaseError>> + Send;
    /// Creates the Lease; returns its `resourceVersion`.
    fn create(
        &self,
        record: &LeaseRecord,
    ) -> impl Future<Output = Result<String, LeaseError>> + Send;
    /// Replaces the record if the Lease is still at `resource_version`; returns the new one.
    fn update(
        &self,
        record: &LeaseRecord,
        resource_version: &str,
    ) -> impl Future<Output = Result<String, LeaseError>> + Send;
}

/// `[leader_election]` timings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl From<&driftd_config::LeaderElectionConfig> for Timings {
    fn from(config: &driftd_config::LeaderElectionConfig) -> Timings {
        Timings {
            lease_duration: config.lease_duration(),
            renew_deadline: config.renew_deadline(),
            retry_period: config.retry_period(),
        }
    }
}

/// Where one replica stands in the election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Not leading: reads the Lease every retry period and takes it when free or expired.
    Follower,
    /// Holds the Lease and acts as leader; `renewed_at` is when the last renewal that
    /// succeeded was sent.
    Leading { renewed_at: Instant },
    /// Shutting down: gives the Lease back if it still names this replica.
    Releasing,
    /// Stopped.
    Done,
}

/// The record last read or written, and when it was first seen in that form.
#[derive(Debug, Clone)]
struct Observed {
    record: LeaseRecord,
    resource_version: String,
    at: Instant,
}

impl Observed {
    /// Whether the holder's term is still running by this replica's clock.
    fn valid_at(&self, now: Instant) -> bool {
        let duration = Duration::from_secs(self.record.lease_duration_seconds.max(0) as u64);
        now < self.at + duration
    }
}

/// What one try to acquire or renew found.
#[derive(Debug)]
enum Attempt {
    /// This replica holds the Lease; the write that said so was sent at this instant.
    Holding(Instant),
    /// Another replica holds an unexpired Lease.
    HeldBy(String),
}

/// One replica's side of the election.
pub struct Elector<A> {
    api: A,
    identity: String,
    /// `namespace/name`, for logs.
    lease: String,
    timings: Timings,
    clock: Arc<dyn Clock>,
    leadership: Leadership,
    observed: Option<Observed>,
    /// The last failure logged as a warning, so a lasting one is not repeated every try.
    last_warning: Option<String>,
}

impl<A: LeaseApi> Elector<A> {
    /// Elects `identity` on `api` (the Lease `lease`, named in logs), telling `leadership`.
    pub fn new(
        api: A,
        identity: String,
        lease: String,
        timings: Timings,
        clock: Arc<dyn Clock>,
        leadership: Leadership,
    ) -> Elector<A> {
        Elector {
            api,
            identity,
            lease,
            timings,
            clock,
            leadership,
            observed: None,
            last_warning: None,
        }
    }

    /// Runs the election until `release` completes, then gives the Lease back (if held) and
    /// returns. Never fails: problems are logged and retried.
    pub async fn run(mut self, release: impl Future<Output = ()>) {
        let (lease, identity) = (&self.lease, &self.identity);
        tracing::info!(%lease, %identity, "leader election: trying to acquire the Lease");
        tokio::pin!(release);
        let mut state = State::Follower;
        let mut releasing = false;
        loop {
            let (next, wait) = self.step(state).await;
            state = next;
            if state == State::Done {
                return;
            }
            if releasing {
                continue;
            }
            tokio::select! {
                biased;
                _ = &mut release => {
                    releasing = true;
                    state = self.shut_down(state);
                }
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Shutdown: stop acting as leader at once, then release (or just stop).
    pub fn shut_down(&mut self, state: State) -> State {
        if let State::Leading { .. } = state {
            self.stop_leading("shutting down", false);
        }
        if self.holds_observed() {
            State::Releasing
        } else {
            State::Done
        }
    }

    /// Advances the election by one state; returns the next state and how long to wait
    /// before stepping it.
    pub async fn step(&mut self, state: State) -> (State, Duration) {
        let Timings {
            renew_deadline,
            retry_period: retry,
            ..
        } = self.timings;
        match state {
            State::Follower => match self.try_acquire_or_renew(renew_deadline).await {
                Ok(Attempt::Holding(sent)) => {
                    self.start_leading(sent);
                    (State::Leading { renewed_at: sent }, retry)
                }
                Ok(Attempt::HeldBy(holder)) => {
                    self.leadership.set_standing(Standing::Following { holder });
                    (State::Follower, retry)
                }
                Err(err) => {
                    self.failed("cannot acquire the Lease", &err);
                    (State::Follower, retry)
                }
            },
            State::Leading { renewed_at } => {
                let deadline = renewed_at + renew_deadline;
                let left = deadline.saturating_duration_since(self.clock.now());
                if left.is_zero() {
                    self.stop_leading("no renewal succeeded within the renew deadline", true);
                    self.leadership.set_standing(Standing::Failing {
                        why: format!(
                            "no renewal of the Lease {} succeeded within the renew deadline",
                            self.lease
                        ),
                    });
                    return (State::Follower, retry);
                }
                match self.try_acquire_or_renew(left).await {
                    Ok(Attempt::Holding(sent)) => {
                        self.leadership.act_until(sent + renew_deadline);
                        self.last_warning = None;
                        (State::Leading { renewed_at: sent }, retry)
                    }
                    Ok(Attempt::HeldBy(holder)) => {
                        self.stop_leading(&format!("the Lease is held by {holder}"), true);
                        self.leadership.set_standing(Standing::Following { holder });
                        (State::Follower, retry)
                    }
                    Err(err) => {
                        self.failed(
                            "cannot renew the Lease; retrying until the renew deadline",
                            &err,
                        );
                        let left = deadline.saturating_duration_since(self.clock.now());
                        (State::Leading { renewed_at }, retry.min(left))
                    }
                }
            }
            State::Releasing => {
                self.release().await;
                (State::Done, Duration::ZERO)
            }
            State::Done => (State::Done, Duration::ZERO),
        }
    }

    /// client-go's `tryAcquireOrRenew`, given at most `budget` to answer.
    async fn try_acquire_or_renew(&mut self, budget: Duration) -> Result<Attempt, LeaseError> {
        within(budget, self.try_acquire_or_renew_now()).await
    }

    async fn try_acquire_or_renew_now(&mut self) -> Result<Attempt, LeaseError> {
        let sent = self.clock.now();
        let wall = now_micros(self.clock.as_ref());

        // 1. The holder renews optimistically, assuming what it last saw is current.
        if let Some(observed) = self
            .observed
            .clone()
            .filter(|o| o.record.holder == self.identity && o.valid_at(sent))
        {
            let record = self.renewal(&observed.record, wall);
            match self.api.update(&record, &observed.resource_version).await {
                Ok(version) => {
                    self.wrote(record, version);
                    return Ok(Attempt::Holding(sent));
                }
                Err(err) => {
                    tracing::debug!(error = %err, "optimistic renewal failed; reading the Lease");
                }
            }
        }

        // 2. Read the Lease, or create it.
        let Some(current) = self.api.get().await? else {
            let record = LeaseRecord {
                holder: self.identity.clone(),
                lease_duration_seconds: self.lease_duration_seconds(),
                acquire_time: Some(wall),
                renew_time: Some(wall),
                transitions: 0,
            };
            let version = self.api.create(&record).await?;
            self.wrote(record, version);
            return Ok(Attempt::Holding(sent));
        };

        // 3. Note when the record last changed, by this replica's clock; respect a live
        // holder.
        self.saw(current);
        let observed = self.observed.clone().expect("just observed");
        let holder = &observed.record.holder;
        if !holder.is_empty() && *holder != self.identity && observed.valid_at(self.clock.now()) {
            return Ok(Attempt::HeldBy(holder.clone()));
        }

        // 4. Take it (or renew it), if nobody wrote it since it was read.
        let record = if *holder == self.identity {
            self.renewal(&observed.record, wall)
        } else {
            LeaseRecord {
                holder: self.identity.clone(),
                lease_duration_seconds: self.lease_duration_seconds(),
                acquire_time: Some(wall),
                renew_time: Some(wall),
                transitions: observed.record.transitions + 1,
            }
        };
        let version = self.api.update(&record, &observed.resource_version).await?;
        self.wrote(record, version);
        Ok(Attempt::Holding(sent))
    }

    /// client-go's `release`: an empty holder, so followers need not wait out the lease.
    async fn release(&mut self) {
        let Some(observed) = self.observed.clone().filter(|_| self.holds_observed()) else {
            return;
        };
        let wall = now_micros(self.clock.as_ref());
        let record = LeaseRecord {
            holder: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(wall),
            renew_time: Some(wall),
            transitions: observed.record.transitions,
        };
        let update = self.api.update(&record, &observed.resource_version);
        match within(self.timings.renew_deadline, update).await {
            Ok(version) => {
                self.wrote(record, version);
                tracing::info!(lease = %self.lease, "released the Lease");
            }
            Err(err) => {
                let lease = &self.lease;
                tracing::warn!(%lease, error = %err, "cannot release the Lease; it expires");
            }
        }
    }

    /// Whether the last record seen names this replica.
    fn holds_observed(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|o| o.record.holder == self.identity)
    }

    /// The holder's renewal of `current` at `wall`.
    fn renewal(&self, current: &LeaseRecord, wall: Timestamp) -> LeaseRecord {
        LeaseRecord {
            holder: self.identity.clone(),
            lease_duration_seconds: self.lease_duration_seconds(),
            acquire_time: current.acquire_time,
            renew_time: Some(wall),
            transitions: current.transitions,
        }
    }

    fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.timings.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// Records a read: the record's observation time moves only if it changed.
    fn saw(&mut self, current: Versioned) {
        if let Some(same) = self
            .observed
            .as_mut()
            .filter(|o| o.record == current.record)
        {
            same.resource_version = current.resource_version;
            return;
        }
        let holder = &current.record.holder;
        let previous = self.observed.as_ref().map(|o| o.record.holder.as_str());
        if !holder.is_empty() && *holder != self.identity && previous != Some(holder.as_str()) {
            tracing::info!(lease = %self.lease, leader = %holder, "new leader observed");
        }
        self.observed = Some(Observed {
            record: current.record,
            resource_version: current.resource_version,
            at: self.clock.now(),
        });
    }

    /// Records a successful write of `record`.
    fn wrote(&mut self, record: LeaseRecord, resource_version: String) {
        self.observed = Some(Observed {
            record,
            resource_version,
            at: self.clock.now(),
        });
    }

    /// Logs, then acts; [`Self::stop_leading`] stops, then logs: the log's leadership
    /// periods contain the acting ones.
    fn start_leading(&mut self, sent: Instant) {
        let transitions = self.observed.as_ref().map_or(0, |o| o.record.transitions);
        let (lease, identity) = (&self.lease, &self.identity);
        tracing::info!(%lease, %identity, transitions, "became leader");
        self.leadership
            .act_until(sent + self.timings.renew_deadline);
        self.leadership.set_standing(Standing::Leading);
        self.last_warning = None;
    }

    fn stop_leading(&mut self, reason: &str, warn: bool) {
        self.leadership.stop();
        let (lease, identity) = (&self.lease, &self.identity);
        if warn {
            tracing::warn!(%lease, %identity, reason, "stopped leading; serving reads and trying to acquire again");
        } else {
            tracing::info!(%lease, %identity, reason, "stopped leading");
        }
    }

    /// Logs a failed try: a warning when it is news, else at debug level. A lost race
    /// leaves the standing as it was; any other failure is what people are told.
    fn failed(&mut self, what: &str, err: &LeaseError) {
        if !err.is_race() && !self.leadership.is_leader() {
            self.leadership.set_standing(Standing::Failing {
                why: failure_in_words(err, &self.lease),
            });
        }
        let text = err.to_string();
        if err.is_race() || self.last_warning.as_deref() == Some(text.as_str()) {
            tracing::debug!(lease = %self.lease, error = %text, "{what}");
        } else {
            tracing::warn!(lease = %self.lease, error = %text, "{what}");
            self.last_warning = Some(text);
        }
    }
}

/// A failed Lease request as the people running driftd need it: what to fix.
fn failure_in_words(err: &LeaseError, lease: &str) -> String {
    match err {
        LeaseError::Api(kube::Error::Api(status)) if status.code == 403 => format!(
            "RBAC forbids it: driftd's ServiceAccount may not get, create and update the Lease {lease}"
        ),
        other => other.to_string(),
    }
}

/// `request`, failed with [`LeaseError::Timeout`] if it takes longer than `budget`.
async fn within<T>(
    budget: Duration,
    request: impl Future<Output = Result<T, LeaseError>>,
) -> Result<T, LeaseError> {
    tokio::time::timeout(budget, request)
        .await
        .unwrap_or(Err(LeaseError::Timeout(budget)))
}

/// Wall time at the Lease's precision (MicroTime), so a record read back equals the one
/// written.
fn now_micros(clock: &dyn Clock) -> Timestamp {
    let wall = clock.wall();
    Timestamp::from_microsecond(wall.as_microsecond()).unwrap_or(wall)
}

#[cfg(test)]
mod tests;
