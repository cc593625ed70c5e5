//! `driftd run -- COMMAND`: wraps a deploy in an intent. It begins the intent (recording what
//! is about to be applied, and taking the source's lock), renews it every TTL/3 while the
//! command runs, then records how the command ended:
//!
//! - exit 0: the intent is committed as the source's newest revision;
//! - non-zero exit: `failed` (what it applied may be partial);
//! - SIGINT or SIGTERM to the wrapper: forwarded to the command, and once the command has
//!   exited the intent is `interrupted`, whatever the command's exit status;
//! - the command killed by a signal nobody sent through the wrapper (OOM killer, `kill -9`
//!   of the command): `interrupted` too;
//! - the wrapper itself killed (`kill -9`, node lost): nothing is recorded, the intent stays
//!   pending, stops being renewed and reads as expired after its TTL: a stale lock that
//!   `driftd intent release ID` frees.
//!
//! The exit code is the command's (128+N when it died of signal N, as shells report). The
//! wrapper's own failures exit 2: the intent could not begin (the command does not run), or
//! the command succeeded but its commit could not be recorded. A command that cannot be
//! started aborts the intent and exits 127 (not found) or 126 (not executable), as shells do.

use super::common::desired::{describe_outcome, DesiredArgs};
use super::intent::{begin_cluster_intent, begin_intent, LockArgs};
use anyhow::Context;
use driftd_cluster::cluster_log::{ClusterLog, End, LogError};
use driftd_store::{Store, StoreError};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, ExitStatus};
use std::sync::mpsc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub desired: DesiredArgs,
    #[command(flatten)]
    pub lock: LockArgs,
    /// The deploy command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(supervise(args))
}

async fn supervise(args: Args) -> anyhow::Result<ExitCode> {
    // Handlers first: a SIGTERM that arrives while the intent is being recorded must end in
    // a recorded outcome, not in a dead wrapper leaving a pending intent behind.
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let holder = args.lock.holder(std::process::id());
    args.lock.check().await?;
    let (mut log, id) = if args.desired.cluster.cluster {
        let (log, id) = begin_cluster_intent(&args.desired, &holder, args.lock.ttl).await?;
        (Log::Cluster(log), id)
    } else {
        let (store, intent) = begin_intent(&args.desired, &holder, args.lock.ttl)?;
        (Log::Db(store), intent.id)
    };
    let program = args.command[0].to_string_lossy().into_owned();
    say(&format!(
        "intent {id} of source {} begun{}, held by {holder}; running {program}",
        args.desired.source,
        match &log {
            Log::Cluster(log) => format!(" in the cluster log (namespace {})", log.namespace()),
            Log::Db(_) => String::new(),
        }
    ));

    let early = tokio::select! {
        biased;
        _ = sigint.recv() => Some(libc::SIGINT),
        _ = sigterm.recv() => Some(libc::SIGTERM),
        _ = std::future::ready(()) => None,
    };
    if let Some(sig) = early {
        let reason = format!("{} received before the command started", signal_name(sig));
        log.end(id, End::Abort, &holder, &reason).await?;
        say(&format!("{reason}; intent {id} aborted"));
        return Ok(exit_code(128 + sig));
    }

    let mut child = match tokio::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .env("DRIFTD_INTENT_ID", id.to_string())
        .spawn()
    {
        Ok(child) => child,
        Err(err) => {
            let reason = format!("cannot start {program}: {err}");
            log.end(id, End::Abort, &holder, &reason).await?;
            say(&format!("{reason}; intent {id} aborted"));
            let code = if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Ok(exit_code(code));
        }
    };

    let every = args.lock.ttl / 3;
    let renewer = match &log {
        Log::Db(_) => Renewer::start(&args.desired.db, id, holder.clone(), every),
        Log::Cluster(log) => Renewer::start_cluster(log.clone(), id, every),
    };
    let mut received: Option<i32> = None;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.context("waiting for the command")?,
            _ = sigint.recv() => {
                received = Some(libc::SIGINT);
                // Ctrl-C at a terminal reaches the whole foreground process group, the
                // command included: sending it again would make e.g. `pulumi up` treat it
                // as the second Ctrl-C, which skips its graceful cancellation.
                if !terminal_signals_reach_command() {
                    forward(child.id(), libc::SIGINT);
                }
            }
            _ = sigterm.recv() => {
                received = Some(libc::SIGTERM);
                forward(child.id(), libc::SIGTERM);
            }
        }
    };
    renewer.stop().await;
    record_outcome(&mut log, id, &holder, status, received).await
}

/// Where the intent is recorded: the database, or the cluster log (`--cluster`).
enum Log {
    Db(Store),
    Cluster(ClusterLog),
}

impl Log {
    async fn end(&mut self, id: i64, end: End, actor: &str, reason: &str) -> anyhow::Result<()> {
        match self {
            Log::Db(store) => {
                match end {
                    End::Abort => store.abort_intent(id, actor, reason)?,
                    End::Fail => store.fail_intent(id, actor, reason)?,
                    End::Interrupt => store.interrupt_intent(id, actor, reason)?,
                    End::Release => store.release_intent(id, actor, reason)?,
                };
            }
            Log::Cluster(log) => {
                log.end(id, end, actor, reason).await?;
            }
        }
        Ok(())
    }

