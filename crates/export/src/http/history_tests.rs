//! `/history` over HTTP: its parameters and answers, on episodes written to a store by hand.

use super::super::{router, Handles};
use super::*;
use crate::metrics::Metrics;
use axum::body::Body;
use axum::http::Request;
use driftd_engine::{DriftIndex, Leadership};
use driftd_k8s::ObjectKey;
use driftd_store::{Changer, Ending, EpisodeEnd, EpisodeWrite};
use std::sync::RwLock;
use tower::ServiceExt;

fn key(name: &str) -> ObjectKey {
    ObjectKey {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: Some("shop".into()),
        name: name.into(),
    }
}

/// `web` drifted (changed by kubectl-edit) from 10:00 to 10:30 and was reverted by
/// kubectl-client-side-apply; `api` has drifted since 11:00.
fn handles() -> Handles {
    let store = Store::open_in_memory().unwrap();
    let t = |s: &str| -> Timestamp { s.parse().unwrap() };
    let who = [Changer {
        manager: "kubectl-edit".into(),
        changed_at: Some("2026-12-01T09:59:58Z".into()),
        user: Some("alice".into()),
    }];
    let paths = ["/spec/replicas".to_string()];
    let (web, api) = (key("web"), key("api"));
    let drifting = |key, at| EpisodeWrite::Drifting {
        key,
        source: "shop",
        class: "modified",
        at,
        paths: &paths,
        who: &who,
        replaced: EpisodeEnd::ClassChanged,
    };
    store
        .write_episodes(&[drifting(&web, t("2026-12-01T10:00:00Z"))])
        .unwrap();
    store
        .write_episodes(&[EpisodeWrite::Resolved {
            key: &web,
            at: t("2026-12-01T10:30:00Z"),
            ending: Ending {
                how: EpisodeEnd::Reverted,
                by: Some("kubectl-client-side-apply"),
            },
        }])
        .unwrap();
    store
        .write_episodes(&[drifting(&api, t("2026-12-01T11:00:00Z"))])
        .unwrap();
    let index = Arc::new(RwLock::new(DriftIndex::new(10)));
    Handles {
        metrics: Arc::new(Metrics::new(index.clone(), Leadership::always())),
        index,
        leadership: Leadership::always(),
        history: Some(HistoryReader::new(store)),
    }
}

async fn get(handles: &Handles, uri: &str) -> (StatusCode, String) {
    let request = Request::get(uri).body(Body::empty()).unwrap();
    let response = router(handles.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

async fn names(handles: &Handles, uri: &str) -> Vec<String> {
    let (status, body) = get(handles, uri).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {body}");
    let response: HistoryResponse = serde_json::from_str(&body).unwrap();
    response
        .episodes
        .into_iter()
        .map(|e| e.object.name)
        .collect()
}

#[tokio::test]
async fn history_lists_each_episode_with_who_and_how_it_ended() {
    let handles = handles();
    let (status, body) = get(&handles, "/history").await;
    assert_eq!(status, StatusCode::OK);
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["truncated"], false);
    let web = &body["episodes"][1];
    assert_eq!(
        *web,
        serde_json::json!({
            "source": "shop",
            "object": {"group": "apps", "kind": "Deployment", "namespace": "shop", "name": "web"},
            "class": "modified",
            "opened_at": "2026-12-01T10:00:00Z",
            "last_seen": "2026-12-01T10:00:00Z",
            "closed_at": "2026-12-01T10:30:00Z",
            "paths": ["/spec/replicas"],
            "who": [{"manager": "kubectl-edit", "changed_at": "2026-12-01T09:59:58Z", "user": "alice"}],
            "ended": "reverted",
            "ended_by": "kubectl-client-side-apply",
        })
    );
    let api = &body["episodes"][0];
    assert_eq!(api["object"]["name"], "api");
    assert!(
        api.get("closed_at").is_none() && api.get("ended").is_none(),
        "{api}"
    );
}

#[tokio::test]
async fn history_takes_the_drift_filters_a_window_and_a_limit() {
    let handles = handles();
    assert_eq!(
        names(&handles, "/history?since=2026-12-01T10:31:00Z").await,
        ["api"]
    );
    assert_eq!(
        names(&handles, "/history?until=2026-12-01T10:59:59Z").await,
        ["web"]
    );
    assert_eq!(
        names(
            &handles,
            "/history?since=2026-12-01T10:30:00Z&until=2026-12-01T11:00:00Z"
        )
        .await,
        ["api", "web"],
        "both bounds are inclusive"
    );
    assert_eq!(
        names(
            &handles,
            "/history?source=shop&namespace=shop&kind=Deployment&class=modified"
        )
        .await,
        ["api", "web"]
    );
    assert!(names(&handles, "/history?class=missing").await.is_empty());
    assert!(names(&handles, "/history?namespace=other").await.is_empty());
    let (_, body) = get(&handles, "/history?limit=1").await;
    let response: HistoryResponse = serde_json::from_str(&body).unwrap();
    assert_eq!(response.episodes.len(), 1);
    assert!(response.truncated);
}

#[tokio::test]
async fn bad_parameters_are_refused_saying_what_is_valid() {
    let handles = handles();
    for (uri, says) in [
        (
            "/history?since=yesterday",
            "since must be an RFC 3339 time such as 2026-12-01T00:00:00Z, not `yesterday`",
        ),
        (
            "/history?klass=modified",
            "unknown parameter `klass`; valid: source, namespace, kind, class, since, until, limit",
        ),
        ("/history?class=modifed", "unknown class `modifed`"),
        ("/history?limit=-1", "limit must be a count of episodes"),
        (
            "/history?since=2026-12-02T00:00:00Z&until=2026-12-01T00:00:00Z",
            "is after until",
        ),
    ] {
        let (status, body) = get(&handles, uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(body.contains(says), "{uri}: {body}");
    }
}

#[tokio::test]
async fn a_server_without_a_database_says_so() {
    let handles = Handles {
        history: None,
        ..handles()
    };
    let (status, body) = get(&handles, "/history").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("no database"), "{body}");
}
