//! Settling: Events and episodes record a drift state only once it held for the settle time,
//! so a controller that rewrites a field and puts it back makes no Event pair.
//!
//! Pure bookkeeping: comparisons are [`Settling::observe`]d with the time, and
//! [`Settling::due`] says which states held long enough to report. No I/O, no clock of its
//! own. `due` runs after every batch of watch events, so it visits only the states whose
//! time came (ordered by when they started), never every drifting object.

use driftd_core::report::DriftClass;
use driftd_k8s::ObjectKey;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A drift state as Events and episodes tell it apart: a new class or another set of changed
/// paths is a new state, new values at the same paths are not. The paths are held as a
/// hash: the index entry has them (read when a state is reported), and a copy per drifting
/// object cost about 100 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drift {
    pub class: DriftClass,
    paths: u64,
}

impl Drift {
    pub fn new(class: DriftClass, paths: &[impl AsRef<str>]) -> Drift {
        use std::hash::{Hash, Hasher};
        // Fixed keys: equal paths hash equal for the life of the process.
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        paths.len().hash(&mut hasher);
        for path in paths {
            path.as_ref().hash(&mut hasher);
        }
        Drift {
            class,
            paths: hasher.finish(),
        }
    }
}

/// A state that held for the settle time and differs from what was last reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub key: ObjectKey,
    /// The drift to announce, or `None`: the drift ended.
    pub drift: Option<Drift>,
}

/// Settle state of one object. An object with no tracker is in sync and was reported so.
#[derive(Debug, Clone, PartialEq)]
enum Tracker {
    /// An episode left open by an earlier run; no comparison yet in this one.
    Restored { reported: Drift },
    /// Comparisons agree with what was last reported.
    Settled { reported: Option<Drift> },
    /// Comparisons have said `observed` since `since`, which is not what was last reported.
    Changing {
        reported: Option<Drift>,
        observed: Option<Drift>,
        since: Instant,
    },
}

impl Tracker {
    /// The tracker after a comparison said `observed` at `now`.
    fn observe(self, observed: Option<Drift>, now: Instant) -> Tracker {
        let (reported, pending) = match self {
            Tracker::Restored { reported } => (Some(reported), None),
            Tracker::Settled { reported } => (reported, None),
            Tracker::Changing {
                reported,
                observed,
                since,
            } => (reported, Some((observed, since))),
        };
        if observed == reported {
            // Back to what was reported within the settle time: nothing to say.
            return Tracker::Settled { reported };
        }
        let since = match pending {
            Some((pending, since)) if pending == observed => since,
            _ => now,
        };
        Tracker::Changing {
            reported,
            observed,
            since,
        }
    }

    /// The tracker at `now`, and the state to report if one held for `settle`.
    fn due(self, now: Instant, settle: Duration) -> (Tracker, Option<Option<Drift>>) {
        match self {
            Tracker::Changing {
                observed, since, ..
            } if now.saturating_duration_since(since) >= settle => {
                (Tracker::Settled { reported: observed }, Some(observed))
            }
            other => (other, None),
        }
    }

    /// What Events and episodes last said.
    /// When the pending state started, if one is pending.
    fn pending_since(&self) -> Option<Instant> {
        match self {
            Tracker::Changing { since, .. } => Some(*since),
            _ => None,
        }
    }

    fn reported(&self) -> Option<&Drift> {
        match self {
            Tracker::Restored { reported } => Some(reported),
            Tracker::Settled { reported } | Tracker::Changing { reported, .. } => reported.as_ref(),
        }
    }
}

/// The trackers of every object whose drift is or was recently not in sync. Keys are the
/// engine's shared ones: a key copy per tracker and per pending deadline would be a large
/// share of the memory that drift adds.
#[derive(Debug)]
pub struct Settling {
    settle: Duration,
    trackers: HashMap<Arc<ObjectKey>, Tracker>,
    /// The pending (`Changing`) trackers by when their state started: the next due first.
    pending: BTreeSet<(Instant, Arc<ObjectKey>)>,
}

impl Settling {
    pub fn new(settle: Duration) -> Settling {
        Settling {
            settle,
            trackers: HashMap::new(),
            pending: BTreeSet::new(),
        }
    }

    /// How long a state must hold before it is reported.
    pub fn settle(&self) -> Duration {
        self.settle
    }

    /// Takes over an episode an earlier run left open: reported, not yet compared.
    pub fn restore(&mut self, key: ObjectKey, reported: Drift) {
        self.take(&key);
        self.trackers
            .insert(Arc::new(key), Tracker::Restored { reported });
    }

    /// Records what a comparison of `key` said at `now` (`None`: in sync).
    pub fn observe(&mut self, key: &Arc<ObjectKey>, observed: Option<Drift>, now: Instant) {
        let tracker = match self.take(key) {
            Some(tracker) => tracker,
            None if observed.is_none() => return,
            None => Tracker::Settled { reported: None },
        };
        self.put(key.clone(), tracker.observe(observed, now));
    }

