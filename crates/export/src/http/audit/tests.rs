use super::*;
use tower::ServiceExt;

const TOKEN: &str = "webhook-s3cret";

/// An EventList with one successful `patch` of Deployment shop/web by `alice`, shaped as
/// staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go has it.
fn batch() -> String {
    serde_json::json!({
        "kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": {},
        "items": [{
            "level": "Metadata", "auditID": "a1", "stage": "ResponseComplete",
            "requestURI": "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit",
            "verb": "patch", "user": {"username": "alice", "groups": ["dev"]},
            "sourceIPs": ["10.0.0.7"], "userAgent": "kubectl/v1.32.0",
            "objectRef": {"resource": "deployments", "namespace": "shop", "name": "web",
                          "apiGroup": "apps", "apiVersion": "v1"},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": "2026-12-07T10:00:01.250000Z",
            "stageTimestamp": "2026-12-07T10:00:01.262000Z"
        }]
    })
    .to_string()
}

fn config(per_second: f64, burst: u32, max_body: usize) -> AuditConfig {
    AuditConfig {
        max_requests_per_second: per_second,
        burst,
        max_body_bytes: max_body,
        ..AuditConfig::default()
    }
}

fn intake(config: &AuditConfig, certs: bool) -> (Router, mpsc::Receiver<Vec<AuditRecord>>) {
    let (tx, rx) = mpsc::channel(16);
    let config = AuditConfig {
        webhook_client_certificates: certs,
        ..config.clone()
    };
    (
        router(Arc::new(AuditIntake::new(&config, Some(TOKEN.into()), tx))),
        rx,
    )
}

fn post(auth: Option<&str>, body: String) -> Request<Body> {
    let mut r = Request::post(AUDIT_PATH);
    if let Some(auth) = auth {
        r = r.header(header::AUTHORIZATION, auth);
    }
    r.header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap()
}

async fn status(app: &Router, request: Request<Body>) -> StatusCode {
    app.clone().oneshot(request).await.unwrap().status()
}

#[tokio::test]
async fn the_token_holder_delivers_the_writes() {
    let (app, mut rx) = intake(&AuditConfig::default(), false);
    let auth = format!("Bearer {TOKEN}");
    assert_eq!(
        status(&app, post(Some(&auth), batch())).await,
        StatusCode::OK
    );
    let records = rx.try_recv().unwrap();
    assert_eq!(records[0].user.username, "alice");
}

#[tokio::test]
async fn without_the_token_nothing_is_taken_in() {
    let (app, mut rx) = intake(&AuditConfig::default(), false);
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Bearer webhook-s3cre"),
        Some("Basic d2ViaG9vay1zM2NyZXQ="),
    ] {
        let response = app.clone().oneshot(post(auth, batch())).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{auth:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
    }
    assert!(rx.try_recv().is_err());
}

#[tokio::test]
async fn a_verified_client_certificate_is_accepted_only_when_configured() {
    let with_cert = || {
        let mut r = post(None, batch());
        r.extensions_mut().insert(VerifiedClientCert);
        r
    };
    let (app, mut rx) = intake(&AuditConfig::default(), true);
    assert_eq!(status(&app, with_cert()).await, StatusCode::OK);
    assert!(rx.try_recv().is_ok());
    let (app, _rx) = intake(&AuditConfig::default(), false);
    assert_eq!(status(&app, with_cert()).await, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413() {
    let (app, mut rx) = intake(&config(50.0, 100, 1024), false);
    let auth = format!("Bearer {TOKEN}");
    let big = format!("{}{}", batch(), " ".repeat(2048));
    assert_eq!(
        status(&app, post(Some(&auth), big)).await,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    assert!(rx.try_recv().is_err());
}

#[tokio::test]
async fn past_the_burst_requests_get_429_with_retry_after() {
    let (app, _rx) = intake(&config(0.01, 2, 1 << 20), false);
    let auth = format!("Bearer {TOKEN}");
    assert_eq!(
        status(&app, post(Some(&auth), batch())).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&app, post(Some(&auth), batch())).await,
        StatusCode::OK
    );
    let response = app
        .clone()
        .oneshot(post(Some(&auth), batch()))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().contains_key("retry-after"));
}

#[tokio::test]
async fn a_body_that_is_no_event_list_is_400_and_not_quoted() {
    let (app, _rx) = intake(&AuditConfig::default(), false);
    let auth = format!("Bearer {TOKEN}");
    let response = app
        .clone()
        .oneshot(post(
            Some(&auth),
            r#"{"kind": "Secret", "data": {"p": "aHVudGVy"}}"#.into(),
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = to_bytes(response.into_body(), 4096).await.unwrap();
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("not an audit.k8s.io/v1 EventList"), "{body}");
    assert!(!body.contains("aHVudGVy"), "{body}");
}
