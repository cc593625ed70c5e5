//! Local holders: the holder text the CLI writes, `/proc/<pid>/stat` as proc(5) lays it
//! out, and the rule that a process of this host that is gone makes its lock stale at once.

use super::*;
use std::sync::{Arc, Mutex};

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

#[test]
fn the_cli_default_holder_is_read_back() {
    // `default_holder` in src/cmd/intent.rs: `{user}@{host} (pid {pid})`.
    assert_eq!(
        parse("alice@build-7 (pid 4242)"),
        Some(LocalHolder {
            user: "alice",
            host: "build-7",
            pid: 4242
        })
    );
    assert_eq!(
        parse("ci@runner@corp (pid 1)").map(|h| (h.user, h.host)),
        Some(("ci@runner", "corp")),
        "the host is after the last @"
    );
    for other in [
        "pod:ci/deploy-x",
        "alice@laptop",
        "alice@laptop (pid)",
        "alice@laptop (pid -3)",
        "alice@laptop (pid 0)",
        "@laptop (pid 3)",
        "deploy job 7 (pid 3)",
    ] {
        assert_eq!(parse(other), None, "{other}");
    }
}

#[test]
fn proc_stat_gives_state_and_start_time() {
    // proc(5): pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
    // cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime ...
    // A command name may hold spaces and parentheses.
    let line = "4242 (sh (deploy) x) S 1 4242 4242 0 -1 4194304 120 0 0 0 1 0 0 0 20 0 1 0 \
                250000 2560000 200 18446744073709551615";
    let boot = Some((at("2026-01-01T00:00:00Z"), 100));
    // 250000 ticks at 100 per second: 2500 s after boot.
    assert_eq!(
        from_proc_stat(line, boot),
        Process::Running {
            started: Some(at("2026-01-01T00:41:40Z"))
        }
    );
    assert_eq!(
        from_proc_stat(line, None),
        Process::Running { started: None }
    );
    let zombie = line.replace(") S ", ") Z ");
    assert_eq!(from_proc_stat(&zombie, boot), Process::Gone);
}

#[test]
fn this_hosts_processes_are_read_as_they_are() {
    let host = HostProcesses::new();
    let me = host.process(std::process::id());
    let Process::Running { started } = me else {
        panic!("this test runs: {me:?}")
    };
    if let Some(started) = started {
        let age = Timestamp::now().duration_since(started);
        assert!(
            age >= SignedDuration::ZERO - SignedDuration::from_secs(1)
                && age < SignedDuration::from_hours(24),
            "{started}"
        );
    }
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    assert_eq!(host.process(pid), Process::Gone, "exited and reaped");
}

/// A host named `build-7` whose processes the test sets.
#[derive(Clone, Default)]
struct Fake(Arc<Mutex<BTreeMap<u32, Process>>>);

impl Processes for Fake {
    fn host(&self) -> &str {
        "build-7"
    }
    fn process(&self, pid: u32) -> Process {
        self.0
            .lock()
            .unwrap()
            .get(&pid)
            .cloned()
            .unwrap_or(Process::Gone)
    }
}

#[test]
fn a_process_of_this_host_that_is_gone_is_known_at_once_and_since_when() {
    let fake = Fake::default();
    let taken = at("2026-01-01T10:00:00Z");
    fake.0.lock().unwrap().insert(
        42,
        Process::Running {
            started: Some(at("2026-01-01T09:59:58Z")),
        },
    );
    let mut local = LocalHolders::new(Box::new(fake.clone()));
    let holder = "alice@build-7 (pid 42)";
    let elsewhere = "alice@laptop (pid 43)";
    local.refresh([(holder, taken), (elsewhere, taken)], taken);
    assert_eq!(local.gone(holder), None, "it runs");
    assert_eq!(local.gone(elsewhere), None, "another host: unknowable");

    fake.0.lock().unwrap().remove(&42);
    let exited = at("2026-01-01T10:00:05Z");
    local.refresh([(holder, taken)], exited);
    assert_eq!(
        local.gone(holder),
        Some(("holder process 42 on build-7 is gone".to_string(), exited)),
        "five seconds after the lock was taken, whatever its TTL"
    );
    local.refresh([(holder, taken)], at("2026-01-01T10:01:00Z"));
    assert_eq!(
        local.gone(holder).unwrap().1,
        exited,
        "since the first look"
    );

    // The pid taken by a later process.
    fake.0.lock().unwrap().insert(
        42,
        Process::Running {
            started: Some(at("2026-01-01T10:30:00Z")),
        },
    );
    local.refresh([(holder, taken)], at("2026-01-01T10:31:00Z"));
    let (why, _) = local.gone(holder).unwrap();
    assert!(why.contains("pid 42 is now a process started at"), "{why}");
    // Started within the margin of the lock: taken to be its holder.
    fake.0.lock().unwrap().insert(
        42,
        Process::Running {
            started: Some(at("2026-01-01T10:00:20Z")),
        },
    );
    local.refresh([(holder, taken)], at("2026-01-01T10:32:00Z"));
    assert_eq!(local.gone(holder), None);
}
