//! `driftd intent`: the write-ahead log of deploys by hand, for scripts that cannot be
//! wrapped by `driftd run`. `begin` records what is about to be applied and takes the
//! source's lock; `renew` is the heartbeat; `commit`, `fail` and `abort` record how it
//! ended; `release` frees an abandoned lock on purpose; `list` shows them.

use super::cluster::{records, ClusterArgs};
use super::common::database::open_existing;
use super::common::desired::{count, describe_outcome, DesiredArgs};
use super::common::table::{first_line, human_age, render_table};
use super::holders;
use super::Format;
use anyhow::Context;
use driftd_cluster::cluster_log::{ClusterLog, End, NewIntent};
use driftd_store::{BeginRequest, IntentAction, IntentInfo, IntentState, Store, MAX_TTL, MIN_TTL};
use jiff::{SignedDuration, Timestamp};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Record the objects a deploy is about to apply, before it applies them; prints the id.
    Begin(BeginArgs),
    /// Extend a pending intent's expiry (the heartbeat of a running deploy).
    Renew(RenewArgs),
    /// Make an open intent (pending, expired, failed or interrupted) the source's committed
    /// desired state: keeps what the deploy applied.
    Commit(EndArgs),
    /// Record that the deploy ran and failed (what it applied may be partial).
    Fail(EndArgs),
    /// Drop a pending intent: the deploy did not happen.
    Abort(EndArgs),
    /// Release an abandoned intent (expired, failed, interrupted, or pending), freeing its lock.
    Release(EndArgs),
    /// List intents with holder, state, age and expiry.
    List(ListArgs),
}

#[derive(Debug, clap::Args)]
pub struct BeginArgs {
    #[command(flatten)]
    pub desired: DesiredArgs,
    #[command(flatten)]
    pub lock: LockArgs,
}

/// Who holds an intent and for how long: shared by `intent begin` and `run`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Who holds the lock: `pod:NAMESPACE/NAME` lets driftd notice when that pod is gone.
    /// Default: the pod from $POD_NAMESPACE/$POD_NAME (downward API), else `$USER@HOST
    /// (pid N)` of the holding process (the caller of `intent begin`; the `run` wrapper).
    #[arg(long)]
    pub holder: Option<String>,
    /// How long the intent stands without a renewal before it reads as expired (90s, 10m,
    /// 1h); `run` renews it every TTL/3 while its command runs.
    #[arg(long, default_value = "10m", value_parser = parse_ttl)]
    pub ttl: Duration,
}

impl LockArgs {
    /// The holder given, or the default for the process `pid`.
    pub fn holder(&self, pid: u32) -> String {
        self.holder.clone().unwrap_or_else(|| default_holder(pid))
    }

    /// Refuses a `--holder pod:NS/NAME` naming no running pod (see [`holders::check_pod`]);
    /// the default holder needs no look-up (the downward API named this very pod).
    pub async fn check(&self) -> anyhow::Result<()> {
        match &self.holder {
            Some(holder) => holders::check_pod(holder).await,
            None => Ok(()),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct RenewArgs {
    /// SQLite database holding sources, revisions and intents.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    pub id: i64,
    /// A new TTL from now on (default: the intent's own).
    #[arg(long, value_parser = parse_ttl)]
    pub ttl: Option<Duration>,
    /// Who renews it (default: $USER@HOST).
    #[arg(long)]
    pub actor: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, clap::Args)]
pub struct EndArgs {
    /// SQLite database holding sources, revisions and intents.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    pub id: i64,
    /// Why; recorded in the source's history.
    #[arg(long, default_value = "")]
    pub reason: String,
    /// Who does it, recorded in history (default: $USER@HOST).
    #[arg(long)]
    pub actor: Option<String>,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// SQLite database holding sources, revisions and intents.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// Read the cluster log instead of --db (what every `driftd serve` imports).
    #[command(flatten)]
    pub cluster: ClusterArgs,
    /// Only this source's intents.
    #[arg(long)]
    pub source: Option<String>,
    /// Also intents that have ended (committed, aborted, released, superseded).
    #[arg(long)]
    pub all: bool,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Begin(a) => begin(a),
        Command::Renew(a) => renew(a),
        Command::Commit(a) => commit(a),
        Command::Fail(a) => finish(a, IntentAction::Fail),
        Command::Abort(a) => finish(a, IntentAction::Abort),
        Command::Release(a) => finish(a, IntentAction::Release),
        Command::List(a) => list(a),
    }
}

/// Parses a TTL as people write durations (`90s`, `10m`, `1h30m`; ISO 8601 `PT10M` too),
/// with jiff's `SignedDuration` parser (units up to hours: a day is not a fixed length).
pub fn parse_ttl(text: &str) -> Result<Duration, String> {
    let parsed: SignedDuration = text
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: write it like 90s, 10m or 1h30m"))?;
    let ttl = Duration::try_from(parsed).map_err(|_| format!("{text:?} is negative"))?;
    if ttl < MIN_TTL || ttl > MAX_TTL {
        return Err(format!("{text:?} is out of range: use 1s to 168h"));
    }
    Ok(ttl)
}

/// `pod:NAMESPACE/NAME` inside a pod (downward API variables), else `$USER@HOST (pid N)`.
fn default_holder(pid: u32) -> String {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    match (env("POD_NAMESPACE"), env("POD_NAME")) {
        (Some(ns), Some(name)) => format!("pod:{ns}/{name}"),
        _ => format!("{} (pid {pid})", user_at_host()),
    }
}

/// `$USER@HOST`: who did something, for history.
pub fn user_at_host() -> String {
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "unknown".into());
    let host = hostname::get()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown-host".into());
    format!("{user}@{host}")
}

