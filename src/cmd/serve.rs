//! `driftd serve`: the long-running drift daemon.

use driftd_config::Config;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// TOML configuration file (see config.example.toml).
    #[arg(long, env = "DRIFTD_CONFIG")]
    pub config: Option<PathBuf>,
    /// SQLite database (overrides `database`).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// HTTP listen address (overrides `listen`).
    #[arg(long)]
    pub listen: Option<std::net::SocketAddr>,
    /// Web config file of Prometheus exporters: TLS, basic auth, headers (overrides
    /// `http.web_config_file`).
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    driftd_engine::return_freed_pages_promptly();
    super::init_logging();
    let mut config = Config::load(args.config.as_deref())?;
    if let Some(db) = args.db {
        config.database = db;
    }
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    if let Some(file) = args.web_config_file {
        config.http.web_config_file = Some(file);
    }
    super::runtime()?.block_on(async move {
        let kube_config = kube::Config::infer().await.map_err(|e| {
            anyhow::anyhow!(
                "cannot connect to Kubernetes ({e}); set KUBECONFIG or run in a cluster"
            )
        })?;
        driftd_daemon::serve::run(
            config,
            kube_config,
            driftd_daemon::serve::shutdown_signal(),
            |listening| {
                println!("driftd listening on {}", listening.url());
            },
        )
        .await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
