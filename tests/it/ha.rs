//! driftd's own high availability, end to end: two `driftd serve` replicas, each
//! with its own database, against one simulator. One leads (the `driftd` Lease in namespace
//! `driftd` names it, `driftd_leader` is 1 on it and 0 on the other); both report the same
//! drift; only the leader publishes Events. A SIGTERM'd leader releases the Lease, a killed
//! one is taken over after the lease duration, and a leader whose renewals fail steps down
//! without exiting, with never two acting leaders.
//!
//! The election's logic (expiry by the observer's clock, renew deadline, races, release) is
//! unit-tested against a fake Lease API in `crates/daemon/src/leader/election/tests.rs`.

use crate::scaffold::*;
use driftd_daemon::leader::{KubeLease, LeaseApi, LeaseError, LeaseRecord};
use jiff::Timestamp;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const T: Duration = Duration::from_secs(30);

/// Short timings where the defaults are not what is measured.
const SHORT: &str = "[leader_election]\nlease_duration_seconds = 3\nrenew_deadline_seconds = 2\nretry_period_seconds = 0.5\n";

/// What a replica logs (at debug level) when a settled transition is not its to announce.
const LEFT_TO_LEADER: &str = "not the leader: the leader publishes the Event";

const APP: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: ha
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: ha
data:
  mode: blue
";

/// One `driftd serve` replica with its own database, named by `POD_NAME`.
struct Replica {
    name: String,
    daemon: Daemon,
    db: PathBuf,
}

impl Replica {
    fn start(sim: &Sim, root: &Path, name: &str, extra_config: &str) -> Replica {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let config = write_config(&dir, extra_config);
        let db = dir.join("driftd.db");
        commit(&db, "app", &root.join("app.yaml"));
        let env = [("POD_NAME", name), ("DRIFTD_NAMESPACE", "driftd")];
        let daemon = Daemon::start(&config, &sim.kubeconfig, &env);
        Replica {
            name: name.into(),
            daemon,
            db,
        }
    }

    /// `driftd_leader`, or `None` if the replica does not answer.
    fn leader(&self) -> Option<bool> {
        let (status, body) = self.daemon.get("/metrics");
        if status != 200 {
            return None;
        }
        body.lines()
            .find_map(|l| l.strip_prefix("driftd_leader "))
            .map(|v| v.trim() == "1")
    }

    fn alive(&mut self) -> bool {
        self.daemon.proc.child.try_wait().unwrap().is_none()
    }

    /// `(time, became leader?)` for each "became leader" / "stopped leading" log line.
    fn transitions(&self) -> Vec<(Timestamp, bool)> {
        self.daemon
            .proc
            .stderr()
            .lines()
            .filter_map(|line| {
                let became = if line.contains("became leader") {
                    true
                } else if line.contains("stopped leading") {
                    false
                } else {
                    return None;
                };
                let time = line.split_whitespace().next()?.parse().ok()?;
                Some((time, became))
            })
            .collect()
    }

    /// Periods this replica led, by its log (an open one ends `now`).
    fn terms(&self, now: Timestamp) -> Vec<(Timestamp, Timestamp)> {
        let mut terms = Vec::new();
        let mut started = None;
        for (time, became) in self.transitions() {
            match (became, started) {
                (true, None) => started = Some(time),
                (false, Some(from)) => {
                    terms.push((from, time));
                    started = None;
                }
                _ => panic!("{}: unpaired leadership log lines", self.name),
            }
        }
        terms.extend(started.map(|from| (from, now)));
        terms
    }

    fn log_count(&self, needle: &str) -> usize {
        self.daemon.proc.stderr().matches(needle).count()
    }
}

/// A simulator with driftd's namespace and the app applied; `app.yaml` in `root`.
fn cluster(root: &Path) -> Sim {
    let sim = Sim::start(root);
    std::fs::write(root.join("app.yaml"), APP).unwrap();
    sim.kubectl(&["create", "namespace", "driftd"]);
    sim.kubectl(&["apply", "-f", root.join("app.yaml").to_str().unwrap()]);
    sim
}

