//! `driftd locks`: the stale deploy locks, with why each is stale and the exact command
//! that releases it. From a running daemon (`GET /locks`, the default), or judged here, the
//! way a replica starting now would judge them: from a database (`--db`) or from the
//! cluster log (`--cluster`, no database), with the same columns.

use super::cluster::ClusterArgs;
use super::common::database::open_existing;
use super::common::table::{human_age, render_table};
use super::drift::ServerArgs;
use super::Format;
use driftd_core::report::LocksResponse;
use driftd_engine::{holder_names, judge_all, Holders, LocalHolders};
use driftd_store::Store;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub daemon: ServerArgs,
    /// Judge the locks of this database here instead of asking a daemon (holder pods are
    /// not looked up: pod-held locks are judged by their TTL).
    #[arg(long, conflicts_with = "cluster")]
    pub db: Option<PathBuf>,
    /// Judge the locks of the cluster log here, holder pods looked up in the cluster.
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let format = args.daemon.format;
    let body: LocksResponse = match (&args.db, args.cluster.cluster) {
        (Some(db), _) => {
            let store = open_existing(db)?;
            super::runtime()?.block_on(judged_here(&store, None))?
        }
        (None, true) => super::runtime()?.block_on(async {
            let store = super::intent::cluster_snapshot(&args.cluster).await?;
            let client = args.cluster.client().await?;
            judged_here(&store, Some(client)).await
        })?,
        (None, false) => super::drift::fetch(&args.daemon, "/locks", &[])?,
    };
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&body)?),
        Format::Table => print!("{}", render(&body, jiff::Timestamp::now())),
    }
    Ok(ExitCode::SUCCESS)
}

/// The stale locks among `store`'s intents now; holder pods listed through `client` when
/// given. `ready` says whether every holder pod could be looked up.
async fn judged_here(store: &Store, client: Option<kube::Client>) -> anyhow::Result<LocksResponse> {
    let intents = store.intents(None, false)?;
    let names = holder_names(&intents, []);
    let now = store.now();
    let (pods, ready) = match client {
        _ if names.is_empty() => (Default::default(), true),
        None => (Default::default(), false),
        Some(client) => match super::holders::list_named(client, &names).await {
            Ok(pods) => (pods, true),
            Err(why) => {
                eprintln!("warning: holder pods not looked up ({why}): judged by TTL only");
                (Default::default(), false)
            }
        },
    };
    let holders = Holders::listed(pods, now);
    let locks = judge_all(&intents, &holders, &mut LocalHolders::of_this_host(), now);
    Ok(LocksResponse { ready, locks })
}

/// One row per lock, then the release commands (long, so not a column).
fn render(body: &LocksResponse, now: jiff::Timestamp) -> String {
    let mut out = String::new();
    if body.locks.is_empty() {
        out.push_str("No stale locks.\n");
    } else {
        let mut rows = vec![[
            "KIND",
            "SOURCE",
            "ID",
            "HOLDER",
            "STATE",
            "AGE",
            "STALE FOR",
            "REASON",
        ]
        .map(String::from)
        .to_vec()];
        for l in &body.locks {
            rows.push(vec![
                l.kind.to_string(),
                l.source.clone(),
                l.id.clone(),
                l.holder.clone(),
                l.state.clone().unwrap_or_else(|| "-".into()),
                human_age(now, l.created_at),
                human_age(now, l.since),
                l.reason.clone(),
            ]);
        }
        out.push_str(&render_table(&rows));
        out.push_str("\nRelease, once sure no deploy of the source is running:\n");
        for l in &body.locks {
            out.push_str(&format!("  {} {}:  {}\n", l.kind, l.id, l.release));
        }
    }
    if !body.ready {
        out.push_str(
            "(incomplete: holder pods not all looked up, or lock folders not scanned yet; a \
             lock may be missing)\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftd_core::report::{LockKind, StaleLock};

    #[test]
    fn rows_then_release_commands() {
        let at = |s: &str| s.parse::<jiff::Timestamp>().unwrap();
        let body = LocksResponse {
            ready: true,
            locks: vec![StaleLock {
                kind: LockKind::Intent,
                source: "web".into(),
                id: "7".into(),
                holder: "pod:shop/deploy-x".into(),
                state: Some("pending".into()),
                created_at: at("2026-01-01T10:00:00Z"),
                age_seconds: 720,
                since: at("2026-01-01T10:10:00Z"),
                reason: "holder pod shop/deploy-x no longer exists".into(),
                release: "driftd intent release 7".into(),
                path: None,
            }],
        };
        let text = render(&body, at("2026-01-01T10:12:00Z"));
        assert_eq!(
            text,
            "KIND     SOURCE   ID   HOLDER              STATE     AGE   STALE FOR   REASON\n\
             intent   web      7    pod:shop/deploy-x   pending   12m   2m          holder pod shop/deploy-x no longer exists\n\
             \n\
             Release, once sure no deploy of the source is running:\n  \
             intent 7:  driftd intent release 7\n"
        );
        let empty = LocksResponse {
            ready: false,
            locks: vec![],
        };
        assert!(render(&empty, at("2026-01-01T10:12:00Z"))
            .starts_with("No stale locks.\n(incomplete: holder pods"));
    }
}
