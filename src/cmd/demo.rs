//! `driftd demo`: see drift appear in under a minute, no cluster needed.

use crate::demo::{self, DemoOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address of /drift and /metrics.
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
    super::runtime()?.block_on(demo::run(options, crate::serve::shutdown_signal()))?;
    Ok(ExitCode::SUCCESS)
}
