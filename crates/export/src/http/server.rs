//! The HTTP server's connections: accepted by hand and driven by hyper-util, because
//! `axum::serve` sets no timeout and no limit (2,500 silent connections used to stay open
//! forever, and 1,100 exhausted a 1,024 file limit, so `/healthz` went unanswered and the
//! kubelet killed the pod).
//!
//! How connections stay bounded:
//! - **At most `max_connections`**, kept below the file-descriptor limit ([`fd_budget`]).
//!   At the cap, a new connection closes the connection that has been idle (no request in
//!   progress: silent, mid-TLS-handshake, sending headers, or kept alive) the longest; only
//!   when every connection has a request in progress is the new one refused. A probe's
//!   fresh connection is the newest and sends its request at once, so a flood of idle
//!   connections cannot lock it out; connections with requests in progress are bounded by
//!   the request limits instead.
//! - **Timeouts**: hyper's `header_read_timeout` (from accepting, and from each answer on a
//!   kept-alive HTTP/1.1 connection, to the end of the next request's headers); the TLS
//!   handshake within the same time; a watchdog per connection closes it after
//!   `idle_timeout` without a request in progress (HTTP/2 has no header timeout) and when
//!   an answer has not been fully sent within twice `request_timeout` (a client that never
//!   reads).
//! - Plain HTTP is HTTP/1.1 only, as in Go's server without TLS, so no bytes are read before
//!   hyper's timeout runs; over TLS, ALPN picks HTTP/2 or HTTP/1.1.

use super::app::App;
use axum::body::Body;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use prometheus::{IntCounterVec, IntGauge, Opts};
use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;

/// How long shutdown waits for answers in progress.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// After a failed `accept` (out of file descriptors, say), wait this long before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Largest request head (and read buffer) per connection.
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// HTTP/2 streams per connection.
const MAX_STREAMS: u32 = 32;

/// The connection limits of `[http]`.
#[derive(Debug, Clone)]
pub struct Limits {
    pub header_read_timeout: Duration,
    pub idle_timeout: Duration,
    pub request_timeout: Duration,
    pub max_connections: usize,
}

/// `driftd_http_connections` and `driftd_http_connections_closed_total{reason}`.
#[derive(Clone)]
pub struct ConnectionMetrics {
    pub open: IntGauge,
    pub closed: IntCounterVec,
}

impl Default for ConnectionMetrics {
    fn default() -> Self {
        ConnectionMetrics {
            open: IntGauge::new("driftd_http_connections", "Open HTTP connections.")
                .expect("valid metric"),
            closed: IntCounterVec::new(
                Opts::new(
                    "driftd_http_connections_closed_total",
                    "HTTP connections the server closed, by reason (evicted: idle at the \
                     connection cap; refused: at the cap with none idle; idle_timeout; \
                     header_timeout; tls_handshake; request_timeout: an answer not read in time).",
                ),
                &["reason"],
            )
            .expect("valid metric"),
        }
    }
}

/// File descriptors kept for the rest of the process: the database and its WAL and SHM,
/// the Kubernetes client's connections (one per watch), the listener, logs.
fn fd_reserve(limit: u64) -> u64 {
    (limit / 8).max(128)
}

/// How many connections the file-descriptor limit allows, after raising the soft limit to
/// the hard one (as Go programs do at start): `(connections, note)`, the note saying why
/// fewer than `configured` (for a warning), or an error when too few remain.
pub fn fd_budget(configured: usize) -> Result<(usize, Option<String>), String> {
    let Some(limit) = raise_fd_limit() else {
        return Ok((configured, None));
    };
    let budget = usize::try_from(limit.saturating_sub(fd_reserve(limit))).unwrap_or(usize::MAX);
    if budget < driftd_config::MIN_CONNECTIONS {
        return Err(format!(
            "the file-descriptor limit (RLIMIT_NOFILE) is {limit}: too low to serve HTTP; \
             raise it (ulimit -n) to at least {}",
            driftd_config::MIN_CONNECTIONS as u64 + fd_reserve(limit)
        ));
    }
    if configured <= budget {
        return Ok((configured, None));
    }
    Ok((
        budget,
        Some(format!(
            "http.max_connections is {configured} but the file-descriptor limit is {limit}; \
             serving at most {budget} connections ({} descriptors kept for the database and \
             the Kubernetes client)",
            fd_reserve(limit)
        )),
    ))
}

/// The soft `RLIMIT_NOFILE`, raised to the hard limit when it can be; `None` if unknown.
fn raise_fd_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
    }
    (limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur)
}

