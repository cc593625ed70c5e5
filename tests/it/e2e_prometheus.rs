//! A real Prometheus scrapes a real driftd and sees the drift series; promtool lints the
//! exposition.

use crate::scaffold::*;
use std::process::Command;
use std::time::Duration;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn prometheus_scrapes_drift_series() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let db = dir.path().join("driftd.db");
    commit(&db, "shop", &examples());
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    let daemon = Daemon::start(&write_config(dir.path(), ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    wait_for("drift", Duration::from_secs(20), || {
        find(&daemon.drift(""), "Deployment", "web").map(|_| ())
    });

    // promtool lints the exposition format and metric naming.
    let (_, metrics) = daemon.get("/metrics");
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool is installed (Debian package prometheus; .ci/run installs it)");
    use std::io::Write;
    lint.stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let lint = lint.wait_with_output().unwrap();
    assert!(
        lint.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );

    // A real Prometheus server scrapes it.
    let target = daemon.url.trim_start_matches("http://").to_string();
    let port = free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: driftd\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let mut cmd = Command::new("prometheus");
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"));
    let _prometheus = Proc::spawn("prometheus", cmd);
    let query = format!(
        "http://127.0.0.1:{port}/api/v1/query?query=driftd_object_drift%7Bkind%3D%22Deployment%22%2Cname%3D%22web%22%7D"
    );
    let result = wait_for(
        "Prometheus to have scraped the drift series",
        Duration::from_secs(60),
        || {
            let (status, body) = http_get(&query);
            if status != 200 {
                return None;
            }
            let v: serde_json::Value = serde_json::from_str(&body).ok()?;
            let r = v["data"]["result"].as_array()?.first()?.clone();
            Some(r)
        },
    );
    assert_eq!(result["metric"]["class"], "modified");
    assert_eq!(result["metric"]["namespace"], "shop");
    assert_eq!(result["value"][1], "1");
}
