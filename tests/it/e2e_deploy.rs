//! The deploy package (`deploy/`, rendered with `kubectl kustomize` as users render it) is
//! valid Kubernetes and least privilege: the base applies with kubectl and driftd itself
//! reports every object of it in sync once committed; the overlays apply (the Prometheus
//! Operator's CRDs first); the ClusterRole grants exactly what driftd calls, with no wildcard
//! and no write verb outside Events, and the Roles in driftd's namespace exactly its Lease's
//! and its hash key Secret's calls; the Deployment runs hardened.

use crate::dashboards::{kubectl_local, repo_file, yaml_file_to_json, yaml_to_json};
use crate::scaffold::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

const READ: &[&str] = &["get", "list", "watch"];

/// What driftd calls on the API cluster-wide, per (API group, resource): the table the
/// ClusterRole is checked against, kept in step with the code that makes the calls.
/// - get/list/watch of each kind in the desired state: `crates/watch/src/lib.rs` starts one
///   kube-runtime watcher (list, then watch) per desired kind. The base grants the kinds a
///   typical desired state holds (the example app, this package itself, Helm charts); the
///   in-sync test below checks that every kind of the package is among them.
/// - horizontalpodautoscalers: `crates/engine/src/engine.rs` (`hpa_type`) watches HPAs
///   whenever workloads are desired: the replicas of an HPA's target are not drift.
/// - secrets: Secrets in the desired state, and Helm release Secrets; the cluster
///   log in driftd's namespace (`crates/cluster/src/cluster_log/importer.rs` lists and
///   watches its Secrets).
/// - pods, replicasets: stale-config pods.
/// - events: `crates/export/src/events.rs` publishes through kube-runtime's
///   `Recorder`, which creates an Event and patches its series when it repeats.
const CLUSTER_CALLS: &[(&str, &str, &[&str])] = &[
    ("", "namespaces", READ),
    ("", "configmaps", READ),
    ("", "services", READ),
    ("", "serviceaccounts", READ),
    ("", "persistentvolumeclaims", READ),
    ("", "secrets", READ),
    ("", "pods", READ),
    ("apps", "deployments", READ),
    ("apps", "statefulsets", READ),
    ("apps", "daemonsets", READ),
    ("apps", "replicasets", READ),
    ("batch", "jobs", READ),
    ("batch", "cronjobs", READ),
    ("networking.k8s.io", "ingresses", READ),
    ("networking.k8s.io", "networkpolicies", READ),
    ("policy", "poddisruptionbudgets", READ),
    ("autoscaling", "horizontalpodautoscalers", READ),
    ("rbac.authorization.k8s.io", "roles", READ),
    ("rbac.authorization.k8s.io", "rolebindings", READ),
    ("rbac.authorization.k8s.io", "clusterroles", READ),
    ("rbac.authorization.k8s.io", "clusterrolebindings", READ),
    ("apiextensions.k8s.io", "customresourcedefinitions", READ),
    ("events.k8s.io", "events", &["create", "patch"]),
];

/// What driftd calls in its own namespace: leader election on a Lease.
const NAMESPACE_CALLS: &[(&str, &str, &[&str])] = &[(
    "coordination.k8s.io",
    "leases",
    &["get", "create", "update"],
)];

/// What driftd calls on its hash key's Secret (`crates/daemon/src/hash_key/mod.rs`): get by
/// name at every start, create at the first (a create cannot be limited to one name).
const HASH_KEY_CALLS: &[(&str, &str, &[&str])] = &[
    ("", "secrets/driftd-hash-key", &["get"]),
    ("", "secrets", &["create"]),
];

/// What `driftd commit|intent|run --cluster` call in driftd's namespace
/// (`crates/cluster/src/cluster_log/writer.rs`): get by name, create records, update the
/// sequence, a source's lock and an intent's state at the version read; `intent list
/// --cluster` and `locks --cluster` list the log (`cluster_log/snapshot.rs`). No delete.
const DEPLOYER_CALLS: &[(&str, &str, &[&str])] =
    &[("", "secrets", &["get", "list", "create", "update"])];

/// Verbs that change something (or grant more than reading).
const WRITE_VERBS: &[&str] = &[
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "escalate",
    "bind",
    "impersonate",
    "approve",
    "sign",
];

