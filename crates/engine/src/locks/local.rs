//! Lock holders that are processes: `USER@HOST (pid N)`, what `driftd intent begin` and
//! `driftd run` record outside a pod. On the host that took the lock, whether process N
//! still runs is known at once, so such a lock is stale as soon as its process is gone,
//! not only after its TTL. On any other host nothing can be known of it (the TTL decides).
//!
//! A pid is reused once its process is gone: a process that has pid N but started after the
//! lock was taken is not the holder (as a pod of the holder's name created after the lock
//! is not, see `holders`). A zombie has exited: it is gone too.
//!
//! Never a reason to release a lock automatically: only a pod seen running and then gone
//! is (`holders`).

use jiff::{SignedDuration, Timestamp};
use std::collections::BTreeMap;

/// A process started this long after a lock was taken is not its holder; the margin
/// absorbs the clock's resolution (`/proc` counts in ticks) and the time between the
/// holder's start and its lock.
const REUSED_MARGIN: SignedDuration = SignedDuration::from_secs(30);

/// A holder written as `USER@HOST (pid N)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalHolder<'a> {
    pub user: &'a str,
    pub host: &'a str,
    pub pid: u32,
}

/// Reads a holder of the form `USER@HOST (pid N)` (the CLI's default outside a pod).
pub fn parse(holder: &str) -> Option<LocalHolder<'_>> {
    let (who, pid) = holder.strip_suffix(')')?.rsplit_once(" (pid ")?;
    let (user, host) = who.rsplit_once('@')?;
    let pid: u32 = pid.parse().ok()?;
    let plain = |s: &str| !s.is_empty() && !s.contains(char::is_whitespace);
    (plain(user) && plain(host) && pid > 0).then_some(LocalHolder { user, host, pid })
}

/// What this host says of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Process {
    /// It runs; `started` when the host can tell.
    Running { started: Option<Timestamp> },
    /// No such process (or only its zombie).
    Gone,
}

/// The host driftd runs on and its processes (the real one reads `/proc`; tests fake it).
pub trait Processes: Send {
    /// This host's name as the CLI records it in holders (`hostname`).
    fn host(&self) -> &str;
    fn process(&self, pid: u32) -> Process;
}

/// Why a local holder is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalGone {
    Exited,
    /// Its pid now belongs to a process started after the lock was taken.
    Reused {
        started: Timestamp,
    },
}

impl LocalGone {
    /// How `/locks` and Events say it, for `holder`.
    pub fn describe(&self, holder: &LocalHolder) -> String {
        let (pid, host) = (holder.pid, holder.host);
        match self {
            LocalGone::Exited => format!("holder process {pid} on {host} is gone"),
            LocalGone::Reused { started } => format!(
                "holder process {pid} on {host} is gone: pid {pid} is now a process started at \
                 {started}, after the lock was taken"
            ),
        }
    }
}

/// The local holders of the open locks on this host, and since when each is known gone.
pub struct LocalHolders {
    processes: Box<dyn Processes>,
    /// Holder text -> (why gone, first seen gone).
    gone: BTreeMap<String, (LocalGone, Timestamp)>,
}

impl std::fmt::Debug for LocalHolders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalHolders")
            .field("host", &self.processes.host())
            .field("gone", &self.gone)
            .finish()
    }
}

impl LocalHolders {
    pub fn new(processes: Box<dyn Processes>) -> LocalHolders {
        LocalHolders {
            processes,
            gone: BTreeMap::new(),
        }
    }

    /// This host's processes, read from `/proc` (or asked with `kill(pid, 0)`).
    pub fn of_this_host() -> LocalHolders {
        LocalHolders::new(Box::new(HostProcesses::new()))
    }

    /// Looks at the processes of `holders` (holder text, lock taken at) that are on this
    /// host at `now`; what is no longer asked about is forgotten.
    pub fn refresh<'a>(
        &mut self,
        holders: impl IntoIterator<Item = (&'a str, Timestamp)>,
        now: Timestamp,
    ) {
        let mut gone = BTreeMap::new();
        for (text, taken) in holders {
            let Some(holder) = parse(text).filter(|h| h.host == self.processes.host()) else {
                continue;
            };
            let why = match self.processes.process(holder.pid) {
                Process::Gone => LocalGone::Exited,
                Process::Running {
                    started: Some(started),
                } if started > taken + REUSED_MARGIN => LocalGone::Reused { started },
                Process::Running { .. } => continue,
            };
            let since = match self.gone.get(text) {
                Some((before, since)) if *before == why => *since,
                _ => now,
            };
            gone.insert(text.to_string(), (why, since));
        }
        self.gone = gone;
    }

    /// Why the holder `holder` is gone and since when, if it is a process of this host
    /// known gone at the last [`LocalHolders::refresh`].
    pub fn gone(&self, holder: &str) -> Option<(String, Timestamp)> {
        let (why, since) = self.gone.get(holder)?;
        Some((why.describe(&parse(holder)?), *since))
    }
}

/// The real host: its name as `hostname` says, its processes as `/proc` says.
struct HostProcesses {
    host: String,
    /// When the host booted and how long a clock tick is: `/proc/<pid>/stat` counts a
    /// process's start in ticks since boot.
    boot: Option<(Timestamp, i64)>,
}

impl HostProcesses {
    fn new() -> HostProcesses {
        let host = hostname::get()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default();
        HostProcesses {
            host,
            boot: boot_time(),
        }
    }
}

/// `btime` of `/proc/stat` and `sysconf(_SC_CLK_TCK)`.
fn boot_time() -> Option<(Timestamp, i64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: i64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then_some((Timestamp::from_second(btime).ok()?, ticks as i64))
}

impl Processes for HostProcesses {
    fn host(&self) -> &str {
        &self.host
    }

    fn process(&self, pid: u32) -> Process {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => from_proc_stat(&stat, self.boot),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Process::Gone,
            // No /proc here: ask the kernel whether the pid exists.
            Err(_) => from_kill(pid),
        }
    }
}

/// A process as its `/proc/<pid>/stat` line says: state (3rd field) and start time in
/// ticks since boot (22nd), after the command name in parentheses (which may hold spaces
/// and parentheses itself: the fields start after the last `)`), per proc(5).
fn from_proc_stat(stat: &str, boot: Option<(Timestamp, i64)>) -> Process {
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Process::Running { started: None };
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if matches!(fields.first(), Some(&("Z" | "X" | "x"))) {
        return Process::Gone;
    }
    let started = (|| {
        let (booted, ticks) = boot?;
        let since_boot: i64 = fields.get(19)?.parse().ok()?;
        let millis = since_boot.checked_mul(1000)? / ticks;
        booted.checked_add(SignedDuration::from_millis(millis)).ok()
    })();
    Process::Running { started }
}

fn from_kill(pid: u32) -> Process {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return Process::Gone;
    };
    // SAFETY: signal 0 checks that the pid exists and sends nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    if rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
        Process::Running { started: None }
    } else {
        Process::Gone
    }
}

#[cfg(test)]
#[path = "local_tests.rs"]
mod tests;
