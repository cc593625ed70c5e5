//! The HTTP server as hostile and busy clients meet it: thousands of idle and half-sent
//! connections under a 1,024 file limit, many concurrent readers while watch events flow,
//! TLS and basic authentication from an exporter-toolkit web config file (scraped by a real
//! Prometheus configured as for any exporter), and a database that refuses writes, said in
//! `/readyz` and `driftd_store_errors_total`.

use crate::scaffold::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The file-descriptor limit the slowloris test gives the daemon (a common default).
const DAEMON_FD_LIMIT: u64 = 1024;

/// Idle connections the slowloris test opens: more than twice the daemon's file limit.
const IDLE_CONNECTIONS: usize = 2500;

/// A simulator with the example app committed (source `shop`) and applied.
fn app_world(dir: &Path) -> Sim {
    let sim = Sim::start(dir);
    commit(&dir.join("driftd.db"), "shop", &examples());
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    sim
}

/// Raises this process's soft file limit to its hard one (the test holds thousands of
/// sockets); returns the limit.
fn raise_own_fd_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
    }
    limit.rlim_cur
}

/// One raw HTTP/1.1 GET on a fresh connection: (status line, time taken).
fn raw_get(addr: &str, path: &str) -> (String, Duration) {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: driftd\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.lines().next().unwrap_or("").to_string();
    (status, started.elapsed())
}

/// Whether the server closed `stream` (end of file or reset) within the read timeout.
fn closed_by_server(stream: &mut TcpStream) -> bool {
    let mut buf = [0u8; 512];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

/// Today's bug, as the issue found it: 1,100 idle connections exhausted a 1,024 file limit
/// and `/healthz` answered nothing. Now the daemon keeps its connections under the limit,
/// a new connection closes the longest-idle one, and silent or half-sent requests are closed
/// at the header timeout.
#[test]
fn thousands_of_idle_connections_are_closed_and_healthz_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    let sim = app_world(dir.path());
    // More connections than the file limit allows: the daemon lowers the cap itself. The
    // timeouts are the defaults (10 s to send the headers).
    let config = write_config(dir.path(), "[http]\nmax_connections = 4096\n");
    let mut cmd = Daemon::command(&config, &sim.kubeconfig);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: DAEMON_FD_LIMIT,
                rlim_max: DAEMON_FD_LIMIT,
            };
            match libc::setrlimit(libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let daemon = Daemon::spawn(cmd);
    daemon.wait_ready();
    assert!(
        daemon
            .proc
            .stderr()
            .contains("the file-descriptor limit is 1024; serving at most 896 connections"),
        "the lowered cap is said at start"
    );
    assert!(raise_own_fd_limit() > IDLE_CONNECTIONS as u64 + 100);
    let addr = daemon.url.trim_start_matches("http://").to_string();

    // Half connect and say nothing, half send part of a request and stop (slowloris).
    let opening = Instant::now();
    let mut idle: Vec<TcpStream> = (0..IDLE_CONNECTIONS)
        .map(|i| {
            let mut stream = TcpStream::connect(&addr).unwrap();
            if i % 2 == 1 {
                stream
                    .write_all(b"GET /drift HTTP/1.1\r\nHost: driftd\r\nX-Slow: ")
                    .unwrap();
            }
            stream
        })
        .collect();
    let opened_in = opening.elapsed();

    // While the client side holds them all, probes and /drift answer.
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let (status, took) = raw_get(&addr, "/healthz");
        assert_eq!(status, "HTTP/1.1 200 OK", "/healthz under the flood");
        slowest = slowest.max(took);
    }
    let (status, _) = raw_get(&addr, "/drift");
    assert_eq!(status, "HTTP/1.1 200 OK", "/drift under the flood");
    println!(
        "slowloris: {IDLE_CONNECTIONS} idle connections opened in {opened_in:?}; \
         20 /healthz probes, slowest {slowest:?}"
    );

    // Every idle connection is closed by the server: evicted at the cap, or at the header
    // timeout.
    let closing = Instant::now();
    for stream in &mut idle {
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .unwrap();
    }
    let still_open = idle
        .iter_mut()
        .map(closed_by_server)
        .filter(|closed| !closed)
        .count();
    assert_eq!(still_open, 0, "connections the server left open");
    println!(
        "slowloris: all closed by the server {:?} after the probes",
        closing.elapsed()
    );
    let evicted = daemon
        .sample("driftd_http_connections_closed_total{reason=\"evicted\"}")
        .unwrap_or(0.0);
    let timed_out = daemon
        .sample("driftd_http_connections_closed_total{reason=\"header_timeout\"}")
        .unwrap_or(0.0);
    println!("slowloris: {evicted} evicted at the cap, {timed_out} closed at the header timeout");
    assert!(
        evicted > 0.0,
        "the cap of 896 was reached and the idlest closed"
    );
    assert!(timed_out > 0.0, "closed at the header timeout");
    assert!(evicted + timed_out >= IDLE_CONNECTIONS as f64);
    wait_for(
        "connections back to the probe's own",
        Duration::from_secs(10),
        || (daemon.sample("driftd_http_connections")? <= 1.0).then_some(()),
    );
    assert_eq!(daemon.get("/healthz"), (200, "ok\n".to_string()));
}

