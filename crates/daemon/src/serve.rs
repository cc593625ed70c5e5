//! `driftd serve` wiring, in the manner of kube-rs's controller-rs `main`: open the store,
//! start the leader election, the Event publisher, the watchers, the drift engine and the
//! HTTP server, and stop them together.
//!
//! Shutdown order, so that the Lease is never left behind and never given up early: the
//! engine stops (no new Events), the Event queue drains while this replica still leads, then
//! the elector releases the Lease.

use crate::leader::{self, Elector, KubeLease, Leadership};
use driftd_config::Config;
use driftd_engine::{Clock, DriftIndex, Engine, EngineError, SystemClock};
use driftd_export::http::{self, server, Handles};
use driftd_export::publisher::Publisher;
use driftd_export::web_config::{WebConfig, WebConfigError};
use driftd_export::{events, metrics::Metrics};
use driftd_store::{Store, StoreError};
use driftd_watch::packed::Packing;
use driftd_watch::{watch_client, Supervisor};
use k8s_openapi::api::core::v1::ObjectReference;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Capacity of the watchers' queue to the engine; a full queue makes watchers wait. Each
/// message holds a whole object tree (about 10 KB for a 3 KB object), so this bounds what
/// a backlog costs: 256 is about 3 MB, and still far more than one batch of the engine.
const INBOX: usize = 256;

/// Capacity of the audit intake's queue to the engine, in batches (a webhook batch holds
/// up to kube-apiserver's `--audit-webhook-batch-max-size`, 400 by default). A full queue
/// answers the webhook 503, which it retries.
const AUDIT_INBOX: usize = 64;

/// How long shutdown waits for queued Events before giving up on them.
const EVENT_DRAIN: Duration = Duration::from_secs(5);