/// Records a pending intent for `desired` held by `holder`: shared by `begin` and `run`.
pub fn begin_intent(
    desired: &DesiredArgs,
    holder: &str,
    ttl: Duration,
) -> anyhow::Result<(Store, IntentInfo)> {
    let (mut store, loaded) = desired.load_all()?;
    let objects = loaded.objects;
    let intent = store
        .begin_intent(&BeginRequest {
            source: &desired.source,
            holder,
            author: &desired.author(),
            message: &desired.message,
            ttl,
            objects: &objects,
            skipped: loaded.skipped.len(),
        })
        .with_context(|| format!("cannot begin an intent on source {:?}", desired.source))?;
    Ok((store, intent))
}

/// [`begin_intent`] in the cluster log: returns it and the intent's number.
pub async fn begin_cluster_intent(
    desired: &DesiredArgs,
    holder: &str,
    ttl: Duration,
) -> anyhow::Result<(ClusterLog, i64)> {
    let loaded = desired.load_for_cluster().await?;
    let log = desired.cluster.connect().await?;
    let id = log
        .begin(NewIntent {
            source: desired.source.clone(),
            holder: holder.to_string(),
            author: desired.author(),
            message: desired.message.clone(),
            ttl_seconds: ttl.as_secs() as i64,
            objects: records(&loaded),
        })
        .await
        .with_context(|| format!("cannot begin an intent on source {:?}", desired.source))?;
    Ok((log, id))
}

fn begin(args: BeginArgs) -> anyhow::Result<ExitCode> {
    // The caller of `driftd intent begin` (a deploy script) holds the lock, not this
    // short-lived process.
    let holder = args.lock.holder(std::os::unix::process::parent_id());
    let runtime = super::runtime()?;
    runtime.block_on(args.lock.check())?;
    if args.desired.cluster.cluster {
        let (log, id) =
            runtime.block_on(begin_cluster_intent(&args.desired, &holder, args.lock.ttl))?;
        println!("{id}");
        eprintln!(
            "intent {id} of source {source} recorded in the cluster log (namespace {ns}), held \
             by {holder}, expires in {ttl} unless renewed (`driftd intent renew {id} --cluster`); \
             end it with `driftd intent commit|fail|abort {id} --cluster`",
            source = args.desired.source,
            ns = log.namespace(),
            ttl = friendly(args.lock.ttl.as_secs() as i64),
        );
        return Ok(ExitCode::SUCCESS);
    }
    let (_, intent) = begin_intent(&args.desired, &holder, args.lock.ttl)?;
    // The id alone on stdout, so scripts can write ID=$(driftd intent begin ...).
    println!("{}", intent.id);
    eprintln!(
        "intent {id} of source {source}: {objects}, held by {holder}, expires in {ttl} unless \
         renewed (`driftd intent renew {id}`); end it with `driftd intent commit {id}`, \
         `driftd intent fail {id}` or `driftd intent abort {id}`",
        id = intent.id,
        source = intent.source,
        objects = count(intent.object_count, "object"),
        holder = intent.holder,
        ttl = friendly(intent.ttl_seconds),
    );
    Ok(ExitCode::SUCCESS)
}

fn friendly(seconds: i64) -> String {
    format!("{:#}", SignedDuration::from_secs(seconds))
}

fn renew(args: RenewArgs) -> anyhow::Result<ExitCode> {
    if args.cluster.cluster {
        let ttl = args.ttl.map(|t| t.as_secs() as i64);
        let expires = super::runtime()?.block_on(async {
            args.cluster
                .connect()
                .await?
                .renew(args.id, ttl)
                .await
                .map_err(anyhow::Error::new)
        })?;
        println!("intent {} renewed: expires at {expires}", args.id);
        return Ok(ExitCode::SUCCESS);
    }
    let mut store = open_existing(&args.db)?;
    let actor = args.actor.unwrap_or_else(user_at_host);
    let intent = store.renew_intent(args.id, args.ttl, &actor)?;
    println!(
        "intent {} renewed: expires at {} (in {})",
        intent.id,
        intent.expires_at,
        friendly(intent.ttl_seconds)
    );
    Ok(ExitCode::SUCCESS)
}

