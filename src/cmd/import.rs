//! `driftd import pulumi`: commits the Kubernetes objects of a Pulumi stack's state as a
//! revision, so a Pulumi stack's desired state is watched without hand-written manifests,
//! and records each operation an interrupted `pulumi up` left pending as an `interrupted`
//! intent, so what it applied reads `uncommitted`, with Pulumi's ways out. The objects go
//! through the same validation as `driftd commit`; `driftd serve` reads file backends the
//! same way (`pulumi.state_dirs`).

use super::common::desired::{
    author_or_user, count, describe_outcome, open_or_create, prepare, warn_pruned_fields, Prepared,
};
use super::store::KeyArgs;
use anyhow::Context;
use driftd_core::manifest::STDIN_NAME;
use driftd_core::pulumi::{self, interrupted, LeftOutWhy};
use driftd_store::{validate_source_name, PulumiPending, PulumiSync};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Commit the Kubernetes objects of `pulumi stack export` output (or of a file backend's
    /// `.pulumi/stacks/<project>/<stack>.json[.gz]`): each object as its inputs desire it;
    /// each operation an interrupted update left pending becomes an interrupted intent.
    Pulumi(PulumiArgs),
}

#[derive(Debug, clap::Args)]
pub struct PulumiArgs {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// Name of the source the stack's objects become (default: `pulumi:<project>/<stack>`,
    /// the name `driftd serve` gives the stacks of `pulumi.state_dirs`).
    #[arg(long)]
    pub source: Option<String>,
    /// The stack as `pulumi --stack` takes it, in the commands driftd prints for an
    /// interrupted update (default: the checkpoint's name for it, else the stack's name).
    #[arg(long)]
    pub stack: Option<String>,
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
    /// The export (`pulumi stack export --file FILE`), or a file backend's checkpoint (also
    /// gzip- or zstd-compressed); `-` reads stdin.
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
    if let Some(source) = &args.source {
        validate_source_name(source)?;
    }
    let (name, bytes) = if args.file.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("cannot read standard input")?;
        (STDIN_NAME.to_string(), bytes)
    } else {
        let name = args.file.display().to_string();
        let bytes = std::fs::read(&args.file).with_context(|| format!("cannot read {name}"))?;
        (name, bytes)
    };
    let text = driftd_cluster::pulumi::decode_state(&bytes, &name).map_err(anyhow::Error::msg)?;
    let export = pulumi::parse_stack_export(&text, &name)?;
    let stack = match (&export.project, &export.stack) {
        (Some(project), Some(stack)) => format!("{project}/{stack}"),
        _ => "unknown stack".into(),
    };
    let source = match (&args.source, &export.project, &export.stack) {
        (Some(source), _, _) => source.clone(),
        (None, Some(project), Some(stack)) => interrupted::source_name(project, stack),
        (None, _, _) => anyhow::bail!(
            "{name} names no project and stack (it has no resources): pass --source NAME"
        ),
    };

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
    let command_stack = args
        .stack
        .clone()
        .or_else(|| export.command_stack().map(str::to_string))
        .unwrap_or_else(|| "<stack>".into());
    let backend = backend_of(&args.file);
    let (operations, warnings) = interrupted::operations(
        &export,
        &name,
        &options,
        &command_stack,
        backend.as_deref(),
        jiff::Timestamp::now(),
    );
    for warning in warnings {
        eprintln!("warning: {warning}");
    }

    let message = args
        .message
        .clone()
        .unwrap_or_else(|| format!("pulumi stack export of {stack}"));
    let mut store = open_or_create(store, &args.db, &args.keys)?;
    let pending: Vec<PulumiPending> = operations
        .iter()
        .map(|(operation, objects)| PulumiPending { operation, objects })
        .collect();
    let outcome = store
        .sync_pulumi(&PulumiSync {
            source: &source,
            objects: &objects,
            author: &author_or_user(args.author.as_deref()),
            message: &message,
            at: None,
            pending: &pending,
            imported: false,
        })
        .with_context(|| format!("import to source {source:?} refused"))?;
    println!(
        "{} from Pulumi stack {stack}",
        describe_outcome(&outcome.revision)
    );
    for intent in outcome.begun.iter().chain(&outcome.standing) {
        let what = intent
            .pulumi_operation()
            .map(|op| format!("interrupted while {} {}", op.operation, op.urn))
            .unwrap_or_else(|| intent.message.clone());
        println!(
            "intent {} ({}, held by {}): {what}\n  keep it:  {}\n  drop it (after undoing the \
             change):  {}",
            intent.id,
            intent.state,
            intent.holder,
            intent.commit_command(),
            intent.release_command()
        );
    }
    for intent in &outcome.ended {
        println!(
            "intent {} {}: {}",
            intent.id,
            intent.state,
            intent.end_reason.as_deref().unwrap_or("")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `file://<root>` when `file` is a file backend's checkpoint (`<root>/.pulumi/stacks/...`).
fn backend_of(file: &Path) -> Option<String> {
    let file = std::path::absolute(file).ok()?;
    let parts: Vec<Component> = file.components().collect();
    let at = parts
        .windows(2)
        .rposition(|w| w[0].as_os_str() == ".pulumi" && w[1].as_os_str() == "stacks")?;
    let root: PathBuf = parts[..at].iter().collect();
    Some(format!("file://{}", root.display()))
}

/// Tells on stderr what was not imported and why; never a value.
fn report(export: &pulumi::StackExport) {
    for field in &export.left_out {
        let why = match field.why {
            LeftOutWhy::Plaintext => {
                "is a Pulumi secret outside a Secret's data: left out, so its value is never \
                 stored (driftd does not compare it)"
            }
            LeftOutWhy::Encrypted => {
                "is a Pulumi secret, encrypted in this export: left out, so driftd does not \
                 compare it (`pulumi stack export --show-secrets` includes it)"
            }
            LeftOutWhy::Unknown => "had no known value when Pulumi saved the state: left out",
            LeftOutWhy::NotData => "is a Pulumi asset or reference, not Kubernetes data: left out",
        };
        eprintln!("warning: {}: field {} {why}", field.urn, field.field);
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
