//! `driftd sim`: runs the cluster simulator until SIGINT/SIGTERM.

use driftd_sim::{SimOptions, Simulator};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write a kubeconfig pointing at the simulator (written atomically).
    #[arg(long)]
    pub kubeconfig_out: Option<PathBuf>,
    /// Past changes kept for watches to resume from; older resourceVersions get 410 Expired.
    #[arg(long, default_value_t = 10_000)]
    pub history_limit: usize,
    /// Seconds between BOOKMARK events on watches that allow them.
    #[arg(long, default_value_t = 5)]
    pub bookmark_interval_secs: u64,
    /// Serve HTTPS with a self-signed certificate the written kubeconfig trusts: kubectl
    /// sends its users' bearer tokens only to https servers.
    #[arg(long)]
    pub tls: bool,
    /// Send audit events of every write to the webhook this kubeconfig names, as
    /// kube-apiserver's `--audit-webhook-config-file` (also `POST /_sim/audit`).
    #[arg(long)]
    pub audit_webhook_config_file: Option<PathBuf>,
    /// Append audit events of every write to this file, one JSON Event a line, as
    /// kube-apiserver's `--audit-log-path` with `--audit-log-format=json`.
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,
    /// Audit level of writes but Secrets': None, Metadata, Request or RequestResponse.
    #[arg(long, default_value = "RequestResponse", value_parser = driftd_sim::audit::Level::parse)]
    pub audit_level: driftd_sim::audit::Level,
    /// Audit level of writes of Secrets.
    #[arg(long, default_value = "Metadata", value_parser = driftd_sim::audit::Level::parse)]
    pub audit_secrets_level: driftd_sim::audit::Level,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    super::init_logging();
    let rt = super::runtime()?;
    rt.block_on(async move {
        let opts = SimOptions {
            history_limit: args.history_limit,
            bookmark_interval: Duration::from_secs(args.bookmark_interval_secs.max(1)),
            controllers: true,
            tls: args.tls,
        };
        let sim = Simulator::start_with(args.listen, opts)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
        if args.audit_webhook_config_file.is_some() || args.audit_log_path.is_some() {
            sim.set_audit(&driftd_sim::audit::AuditOptions {
                webhook_config_file: args.audit_webhook_config_file.clone(),
                log_path: args.audit_log_path.clone(),
                level: args.audit_level,
                secrets_level: Some(args.audit_secrets_level),
            })
            .map_err(|e| anyhow::anyhow!("--audit-webhook-config-file: {e}"))?;
        }
        println!("url: {}", sim.url());
        if let Some(path) = &args.kubeconfig_out {
            sim.write_kubeconfig(path)
                .map_err(|e| anyhow::anyhow!("cannot write kubeconfig {}: {e}", path.display()))?;
            println!("kubeconfig: {}", path.display());
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        tracing::info!(url = %sim.url(), "simulator ready");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("simulator stopping");
        drop(sim);
        Ok(ExitCode::SUCCESS)
    })
}
