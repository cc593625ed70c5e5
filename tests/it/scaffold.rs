//! Test scaffolding shared by the end-to-end tests: the real `driftd` binary (simulator and
//! daemon) as child processes, the real `kubectl`, and condition polling with deadlines.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const DRIFTD: &str = env!("CARGO_BIN_EXE_driftd");
pub const KUBECTL: &str = "/usr/bin/kubectl";

pub use driftd_sim::testing::wait_for;

/// A child process killed when dropped, with its stdout lines available and its stderr in
/// a log file (printed if the test fails, so passing runs stay quiet).
pub struct Proc {
    pub child: Child,
    pub lines: mpsc::Receiver<String>,
    pub name: String,
    pub log: PathBuf,
}

impl Proc {
    pub fn spawn(name: &str, mut cmd: Command) -> Proc {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join("driftd-test-logs");
        std::fs::create_dir_all(&dir).unwrap();
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let log = dir.join(format!(
            "{}-{}-{n}.log",
            name.replace(' ', "-"),
            std::process::id()
        ));
        let file = std::fs::File::create(&log).unwrap();
        cmd.stdout(Stdio::piped()).stderr(Stdio::from(file));
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc {
            child,
            lines: rx,
            name: name.into(),
            log,
        }
    }

    /// Everything the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for a stdout line containing `needle` and returns it.
    pub fn wait_line(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => continue,
                Err(_) => {
                    let status = self.child.try_wait().ok().flatten();
                    panic!(
                        "{}: no line with {needle:?} (exit status {status:?})",
                        self.name
                    )
                }
            }
        }
    }

    /// Sends SIGTERM and waits for the process to end.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("{} did not stop on SIGTERM", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let text = self.stderr();
            let tail: Vec<&str> = text.lines().rev().take(80).collect();
            eprintln!(
                "---- last stderr lines of {} ({}):",
                self.name,
                self.log.display()
            );
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        } else {
            let _ = std::fs::remove_file(&self.log);
        }
    }
}

/// The cluster simulator as a separate process, reached through a kubeconfig.
pub struct Sim {
    pub proc: Proc,
    pub kubeconfig: PathBuf,
    pub url: String,
}

impl Sim {
    pub fn start(dir: &Path) -> Sim {
        Sim::start_with(dir, &[])
    }

    /// [`Sim::start`] with more `driftd sim` flags (`--tls`, `--audit-...`).
    pub fn start_with(dir: &Path, flags: &[&str]) -> Sim {
        let kubeconfig = dir.join("kubeconfig");
        let mut cmd = Command::new(DRIFTD);
        cmd.args(["sim", "--listen", "127.0.0.1:0", "--kubeconfig-out"])
            .arg(&kubeconfig)
            .args(flags);
        let mut proc = Proc::spawn("driftd sim", cmd);
        let line = proc.wait_line("url: http", Duration::from_secs(30));
        let url = line[line.find("http").unwrap()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_string();
        wait_for("kubeconfig file", Duration::from_secs(10), || {
            kubeconfig.exists().then_some(())
        });
        Sim {
            proc,
            kubeconfig,
            url,
        }
    }

    /// Runs kubectl against the simulator; panics with its stderr if it fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let out = self.kubectl_output(args, None);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn kubectl_output(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = Command::new(KUBECTL);
        cmd.args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl runs");
        if let Some(input) = stdin {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        } else {
            drop(child.stdin.take());
        }
        child.wait_with_output().unwrap()
    }

    /// Calls a simulator admin endpoint (`/_sim/PATH`, e.g. `faults`); panics unless 2xx.
    pub fn admin(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}/_sim/{path}", self.url);
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let response = reqwest::Client::new()
                .request(method, &url)
                .json(&body)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{url}: {e}"));
            assert!(
                response.status().is_success(),
                "{url}: {}",
                response.status()
            );
            response.json().await.unwrap()
        })
    }

    /// `kubectl -n NAMESPACE patch RESOURCE --type merge -p BODY`: a hand edit.
    pub fn merge_patch(&self, namespace: &str, resource: &[&str], body: &Value) {
        let body = body.to_string();
        let mut args = vec!["-n", namespace, "patch"];
        args.extend(resource);
        args.extend(["--type", "merge", "-p", &body]);
        self.kubectl(&args);
    }

    pub fn kubectl_json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.kubectl(&all)).unwrap()
    }

    /// The Events (events.k8s.io/v1) in `namespace` with `reason`.
    pub fn events(&self, namespace: &str, reason: &str) -> Vec<Value> {
        let list = self.kubectl_json(&["get", "events.v1.events.k8s.io", "-n", namespace]);
        let items = list["items"].as_array().unwrap();
        items
            .iter()
            .filter(|e| e["reason"] == reason)
            .cloned()
            .collect()
    }
}

/// The value of the series written exactly `series` in a `/metrics` text (`name` or
/// `name{labels}`, labels in the order Prometheus' encoder sorts them).
pub fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// Runs `driftd ARGS`, returning its output.
pub fn driftd(args: &[&str]) -> Output {
    Command::new(DRIFTD)
        .args(args)
        .output()
        .expect("driftd runs")
}

