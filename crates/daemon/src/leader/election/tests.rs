//! The election against a fake Lease API with kube-apiserver's optimistic concurrency, on
//! tokio's paused clock (time moves only when a test advances it or every task waits).

use super::*;
use std::sync::Mutex;

const TIMINGS: Timings = Timings {
    lease_duration: Duration::from_secs(15),
    renew_deadline: Duration::from_secs(10),
    retry_period: Duration::from_secs(2),
};

/// Monotonic and wall time from tokio's (paused) clock.
struct TokioClock {
    start: tokio::time::Instant,
    wall_start: Timestamp,
}

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn wall(&self) -> Timestamp {
        let elapsed = jiff::SignedDuration::try_from(self.start.elapsed()).unwrap();
        self.wall_start + elapsed
    }
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(TokioClock {
        start: tokio::time::Instant::now(),
        wall_start: "2026-03-01T12:00:00Z".parse().unwrap(),
    })
}

/// A Lease store that answers like kube-apiserver (409 on a stale `resourceVersion` or an
/// existing name), and fails, hangs or loses answers on demand. Every request yields once
/// first, so electors stepped together interleave their requests.
#[derive(Default)]
struct Fake(Mutex<FakeState>);

#[derive(Default)]
struct FakeState {
    lease: Option<Versioned>,
    version: u64,
    /// This many next requests fail with a 500.
    failures: usize,
    /// Requests are never answered.
    hang: bool,
    /// Writes are applied but their answers lost (the client sees an error).
    lose_answers: bool,
    /// Every record written, in order.
    writes: Vec<LeaseRecord>,
    /// Checked at every request: at most one of them acts as leader.
    leaders: Vec<Leadership>,
}

impl FakeState {
    fn write(&mut self, record: LeaseRecord) -> String {
        self.version += 1;
        let resource_version = self.version.to_string();
        self.writes.push(record.clone());
        self.lease = Some(Versioned {
            record,
            resource_version: resource_version.clone(),
        });
        resource_version
    }
}

fn server_error() -> LeaseError {
    LeaseError::Api(kube::Error::Api(
        kube::core::Status::failure("injected", "InternalError")
            .with_code(500)
            .boxed(),
    ))
}

impl Fake {
    fn state(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.0.lock().unwrap()
    }

    fn record(&self) -> LeaseRecord {
        self.state().lease.clone().unwrap().record
    }

    /// Common to every request: the invariant, then hangs and failures.
    async fn enter(&self) -> Result<(), LeaseError> {
        tokio::task::yield_now().await;
        let hang = {
            let mut s = self.state();
            let acting = s.leaders.iter().filter(|l| l.is_leader()).count();
            assert!(acting <= 1, "{acting} replicas act as leader");
            if s.failures > 0 && !s.hang {
                s.failures -= 1;
                return Err(server_error());
            }
            s.hang
        };
        if hang {
            std::future::pending::<()>().await;
        }
        Ok(())
    }

    fn answer(&self, resource_version: String) -> Result<String, LeaseError> {
        if self.state().lose_answers {
            return Err(server_error());
        }
        Ok(resource_version)
    }
}

impl LeaseApi for Arc<Fake> {
    async fn get(&self) -> Result<Option<Versioned>, LeaseError> {
        self.enter().await?;
        Ok(self.state().lease.clone())
    }

    async fn create(&self, record: &LeaseRecord) -> Result<String, LeaseError> {
        self.enter().await?;
        let version = {
            let mut s = self.state();
            if s.lease.is_some() {
                return Err(LeaseError::AlreadyExists);
            }
            s.write(record.clone())
        };
        self.answer(version)
    }

    async fn update(
        &self,
        record: &LeaseRecord,
        resource_version: &str,
    ) -> Result<String, LeaseError> {
        self.enter().await?;
        let version = {
            let mut s = self.state();
            match &s.lease {
                Some(current) if current.resource_version == resource_version => {}
                Some(_) => return Err(LeaseError::Conflict),
                None => return Err(server_error()),
            }
            s.write(record.clone())
        };
        self.answer(version)
    }
}

/// A replica: its elector, its leadership and its state.
struct Replica {
    elector: Elector<Arc<Fake>>,
    leadership: Leadership,
    state: State,
}

