//! The guard against a scripted API server. Expected answers come from kube-rbac-proxy's
//! `pkg/proxy/proxy.go` (`Handle`, `GetRequestAttributes`) and k8s.io/apiserver's
//! bearertoken authenticator, as the module documentation cites them.

use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Tokens "reader" (may get /drift and /metrics), "scraper" (/metrics only); "broken"
/// makes the TokenReview fail, "sar-down" the SubjectAccessReview.
#[derive(Default)]
struct Scripted {
    token_reviews: AtomicUsize,
    access_reviews: AtomicUsize,
    asked: Mutex<Vec<(String, String, String)>>,
}

fn user(name: &str) -> User {
    User {
        name: name.into(),
        uid: format!("uid-{name}"),
        groups: vec!["system:authenticated".into()],
        extra: Default::default(),
    }
}

impl Reviewer for Scripted {
    fn token<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Option<User>, String>> {
        self.token_reviews.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            match token {
                "reader" | "scraper" | "sar-down" => Ok(Some(user(token))),
                "broken" => Err("connection refused".into()),
                _ => Ok(None),
            }
        })
    }

    fn access<'a>(
        &'a self,
        user: &'a User,
        verb: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<bool, String>> {
        self.access_reviews.fetch_add(1, Ordering::SeqCst);
        self.asked
            .lock()
            .unwrap()
            .push((user.name.clone(), verb.into(), path.into()));
        Box::pin(async move {
            match (user.name.as_str(), verb, path) {
                ("sar-down", _, _) => Err("503".into()),
                ("reader", "get", "/drift" | "/metrics") => Ok(true),
                ("scraper", "get", "/metrics") => Ok(true),
                _ => Ok(false),
            }
        })
    }
}

use futures::future::BoxFuture;

fn guard(cache: Duration) -> (KubernetesAuth, Arc<Scripted>) {
    let scripted = Arc::new(Scripted::default());
    (KubernetesAuth::new(scripted.clone(), cache), scripted)
}

fn bearer(token: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::AUTHORIZATION,
        format!("Bearer {token}").parse().unwrap(),
    );
    headers
}

