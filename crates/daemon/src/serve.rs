//! `driftd serve` wiring, in the manner of kube-rs's controller-rs `main`: open the store,
//! start the Event publisher, the drift engine and the HTTP server, and stop them together.

use crate::config::Config;
use crate::drift::{Engine, EngineHandles, SharedIndex};
use crate::export::{events, http, metrics::Metrics};
use anyhow::Context;
use driftd_store::Store;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

/// Runs the daemon until `shutdown` completes. `on_listening` is told the bound address
/// (useful with port 0).
pub async fn run(
    config: Config,
    client: kube::Client,
    shutdown: impl Future<Output = ()> + Send + 'static,
    on_listening: impl FnOnce(SocketAddr),
) -> anyhow::Result<()> {
    let store = Store::open(&config.database)
        .with_context(|| format!("opening database {}", config.database.display()))?;
    let metrics = Arc::new(Metrics::new(config.metrics.max_object_series));
    let handles = EngineHandles {
        index: SharedIndex::default(),
        metrics: metrics.clone(),
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {} (key `listen`)", config.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "HTTP server listening: /drift /metrics /healthz /readyz");
    on_listening(addr);

    let events = config.events.enabled.then(|| {
        events::spawn(
            client.clone(),
            &config.events.reporting_controller,
            metrics.clone(),
        )
    });
    let engine = Engine::new(store, client, &config, handles.clone(), events)?;

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut server_stop = stop_rx.clone();
    let server = axum::serve(listener, http::router(handles)).with_graceful_shutdown(async move {
        let _ = server_stop.wait_for(|s| *s).await;
    });
    let mut engine_stop = stop_rx;
    let engine = engine.run(async move {
        let _ = engine_stop.wait_for(|s| *s).await;
    });
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down");
        let _ = stop_tx.send(true);
    });
    let (engine_result, server_result) = tokio::join!(engine, server);
    engine_result.context("drift engine")?;
    server_result.context("HTTP server")?;
    Ok(())
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