/// Why the daemon could not start, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A store or key-file error; each names its file.
    #[error(transparent)]
    Database(StoreError),
    #[error("cannot listen on {addr} (key `listen`): {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("drift engine: {0}")]
    Engine(#[from] EngineError),
    /// The web config file (`http.web_config_file`, `--web.config.file`).
    #[error(transparent)]
    WebConfig(#[from] WebConfigError),
    /// `[http] auth` cannot work with the web config.
    #[error("HTTP server: {0}")]
    HttpAuth(String),
    /// The file-descriptor limit leaves too few connections.
    #[error("HTTP server: {0}")]
    Limits(String),
    /// The kube client could not be built from the cluster configuration.
    #[error("cannot connect to Kubernetes: {0}")]
    Kube(#[from] kube::Error),
    /// The hash key's Secret could not be read or made, or the database not moved to it.
    #[error(transparent)]
    HashKey(#[from] crate::hash_key::HashKeyError),
    /// `[audit] webhook_token_file` cannot be read.
    #[error("config: key `audit.webhook_token_file`: {0}")]
    AuditToken(String),
}

/// Where the HTTP server listens, once it does.
#[derive(Debug, Clone, Copy)]
pub struct Listening {
    /// The bound address (useful with port 0).
    pub addr: SocketAddr,
    /// Whether it speaks HTTPS (the web config has `tls_server_config`).
    pub tls: bool,
}

impl Listening {
    /// `http://ADDR` or `https://ADDR`.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }
}

/// Runs the daemon until `shutdown` completes, against the cluster `kube_config` names.
/// `on_listening` is told where the HTTP server listens.
///
/// Two clients: the watchers' has the kube client's retries off (see [`watch_client`]);
/// Events, the Lease and the cluster log keep them.
pub async fn run(
    config: Config,
    kube_config: kube::Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(Listening),
) -> Result<(), ServeError> {
    // The web config and the descriptor limit are checked before the database is touched.
    let web = match &config.http.web_config_file {
        Some(path) => WebConfig::load(path)?,
        None => WebConfig::default(),
    };
    http::check_auth(&config.http, &web).map_err(ServeError::HttpAuth)?;
    let audit_token = config
        .audit
        .webhook_token()
        .map_err(ServeError::AuditToken)?;
    if config.audit.webhook_client_certificates && web.tls.is_none() {
        return Err(ServeError::HttpAuth(
            "audit.webhook_client_certificates needs TLS: set tls_server_config with \
             client_ca_file and client_auth_type in the web config (http.web_config_file)"
                .into(),
        ));
    }
    let (max_connections, note) =
        server::fd_budget(config.http.max_connections).map_err(ServeError::Limits)?;
    if let Some(note) = note {
        tracing::warn!("{note}");
    }
    let client = kube::Client::try_from(kube_config.clone())?;
    let watches = watch_client(kube_config)?;
    // Every handle on the database gets the same keys; the hash key may come from the cluster.
    let keys = crate::hash_key::serve_keys(&config, &client).await?;
    // A shard loads, imports and judges only its own sources (docs/scaling.md).
    let scope = config.shard.scope();
    if !scope.is_all() {
        tracing::info!(
            shard = %config.shard.name,
            sources = ?scope.patterns(),
            "shard {}: owning the sources matching {:?}",
            config.shard.name,
            scope.patterns()
        );
    }
    let mut store =
        Store::open_with_keys(&config.database, keys.clone()).map_err(ServeError::Database)?;
    // Before anything compares: a database that still keeps its own key moves to the
    // configured one (docs/security.md, "The hash key").
    if let (Some(report), Some(key)) = (
        crate::hash_key::move_database(&mut store, &client).await?,
        &keys.hash,
    ) {
        crate::hash_key::log_move(&report, &key.id());
    }
    let store = store.scoped(scope.clone());
    let index = Arc::new(RwLock::new(DriftIndex::new(
        config.metrics.max_object_series,
    )));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let identity = leader::identity();
    let election = &config.leader_election;
    let leadership = if election.enabled {
        Leadership::elected(clock.clone())
    } else {
        tracing::info!("leader election off: this replica acts as leader");
        Leadership::always()
    };
    let elector = election.enabled.then(|| {
        Elector::new(
            KubeLease::new(client.clone(), &config.namespace, &election.lease_name),
            identity.clone(),
            format!("{}/{}", config.namespace, election.lease_name),
            election.into(),
            clock.clone(),
            leadership.clone(),
        )
    });
    // The cluster log's importer writes through its own connection; the engine sees its
    // imports as it sees any commit.
    let import_store = Store::open_with_keys(&config.database, keys.clone())
        .map_err(ServeError::Database)?
        .scoped(scope.clone());
    // Helm releases are imported the same way, through a connection of their own.
    let helm_store = match config.helm.enabled {
        true => Some(
            Store::open_with_keys(&config.database, keys.clone())
                .map_err(ServeError::Database)?
                .scoped(scope.clone()),
        ),
        false => None,
    };
    // So are Pulumi stacks of file backends.
    let pulumi_store = match config.pulumi.state_dirs.is_empty() {
        false => Some(
            Store::open_with_keys(
                &config.database,
                config.secrets.load_keys().map_err(ServeError::Database)?,
            )
            .map_err(ServeError::Database)?
            .scoped(scope.clone()),
        ),
        true => None,
    };
    // `/history` reads the drift episodes through a connection of its own.
    let history = http::HistoryReader::new(
        Store::open_with_keys(&config.database, keys.clone()).map_err(ServeError::Database)?,
    );
    let metrics = Arc::new(Metrics::new(index.clone(), leadership.clone()));
    metrics.register_shard(&config.shard.name);
    report_insecure_database(&store, &metrics);
    let listen_error = |source| ServeError::Listen {
        addr: config.listen,
        source,
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(listen_error)?;
    let addr = listener.local_addr().map_err(listen_error)?;
    tracing::info!(
        %addr,
        tls = web.tls.is_some(),
        basic_auth = !web.users.is_empty(),
        auth = ?config.http.auth,
        max_connections,
        audit_webhook = config.audit.webhook(),
        "HTTP server listening: /drift /history /locks /metrics /healthz /readyz"
    );
    // Poll `shutdown` once before telling anyone we listen: the signal handlers it installs
    // on first poll are then in place, so a SIGTERM right after is a clean shutdown.
    let mut shutdown = Box::pin(shutdown);
    let shutdown_requested = futures::FutureExt::now_or_never(shutdown.as_mut()).is_some();
    on_listening(Listening {
        addr,
        tls: web.tls.is_some(),
    });

    let (events, event_task) = match config.events.enabled {
        true => {
            let (sink, task) = events::spawn(
                client.clone(),
                &config.events,
                &identity,
                index.clone(),
                metrics.clone(),
                leadership.clone(),
            );
            (Some(sink), Some(task))
        }
        false => (None, None),
    };
    let (sender, inbox) = tokio::sync::mpsc::channel(INBOX);
    // Lock Events without a holder pod are about driftd's own Lease.
    let home = ObjectReference {
        api_version: Some("coordination.k8s.io/v1".into()),
        kind: Some("Lease".into()),
        namespace: Some(config.namespace.clone()),
        name: Some(election.lease_name.clone()),
        ..Default::default()
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // The leader re-applies drifting objects of `remediation = "auto"` sources.
    let remediation = match config.remediated_sources().is_empty() {
        true => None,
        false => Some(driftd_cluster::remediate::spawn(
            driftd_cluster::remediate::Remediator {
                store: Store::open_with_keys(&config.database, keys.clone())
                    .map_err(ServeError::Database)?,
                cluster: driftd_cluster::apply::Cluster::new(client.clone()),
                index: index.clone(),
                leadership: leadership.clone(),
                events: events.clone(),
                metrics: metrics.clone(),
                identity: identity.clone(),
            },
            &config,
            stop_rx.clone(),
        )),
    };
    // Closed drift episodes past the retention go, through a connection of their own.
    let retention = match config.history.retention() {
        Some(keep) => Some(crate::retention::spawn(
            Store::open_with_keys(&config.database, keys.clone()).map_err(ServeError::Database)?,
            keep,
            stop_rx.clone(),
        )),
        None => None,
    };
    let importer = driftd_cluster::cluster_log::spawn_importer(
        client.clone(),
        &config.namespace,
        import_store,
        stop_rx.clone(),
    );
    let helm = helm_store.map(|store| {
        driftd_cluster::helm_importer::spawn(client.clone(), &config.helm, store, stop_rx.clone())
    });
    let pulumi = pulumi_store
        .map(|store| driftd_cluster::pulumi::spawn(&config.pulumi, store, stop_rx.clone()));
    // One packing dictionary for the live copies the watchers pack and the engine trains,
    // unpacks and repacks.
    let packing = Packing::new();
    let engine = Engine::new(
        store,
        &config,
        index.clone(),
        packing.clone(),
        Supervisor::new(watches, sender, packing),
        Publisher::new(metrics.clone(), events, leadership.clone(), home),
        clock,
    )?
    .with_leadership(leadership.clone(), &identity);
    // The leader releases the cluster log's stale intents there, not in its database alone.
    let mut engine = match config.locks.auto_release_after {
        Some(_) => {
            let (requests, asked) = tokio::sync::mpsc::unbounded_channel();
            let (answers, answered) = tokio::sync::mpsc::unbounded_channel();
            let log =
                driftd_cluster::cluster_log::ClusterLog::new(client.clone(), &config.namespace);
            driftd_cluster::cluster_log::spawn_releaser(log, asked, answers);
            engine.with_cluster_releases(requests, answered)
        }
        None => engine,
    };
    // Audit events from the webhook and the log file, joined by the engine to changes.
    let (audit_intake, audit_log) = match config.audit.enabled() {
        true => {
            let (records, batches) = tokio::sync::mpsc::channel(AUDIT_INBOX);
            engine = engine.with_audit(batches);
            let intake = config.audit.webhook().then(|| {
                Arc::new(http::audit::AuditIntake::new(
                    &config.audit,
                    audit_token,
                    records.clone(),
                ))
            });
            let log = config.audit.log_path.clone().map(|path| {
                tracing::info!(path = %path.display(), "following the audit log");
                tokio::spawn(crate::audit_log::follow(
                    path,
                    config.audit.max_body_bytes,
                    crate::audit_log::POLL,
                    records,
                    stop_rx.clone(),
                ))
            });
            (intake, log)
        }
        false => (None, None),
    };
    let engine = if config.dry_run_sources().is_empty() {
        engine
    } else {
        let (requests, answers) = driftd_cluster::dry_run_task::spawn(
            client.clone(),
            config.dry_run.max_per_second,
            &metrics,
        );
        engine.with_dry_run(requests, answers)
    };

    let mut server_stop = stop_rx.clone();
    let connection_metrics = server::ConnectionMetrics::default();
    metrics.register(Box::new(connection_metrics.open.clone()));
    metrics.register(Box::new(connection_metrics.closed.clone()));
    let app = http::app(
        Handles {
            index,
            metrics,
            leadership: leadership.clone(),
            history: Some(history),
        },
        &config.http,
        &web,
        client.clone(),
        audit_intake,
    );
    let limits = server::Limits {
        header_read_timeout: config.http.header_read_timeout(),
        idle_timeout: config.http.idle_timeout(),
        request_timeout: config.http.request_timeout(),
        max_connections,
    };
    let server = server::serve(
        listener,
        app,
        limits,
        web.tls,
        connection_metrics,
        async move {
            let _ = server_stop.wait_for(|s| *s).await;
        },
    );
    let mut engine_stop = stop_rx;
    let (drained_tx, drained) = tokio::sync::oneshot::channel::<()>();
    let engine = async move {
        // The engine (and with it the last Event sink) is dropped when `run` returns.
        let result = on_own_thread("driftd-engine", async move {
            engine
                .run(inbox, async move {
                    let _ = engine_stop.wait_for(|s| *s).await;
                })
                .await
        })
        .await;
        if let Some(mut task) = event_task {
            if tokio::time::timeout(EVENT_DRAIN, &mut task).await.is_err() {
                tracing::warn!("queued Events not published within {EVENT_DRAIN:?}; dropped");
                task.abort();
            }
        }
        let _ = drained_tx.send(());
        result
    };
    let election = async move {
        if let Some(elector) = elector {
            elector
                .run(async move {
                    let _ = drained.await;
                })
                .await;
        }
    };
    tokio::spawn(async move {
        if !shutdown_requested {
            shutdown.await;
        }
        tracing::info!("shutting down");
        let _ = stop_tx.send(true);
    });
    // The importers of what other tools record: Helm's release Secrets, Pulumi's states.
    let tools = async move {
        if let Some(task) = helm {
            let _ = task.await;
        }
        if let Some(task) = pulumi {
            let _ = task.await;
        }
    };
    let remediation = async move {
        if let Some(task) = remediation {
            let _ = task.await;
        }
        if let Some(task) = audit_log {
            let _ = task.await;
        }
        if let Some(task) = retention {
            let _ = task.await;
        }
    };
    let (engine_result, (), (), _, (), ()) =
        tokio::join!(engine, server, election, importer, tools, remediation);
    engine_result?;
    Ok(())
}

/// Warns about database files others can read, and exports
/// `driftd_database_insecure_permissions` (1 when any is, else 0) for alerting.
fn report_insecure_database(store: &Store, metrics: &Metrics) {
    let insecure = store.insecure_files();
    if let Some(warning) = driftd_store::insecure_warning(&insecure) {
        tracing::warn!("{warning}");
    }
    let gauge = prometheus::IntGauge::new(
        "driftd_database_insecure_permissions",
        "1 when the database file (or its WAL/SHM) is accessible to group or others.",
    )
    .expect("valid metric");
    gauge.set(i64::from(!insecure.is_empty()));
    metrics.register(Box::new(gauge));
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("can install a SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// Runs `work` on its own OS thread (with a single-threaded runtime for its timers) and
/// waits for its result. The engine compares synchronously, and one call can take seconds
/// (a re-list of 100,000 objects): on a runtime worker that held up the HTTP server, the
/// watchers and the Lease renewal that shared it (`/drift` polls were reset after a 410
/// re-list at 100,000 objects). On its own thread the OS shares the cores fairly instead.
async fn on_own_thread<T, W>(name: &str, work: W) -> T
where
    T: Send + 'static,
    W: std::future::Future<Output = T> + Send + 'static,
{
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a single-threaded runtime builds");
            let _ = done.send(runtime.block_on(work));
        })
        .expect("the engine's thread starts");
    match result.await {
        Ok(value) => value,
        // The thread panicked: carry the panic on, as the task that ran it did before.
        Err(_) => panic!("the {name} thread panicked"),
    }
}
