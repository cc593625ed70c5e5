//! Opening the database from the CLI (with the configured Secret keys, warning when its files
//! are readable by others) and `driftd store rekey`. The hash key is the one `driftd serve`
//! uses: a key file, or the Secret `secrets.hash_key_secret` names in driftd's namespace, read
//! through the kubeconfig (never created here).

use driftd_config::Config;
use driftd_store::{SecretKeys, Store};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Where the Secret keys come from, for the commands that store Secret values: the same
/// `[secrets]` settings `driftd serve` reads.
#[derive(Debug, Clone, clap::Args)]
pub struct KeyArgs {
    /// Configuration file whose `[secrets]` key files apply (the file `driftd serve` reads);
    /// the `DRIFTD_SECRETS_*` variables override it, as for the daemon.
    #[arg(long, env = "DRIFTD_CONFIG")]
    pub config: Option<PathBuf>,
}

impl KeyArgs {
    /// The keys of the configuration DRIFTD_CONFIG names (and the DRIFTD_SECRETS_*
    /// variables), for commands without a `--config` option.
    pub fn from_env() -> KeyArgs {
        KeyArgs {
            config: std::env::var_os("DRIFTD_CONFIG").map(PathBuf::from),
        }
    }

    /// Reads the configured keys (none configured: no keys).
    pub fn load(&self) -> anyhow::Result<SecretKeys> {
        load_keys(&Config::load(self.config.as_deref())?)
    }
}

/// The keys `config` names: its key files, and the hash key from its Secret when
/// `secrets.hash_key_secret` is set. The cluster is read on a thread of its own, as callers
/// may run inside a runtime already (`driftd run`).
pub fn load_keys(config: &Config) -> anyhow::Result<SecretKeys> {
    if config.secrets.hash_key_secret.is_none() {
        return Ok(config.secrets.load_keys()?);
    }
    let config = config.clone();
    let keys = std::thread::spawn(move || {
        super::runtime()?
            .block_on(driftd_daemon::hash_key::cli_keys(&config))
            .map_err(anyhow::Error::from)
    })
    .join()
    .map_err(|_| anyhow::anyhow!("reading the hash key's Secret panicked"))??;
    Ok(keys)
}

/// Opens (creating it if needed) the database with `keys`, warning on stderr about files of
/// it that others can read.
pub fn open(db: &Path, keys: SecretKeys) -> anyhow::Result<Store> {
    let store = Store::open_with_keys(db, keys)?;
    if let Some(warning) = driftd_store::insecure_warning(&store.insecure_files()) {
        eprintln!("warning: {warning}");
    }
    Ok(store)
}

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Reseal every stored Secret value under the current encryption key (after adding a new
    /// `secrets.encryption_key_file` and listing the old one in
    /// `secrets.previous_encryption_key_files`), and rehash them under the current hash key
    /// if it changed; in one transaction. Afterwards the old key is no longer needed.
    Rekey(RekeyArgs),
}

#[derive(Debug, clap::Args)]
pub struct RekeyArgs {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    #[command(flatten)]
    pub keys: KeyArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Rekey(a) => rekey(a),
    }
}

fn rekey(args: RekeyArgs) -> anyhow::Result<ExitCode> {
    let keys = args.keys.load()?;
    let encryption = keys.encryption.as_ref().map(|k| k.id());
    let hash = keys.hash.as_ref().map(|k| k.id());
    let mut store = open(super::common::database::existing(&args.db)?, keys)?;
    // A database that still keeps its own hash key moves to the configured one first, as
    // `driftd serve` does at start; values kept only as hashes come from the live Secrets.
    if let (Some(pending), Some(id)) = (store.pending_key_move()?, hash) {
        let moved = if pending.live_needed.is_empty() {
            store.move_hash_key(&Default::default())?
        } else {
            // One runtime for the client and its calls: kube's client runs its connection
            // on the runtime it was made in.
            super::runtime()?.block_on(async {
                let client = kube::Client::try_default().await.map_err(|e| {
                    anyhow::anyhow!(
                        "cannot connect to Kubernetes ({e}): the values of {} are kept only as \
                         hashes under the database's own key, and moving to the configured \
                         hash key recovers them from the live Secrets: set KUBECONFIG, or run \
                         it where driftd runs",
                        super::common::desired::count(pending.live_needed.len(), "stored Secret")
                    )
                })?;
                anyhow::Ok(
                    driftd_daemon::hash_key::move_database(&mut store, &client)
                        .await?
                        .unwrap_or_default(),
                )
            })?
        };
        println!(
            "the database keeps no hash key now: every stored Secret value is hashed under the \
             configured key {id} ({} rehashed from sealed values, {} from the live Secrets)",
            moved.from_sealed, moved.from_live
        );
        if !moved.unrecoverable.is_empty() {
            println!(
                "{} kept only as hashes whose values the live Secret no longer holds: {}; \
                 they read as changed until their manifests are committed again",
                super::common::desired::count(moved.unrecoverable.len(), "stored Secret"),
                moved.unrecoverable.join(", ")
            );
        }
    }
    let report = store.rekey()?;
    if let Some(id) = encryption {
        println!(
            "{} sealed under encryption key {id} ({} resealed, {} already were)",
            super::common::desired::count(report.resealed + report.already_current, "Secret"),
            report.resealed,
            report.already_current
        );
    }
    if report.rehashed {
        println!("every stored Secret value is now hashed under the configured hash key");
    }
    if report.hashes_only > 0 {
        println!(
            "{} stored only as hashes (no value was kept when committed): commit their \
             manifests again with an encryption key configured to keep the values",
            super::common::desired::count(report.hashes_only, "Secret")
        );
    }
    Ok(ExitCode::SUCCESS)
}
