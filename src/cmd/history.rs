//! `driftd history`: the revisions of one source, newest first.

use super::sources::{first_line, human_age, open_existing, render_table, Format};
use jiff::Timestamp;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// The source whose revisions to list.
    #[arg(long)]
    pub source: String,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = open_existing(&args.db)?;
    let revisions = store.history(&args.source)?;
    if revisions.is_empty() {
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
        Format::Json => println!("{}", serde_json::to_string_pretty(&revisions)?),
        Format::Table => {
            let now = Timestamp::now();
            let mut rows = vec![["REVISION", "OBJECTS", "AUTHOR", "AGE", "HASH", "MESSAGE"]
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()];
            for r in &revisions {
                rows.push(vec![
                    r.id.to_string(),
                    r.object_count.to_string(),
                    r.author.clone(),
                    human_age(now, r.committed_at),
                    r.content_hash.chars().take(12).collect(),
                    first_line(&r.message),
                ]);
            }
            print!("{}", render_table(&rows));
        }
    }
    Ok(ExitCode::SUCCESS)
}
