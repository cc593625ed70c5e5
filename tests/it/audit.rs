//! Who made a change, end to end: the real `kubectl` edits as two people (two contexts with
//! their own bearer tokens), the simulator audits each write as kube-apiserver's webhook and
//! log backends do (the user from the request's bearer token, so the simulator serves
//! HTTPS, to which alone kubectl sends tokens), and the real `driftd serve` names each
//! person in `/drift`. A caller
//! without the webhook's token is refused and what it claims is not shown.

use crate::scaffold::*;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const WEBHOOK_TOKEN: &str = "audit-webhook-t0ken";

/// `POST /_sim/PATH` with `body` through kubectl (which trusts the simulator's certificate).
fn sim_post(sim: &Sim, path: &str, body: &Value) -> Value {
    let out = sim.kubectl_output(
        &["create", "--raw", &format!("/_sim/{path}"), "-f", "-"],
        Some(&body.to_string()),
    );
    assert!(
        out.status.success(),
        "POST /_sim/{path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A user `name` (group `dev`) of the simulator, as context `name` of its kubeconfig.
fn add_person(sim: &Sim, name: &str) {
    let token = sim_post(sim, "users", &json!({"username": name, "groups": ["dev"]}))["token"]
        .as_str()
        .unwrap()
        .to_string();
    sim.kubectl(&[
        "config",
        "set-credentials",
        name,
        &format!("--token={token}"),
    ]);
    sim.kubectl(&[
        "config",
        "set-context",
        name,
        "--cluster=driftd-sim",
        &format!("--user={name}"),
        "--namespace=shop",
    ]);
}

/// `kubectl --context PERSON patch RESOURCE --type merge -p BODY` in `shop`.
fn patch_as(sim: &Sim, person: &str, resource: &[&str], body: &Value) {
    let body = body.to_string();
    let mut args = vec!["--context", person, "-n", "shop", "patch"];
    args.extend(resource);
    args.extend(["--type", "merge", "-p", &body]);
    sim.kubectl(&args);
}

/// The usernames `/drift` names for `kind`/`name`, with how each was matched, once any is
/// named.
fn who(daemon: &Daemon, kind: &str, name: &str) -> Vec<(String, String)> {
    wait_for(
        &format!("/drift naming who changed {kind}/{name}"),
        Duration::from_secs(30),
        || {
            let entry = daemon.entry(kind, name)?;
            let who = entry["who"].as_array()?;
            Some(
                who.iter()
                    .map(|w| {
                        (
                            w["user"]["username"].as_str().unwrap().to_string(),
                            w["matched"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect::<Vec<_>>(),
            )
        },
    )
}

/// kube-apiserver's webhook config: a kubeconfig whose cluster is driftd's `/audit`.
fn webhook_config(dir: &Path, daemon: &Daemon, token: &str) -> std::path::PathBuf {
    let path = dir.join("audit-webhook.yaml");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: driftd\n  cluster:\n    server: {}/audit\n\
             users:\n- name: kube-apiserver\n  user:\n    token: {token}\n\
             contexts:\n- name: webhook\n  context:\n    cluster: driftd\n    user: kube-apiserver\n\
             current-context: webhook\n",
            daemon.url
        ),
    )
    .unwrap();
    path
}

/// POSTs `body` to `url` with `auth` as the Authorization header; the status.
fn post(url: &str, auth: Option<&str>, body: &Value) -> u16 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut request = reqwest::Client::new().post(url).json(body);
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        request.send().await.unwrap().status().as_u16()
    })
}

/// A driftd serving the example app, with `[audit]` as `audit_config` says.
fn start(dir: &Path, audit_config: &str) -> (Sim, Daemon) {
    // Over HTTPS: kubectl sends its users' tokens only to https servers.
    let sim = Sim::start_with(dir, &["--tls"]);
    commit(&dir.join("driftd.db"), "shop", &examples());
    sim.kubectl(&["apply", "-f", examples().to_str().unwrap()]);
    add_person(&sim, "alice");
    add_person(&sim, "bob");
    let daemon = Daemon::start(
        &write_config(dir, &format!("[audit]\n{audit_config}")),
        &sim.kubeconfig,
        &[],
    );
    daemon.wait_ready();
    (sim, daemon)
}

#[test]
fn two_peoples_edits_are_named_through_the_webhook_and_a_forged_event_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("audit-token");
    std::fs::write(&token_file, format!("{WEBHOOK_TOKEN}\n")).unwrap();
    let (sim, daemon) = start(
        dir.path(),
        &format!("webhook_token_file = \"{}\"\n", token_file.display()),
    );
    let config = webhook_config(dir.path(), &daemon, WEBHOOK_TOKEN);
    sim_post(
        &sim,
        "audit",
        &json!({"webhookConfigFile": config, "level": "Metadata"}),
    );

    patch_as(
        &sim,
        "alice",
        &["deployment", "web"],
        &json!({"spec": {"replicas": 5}}),
    );
    patch_as(
        &sim,
        "bob",
        &["configmap", "web-config"],
        &json!({"data": {"LOG_LEVEL": "debug"}}),
    );
    assert_eq!(
        who(&daemon, "Deployment", "web"),
        [("alice".to_string(), "metadata".to_string())]
    );
    assert_eq!(
        who(&daemon, "ConfigMap", "web-config"),
        [("bob".to_string(), "metadata".to_string())]
    );
    let web = daemon.entry("Deployment", "web").unwrap();
    assert_eq!(web["who"][0]["manager"], "kubectl-patch");
    assert_eq!(
        web["who"][0]["user"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    assert_eq!(web["who"][0]["sourceIPs"], json!(["127.0.0.1"]));
    assert_eq!(web["who"][0]["verb"], "patch");

    // Someone else claims the Deployment's edit, without the token or with a wrong one.
    let when = web["changes"][0]["changed_at"].as_str().unwrap();
    let forged = json!({
        "kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {},
        "items": [{
            "level": "Metadata", "auditID": "forged", "stage": "ResponseComplete",
            "requestURI": "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-patch",
            "verb": "patch", "user": {"username": "mallory"}, "sourceIPs": ["10.6.6.6"],
            "userAgent": "kubectl/v1.32.0",
            "objectRef": {"resource": "deployments", "namespace": "shop", "name": "web",
                          "apiGroup": "apps", "apiVersion": "v1"},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": when, "stageTimestamp": when
        }]
    });
    let url = format!("{}/audit", daemon.url);
    assert_eq!(post(&url, None, &forged), 401);
    assert_eq!(post(&url, Some("Bearer not-the-token"), &forged), 401);
    // A write driftd does see after the forgeries: had they been taken in, the entry would
    // have been judged again with mallory in it by now.
    patch_as(
        &sim,
        "alice",
        &["secret", "web-db"],
        &json!({"stringData": {"DATABASE_PASSWORD": "changed-by-alice"}}),
    );
    assert_eq!(
        who(&daemon, "Secret", "web-db"),
        [("alice".to_string(), "metadata".to_string())]
    );
    let body = daemon.get("/drift").1;
    assert!(!body.contains("mallory"), "{body}");
    assert_eq!(
        who(&daemon, "Deployment", "web"),
        [("alice".to_string(), "metadata".to_string())]
    );
}

#[test]
fn two_peoples_edits_are_named_through_an_audit_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let (sim, daemon) = start(dir.path(), &format!("log_path = \"{}\"\n", log.display()));
    // Bodies at RequestResponse, but Secrets at Metadata, as a sane policy has it.
    sim_post(
        &sim,
        "audit",
        &json!({"logPath": log, "level": "RequestResponse", "secretsLevel": "Metadata"}),
    );

    patch_as(
        &sim,
        "alice",
        &["configmap", "web-config"],
        &json!({"data": {"LOG_LEVEL": "debug"}}),
    );
    patch_as(
        &sim,
        "bob",
        &["secret", "web-db"],
        &json!({"stringData": {"DATABASE_PASSWORD": "bob-was-here-s3cret"}}),
    );
    // Nothing wrote the ConfigMap after alice: the response's resourceVersion is the live one.
    assert_eq!(
        who(&daemon, "ConfigMap", "web-config"),
        [("alice".to_string(), "resourceVersion".to_string())]
    );
    assert_eq!(
        who(&daemon, "Secret", "web-db"),
        [("bob".to_string(), "metadata".to_string())]
    );
    let log_text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !log_text.contains("bob-was-here-s3cret"),
        "Secrets are audited at Metadata"
    );
    let body = daemon.get("/drift").1;
    assert!(!body.contains("bob-was-here-s3cret"), "{body}");
    // The drift's episode names each person beside the tool they used, whichever of the
    // watch event and the audit event came first.
    let people = wait_for(
        "/history naming alice and bob",
        Duration::from_secs(30),
        || {
            let (_, body) = daemon.get("/history");
            let history: Value = serde_json::from_str(&body).ok()?;
            let mut people: Vec<(String, String)> = history["episodes"]
                .as_array()?
                .iter()
                .flat_map(|e| e["who"].as_array().cloned().unwrap_or_default())
                .filter_map(|w| {
                    Some((
                        w["user"].as_str()?.to_string(),
                        w["manager"].as_str()?.to_string(),
                    ))
                })
                .collect();
            people.sort();
            (people.len() == 2).then_some(people)
        },
    );
    assert_eq!(
        people,
        [
            ("alice".to_string(), "kubectl-patch".to_string()),
            ("bob".to_string(), "kubectl-patch".to_string())
        ]
    );
    assert!(!daemon.get("/history").1.contains("bob-was-here-s3cret"));
}

#[test]
fn an_unreadable_webhook_token_file_stops_serve_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let missing = dir.path().join("no-such-token");
    let config = write_config(
        dir.path(),
        &format!("[audit]\nwebhook_token_file = \"{}\"\n", missing.display()),
    );
    let out = Daemon::command(&config, &sim.kubeconfig).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("audit.webhook_token_file"), "{stderr}");
    assert!(stderr.contains("no-such-token"), "{stderr}");
}