async fn body(response: Response<Body>) -> String {
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn answers_are_kube_rbac_proxys() {
    let (auth, _) = guard(Duration::from_secs(60));
    assert!(auth
        .check(&Method::GET, "/metrics", &bearer("scraper"))
        .await
        .is_ok());
    assert!(auth
        .check(&Method::GET, "/drift", &bearer("reader"))
        .await
        .is_ok());

    // proxy.go: `http.Error(w, "Unauthorized", http.StatusUnauthorized)`.
    let none = auth
        .check(&Method::GET, "/drift", &HeaderMap::new())
        .await
        .unwrap_err();
    assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(none.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(body(none).await, "Unauthorized\n");
    let unknown = auth
        .check(&Method::GET, "/drift", &bearer("nope"))
        .await
        .unwrap_err();
    assert_eq!(unknown.status(), StatusCode::UNAUTHORIZED);
    let failed = auth
        .check(&Method::GET, "/drift", &bearer("broken"))
        .await
        .unwrap_err();
    assert_eq!(failed.status(), StatusCode::UNAUTHORIZED);

    // proxy.go: "Forbidden (user=%s, verb=%s, resource=%s, subresource=%s)", 403, with
    // the empty resource and subresource of a non-resource request.
    let forbidden = auth
        .check(&Method::GET, "/drift", &bearer("scraper"))
        .await
        .unwrap_err();
    assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);
    assert_eq!(
        body(forbidden).await,
        "Forbidden (user=scraper, verb=get, resource=, subresource=)\n"
    );
    // proxy.go: "Authorization error (...)", 500, when the review cannot be had.
    let error = auth
        .check(&Method::GET, "/drift", &bearer("sar-down"))
        .await
        .unwrap_err();
    assert_eq!(error.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        body(error).await,
        "Authorization error (user=sar-down, verb=get, resource=, subresource=)\n"
    );
}

#[tokio::test]
async fn answers_are_reused_within_the_cache_time_failures_are_not() {
    let (auth, scripted) = guard(Duration::from_secs(60));
    for _ in 0..3 {
        assert!(auth
            .check(&Method::GET, "/metrics", &bearer("scraper"))
            .await
            .is_ok());
        assert!(auth
            .check(&Method::GET, "/drift", &bearer("scraper"))
            .await
            .is_err());
        assert!(auth
            .check(&Method::GET, "/x", &bearer("nope"))
            .await
            .is_err());
    }
    // One TokenReview per token, one SubjectAccessReview per (user, verb, path).
    assert_eq!(scripted.token_reviews.load(Ordering::SeqCst), 2);
    assert_eq!(scripted.access_reviews.load(Ordering::SeqCst), 2);
    // A HEAD asks as a GET does, so it is the same cached answer.
    assert!(auth
        .check(&Method::HEAD, "/metrics", &bearer("scraper"))
        .await
        .is_ok());
    assert_eq!(scripted.access_reviews.load(Ordering::SeqCst), 2);
    for _ in 0..2 {
        let _ = auth.check(&Method::GET, "/drift", &bearer("broken")).await;
        let _ = auth
            .check(&Method::GET, "/drift", &bearer("sar-down"))
            .await;
    }
    assert_eq!(scripted.token_reviews.load(Ordering::SeqCst), 5);
    assert_eq!(scripted.access_reviews.load(Ordering::SeqCst), 4);

    let (uncached, scripted) = guard(Duration::ZERO);
    for _ in 0..2 {
        assert!(uncached
            .check(&Method::GET, "/metrics", &bearer("scraper"))
            .await
            .is_ok());
    }
    assert_eq!(scripted.token_reviews.load(Ordering::SeqCst), 2);
}

/// proxy.go `GetRequestAttributes`: the verb from the method, the path without the query.
#[tokio::test]
async fn the_review_asks_for_the_path_and_the_methods_verb() {
    let (auth, scripted) = guard(Duration::from_secs(60));
    let _ = auth.check(&Method::GET, "/drift", &bearer("reader")).await;
    let _ = auth.check(&Method::POST, "/drift", &bearer("reader")).await;
    let _ = auth.check(&Method::PUT, "/", &bearer("reader")).await;
    let _ = auth.check(&Method::PATCH, "/", &bearer("reader")).await;
    let _ = auth
        .check(&Method::DELETE, "/locks", &bearer("reader"))
        .await;
    let _ = auth
        .check(&Method::OPTIONS, "/locks", &bearer("reader"))
        .await;
    let asked: Vec<(String, String)> = scripted
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|(_, verb, path)| (verb.clone(), path.clone()))
        .collect();
    let expected = [
        ("get", "/drift"),
        ("create", "/drift"),
        ("update", "/"),
        ("patch", "/"),
        ("delete", "/locks"),
        ("options", "/locks"),
    ];
    assert_eq!(
        asked,
        expected
            .map(|(v, p)| (v.to_string(), p.to_string()))
            .to_vec()
    );
}

/// k8s.io/apiserver/pkg/authentication/request/bearertoken: `strings.TrimSpace`, then
/// `strings.SplitN(auth, " ", 3)`, scheme compared lower-cased, empty tokens refused.
#[test]
fn bearer_tokens_are_read_as_the_api_server_reads_them() {
    let read = |value: &str| {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, value.parse().unwrap());
        bearer_token(&headers).map(str::to_string)
    };
    assert_eq!(read("Bearer abc").as_deref(), Some("abc"));
    assert_eq!(read("bearer abc").as_deref(), Some("abc"));
    assert_eq!(read("  BEARER abc  ").as_deref(), Some("abc"));
    assert_eq!(read("Bearer abc def").as_deref(), Some("abc"));
    assert_eq!(read("Bearer  abc"), None);
    assert_eq!(read("Bearer"), None);
    assert_eq!(read("Basic dTpw"), None);
    assert_eq!(bearer_token(&HeaderMap::new()), None);
}

#[test]
fn the_cache_is_bounded_and_forgets_the_oldest() {
    let cache = Cache::new(Duration::from_secs(60), 3);
    for i in 0..5u8 {
        cache.insert([i; 32], i);
    }
    assert_eq!(cache.len(), 3);
    assert_eq!(cache.get(&[0; 32]), None);
    assert_eq!(cache.get(&[4; 32]), Some(4));
}
