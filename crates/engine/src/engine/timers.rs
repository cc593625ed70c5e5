//! The engine's clock-driven work, as one stream of [`Tick`]s: the run loop waits on it
//! beside the inbox, and the engine hands each tick to the part whose work is due.

use crate::dry_run_answers::DryRunAnswer;
use crate::locks::release::ClusterReleased;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::{interval, interval_at, Instant, Interval, MissedTickBehavior};

/// How often open drift episodes get their `last_seen` moved forward.
const LAST_SEEN_PERIOD: Duration = Duration::from_secs(60);

/// How often expired ignore rules are looked for.
const EXPIRY_PERIOD: Duration = Duration::from_secs(30);

/// How often intents are checked for expiry and locks judged again (TTLs pass by time).
const LOCK_PERIOD: Duration = Duration::from_secs(1);

/// How often recently ended intents are counted again for `driftd_intents`.
const RECOUNT_PERIOD: Duration = Duration::from_secs(60);

/// How often due dry runs (refresh, retry) are looked for.
const DRY_RUN_PERIOD: Duration = Duration::from_secs(1);

/// Clock-driven work that is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Tick {
    /// Someone may have committed, or written an intent.
    PollDesired,
    /// Drift states may have held for the settle time.
    Settle,
    /// Ignore rules may have expired.
    RulesExpiry,
    /// Open episodes' `last_seen` is to be moved to now.
    LastSeen,
    /// Intents may have expired, locks gone stale, pods' config-sync period ended.
    Locks,
    /// Recently ended intents leave the counting window.
    RecountIntents,
    /// Pulumi lock folders are to be read again.
    ScanLocks,
    /// Every listed kind is to be listed again (`relist_seconds`).
    Relist,
    /// Dry runs may be due (refresh, retry).
    DryRuns,
}

/// The periods that depend on the configuration; `None`: that work is off.
pub(super) struct Periods {
    pub(super) poll: Duration,
    pub(super) settle: Duration,
    pub(super) lock_scan: Duration,
    pub(super) relist: Option<Duration>,
    pub(super) dry_runs: bool,
}

/// See the module documentation.
pub(super) struct Timers {
    poll: Interval,
    settle: Interval,
    expiry: Interval,
    last_seen: Interval,
    locks: Interval,
    recount: Interval,
    scan: Interval,
    relist: Option<Interval>,
    dry_runs: Option<Interval>,
}