/// A cluster where replica `driftd-a` leads and `driftd-b`, started after it, follows: both
/// ready, b having seen a's Lease.
fn a_leads_b_follows(root: &Path, extra_config: &str) -> (Sim, Replica, Replica) {
    let sim = cluster(root);
    let a = Replica::start(&sim, root, "driftd-a", extra_config);
    wait_for("a leads", T, || (a.leader() == Some(true)).then_some(()));
    let b = Replica::start(&sim, root, "driftd-b", extra_config);
    a.daemon.wait_ready();
    b.daemon.wait_ready();
    wait_for("b sees a as leader", T, || {
        (b.log_count("new leader observed") == 1).then_some(())
    });
    assert_eq!(b.leader(), Some(false));
    (sim, a, b)
}

/// The `driftd` Lease's spec, if it exists.
fn lease(sim: &Sim) -> Option<Value> {
    let url = format!(
        "{}/apis/coordination.k8s.io/v1/namespaces/driftd/leases/driftd",
        sim.url
    );
    let (status, body) = http_get(&url);
    (status == 200).then(|| serde_json::from_str::<Value>(&body).unwrap()["spec"].clone())
}

fn holder(sim: &Sim) -> Option<String> {
    lease(sim).and_then(|s| s["holderIdentity"].as_str().map(str::to_string))
}

/// Waits until exactly one of `replicas` reports `driftd_leader 1` and the Lease names it;
/// returns its index.
fn wait_single_leader(sim: &Sim, replicas: &[&Replica]) -> usize {
    wait_for("exactly one leader, named by the Lease", T, || {
        let leading: Vec<usize> = (0..replicas.len())
            .filter(|&i| replicas[i].leader() == Some(true))
            .collect();
        match leading.as_slice() {
            [one] if holder(sim).as_deref() == Some(replicas[*one].name.as_str()) => Some(*one),
            _ => None,
        }
    })
}

fn set_mode(sim: &Sim, mode: &str) {
    sim.merge_patch(
        "ha",
        &["configmap", "settings"],
        &json!({"data": {"mode": mode}}),
    );
}

/// driftd's Events on the ConfigMap: (reason, reportingInstance, times observed).
fn drift_events(sim: &Sim) -> Vec<(String, String, Vec<Timestamp>)> {
    let list = sim.kubectl_json(&["get", "events.v1.events.k8s.io", "-n", "ha"]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["reportingController"] == "driftd")
        .map(|e| {
            let times = [&e["eventTime"], &e["series"]["lastObservedTime"]]
                .into_iter()
                .filter_map(|t| t.as_str()?.parse().ok())
                .collect();
            (
                e["reason"].as_str().unwrap().to_string(),
                e["reportingInstance"].as_str().unwrap().to_string(),
                times,
            )
        })
        .collect()
}

/// The ConfigMap's entry in a replica's `/drift`, once its class is `class`.
fn wait_class(replica: &Replica, class: &str) -> Value {
    wait_for(&format!("{}: settings {class}", replica.name), T, || {
        find(
            &replica.daemon.drift(&format!("?class={class}")),
            "ConfigMap",
            "settings",
        )
        .filter(|o| o["class"] == class)
        .cloned()
    })
}

#[test]
fn one_of_two_replicas_leads_both_report_drift_only_the_leader_publishes_events() {
    let dir = tempfile::tempdir().unwrap();
    let sim = cluster(dir.path());
    let a = Replica::start(&sim, dir.path(), "driftd-a", "");
    let b = Replica::start(&sim, dir.path(), "driftd-b", "");
    a.daemon.wait_ready();
    b.daemon.wait_ready();
    let leader = wait_single_leader(&sim, &[&a, &b]);
    let (leader, follower) = if leader == 0 { (&a, &b) } else { (&b, &a) };
    assert_eq!(follower.leader(), Some(false));
    let spec = lease(&sim).unwrap();
    assert_eq!(spec["leaseDurationSeconds"], 15);
    assert_eq!(spec["leaseTransitions"], 0);

    set_mode(&sim, "green");
    let seen_by_leader = wait_class(leader, "modified");
    let seen_by_follower = wait_class(follower, "modified");
    for field in ["source", "revision", "changes", "patch", "class"] {
        assert_eq!(seen_by_leader[field], seen_by_follower[field], "{field}");
    }
    // Both settle the drift and record its episode; the follower decides, right then, to
    // leave the Event to the leader.
    wait_for("the follower leaves the Event to the leader", T, || {
        (follower.log_count(LEFT_TO_LEADER) == 1).then_some(())
    });
    for replica in [leader, follower] {
        wait_for(&format!("{} settles the drift", replica.name), T, || {
            (replica.log_count("drift detected") == 1).then_some(())
        });
        let open = driftd_store::Store::open(&replica.db)
            .unwrap()
            .open_episodes()
            .unwrap();
        assert_eq!(open.len(), 1, "{}: {open:?}", replica.name);
    }
    assert_eq!(leader.log_count(LEFT_TO_LEADER), 0);
    let events = wait_for("the leader's DriftDetected Event", T, || {
        let events = drift_events(&sim);
        (!events.is_empty()).then_some(events)
    });
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "DriftDetected");
    assert_eq!(
        events[0].1, leader.name,
        "reportingInstance names the leader"
    );
    assert_eq!(follower.leader(), Some(false));
}

