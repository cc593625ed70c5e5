//! A real Prometheus scrapes a real driftd and sees the drift series; promtool lints the
//! exposition; every query of the Grafana dashboard and every alert rule evaluates in
//! Prometheus, and the drift alert goes pending, then firing.

use crate::dashboards::{
    alert_rules, dashboard, dashboard_queries, drifting_world, expand_grafana_variables, repo_file,
};
use crate::scaffold::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A real Prometheus scraping one driftd every second as job "driftd" (the job convention of
/// the rules), evaluating `rules` every second when given.
pub(crate) struct Prometheus {
    url: String,
    _proc: Proc,
}

impl Prometheus {
    pub(crate) fn start(dir: &Path, daemon: &Daemon, rules: Option<&Path>) -> Prometheus {
        let target = daemon.url.trim_start_matches("http://");
        let port = free_port();
        let config = dir.join("prometheus.yml");
        let rule_files = rules
            .map(|r| format!("rule_files:\n  - '{}'\n", r.display()))
            .unwrap_or_default();
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n{rule_files}\
                 scrape_configs:\n  - job_name: driftd\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let mut cmd = Command::new("prometheus");
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"));
        let proc = Proc::spawn("prometheus", cmd);
        let url = format!("http://127.0.0.1:{port}");
        wait_for("Prometheus ready", Duration::from_secs(60), || {
            (http_get(&format!("{url}/-/ready")).0 == 200).then_some(())
        });
        Prometheus { url, _proc: proc }
    }

    /// GET an API path with query parameters: the parsed body, whatever the status.
    fn api(&self, path: &str, params: &[(&str, String)]) -> Value {
        let url = reqwest::Url::parse_with_params(&format!("{}{path}", self.url), params).unwrap();
        let (status, body) = http_get(url.as_str());
        serde_json::from_str(&body).unwrap_or_else(|_| panic!("{url}: {status} {body}"))
    }

    /// Evaluates `expr` as Grafana would for an instant or a range panel; Err with
    /// Prometheus's error, else the result list.
    pub(crate) fn evaluate(&self, expr: &str, instant: bool) -> Result<Vec<Value>, String> {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let body = if instant {
            self.api("/api/v1/query", &[("query", expr.to_string())])
        } else {
            self.api(
                "/api/v1/query_range",
                &[
                    ("query", expr.to_string()),
                    ("start", format!("{:.3}", now - 120.0)),
                    ("end", format!("{now:.3}")),
                    ("step", "5".into()),
                ],
            )
        };
        if body["status"] != "success" {
            return Err(format!("{}: {}", body["errorType"], body["error"]));
        }
        Ok(body["data"]["result"].as_array().unwrap().clone())
    }

    /// The state ("pending", "firing") of the active alert `name` with `source`, if any.
    fn alert(&self, name: &str, source: &str) -> Option<Value> {
        let body = self.api("/api/v1/alerts", &[]);
        body["data"]["alerts"]
            .as_array()?
            .iter()
            .find(|a| a["labels"]["alertname"] == name && a["labels"]["source"] == source)
            .cloned()
    }
}

/// Panels that must show data while an object drifts.
const CORE_PANELS: [&str; 5] = [
    "Drifting objects",
    "Oldest drift",
    "Oldest open drift by source",
    "Drifting objects by source and class",
    "Drifting now",
];

/// Panels for features still to come: they must show a value (0), not "no data".
const ZERO_UNTIL_FEATURES_LAND: [&str; 2] = ["Uncommitted applies", "Stale locks"];

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
    promtool_check_metrics(&metrics);

    // A real Prometheus server scrapes it.
    let prometheus = Prometheus::start(dir.path(), &daemon, None);
    let query = format!(
        "{}/api/v1/query?query=driftd_object_drift%7Bkind%3D%22Deployment%22%2Cname%3D%22web%22%7D",
        prometheus.url
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

#[test]
fn dashboard_and_rule_queries_evaluate_and_the_drift_alert_fires() {
    let world = drifting_world();
    // A test copy of the rules in which DriftdDriftPresent waits 10 s instead of 15 m.
    let rules = std::fs::read_to_string(repo_file("dashboards/alerts.yaml")).unwrap();
    let at = rules.find("- alert: DriftdDriftPresent").unwrap();
    let for_at = at
        + rules[at..]
            .find("for: 15m")
            .expect("DriftdDriftPresent has for: 15m");
    let copy = format!(
        "{}for: 10s{}",
        &rules[..for_at],
        &rules[for_at + "for: 15m".len()..]
    );
    let rules_path = world.dir.path().join("alerts.yaml");
    std::fs::write(&rules_path, copy).unwrap();
    let prometheus = Prometheus::start(world.dir.path(), &world.daemon, Some(&rules_path));

    // The drift alert of source shop goes pending, then fires, with its annotations rendered.
    let pending = wait_for(
        "DriftdDriftPresent{source=shop} pending",
        Duration::from_secs(60),
        || {
            prometheus
                .alert("DriftdDriftPresent", "shop")
                .filter(|a| a["state"] == "pending")
        },
    );
    assert_eq!(pending["labels"]["severity"], "warning", "{pending:#}");
    let firing = wait_for(
        "DriftdDriftPresent{source=shop} firing",
        Duration::from_secs(60),
        || {
            prometheus
                .alert("DriftdDriftPresent", "shop")
                .filter(|a| a["state"] == "firing")
        },
    );
    let description = firing["annotations"]["description"].as_str().unwrap();
    assert!(
        description.starts_with("1 desired objects of source shop")
            && description.contains("`driftd drift --source shop`"),
        "{firing:#}"
    );
    assert!(firing["annotations"]["runbook_url"]
        .as_str()
        .unwrap()
        .ends_with("docs/runbooks.md#driftddriftpresent"));

    // Every query of the dashboard evaluates; the core panels show the drifting Deployment.
    let mut errors = Vec::new();
    for q in dashboard_queries(&dashboard()) {
        let expr = expand_grafana_variables(&q.expr);
        match prometheus.evaluate(&expr, q.instant) {
            Err(e) => errors.push(format!("{} {}: {expr}: {e}", q.panel, q.ref_id)),
            Ok(result) if result.is_empty() && CORE_PANELS.contains(&q.panel.as_str()) => errors
                .push(format!(
                    "core panel {} {} shows no data: {expr}",
                    q.panel, q.ref_id
                )),
            Ok(result) if ZERO_UNTIL_FEATURES_LAND.contains(&q.panel.as_str()) => {
                if result.len() != 1 {
                    errors.push(format!("{} shows {result:?}, not one value", q.panel));
                }
            }
            // The drifting world's two web pods read web-config, which gained a key.
            Ok(result) if q.panel == "Stale-config pods by workload" => {
                let row = result
                    .iter()
                    .find(|r| r["metric"]["workload"] == "web")
                    .unwrap_or_else(|| panic!("no row for web: {result:#?}"));
                assert_eq!(row["metric"]["config"], "ConfigMap/web-config", "{row:#}");
                assert_eq!(row["metric"]["namespace"], "shop", "{row:#}");
                assert_eq!(row["value"][1], "2", "{row:#}");
            }
            Ok(result) if q.panel == "Stale-config pods" => {
                assert_eq!(result.len(), 1, "{result:#?}");
                assert_eq!(result[0]["value"][1], "2", "{result:#?}");
            }
            Ok(result) if q.panel == "Drifting now" => {
                let row = result
                    .iter()
                    .find(|r| r["metric"]["name"] == "web")
                    .unwrap_or_else(|| panic!("no row for web: {result:#?}"));
                assert_eq!(row["metric"]["kind"], "Deployment", "{row:#}");
                assert_eq!(row["metric"]["namespace"], "shop", "{row:#}");
                assert_eq!(row["metric"]["class"], "modified", "{row:#}");
                let value: f64 = row["value"][1].as_str().unwrap().parse().unwrap();
                match q.ref_id.as_str() {
                    // Drifting for: seconds, since a moment ago.
                    "A" => assert!((0.0..600.0).contains(&value), "{row:#}"),
                    // Drifting since: a Unix time in milliseconds, for Grafana's date unit.
                    _ => assert!(value > 1.7e12, "{row:#}"),
                }
            }
            Ok(_) => {}
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));

    // Every rule evaluates: Prometheus reports each healthy after evaluating it, and each
    // expression as written in alerts.yaml runs as a query.
    let expected = alert_rules();
    let rules = wait_for("every rule evaluated", Duration::from_secs(30), || {
        let body = prometheus.api("/api/v1/rules", &[]);
        let rules: Vec<Value> = body["data"]["groups"]
            .as_array()?
            .iter()
            .flat_map(|g| g["rules"].as_array().unwrap().clone())
            .collect();
        (rules.len() == expected.len() && rules.iter().all(|r| r["health"] != "unknown"))
            .then_some(rules)
    });
    for rule in &rules {
        assert_eq!(rule["health"], "ok", "{rule:#}");
    }
    for (alert, rule) in &expected {
        let expr = rule["expr"].as_str().unwrap();
        if let Err(e) = prometheus.evaluate(expr, true) {
            panic!("{alert}: {expr}: {e}");
        }
    }
    // The scrape job follows the rules' convention: driftd is not "down".
    let body = prometheus.api("/api/v1/alerts", &[]);
    let down = body["data"]["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["labels"]["alertname"] == "DriftdDown" && a["state"] == "firing");
    assert!(down.is_none(), "{down:#?}");
}