    /// Removes `key`'s tracker (and its pending deadline).
    fn take(&mut self, key: &ObjectKey) -> Option<Tracker> {
        let (key, tracker) = self.trackers.remove_entry(key)?;
        if let Some(since) = tracker.pending_since() {
            self.pending.remove(&(since, key));
        }
        Some(tracker)
    }

    /// Keeps `tracker` for `key` unless it says "in sync, reported so".
    fn put(&mut self, key: Arc<ObjectKey>, tracker: Tracker) {
        if tracker == (Tracker::Settled { reported: None }) {
            return;
        }
        if let Some(since) = tracker.pending_since() {
            self.pending.insert((since, key.clone()));
        }
        self.trackers.insert(key, tracker);
    }

    /// The states that held for the settle time by `now`: at most `limit`, the longest-held
    /// ones, in key order; each is reported from now on.
    pub fn due(&mut self, now: Instant, limit: usize) -> Vec<Report> {
        let mut reports = Vec::new();
        while let Some((since, _)) = self.pending.first() {
            if reports.len() >= limit {
                break;
            }
            if now.saturating_duration_since(*since) < self.settle {
                break;
            }
            let (_, key) = self.pending.pop_first().expect("just seen");
            let Some(tracker) = self.trackers.remove(&key) else {
                continue;
            };
            let (next, due) = tracker.due(now, self.settle);
            if let Some(drift) = due {
                reports.push(Report {
                    key: (*key).clone(),
                    drift,
                });
            }
            self.put(key, next);
        }
        reports.sort_by(|a, b| a.key.cmp(&b.key));
        reports
    }

    /// Stops tracking `key`; returns what was last reported (an open episode to close).
    pub fn forget(&mut self, key: &ObjectKey) -> Option<Drift> {
        self.take(key)?.reported().cloned()
    }

    /// Objects whose reported drift still holds.
    #[cfg(test)]
    pub fn steady(&self) -> impl Iterator<Item = (&ObjectKey, &Drift)> {
        self.trackers
            .iter()
            .filter_map(|(key, tracker)| match tracker {
                Tracker::Settled {
                    reported: Some(drift),
                } => Some((&**key, drift)),
                _ => None,
            })
    }

