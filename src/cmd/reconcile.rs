//! `driftd reconcile`: restores a source's committed revision in the cluster. A dry run by
//! default (the plan, each object's class and its differences, what `--prune` would
//! delete); `--apply` writes the objects that differ with server-side apply (field manager
//! `driftd`) in plan order, waiting before each for what it depends on to be current, and
//! `--prune` deletes what the previous revision had and this one dropped. The writing is
//! `driftd_cluster::apply`, which the daemon's remediation uses too.

use super::plan::{connect, plan_table};
use super::store::KeyArgs;
use anyhow::Context;
use driftd_cluster::apply::{ApplyOptions, Progress};
use driftd_cluster::reconcile;
use driftd_config::Config;
use driftd_core::diff::Differ;
use driftd_k8s::object_ref::ObjectRef;
use driftd_k8s::ObjectKey;
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// The source to restore (a Helm release is `helm:<namespace>/<release>`).
    #[arg(long)]
    pub source: String,
    /// Write: server-side apply the objects that differ, in plan order. Without it nothing
    /// is changed.
    #[arg(long)]
    pub apply: bool,
    /// Also delete live objects the source's previous revision had and the newest dropped.
    #[arg(long)]
    pub prune: bool,
    /// Take over fields another field manager owns (server-side apply `force`); without it
    /// such a conflict stops the reconcile, naming the fields and their managers.
    #[arg(long)]
    pub force_conflicts: bool,
    /// Seconds to wait for each dependency to become current (a Deployment rolled out, a
    /// CRD established) before applying what depends on it.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Only this object of the source: `KIND[.GROUP]/NAMESPACE/NAME` (`KIND[.GROUP]/NAME` for
    /// a cluster-scoped one), as `/drift` names it in its undo commands. Repeatable.
    #[arg(long = "object", value_name = "KIND[.GROUP]/[NAMESPACE/]NAME", value_parser = ObjectRef::parse)]
    pub objects: Vec<ObjectRef>,
    /// Configuration (the file `driftd serve` reads): its ignore rules and `[secrets]` keys.
    #[command(flatten)]
    pub keys: KeyArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = Config::load(args.keys.config.as_deref())?;
    let store = super::store::open(
        super::common::database::existing(&args.db)?,
        super::store::load_keys(&config)?,
    )?;
    let revision = reconcile::load(&store, &args.source)?;
    let plan = revision.plan()?;
    let differ = Differ::new(&store.installation_key()?).with_rules(config.rule_set());
    let rt = super::runtime()?;
    rt.block_on(async {
        let mut cluster = connect().await?;
        revision.check_external(&plan, &mut cluster).await?;
        let live = revision.live(&mut cluster).await?;
        let mut comparisons = revision.compare(&plan, &differ, &live);
        let selected = |key: &ObjectKey| {
            args.objects.is_empty() || args.objects.iter().any(|o| o.matches(key))
        };
        if let Some(unknown) = args
            .objects
            .iter()
            .find(|o| !comparisons.iter().any(|(k, _)| o.matches(k)))
        {
            anyhow::bail!(
                "revision {} of source {} has no object {unknown}",
                revision.revision.id,
                args.source
            );
        }
        comparisons.retain(|(k, _)| selected(k));
        let classes: HashMap<_, _> = comparisons
            .iter()
            .map(|(k, c)| (k.clone(), c.class.as_str()))
            .collect();
        print!(
            "{}",
            plan_table(&revision, &plan, |k| classes.get(k).copied().unwrap_or("").into())
        );
        let drifting: Vec<_> = comparisons
            .iter()
            .filter(|(_, c)| c.class != driftd_core::diff::DriftClass::InSync)
            .map(|(k, c)| (k, c))
            .collect();
        if !drifting.is_empty() {
            println!("\ndifferences (committed vs live):");
            print!("{}", super::check::table_report(&drifting));
        }
        let prunable: Vec<_> = revision
            .dropped()
            .filter(|o| live.contains_key(&o.key) && selected(&o.key))
            .collect();
        for o in &prunable {
            println!(
                "\n{} is live but no longer in revision {}: {}",
                o.key,
                revision.revision.id,
                if args.prune { "deleting it (--prune)" } else { "--prune deletes it" }
            );
        }
        let write = reconcile::drifting(&comparisons);
        // A deploy in flight (or one that did not finish) owns the source's objects until it
        // ends: reconciling would fight it, as remediation never does.
        if let Some(open) = store
            .open_intents()?
            .into_iter()
            .find(|o| o.intent.source == args.source)
        {
            let note = format!(
                "source {} has open intent {} ({}, held by {}): a deploy is in flight or did not finish",
                args.source, open.intent.id, open.intent.state, open.intent.holder
            );
            if args.apply {
                anyhow::bail!(
                    "{note}; end it first (`driftd intent commit|abort|release {}`)",
                    open.intent.id
                );
            }
            println!("\nnote: {note}; --apply refuses until it ends");
        }
        if !args.apply {
            println!(
                "\ndry run: nothing changed; `{}` writes {} object(s) in the order above",
                apply_command(&args),
                write.len()
            );
            return Ok(ExitCode::SUCCESS);
        }
        let steps = revision
            .steps(&store, &plan, &write)
            .context("cannot restore the committed state")?;
        let options = ApplyOptions {
            force_conflicts: args.force_conflicts,
            timeout: Duration::from_secs(args.timeout),
            ..ApplyOptions::default()
        };
        let mut applied = 0;
        println!();
        cluster
            .apply_in_order(&steps, &options, |p| match p {
                Progress::Waiting { object, for_ } => {
                    println!("waiting for {for_} to be current before {object}")
                }
                Progress::Applied {
                    object,
                    resource_version,
                } => {
                    applied += 1;
                    println!("applied {object} (resourceVersion {resource_version})");
                }
            })
            .await?;
        let mut deleted = 0;
        if args.prune {
            // Dependents first: the reverse of the order they would be applied in.
            let mut doomed = prunable.clone();
            doomed.sort_by_key(|o| std::cmp::Reverse(driftd_core::plan::kind_rank(&o.key.kind)));
            for o in doomed {
                if cluster.delete(&o.key, &o.api_version).await? {
                    deleted += 1;
                    println!("deleted {}", o.key);
                }
            }
        }
        println!(
            "reconciled source {} to revision {}: {applied} object(s) applied, {deleted} deleted",
            args.source, revision.revision.id
        );
        Ok(ExitCode::SUCCESS)
    })
}

/// This reconcile again with `--apply`: every option the user gave kept (the database and
/// configuration included), so the command can be pasted as it is.
fn apply_command(args: &Args) -> String {
    use driftd_core::text::shell_quote;
    let mut words = vec![
        "driftd reconcile".to_string(),
        format!("--db {}", shell_quote(&args.db.display().to_string())),
    ];
    if let Some(config) = &args.keys.config {
        words.push(format!(
            "--config {}",
            shell_quote(&config.display().to_string())
        ));
    }
    words.push(format!("--source {}", shell_quote(&args.source)));
    for o in &args.objects {
        words.push(format!("--object {}", shell_quote(&o.to_string())));
    }
    if args.prune {
        words.push("--prune".into());
    }
    if args.force_conflicts {
        words.push("--force-conflicts".into());
    }
    if args.timeout != 300 {
        words.push(format!("--timeout {}", args.timeout));
    }
    words.push("--apply".into());
    words.join(" ")
}
