//! `--cluster`: what `commit`, `intent` and `run` share to record in the cluster log (Secrets
//! in driftd's namespace, imported by every `driftd serve`) instead of a database file.

use super::common::desired::{
    no_objects, note_unresolved, read_input, warn_pruned_fields, DesiredArgs,
};
use anyhow::Context;
use driftd_cluster::cluster_log::format::RecordObject;
use driftd_cluster::cluster_log::ClusterLog;
use driftd_core::manifest::{LoadOptions, Loaded};
use driftd_store::{validate_source_name, CommitRequest, Store};
use std::collections::{BTreeMap, BTreeSet};

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
    pub async fn load_for_cluster(&self) -> anyhow::Result<Loaded> {
        validate_source_name(&self.source)?;
        if self.namespace.trim().is_empty() {
            anyhow::bail!("--namespace must not be empty");
        }
        let mut options = LoadOptions {
            default_namespace: self.namespace.clone(),
            ..LoadOptions::default()
        };
        self.input.apply(&mut options);
        let mut loaded = read_input(&self.files, &options)?;
        if loaded.objects.is_empty() && !self.allow_empty {
            return Err(no_objects(&self.files, loaded.skipped.len()));
        }
        // The cluster is at hand: the scope of a custom kind no CRD here defines is the
        // one its discovery says, so its objects are keyed right from the start.
        let scopes = discovered_scopes(&self.cluster, &loaded).await;
        if !scopes.is_empty() {
            options.custom_scopes.extend(scopes);
            loaded = driftd_core::manifest::load(&self.files, &options)?;
        }
        note_unresolved(&loaded);
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

/// The scopes discovery gives for the custom kinds of `loaded` whose scope nothing in the
/// input tells: `(group, kind) -> namespaced`. A kind the cluster does not serve (or a
/// cluster that cannot be asked) is left out: its objects stay namespaced until a `serve`
/// learns otherwise.
async fn discovered_scopes(
    cluster: &ClusterArgs,
    loaded: &Loaded,
) -> BTreeMap<(String, String), bool> {
    let mut kinds = BTreeSet::new();
    for o in loaded.objects.iter().filter(|o| o.scope_unresolved) {
        let api_version = o.object["apiVersion"].as_str().unwrap_or_default();
        kinds.insert((api_version.to_string(), o.key.kind.clone()));
    }
    let mut scopes = BTreeMap::new();
    if kinds.is_empty() {
        return scopes;
    }
    let client = match cluster.client().await {
        Ok(client) => client,
        Err(e) => {
            eprintln!("warning: custom kinds' scopes not asked of the cluster: {e}");
            return scopes;
        }
    };
    for (api_version, kind) in kinds {
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version.as_str()),
        };
        let gvk = kube::api::GroupVersionKind::gvk(group, version, &kind);
        match kube::discovery::pinned_kind(&client, &gvk).await {
            Ok((_, caps)) => {
                let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
                scopes.insert((group.to_string(), kind), namespaced);
            }
            Err(e) => {
                eprintln!("warning: the cluster does not tell the scope of {kind}.{group}: {e}")
            }
        }
    }
    scopes
}

/// The objects as a record of the cluster log carries them.
pub fn records(loaded: &Loaded) -> Vec<RecordObject> {
    loaded.objects.iter().map(RecordObject::from).collect()
}