/// Serves `app` on `listener` until `shutdown` completes, then lets answers in progress
/// finish (at most [`SHUTDOWN_GRACE`]).
pub async fn serve(
    listener: TcpListener,
    app: App,
    limits: Limits,
    tls: Option<Arc<rustls::ServerConfig>>,
    metrics: ConnectionMetrics,
    shutdown: impl Future<Output = ()>,
) {
    let (stop_tx, stop) = watch::channel(false);
    let shared = Arc::new(Shared {
        app,
        h1: http1_builder(&limits),
        h2: http2_builder(),
        tls: tls.map(tokio_rustls::TlsAcceptor::from),
        registry: Registry::new(metrics.open.clone()),
        metrics,
        limits,
        epoch: Instant::now(),
    });
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(err) => {
                if !matches!(
                    err.kind(),
                    std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::ConnectionReset
                ) {
                    tracing::warn!(error = %err, "cannot accept an HTTP connection; retrying");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
                continue;
            }
        };
        if shared.registry.len() >= shared.limits.max_connections {
            if shared.registry.evict_idlest() {
                shared.closed("evicted");
            } else {
                shared.closed("refused");
                continue;
            }
        }
        let _ = stream.set_nodelay(true);
        let (id, activity) = shared.registry.insert(shared.now());
        let shared = shared.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            shared.connection(stream, &activity, stop).await;
            shared.registry.remove(id);
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let registry = &shared.registry;
    if tokio::time::timeout(SHUTDOWN_GRACE, registry.wait_empty())
        .await
        .is_err()
    {
        tracing::warn!(
            open = registry.len(),
            "HTTP connections still busy after {SHUTDOWN_GRACE:?}; closing them"
        );
    }
}

fn http1_builder(limits: &Limits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(true)
        .max_buf_size(MAX_HEADER_BYTES);
    builder
}

fn http2_builder() -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new()).http2_only();
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS)
        .max_header_list_size(MAX_HEADER_BYTES as u32);
    builder
}

/// What every connection task shares.
struct Shared {
    app: App,
    h1: auto::Builder<TokioExecutor>,
    h2: auto::Builder<TokioExecutor>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    registry: Registry,
    metrics: ConnectionMetrics,
    limits: Limits,
    epoch: Instant,
}

impl Shared {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn at(&self, millis: u64) -> Instant {
        self.epoch + Duration::from_millis(millis)
    }

    fn closed(&self, reason: &str) {
        self.metrics.closed.with_label_values(&[reason]).inc();
    }

    /// Shakes hands (TLS) within the header timeout, then serves the connection.
    async fn connection(
        &self,
        stream: TcpStream,
        activity: &Arc<Activity>,
        stop: watch::Receiver<bool>,
    ) {
        let Some(acceptor) = &self.tls else {
            return self
                .drive(TokioIo::new(stream), false, false, activity, stop)
                .await;
        };
        let handshake =
            tokio::time::timeout(self.limits.header_read_timeout, acceptor.accept(stream));
        let stream = tokio::select! {
            result = handshake => match result {
                Ok(Ok(stream)) => stream,
                Ok(Err(err)) => {
                    tracing::debug!(error = %err, "TLS handshake failed");
                    return self.closed("tls_handshake");
                }
                Err(_) => return self.closed("tls_handshake"),
            },
            () = activity.close.notified() => return,
        };
        let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
        // The web config's verifier checked any certificate presented against its client
        // CA (policies that take unverified certificates are refused at start).
        let cert = stream
            .get_ref()
            .1
            .peer_certificates()
            .is_some_and(|c| !c.is_empty());
        self.drive(TokioIo::new(stream), h2, cert, activity, stop)
            .await
    }

    /// Serves HTTP on `io` until the client leaves, a limit closes it, or shutdown.
    async fn drive<I>(
        &self,
        io: I,
        h2: bool,
        cert: bool,
        activity: &Arc<Activity>,
        mut stop: watch::Receiver<bool>,
    ) where
        I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let app = self.app.clone();
        let epoch = self.epoch;
        let tracker = activity.clone();
        let service = hyper::service::service_fn(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                if cert {
                    request
                        .extensions_mut()
                        .insert(super::audit::VerifiedClientCert);
                }
                let app = app.clone();
                let guard = tracker.begin(epoch.elapsed().as_millis() as u64, epoch);
                async move {
                    let response = app.handle(request.map(Body::new)).await;
                    // In progress until the answer's last byte is written (or the client left).
                    Ok::<_, Infallible>(response.map(|body| {
                        Body::new(body.map_frame(move |frame| {
                            let _in_progress = &guard;
                            frame
                        }))
                    }))
                }
            },
        );
        let builder = if h2 { &self.h2 } else { &self.h1 };
        let connection = builder.serve_connection(io, service);
        tokio::pin!(connection);
        let mut draining = false;
        loop {
            let check = self.at(activity.deadline(&self.limits));
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(err) = result {
                        if err.downcast_ref::<hyper::Error>().is_some_and(hyper::Error::is_timeout) {
                            self.closed("header_timeout");
                        } else {
                            tracing::debug!(error = %err, "HTTP connection ended with an error");
                        }
                    }
                    return;
                }
                () = activity.close.notified() => return,
                () = tokio::time::sleep_until(check) => {
                    if let Some(reason) = activity.expired(self.now(), &self.limits) {
                        return self.closed(reason);
                    }
                }
                _ = stop.wait_for(|stopping| *stopping), if !draining => {
                    connection.as_mut().graceful_shutdown();
                    draining = true;
                }
            }
        }
    }
}