    /// Every tracked object (drifting, reported as drifting, or settling).
    pub fn keys(&self) -> impl Iterator<Item = &ObjectKey> {
        self.trackers.keys().map(|key| &**key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTLE: Duration = Duration::from_secs(5);

    fn key(name: &str) -> ObjectKey {
        crate::test_support::configmap("shop", name)
    }

    fn shared(name: &str) -> Arc<ObjectKey> {
        Arc::new(key(name))
    }

    fn modified(paths: &[&str]) -> Option<Drift> {
        Some(Drift::new(DriftClass::Modified, paths))
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn a_drift_state_is_its_class_and_its_paths_in_order() {
        let m = |paths: &[&str]| Drift::new(DriftClass::Modified, paths);
        assert_eq!(m(&["/data/x", "/data/y"]), m(&["/data/x", "/data/y"]));
        assert_ne!(m(&["/data/x", "/data/y"]), m(&["/data/y", "/data/x"]));
        assert_ne!(m(&["/data/x"]), m(&["/data/x", "/data/y"]));
        assert_ne!(m(&["/data/xy"]), m(&["/data/x", "y"]));
        assert_ne!(m(&[]), Drift::new(DriftClass::Missing, &[] as &[&str]));
        assert_ne!(
            m(&["/data/x"]),
            Drift::new(DriftClass::Uncommitted, &["/data/x"])
        );
    }

    #[test]
    fn a_state_is_reported_once_it_held_for_the_settle_time() {
        let t0 = Instant::now();
        let mut s = Settling::new(SETTLE);
        s.observe(&shared("a"), modified(&["/data/x"]), t0);
        assert!(s.due(t0 + secs(4.9), usize::MAX).is_empty());
        // Seen again (a re-list, another field's value): the clock does not restart.
        s.observe(&shared("a"), modified(&["/data/x"]), t0 + secs(3.0));
        assert_eq!(
            s.due(t0 + SETTLE, usize::MAX),
            vec![Report {
                key: key("a"),
                drift: modified(&["/data/x"])
            }]
        );
        assert!(
            s.due(t0 + secs(60.0), usize::MAX).is_empty(),
            "reported once"
        );
        assert_eq!(s.steady().count(), 1);

        s.observe(&shared("a"), None, t0 + secs(10.0));
        assert_eq!(s.steady().count(), 0, "a pending resolution is not steady");
        assert!(s.due(t0 + secs(14.0), usize::MAX).is_empty());
        assert_eq!(
            s.due(t0 + secs(15.0), usize::MAX),
            vec![Report {
                key: key("a"),
                drift: None
            }]
        );
        assert_eq!(s.keys().count(), 0, "in sync and reported so: forgotten");
    }

    #[test]
    fn a_flip_put_back_within_the_settle_time_reports_nothing() {
        let t0 = Instant::now();
        let mut s = Settling::new(SETTLE);
        s.observe(&shared("a"), modified(&["/data/x"]), t0);
        s.observe(&shared("a"), None, t0 + secs(1.0));
        assert!(s.due(t0 + secs(100.0), usize::MAX).is_empty());

        // The same while drifting: the paths change and change back.
        s.observe(&shared("b"), modified(&["/data/x"]), t0);
        s.due(t0 + SETTLE, usize::MAX);
        s.observe(
            &shared("b"),
            modified(&["/data/x", "/data/y"]),
            t0 + secs(6.0),
        );
        s.observe(&shared("b"), modified(&["/data/x"]), t0 + secs(7.0));
        assert!(s.due(t0 + secs(100.0), usize::MAX).is_empty());
    }

    #[test]
    fn another_state_before_the_settle_time_restarts_it() {
        let t0 = Instant::now();
        let mut s = Settling::new(SETTLE);
        s.observe(&shared("a"), modified(&["/data/x"]), t0);
        s.observe(&shared("a"), modified(&["/data/y"]), t0 + secs(4.0));
        assert!(s.due(t0 + secs(8.9), usize::MAX).is_empty());
        assert_eq!(
            s.due(t0 + secs(9.0), usize::MAX)[0].drift,
            modified(&["/data/y"])
        );
    }

    /// `due` visits only what is due: many objects settling at different times come out in
    /// the order their states started, each exactly once, and nothing early.
    #[test]
    fn states_come_due_in_time_order_each_once() {
        let t0 = Instant::now();
        let mut s = Settling::new(SETTLE);
        for i in 0..100 {
            s.observe(
                &shared(&format!("o{i:03}")),
                modified(&["/data/x"]),
                t0 + Duration::from_millis(100 * i),
            );
        }
        // o050 restarts its clock with another state at 7 s.
        s.observe(&shared("o050"), modified(&["/data/y"]), t0 + secs(7.0));
        let first = s.due(t0 + secs(5.45), usize::MAX);
        let names: Vec<_> = first.iter().map(|r| r.key.name.clone()).collect();
        assert_eq!(
            names,
            (0..=4).map(|i| format!("o{i:03}")).collect::<Vec<_>>()
        );
        let names = |reports: Vec<Report>| -> Vec<String> {
            reports.into_iter().map(|r| r.key.name).collect()
        };
        let expected = |range: std::ops::RangeInclusive<usize>| -> Vec<String> {
            range
                .filter(|i| *i != 50)
                .map(|i| format!("o{i:03}"))
                .collect()
        };
        // Started by 6 s: o005..=o060, but o050, which started again at 7 s.
        assert_eq!(names(s.due(t0 + secs(11.0), usize::MAX)), expected(5..=60));
        let at_12 = s.due(t0 + secs(12.0), usize::MAX);
        let o050 = at_12
            .iter()
            .find(|r| r.key.name == "o050")
            .expect("o050 due");
        assert_eq!(o050.drift, modified(&["/data/y"]));
        let mut with_o050 = expected(61..=70);
        with_o050.push("o050".into());
        with_o050.sort();
        assert_eq!(names(at_12), with_o050);
        assert_eq!(
            names(s.due(t0 + secs(100.0), usize::MAX)),
            expected(71..=99)
        );
        assert!(s.due(t0 + secs(200.0), usize::MAX).is_empty());
        assert_eq!(s.steady().count(), 100);
    }

    #[test]
    fn a_limited_step_takes_the_longest_held_and_leaves_the_rest_due() {
        let t0 = Instant::now();
        let mut s = Settling::new(SETTLE);
        for i in 0..10 {
            s.observe(
                &shared(&format!("o{i}")),
                modified(&["/data/x"]),
                t0 + Duration::from_millis(10 * (10 - i)),
            );
        }
        let names = |reports: Vec<Report>| -> Vec<String> {
            reports.into_iter().map(|r| r.key.name).collect()
        };
        let at = t0 + secs(60.0);
        assert_eq!(names(s.due(at, 3)), ["o7", "o8", "o9"]);
        assert_eq!(names(s.due(at, 3)), ["o4", "o5", "o6"]);
        assert_eq!(names(s.due(at, 100)), ["o0", "o1", "o2", "o3"]);
        assert!(s.due(at, 100).is_empty());
        assert_eq!(s.steady().count(), 10);
    }

    #[test]
    fn a_restored_episode_is_closed_or_kept_by_the_first_comparison() {
        let t0 = Instant::now();
        let mut s = Settling::new(SETTLE);
        s.restore(key("kept"), modified(&["/data/x"]).unwrap());
        s.restore(key("ended"), modified(&["/data/x"]).unwrap());
        s.restore(key("unseen"), modified(&["/data/x"]).unwrap());
        assert_eq!(s.steady().count(), 0, "not compared yet");
        s.observe(&shared("kept"), modified(&["/data/x"]), t0);
        s.observe(&shared("ended"), None, t0);
        let reports = s.due(t0 + SETTLE, usize::MAX);
        assert_eq!(
            reports,
            vec![Report {
                key: key("ended"),
                drift: None
            }]
        );
        let steady: Vec<_> = s.steady().map(|(k, _)| k.name.clone()).collect();
        assert_eq!(steady, vec!["kept"]);
        assert_eq!(s.forget(&key("unseen")), modified(&["/data/x"]));
        assert_eq!(s.forget(&key("unseen")), None);
    }
}
