//! The path of one request through the limits, before the router:
//!
//! - `/healthz` and `/readyz` bypass the in-flight limit and the request timeout (they
//!   read one flag), so probes answer while `/drift` is overloaded, and by default need no
//!   credentials (kubelet cannot send them without writing them into the Pod spec);
//! - everything else needs credentials when authentication is on (the web config's
//!   `basic_auth_users`, or `[http] auth = "kubernetes"`: a token and a permission the API
//!   server grants, [`super::delegated`]), checked before the limits so a client whose
//!   answer is cached is never shed behind others' reviews, and counts against `max_in_flight_requests` (tower's `ConcurrencyLimit`, with `LoadShed`
//!   answering 503 at once rather than queueing) and `request_timeout_seconds`
//!   (tower-http's `Timeout`, 503);
//! - `/audit` is guarded by its own credentials (`super::audit`), not these;
//! - every answer, 401 and 503 included, carries the web config's `headers`.

use super::auth::BasicAuth;
use super::delegated::KubernetesAuth;
use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::http::{
    header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode,
};
use axum::response::IntoResponse;
use axum::Router;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_http::timeout::TimeoutLayer;

/// Paths answered outside the in-flight limit and, unless configured, without credentials.
pub const HEALTH_PATHS: [&str; 2] = ["/healthz", "/readyz"];

/// What the request path needs besides the router.
pub struct AppSettings {
    pub max_in_flight_requests: usize,
    pub request_timeout: Duration,
    pub auth: Option<Guard>,
    pub health_requires_auth: bool,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// Who checks credentials: the web config's basic auth or the API server, never both (both
/// read the `Authorization` header).
pub enum Guard {
    Basic(BasicAuth),
    Kubernetes(KubernetesAuth),
}

impl Guard {
    /// `Ok` when the request may go on; otherwise the answer to send instead. Takes the
    /// request's parts, not the request, whose body cannot be shared across threads.
    async fn check(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<(), Response<Body>> {
        match self {
            Guard::Basic(auth) if auth.allows(headers).await => Ok(()),
            Guard::Basic(_) => Err(unauthorized()),
            Guard::Kubernetes(auth) => auth.check(method, path, headers).await,
        }
    }
}

/// The whole application as the connections call it; cheap to clone.
#[derive(Clone)]
pub struct App {
    inner: Arc<Inner>,
}

struct Inner {
    health: Router,
    limited: BoxCloneSyncService<Request<Body>, Response<Body>, Infallible>,
    auth: Option<Guard>,
    health_requires_auth: bool,
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl App {
    pub fn new(router: Router, settings: AppSettings) -> App {
        let limited = ServiceBuilder::new()
            .layer(HandleErrorLayer::new(|err: BoxError| async move {
                overloaded(&err)
            }))
            .load_shed()
            .concurrency_limit(settings.max_in_flight_requests)
            .layer(TimeoutLayer::with_status_code(
                StatusCode::SERVICE_UNAVAILABLE,
                settings.request_timeout,
            ))
            .service(router.clone());
        App {
            inner: Arc::new(Inner {
                health: router,
                limited: BoxCloneSyncService::new(limited),
                auth: settings.auth,
                health_requires_auth: settings.health_requires_auth,
                headers: settings.headers,
            }),
        }
    }

    /// Answers one request.
    pub async fn handle(&self, request: Request<Body>) -> Response<Body> {
        let inner = &self.inner;
        let health = HEALTH_PATHS.contains(&request.uri().path());
        // `/audit` authenticates its callers itself (the API server's webhook credentials).
        let own_auth = request.uri().path() == super::audit::AUDIT_PATH;
        let guarded = inner
            .auth
            .as_ref()
            .filter(|_| !own_auth && (!health || inner.health_requires_auth));
        let refused = match guarded {
            Some(guard) => guard
                .check(request.method(), request.uri().path(), request.headers())
                .await
                .err(),
            None => None,
        };
        let mut response = match refused {
            Some(refused) => refused,
            None if health => match inner.health.clone().oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            },
            None => match inner.limited.clone().oneshot(request).await {
                Ok(response) => response,
                Err(never) => match never {},
            },
        };
        for (name, value) in &inner.headers {
            response.headers_mut().insert(name.clone(), value.clone());
        }
        response
    }
}

/// exporter-toolkit's answer: `WWW-Authenticate: Basic` and Go's `http.Error` body.
fn unauthorized() -> Response<Body> {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Basic")],
        "Unauthorized\n",
    )
        .into_response()
}

/// `LoadShed` refused the request: every in-flight slot is taken.
fn overloaded(err: &BoxError) -> Response<Body> {
    tracing::debug!(error = %err, "request shed: max_in_flight_requests reached");
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "1")],
        "overloaded: too many requests in flight (http.max_in_flight_requests); retry\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use std::collections::BTreeMap;

    /// `/slow` holds its slot until told to finish.
    fn app(
        max_in_flight: usize,
        timeout: Duration,
        users: BTreeMap<String, String>,
    ) -> (App, Arc<tokio::sync::Notify>) {
        let release = Arc::new(tokio::sync::Notify::new());
        let wait = release.clone();
        let router = Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/fast", get(|| async { "fast\n" }))
            .route(
                "/slow",
                get(move || {
                    let wait = wait.clone();
                    async move {
                        wait.notified().await;
                        "slow\n"
                    }
                }),
            );
        let settings = AppSettings {
            max_in_flight_requests: max_in_flight,
            request_timeout: timeout,
            auth: BasicAuth::new(users).map(Guard::Basic),
            health_requires_auth: false,
            headers: vec![(
                HeaderName::from_static("x-frame-options"),
                HeaderValue::from_static("deny"),
            )],
        };
        (App::new(router, settings), release)
    }

    fn get_req(path: &str) -> Request<Body> {
        Request::get(path).body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn a_full_in_flight_budget_sheds_requests_but_not_health_probes() {
        let (app, release) = app(1, Duration::from_secs(30), BTreeMap::new());
        let busy = tokio::spawn({
            let app = app.clone();
            async move { app.handle(get_req("/slow")).await.status() }
        });
        // Wait until the slow request holds the only slot.
        let shed = loop {
            let response = app.handle(get_req("/fast")).await;
            if response.status() == StatusCode::SERVICE_UNAVAILABLE {
                break response;
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(shed.headers()["retry-after"], "1");
        assert_eq!(shed.headers()["x-frame-options"], "deny");
        assert_eq!(
            app.handle(get_req("/healthz")).await.status(),
            StatusCode::OK
        );
        release.notify_one();
        assert_eq!(busy.await.unwrap(), StatusCode::OK);
        assert_eq!(app.handle(get_req("/fast")).await.status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn a_slow_handler_answers_503_at_the_request_timeout() {
        let (app, _release) = app(4, Duration::from_millis(50), BTreeMap::new());
        let response = app.handle(get_req("/slow")).await;
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn credentials_guard_everything_but_health_probes() {
        let users = BTreeMap::from([("u".to_string(), bcrypt::hash("p", 4).unwrap())]);
        let (app, _release) = app(4, Duration::from_secs(30), users);
        let response = app.handle(get_req("/fast")).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()["www-authenticate"], "Basic");
        assert_eq!(response.headers()["x-frame-options"], "deny");
        assert_eq!(
            app.handle(get_req("/healthz")).await.status(),
            StatusCode::OK
        );
        let mut authed = get_req("/fast");
        authed
            .headers_mut()
            .insert(header::AUTHORIZATION, "Basic dTpw".parse().unwrap());
        assert_eq!(app.handle(authed).await.status(), StatusCode::OK);
    }
}
