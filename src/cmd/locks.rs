//! `driftd locks`: the stale deploy locks a running daemon found (`GET /locks`), with why
//! each is stale and the exact command that releases it.

use super::drift::ServerArgs;
use super::sources::{human_age, render_table};
use super::Format;
use driftd_core::report::LocksResponse;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub daemon: ServerArgs,
}

pub fn run(Args { daemon: args }: Args) -> anyhow::Result<ExitCode> {
    let body: LocksResponse = super::drift::fetch(&args, "/locks", &[])?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&body)?),
        Format::Table => print!("{}", render(&body, jiff::Timestamp::now())),
    }
    Ok(ExitCode::SUCCESS)
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
            "(driftd is not ready yet: holder pods are still being listed or lock folders scanned)\n",
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
            .starts_with("No stale locks.\n(driftd is not ready"));
    }
}