impl Timers {
    /// Work that looks at what exists now (a poll, settling, locks) is due at once; work
    /// that looks at what changed over a period (last seen, recount, re-list) first after
    /// one period. Settling is looked at four times per settle time, within 50 ms to 1 s.
    pub(super) fn start(periods: Periods) -> Timers {
        let now = Instant::now();
        let mut poll = interval(periods.poll);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let settle = (periods.settle / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
        Timers {
            poll,
            settle: interval(settle),
            expiry: interval(EXPIRY_PERIOD),
            last_seen: interval_at(now + LAST_SEEN_PERIOD, LAST_SEEN_PERIOD),
            locks: interval(LOCK_PERIOD),
            recount: interval_at(now + RECOUNT_PERIOD, RECOUNT_PERIOD),
            scan: interval(periods.lock_scan),
            relist: periods.relist.map(|p| interval_at(now + p, p)),
            dry_runs: periods.dry_runs.then(|| interval(DRY_RUN_PERIOD)),
        }
    }

    /// The next work due.
    pub(super) async fn next(&mut self) -> Tick {
        tokio::select! {
            _ = self.poll.tick() => Tick::PollDesired,
            _ = self.settle.tick() => Tick::Settle,
            _ = self.expiry.tick() => Tick::RulesExpiry,
            _ = self.last_seen.tick() => Tick::LastSeen,
            _ = self.locks.tick() => Tick::Locks,
            _ = self.recount.tick() => Tick::RecountIntents,
            _ = self.scan.tick() => Tick::ScanLocks,
            _ = tick_if_on(&mut self.relist) => Tick::Relist,
            _ = tick_if_on(&mut self.dry_runs) => Tick::DryRuns,
        }
    }
}

async fn tick_if_on(interval: &mut Option<Interval>) {
    match interval {
        Some(interval) => {
            interval.tick().await;
        }
        None => std::future::pending().await,
    }
}

/// An answer to something the engine asked of a task outside it.
pub(super) enum Answer {
    DryRun(DryRunAnswer),
    Released(ClusterReleased),
    /// A batch of audit records from the intake.
    Audit(Vec<driftd_core::audit::AuditRecord>),
}

/// Where answers come: the dry-run task and the cluster log's writer, each if connected.
pub(super) struct Answers {
    pub(super) dry_runs: Option<mpsc::UnboundedReceiver<DryRunAnswer>>,
    pub(super) releases: Option<mpsc::UnboundedReceiver<ClusterReleased>>,
    pub(super) audit: Option<super::AuditBatches>,
}

impl Answers {
    /// The next answer; never, once no task is connected (a task that ended is let go).
    pub(super) async fn next(&mut self) -> Answer {
        loop {
            tokio::select! {
                answer = recv_if_connected(&mut self.dry_runs) => match answer {
                    Some(answer) => return Answer::DryRun(answer),
                    None => self.dry_runs = None,
                },
                answer = recv_if_connected(&mut self.releases) => match answer {
                    Some(answer) => return Answer::Released(answer),
                    None => self.releases = None,
                },
                records = recv_bounded_if_connected(&mut self.audit) => match records {
                    Some(records) => return Answer::Audit(records),
                    None => self.audit = None,
                },
            }
        }
    }
}

async fn recv_if_connected<T>(receiver: &mut Option<mpsc::UnboundedReceiver<T>>) -> Option<T> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// [`recv_if_connected`] of a bounded channel.
async fn recv_bounded_if_connected<T>(receiver: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match receiver {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn periods(relist: Option<Duration>, dry_runs: bool) -> Periods {
        Periods {
            poll: Duration::from_millis(500),
            settle: Duration::from_secs(2),
            lock_scan: Duration::from_secs(10),
            relist,
            dry_runs,
        }
    }

    /// How often each tick comes in `span` of (paused) time.
    async fn count(timers: &mut Timers, span: Duration) -> BTreeMap<Tick, u32> {
        let end = Instant::now() + span;
        let mut counts = BTreeMap::new();
        loop {
            tokio::select! {
                tick = timers.next() => *counts.entry(tick).or_default() += 1,
                _ = tokio::time::sleep_until(end) => return counts,
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn each_tick_comes_at_its_period() {
        let mut timers = Timers::start(periods(Some(Duration::from_secs(30)), true));
        let counts = count(&mut timers, Duration::from_millis(120_250)).await;
        // Immediate first ticks, then one per period, over 120.25 s.
        assert_eq!(counts[&Tick::PollDesired], 241, "every 500 ms from 0");
        assert_eq!(
            counts[&Tick::Settle],
            241,
            "a quarter of the 2 s settle time"
        );
        assert_eq!(counts[&Tick::RulesExpiry], 5, "every 30 s from 0");
        assert_eq!(counts[&Tick::Locks], 121, "every second from 0");
        assert_eq!(counts[&Tick::ScanLocks], 13, "every 10 s from 0");
        assert_eq!(counts[&Tick::DryRuns], 121, "every second from 0");
        // First after one period.
        assert_eq!(counts[&Tick::LastSeen], 2, "at 60 s and 120 s");
        assert_eq!(counts[&Tick::RecountIntents], 2, "at 60 s and 120 s");
        assert_eq!(counts[&Tick::Relist], 4, "at 30, 60, 90 and 120 s");
    }

    #[tokio::test(start_paused = true)]
    async fn work_that_is_off_never_comes() {
        let mut timers = Timers::start(periods(None, false));
        let counts = count(&mut timers, Duration::from_secs(630)).await;
        assert!(!counts.contains_key(&Tick::Relist), "{counts:?}");
        assert!(!counts.contains_key(&Tick::DryRuns), "{counts:?}");
        assert_eq!(counts[&Tick::LastSeen], 10);
    }

    #[tokio::test(start_paused = true)]
    async fn answers_come_from_both_tasks_and_an_ended_task_is_let_go() {
        let (dry_tx, dry_rx) = mpsc::unbounded_channel();
        let (rel_tx, rel_rx) = mpsc::unbounded_channel();
        let mut answers = Answers {
            dry_runs: Some(dry_rx),
            releases: Some(rel_rx),
            audit: None,
        };
        drop(dry_tx);
        rel_tx
            .send(ClusterReleased {
                id: 7,
                outcome: crate::locks::release::ReleaseOutcome::Released,
            })
            .unwrap();
        match answers.next().await {
            Answer::Released(r) => assert_eq!(r.id, 7),
            Answer::DryRun(_) => panic!("no dry-run answer was sent"),
            Answer::Audit(_) => panic!("no audit record was sent"),
        }
        // Nothing more is sent: the next answer never comes.
        let waited = tokio::time::timeout(Duration::from_secs(3600), answers.next()).await;
        assert!(waited.is_err());
        assert!(
            answers.dry_runs.is_none(),
            "the ended dry-run task is let go"
        );
        assert!(answers.releases.is_some(), "the writer is still connected");
    }
}
