//! `driftd commit`: records the desired state of one source from manifest files.
//!
//! Everything is parsed and validated before the database is opened, so bad input never
//! creates or touches the database. `intent begin` and `run` read their objects the same way
//! ([`DesiredArgs`]).

use super::store::{self, KeyArgs};
use anyhow::Context;
use driftd_core::manifest::{self, LoadOptions, ManifestObject};
use driftd_store::{validate_source_name, CommitOutcome, CommitRequest, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where desired objects come from and whom they are recorded for: the options `commit`,
/// `intent begin` and `run` share.
#[derive(Debug, clap::Args)]
pub struct DesiredArgs {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// Name of the source (one team's or one app's object set) this replaces.
    #[arg(long)]
    pub source: String,
    /// Why this change is made; shown by `driftd history`.
    #[arg(long, short = 'm', default_value = "")]
    pub message: String,
    /// Who makes it (default: $USER, or "unknown").
    #[arg(long)]
    pub author: Option<String>,
    /// Namespace for namespaced objects that do not name one, as `kubectl -n`.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Files or folders (recursive: *.yaml, *.yml, *.json) to read; `-` reads stdin.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Allow no objects at all (the source then desires nothing).
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub keys: KeyArgs,
}

impl DesiredArgs {
    /// Validates the input, then opens the database (creating it only now that the input
    /// has proven valid) and returns it with the objects.
    pub fn load(&self) -> anyhow::Result<(Store, Vec<ManifestObject>)> {
        validate_source_name(&self.source)?;
        let Prepared {
            store,
            options,
            committed_crds,
        } = prepare(&self.db, &self.namespace, &self.keys)?;
        let objects = manifest::load(&self.files, &options)?;
        if objects.is_empty() && !self.allow_empty {
            anyhow::bail!(
                "no objects found in {}; pass --allow-empty to record an empty object set",
                self.files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        warn_pruned_fields(&committed_crds, &objects);
        let store = open_or_create(store, &self.db, &self.keys)?;
        Ok((store, objects))
    }

    pub fn author(&self) -> String {
        author_or_user(self.author.as_deref())
    }
}

/// The database if it exists, and how to read input for it. An existing database is opened
/// first (reading does not write to it) so custom resources can take their scope from CRDs
/// committed earlier, by any source; a missing one is created by [`open_or_create`] only
/// once the input has proven valid.
pub fn prepare(db: &Path, namespace: &str, keys: &KeyArgs) -> anyhow::Result<Prepared> {
    if namespace.trim().is_empty() {
        anyhow::bail!("--namespace must not be empty");
    }
    let store = if db.exists() {
        Some(store::open(db, keys.load()?)?)
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
        default_namespace: namespace.to_string(),
        custom_scopes,
    };
    Ok(Prepared {
        store,
        options,
        committed_crds,
    })
}

/// What [`prepare`] found: the database (if it exists), how to read input for it, and the
/// CustomResourceDefinitions committed so far (for scopes and the prune warning).
pub struct Prepared {
    pub store: Option<Store>,
    pub options: LoadOptions,
    pub committed_crds: Vec<serde_json::Value>,
}

/// Warns (on stderr, without refusing) about fields a CRD committed earlier or in `objects`
/// will prune: they can never exist live, so committing them records a wish nobody can see.
pub fn warn_pruned_fields(committed_crds: &[serde_json::Value], objects: &[ManifestObject]) {
    let mut facts = driftd_core::diff::ClusterFacts::default();
    facts.add_crds(
        committed_crds
            .iter()
            .chain(objects.iter().map(|o| &o.object)),
    );
    for pruned in driftd_core::diff::pruned_fields(objects.iter().map(|o| &o.object), &facts) {
        eprintln!("warning: {pruned}");
    }
}

/// The store [`prepare`] opened, or a new database now that the input is valid.
pub fn open_or_create(store: Option<Store>, db: &Path, keys: &KeyArgs) -> anyhow::Result<Store> {
    Ok(match store {
        Some(store) => store,
        None => store::open(db, keys.load()?)?,
    })
}

/// `author`, else $USER, else "unknown".
pub fn author_or_user(author: Option<&str>) -> String {
    author
        .map(str::to_string)
        .or_else(|| std::env::var("USER").ok())
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub desired: DesiredArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let desired = &args.desired;
    let (mut store, objects) = desired.load()?;
    let outcome = store
        .commit(&CommitRequest {
            source: &desired.source,
            message: &desired.message,
            author: &desired.author(),
            objects: &objects,
            committed_at: None,
        })
        .with_context(|| format!("commit to source {:?} refused", desired.source))?;
    println!("{}", describe_outcome(&outcome));
    Ok(ExitCode::SUCCESS)
}

/// "revision 3 of source web (2 objects)" or "unchanged: ...", as `commit` prints it.
pub fn describe_outcome(outcome: &CommitOutcome) -> String {
    match outcome {
        CommitOutcome::Created(rev) => format!(
            "revision {} of source {} ({})",
            rev.id,
            rev.source,
            count(rev.object_count, "object")
        ),
        CommitOutcome::Unchanged(rev) => format!(
            "unchanged: source {} is already at revision {}",
            rev.source, rev.id
        ),
    }
}

/// "1 object", "3 objects".
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}
