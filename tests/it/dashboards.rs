//! The Grafana dashboard and the alert rules (`dashboards/`) against what driftd exports and
//! what `deploy/` ships: every metric name they use is exported by a running driftd (a renamed
//! metric fails here, not in somebody's Grafana), the PrometheusRule in `deploy/` carries
//! exactly the rule file's groups, promtool accepts the rules and unit-tests every alert, and
//! every alert has its runbook. `e2e_prometheus` evaluates the same queries in a real
//! Prometheus; the helpers that read the dashboard and the rules live here.

use crate::scaffold::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Metric names the project has fixed for later issues (the metric contract; docs/metrics.md's
/// "Metrics" table lists what is exported today) that the dashboard or the rules already use. Remove a name when driftd starts exporting it: the metrics test
/// fails until you do, so this list only ever names what is really missing.
pub const PLANNED_NOT_YET_EXPORTED: &[&str] = &[];

/// Severities the rules may use (alerts.yaml explains them).
const SEVERITIES: [&str; 3] = ["critical", "warning", "info"];

/// Where the runbook links of the rules point (the org path is a convention, see the runbook).
const RUNBOOK_URL: &str = "https://github.com/driftd/driftd/blob/main/docs/runbooks.md";

pub fn repo_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo_file(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Runs kubectl without any cluster (`--local` and `kustomize` need none).
pub fn kubectl_local(args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(KUBECTL)
        .args(args)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The documents of a YAML stream of Kubernetes objects as JSON, parsed by kubectl (the
/// test binary has no YAML parser of its own; kubectl's is the one users' manifests meet).
pub fn yaml_to_json(yaml: &str) -> Vec<Value> {
    // Removing an annotation nobody sets changes nothing and makes kubectl print the objects.
    let json = kubectl_local(
        &["annotate", "--local", "-f", "-", "-o", "json", "unused-"],
        yaml,
    );
    serde_json::Deserializer::from_str(&json)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .collect()
}

/// A YAML file that is not a Kubernetes object (a rule file, a promtool test file) as JSON:
/// parsed as an object whose other top-level keys are the file's.
pub fn yaml_file_to_json(relative: &str) -> Value {
    let wrapped = format!(
        "apiVersion: v1\nkind: File\nmetadata:\n  name: f\n{}",
        read(relative)
    );
    let mut docs = yaml_to_json(&wrapped);
    assert_eq!(docs.len(), 1, "{relative} is one YAML document");
    docs.remove(0)
}

/// The rule file's alerting rules: (alert name, rule).
pub fn alert_rules() -> Vec<(String, Value)> {
    let file = yaml_file_to_json("dashboards/alerts.yaml");
    let mut rules = Vec::new();
    for group in file["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let name = rule["alert"].as_str().expect("only alerting rules");
            rules.push((name.to_string(), rule.clone()));
        }
    }
    assert!(!rules.is_empty());
    rules
}

pub fn dashboard() -> Value {
    serde_json::from_str(&read("dashboards/driftd.json")).expect("driftd.json is JSON")
}

/// One PromQL query of the dashboard, as written (Grafana variables unexpanded).
#[derive(Debug, Clone)]
pub struct PanelQuery {
    /// The panel's title, or `variable NAME` for a template variable's query.
    pub panel: String,
    pub ref_id: String,
    pub expr: String,
    /// Grafana runs it as an instant query (stat and table panels), not over a range.
    pub instant: bool,
}

/// Every PromQL query of the dashboard: the targets of every panel (rows included), and for
/// each `label_values(SELECTOR, LABEL)` template variable the PromQL that asks the same.
pub fn dashboard_queries(dashboard: &Value) -> Vec<PanelQuery> {
    let mut queries = Vec::new();
    for panel in all_panels(dashboard) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push(PanelQuery {
                panel: panel["title"].as_str().unwrap().to_string(),
                ref_id: target["refId"].as_str().unwrap().to_string(),
                expr: target["expr"]
                    .as_str()
                    .expect("a PromQL target")
                    .to_string(),
                instant: target["instant"] == true,
            });
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if variable["type"] != "query" {
            continue;
        }
        let definition = variable["definition"].as_str().unwrap();
        let inner = definition
            .strip_prefix("label_values(")
            .and_then(|d| d.strip_suffix(')'))
            .unwrap_or_else(|| panic!("variable query {definition} is label_values(...)"));
        let (selector, label) = inner.rsplit_once(',').unwrap();
        queries.push(PanelQuery {
            panel: format!("variable {}", variable["name"].as_str().unwrap()),
            ref_id: "query".into(),
            expr: format!("group by ({}) ({})", label.trim(), selector.trim()),
            instant: true,
        });
    }
    queries
}

fn all_panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        out.push(panel);
        out.extend(panel["panels"].as_array().into_iter().flatten());
    }
    out
}

