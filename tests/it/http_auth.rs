//! `[http] auth = "kubernetes"` end to end: the real `driftd serve` asks the simulator's
//! TokenReview and SubjectAccessReview about tokens the real `kubectl create token` got, with
//! the RBAC objects the auth overlay ships (deploy/components/kubernetes-auth) and a binding
//! made as its comments say; a real Prometheus scrapes with its token over TLS, as
//! docs/security.md configures it. Expected answers are kube-rbac-proxy's
//! (`pkg/proxy/proxy.go` `Handle`: "Unauthorized", "Forbidden (user=..., verb=...,
//! resource=, subresource=)"), for the users the ServiceAccount authenticator names
//! (`system:serviceaccount:NS:NAME`).

use crate::dashboards::{kubectl_local, repo_file, yaml_to_json};
use crate::scaffold::*;
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `kubectl kustomize deploy/<dir>` as objects.
fn render(dir: &str) -> Vec<Value> {
    let path = repo_file(&format!("deploy/{dir}"));
    yaml_to_json(&kubectl_local(&["kustomize", path.to_str().unwrap()], ""))
}

fn object<'a>(objects: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

/// The auth overlay's objects a cluster without the Prometheus Operator takes (its
/// ServiceMonitor and PrometheusRule need the operator's CRDs), applied with kubectl.
fn apply_auth_overlay(sim: &Sim) {
    let items: Vec<Value> = render("overlays/kubernetes-auth")
        .into_iter()
        .filter(|o| {
            !o["apiVersion"]
                .as_str()
                .unwrap()
                .starts_with("monitoring.coreos.com/")
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(&list));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Tokens of ServiceAccounts in `monitoring`: the Prometheus the overlay binds
/// (`prometheus-k8s`), an on-call account bound to the drift reader role as the role's
/// comment shows, and one with no binding.
struct Tokens {
    scraper: String,
    oncall: String,
    nobody: String,
}

fn accounts(sim: &Sim) -> Tokens {
    sim.kubectl(&["create", "namespace", "monitoring"]);
    for account in ["prometheus-k8s", "oncall", "nobody"] {
        sim.kubectl(&["-n", "monitoring", "create", "serviceaccount", account]);
    }
    // What `kubectl create clusterrolebinding driftd-oncall --clusterrole=driftd-drift-reader
    // --serviceaccount=monitoring:oncall` creates (the simulator reads that command's
    // protobuf body for no RBAC kind, so it is sent as JSON).
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "driftd-oncall"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
            "name": "driftd-drift-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "oncall", "namespace": "monitoring"}],
    });
    let out = sim.kubectl_output(&["create", "-f", "-"], Some(&binding.to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = |account: &str| {
        sim.kubectl(&["-n", "monitoring", "create", "token", account])
            .trim()
            .to_string()
    };
    Tokens {
        scraper: token("prometheus-k8s"),
        oncall: token("oncall"),
        nobody: token("nobody"),
    }
}

/// A GET with an optional bearer token: status, `WWW-Authenticate`, body.
fn get(client: &reqwest::Client, url: &str, token: Option<&str>) -> (u16, String, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut request = client.get(url);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (status, challenge, response.text().await.unwrap())
    })
}

/// (TokenReviews, SubjectAccessReviews) the simulator has answered.
fn reviews(sim: &Sim) -> (u64, u64) {
    let stats = sim.admin("GET", "stats", json!({}));
    (
        stats["tokenReviews"].as_u64().unwrap(),
        stats["subjectAccessReviews"].as_u64().unwrap(),
    )
}

fn forbidden(user: &str) -> String {
    format!("Forbidden (user=system:serviceaccount:monitoring:{user}, verb=get, resource=, subresource=)\n")
}

