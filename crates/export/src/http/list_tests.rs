//! `/drift` and `/` in pages over HTTP. Counts and orders are derived by hand from the
//! entries put in; the paging semantics themselves are tested against Kubernetes' cases in
//! the engine's index.

use super::super::{router, Handles};
use crate::metrics::Metrics;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use driftd_core::report::DriftClass;
use driftd_engine::{DriftIndex, Leadership, SharedIndex};
use serde_json::Value;
use std::sync::{Arc, RwLock};
use tower::ServiceExt;

fn handles(index: &SharedIndex) -> Handles {
    Handles {
        index: index.clone(),
        metrics: Arc::new(Metrics::new(index.clone(), Leadership::always())),
        leadership: Leadership::always(),
        history: None,
    }
}

fn put(index: &SharedIndex, namespace: &str, name: &str, class: DriftClass) {
    let key = driftd_engine::test_support::configmap(namespace, name);
    let since = "2026-11-30T10:00:00Z".parse().unwrap();
    let entry = driftd_engine::test_support::entry("shop", &key, class, since);
    index.write().unwrap().upsert(key, entry);
}

/// `count` drifting ConfigMaps `cm-0000`.. in namespace `shop`.
fn index_with(count: usize) -> SharedIndex {
    let index = Arc::new(RwLock::new(DriftIndex::new(10)));
    for i in 0..count {
        put(&index, "shop", &format!("cm-{i:04}"), DriftClass::Modified);
    }
    index
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

async fn get_json(handles: &Handles, uri: &str) -> (StatusCode, Value) {
    let (status, body) = get(handles, uri).await;
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{uri}: {e}: {body}"));
    (status, json)
}

fn names(body: &Value) -> Vec<String> {
    body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn drift_answers_pages_of_500_and_following_them_lists_everything_once() {
    let handles = handles(&index_with(1203));
    let (status, first) = get_json(&handles, "/drift").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&first).len(), 500, "the default page size");
    assert_eq!(first["remainingItemCount"], 703);
    let mut all = names(&first);
    let mut token = first["continue"].as_str().unwrap().to_string();
    let mut pages = 1;
    loop {
        let (status, page) = get_json(&handles, &format!("/drift?continue={token}")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        pages += 1;
        all.extend(names(&page));
        match page["continue"].as_str() {
            Some(next) => token = next.to_string(),
            None => {
                assert!(page.get("remainingItemCount").is_none(), "{page}");
                break;
            }
        }
    }
    assert_eq!(pages, 3, "500 + 500 + 203");
    let expected: Vec<String> = (0..1203).map(|i| format!("cm-{i:04}")).collect();
    assert_eq!(all, expected, "every entry once, in name order");
}

#[tokio::test]
async fn a_list_keeps_its_first_pages_state_while_drift_changes() {
    let index = index_with(5);
    let handles = handles(&index);
    let (_, first) = get_json(&handles, "/drift?limit=2").await;
    assert_eq!(names(&first), ["cm-0000", "cm-0001"]);
    assert_eq!(first["remainingItemCount"], 3);
    // Drift changes: one resolves, one appears, one changes class.
    put(&index, "shop", "cm-0003", DriftClass::InSync);
    put(&index, "shop", "cm-0002a", DriftClass::Missing);
    put(&index, "shop", "cm-0004", DriftClass::Missing);
    let token = first["continue"].as_str().unwrap();
    let (_, second) = get_json(&handles, &format!("/drift?limit=2&continue={token}")).await;
    assert_eq!(names(&second), ["cm-0002", "cm-0003"]);
    let token = second["continue"].as_str().unwrap();
    let (_, third) = get_json(&handles, &format!("/drift?limit=2&continue={token}")).await;
    assert_eq!(names(&third), ["cm-0004"]);
    assert_eq!(
        third["objects"][0]["class"], "modified",
        "as of the first page"
    );
    assert!(third.get("continue").is_none());
    // A new list sees the change.
    let (_, fresh) = get_json(&handles, "/drift?limit=10").await;
    assert_eq!(
        names(&fresh),
        ["cm-0000", "cm-0001", "cm-0002", "cm-0002a", "cm-0004"]
    );
}

#[tokio::test]
async fn bad_limits_and_tokens_are_400_and_a_token_from_elsewhere_is_410_that_continues() {
    let handles_a = handles(&index_with(5));
    let handles_b = handles(&index_with(5));
    for uri in ["/drift?limit=-1", "/drift?limit=ten"] {
        let (status, body) = get(&handles_a, uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}");
        assert!(body.contains("limit must be a count"), "{body}");
    }
    // 0 is the default size; over the maximum is lowered, not refused.
    for uri in ["/drift?limit=0", "/drift?limit=1000000"] {
        let (status, body) = get_json(&handles_a, uri).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(names(&body).len(), 5);
    }

    let (status, body) = get_json(&handles_a, "/drift?continue=garbage!").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "BadRequest");
    assert_eq!(body["code"], 400);

    let (_, first) = get_json(&handles_a, "/drift?limit=2").await;
    let token = first["continue"].as_str().unwrap();
    let (status, body) = get_json(
        &handles_a,
        &format!("/drift?limit=2&class=missing&continue={token}"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "other filters: {body}");
    assert!(body["message"].as_str().unwrap().contains("other filters"));

    // Replica B never saw the list: 410 Expired, as kube-apiserver answers a compacted
    // token, with a token for the rest of the current state.
    let (status, gone) = get_json(&handles_b, &format!("/drift?limit=2&continue={token}")).await;
    assert_eq!(status, StatusCode::GONE);
    assert_eq!(gone["kind"], "Status");
    assert_eq!(gone["status"], "Failure");
    assert_eq!(gone["reason"], "Expired");
    assert_eq!(gone["code"], 410);
    assert!(gone["message"]
        .as_str()
        .unwrap()
        .starts_with("The provided continue parameter is too old"));
    let next = gone["metadata"]["continue"].as_str().unwrap();
    let (status, rest) = get_json(&handles_b, &format!("/drift?limit=10&continue={next}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&rest), ["cm-0002", "cm-0003", "cm-0004"]);
}

#[tokio::test]
async fn the_page_shows_one_page_and_links_to_the_next() {
    let handles = handles(&index_with(5));
    let (status, html) = get(&handles, "/?limit=2").await;
    assert_eq!(status, StatusCode::OK);
    let needle = "id=\"next-page\" href=\"";
    let start = html.find(needle).expect("a next link") + needle.len();
    let href = &html[start..start + html[start..].find('"').unwrap()];
    let href = href.replace("&amp;", "&");
    assert!(href.starts_with("?limit=2&continue="), "{href}");
    assert!(html.contains("(3 more)"), "{html}");
    assert!(
        html.contains("cm-0001") && !html.contains("cm-0002"),
        "{html}"
    );
    let (status, second) = get(&handles, &format!("/{href}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(second.contains("cm-0002") && second.contains("cm-0003"));
    assert!(!second.contains("cm-0001"));

    let (status, html) = get(&handles, "/?continue=garbage!").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("invalid continue token"), "{html}");
}