/// Latency percentile `p` (0-100) of sorted `samples`.
fn percentile(samples: &[Duration], p: usize) -> Duration {
    samples[(samples.len() * p / 100).min(samples.len() - 1)]
}

/// Many concurrent readers of `/drift` and `/metrics` for a few seconds while the
/// simulator sends watch events: no errors, and the latency is printed.
#[test]
fn concurrent_clients_while_watch_events_flow_get_no_errors() {
    const CLIENTS: usize = 32;
    const LOAD: Duration = Duration::from_secs(4);
    let dir = tempfile::tempdir().unwrap();
    let (sim, daemon) = serve_examples(dir.path(), "");
    let configmap = format!("{}/api/v1/namespaces/shop/configmaps/web-config", sim.url);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (latencies, errors, edits) = rt.block_on(async {
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + LOAD;
        let editor = tokio::spawn({
            let client = client.clone();
            async move {
                let mut edits = 0u64;
                while tokio::time::Instant::now() < deadline {
                    let patch = serde_json::json!({"data": {"LOG_LEVEL": format!("load-{edits}")}});
                    let response = client
                        .patch(&configmap)
                        .header("content-type", "application/merge-patch+json")
                        .body(patch.to_string())
                        .send()
                        .await
                        .unwrap();
                    assert!(response.status().is_success(), "{}", response.status());
                    edits += 1;
                }
                edits
            }
        });
        let readers: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let client = client.clone();
                let url = daemon.url.clone();
                tokio::spawn(async move {
                    let paths = ["/drift", "/metrics", "/drift?class=in_sync", "/healthz"];
                    let mut latencies = Vec::new();
                    let mut errors = Vec::new();
                    let mut n = i;
                    while tokio::time::Instant::now() < deadline {
                        let path = paths[n % paths.len()];
                        n += 1;
                        let started = Instant::now();
                        match client.get(format!("{url}{path}")).send().await {
                            Ok(r) if r.status() == 200 => match r.bytes().await {
                                Ok(_) => latencies.push(started.elapsed()),
                                Err(e) => errors.push(format!("{path}: body: {e}")),
                            },
                            Ok(r) => errors.push(format!("{path}: {}", r.status())),
                            Err(e) => errors.push(format!("{path}: {e}")),
                        }
                    }
                    (latencies, errors)
                })
            })
            .collect();
        let mut latencies = Vec::new();
        let mut errors = Vec::new();
        for reader in readers {
            let (l, e) = reader.await.unwrap();
            latencies.extend(l);
            errors.extend(e);
        }
        (latencies, errors, editor.await.unwrap())
    });
    assert!(
        errors.is_empty(),
        "{} errors: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    let mut latencies = latencies;
    latencies.sort();
    println!(
        "load: {} requests from {CLIENTS} clients in {LOAD:?} while {edits} watch edits flowed: \
         p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        percentile(&latencies, 50),
        percentile(&latencies, 99),
        latencies.last().unwrap()
    );
    assert!(latencies.len() > CLIENTS, "every client was answered");
    assert!(edits > 0);
    // The events were taken in: the last edit is what /drift reports.
    let last = format!("load-{}", edits - 1);
    wait_for("the last edit in /drift", Duration::from_secs(20), || {
        let drift = daemon.drift("");
        let cm = find(&drift, "ConfigMap", "web-config")?;
        cm.to_string()
            .contains(&format!("\"{last}\""))
            .then_some(())
    });
}

