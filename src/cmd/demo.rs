//! `driftd demo`: everything a newcomer needs to see drift, in one process and under a
//! minute, no cluster needed. Starts the cluster simulator, commits the bundled example app,
//! applies it to the simulator, serves the drift page, `/drift` and `/metrics`, and a few
//! seconds later edits the cluster as a person with kubectl would (a new image, a changed
//! ConfigMap value) so drift appears.

use anyhow::Context;
use driftd_config::{Config, LeaderElectionConfig};
use driftd_core::manifest::{self, LoadOptions, ManifestObject};
use driftd_sim::Simulator;
use driftd_store::{CommitOutcome, CommitRequest, Store};
use kube::api::{DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address of the drift page (`/`), /drift and /metrics.
    #[arg(long, default_value = "127.0.0.1:9477")]
    pub listen: std::net::SocketAddr,
    /// Directory for the demo's database and kubeconfig (default: a new temporary directory).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Seconds to wait before editing the cluster.
    #[arg(long, default_value_t = 5)]
    pub edit_after: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    super::init_logging();
    let workdir = match args.workdir {
        Some(dir) => dir,
        None => std::env::temp_dir().join(format!("driftd-demo-{}", std::process::id())),
    };
    let options = DemoOptions {
        listen: args.listen,
        workdir,
        edit_after: Duration::from_secs(args.edit_after),
    };
    super::runtime()?.block_on(run_demo(options, driftd_daemon::serve::shutdown_signal()))?;
    Ok(ExitCode::SUCCESS)
}

/// The example app, bundled so `driftd demo` works from any directory.
pub const EXAMPLE_FILES: &[(&str, &str)] = &[
    (
        "examples/app/00-namespace.yaml",
        include_str!("../../examples/app/00-namespace.yaml"),
    ),
    (
        "examples/app/10-config.yaml",
        include_str!("../../examples/app/10-config.yaml"),
    ),
    (
        "examples/app/20-web.yaml",
        include_str!("../../examples/app/20-web.yaml"),
    ),
];

/// Demo settings.
pub struct DemoOptions {
    pub listen: SocketAddr,
    /// Where the database and kubeconfig go.
    pub workdir: PathBuf,
    /// Wait this long after the daemon is ready before editing the cluster.
    pub edit_after: Duration,
}

/// Parses the bundled example app exactly as `driftd commit` would.
pub fn example_objects() -> anyhow::Result<Vec<ManifestObject>> {
    let mut objects = Vec::new();
    for (file, text) in EXAMPLE_FILES {
        objects.extend(manifest::parse_text(text, file, &LoadOptions::default())?);
    }
    Ok(objects)
}

