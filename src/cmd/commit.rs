//! `driftd commit`: records the desired state of one source from manifest files.
//!
//! Everything is parsed and validated before the database is opened, so bad input never
//! creates or touches the database. `intent begin` and `run` read their objects the same way
//! ([`DesiredArgs`]).

use super::cluster::records;
use super::common::desired::{count, describe_outcome, DesiredArgs};
use anyhow::Context;
use driftd_cluster::cluster_log::NewRevision;
use driftd_store::CommitRequest;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub desired: DesiredArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let desired = &args.desired;
    if desired.cluster.cluster {
        return commit_to_cluster(desired);
    }
    // Held as text: a million objects' trees would be about ten times the input.
    let (mut store, loaded) = desired.load_all_compact()?;
    let outcome = store
        .commit(&CommitRequest {
            source: &desired.source,
            message: &desired.message,
            author: &desired.author(),
            objects: &loaded.objects,
            committed_at: None,
            skipped: loaded.skipped.len(),
        })
        .with_context(|| format!("commit to source {:?} refused", desired.source))?;
    let skipped = match loaded.skipped.len() {
        0 => String::new(),
        n => format!(
            "; {} skipped: generateName without a name",
            count(n, "object")
        ),
    };
    println!("{}{skipped}", describe_outcome(&outcome));
    Ok(ExitCode::SUCCESS)
}

/// `commit --cluster`: validated as `commit --db` validates, then recorded as a revision of
/// the cluster log.
fn commit_to_cluster(desired: &DesiredArgs) -> anyhow::Result<ExitCode> {
    super::runtime()?.block_on(async {
        let loaded = desired.load_for_cluster().await?;
        let log = desired.cluster.connect().await?;
        let id = log
            .commit(NewRevision {
                source: desired.source.clone(),
                author: desired.author(),
                message: desired.message.clone(),
                objects: records(&loaded),
            })
            .await
            .with_context(|| format!("commit to source {:?} refused", desired.source))?;
        println!(
            "revision {id} of source {} ({}) recorded in the cluster log (namespace {})",
            desired.source,
            count(loaded.objects.len(), "object"),
            log.namespace()
        );
        Ok(ExitCode::SUCCESS)
    })
}
