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

use super::commit::{describe_outcome, DesiredArgs};
use super::intent::{begin_intent, LockArgs};
use anyhow::Context;
use driftd_store::{IntentInfo, Store, StoreError};
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
    let (mut store, intent) = begin_intent(&args.desired, &holder, args.lock.ttl)?;
    let id = intent.id;
    let program = args.command[0].to_string_lossy().into_owned();
    say(&format!(
        "intent {id} of source {} begun, held by {holder}; running {program}",
        intent.source
    ));

    let early = tokio::select! {
        biased;
        _ = sigint.recv() => Some(libc::SIGINT),
        _ = sigterm.recv() => Some(libc::SIGTERM),
        _ = std::future::ready(()) => None,
    };
    if let Some(sig) = early {
        let reason = format!("{} received before the command started", signal_name(sig));
        store.abort_intent(id, &holder, &reason)?;
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
            store.abort_intent(id, &holder, &reason)?;
            say(&format!("{reason}; intent {id} aborted"));
            let code = if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return Ok(exit_code(code));
        }
    };

    let renewer = Renewer::start(&args.desired.db, &intent, holder.clone(), args.lock.ttl / 3);
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
    renewer.stop();
    record_outcome(&mut store, &intent, &holder, status, received)
}

/// Records how the command ended and returns the wrapper's exit code.
fn record_outcome(
    store: &mut Store,
    intent: &IntentInfo,
    holder: &str,
    status: ExitStatus,
    received: Option<i32>,
) -> anyhow::Result<ExitCode> {
    let id = intent.id;
    let (code, ended) = match (status.code(), status.signal()) {
        (Some(code), _) => (code, format!("exited with code {code}")),
        (None, Some(sig)) => (128 + sig, format!("was killed by {}", signal_name(sig))),
        (None, None) => (1, format!("ended with {status}")),
    };
    let recorded = match received {
        Some(sig) => {
            let reason = format!("{} received; the command {ended}", signal_name(sig));
            store
                .interrupt_intent(id, holder, &reason)
                .map(|_| format!("{reason}; intent {id} interrupted"))
        }
        None if status.success() => store
            .commit_intent(id, holder)
            .map(|(_, outcome)| format!("intent {id} committed: {}", describe_outcome(&outcome))),
        None if status.signal().is_some() => {
            let reason = format!("the command {ended}");
            store
                .interrupt_intent(id, holder, &reason)
                .map(|_| format!("{reason}; intent {id} interrupted"))
        }
        None => {
            let reason = format!("the command {ended}");
            store
                .fail_intent(id, holder, &reason)
                .map(|_| format!("{reason}; intent {id} failed"))
        }
    };
    match recorded {
        Ok(line) => say(&line),
        Err(err) if status.success() && received.is_none() => {
            // The deploy went through but driftd does not know: the job must not look green.
            return Err(anyhow::Error::new(err).context(format!(
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
/// forwarding a signal.
struct Renewer {
    stop: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Renewer {
    fn start(db: &Path, intent: &IntentInfo, actor: String, every: Duration) -> Renewer {
        let (stop, stopped) = mpsc::channel::<()>();
        let db: PathBuf = db.to_path_buf();
        let id = intent.id;
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
        Renewer { stop, thread }
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
