//! `driftd sources`: every source with its newest revision, its object count and how many
//! objects of its input were skipped (`generateName` without a `name`).

use super::common::database::open_existing;
use super::common::table::{first_line, human_age, render_table, row};
use jiff::Timestamp;
use std::path::PathBuf;
use std::process::ExitCode;

use super::Format;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = open_existing(&args.db)?;
    let sources = store.sources()?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&sources)?),
        Format::Table => {
            if sources.is_empty() {
                eprintln!("No sources found in {}.", args.db.display());
                return Ok(ExitCode::SUCCESS);
            }
            let now = Timestamp::now();
            let mut rows = vec![row(&[
                "SOURCE", "REVISION", "OBJECTS", "SKIPPED", "AUTHOR", "AGE", "MESSAGE",
            ])];
            for s in &sources {
                rows.push(match &s.latest {
                    Some(r) => vec![
                        s.name.clone(),
                        r.id.to_string(),
                        r.object_count.to_string(),
                        r.skipped_count.to_string(),
                        r.author.clone(),
                        human_age(now, r.committed_at),
                        first_line(&r.message),
                    ],
                    None => vec![
                        s.name.clone(),
                        "<none>".into(),
                        "0".into(),
                        "0".into(),
                        String::new(),
                        String::new(),
                        String::new(),
                    ],
                });
            }
            print!("{}", render_table(&rows));
        }
    }
    Ok(ExitCode::SUCCESS)
}