/// `kubectl kustomize deploy/<dir>` as objects, and as the YAML kubectl printed.
fn render(dir: &str) -> (Vec<Value>, String) {
    let path = repo_file(&format!("deploy/{dir}"));
    let yaml = kubectl_local(&["kustomize", path.to_str().unwrap()], "");
    (yaml_to_json(&yaml), yaml)
}

fn object<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} rendered"))
}

/// A role's rules as (group, resource, verb) triples; a rule limited to some names grants
/// `resource/name` for each.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        assert!(rule.get("nonResourceURLs").is_none(), "{rule}");
        let names: Vec<&str> = rule["resourceNames"]
            .as_array()
            .map(|n| n.iter().map(|n| n.as_str().unwrap()).collect())
            .unwrap_or_default();
        let list = |k: &str| -> Vec<String> {
            rule[k]
                .as_array()
                .unwrap_or_else(|| panic!("{k} in {rule}"))
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        };
        for group in list("apiGroups") {
            for resource in list("resources") {
                let resources: Vec<String> = match names.as_slice() {
                    [] => vec![resource],
                    names => names.iter().map(|n| format!("{resource}/{n}")).collect(),
                };
                for resource in resources {
                    for verb in list("verbs") {
                        out.insert((group.clone(), resource.clone(), verb));
                    }
                }
            }
        }
    }
    out
}

fn table(calls: &[(&str, &str, &[&str])]) -> BTreeSet<(String, String, String)> {
    calls
        .iter()
        .flat_map(|(g, r, verbs)| {
            verbs
                .iter()
                .map(|v| (g.to_string(), r.to_string(), v.to_string()))
        })
        .collect()
}

/// Fails naming what the role grants beyond `expected`, and what it lacks.
fn assert_grants(role: &Value, expected: &BTreeSet<(String, String, String)>) {
    let actual = grants(role);
    let extra: Vec<_> = actual.difference(expected).collect();
    let missing: Vec<_> = expected.difference(&actual).collect();
    assert!(
        extra.is_empty() && missing.is_empty(),
        "{} grants more than driftd calls: {extra:?}; lacks: {missing:?}",
        role["metadata"]["name"]
    );
}

fn assert_no_wildcard(role: &Value) {
    for (g, r, v) in grants(role) {
        assert!(
            !g.contains('*') && !r.contains('*') && !v.contains('*'),
            "wildcard in {}: {g}/{r} {v}",
            role["metadata"]["name"]
        );
    }
}

#[test]
fn cluster_role_grants_exactly_what_driftd_calls() {
    let (objects, _) = render("base");
    let cluster_role = object(&objects, "ClusterRole", "driftd");
    assert_no_wildcard(cluster_role);
    assert_grants(cluster_role, &table(CLUSTER_CALLS));
    for (group, resource, verb) in grants(cluster_role) {
        assert!(
            !WRITE_VERBS.contains(&verb.as_str())
                || (group == "events.k8s.io" && resource == "events"),
            "the base may not {verb} {group}/{resource}"
        );
    }
    let role = object(&objects, "Role", "driftd-leader-election");
    assert_eq!(role["metadata"]["namespace"], "driftd");
    assert_no_wildcard(role);
    assert_grants(role, &table(NAMESPACE_CALLS));

    // The hash key's Secret, by the name driftd.toml gives it, in driftd's namespace.
    let role = object(&objects, "Role", "driftd-hash-key");
    assert_eq!(role["metadata"]["namespace"], "driftd");
    assert_no_wildcard(role);
    assert_grants(role, &table(HASH_KEY_CALLS));
    let toml = std::fs::read_to_string(repo_file("deploy/base/driftd.toml")).unwrap();
    assert!(
        toml.contains("hash_key_secret = \"driftd-hash-key\"\n"),
        "{toml}"
    );

    // All are bound to driftd's ServiceAccount, which the Deployment runs as.
    for (kind, name, role_kind) in [
        ("ClusterRoleBinding", "driftd", "ClusterRole"),
        ("RoleBinding", "driftd-leader-election", "Role"),
        ("RoleBinding", "driftd-hash-key", "Role"),
    ] {
        let binding = object(&objects, kind, name);
        assert_eq!(binding["roleRef"]["kind"], role_kind);
        let subjects = binding["subjects"].as_array().unwrap();
        assert_eq!(subjects.len(), 1, "{binding}");
        assert_eq!(subjects[0]["kind"], "ServiceAccount");
        assert_eq!(subjects[0]["name"], "driftd");
        assert_eq!(subjects[0]["namespace"], "driftd");
    }

    // The deployer example: exactly what the cluster log's writer calls, in driftd's
    // namespace only, bound to the deployer's ServiceAccount.
    let (deployer, _) = render("deployer");
    let role = object(&deployer, "Role", "driftd-deployer");
    assert_eq!(role["metadata"]["namespace"], "driftd");
    assert_no_wildcard(role);
    assert_grants(role, &table(DEPLOYER_CALLS));
    let binding = object(&deployer, "RoleBinding", "driftd-deployer");
    assert_eq!(binding["metadata"]["namespace"], "driftd");
    assert_eq!(binding["roleRef"]["name"], "driftd-deployer");
    assert_eq!(binding["subjects"][0]["kind"], "ServiceAccount");
    assert!(
        !deployer.iter().any(|o| o["kind"] == "ClusterRole"),
        "a deployer needs nothing cluster-wide"
    );

    // The opt-in remediation overlay adds create/patch (server-side apply) and nothing else.
    let (remediation, _) = render("overlays/remediation");
    let extra = object(&remediation, "ClusterRole", "driftd-remediation");
    assert_no_wildcard(extra);
    let verbs: BTreeSet<String> = grants(extra).into_iter().map(|(_, _, v)| v).collect();
    assert_eq!(verbs, BTreeSet::from(["create".into(), "patch".into()]));
    // The overlay leaves the base's ClusterRole as it is.
    assert_grants(
        object(&remediation, "ClusterRole", "driftd"),
        &table(CLUSTER_CALLS),
    );
}