/// Writes a new self-signed certificate for 127.0.0.1 (key first, as a renewal would) to
/// `server.crt` and `server.key`; returns the certificate.
fn new_certificate(dir: &Path) -> Vec<u8> {
    let cert =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    std::fs::write(dir.join("server.key"), cert.signing_key.serialize_pem()).unwrap();
    std::fs::write(dir.join("server.crt"), cert.cert.pem()).unwrap();
    cert.cert.pem().into_bytes()
}

/// An HTTPS client trusting only `ca`.
fn client_trusting(ca: &[u8]) -> reqwest::Client {
    reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(ca).unwrap())
        .build()
        .unwrap()
}

/// A web config with a new certificate and one bcrypt user.
fn web_config(dir: &Path, password: &str) -> PathBuf {
    new_certificate(dir);
    let hash = bcrypt::hash(password, 4).unwrap();
    let path = dir.join("web-config.yml");
    std::fs::write(
        &path,
        format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n\
             basic_auth_users:\n  prometheus: {hash}\n\
             http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n"
        ),
    )
    .unwrap();
    path
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `--web.config.file` in exporter-toolkit's format: HTTPS only, basic auth on everything
/// but the probes, 400 naming the valid classes; and a real Prometheus scrapes it with the
/// `scheme`/`tls_config`/`basic_auth` it uses for any exporter.
#[test]
fn web_config_file_serves_tls_and_basic_auth_that_prometheus_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let sim = app_world(dir.path());
    let web = web_config(dir.path(), "s3cret");
    let mut cmd = Daemon::command(&write_config(dir.path(), ""), &sim.kubeconfig);
    cmd.arg("--web.config.file").arg(&web);
    let daemon = Daemon::spawn(cmd);
    assert!(
        daemon.url.starts_with("https://127.0.0.1:"),
        "{}",
        daemon.url
    );
    let plain = daemon.url.replacen("https://", "http://", 1);
    assert_ne!(
        http_get(&format!("{plain}/healthz")).0,
        200,
        "no plain HTTP"
    );

    let ca = std::fs::read(dir.path().join("server.crt")).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = client_trusting(&ca);
    let get = |path: &str, auth: Option<&str>| {
        rt.block_on(async {
            let mut request = client.get(format!("{}{path}", daemon.url));
            if let Some(password) = auth {
                request = request.basic_auth("prometheus", Some(password));
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let headers = response.headers().clone();
            (status, headers, response.text().await.unwrap())
        })
    };
    wait_for(
        "/readyz 200 without credentials",
        Duration::from_secs(30),
        || (get("/readyz", None).0 == 200).then_some(()),
    );
    let (status, headers, _) = get("/healthz", None);
    assert_eq!(status, 200);
    assert_eq!(headers["x-content-type-options"], "nosniff");
    for auth in [None, Some("wrong"), Some("s3cret ")] {
        let (status, headers, body) = get("/drift", auth);
        assert_eq!((status, body.as_str()), (401, "Unauthorized\n"), "{auth:?}");
        assert_eq!(headers["www-authenticate"], "Basic");
        assert_eq!(get("/metrics", auth).0, 401);
    }
    let (status, _, body) = get("/drift?class=in_sync", Some("s3cret"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"web-config\""), "{body}");
    let (status, _, body) = get("/drift?class=drifting", Some("s3cret"));
    assert_eq!(status, 400);
    assert_eq!(
        body,
        "unknown class `drifting`; valid classes: in_sync, modified, missing, uncommitted, \
         stale_config, unmanaged, rejected\n"
    );
    let (status, _, body) = get("/drift?namespce=shop", Some("s3cret"));
    assert_eq!(status, 400);
    assert!(
        body.contains("valid filters: source, namespace, kind, class"),
        "{body}"
    );

    // Prometheus, configured as for node_exporter behind the same web config.
    let port = free_port();
    let target = daemon.url.trim_start_matches("https://");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: driftd\n    \
             scheme: https\n    tls_config:\n      ca_file: {ca}\n    basic_auth:\n      \
             username: prometheus\n      password: s3cret\n    static_configs:\n      \
             - targets: ['{target}']\n",
            ca = dir.path().join("server.crt").display()
        ),
    )
    .unwrap();
    let mut prometheus = Command::new("prometheus");
    prometheus
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"));
    let _prometheus = Proc::spawn("prometheus", prometheus);
    let api = format!("http://127.0.0.1:{port}/api/v1/query");
    wait_for(
        "Prometheus scraped driftd over TLS with basic auth",
        Duration::from_secs(60),
        || {
            let url = reqwest::Url::parse_with_params(
                &api,
                [(
                    "query",
                    "up{job=\"driftd\"} * on() group_left driftd_build_info",
                )],
            )
            .unwrap();
            let (_, body) = http_get(url.as_str());
            let body: serde_json::Value = serde_json::from_str(&body).ok()?;
            (body["data"]["result"][0]["value"][1] == "1").then_some(())
        },
    );

    // A renewed certificate (cert-manager rewrites the mounted files) is served without a
    // restart.
    let renewed = client_trusting(&new_certificate(dir.path()));
    let healthz = format!("{}/healthz", daemon.url);
    wait_for(
        "the renewed certificate served",
        Duration::from_secs(10),
        || {
            let response = rt.block_on(renewed.get(&healthz).send()).ok()?;
            (response.status() == 200).then_some(())
        },
    );
    assert!(
        rt.block_on(client_trusting(&ca).get(&healthz).send())
            .is_err(),
        "a new connection no longer gets the old certificate"
    );
}