/// The simulator's client configuration, from its kubeconfig as any user's would be.
pub async fn config_for(sim: &Simulator) -> anyhow::Result<kube::Config> {
    let kubeconfig = Kubeconfig::from_yaml(&sim.kubeconfig_yaml())?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

/// A client for the simulator.
pub async fn client_for(sim: &Simulator) -> anyhow::Result<Client> {
    Ok(Client::try_from(config_for(sim).await?)?)
}

/// Creates `objects` in the cluster in order (the example files are in install order).
pub async fn apply_objects(client: &Client, objects: &[ManifestObject]) -> anyhow::Result<()> {
    for object in objects {
        let api = api_for(client, object).await?;
        let dynamic: DynamicObject = serde_json::from_value(object.object.clone())?;
        api.create(
            &PostParams {
                field_manager: Some("kubectl-create".into()),
                ..Default::default()
            },
            &dynamic,
        )
        .await
        .with_context(|| format!("creating {}", object.key))?;
    }
    Ok(())
}

async fn api_for(client: &Client, object: &ManifestObject) -> anyhow::Result<Api<DynamicObject>> {
    let (group, version) = driftd_k8s::kinds::split_api_version(&object.api_version);
    let gvk = GroupVersionKind::gvk(group, version, &object.key.kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await?;
    Ok(match &object.key.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    })
}

/// Runs the demo until `shutdown` completes.
pub async fn run_demo(
    options: DemoOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(&options.workdir)?;
    let sim = Simulator::start("127.0.0.1:0".parse()?).await?;
    let kubeconfig = options.workdir.join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig)?;
    let database = options.workdir.join("driftd.db");

    let objects = example_objects()?;
    let mut store = Store::open(&database)?;
    let outcome = store.commit(&CommitRequest {
        source: "shop",
        message: "demo: example app",
        author: "driftd-demo",
        objects: &objects,
        committed_at: None,
        skipped: 0,
    })?;
    let revision = match outcome {
        CommitOutcome::Created(r) | CommitOutcome::Unchanged(r) => r,
    };
    drop(store);

    let client = client_for(&sim).await?;
    apply_objects(&client, &objects).await?;

    let config = Config {
        database: database.clone(),
        listen: options.listen,
        settle_seconds: 2.0,
        // One replica, and the simulated cluster has no `driftd` namespace for a Lease.
        leader_election: LeaderElectionConfig {
            enabled: false,
            ..LeaderElectionConfig::default()
        },
        ..Config::default()
    };
    let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
    let daemon = tokio::spawn(driftd_daemon::serve::run(
        config,
        config_for(&sim).await?,
        shutdown,
        move |listening| {
            let _ = addr_tx.send(listening.addr);
        },
    ));
    let addr = addr_rx.await.context("daemon did not start")?;
    let url = format!("http://{addr}");
    // The commands to try name this very binary: after `cargo run -- demo` there is no
    // `driftd` on PATH.
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.to_str().map(str::to_string))
        .unwrap_or_else(|| "driftd".into());
    println!("driftd listening on {url}");
    println!();
    println!(
        "driftd demo: a simulated cluster at {} runs the example app",
        sim.url()
    );
    println!(
        "  committed: source `shop`, revision {} ({} objects) in {}",
        revision.id,
        objects.len(),
        database.display()
    );
    println!("  open:      {url}/ (the drift page, in a browser)   {url}/drift   {url}/metrics");
    println!("  try:       {exe} drift --server {url}");
    println!(
        "             KUBECONFIG={} kubectl -n shop get deploy,cm,events.v1.events.k8s.io",
        kubeconfig.display()
    );
    println!(
        "  in {}s the demo changes the web image and a ConfigMap value, as a person with kubectl would.",
        options.edit_after.as_secs()
    );

    tokio::time::sleep(options.edit_after).await;
    hand_edit(&client).await?;
    println!();
    println!("edited: deployment/web image nginx:1.27 -> nginx:1.28-rc (kubectl-set), configmap/web-config LOG_LEVEL info -> debug (kubectl-edit)");
    println!(
        "  see:       {url}/ in a browser, curl -s {url}/drift   or   {exe} drift --server {url}"
    );
    println!(
        "  revert:    KUBECONFIG={} kubectl -n shop set image deployment/web app=nginx:1.27",
        kubeconfig.display()
    );
    println!("Ctrl-C stops the demo.");

    daemon.await??;
    Ok(())
}

/// The edits a person would make with `kubectl set image` and `kubectl edit`.
async fn hand_edit(client: &Client) -> anyhow::Result<()> {
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "shop",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment")),
    );
    deployments
        .patch(
            "web",
            &PatchParams {
                field_manager: Some("kubectl-set".into()),
                ..Default::default()
            },
            &Patch::Strategic(serde_json::json!({
                "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28-rc"}]}}}
            })),
        )
        .await
        .context("editing deployment/web")?;
    let configmaps: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "shop",
        &kube::api::ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap")),
    );
    configmaps
        .patch(
            "web-config",
            &PatchParams {
                field_manager: Some("kubectl-edit".into()),
                ..Default::default()
            },
            &Patch::Merge(serde_json::json!({"data": {"LOG_LEVEL": "debug"}})),
        )
        .await
        .context("editing configmap/web-config")?;
    Ok(())
}
