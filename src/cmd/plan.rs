//! `driftd plan`: the order in which a source's committed objects must be applied (see
//! `driftd_core::plan`). Reads the newest revision from the database; asks the cluster only
//! when an object depends on something outside the source.
//!
//! `--format json`: `{"source","revision","steps":[{"group","kind","namespace","name",
//! "apiVersion","depends_on":[{"group","kind","namespace","name","because","external"}]}]}`,
//! steps in apply order.

use super::Format;
use driftd_cluster::apply::Cluster;
use driftd_cluster::reconcile::{self, SourceRevision};
use driftd_core::plan::{Because, Plan};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// The source to plan (a Helm release is `helm:<namespace>/<release>`).
    #[arg(long)]
    pub source: String,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = super::common::database::open_existing(&args.db)?;
    let revision = reconcile::load(&store, &args.source)?;
    let plan = revision.plan()?;
    if !plan.external().is_empty() {
        super::runtime()?.block_on(async {
            let mut cluster = connect().await?;
            revision.check_external(&plan, &mut cluster).await?;
            anyhow::Ok(())
        })?;
    }
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&plan_json(&revision, &plan))?
        ),
        Format::Table => print!("{}", plan_table(&revision, &plan, |_| String::new())),
    }
    Ok(ExitCode::SUCCESS)
}

/// The kube client of the kubeconfig, as kubectl finds it.
pub async fn connect() -> anyhow::Result<Cluster> {
    let client = kube::Client::try_default().await.map_err(|e| {
        anyhow::anyhow!(
            "no cluster reachable: cannot connect to Kubernetes ({e}); set KUBECONFIG or run in a cluster"
        )
    })?;
    Ok(Cluster::new(client))
}

fn plan_json(revision: &SourceRevision, plan: &Plan) -> serde_json::Value {
    let steps: Vec<serde_json::Value> = plan
        .steps
        .iter()
        .map(|s| {
            let mut step = serde_json::to_value(s).unwrap_or_default();
            if let Some(o) = revision.object(&s.key) {
                step["apiVersion"] = json!(o.api_version);
            }
            step
        })
        .collect();
    json!({
        "source": revision.source,
        "revision": revision.revision.id,
        "steps": steps,
    })
}

/// Numbered steps, each with what it waits for; `status` adds a column (reconcile's class).
pub fn plan_table(
    revision: &SourceRevision,
    plan: &Plan,
    status: impl Fn(&driftd_k8s::ObjectKey) -> String,
) -> String {
    let mut out = format!(
        "apply order of source {}, revision {} ({} objects):\n",
        revision.source,
        revision.revision.id,
        plan.steps.len()
    );
    let width = plan
        .steps
        .iter()
        .map(|s| s.key.to_string().chars().count())
        .max()
        .unwrap_or(0);
    for (i, s) in plan.steps.iter().enumerate() {
        let after: Vec<String> = s
            .depends_on
            .iter()
            .map(|d| {
                let why = match (d.because, d.external) {
                    (_, true) => "depends-on, in the cluster",
                    (Because::DependsOn, _) => "depends-on",
                    (Because::Crd, _) => "its CRD",
                    (Because::Namespace, _) => "its namespace",
                };
                format!("{} ({why})", d.key)
            })
            .collect();
        let mut line = format!("{:>3}  {:<width$}", i + 1, s.key.to_string());
        let st = status(&s.key);
        if !st.is_empty() {
            line.push_str(&format!("   {st:<9}"));
        }
        if !after.is_empty() {
            line.push_str(&format!("   after {}", after.join(", ")));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