#[test]
fn deployment_runs_hardened_with_the_config_it_is_given() {
    let (objects, _) = render("base");
    let deployment = object(&objects, "Deployment", "driftd");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "driftd");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    // The uid the image's user has (Dockerfile: USER 65532:65532).
    let uid = pod["securityContext"]["runAsUser"].as_i64().unwrap();
    assert!(
        std::fs::read_to_string(repo_file("Dockerfile"))
            .unwrap()
            .contains(&format!("USER {uid}:{uid}")),
        "Dockerfile's USER is not {uid}"
    );
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert_eq!(c["image"], "driftd:0.1.0");
    let sc = &c["securityContext"];
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["resources"]["requests"]["memory"], "128Mi");
    assert_eq!(c["resources"]["requests"]["cpu"], "50m");
    assert_eq!(c["resources"]["limits"]["memory"], "512Mi");

    // The config file it is started with is driftd.toml, from the generated ConfigMap, and
    // puts the database on the volume.
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args, ["serve", "--config", "/etc/driftd/driftd.toml"]);
    // `kubectl exec` commands read the same configuration, the hash key's Secret with it.
    let config_env = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "DRIFTD_CONFIG")
        .expect("DRIFTD_CONFIG set");
    assert_eq!(config_env["value"], "/etc/driftd/driftd.toml");
    let mount = |name: &str| {
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no mount {name}"))["mountPath"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(mount("config"), "/etc/driftd");
    assert_eq!(mount("data"), "/data");
    let volume = |name: &str| {
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap()
            .clone()
    };
    let config_map_name = volume("config")["configMap"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let config_map = object(&objects, "ConfigMap", &config_map_name);
    let toml = std::fs::read_to_string(repo_file("deploy/base/driftd.toml")).unwrap();
    assert_eq!(config_map["data"]["driftd.toml"], toml);
    assert!(toml.contains("database = \"/data/driftd.db\"\n"), "{toml}");
    let claim = volume("data")["persistentVolumeClaim"]["claimName"].clone();
    object(&objects, "PersistentVolumeClaim", claim.as_str().unwrap());
    // driftd accepts the config file (an unknown key or a wrong type stops it at start).
    let dir = tempfile::tempdir().unwrap();
    let test_config = dir.path().join("driftd.toml");
    let listen_anywhere = toml
        .replace(
            "/data/driftd.db",
            dir.path().join("driftd.db").to_str().unwrap(),
        )
        .replace("0.0.0.0:9477", "127.0.0.1:0");
    std::fs::write(&test_config, listen_anywhere).unwrap();
    let sim = Sim::start(dir.path());
    let daemon = Daemon::start(&test_config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
}

#[test]
fn base_applies_and_driftd_reports_it_in_sync() {
    let dir = tempfile::tempdir().unwrap();
    let (objects, yaml) = render("base");
    let manifest = dir.path().join("driftd-base.yaml");
    std::fs::write(&manifest, &yaml).unwrap();
    let sim = Sim::start(dir.path());
    commit(&dir.path().join("driftd.db"), "driftd", &manifest);
    sim.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);
    let daemon = Daemon::start(&write_config(dir.path(), ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let in_sync = wait_for(
        "every object of deploy/base evaluated",
        Duration::from_secs(20),
        || {
            let v = daemon.drift("?class=in_sync");
            (v["objects"].as_array().unwrap().len() == objects.len()).then_some(v)
        },
    );
    assert_eq!(
        daemon.drift("")["objects"].as_array().unwrap().len(),
        0,
        "{in_sync:#}"
    );

    // driftd watched each kind of the package, and the ClusterRole lets it: a cluster with
    // RBAC would not answer 403 to driftd watching its own deployment.
    let (_, metrics) = daemon.get("/metrics");
    let resources = sim.kubectl(&["api-resources", "--no-headers"]);
    let cluster_role = object(&objects, "ClusterRole", "driftd");
    let granted = grants(cluster_role);
    for o in &objects {
        let (api_version, kind) = (
            o["apiVersion"].as_str().unwrap(),
            o["kind"].as_str().unwrap(),
        );
        assert!(
            metrics.contains(&format!("driftd_watch_events_total{{kind=\"{kind}\"}}")),
            "driftd did not watch {kind}"
        );
        let resource = resources
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|cols| cols[cols.len() - 1] == kind && cols[cols.len() - 3] == api_version)
            .unwrap_or_else(|| panic!("the simulator does not serve {api_version} {kind}"))[0];
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        for verb in READ {
            assert!(
                granted.contains(&(group.into(), resource.into(), verb.to_string())),
                "the ClusterRole does not let driftd {verb} {group}/{resource}"
            );
        }
    }
}

/// The Prometheus Operator's CRDs as upstream ships them (SOURCES.md in the shared folder,
/// `../shared/` next to the repository; from a git worktree, next to its main checkout).
fn upstream_operator_crds() -> String {
    let file = shared_dir().join("upstream-samples/operator-crds-trimmed.yaml");
    let text = std::fs::read_to_string(file).unwrap();
    // Documents are separated by `---` and named by a `# --- <crd name>` line.
    text.split("\n---\n")
        .filter(|doc| {
            let name = doc.trim_start().lines().next().unwrap_or("");
            name == "# --- prometheusrules.monitoring.coreos.com"
                || name == "# --- servicemonitors.monitoring.coreos.com"
        })
        .collect::<Vec<_>>()
        .join("\n---\n")
}

#[test]
#[cfg_attr(
    not(shared_material),
    ignore = "needs ../shared/ (the upstream operator CRDs), which is not beside this clone"
)]
fn overlays_apply_with_the_prometheus_operator_crds() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let crds = upstream_operator_crds();
    assert_eq!(yaml_to_json(&crds).len(), 2, "two CRDs");
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(&crds));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sim.kubectl(&[
        "wait",
        "--for=condition=Established",
        "--timeout=30s",
        "crd/prometheusrules.monitoring.coreos.com",
        "crd/servicemonitors.monitoring.coreos.com",
    ]);

    for overlay in ["overlays/prometheus-operator", "overlays/remediation"] {
        let (_, yaml) = render(overlay);
        let out = sim.kubectl_output(&["apply", "-f", "-"], Some(&yaml));
        assert!(
            out.status.success(),
            "kubectl apply of {overlay}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // What the cluster stored carries the rule file's groups, and the ServiceMonitor scrapes
    // the Service's named port.
    let rule = sim.kubectl_json(&["-n", "driftd", "get", "prometheusrule", "driftd"]);
    assert_eq!(
        rule["spec"]["groups"],
        yaml_file_to_json("dashboards/alerts.yaml")["groups"]
    );
    let monitor = sim.kubectl_json(&["-n", "driftd", "get", "servicemonitor", "driftd"]);
    let service = sim.kubectl_json(&["-n", "driftd", "get", "service", "driftd"]);
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"],
        service["spec"]["ports"][0]["name"]
    );
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap();
    assert!(!selector.is_empty());
    for (label, value) in selector {
        assert_eq!(&service["metadata"]["labels"][label], value, "{label}");
    }
    sim.kubectl(&["get", "clusterrole", "driftd-remediation"]);
}
