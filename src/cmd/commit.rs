//! `driftd commit`: records the desired state of one source from manifest files.
//!
//! Everything is parsed and validated before the database is opened, so bad input never
//! creates or touches the database.

use anyhow::Context;
use driftd_core::manifest::{self, LoadOptions};
use driftd_store::{validate_source_name, CommitOutcome, CommitRequest, Store};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// Name of the source (one team's or one app's object set) this commit replaces.
    #[arg(long)]
    pub source: String,
    /// Why this revision was made; shown by `driftd history`.
    #[arg(long, short = 'm', default_value = "")]
    pub message: String,
    /// Who made it (default: $USER, or "unknown").
    #[arg(long)]
    pub author: Option<String>,
    /// Namespace for namespaced objects that do not name one, as `kubectl -n`.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Files or folders (recursive: *.yaml, *.yml, *.json) to read; `-` reads stdin.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Allow a commit with no objects (the source then desires nothing).
    #[arg(long)]
    pub allow_empty: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    validate_source_name(&args.source)?;
    if args.namespace.trim().is_empty() {
        anyhow::bail!("--namespace must not be empty");
    }
    // An existing database is opened first (reading does not write to it) so custom
    // resources can take their scope from CRDs committed earlier, by any source. A missing
    // one is only created once the input has proven valid.
    let mut store = if args.db.exists() {
        Some(Store::open(&args.db)?)
    } else {
        None
    };
    let committed_crds: Vec<serde_json::Value> = match &store {
        Some(store) => store
            .desired_state()?
            .objects
            .into_iter()
            .filter(|o| o.key.group == "apiextensions.k8s.io")
            .filter(|o| o.key.kind == "CustomResourceDefinition")
            .map(|o| o.object)
            .collect(),
        None => Vec::new(),
    };
    let custom_scopes = committed_crds
        .iter()
        .filter_map(|o| manifest::crd_scope("CustomResourceDefinition", o))
        .collect();
    let options = LoadOptions {
        default_namespace: args.namespace.clone(),
        custom_scopes,
    };
    let objects = manifest::load(&args.files, &options)?;
    if objects.is_empty() && !args.allow_empty {
        anyhow::bail!(
            "no objects found in {}; pass --allow-empty to commit an empty revision",
            args.files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // Fields a CRD (committed earlier or in this commit) prunes are never live: say so.
    let mut facts = driftd_core::diff::ClusterFacts::default();
    facts.add_crds(
        committed_crds
            .iter()
            .chain(objects.iter().map(|o| &o.object)),
    );
    for pruned in driftd_core::diff::pruned_fields(objects.iter().map(|o| &o.object), &facts) {
        eprintln!("warning: {pruned}");
    }
    let author = args
        .author
        .clone()
        .or_else(|| std::env::var("USER").ok())
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let mut store = match store.take() {
        Some(store) => store,
        None => Store::open(&args.db)?,
    };
    let outcome = store
        .commit(&CommitRequest {
            source: &args.source,
            message: &args.message,
            author: &author,
            objects: &objects,
        })
        .with_context(|| format!("commit to source {:?} refused", args.source))?;
    match outcome {
        CommitOutcome::Created(rev) => println!(
            "revision {} of source {} ({} {})",
            rev.id,
            rev.source,
            rev.object_count,
            if rev.object_count == 1 {
                "object"
            } else {
                "objects"
            }
        ),
        CommitOutcome::Unchanged(rev) => println!(
            "unchanged: source {} is already at revision {}",
            rev.source, rev.id
        ),
    }
    Ok(ExitCode::SUCCESS)
}