impl Replica {
    fn new(fake: &Arc<Fake>, identity: &str, clock: &Arc<dyn Clock>) -> Replica {
        let leadership = Leadership::elected(clock.clone());
        fake.state().leaders.push(leadership.clone());
        Replica {
            elector: Elector::new(
                fake.clone(),
                identity.into(),
                "driftd/driftd".into(),
                TIMINGS,
                clock.clone(),
                leadership.clone(),
            ),
            leadership,
            state: State::Follower,
        }
    }

    async fn step(&mut self) -> Duration {
        let (state, wait) = self.elector.step(self.state).await;
        self.state = state;
        wait
    }

    fn leading(&self) -> bool {
        matches!(self.state, State::Leading { .. })
    }
}

/// A record naming `holder` for 15 s.
fn held_by(holder: &str) -> LeaseRecord {
    LeaseRecord {
        holder: holder.into(),
        lease_duration_seconds: 15,
        ..LeaseRecord::default()
    }
}

async fn advance(by: Duration) {
    tokio::time::advance(by).await;
}

#[tokio::test(start_paused = true)]
async fn creates_a_missing_lease_then_renews_it() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let mut a = Replica::new(&fake, "a", &clock);
    assert!(!a.leadership.is_leader());
    assert_eq!(a.step().await, TIMINGS.retry_period);
    assert!(a.leading() && a.leadership.is_leader());
    let created = fake.record();
    assert_eq!(created.holder, "a");
    assert_eq!(created.lease_duration_seconds, 15);
    assert_eq!(created.transitions, 0);
    assert_eq!(created.acquire_time, created.renew_time);

    advance(TIMINGS.retry_period).await;
    a.step().await;
    let renewed = fake.record();
    assert!(a.leading());
    assert_eq!(renewed.acquire_time, created.acquire_time);
    assert_eq!(
        renewed
            .renew_time
            .unwrap()
            .duration_since(created.renew_time.unwrap()),
        jiff::SignedDuration::from_secs(2)
    );
    assert_eq!(renewed.transitions, 0);
}

#[tokio::test(start_paused = true)]
async fn waits_out_a_live_holder_by_its_own_clock_then_takes_over() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    // The holder's clock is years off: only the record's changes count.
    fake.state().write(LeaseRecord {
        renew_time: Some("2001-01-01T00:00:00Z".parse().unwrap()),
        ..held_by("old")
    });
    let mut b = Replica::new(&fake, "b", &clock);
    b.step().await;
    assert!(!b.leading());

    // The holder renews after 10 s: the wait starts again from when b sees it.
    advance(Duration::from_secs(10)).await;
    fake.state().write(LeaseRecord {
        renew_time: Some("2001-01-01T00:00:10Z".parse().unwrap()),
        ..held_by("old")
    });
    advance(Duration::from_secs(2)).await;
    b.step().await; // sees the renewal at t=12
    advance(Duration::from_secs(15) - Duration::from_millis(1)).await;
    b.step().await;
    assert!(!b.leading(), "took over before 15 s without change");
    assert_eq!(fake.record().holder, "old");

    advance(Duration::from_millis(1)).await;
    b.step().await;
    assert!(b.leading() && b.leadership.is_leader());
    let taken = fake.record();
    assert_eq!(taken.holder, "b");
    assert_eq!(taken.transitions, 1);
    assert_eq!(taken.acquire_time, Some(clock.wall()));
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_at_the_next_try() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let mut a = Replica::new(&fake, "a", &clock);
    let mut b = Replica::new(&fake, "b", &clock);
    a.step().await;
    b.step().await;
    assert!(a.leading() && !b.leading());

    // Shutdown: a stops acting first, then writes an empty holder.
    a.state = a.elector.shut_down(a.state);
    assert_eq!(a.state, State::Releasing);
    assert!(!a.leadership.is_leader());
    a.step().await;
    assert_eq!(a.state, State::Done);
    let released = fake.record();
    assert_eq!(released.holder, "");
    assert_eq!(released.lease_duration_seconds, 1);
    assert_eq!(released.transitions, 0);

    advance(TIMINGS.retry_period).await;
    b.step().await;
    assert!(b.leading());
    assert_eq!(fake.record().holder, "b");
    assert_eq!(fake.record().transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn a_follower_shuts_down_without_writing() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let mut a = Replica::new(&fake, "a", &clock);
    let mut b = Replica::new(&fake, "b", &clock);
    a.step().await;
    b.step().await;
    assert_eq!(b.elector.shut_down(b.state), State::Done);
    assert_eq!(fake.state().writes.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn steps_down_when_renewals_fail_past_the_renew_deadline_and_acquires_again() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let mut a = Replica::new(&fake, "a", &clock);
    a.step().await;
    let acquired = tokio::time::Instant::now();
    fake.state().failures = usize::MAX;
    loop {
        let wait = a.step().await;
        if !a.leading() {
            break;
        }
        assert!(a.leadership.is_leader());
        advance(wait).await;
    }
    // It acted until the renew deadline of its last renewal, and not after.
    assert_eq!(acquired.elapsed(), TIMINGS.renew_deadline);
    assert!(!a.leadership.is_leader());
    assert_eq!(a.state, State::Follower);

    // Still running: once the API answers again it takes its own Lease back.
    fake.state().failures = 0;
    advance(TIMINGS.retry_period).await;
    a.step().await;
    assert!(a.leading() && a.leadership.is_leader());
    assert_eq!(fake.record().transitions, 0);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_api_cannot_keep_a_leader_acting_past_its_deadline() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let mut a = Replica::new(&fake, "a", &clock);
    a.step().await;
    let acquired = tokio::time::Instant::now();
    fake.state().hang = true;
    advance(TIMINGS.retry_period).await;
    // The renewal is cut off at the deadline (tokio's clock runs while it waits).
    let wait = a.step().await;
    assert_eq!(acquired.elapsed(), TIMINGS.renew_deadline);
    assert!(!a.leadership.is_leader(), "leadership lapses by time");
    assert_eq!(wait, Duration::ZERO);
    a.step().await;
    assert_eq!(a.state, State::Follower);
}

#[tokio::test(start_paused = true)]
async fn steps_down_at_once_when_another_replica_holds_the_lease() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let mut a = Replica::new(&fake, "a", &clock);
    a.step().await;
    // Someone took it (a's renewals were lost, say): a's next renewal conflicts.
    fake.state().write(LeaseRecord {
        transitions: 1,
        ..held_by("b")
    });
    advance(TIMINGS.retry_period).await;
    a.step().await;
    assert_eq!(a.state, State::Follower);
    assert!(!a.leadership.is_leader());
    assert_eq!(fake.record().holder, "b");
}

