//! One file per subcommand: argument struct (clap) and a `run` that returns the exit code.
//! Errors returned from `run` are printed by `main` and exit with status 2.

pub mod adopt;
#[cfg(feature = "sim")]
pub mod bench;
pub mod check;
pub mod cluster;
pub mod commit;
pub mod common;
#[cfg(feature = "sim")]
pub mod demo;
pub mod drift;
pub mod history;
mod holders;
pub mod import;
pub mod intent;
pub mod locks;
mod log_fields;
pub mod plan;
pub mod reconcile;
pub mod run;
pub mod serve;
#[cfg(feature = "sim")]
pub mod sim;
pub mod sources;
pub mod store;

/// Output format of the commands that print for people or for scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for people (times as ages where a listing shows times).
    Table,
    /// JSON for scripts (times as RFC 3339).
    Json,
}

/// Starts a multi-threaded tokio runtime for subcommands that need one.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// Sets up `tracing` logs on stderr, filtered by `RUST_LOG` (default `info`), with control
/// characters in fields escaped.
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .fmt_fields(log_fields::EscapedFields::default())
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