/// What a connection is doing, for the watchdog and eviction. Times are milliseconds since
/// the server started.
struct Activity {
    /// When the last request started or finished (or the connection was accepted).
    last: AtomicU64,
    /// Start times of the requests in progress, by sequence number.
    requests: Mutex<BTreeMap<u64, u64>>,
    sequence: AtomicU64,
    /// Told to close (evicted).
    close: Notify,
}

impl Activity {
    fn new(now: u64) -> Activity {
        Activity {
            last: AtomicU64::new(now),
            requests: Mutex::new(BTreeMap::new()),
            sequence: AtomicU64::new(0),
            close: Notify::new(),
        }
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, u64>> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request started; it is in progress until the guard drops.
    fn begin(self: &Arc<Self>, now: u64, epoch: Instant) -> InProgress {
        let id = self.sequence.fetch_add(1, Ordering::Relaxed);
        self.requests().insert(id, now);
        self.last.store(now, Ordering::Relaxed);
        InProgress {
            activity: self.clone(),
            id,
            epoch,
        }
    }

    /// Idle since, or `None` while a request is in progress.
    fn idle_since(&self) -> Option<u64> {
        self.requests()
            .is_empty()
            .then(|| self.last.load(Ordering::Relaxed))
    }

    /// When the watchdog must look again.
    fn deadline(&self, limits: &Limits) -> u64 {
        let oldest = self.requests().values().next().copied();
        match oldest {
            Some(started) => started + 2 * limits.request_timeout.as_millis() as u64,
            None => self.last.load(Ordering::Relaxed) + limits.idle_timeout.as_millis() as u64,
        }
    }

    /// Why the connection must close at `now`, if it must.
    fn expired(&self, now: u64, limits: &Limits) -> Option<&'static str> {
        let oldest = self.requests().values().next().copied();
        match oldest {
            Some(started) if now >= started + 2 * limits.request_timeout.as_millis() as u64 => {
                Some("request_timeout")
            }
            Some(_) => None,
            None if now
                >= self.last.load(Ordering::Relaxed) + limits.idle_timeout.as_millis() as u64 =>
            {
                Some("idle_timeout")
            }
            None => None,
        }
    }
}

/// A request in progress.
struct InProgress {
    activity: Arc<Activity>,
    id: u64,
    epoch: Instant,
}

impl Drop for InProgress {
    fn drop(&mut self) {
        self.activity.requests().remove(&self.id);
        self.activity
            .last
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
}

/// The open connections.
struct Registry {
    connections: Mutex<HashMap<u64, Arc<Activity>>>,
    next: AtomicU64,
    empty: Notify,
    gauge: IntGauge,
}

impl Registry {
    fn new(gauge: IntGauge) -> Registry {
        Registry {
            connections: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            empty: Notify::new(),
            gauge,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Activity>>> {
        self.connections.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn len(&self) -> usize {
        self.lock().len()
    }

    fn insert(&self, now: u64) -> (u64, Arc<Activity>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::new(now));
        let mut connections = self.lock();
        connections.insert(id, activity.clone());
        self.gauge.set(connections.len() as i64);
        (id, activity)
    }

    fn remove(&self, id: u64) {
        let mut connections = self.lock();
        connections.remove(&id);
        self.gauge.set(connections.len() as i64);
        if connections.is_empty() {
            self.empty.notify_waiters();
        }
    }

    /// Tells the connection idle the longest to close, and forgets it at once so its slot
    /// is free; `false` if every connection has a request in progress.
    fn evict_idlest(&self) -> bool {
        let mut connections = self.lock();
        let idlest = connections
            .iter()
            .filter_map(|(id, activity)| activity.idle_since().map(|since| (since, *id)))
            .min();
        let Some((_, id)) = idlest else {
            return false;
        };
        if let Some(activity) = connections.remove(&id) {
            activity.close.notify_one();
        }
        self.gauge.set(connections.len() as i64);
        true
    }

    async fn wait_empty(&self) {
        loop {
            let notified = self.empty.notified();
            if self.len() == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests;
