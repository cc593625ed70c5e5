//! The `driftd` command: only wires subcommands to the library.

mod cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: the engine allocates and frees a JSON tree per
/// watch event, and glibc's malloc grew slower with the heap's size (`perf` on the engine
/// bench: `_int_malloc` and `malloc_consolidate` first, µs per event growing with N).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "driftd",
    version,
    about = "Kubernetes drift detection against committed desired state"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Record a new revision of a source's desired objects.
    Commit(cmd::commit::Args),
    /// List sources with their newest revision.
    Sources(cmd::sources::Args),
    /// List the revisions of one source and the transitions of its intents.
    History(cmd::history::Args),
    /// Record deploys before they apply (write-ahead intents), end them, release stale locks.
    Intent(cmd::intent::Args),
    /// Run a deploy command inside an intent: commit on success, record failure or interruption.
    Run(cmd::run::Args),
    /// Commit desired state kept by another tool (a Pulumi stack export).
    Import(cmd::import::Args),
    /// Maintain the database: reseal and rehash stored Secret values after a key change.
    Store(cmd::store::Args),
    /// Run the drift daemon.
    Serve(cmd::serve::Args),
    /// Print the current drift from a running daemon.
    Drift(cmd::drift::Args),
    /// Print the stale deploy locks a running daemon found (or, with --db or --cluster,
    /// judged here), and how to release each.
    Locks(cmd::locks::Args),
    /// Print the order in which a source's objects must be applied.
    Plan(cmd::plan::Args),
    /// Restore a source's committed state in the cluster (dry run unless --apply).
    Reconcile(cmd::reconcile::Args),
    /// Write accepted drift back into the manifest files a source was committed from
    /// (a diff unless --write).
    Adopt(cmd::adopt::Args),
    /// Compare desired files with live object files, offline.
    Check(cmd::check::Args),
    /// Run the cluster simulator (a Kubernetes API server for tests and demos).
    #[cfg(feature = "sim")]
    Sim(cmd::sim::Args),
    /// Start a simulator, commit the example app, drift it, and serve /drift and /metrics.
    #[cfg(feature = "sim")]
    Demo(cmd::demo::Args),
    /// Measure driftd at scale against the simulator: memory, cold start, events/s, latency.
    #[cfg(feature = "sim")]
    Bench(cmd::bench::Args),
}

fn main() -> ExitCode {
    driftd_engine::small_pages_only();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Commit(a) => cmd::commit::run(a),
        Command::Sources(a) => cmd::sources::run(a),
        Command::History(a) => cmd::history::run(a),
        Command::Intent(a) => cmd::intent::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Import(a) => cmd::import::run(a),
        Command::Store(a) => cmd::store::run(a),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Drift(a) => cmd::drift::run(a),
        Command::Locks(a) => cmd::locks::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Adopt(a) => cmd::adopt::run(a),
        Command::Plan(a) => cmd::plan::run(a),
        Command::Reconcile(a) => cmd::reconcile::run(a),
        #[cfg(feature = "sim")]
        Command::Sim(a) => cmd::sim::run(a),
        #[cfg(feature = "sim")]
        Command::Demo(a) => cmd::demo::run(a),
        #[cfg(feature = "sim")]
        Command::Bench(a) => cmd::bench::run(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
