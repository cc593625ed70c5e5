//! `driftd import pulumi`: commits the Kubernetes objects of a Pulumi stack's state as a
//! revision, so a Pulumi stack's desired state is watched without hand-written manifests.
//! The objects go through the same validation and store path as `driftd commit`.

use super::commit::{
    author_or_user, count, describe_outcome, open_or_create, prepare, warn_pruned_fields, Prepared,
};
use super::store::KeyArgs;
use anyhow::Context;
use driftd_core::manifest::STDIN_NAME;
use driftd_core::pulumi::{self, LeftOutWhy};
use driftd_store::{validate_source_name, CommitRequest};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Commit the Kubernetes objects of `pulumi stack export` output (or of a file backend's
    /// `.pulumi/stacks/<project>/<stack>.json`): each object as its inputs desire it.
    Pulumi(PulumiArgs),
}

#[derive(Debug, clap::Args)]
pub struct PulumiArgs {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// Name of the source the stack's objects become.
    #[arg(long)]
    pub source: String,
    /// Why; shown by `driftd history` (default: names the stack).
    #[arg(long, short = 'm')]
    pub message: Option<String>,
    /// Who commits it (default: $USER, or "unknown").
    #[arg(long)]
    pub author: Option<String>,
    /// Namespace for namespaced objects whose state names none, as `kubectl -n`.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Allow a stack without Kubernetes objects (the source then desires nothing).
    #[arg(long)]
    pub allow_empty: bool,
    /// The export (`pulumi stack export --file FILE`); `-` reads stdin.
    pub file: PathBuf,
    #[command(flatten)]
    pub keys: KeyArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Pulumi(a) => import_pulumi(a),
    }
}

fn import_pulumi(args: PulumiArgs) -> anyhow::Result<ExitCode> {
    validate_source_name(&args.source)?;
    let (name, text) = if args.file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read standard input")?;
        (STDIN_NAME.to_string(), text)
    } else {
        let name = args.file.display().to_string();
        let text =
            std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {name}"))?;
        (name, text)
    };
    let export = pulumi::parse_stack_export(&text, &name)?;

    let Prepared {
        store,
        options,
        committed_crds,
    } = prepare(&args.db, &args.namespace, &args.keys)?;
    let objects = pulumi::manifest_objects(&export, &name, &options)?;
    if objects.is_empty() && !args.allow_empty {
        anyhow::bail!(
            "no Kubernetes objects in {name}; pass --allow-empty to commit an empty revision"
        );
    }
    report(&export);
    warn_pruned_fields(&committed_crds, &objects);

    let stack = match (&export.project, &export.stack) {
        (Some(project), Some(stack)) => format!("{project}/{stack}"),
        _ => "unknown stack".into(),
    };
    let message = args
        .message
        .clone()
        .unwrap_or_else(|| format!("pulumi stack export of {stack}"));
    let mut store = open_or_create(store, &args.db, &args.keys)?;
    let outcome = store
        .commit(&CommitRequest {
            source: &args.source,
            message: &message,
            author: &author_or_user(args.author.as_deref()),
            objects: &objects,
            committed_at: None,
            skipped: 0,
        })
        .with_context(|| format!("commit to source {:?} refused", args.source))?;
    println!("{} from Pulumi stack {stack}", describe_outcome(&outcome));
    Ok(ExitCode::SUCCESS)
}

/// Tells on stderr what was not imported and why; never a value.
fn report(export: &pulumi::StackExport) {
    for field in &export.left_out {
        let why = match field.why {
            LeftOutWhy::Encrypted => {
                "is a Pulumi secret, encrypted in this export: left out, so driftd does not \
                 compare it (`pulumi stack export --show-secrets` includes it)"
            }
            LeftOutWhy::Unknown => "had no known value when Pulumi saved the state: left out",
            LeftOutWhy::NotData => "is a Pulumi asset or reference, not Kubernetes data: left out",
        };
        eprintln!("warning: {}: field {} {why}", field.urn, field.field);
    }
    for op in &export.pending_operations {
        eprintln!(
            "warning: the stack's last update was interrupted while {} {}: driftd imports \
             what the state recorded before it",
            op.operation, op.urn
        );
    }
    for skipped in &export.skipped {
        eprintln!("skipped {}: {}", skipped.urn, skipped.reason);
    }
    eprintln!(
        "{} from {} Kubernetes resource{} ({} skipped, {} of other providers)",
        count(export.resources.len(), "object"),
        export.resources.len() + export.skipped.len(),
        if export.resources.len() + export.skipped.len() == 1 {
            ""
        } else {
            "s"
        },
        export.skipped.len(),
        export.other_resources
    );
}
