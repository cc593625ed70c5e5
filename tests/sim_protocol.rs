//! The simulator's wire protocol as the real `kube` client sees it: paging with continue
//! tokens, watches with bookmarks, 410 Expired and the watcher's recovery, optimistic
//! concurrency, Status error bodies, selectors and fault injection.

mod sim_support;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::{json, Value};
use sim_support::SimProc;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::timeout;

const T: Duration = Duration::from_secs(15);

fn cm(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": {"k": name}}))
    .unwrap()
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn names(list: &kube::core::ObjectList<ConfigMap>) -> Vec<String> {
    list.items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect()
}

#[tokio::test]
async fn list_pages_with_continue_tokens_and_expires_them_on_compaction() {
    let sim = SimProc::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    for i in 0..7 {
        api.create(
            &PostParams::default(),
            &cm(&format!("cm-{i}"), json!({"n": i.to_string()})),
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    let mut lp = ListParams::default().limit(3);
    let first = api.list(&lp).await.unwrap();
    assert_eq!(first.items.len(), 3);
    let snapshot_rv = first.metadata.resource_version.clone().unwrap();
    seen.extend(names(&first));
    let mut token = first.metadata.continue_.clone();
    // A change after the first page does not show up in later pages (consistent snapshot).
    api.create(&PostParams::default(), &cm("cm-late", json!({})))
        .await
        .unwrap();
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        lp = lp.continue_token(&t);
        let page = api.list(&lp).await.unwrap();
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(snapshot_rv.as_str())
        );
        seen.extend(names(&page));
        token = page.metadata.continue_.clone();
    }
    let expected: Vec<String> = (0..7).map(|i| format!("cm-{i}")).collect();
    assert_eq!(seen, expected);

    let page = api.list(&ListParams::default().limit(2)).await.unwrap();
    let token = page.metadata.continue_.clone().unwrap();
    // Like an etcd compaction past the token's revision.
    api.create(&PostParams::default(), &cm("cm-later", json!({})))
        .await
        .unwrap();
    sim.admin("compact", json!({})).await;
    let err = api_err(
        api.list(&ListParams::default().limit(2).continue_token(&token))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
}

#[tokio::test]
async fn selectors_filter_lists() {
    let sim = SimProc::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    api.create(
        &PostParams::default(),
        &cm("a", json!({"tier": "web", "env": "prod"})),
    )
    .await
    .unwrap();
    api.create(&PostParams::default(), &cm("b", json!({"tier": "db"})))
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &cm("c", json!({"tier": "cache", "env": "dev"})),
    )
    .await
    .unwrap();
    let sel = |s: &str| ListParams::default().labels(s);
    assert_eq!(
        names(&api.list(&sel("tier in (web,db)")).await.unwrap()),
        ["a", "b"]
    );
    assert_eq!(
        names(&api.list(&sel("tier notin (web),env")).await.unwrap()),
        ["c"]
    );
    assert_eq!(names(&api.list(&sel("!env")).await.unwrap()), ["b"]);
    assert_eq!(
        names(&api.list(&sel("env!=prod")).await.unwrap()),
        ["b", "c"]
    );
    assert_eq!(names(&api.list(&sel("tier==db")).await.unwrap()), ["b"]);
    let by_name = ListParams::default().fields("metadata.name=c");
    assert_eq!(names(&api.list(&by_name).await.unwrap()), ["c"]);
    // Cluster-wide list sees other namespaces too, filtered by namespace field.
    let all: Api<ConfigMap> = Api::all(sim.client().await);
    let in_default = all
        .list(&ListParams::default().fields("metadata.namespace=default"))
        .await
        .unwrap();
    assert_eq!(in_default.items.len(), 3);
    let err = api_err(api.list(&sel("tier in web")).await.unwrap_err());
    assert_eq!(err.code, 400);
}

#[tokio::test]
async fn watch_streams_changes_and_bookmarks() {
    let sim = SimProc::start(&["--bookmark-interval-secs", "1"]);
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let created = api
        .create(&PostParams::default(), &cm("w", json!({})))
        .await
        .unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let mut patched = created.clone();
    patched.data = Some([("k".to_string(), "v2".to_string())].into());
    api.replace("w", &PostParams::default(), &patched)
        .await
        .unwrap();
    let mut saw_modified = false;
    let mut bookmark_rv = None;
    while !(saw_modified && bookmark_rv.is_some()) {
        match timeout(T, stream.try_next())
            .await
            .expect("watch event in time")
            .unwrap()
            .unwrap()
        {
            WatchEvent::Modified(c) => {
                assert_eq!(c.data.unwrap()["k"], "v2");
                saw_modified = true;
            }
            WatchEvent::Bookmark(b) => bookmark_rv = Some(b.metadata.resource_version),
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert!(bookmark_rv.unwrap().parse::<u64>().unwrap() > rv.parse::<u64>().unwrap());

    // After a compaction, resuming from the old resourceVersion is an ERROR 410 event.
    sim.admin("compact", json!({})).await;
    api.create(&PostParams::default(), &cm("after", json!({})))
        .await
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    match timeout(T, stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        WatchEvent::Error(s) => assert_eq!((s.code, s.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }
}

#[tokio::test]
async fn watcher_relists_after_410_and_survives_closed_streams() {
    let sim = SimProc::start(&[]);
    let client = sim.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut inits = 0;
    let mut applied = BTreeSet::new();
    // Drains events until `done` holds, counting re-lists (Init events).
    macro_rules! until {
        ($what:expr, $done:expr) => {
            timeout(T, async {
                while !$done(&inits, &applied) {
                    match events.next().await.expect("watcher stream ended") {
                        Ok(watcher::Event::Init) => inits += 1,
                        Ok(watcher::Event::Apply(c)) | Ok(watcher::Event::InitApply(c)) => {
                            applied.insert(c.metadata.name.unwrap());
                        }
                        Ok(_) => {}
                        Err(_) => {} // the watcher retries by itself
                    }
                }
            })
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {}", $what))
        };
    }
    until!("initial list", |i: &i32, _: &BTreeSet<String>| *i == 1);
    api.create(&PostParams::default(), &cm("one", json!({})))
        .await
        .unwrap();
    until!("first object", |_: &i32, a: &BTreeSet<String>| a
        .contains("one"));

    // Move the global resourceVersion on, compact, and cut the stream: the watcher's resume
    // point is now too old, so it must get 410 and list again.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), "default");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "bump"}})).unwrap(),
        )
        .await
        .unwrap();
    sim.admin("compact", json!({})).await;
    sim.admin("close-watches", json!({})).await;
    until!("re-list after 410", |i: &i32, _: &BTreeSet<String>| *i >= 2);
    api.create(&PostParams::default(), &cm("two", json!({})))
        .await
        .unwrap();
    until!("object after recovery", |_: &i32, a: &BTreeSet<String>| a
        .contains("two"));
}

#[tokio::test]
async fn stale_updates_conflict_and_errors_are_status_objects() {
    let sim = SimProc::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let v1 = api
        .create(&PostParams::default(), &cm("c", json!({})))
        .await
        .unwrap();
    let mut v2 = v1.clone();
    v2.data = Some([("k".to_string(), "new".to_string())].into());
    api.replace("c", &PostParams::default(), &v2).await.unwrap();
    let err = api_err(
        api.replace("c", &PostParams::default(), &v2)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(err.message, "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again");

    let err = api_err(api.get("missing").await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "configmaps \"missing\" not found");
    let details = err.details.unwrap();
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("missing", "configmaps")
    );

    let deploys: Api<Deployment> = Api::namespaced(sim.client().await, "default");
    let err = api_err(deploys.get("web").await.unwrap_err());
    assert_eq!(err.message, "deployments.apps \"web\" not found");
    assert_eq!(err.details.unwrap().group, "apps");

    let elsewhere: Api<ConfigMap> = Api::namespaced(sim.client().await, "ghost");
    let err = api_err(
        elsewhere
            .create(&PostParams::default(), &cm("x", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "namespaces \"ghost\" not found")
    );

    let err = api_err(
        api.create(&PostParams::default(), &cm("c", json!({})))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));

    // The raw body is a v1 Status, as clients other than kube-rs parse it.
    let raw: Value = reqwest::get(format!(
        "{}/api/v1/namespaces/default/configmaps/missing",
        sim.url
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(raw["kind"], "Status");
    assert_eq!(raw["apiVersion"], "v1");
    assert_eq!(raw["status"], "Failure");
    assert_eq!(raw["code"], 404);

    // Unsupported patch types are 415, like a server without server-side apply.
    let resp = reqwest::Client::new()
        .patch(format!(
            "{}/api/v1/namespaces/default/configmaps/c",
            sim.url
        ))
        .header("content-type", "application/apply-patch+yaml")
        .body("data: {k: v}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 415);
}

#[tokio::test]
async fn injected_faults_fail_the_next_requests_only() {
    let sim = SimProc::start(&[]);
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    // 500, not 503: kube's client retries 503s on its own.
    sim.admin(
        "faults",
        json!({"resource": "configmaps", "verb": "list", "count": 2, "code": 500}),
    )
    .await;
    // Gets are not affected by a list fault.
    assert_eq!(api_err(api.get("x").await.unwrap_err()).code, 404);
    for _ in 0..2 {
        let err = api_err(api.list(&ListParams::default()).await.unwrap_err());
        assert_eq!((err.code, err.reason.as_str()), (500, "InternalError"));
    }
    api.list(&ListParams::default()).await.unwrap();

    sim.admin("latency", json!({"millis": 300})).await;
    let start = std::time::Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(start.elapsed() >= Duration::from_millis(300));
    sim.admin("latency", json!({"millis": 0})).await;
}

#[tokio::test]
async fn scale_subresource_and_status_are_separate_from_spec() {
    let sim = SimProc::start(&[]);
    let client = sim.client().await;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
        "status": {"replicas": 99}}))
    .unwrap();
    let created = api.create(&PostParams::default(), &d).await.unwrap();
    assert_ne!(
        created.status.and_then(|s| s.replicas),
        Some(99),
        "status is not set on create"
    );

    api.patch_scale(
        "web",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"spec": {"replicas": 2}})),
    )
    .await
    .unwrap();
    let scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    let d = api.get("web").await.unwrap();
    assert_eq!(d.metadata.generation, Some(2));
    let rs: Api<k8s_openapi::api::apps::v1::ReplicaSet> =
        Api::namespaced(sim.client().await, "default");
    let deadline = std::time::Instant::now() + T;
    loop {
        let d = api.get("web").await.unwrap();
        if d.status.as_ref().and_then(|s| s.ready_replicas) == Some(2) {
            assert_eq!(d.status.unwrap().observed_generation, Some(2));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "deployment never became ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        rs.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}