/// What Grafana substitutes before it sends a query: every source, namespace and kind
/// (`.*`, the variables' `allValue`), and concrete intervals for a 1 s scrape interval.
pub fn expand_grafana_variables(expr: &str) -> String {
    let mut out = expr.to_string();
    for (variable, value) in [
        ("$__rate_interval", "1m"),
        ("$__interval", "15s"),
        ("$__range", "1h"),
        ("${source}", ".*"),
        ("$source", ".*"),
        ("${namespace}", ".*"),
        ("$namespace", ".*"),
        ("${kind}", ".*"),
        ("$kind", ".*"),
    ] {
        out = out.replace(variable, value);
    }
    assert!(!out.contains('$'), "a Grafana variable left in {out}");
    out
}

/// The driftd metric names an expression uses (identifiers outside string literals).
pub fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_string = false;
    let mut token = String::new();
    let mut chars = expr.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            token.push(c);
            continue;
        }
        if token.starts_with("driftd_") {
            names.insert(token.clone());
        }
        token.clear();
        in_string = c == '"';
    }
    if token.starts_with("driftd_") {
        names.insert(token);
    }
    names
}

/// Series names in a Prometheus text exposition (histograms as `_bucket`, `_sum`, `_count`).
fn exported_names(exposition: &str) -> BTreeSet<String> {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect()
}

/// A running driftd with every kind of series it exports today: drift (a Deployment edited by
/// hand), an unmanaged ConfigMap (coverage on), pods on stale config (a key added to the
/// ConfigMap the Deployment reads), and a counted watch error.
pub struct DriftingWorld {
    pub daemon: Daemon,
    /// The simulator the daemon watches, kept running until the daemon stops (field order).
    pub _sim: Sim,
    pub dir: tempfile::TempDir,
}