#[tokio::test(start_paused = true)]
async fn of_two_replicas_racing_for_a_missing_lease_one_wins() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let mut a = Replica::new(&fake, "a", &clock);
    let mut b = Replica::new(&fake, "b", &clock);
    // Both read "no Lease" before either creates it.
    tokio::join!(a.step(), b.step());
    assert!(a.leading() ^ b.leading());
    assert_eq!(fake.state().writes.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn of_two_replicas_racing_for_an_expired_lease_one_wins() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    fake.state().write(held_by("gone"));
    let mut a = Replica::new(&fake, "a", &clock);
    let mut b = Replica::new(&fake, "b", &clock);
    tokio::join!(a.step(), b.step());
    advance(TIMINGS.lease_duration).await;
    // Both see it expired, both write at the version they read: one gets 409.
    tokio::join!(a.step(), b.step());
    assert!(a.leading() ^ b.leading());
    assert_eq!(fake.record().transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn run_releases_on_shutdown_and_a_follower_takes_over_within_one_retry_period() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let a = Replica::new(&fake, "a", &clock);
    let b = Replica::new(&fake, "b", &clock);
    let (stop_a, stopped_a) = tokio::sync::oneshot::channel::<()>();
    let a_leadership = a.leadership.clone();
    let a_task = tokio::spawn(a.elector.run(async move {
        let _ = stopped_a.await;
    }));
    a_leadership.subscribe().wait_for(|l| *l).await.unwrap();
    let b_leadership = b.leadership.clone();
    let b_task = tokio::spawn(b.elector.run(std::future::pending()));
    // Both run for a minute (tokio's clock jumps from timer to timer).
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(a_leadership.is_leader() && !b_leadership.is_leader());

    stop_a.send(()).unwrap();
    let stopped = tokio::time::Instant::now();
    a_task.await.unwrap();
    assert!(!a_leadership.is_leader());
    b_leadership.subscribe().wait_for(|l| *l).await.unwrap();
    assert!(
        stopped.elapsed() <= TIMINGS.retry_period,
        "{:?}",
        stopped.elapsed()
    );
    b_task.abort();
}

/// xorshift64: reproducible choices without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

/// Three replicas stepped in random orders, two at a time with interleaved requests, through
/// failures, lost answers, a hanging API, stalls and restarts: the fake asserts at every
/// request that at most one acts as leader; at the end, with the API healthy again, one
/// leads.
#[tokio::test(start_paused = true)]
async fn never_two_acting_leaders_under_random_interleavings() {
    for seed in 1..=150u64 {
        let (fake, clock) = (Arc::new(Fake::default()), clock());
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let names = ["a", "b", "c"];
        let mut replicas: Vec<Replica> = names
            .iter()
            .map(|n| Replica::new(&fake, n, &clock))
            .collect();
        for _ in 0..200 {
            match rng.next(10) {
                0..=4 => {
                    let i = rng.next(3) as usize;
                    let j = rng.next(3) as usize;
                    if i == j {
                        replicas[i].step().await;
                    } else {
                        let (x, y) = pick_two(&mut replicas, i, j);
                        tokio::join!(x.step(), y.step());
                    }
                }
                5 | 6 => advance(Duration::from_millis(rng.next(6_000))).await,
                7 => fake.state().failures = rng.next(4) as usize,
                8 => {
                    let mut s = fake.state();
                    s.lose_answers = rng.next(3) == 0;
                    s.hang = rng.next(8) == 0;
                }
                _ => {
                    // Shut a replica down (releasing if it holds the Lease) and restart it.
                    let i = rng.next(3) as usize;
                    let r = &mut replicas[i];
                    r.state = r.elector.shut_down(r.state);
                    r.step().await;
                    replicas[i] = Replica::new(&fake, names[i], &clock);
                }
            }
            let acting = replicas.iter().filter(|r| r.leadership.is_leader()).count();
            assert!(acting <= 1, "seed {seed}: {acting} acting leaders");
        }
        {
            let mut s = fake.state();
            (s.failures, s.lose_answers, s.hang) = (0, false, false);
        }
        for _ in 0..20 {
            for r in &mut replicas {
                r.step().await;
            }
            advance(TIMINGS.retry_period).await;
        }
        let leading: Vec<_> = replicas.iter().filter(|r| r.leading()).collect();
        assert_eq!(leading.len(), 1, "seed {seed}: no single leader at the end");
        assert!(leading[0].leadership.is_leader());
    }
}

fn pick_two(replicas: &mut [Replica], i: usize, j: usize) -> (&mut Replica, &mut Replica) {
    if i < j {
        let (left, right) = replicas.split_at_mut(j);
        (&mut left[i], &mut right[0])
    } else {
        let (left, right) = replicas.split_at_mut(i);
        (&mut right[0], &mut left[j])
    }
}

#[tokio::test(start_paused = true)]
async fn the_standing_says_who_leads_and_why_this_replica_does_not() {
    let (fake, clock) = (Arc::new(Fake::default()), clock());
    let mut a = Replica::new(&fake, "a", &clock);
    let mut b = Replica::new(&fake, "b", &clock);
    assert_eq!(b.leadership.standing(), Standing::Starting);
    a.step().await;
    b.step().await;
    assert_eq!(a.leadership.standing(), Standing::Leading);
    assert_eq!(
        b.leadership.standing(),
        Standing::Following { holder: "a".into() }
    );
    assert!(b
        .leadership
        .standing()
        .no_events_because()
        .unwrap()
        .contains("replica a holds the leader Lease"));

    // A replica that cannot reach its Lease at all says so, and why.
    let (broken, clock) = (Arc::new(Fake::default()), self::clock());
    broken.state().failures = 10;
    let mut c = Replica::new(&broken, "c", &clock);
    c.step().await;
    match c.leadership.standing() {
        Standing::Failing { why } => assert!(why.contains("injected"), "{why}"),
        other => panic!("not failing: {other:?}"),
    }
    assert_eq!(a.leadership.standing().no_events_because(), None);
}

#[test]
fn a_forbidden_lease_is_said_in_rbac_words() {
    let forbidden = LeaseError::Api(kube::Error::Api(
        kube::core::Status::failure("leases is forbidden", "Forbidden")
            .with_code(403)
            .boxed(),
    ));
    assert_eq!(
        failure_in_words(&forbidden, "driftd/driftd"),
        "RBAC forbids it: driftd's ServiceAccount may not get, create and update the Lease driftd/driftd"
    );
    let missing = LeaseError::NoNamespace("driftd".into());
    assert!(
        failure_in_words(&missing, "driftd/driftd").starts_with("namespace driftd does not exist")
    );
}
