//! `driftd history`: the revisions of one source and the transitions of its intents (who
//! began, committed, failed, released which deploy, and when), newest first; with
//! `--drift`, the drift episodes instead (`drift`).

use super::common::database::open_existing;
use super::common::table::{first_line, human_age, render_table};
use super::Format;
use driftd_store::HistoryEntry;
use std::path::PathBuf;
use std::process::ExitCode;

mod drift;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// The source whose history to list (with `--drift`: only this source's episodes).
    #[arg(long, required_unless_present = "drift")]
    pub source: Option<String>,
    /// List the drift episodes (object, class, when it opened and closed, who changed it,
    /// how it ended), newest first, instead of revisions and intents.
    #[arg(long)]
    pub drift: bool,
    /// With `--drift`: only this namespace.
    #[arg(long, short = 'n', requires = "drift")]
    pub namespace: Option<String>,
    /// With `--drift`: only this kind (e.g. Deployment).
    #[arg(long, requires = "drift")]
    pub kind: Option<String>,
    /// With `--drift`: only this class (modified, missing, ...).
    #[arg(long, requires = "drift")]
    pub class: Option<String>,
    /// With `--drift`: episodes open at or closed after this RFC 3339 time.
    #[arg(long, requires = "drift")]
    pub since: Option<String>,
    /// With `--drift`: episodes opened at or before this RFC 3339 time.
    #[arg(long, requires = "drift")]
    pub until: Option<String>,
    /// With `--drift`: at most this many episodes, newest first (0: all).
    #[arg(long, default_value_t = 500, requires = "drift")]
    pub limit: usize,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = open_existing(&args.db)?;
    if args.drift {
        let drift_args = drift::DriftArgs {
            source: args.source.as_deref(),
            namespace: args.namespace.as_deref(),
            kind: args.kind.as_deref(),
            class: args.class.as_deref(),
            since: args.since.as_deref(),
            until: args.until.as_deref(),
            limit: args.limit,
        };
        drift::run(&store, &drift_args, args.format)?;
        return Ok(ExitCode::SUCCESS);
    }
    let source = args.source.as_deref().unwrap_or_default();
    let entries = store.timeline(source)?;
    if entries.is_empty() {
        let known: Vec<String> = store.sources()?.into_iter().map(|s| s.name).collect();
        anyhow::bail!(
            "source {:?} not found in {} (known sources: {})",
            source,
            args.db.display(),
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        );
    }
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&entries)?),
        Format::Table => {
            let now = store.now();
            let mut rows = vec![[
                "REVISION", "EVENT", "WHO", "AGE", "OBJECTS", "HASH", "MESSAGE",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()];
            for entry in &entries {
                rows.push(match entry {
                    HistoryEntry::Revision(r) => vec![
                        r.id.to_string(),
                        "commit".into(),
                        r.author.clone(),
                        human_age(now, r.committed_at),
                        r.object_count.to_string(),
                        r.content_hash.chars().take(12).collect(),
                        first_line(&r.message),
                    ],
                    HistoryEntry::Remediation(e) => vec![
                        e.revision.to_string(),
                        format!(
                            "remediation {}",
                            serde_json::to_value(e.outcome)?.as_str().unwrap_or("")
                        ),
                        e.actor.clone(),
                        human_age(now, e.at),
                        "1".into(),
                        "-".into(),
                        first_line(&format!("{}: {}", e.key, e.detail)),
                    ],
                    HistoryEntry::Intent(e) => vec![
                        "-".into(),
                        format!("{} intent {}", e.action, e.intent_id),
                        e.actor.clone(),
                        human_age(now, e.at),
                        "-".into(),
                        "-".into(),
                        first_line(&e.detail),
                    ],
                });
            }
            print!("{}", render_table(&rows));
        }
    }
    Ok(ExitCode::SUCCESS)
}