/// Removes the immutable flag when the test ends, so the temporary folder can go.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Immutable {
        let status = Command::new("chattr").arg("+i").arg(path).status().unwrap();
        assert!(status.success(), "chattr +i (the tests run as root)");
        Immutable(path.to_path_buf())
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// A database the daemon can read but not write (the file made immutable, as a read-only
/// mount does): drift is still detected and served, but every failed episode write is
/// counted in `driftd_store_errors_total` and said in `/readyz`'s body.
#[test]
fn a_read_only_database_is_counted_and_said_in_readyz() {
    let dir = tempfile::tempdir().unwrap();
    let sim = app_world(dir.path());
    let _read_only = Immutable::set(&dir.path().join("driftd.db"));
    // Off: stale_config's content records would be failed writes from the start; this
    // test counts the episode writes of one change.
    let config = write_config(dir.path(), "[stale_config]\nenabled = false\n");
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    assert_eq!(daemon.sample("driftd_store_errors_total"), Some(0.0));
    assert_eq!(daemon.get("/readyz"), (200, "ready\n".to_string()));

    sim.merge_patch(
        "shop",
        &["configmap", "web-config"],
        &serde_json::json!({"data": {"LOG_LEVEL": "debug"}}),
    );
    wait_for("web-config modified", Duration::from_secs(20), || {
        let drift = daemon.drift("");
        (find(&drift, "ConfigMap", "web-config")?["class"] == "modified").then_some(())
    });
    wait_for("the failed write counted", Duration::from_secs(20), || {
        (daemon.sample("driftd_store_errors_total")? >= 1.0).then_some(())
    });
    let (status, body) = daemon.get("/readyz");
    assert_eq!(
        status, 200,
        "still ready: /drift and /metrics answer from memory"
    );
    assert!(body.starts_with("ready; but "), "{body}");
    assert!(
        body.contains(" failed since start (driftd_store_errors_total); the last "),
        "{body}"
    );
    assert!(body.contains("cannot record drift episode: "), "{body}");
    assert_eq!(body.lines().count(), 1, "{body}");
}