pub fn drifting_world() -> DriftingWorld {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    commit(&dir.path().join("driftd.db"), "shop", &examples());
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    let config = write_config(
        dir.path(),
        "[unmanaged]\nkinds = [\"ConfigMap\"]\nnamespaces = [\"shop\"]\n",
    );
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    sim.kubectl(&[
        "-n",
        "shop",
        "set",
        "image",
        "deployment/web",
        "app=nginx:1.28",
    ]);
    sim.kubectl(&[
        "-n",
        "shop",
        "create",
        "configmap",
        "not-in-any-source",
        "--from-literal=a=b",
    ]);
    // Pods on stale config: once the rollout's pods run (and a second has passed, as
    // startTime counts whole seconds), web-config gains a key. Not drift (the committed keys
    // are unchanged), but web's pods read it through envFrom and cannot see it.
    let started = wait_for("web's new pods running", Duration::from_secs(60), || {
        let pods = sim.kubectl_json(&["-n", "shop", "get", "pods"]);
        let new: Vec<jiff::Timestamp> = pods["items"]
            .as_array()?
            .iter()
            .filter(|p| p["spec"]["containers"][0]["image"] == "nginx:1.28")
            .filter(|p| p["status"]["phase"] == "Running")
            .filter_map(|p| p["status"]["startTime"].as_str()?.parse().ok())
            .collect();
        let all = pods["items"].as_array()?.len();
        (new.len() == 2 && all == 2).then(|| new.into_iter().max().unwrap())
    });
    wait_for(
        "a second after they started",
        Duration::from_secs(10),
        || (jiff::Timestamp::now().as_second() > started.as_second()).then_some(()),
    );
    sim.merge_patch(
        "shop",
        &["configmap", "web-config"],
        &json!({"data": {"FEATURE_FLAG": "on"}}),
    );
    // One failed re-watch.
    sim_admin(
        &sim,
        "faults",
        json!({"resource": "configmaps", "verb": "watch", "count": 1, "code": 500}),
    );
    sim_admin(&sim, "close-watches", json!({}));
    wait_for(
        "drift, an unmanaged object, stale pods and a watch error in /metrics",
        Duration::from_secs(60),
        || {
            let (_, metrics) = daemon.get("/metrics");
            let names = exported_names(&metrics);
            let drift = metrics.contains(r#"kind="Deployment",name="web""#);
            (drift
                && names.contains("driftd_unmanaged_objects")
                && names.contains("driftd_stale_config_pods")
                && names.contains("driftd_watch_errors_total"))
            .then_some(())
        },
    );
    DriftingWorld {
        daemon,
        _sim: sim,
        dir,
    }
}

/// POSTs to a simulator admin endpoint (`/_sim/PATH`, see crates/sim).
fn sim_admin(sim: &Sim, path: &str, body: Value) {
    sim.admin("POST", path, body);
}

#[test]
fn dashboard_and_rules_use_only_metrics_driftd_exports() {
    let world = drifting_world();
    let (status, metrics) = world.daemon.get("/metrics");
    assert_eq!(status, 200);
    let exported = exported_names(&metrics);

    let mut used: Vec<(String, String)> = Vec::new(); // (metric, where)
    for q in dashboard_queries(&dashboard()) {
        for name in metric_names(&q.expr) {
            used.push((name, format!("driftd.json panel {:?}", q.panel)));
        }
    }
    for (alert, rule) in alert_rules() {
        for name in metric_names(rule["expr"].as_str().unwrap()) {
            used.push((name, format!("alerts.yaml {alert}")));
        }
    }
    let used_names: BTreeSet<&str> = used.iter().map(|(n, _)| n.as_str()).collect();
    for core in [
        "driftd_objects",
        "driftd_object_drift_since_timestamp_seconds",
        "driftd_diff_duration_seconds_bucket",
    ] {
        assert!(
            used_names.contains(core),
            "{core} is not used: {used_names:?}"
        );
    }

    let mut problems = Vec::new();
    for (name, place) in &used {
        let planned = PLANNED_NOT_YET_EXPORTED.contains(&name.as_str());
        if !planned && !exported.contains(name) {
            problems.push(format!("{place} uses {name}, which driftd does not export"));
        }
    }
    for name in PLANNED_NOT_YET_EXPORTED {
        if exported.contains(*name) {
            problems.push(format!(
                "{name} is exported now: remove it from PLANNED_NOT_YET_EXPORTED"
            ));
        }
        if !used_names.contains(name) {
            problems.push(format!(
                "{name} is in PLANNED_NOT_YET_EXPORTED but neither the dashboard nor the rules use it"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\n(exported: {exported:?})",
        problems.join("\n")
    );
}

#[test]
fn prometheus_rule_in_deploy_carries_the_alert_rules() {
    // The committed PrometheusRule is what the generator makes of the rule file today.
    let out = Command::new("bash")
        .arg(repo_file("deploy/gen-prometheusrule.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = read("deploy/components/prometheus-operator/prometheusrule.yaml");
    assert!(
        String::from_utf8(out.stdout).unwrap() == committed,
        "deploy/components/prometheus-operator/prometheusrule.yaml is out of date: run \
         deploy/gen-prometheusrule.sh > deploy/components/prometheus-operator/prometheusrule.yaml"
    );

    // What kustomize renders for users carries the rule file's groups, value for value.
    let overlay = repo_file("deploy/overlays/prometheus-operator");
    let rendered = yaml_to_json(&kubectl_local(
        &["kustomize", overlay.to_str().unwrap()],
        "",
    ));
    let rules: Vec<&Value> = rendered
        .iter()
        .filter(|o| o["kind"] == "PrometheusRule")
        .collect();
    assert_eq!(rules.len(), 1, "{rendered:#?}");
    assert_eq!(rules[0]["metadata"]["namespace"], "driftd");
    let file = yaml_file_to_json("dashboards/alerts.yaml");
    assert_eq!(rules[0]["spec"]["groups"], file["groups"]);
    assert_eq!(rules[0]["spec"].as_object().unwrap().len(), 1);
}

#[test]
fn promtool_checks_the_rules_and_unit_tests_every_alert() {
    let promtool = |args: &[&str]| {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("promtool is installed (Debian package prometheus; .ci/run installs it)");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "promtool {args:?}:\n{text}");
        text
    };
    let rules = alert_rules();
    let check = promtool(&["check", "rules", "dashboards/alerts.yaml"]);
    assert!(
        check.contains(&format!("SUCCESS: {} rules found", rules.len())),
        "{check}"
    );
    let tested = promtool(&["test", "rules", "dashboards/alerts_test.yaml"]);
    assert!(tested.contains("SUCCESS"), "{tested}");

    // Every alert has a case where it fires and one where it must stay silent.
    let tests = yaml_file_to_json("dashboards/alerts_test.yaml");
    let cases: Vec<&Value> = tests["tests"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().into_iter().flatten())
        .collect();
    for (alert, _) in &rules {
        let of_alert = || cases.iter().filter(|c| c["alertname"] == alert.as_str());
        let fires = of_alert().any(|c| c["exp_alerts"].as_array().is_some_and(|a| !a.is_empty()));
        let silent = of_alert().any(|c| c["exp_alerts"].as_array().is_none_or(|a| a.is_empty()));
        assert!(fires, "alerts_test.yaml has no case where {alert} fires");
        assert!(
            silent,
            "alerts_test.yaml has no case where {alert} stays silent"
        );
    }
}

#[test]
fn dashboard_is_portable_and_every_alert_has_a_runbook() {
    let d = dashboard();
    assert_eq!(d["schemaVersion"], 41);
    assert_eq!(d["uid"], "driftd");
    assert!(d["id"].is_null(), "no id of somebody's Grafana");
    let variables = d["templating"]["list"].as_array().unwrap();
    let variable = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no variable {name}"))
    };
    assert_eq!(variable("datasource")["type"], "datasource");
    assert_eq!(variable("datasource")["query"], "prometheus");
    for name in ["source", "namespace", "kind"] {
        let v = variable(name);
        assert_eq!(v["type"], "query", "{name}");
        assert_eq!(v["includeAll"], true, "{name}");
        assert_eq!(v["allValue"], ".*", "{name}");
        assert!(v["definition"]
            .as_str()
            .unwrap()
            .starts_with("label_values("));
    }

    // Data sources only by the variable (or Grafana's built-in annotations); no other UID.
    fn walk<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    out.push((format!("{path}/{k}"), child));
                    walk(child, format!("{path}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    walk(child, format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut nodes = Vec::new();
    walk(&d, String::new(), &mut nodes);
    let variable_ref = json!({"type": "prometheus", "uid": "${datasource}"});
    let builtin = json!({"type": "grafana", "uid": "-- Grafana --"});
    for (path, value) in &nodes {
        if path.ends_with("/datasource") {
            assert!(
                **value == variable_ref || **value == builtin,
                "{path}: {value}"
            );
        }
        if path.ends_with("/uid") && path != "/uid" {
            assert!(
                *value == "${datasource}" || *value == "-- Grafana --",
                "{path}: {value}"
            );
        }
    }
    let panels = all_panels(&d);
    let ids: BTreeSet<i64> = panels.iter().map(|p| p["id"].as_i64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "panel ids are unique");
    let titles: BTreeSet<&str> = panels
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles.len(), panels.len(), "panel titles are unique");
    for q in dashboard_queries(&d) {
        expand_grafana_variables(&q.expr);
    }

    let runbooks = read("docs/runbooks.md");
    let sections: BTreeSet<&str> = runbooks
        .lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter(|h| h.starts_with("Driftd"))
        .collect();
    let rules = alert_rules();
    for (alert, rule) in &rules {
        let severity = rule["labels"]["severity"].as_str().unwrap_or("");
        assert!(
            SEVERITIES.contains(&severity),
            "{alert}: severity {severity:?}"
        );
        for key in ["summary", "description"] {
            let text = rule["annotations"][key].as_str().unwrap_or("");
            assert!(!text.trim().is_empty(), "{alert} has no {key}");
        }
        assert_eq!(
            rule["annotations"]["runbook_url"],
            format!("{RUNBOOK_URL}#{}", alert.to_lowercase()),
            "{alert}"
        );
        assert!(
            sections.contains(alert.as_str()),
            "docs/runbooks.md has no section `## {alert}`"
        );
    }
    let alerts: BTreeSet<&str> = rules.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(sections, alerts, "runbook sections and alerts differ");
}
