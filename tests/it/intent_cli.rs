//! `driftd intent` and `driftd run` as a deploy pipeline runs them: the real binary, a real
//! database file, real child processes and signals.

use crate::scaffold::{wait_for, DRIFTD};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  image: v2\n";

/// A working directory with `app.yaml` and a database `d.db` (once something created it).
struct Workdir {
    dir: tempfile::TempDir,
}

impl Workdir {
    fn new() -> Workdir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("app.yaml"), CM).unwrap();
        Workdir { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(DRIFTD);
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("DRIFTD_DB", self.path("d.db"))
            .env("USER", "tester")
            // No cluster: `--holder pod:...` cannot be looked up here (tests/it/locks.rs
            // looks them up in the simulator), whatever the machine's kubeconfig.
            .env("KUBECONFIG", self.path("no-kubeconfig"))
            .env_remove("POD_NAME")
            .env_remove("POD_NAMESPACE")
            .stdin(Stdio::null());
        cmd
    }

    fn driftd(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("driftd runs")
    }

    #[track_caller]
    fn ok(&self, args: &[&str]) -> String {
        let out = self.driftd(args);
        assert!(
            out.status.success(),
            "driftd {args:?}: exit {:?}\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// `driftd intent list --all --format json`.
    fn intents(&self) -> Vec<Value> {
        let json = self.ok(&["intent", "list", "--all", "--format", "json"]);
        serde_json::from_str::<Value>(&json)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    fn intent(&self, id: i64) -> Value {
        self.intents()
            .into_iter()
            .find(|i| i["id"] == id)
            .unwrap_or_else(|| panic!("no intent {id}"))
    }

    fn begin(&self, extra: &[&str]) -> i64 {
        let mut args = vec!["intent", "begin", "--source", "web", "-f", "app.yaml"];
        args.extend(extra);
        let out = self.ok(&args);
        out.trim()
            .parse()
            .unwrap_or_else(|_| panic!("an id alone: {out:?}"))
    }

    /// History rows (newest first) as (EVENT, WHO, MESSAGE).
    fn history(&self) -> Vec<Value> {
        let json = self.ok(&["history", "--source", "web", "--format", "json"]);
        serde_json::from_str::<Value>(&json)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    /// sha256 of the database file and its WAL: "nothing written" made checkable.
    fn fingerprint(&self) -> (String, Option<String>) {
        let hash = |p: &Path| hex::encode(Sha256::digest(std::fs::read(p).unwrap()));
        let wal = self.path("d.db-wal");
        (hash(&self.path("d.db")), wal.exists().then(|| hash(&wal)))
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// (action, actor) of the intent transitions in history, oldest first.
fn transitions(history: &[Value]) -> Vec<(String, String)> {
    let mut t: Vec<(String, String)> = history
        .iter()
        .filter(|e| e["kind"] == "intent")
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["actor"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    t.reverse();
    t
}

#[test]
fn begin_list_renew_commit_and_history_with_who_and_when() {
    let w = Workdir::new();
    let out = w.driftd(&[
        "intent",
        "begin",
        "--source",
        "web",
        "--holder",
        "pod:ci/runner-1",
        "--ttl",
        "10m",
        "--author",
        "alice",
        "-m",
        "deploy v2",
        "-f",
        "app.yaml",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "1\n",
        "the id alone on stdout"
    );
    assert!(
        stderr(&out).contains("`driftd intent commit 1`"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("warning: holder pod ci/runner-1 not checked"),
        "no cluster to look it up in: said, and begun: {}",
        stderr(&out)
    );

    let intent = w.intent(1);
    assert_eq!(intent["state"], "pending");
    assert_eq!(intent["holder"], "pod:ci/runner-1");
    assert_eq!(intent["author"], "alice");
    assert_eq!(intent["ttl_seconds"], 600);
    let table = w.ok(&["intent", "list"]);
    let lines: Vec<&str> = table.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["ID", "SOURCE", "STATE", "HOLDER", "AGE", "EXPIRES", "OBJECTS", "MESSAGE"]
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[..4], ["1", "web", "pending", "pod:ci/runner-1"]);
    assert_eq!(row[5], "in", "{table}");

    let expires = |i: &Value| {
        i["expires_at"]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .unwrap()
    };
    let renewed = w.ok(&["intent", "renew", "1", "--ttl", "1h"]);
    assert!(
        renewed.starts_with("intent 1 renewed: expires at "),
        "{renewed}"
    );
    let after = w.intent(1);
    assert_eq!(after["ttl_seconds"], 3600);
    assert!(expires(&after) > expires(&intent));

    let out = w.ok(&["intent", "commit", "1", "--actor", "pod:ci/runner-1"]);
    assert_eq!(
        out,
        "intent 1 committed: revision 1 of source web (1 object)\n"
    );
    let committed = w.intent(1);
    assert_eq!(committed["state"], "committed");
    assert_eq!(committed["revision_id"], 1);
    assert_eq!(
        w.ok(&["intent", "list", "--format", "json"]).trim(),
        "[]",
        "none open"
    );
    let sources = w.ok(&["sources"]);
    let row: Vec<&str> = sources.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row[..5],
        ["web", "1", "1", "0", "alice"],
        "no object skipped; the intent's author"
    );

    let history = w.history();
    assert_eq!(history[0]["kind"], "revision");
    assert_eq!(history[0]["id"], 1);
    assert_eq!(history[0]["message"], "deploy v2");
    assert_eq!(
        transitions(&history),
        [
            ("begin".into(), "alice".into()),
            ("commit".into(), "pod:ci/runner-1".into())
        ]
    );
    for e in &history {
        let at = e["at"].as_str().or(e["committed_at"].as_str()).unwrap();
        assert!(at.parse::<jiff::Timestamp>().is_ok(), "when: {at}");
    }
    let table = w.ok(&["history", "--source", "web"]);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0][..3], ["REVISION", "EVENT", "WHO"]);
    assert_eq!(rows[1][..3], ["1", "commit", "alice"]);
    assert_eq!(
        rows[2][..5],
        ["-", "commit", "intent", "1", "pod:ci/runner-1"]
    );
    assert_eq!(rows[3][..5], ["-", "begin", "intent", "1", "alice"]);
}

#[test]
fn a_second_begin_is_refused_naming_the_lock_and_leaves_the_database_unchanged() {
    let w = Workdir::new();
    let first = w.begin(&["--holder", "pod:ci/runner-1"]);
    let before = w.fingerprint();
    let out = w.driftd(&[
        "intent",
        "begin",
        "--source",
        "web",
        "--holder",
        "pod:ci/runner-2",
        "-f",
        "app.yaml",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    for expected in [
        format!("source \"web\" is locked by intent {first} (pending)"),
        "held by pod:ci/runner-1".into(),
        "begun 0s ago by tester".into(),
        format!("`driftd intent release {first}`"),
    ] {
        assert!(err.contains(&expected), "{expected:?} in {err}");
    }
    assert_eq!(w.fingerprint(), before, "a refused begin writes nothing");
    assert_eq!(w.intents().len(), 1);
}

#[test]
fn deployers_racing_on_one_source_get_exactly_one_lock() {
    let w = Workdir::new();
    let racers: Vec<Child> = (0..6)
        .map(|i| {
            w.command(&[
                "intent",
                "begin",
                "--source",
                "web",
                "--holder",
                &format!("pod:ci/runner-{i}"),
                "-f",
                "app.yaml",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = racers
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let winners = outputs.iter().filter(|o| o.status.success()).count();
    assert_eq!(winners, 1, "exactly one deployer holds the lock");
    for o in outputs.iter().filter(|o| !o.status.success()) {
        let err = stderr(o);
        assert!(err.contains("is locked by intent 1 (pending)"), "{err}");
    }
    assert_eq!(w.intents().len(), 1);
}

#[test]
fn abort_fail_release_and_refused_transitions() {
    let w = Workdir::new();
    let aborted = w.begin(&[]);
    let out = w.ok(&[
        "intent",
        "abort",
        &aborted.to_string(),
        "--reason",
        "wrong branch",
    ]);
    assert_eq!(
        out,
        format!(
            "intent {aborted} of source web is aborted (by tester@{})\n",
            host()
        )
    );
    let before = w.fingerprint();
    let out = w.driftd(&["intent", "commit", &aborted.to_string()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("intent {aborted} of source \"web\" is aborted")),
        "{err}"
    );
    assert!(err.contains("wrong branch"), "{err}");
    assert!(
        err.contains("only a pending, expired, failed or interrupted intent can be committed"),
        "{err}"
    );
    let out = w.driftd(&["intent", "release", "42"]);
    assert!(
        stderr(&out).contains("no intent 42 in this database"),
        "{}",
        stderr(&out)
    );
    assert_eq!(w.fingerprint(), before, "refused transitions write nothing");

    let failed = w.begin(&[]);
    w.ok(&[
        "intent",
        "fail",
        &failed.to_string(),
        "--reason",
        "kubectl apply exited 1",
    ]);
    assert_eq!(w.intent(failed)["state"], "failed");
    // A failed deploy does not hold the lock, but stays open until released.
    let next = w.begin(&[]);
    w.ok(&["intent", "abort", &next.to_string()]);
    let open = w.ok(&["intent", "list", "--format", "json"]);
    assert!(open.contains("\"failed\""), "{open}");
    w.ok(&[
        "intent",
        "release",
        &failed.to_string(),
        "--actor",
        "ops@laptop",
        "--reason",
        "rolled back by hand",
    ]);
    let released = w.intent(failed);
    assert_eq!(released["state"], "released");
    assert_eq!(released["ended_by"], "ops@laptop");
    assert_eq!(released["end_reason"], "rolled back by hand");
    let actions: Vec<String> = transitions(&w.history())
        .into_iter()
        .map(|(a, _)| a)
        .collect();
    assert_eq!(
        actions,
        ["begin", "abort", "begin", "fail", "begin", "abort", "release"]
    );
}

#[test]
fn an_abandoned_intent_reads_as_expired_and_release_frees_the_lock() {
    let w = Workdir::new();
    let stale = w.begin(&["--ttl", "1s", "--holder", "pod:ci/gone"]);
    wait_for(
        "the intent to read as expired",
        Duration::from_secs(20),
        || (w.intent(stale)["state"] == "expired").then_some(()),
    );
    let table = w.ok(&["intent", "list"]);
    assert!(table.lines().nth(1).unwrap().contains(" ago"), "{table}");
    let out = w.driftd(&["intent", "begin", "--source", "web", "-f", "app.yaml"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("locked by intent {stale} (expired)")),
        "{err}"
    );
    assert!(err.contains("its holder stopped renewing it"), "{err}");
    assert!(
        err.contains(&format!("driftd intent release {stale}")),
        "{err}"
    );

    w.ok(&[
        "intent",
        "release",
        &stale.to_string(),
        "--actor",
        "ops",
        "--reason",
        "pod gone",
    ]);
    let next = w.begin(&[]);
    assert!(next > stale);
    assert_eq!(
        transitions(&w.history())[..2],
        [
            ("begin".into(), "tester".into()),
            ("release".into(), "ops".into())
        ]
    );
}

#[test]
fn the_holder_defaults_to_the_pod_from_the_downward_api() {
    let w = Workdir::new();
    let out = w
        .command(&["intent", "begin", "--source", "web", "-f", "app.yaml"])
        .env("POD_NAMESPACE", "ci")
        .env("POD_NAME", "deploy-7f9c")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(w.intent(1)["holder"], "pod:ci/deploy-7f9c");
    w.ok(&["intent", "abort", "1"]);
    w.begin(&[]);
    let holder = w.intent(2)["holder"].as_str().unwrap().to_string();
    assert!(
        holder.starts_with(&format!("tester@{} (pid ", host())),
        "{holder}"
    );
}

#[test]
fn bad_ttls_are_refused_before_anything_is_written() {
    let w = Workdir::new();
    for ttl in ["0s", "ten", "9d"] {
        let out = w.driftd(&[
            "intent", "begin", "--source", "web", "--ttl", ttl, "-f", "app.yaml",
        ]);
        assert_eq!(out.status.code(), Some(2), "{ttl}");
        assert!(stderr(&out).contains("--ttl"), "{}", stderr(&out));
    }
    assert!(!w.path("d.db").exists());
}

fn host() -> String {
    let out = Command::new("hostname").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `driftd run` in its own process group (so a terminal running the tests does not count
/// as the wrapper's), killed with everything it started when dropped: a failing test leaves
/// no deploy script running.
struct Wrapper {
    child: Child,
}

impl Drop for Wrapper {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.wait();
    }
}

/// `driftd run` with `script` as the command (`sh -c`), output into files.
fn spawn_run(w: &Workdir, extra: &[&str], script: &str) -> Wrapper {
    let mut args = vec!["run", "--source", "web", "-f", "app.yaml"];
    args.extend(extra);
    args.extend(["--", "sh", "-c", script]);
    let mut cmd = w.command(&args);
    cmd.stdout(std::fs::File::create(w.path("run.out")).unwrap())
        .stderr(std::fs::File::create(w.path("run.err")).unwrap())
        .process_group(0);
    Wrapper {
        child: cmd.spawn().unwrap(),
    }
}

fn finish(w: &Workdir, mut run: Wrapper) -> (Option<i32>, String, String) {
    let status = wait_for("driftd run to exit", Duration::from_secs(30), || {
        run.child.try_wait().unwrap()
    });
    let read = |f: &str| std::fs::read_to_string(w.path(f)).unwrap();
    (status.code(), read("run.out"), read("run.err"))
}

fn kill(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {signal} {pid}");
}

#[test]
fn run_commits_when_the_command_succeeds() {
    let w = Workdir::new();
    let child = spawn_run(
        &w,
        &["-m", "deploy v2"],
        "echo \"intent $DRIFTD_INTENT_ID\"",
    );
    let (code, out, err) = finish(&w, child);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "intent 1\n", "the command's stdout is its own");
    assert!(
        err.contains("intent 1 committed: revision 1 of source web (1 object)"),
        "{err}"
    );
    let intent = w.intent(1);
    assert_eq!(intent["state"], "committed");
    assert_eq!(intent["revision_id"], 1);
    assert!(
        intent["holder"].as_str().unwrap().contains("(pid "),
        "{intent}"
    );
}

#[test]
fn run_marks_the_intent_failed_and_exits_with_the_command_code() {
    let w = Workdir::new();
    let (code, _, err) = finish(&w, spawn_run(&w, &[], "exit 3"));
    assert_eq!(code, Some(3), "{err}");
    let intent = w.intent(1);
    assert_eq!(intent["state"], "failed");
    assert_eq!(intent["end_reason"], "the command exited with code 3");
    assert!(w.ok(&["sources"]).is_empty(), "nothing committed");

    // A command killed by a signal reports as a shell does (128+N) and is interrupted.
    let (code, _, err) = finish(&w, spawn_run(&w, &[], "kill -KILL $$"));
    assert_eq!(code, Some(137), "{err}");
    assert_eq!(w.intent(2)["state"], "interrupted");
    assert_eq!(
        w.intent(2)["end_reason"],
        "the command was killed by SIGKILL"
    );

    // A command that cannot start: the intent is aborted, 127 as in a shell.
    let out = w.driftd(&[
        "run",
        "--source",
        "web",
        "-f",
        "app.yaml",
        "--",
        "./no-such-deploy",
    ]);
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    assert_eq!(w.intent(3)["state"], "aborted");
}

/// A command that says when it started, notes every SIGINT/SIGTERM it gets, and ends with
/// 130/143 on the first one, as a deploy tool that cleans up would.
const TRAPPING: &str =
    "trap 'echo INT >> got; exit 130' INT; trap 'echo TERM >> got; exit 143' TERM; \
                        touch started; while :; do sleep 0.05; done";

#[test]
fn run_forwards_sigterm_once_and_marks_the_intent_interrupted() {
    let w = Workdir::new();
    let child = spawn_run(&w, &["--ttl", "2s"], TRAPPING);
    wait_for("the command to start", Duration::from_secs(20), || {
        w.path("started").exists().then_some(())
    });
    // While it runs, it holds the source's lock: a second run does not start its command.
    let out = w.driftd(&[
        "run", "--source", "web", "-f", "app.yaml", "--", "touch", "second",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("locked by intent 1 (pending)"),
        "{}",
        stderr(&out)
    );
    assert!(!w.path("second").exists());

    kill(child.child.id(), "-TERM");
    let (code, _, err) = finish(&w, child);
    assert_eq!(code, Some(143), "{err}");
    assert_eq!(std::fs::read_to_string(w.path("got")).unwrap(), "TERM\n");
    let intent = w.intent(1);
    assert_eq!(intent["state"], "interrupted");
    assert_eq!(
        intent["end_reason"],
        "SIGTERM received; the command exited with code 143"
    );
    assert!(err.contains("intent 1 interrupted"), "{err}");
}

#[test]
fn run_forwards_sigint_when_no_terminal_delivered_it() {
    let w = Workdir::new();
    let child = spawn_run(&w, &[], TRAPPING);
    wait_for("the command to start", Duration::from_secs(20), || {
        w.path("started").exists().then_some(())
    });
    kill(child.child.id(), "-INT");
    let (code, _, err) = finish(&w, child);
    assert_eq!(code, Some(130), "{err}");
    assert_eq!(std::fs::read_to_string(w.path("got")).unwrap(), "INT\n");
    assert_eq!(w.intent(1)["state"], "interrupted");
}

#[test]
fn a_wrapper_killed_with_sigkill_leaves_a_pending_intent_that_expires_untouched() {
    let w = Workdir::new();
    let mut child = spawn_run(&w, &["--ttl", "5s"], "echo $$ > pid; exec sleep 120");
    wait_for("the command to start", Duration::from_secs(20), || {
        std::fs::read_to_string(w.path("pid"))
            .ok()
            .filter(|p| p.ends_with('\n'))
    });
    // Renewals keep it pending while the wrapper lives.
    wait_for("a renewal", Duration::from_secs(20), || {
        renewed(&w.intent(1)).then_some(())
    });
    child.child.kill().unwrap();
    child.child.wait().unwrap();
    let pending = w.intent(1);
    assert_eq!(
        pending["state"], "pending",
        "nothing recorded the wrapper's death"
    );
    let before = w.fingerprint();
    wait_for("the intent to expire", Duration::from_secs(30), || {
        (w.intent(1)["state"] == "expired").then_some(())
    });
    assert_eq!(
        w.fingerprint(),
        before,
        "expiry is derived: nobody wrote anything"
    );
    assert_eq!(
        transitions(&w.history()),
        [("begin".into(), "tester".into())]
    );
    // Dropping `child` ends the orphaned command: it is in the same process group.
}

/// Whether the intent was renewed at least once (expires_at moved past created_at + TTL).
fn renewed(intent: &Value) -> bool {
    let ts = |k: &str| {
        intent[k]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .unwrap()
    };
    let ttl = jiff::SignedDuration::from_secs(intent["ttl_seconds"].as_i64().unwrap());
    ts("expires_at") > ts("created_at") + ttl
}
