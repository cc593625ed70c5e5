//! `--cluster`: what `commit`, `intent` and `run` share to record in the cluster log (Secrets
//! in driftd's namespace, imported by every `driftd serve`) instead of a database file.

use super::common::desired::{no_objects, read_input, warn_pruned_fields, DesiredArgs};
use anyhow::Context;
use driftd_cluster::cluster_log::format::RecordObject;
use driftd_cluster::cluster_log::ClusterLog;
use driftd_core::manifest::{LoadOptions, Loaded};
use driftd_store::{validate_source_name, CommitRequest, Store};

/// Where to record: `--cluster` and driftd's namespace.
#[derive(Debug, Clone, clap::Args)]
pub struct ClusterArgs {
    /// Record in the cluster (Secrets in driftd's namespace, imported by every `driftd
    /// serve`) instead of in --db. Uses the kubeconfig as kubectl does (KUBECONFIG,
    /// ~/.kube/config, or the pod's ServiceAccount).
    #[arg(long)]
    pub cluster: bool,
    /// driftd's namespace, where `driftd serve` reads the cluster log: the same setting as
    /// serve's `namespace` (`-n` is the objects' default namespace, as for kubectl).
    #[arg(long, env = "DRIFTD_NAMESPACE", default_value = "driftd")]
    pub driftd_namespace: String,
}

impl ClusterArgs {
    /// The cluster log, through the kubeconfig.
    pub async fn connect(&self) -> anyhow::Result<ClusterLog> {
        let client = self.client().await?;
        Ok(ClusterLog::new(client, &self.driftd_namespace))
    }

    /// A client through the kubeconfig, for what `--cluster` reads besides the log.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        if self.driftd_namespace.trim().is_empty() {
            anyhow::bail!("--driftd-namespace must not be empty");
        }
        kube::Client::try_default().await.map_err(|e| {
            anyhow::anyhow!(
                "cannot connect to Kubernetes ({e}); set KUBECONFIG or run in a cluster"
            )
        })
    }
}

impl DesiredArgs {
    /// Reads and validates the input exactly as `commit --db` does (same reader, same store
    /// checks, in a database in memory) without opening any database file: nothing is
    /// written anywhere when it is refused.
    pub fn load_for_cluster(&self) -> anyhow::Result<Loaded> {
        validate_source_name(&self.source)?;
        if self.namespace.trim().is_empty() {
            anyhow::bail!("--namespace must not be empty");
        }
        let mut options = LoadOptions {
            default_namespace: self.namespace.clone(),
            ..LoadOptions::default()
        };
        self.input.apply(&mut options);
        let loaded = read_input(&self.files, &options)?;
        if loaded.objects.is_empty() && !self.allow_empty {
            return Err(no_objects(&self.files, loaded.skipped.len()));
        }
        warn_pruned_fields(&[], &loaded.objects);
        Store::open_in_memory()?
            .commit(&CommitRequest {
                source: &self.source,
                message: &self.message,
                author: &self.author(),
                objects: &loaded.objects,
                committed_at: None,
                skipped: 0,
            })
            .with_context(|| format!("commit to source {:?} refused", self.source))?;
        Ok(loaded)
    }
}

/// The objects as a record of the cluster log carries them.
pub fn records(loaded: &Loaded) -> Vec<RecordObject> {
    loaded.objects.iter().map(RecordObject::from).collect()
}