#[test]
fn tokens_and_rbac_decide_who_reads_drift_and_who_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let (sim, daemon) = serve_examples(
        dir.path(),
        "[http]\nauth = \"kubernetes\"\nauth_cache_seconds = 3600\n",
    );
    apply_auth_overlay(&sim);
    let tokens = accounts(&sim);
    let client = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", daemon.url);

    // No token, or one the API server does not know: 401, as kube-rbac-proxy answers.
    for path in ["/drift", "/metrics", "/", "/locks"] {
        for token in [None, Some("not-a-token")] {
            let (status, challenge, body) = get(&client, &url(path), token);
            assert_eq!(
                (status, body.as_str()),
                (401, "Unauthorized\n"),
                "{path} {token:?}"
            );
            assert_eq!(challenge, "Bearer");
        }
    }
    // The probes stay open.
    for path in ["/healthz", "/readyz"] {
        assert_eq!(get(&client, &url(path), None).0, 200, "{path}");
    }

    // Prometheus scrapes, and reads nothing else.
    let (status, _, metrics) = get(&client, &url("/metrics"), Some(&tokens.scraper));
    assert_eq!(status, 200, "{metrics}");
    assert!(metrics.contains("driftd_build_info"), "{metrics}");
    for path in ["/drift", "/", "/locks"] {
        let (status, _, body) = get(&client, &url(path), Some(&tokens.scraper));
        assert_eq!((status, body), (403, forbidden("prometheus-k8s")), "{path}");
    }
    // On-call reads drift (the example app, in sync), and does not scrape.
    let (status, _, body) = get(&client, &url("/drift?class=in_sync"), Some(&tokens.oncall));
    assert_eq!(status, 200, "{body}");
    let drift: Value = serde_json::from_str(&body).unwrap();
    assert!(find(&drift, "Deployment", "web").is_some(), "{body}");
    assert_eq!(get(&client, &url("/"), Some(&tokens.oncall)).0, 200);
    assert_eq!(get(&client, &url("/locks"), Some(&tokens.oncall)).0, 200);
    let (status, _, body) = get(&client, &url("/metrics"), Some(&tokens.oncall));
    assert_eq!((status, body), (403, forbidden("oncall")));
    // An account with no binding reads nothing.
    for path in ["/drift", "/metrics"] {
        let (status, _, body) = get(&client, &url(path), Some(&tokens.nobody));
        assert_eq!((status, body), (403, forbidden("nobody")), "{path}");
    }
    // The kubeconfig's administrator (system:masters) reads everything.
    let kubeconfig = std::fs::read_to_string(&sim.kubeconfig).unwrap();
    let admin = kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .expect("the simulator's kubeconfig has a token");
    assert_eq!(get(&client, &url("/drift"), Some(admin)).0, 200);

    // The CLI sends a token from a file; without one it says what is missing.
    let token_file = dir.path().join("oncall-token");
    std::fs::write(&token_file, format!("{}\n", tokens.oncall)).unwrap();
    for command in ["drift", "locks"] {
        let out = driftd(&[
            command,
            "--server",
            &daemon.url,
            "--token-file",
            token_file.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = driftd(&[command, "--server", &daemon.url]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            stderr.contains("401") && stderr.contains("--token-file"),
            "{stderr}"
        );
    }

    // Within the cache time, asking again asks the API server nothing.
    let before = reviews(&sim);
    for _ in 0..3 {
        assert_eq!(get(&client, &url("/metrics"), Some(&tokens.scraper)).0, 200);
        assert_eq!(get(&client, &url("/drift"), Some(&tokens.scraper)).0, 403);
        assert_eq!(get(&client, &url("/drift"), Some(&tokens.oncall)).0, 200);
        assert_eq!(get(&client, &url("/drift"), Some("not-a-token")).0, 401);
    }
    assert_eq!(reviews(&sim), before);
    // A new token is reviewed once.
    let fresh = sim
        .kubectl(&["-n", "monitoring", "create", "token", "prometheus-k8s"])
        .trim()
        .to_string();
    assert_eq!(get(&client, &url("/metrics"), Some(&fresh)).0, 200);
    assert_eq!(reviews(&sim).0, before.0 + 1);
}

/// A certificate for 127.0.0.1 in `dir` (server.crt, server.key); returns it.
fn certificate(dir: &Path) -> Vec<u8> {
    let cert =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    std::fs::write(dir.join("server.key"), cert.signing_key.serialize_pem()).unwrap();
    std::fs::write(dir.join("server.crt"), cert.cert.pem()).unwrap();
    cert.cert.pem().into_bytes()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// TLS from the web config combines with the Kubernetes auth, and a real Prometheus scrapes
/// with the scrape config of docs/security.md (`authorization.credentials_file`: its
/// ServiceAccount token): up with the scraper's token, down (403) with a token RBAC does not
/// let scrape. basic_auth_users with the Kubernetes auth is refused at start.
#[test]
fn prometheus_scrapes_over_tls_with_its_service_account_token() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    apply_auth_overlay(&sim);
    let tokens = accounts(&sim);
    let ca = certificate(dir.path());
    let web = dir.path().join("web-config.yml");
    std::fs::write(
        &web,
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n",
    )
    .unwrap();
    let config = write_config(dir.path(), "");
    let mut cmd = Daemon::command(&config, &sim.kubeconfig);
    cmd.arg("--web.config.file")
        .arg(&web)
        .env("DRIFTD_HTTP_AUTH", "kubernetes");
    let daemon = Daemon::spawn(cmd);
    assert!(daemon.url.starts_with("https://"), "{}", daemon.url);
    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .build()
        .unwrap();
    let url = |path: &str| format!("{}{path}", daemon.url);
    wait_for("/readyz over TLS", Duration::from_secs(30), || {
        (get(&client, &url("/readyz"), None).0 == 200).then_some(())
    });
    assert_eq!(get(&client, &url("/metrics"), None).0, 401);
    assert_eq!(get(&client, &url("/metrics"), Some(&tokens.scraper)).0, 200);

    let scraper_file = dir.path().join("scraper-token");
    std::fs::write(&scraper_file, &tokens.scraper).unwrap();
    let nobody_file = dir.path().join("nobody-token");
    std::fs::write(&nobody_file, &tokens.nobody).unwrap();
    let target = daemon.url.trim_start_matches("https://");
    let job = |name: &str, token_file: &Path| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config:\n      ca_file: {ca}\n    \
             authorization:\n      credentials_file: {token}\n    static_configs:\n      \
             - targets: ['{target}']\n",
            ca = dir.path().join("server.crt").display(),
            token = token_file.display(),
        )
    };
    let prometheus_config = dir.path().join("prometheus.yml");
    std::fs::write(
        &prometheus_config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n{}{}",
            job("driftd", &scraper_file),
            job("driftd-nobody", &nobody_file)
        ),
    )
    .unwrap();
    let port = free_port();
    let mut prometheus = Command::new("prometheus");
    prometheus
        .arg(format!("--config.file={}", prometheus_config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"));
    let _prometheus = Proc::spawn("prometheus", prometheus);
    let query = |expr: &str| {
        let url = reqwest::Url::parse_with_params(
            &format!("http://127.0.0.1:{port}/api/v1/query"),
            [("query", expr)],
        )
        .unwrap();
        let (_, body) = http_get(url.as_str());
        serde_json::from_str::<Value>(&body).ok()
    };
    wait_for(
        "Prometheus scraped driftd with its token: up, and the other job down",
        Duration::from_secs(60),
        || {
            let up = query("up{job=\"driftd\"} * on() group_left driftd_build_info")?;
            let denied = query("up{job=\"driftd-nobody\"}")?;
            (up["data"]["result"][0]["value"][1] == "1"
                && denied["data"]["result"][0]["value"][1] == "0")
                .then_some(())
        },
    );

    // basic_auth_users read the same Authorization header: not both.
    let both = dir.path().join("both.yml");
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    std::fs::write(
        &both,
        format!("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: {hash}\n"),
    )
    .unwrap();
    let out = Daemon::command(&config, &sim.kubeconfig)
        .arg("--web.config.file")
        .arg(&both)
        .env("DRIFTD_HTTP_AUTH", "kubernetes")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("basic_auth_users") && stderr.contains("http.auth"),
        "{stderr}"
    );
}