/// `driftd commit --db DB --source SOURCE -f PATH`, which must succeed; returns its stdout.
pub fn commit(db: &Path, source: &str, path: &Path) -> String {
    let out = driftd(&[
        "commit",
        "--db",
        db.to_str().unwrap(),
        "--source",
        source,
        "-f",
        path.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "driftd commit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `driftd serve` as a separate process.
pub struct Daemon {
    pub proc: Proc,
    pub url: String,
}

impl Daemon {
    pub fn start(config: &Path, kubeconfig: &Path, extra_env: &[(&str, &str)]) -> Daemon {
        let mut cmd = Daemon::command(config, kubeconfig);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        Daemon::spawn(cmd)
    }

    /// `driftd serve --config CONFIG` against `kubeconfig`, to start with [`Daemon::spawn`]
    /// after adding flags or limits.
    pub fn command(config: &Path, kubeconfig: &Path) -> Command {
        let mut cmd = Command::new(DRIFTD);
        // driftd's leader Lease lives in its namespace (`driftd` by default, which the
        // kustomize install creates); `default` exists in every cluster.
        cmd.args(["serve", "--config"])
            .arg(config)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "info,driftd=debug")
            .env("DRIFTD_NAMESPACE", "default");
        cmd
    }

    /// Runs a prepared `driftd serve` command (another wrapper, other flags) and waits until
    /// it listens; `url` is `http://ADDR` or, with TLS, `https://ADDR`.
    pub fn spawn(cmd: Command) -> Daemon {
        let mut proc = Proc::spawn("driftd serve", cmd);
        let line = proc.wait_line("driftd listening on ", Duration::from_secs(30));
        let url = line[line.find("http").unwrap()..].trim().to_string();
        Daemon { proc, url }
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        http_get(&format!("{}{}", self.url, path))
    }

    pub fn drift(&self, query: &str) -> Value {
        let (status, body) = self.get(&format!("/drift{query}"));
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    }

    /// The `/drift` entry of `kind`/`name`, whatever its class (in sync included).
    pub fn entry(&self, kind: &str, name: &str) -> Option<Value> {
        let in_sync = self.drift("?class=in_sync");
        let drifting = self.drift("");
        find(&in_sync, kind, name)
            .or_else(|| find(&drifting, kind, name))
            .cloned()
    }

    /// The value of one `/metrics` series (see [`sample`]).
    pub fn sample(&self, series: &str) -> Option<f64> {
        sample(&self.get("/metrics").1, series)
    }

    pub fn wait_ready(&self) {
        wait_for("/readyz 200", Duration::from_secs(30), || {
            (self.get("/readyz").0 == 200).then_some(())
        });
    }
}

/// The usual start of an end-to-end test: a simulator with the example app committed as
/// source `shop` (database `dir/driftd.db`) and applied, and a ready daemon configured with
/// `config_extra`.
pub fn serve_examples(dir: &Path, config_extra: &str) -> (Sim, Daemon) {
    let sim = Sim::start(dir);
    commit(&dir.join("driftd.db"), "shop", &examples());
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    let daemon = Daemon::start(&write_config(dir, config_extra), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    (sim, daemon)
}

/// A minimal blocking HTTP GET over a fresh tokio runtime (tests stay synchronous).
pub fn http_get(url: &str) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        match reqwest::get(url).await {
            Ok(r) => {
                let status = r.status().as_u16();
                (status, r.text().await.unwrap_or_default())
            }
            Err(e) => (0, e.to_string()),
        }
    })
}

/// The objects of a `/drift` answer whose name and kind match.
pub fn find<'a>(drift: &'a Value, kind: &str, name: &str) -> Option<&'a Value> {
    drift["objects"]
        .as_array()?
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == name)
}

/// The Deployment `web` as `daemon` reports it (drifting or in sync) once `pred` holds.
pub fn web_when(daemon: &Daemon, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    wait_for(what, Duration::from_secs(30), || {
        [daemon.drift(""), daemon.drift("?class=in_sync")]
            .iter()
            .find_map(|d| find(d, "Deployment", "web").cloned())
            .filter(|w| pred(w))
    })
}

/// The repository's example app folder.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/app")
}

/// A copy of the example app in `dest`, each file's text passed through `edit`: the next
/// revision a test commits.
pub fn edited_examples(dest: &Path, edit: impl Fn(&str) -> String) -> PathBuf {
    std::fs::create_dir_all(dest).unwrap();
    for entry in std::fs::read_dir(examples()).unwrap() {
        let entry = entry.unwrap();
        let text = std::fs::read_to_string(entry.path()).unwrap();
        std::fs::write(dest.join(entry.file_name()), edit(&text)).unwrap();
    }
    dest.to_path_buf()
}

/// A daemon config for tests: database in `dir`, any free port, short settle time.
pub fn write_config(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("driftd.toml");
    std::fs::write(
        &path,
        format!(
            "database = \"{}\"\nlisten = \"127.0.0.1:0\"\nsettle_seconds = 0.3\ndesired_poll_millis = 100\n{extra}",
            dir.join("driftd.db").display()
        ),
    )
    .unwrap();
    path
}

/// The material some tests need from outside the repository (`../shared/`, found by the
/// build script, which ignores those tests when it is absent: see `build.rs`). Call it only
/// from a test marked `#[cfg_attr(not(shared_material), ignore = ...)]`.
pub fn shared_dir() -> PathBuf {
    match option_env!("DRIFTD_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => panic!("../shared was not found at build time: mark this test as needing it"),
    }
}

/// `promtool check metrics` accepts `text` (names, types, units).
pub fn promtool_check_metrics(text: &str) {
    use std::io::Write;
    let mut lint = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool is installed (Debian package prometheus; .ci/run installs it)");
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let lint = lint.wait_with_output().unwrap();
    assert!(
        lint.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
}