    /// Commits the intent; says what was recorded.
    async fn commit(&mut self, id: i64, actor: &str) -> anyhow::Result<String> {
        Ok(match self {
            Log::Db(store) => describe_outcome(&store.commit_intent(id, actor)?.1),
            Log::Cluster(log) => {
                let (source, revision) = log.commit_intent(id, actor).await?;
                format!("revision {revision} of source {source} in the cluster log")
            }
        })
    }
}

/// Records how the command ended and returns the wrapper's exit code.
async fn record_outcome(
    log: &mut Log,
    id: i64,
    holder: &str,
    status: ExitStatus,
    received: Option<i32>,
) -> anyhow::Result<ExitCode> {
    let (code, ended) = match (status.code(), status.signal()) {
        (Some(code), _) => (code, format!("exited with code {code}")),
        (None, Some(sig)) => (128 + sig, format!("was killed by {}", signal_name(sig))),
        (None, None) => (1, format!("ended with {status}")),
    };
    let recorded = match received {
        Some(sig) => {
            let reason = format!("{} received; the command {ended}", signal_name(sig));
            log.end(id, End::Interrupt, holder, &reason)
                .await
                .map(|_| format!("{reason}; intent {id} interrupted"))
        }
        None if status.success() => log
            .commit(id, holder)
            .await
            .map(|outcome| format!("intent {id} committed: {outcome}")),
        None if status.signal().is_some() => {
            let reason = format!("the command {ended}");
            log.end(id, End::Interrupt, holder, &reason)
                .await
                .map(|_| format!("{reason}; intent {id} interrupted"))
        }
        None => {
            let reason = format!("the command {ended}");
            log.end(id, End::Fail, holder, &reason)
                .await
                .map(|_| format!("{reason}; intent {id} failed"))
        }
    };
    match recorded {
        Ok(line) => say(&line),
        Err(err) if status.success() && received.is_none() => {
            // The deploy went through but driftd does not know: the job must not look green.
            return Err(err.context(format!(
                "the command succeeded, but intent {id} could not be committed"
            )));
        }
        Err(err) => say(&format!(
            "the command {ended}, and intent {id} could not be updated: {err}"
        )),
    }
    Ok(exit_code(code))
}

/// Wrapper messages go to stderr: stdout belongs to the command.
fn say(line: &str) {
    eprintln!("driftd run: {line}");
}

fn exit_code(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX))
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGALRM => "SIGALRM".into(),
        libc::SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

fn forward(pid: Option<u32>, sig: i32) {
    // None: the command has already been reaped, there is no one to tell.
    if let Some(pid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()) {
        // SAFETY: kill(2) takes plain integers and touches no memory of ours; `pid` is our
        // own child, not yet reaped (its id is gone once `wait` has returned).
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// True when we are in the foreground process group of our controlling terminal: a
/// terminal-generated signal then reached the command (same process group) already.
fn terminal_signals_reach_command() -> bool {
    use std::os::fd::AsRawFd;
    let Ok(tty) = std::fs::File::open("/dev/tty") else {
        return false;
    };
    // SAFETY: tcgetpgrp and getpgrp only read process state; the descriptor is open for
    // the duration of the call.
    let (foreground, own) = unsafe { (libc::tcgetpgrp(tty.as_raw_fd()), libc::getpgrp()) };
    foreground > 0 && foreground == own
}

/// Renews the intent from its own thread and connection, so a slow database never delays
/// forwarding a signal (or, in the cluster log, from its own task).
enum Renewer {
    Thread {
        stop: mpsc::Sender<()>,
        thread: std::thread::JoinHandle<()>,
    },
    Task(tokio::task::JoinHandle<()>),
}

impl Renewer {
    fn start_cluster(log: ClusterLog, id: i64, every: Duration) -> Renewer {
        Renewer::Task(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                match log.renew(id, None).await {
                    Ok(_) => {}
                    Err(err @ (LogError::WrongState { .. } | LogError::NoIntent(_))) => {
                        say(&format!(
                            "intent {id} can no longer be renewed, the command keeps running: {err}"
                        ));
                        return;
                    }
                    Err(err) => say(&format!("renewing intent {id} failed: {err}")),
                }
            }
        }))
    }

    fn start(db: &Path, id: i64, actor: String, every: Duration) -> Renewer {
        let (stop, stopped) = mpsc::channel::<()>();
        let db: PathBuf = db.to_path_buf();
        let thread = std::thread::spawn(move || {
            let mut store = match Store::open(&db) {
                Ok(store) => store,
                Err(err) => {
                    say(&format!("cannot renew intent {id}: {err}"));
                    return;
                }
            };
            while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                match store.renew_intent(id, None, &actor) {
                    Ok(_) => {}
                    Err(err @ (StoreError::WrongState(_) | StoreError::IntentNotFound(_))) => {
                        say(&format!(
                            "intent {id} can no longer be renewed, the command keeps running: {err}"
                        ));
                        return;
                    }
                    // Busy or briefly unavailable: the next renewal may well succeed.
                    Err(err) => say(&format!("renewing intent {id} failed: {err}")),
                }
            }
        });
        Renewer::Thread { stop, thread }
    }

    async fn stop(self) {
        match self {
            Renewer::Thread { stop, thread } => {
                let _ = stop.send(());
                let _ = thread.join();
            }
            Renewer::Task(task) => {
                task.abort();
                let _ = task.await;
            }
        }
    }
}