#[test]
fn a_leader_stopped_by_sigterm_hands_over_within_one_retry_period() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, mut a, b) = a_leads_b_follows(dir.path(), "");

    let pid = a.daemon.proc.child.id().to_string();
    let sent = Instant::now();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    wait_for("b leads", T, || (b.leader() == Some(true)).then_some(()));
    let took = sent.elapsed();
    println!(
        "graceful handover (default timings, retry period 2 s): b led {took:?} after SIGTERM to a"
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");

    let status = wait_for("a exits", T, || a.daemon.proc.child.try_wait().unwrap());
    assert!(status.success(), "{status:?}");
    let log = a.daemon.proc.stderr();
    let stopped = log.find("stopped leading").expect("a logged stopping");
    let released = log
        .find("released the Lease")
        .expect("a released the Lease");
    assert!(stopped < released, "a stops acting before it releases");
    let spec = lease(&sim).unwrap();
    assert_eq!(spec["holderIdentity"], "driftd-b");
    assert_eq!(spec["leaseTransitions"], 1);
}

#[test]
fn a_killed_leader_is_taken_over_within_lease_duration_plus_retry_period() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, mut a, b) = a_leads_b_follows(dir.path(), SHORT);

    let killed = Instant::now();
    a.daemon.proc.child.kill().unwrap();
    wait_for("b leads", T, || (b.leader() == Some(true)).then_some(()));
    let took = killed.elapsed();
    println!("kill -9 takeover (lease 3 s, retry 0.5 s): b led {took:?} after a was killed");
    // Lease duration plus retry period, plus 0.25 s for this test's polling and a shared
    // machine's scheduling.
    assert!(took < Duration::from_millis(3_750), "took {took:?}");
    assert!(
        took >= Duration::from_secs(2),
        "took {took:?}: before the lease could expire"
    );
    let spec = lease(&sim).unwrap();
    assert_eq!(spec["holderIdentity"], "driftd-b");
    assert_eq!(spec["leaseTransitions"], 1);
}