fn commit(args: EndArgs) -> anyhow::Result<ExitCode> {
    let actor = args.actor.clone().unwrap_or_else(user_at_host);
    if args.cluster.cluster {
        let (source, revision) = super::runtime()?.block_on(async {
            let log = args.cluster.connect().await?;
            log.commit_intent(args.id, &actor)
                .await
                .map_err(anyhow::Error::new)
        })?;
        println!(
            "intent {} committed: revision {revision} of source {source} in the cluster log",
            args.id
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut store = open_existing(&args.db)?;
    let (intent, outcome) = store.commit_intent(args.id, &actor)?;
    println!(
        "intent {} committed: {}",
        intent.id,
        describe_outcome(&outcome)
    );
    Ok(ExitCode::SUCCESS)
}

fn finish(args: EndArgs, action: IntentAction) -> anyhow::Result<ExitCode> {
    if args.cluster.cluster {
        let actor = args.actor.clone().unwrap_or_else(user_at_host);
        let (end, state) = match action {
            IntentAction::Fail => (End::Fail, "failed"),
            IntentAction::Abort => (End::Abort, "aborted"),
            _ => (End::Release, "released"),
        };
        let source = super::runtime()?.block_on(async {
            let log = args.cluster.connect().await?;
            log.end(args.id, end, &actor, &args.reason)
                .await
                .map_err(anyhow::Error::new)
        })?;
        println!(
            "intent {} of source {source} is {state} (by {actor})",
            args.id
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut store = open_existing(&args.db)?;
    let actor = args.actor.unwrap_or_else(user_at_host);
    let before = store.intent(args.id)?;
    let intent = match action {
        IntentAction::Fail => store.fail_intent(args.id, &actor, &args.reason)?,
        IntentAction::Abort => store.abort_intent(args.id, &actor, &args.reason)?,
        _ => store.release_intent(args.id, &actor, &args.reason)?,
    };
    if let Some(before) = before.filter(|b| b.state == IntentState::Pending) {
        if action == IntentAction::Release {
            eprintln!(
                "note: intent {} had not expired: its holder {} may still be deploying",
                before.id, before.holder
            );
        }
    }
    println!(
        "intent {} of source {} is {} (by {actor})",
        intent.id, intent.source, intent.state
    );
    Ok(ExitCode::SUCCESS)
}

fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let (store, read) = if args.cluster.cluster {
        let store = super::runtime()?.block_on(cluster_snapshot(&args.cluster))?;
        let read = format!(
            "the cluster log (namespace {})",
            args.cluster.driftd_namespace
        );
        (store, read)
    } else {
        (open_existing(&args.db)?, args.db.display().to_string())
    };
    let intents = store.intents(args.source.as_deref(), args.all)?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&intents)?),
        Format::Table => {
            if intents.is_empty() {
                eprintln!(
                    "No {}intents in {read}.",
                    if args.all { "" } else { "open " },
                );
                return Ok(ExitCode::SUCCESS);
            }
            let now = store.now();
            let mut rows = vec![[
                "ID", "SOURCE", "STATE", "HOLDER", "AGE", "EXPIRES", "OBJECTS", "MESSAGE",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()];
            for i in &intents {
                rows.push(vec![
                    i.id.to_string(),
                    i.source.clone(),
                    i.state.to_string(),
                    i.holder.clone(),
                    human_age(now, i.created_at),
                    expires(i, now),
                    i.object_count.to_string(),
                    first_line(&i.message),
                ]);
            }
            print!("{}", render_table(&rows));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The cluster log as a replica starting now would import it (a database in memory).
pub async fn cluster_snapshot(cluster: &ClusterArgs) -> anyhow::Result<Store> {
    let client = cluster.client().await?;
    Ok(driftd_cluster::cluster_log::snapshot(client, &cluster.driftd_namespace).await?)
}

/// `in 8m` while pending, `5m ago` once expired, `-` once ended.
fn expires(intent: &IntentInfo, now: Timestamp) -> String {
    match intent.state {
        IntentState::Pending => format!("in {}", human_age(intent.expires_at, now)),
        IntentState::Expired => format!("{} ago", human_age(now, intent.expires_at)),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttls_are_written_as_people_write_durations() {
        assert_eq!(parse_ttl("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_ttl("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_ttl("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_ttl("PT2M"), Ok(Duration::from_secs(120)));
        assert!(parse_ttl("ten minutes").unwrap_err().contains("90s, 10m"));
        assert!(parse_ttl("-5m").unwrap_err().contains("negative"));
        assert!(parse_ttl("0s").unwrap_err().contains("1s to 168h"));
        assert!(parse_ttl("169h").unwrap_err().contains("1s to 168h"));
        // Days are not a fixed length for jiff's SignedDuration: hours it is.
        assert!(parse_ttl("8d").unwrap_err().contains("write it like"));
    }
}
