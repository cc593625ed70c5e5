//! The connection limits against real sockets on 127.0.0.1 (the end-to-end slowloris test
//! in `tests/it/http_server.rs` runs the real daemon under a low file limit).

use super::*;
use crate::http::app::AppSettings;
use axum::routing::get;
use axum::Router;
use std::io::{Read, Write};
use std::net::SocketAddr;

fn limits(header: u64, idle: u64, max_connections: usize) -> Limits {
    Limits {
        header_read_timeout: Duration::from_millis(header),
        idle_timeout: Duration::from_millis(idle),
        request_timeout: Duration::from_secs(5),
        max_connections,
    }
}

/// A server with `/healthz` on a port of its own, running until the test ends.
async fn start(limits: Limits) -> (SocketAddr, ConnectionMetrics) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().route("/healthz", get(|| async { "ok\n" }));
    let app = App::new(
        router,
        AppSettings {
            max_in_flight_requests: 4,
            request_timeout: limits.request_timeout,
            auth: None,
            health_requires_auth: false,
            headers: vec![],
        },
    );
    let metrics = ConnectionMetrics::default();
    let serving = metrics.clone();
    tokio::spawn(serve(
        listener,
        app,
        limits,
        None,
        serving,
        std::future::pending(),
    ));
    (addr, metrics)
}

/// A blocking client socket (tests talk to the server from a blocking thread).
fn connect(addr: SocketAddr) -> std::net::TcpStream {
    let stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Whether the server closed `stream` (EOF or reset), waiting at most the read timeout.
fn closed_by_server(stream: &mut std::net::TcpStream) -> bool {
    let mut buf = [0u8; 256];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

fn healthz(addr: SocketAddr) -> String {
    let mut stream = connect(addr);
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_slow_clients_are_closed_at_the_header_timeout() {
    let (addr, metrics) = start(limits(300, 60_000, 64)).await;
    let closed = tokio::task::spawn_blocking(move || {
        let mut silent = connect(addr);
        let mut slow = connect(addr);
        slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
        let started = std::time::Instant::now();
        let closed = closed_by_server(&mut silent) && closed_by_server(&mut slow);
        (closed, started.elapsed())
    })
    .await
    .unwrap();
    assert!(closed.0, "both closed by the server");
    assert!(
        closed.1 < Duration::from_secs(3),
        "within the timeout: {:?}",
        closed.1
    );
    assert_eq!(
        metrics.closed.with_label_values(&["header_timeout"]).get(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_alive_connection_is_closed_after_the_idle_timeout() {
    let (addr, metrics) = start(limits(60_000, 300, 64)).await;
    let closed = tokio::task::spawn_blocking(move || {
        let mut stream = connect(addr);
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut buf = [0u8; 512];
        let n = stream.read(&mut buf).unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        closed_by_server(&mut stream)
    })
    .await
    .unwrap();
    assert!(closed);
    assert_eq!(metrics.closed.with_label_values(&["idle_timeout"]).get(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_new_connections_close_the_longest_idle_ones_and_probes_answer() {
    let (addr, metrics) = start(limits(60_000, 60_000, 8)).await;
    let evicted = tokio::task::spawn_blocking(move || {
        // Eight silent connections fill the cap and stay open: no timeout is near.
        let mut idle: Vec<_> = (0..8).map(|_| connect(addr)).collect();
        wait(|| metrics.open.get() == 8);
        // Each probe takes the slot of the oldest idle connection, and answers; another
        // idle connection fills the cap again.
        for _ in 0..3 {
            let answer = healthz(addr);
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            assert!(answer.ends_with("ok\n"), "{answer}");
            wait(|| metrics.open.get() == 7);
            idle.push(connect(addr));
            wait(|| metrics.open.get() == 8);
        }
        let evicted: Vec<bool> = idle.iter_mut().take(3).map(closed_by_server).collect();
        assert_eq!(metrics.closed.with_label_values(&["evicted"]).get(), 3);
        evicted
    })
    .await
    .unwrap();
    assert_eq!(evicted, [true, true, true], "the three oldest were closed");
}

fn wait(condition: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(std::time::Instant::now() < deadline, "condition not met");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_file_limit_leaves_room_for_the_rest_of_the_process() {
    assert_eq!(fd_reserve(1024), 128);
    assert_eq!(fd_reserve(65_536), 8192);
    let (connections, _) = fd_budget(8).unwrap();
    assert_eq!(connections, 8, "a small cap is kept as configured");
}
