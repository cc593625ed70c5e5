//! `driftd history`: the revisions of one source and the transitions of its intents (who
//! began, committed, failed, released which deploy, and when), newest first.

use super::common::database::open_existing;
use super::common::table::{first_line, human_age, render_table};
use super::Format;
use driftd_store::HistoryEntry;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// The source whose history to list.
    #[arg(long)]
    pub source: String,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = open_existing(&args.db)?;
    let entries = store.timeline(&args.source)?;
    if entries.is_empty() {
        let known: Vec<String> = store.sources()?.into_iter().map(|s| s.name).collect();
        anyhow::bail!(
            "source {:?} not found in {} (known sources: {})",
            args.source,
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
