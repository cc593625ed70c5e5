//! `driftd serve` run by the bench as a child process: its readiness, HTTP answers, memory
//! and CPU time as `/proc` reports them.

use super::READY_TIMEOUT;
use anyhow::{bail, Context};
use std::future::Future;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Serve is done with the edits once it has not been busy for this long.
pub(super) const QUIET: Duration = Duration::from_millis(300);
/// How often serve's CPU time is read while the edits stream in.
const QUIET_SAMPLE: Duration = Duration::from_millis(10);
/// The window serve's CPU use is judged over (see `Serve::quiet`).
const BUSY_WINDOW: Duration = Duration::from_millis(100);

/// `driftd serve` as a child process.
pub(super) struct Serve {
    child: Child,
    /// Kept open: serve's stdout must not be a closed pipe.
    _stdout: std::io::BufReader<std::process::ChildStdout>,
    pub(super) url: String,
    pub(super) http: reqwest::Client,
}

impl Serve {
    pub(super) fn start(
        workdir: &Path,
        database: &Path,
        kubeconfig: &Path,
    ) -> anyhow::Result<Serve> {
        let log = std::fs::File::create(workdir.join(format!(
            "serve-{}.log",
            database.file_stem().unwrap_or_default().to_string_lossy()
        )))?;
        let mut child = Command::new(std::env::current_exe()?)
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(database)
            .env("KUBECONFIG", kubeconfig)
            .env("DRIFTD_LEADER_ELECTION_ENABLED", "false")
            .env("DRIFTD_NAMESPACE", "default")
            // Warnings only, unless the caller asks for more (its serve logs are kept).
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()?;
        let mut stdout = std::io::BufReader::new(child.stdout.take().context("serve's stdout")?);
        let mut line = String::new();
        std::io::BufRead::read_line(&mut stdout, &mut line)?;
        let url = line
            .trim()
            .strip_prefix("driftd listening on ")
            .with_context(|| format!("serve did not start: {line:?}"))?
            .to_string();
        Ok(Serve {
            child,
            _stdout: stdout,
            url,
            http: reqwest::Client::new(),
        })
    }

    pub(super) async fn wait_ready(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let ready = self
                .http
                .get(format!("{}/readyz", self.url))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("driftd serve not ready after {READY_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A `/proc/PID/status` size (`VmRSS:` now, `VmHWM:` the peak), in bytes.
    pub(super) fn status_bytes(&self, field: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with(field))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0)
            * 1024
    }

    /// When serve was last busy, once it has not been for [`QUIET`]: the end of its work, late
    /// by at most [`BUSY_WINDOW`] (so the phase is never cut short). Busy is at least a third
    /// of a core over the last [`BUSY_WINDOW`] (clock ticks of `/proc/PID/stat`, read every
    /// [`QUIET_SAMPLE`]), so the trickle of periodic work after the edits (Events at their
    /// bounded rate, the settle tick) does not count as the phase going on.
    pub(super) async fn quiet(&self, deadline: Instant) -> anyhow::Result<Instant> {
        let ticks_per_s = clock_ticks_per_s();
        let busy_ticks = ((BUSY_WINDOW.as_secs_f64() * ticks_per_s / 3.0) as u64).max(1);
        let mut samples = std::collections::VecDeque::from([(Instant::now(), self.cpu_ticks()?)]);
        let mut last_busy = Instant::now();
        loop {
            tokio::time::sleep(QUIET_SAMPLE).await;
            let now = Instant::now();
            let ticks = self.cpu_ticks()?;
            while samples
                .front()
                .is_some_and(|(at, _)| now.duration_since(*at) > BUSY_WINDOW)
            {
                samples.pop_front();
            }
            let used = samples.front().map_or(0, |(_, first)| ticks - first);
            samples.push_back((now, ticks));
            if used >= busy_ticks {
                last_busy = now;
            } else if now.duration_since(last_busy) >= QUIET {
                return Ok(last_busy);
            }
            if now > deadline {
                bail!("driftd serve never went quiet");
            }
        }
    }

    /// Runs `work` while reading serve's CPU time every [`QUIET_SAMPLE`].
    pub(super) async fn tracing_cpu<T>(
        &self,
        work: impl Future<Output = T>,
    ) -> anyhow::Result<(T, CpuTrace)> {
        tokio::pin!(work);
        let mut readings = vec![(Instant::now(), self.cpu_ticks()?)];
        loop {
            tokio::select! {
                out = &mut work => return Ok((out, CpuTrace { readings })),
                _ = tokio::time::sleep(QUIET_SAMPLE) => readings.push((Instant::now(), self.cpu_ticks()?)),
            }
        }
    }

    /// User and system CPU time of serve so far, in clock ticks.
    pub(super) fn cpu_ticks(&self) -> anyhow::Result<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        // After the command name (which may hold spaces and parentheses), `utime` and
        // `stime` are the 12th and 13th fields (proc(5): fields 14 and 15).
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .context("/proc/PID/stat without a command name")?
            .1
            .split_whitespace()
            .collect();
        let field = |i: usize| -> anyhow::Result<u64> {
            Ok(fields.get(i).context("/proc/PID/stat too short")?.parse()?)
        };
        Ok(field(11)? + field(12)?)
    }

    pub(super) async fn get_bytes(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        Ok(self
            .http
            .get(format!("{}{path}", self.url))
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await?
            .to_vec())
    }

    /// The sum of every series of `name` on `/metrics`.
    pub(super) async fn metric_sum(&self, name: &str) -> anyhow::Result<f64> {
        let text = self
            .http
            .get(format!("{}/metrics", self.url))
            .send()
            .await?
            .text()
            .await?;
        Ok(text
            .lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Serve's CPU time read at moments while some work ran ([`Serve::tracing_cpu`]).
pub(super) struct CpuTrace {
    /// When, and the clock ticks then; the first taken as the work started.
    readings: Vec<(Instant, u64)>,
}

impl CpuTrace {
    /// Seconds of CPU serve used from `from` (the last reading at or before it) to when it
    /// had used `ticks_now`.
    pub(super) fn seconds_since(&self, from: Instant, ticks_now: u64) -> f64 {
        let first = self.readings[0].1;
        let then = self
            .readings
            .iter()
            .rev()
            .find(|(at, _)| *at <= from)
            .map_or(first, |(_, ticks)| *ticks);
        ticks_now.saturating_sub(then) as f64 / clock_ticks_per_s()
    }
}

/// The unit of `/proc/PID/stat`'s CPU times.
fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf reads a constant of the system; it has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_counted_from_the_last_reading_before_the_start() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let trace = CpuTrace {
            readings: vec![(t0, 100), (ms(10), 105), (ms(20), 109)],
        };
        let per_s = clock_ticks_per_s();
        assert_eq!(trace.seconds_since(ms(15), 209), 104.0 / per_s);
        assert_eq!(trace.seconds_since(ms(25), 209), 100.0 / per_s);
        assert_eq!(
            trace.seconds_since(t0 - Duration::from_millis(1), 209),
            109.0 / per_s,
            "a start before every reading counts from the first"
        );
    }
}