/// Polls the Lease in the background: (holder, leaseTransitions) each time it changes.
struct LeaseHistory {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<(String, i64)>>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LeaseHistory {
    fn start(sim: &Sim) -> LeaseHistory {
        let stop = Arc::new(AtomicBool::new(false));
        let seen: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
        let url = sim.url.clone();
        let thread = {
            let (stop, seen) = (stop.clone(), Arc::clone(&seen));
            std::thread::spawn(move || {
                let url =
                    format!("{url}/apis/coordination.k8s.io/v1/namespaces/driftd/leases/driftd");
                while !stop.load(Ordering::SeqCst) {
                    let (status, body) = http_get(&url);
                    if status == 200 {
                        let spec = serde_json::from_str::<Value>(&body).unwrap()["spec"].clone();
                        let now = (
                            spec["holderIdentity"].as_str().unwrap_or("").to_string(),
                            spec["leaseTransitions"].as_i64().unwrap_or(0),
                        );
                        let mut seen = seen.lock().unwrap();
                        if seen.last() != Some(&now) {
                            seen.push(now);
                        }
                    }
                    std::thread::sleep(Duration::from_millis(25));
                }
            })
        };
        LeaseHistory {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> Vec<(String, i64)> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap();
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for LeaseHistory {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_leader_that_cannot_renew_steps_down_without_exiting_and_never_two_lead() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, mut a, mut b) = a_leads_b_follows(dir.path(), SHORT);
    let history = LeaseHistory::start(&sim);

    // 1. a leads and publishes.
    set_mode(&sim, "green");
    wait_for("a's DriftDetected", T, || {
        (drift_events(&sim).len() == 1).then_some(())
    });

    // 2. Every Lease update fails: a cannot renew, b cannot take over.
    sim.admin(
        "POST",
        "faults",
        json!({"resource": "leases", "verb": "update", "count": 100_000, "code": 500}),
    );
    let blocked = Instant::now();
    wait_for("a steps down", T, || {
        (a.leader() == Some(false)).then_some(())
    });
    println!(
        "renewals blocked: a stepped down {:?} later (renew deadline 2 s)",
        blocked.elapsed()
    );
    assert!(a.alive(), "a exited on losing the Lease");
    assert_eq!(a.daemon.get("/healthz").0, 200);
    assert_eq!(a.daemon.get("/readyz").0, 200);
    // It stops acting, then logs (`stop_leading`): the line can trail the metric.
    wait_for("a logs that it stopped leading", T, || {
        (a.log_count("stopped leading") > 0).then_some(())
    });
    assert_eq!(a.log_count("stopped leading"), 1);
    assert_eq!(b.leader(), Some(false));
    assert_eq!(holder(&sim).as_deref(), Some("driftd-a"), "nobody took it");

    // 3. Without a leader, drift is still reported and recorded, but nobody publishes.
    set_mode(&sim, "blue");
    for (replica, left_before) in [(&a, 0), (&b, 1)] {
        wait_class(replica, "in_sync");
        wait_for(
            &format!("{} settles, publishing nothing", replica.name),
            T,
            || (replica.log_count(LEFT_TO_LEADER) == left_before + 1).then_some(()),
        );
        assert_eq!(replica.log_count("drift resolved"), 1);
    }
    assert_eq!(drift_events(&sim).len(), 1, "{:?}", drift_events(&sim));
    assert!(a.alive() && b.alive());

    // 4. Once b too tries to take the Lease (expired by its clock), the API recovers just
    // after one of a's tries: whichever writes first (b, most likely) leads and publishes.
    let tries = "cannot acquire the Lease";
    wait_for("b tries to take the expired Lease", T, || {
        (b.log_count(tries) > 0).then_some(())
    });
    let a_tries = a.log_count(tries);
    wait_for("a tries again", T, || {
        (a.log_count(tries) > a_tries).then_some(())
    });
    assert_eq!(holder(&sim).as_deref(), Some("driftd-a"));
    sim.admin("DELETE", "faults", Value::Null);
    let leader = wait_single_leader(&sim, &[&a, &b]);
    let leader = [&a, &b][leader];
    set_mode(&sim, "red");
    let mut events = wait_for("the new leader's DriftDetected", T, || {
        let events = drift_events(&sim);
        (events.len() == 2).then_some(events)
    });
    events.sort_by_key(|e| e.2.first().copied());
    assert_eq!(events[0].1, "driftd-a");
    assert_eq!(events[1].1, leader.name);
    assert!(events.iter().all(|e| e.0 == "DriftDetected"), "{events:?}");
    println!("after the outage {} leads", leader.name);
    let lease_history = history.finish();
    println!("Lease history (holder, transitions): {lease_history:?}");
    println!("Events (reason, reportingInstance, times): {events:?}");

    // No two acting leaders: the replicas' own leadership periods do not overlap ...
    let now = Timestamp::now();
    let (a_terms, b_terms) = (a.terms(now), b.terms(now));
    println!("a led {a_terms:?}; b led {b_terms:?}");
    for (a_from, a_to) in &a_terms {
        for (b_from, b_to) in &b_terms {
            assert!(
                a_to <= b_from || b_to <= a_from,
                "a {a_from}..{a_to} overlaps b {b_from}..{b_to}"
            );
        }
    }
    // ... every Event fell within a period its reporting instance led ...
    assert!(events.iter().all(|(_, _, times)| !times.is_empty()));
    for (reason, instance, times) in &events {
        let terms = if instance == "driftd-a" {
            &a_terms
        } else {
            &b_terms
        };
        assert!(
            instance == "driftd-a" || instance == "driftd-b",
            "{instance}"
        );
        for time in times {
            assert!(
                terms.iter().any(|(from, to)| from <= time && time <= to),
                "{reason} by {instance} at {time}, outside its leadership {terms:?}"
            );
        }
    }
    // ... and the Lease changed hands only with a transition counted.
    assert_eq!(
        lease_history.first().map(|h| h.0.as_str()),
        Some("driftd-a")
    );
    for pair in lease_history.windows(2) {
        let ((from, n), (to, m)) = (&pair[0], &pair[1]);
        assert!(to == "driftd-a" || to == "driftd-b", "{to}");
        assert_eq!(*m, n + i64::from(from != to), "{from} -> {to}");
    }
    assert_eq!(lease_history.last().unwrap().0, leader.name);
}

/// The simulator serves Leases with kube-apiserver's optimistic concurrency, as driftd's
/// Lease client ([`KubeLease`]) sees it: a second create of the name is `AlreadyExists`, an
/// update at a stale `resourceVersion` is `Conflict`.
#[test]
fn the_simulator_serves_leases_with_optimistic_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    sim.kubectl(&["create", "namespace", "driftd"]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let config = kube::Config::new(sim.url.parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let (a, b) = (
            KubeLease::new(client.clone(), "driftd", "driftd"),
            KubeLease::new(client, "driftd", "driftd"),
        );
        let record = |holder: &str, transitions| LeaseRecord {
            holder: holder.into(),
            lease_duration_seconds: 15,
            acquire_time: Some("2026-01-01T00:00:00Z".parse().unwrap()),
            renew_time: Some("2026-01-01T00:00:01.5Z".parse().unwrap()),
            transitions,
        };
        assert!(a.get().await.unwrap().is_none());
        let created = a.create(&record("a", 0)).await.unwrap();
        assert!(matches!(
            b.create(&record("b", 0)).await,
            Err(LeaseError::AlreadyExists)
        ));
        let read = b.get().await.unwrap().unwrap();
        assert_eq!(read.resource_version, created);
        assert_eq!(read.record, record("a", 0));
        // a renews; b, still at the version it read, loses.
        let renewal = LeaseRecord {
            renew_time: Some("2026-01-01T00:00:03.5Z".parse().unwrap()),
            ..record("a", 0)
        };
        let renewed = a.update(&renewal, &created).await.unwrap();
        assert_ne!(renewed, created);
        assert!(matches!(
            b.update(&record("b", 1), &read.resource_version).await,
            Err(LeaseError::Conflict)
        ));
        assert_eq!(b.get().await.unwrap().unwrap().record.holder, "a");
    });
}

/// A replica whose Lease namespace does not exist serves drift but leads nothing: it says so
/// in `/readyz`, at the top of `driftd drift` and in `driftd_leader_election_failing`, and
/// stops saying so once the namespace exists and it takes the Lease.
#[test]
fn a_replica_that_cannot_take_its_lease_says_so_until_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    commit(&dir.path().join("driftd.db"), "shop", &examples());
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    let config = write_config(dir.path(), SHORT);
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[("DRIFTD_NAMESPACE", "nowhere")]);
    daemon.wait_ready();
    let why = "this replica publishes no Kubernetes Events: it cannot take the leader Lease \
               (namespace nowhere does not exist";
    let (status, body) = wait_for("/readyz says why", T, || {
        let (status, body) = daemon.get("/readyz");
        body.contains(why).then_some((status, body))
    });
    assert_eq!(status, 200, "a follower still serves drift: {body}");
    let out = Command::new(DRIFTD)
        .args(["drift", "--server", &daemon.url])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.lines().next().unwrap_or("").starts_with(why),
        "{table}"
    );
    assert_eq!(daemon.sample("driftd_leader_election_failing"), Some(1.0));
    assert_eq!(daemon.sample("driftd_leader"), Some(0.0));

    sim.kubectl(&["create", "namespace", "nowhere"]);
    wait_for("it leads", T, || {
        (daemon.sample("driftd_leader") == Some(1.0)).then_some(())
    });
    assert_eq!(daemon.sample("driftd_leader_election_failing"), Some(0.0));
    let (_, body) = daemon.get("/readyz");
    assert_eq!(body, "ready\n");
    assert!(daemon.drift("").get("no_events").is_none());
}