/// The base admits only the Prometheus namespace to the port; the auth overlay lifts that,
/// turns the auth on, grants driftd exactly the two reviews, and has the ServiceMonitor send
/// Prometheus's token. Both apply to the simulator with kubectl.
#[test]
fn the_network_policy_and_the_auth_overlay() {
    let base = render("base");
    let policy = object(&base, "NetworkPolicy", "driftd").expect("the base has a NetworkPolicy");
    let deployment = object(&base, "Deployment", "driftd").unwrap();
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    for (label, value) in policy["spec"]["podSelector"]["matchLabels"]
        .as_object()
        .unwrap()
    {
        assert_eq!(&pod_labels[label], value, "{label}");
    }
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    let ingress = policy["spec"]["ingress"].as_array().unwrap();
    assert_eq!(ingress.len(), 1, "{policy}");
    assert_eq!(
        ingress[0]["from"],
        json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}])
    );
    // The port it admits is the container's, by name.
    let port = &ingress[0]["ports"][0]["port"];
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert!(
        container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| &p["name"] == port),
        "{port}"
    );

    let overlay = render("overlays/kubernetes-auth");
    assert!(object(&overlay, "NetworkPolicy", "driftd").is_none());
    let container = &object(&overlay, "Deployment", "driftd").unwrap()["spec"]["template"]["spec"]
        ["containers"][0];
    assert!(
        container["env"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "DRIFTD_HTTP_AUTH", "value": "kubernetes"})),
        "{container}"
    );
    let delegator = object(&overlay, "ClusterRole", "driftd-auth-delegator").unwrap();
    assert_eq!(
        delegator["rules"],
        json!([
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}
        ])
    );
    let binding = object(&overlay, "ClusterRoleBinding", "driftd-auth-delegator").unwrap();
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "driftd", "namespace": "driftd"}])
    );
    assert_eq!(
        object(&overlay, "ClusterRole", "driftd-metrics-reader").unwrap()["rules"],
        json!([{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
    );
    assert_eq!(
        object(&overlay, "ClusterRole", "driftd-drift-reader").unwrap()["rules"],
        json!([{"nonResourceURLs": ["/", "/drift", "/locks"], "verbs": ["get"]}])
    );
    let monitor = object(&overlay, "ServiceMonitor", "driftd").unwrap();
    assert_eq!(
        monitor["spec"]["endpoints"][0]["bearerTokenFile"],
        "/var/run/secrets/kubernetes.io/serviceaccount/token"
    );
    assert_eq!(monitor["spec"]["endpoints"][0]["path"], "/metrics");

    // Both apply; what the simulator stored of the policy is what was written.
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let yaml = kubectl_local(
        &["kustomize", repo_file("deploy/base").to_str().unwrap()],
        "",
    );
    let out = sim.kubectl_output(&["apply", "-f", "-"], Some(&yaml));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = sim.kubectl_json(&["-n", "driftd", "get", "networkpolicy", "driftd"]);
    assert_eq!(stored["spec"], policy["spec"]);
    apply_auth_overlay(&sim);
}
