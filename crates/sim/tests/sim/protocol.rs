//! The simulator's wire protocol as the real `kube` client sees it: paging with continue
//! tokens, watches with bookmarks, 410 Expired and the watcher's recovery, optimistic
//! concurrency, Status error bodies, selectors and fault injection.

use crate::support::{first_watch_event, SimProc};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::time::timeout;

const T: Duration = Duration::from_secs(15);

/// A ConfigMap labelled `made-by=test`, so lists can leave out the `kube-root-ca.crt`
/// ConfigMap the simulator (like kube-controller-manager) puts in every namespace.
fn cm(name: &str, labels: Value) -> ConfigMap {
    let mut labels = labels;
    labels["made-by"] = json!("test");
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": {"k": name}}))
    .unwrap()
}

/// Lists only what the test made.
fn ours() -> ListParams {
    ListParams::default().labels("made-by=test")
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
    let sim = SimProc::start();
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
    let mut lp = ours().limit(3);
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

    let page = api.list(&ours().limit(2)).await.unwrap();
    let token = page.metadata.continue_.clone().unwrap();
    // Like an etcd compaction past the token's revision.
    api.create(&PostParams::default(), &cm("cm-later", json!({})))
        .await
        .unwrap();
    sim.admin("compact", json!({})).await;
    let err = api_err(
        api.list(&ours().limit(2).continue_token(&token))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (410, "Expired"));
}

#[tokio::test]
async fn selectors_filter_lists() {
    let sim = SimProc::start();
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
    let sel = |s: &str| ListParams::default().labels(&format!("{s},made-by=test"));
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
    let by_name = ours().fields("metadata.name=c");
    assert_eq!(names(&api.list(&by_name).await.unwrap()), ["c"]);
    // Cluster-wide list sees other namespaces too, filtered by namespace field.
    let all: Api<ConfigMap> = Api::all(sim.client().await);
    let in_default = all
        .list(&ours().fields("metadata.namespace=default"))
        .await
        .unwrap();
    assert_eq!(in_default.items.len(), 3);
    let err = api_err(api.list(&sel("tier in web")).await.unwrap_err());
    assert_eq!(err.code, 400);
}

#[tokio::test]
async fn watch_streams_changes_and_bookmarks() {
    let sim = SimProc::start_with(driftd_sim::SimOptions {
        bookmark_interval: Duration::from_secs(1),
        ..Default::default()
    });
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
    match first_watch_event(&api, &WatchParams::default(), &rv).await {
        WatchEvent::Error(s) => assert_eq!((s.code, s.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }
}

#[tokio::test]
async fn watcher_relists_after_410_and_survives_closed_streams() {
    let sim = SimProc::start();
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
    let sim = SimProc::start();
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

    let patch = |ctype: &'static str, query: &'static str| {
        reqwest::Client::new()
            .patch(format!(
                "{}/api/v1/namespaces/default/configmaps/c{query}",
                sim.url
            ))
            .header("content-type", ctype)
            .body("data: {k: v}")
            .send()
    };
    // Wrongly typed fields fail like kube-apiserver's decoder (kubectl would refuse to send them).
    let resp = reqwest::Client::new()
        .post(format!(
            "{}/apis/apps/v1/namespaces/default/deployments",
            sim.url
        ))
        .json(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d"}, "spec": {"replicas": "two"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32");

    // Unknown patch types are 415.
    assert_eq!(
        patch("application/xml", "")
            .await
            .unwrap()
            .status()
            .as_u16(),
        415
    );
    // Server-side apply needs a fieldManager (422), then works with YAML.
    let resp = patch("application/apply-patch+yaml", "").await.unwrap();
    assert_eq!(resp.status().as_u16(), 422);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("fieldManager: Required value"),
        "{body}"
    );
    // data.k was last written by the replace above (a manager with no name: kube-rs sends no
    // User-Agent), so changing it conflicts unless forced.
    let resp = patch("application/apply-patch+yaml", "?fieldManager=test")
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 409);
    let resp = patch(
        "application/apply-patch+yaml",
        "?fieldManager=test&force=true",
    )
    .await
    .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(api.get("c").await.unwrap().data.unwrap()["k"], "v");
}

#[tokio::test]
async fn injected_faults_fail_the_next_requests_only() {
    let sim = SimProc::start();
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
    let sim = SimProc::start();
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

#[tokio::test]
async fn finalizers_hold_deletion_and_orphan_keeps_dependents() {
    let sim = SimProc::start();
    let client = sim.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut held = cm("held", json!({}));
    held.metadata.finalizers = Some(vec!["example.com/keep".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    let first = api.delete("held", &Default::default()).await.unwrap();
    let terminating = first
        .left()
        .expect("object returned while finalizers hold it");
    assert!(terminating.metadata.deletion_timestamp.is_some());
    assert!(api
        .get("held")
        .await
        .unwrap()
        .metadata
        .deletion_timestamp
        .is_some());
    api.patch(
        "held",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(api_err(api.get("held").await.unwrap_err()).code, 404);

    // Orphan propagation: the owner goes, the dependent stays without the reference.
    let owner = api
        .create(&PostParams::default(), &cm("owner", json!({})))
        .await
        .unwrap();
    let mut dependent = cm("dependent", json!({}));
    dependent.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
        "uid": owner.metadata.uid.clone().unwrap()}))
    .unwrap()]);
    api.create(&PostParams::default(), &dependent)
        .await
        .unwrap();
    api.delete("owner", &DeleteParams::orphan()).await.unwrap();
    let kept = api.get("dependent").await.unwrap();
    assert!(kept
        .metadata
        .owner_references
        .unwrap_or_default()
        .is_empty());

    // Background propagation (the default) removes dependents with their owner.
    let owner = api
        .create(&PostParams::default(), &cm("owner2", json!({})))
        .await
        .unwrap();
    let mut dependent = cm("dependent2", json!({}));
    dependent.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner2",
        "uid": owner.metadata.uid.clone().unwrap()}))
    .unwrap()]);
    api.create(&PostParams::default(), &dependent)
        .await
        .unwrap();
    api.delete("owner2", &DeleteParams::background())
        .await
        .unwrap();
    assert_eq!(api_err(api.get("dependent2").await.unwrap_err()).code, 404);
}

#[tokio::test]
async fn streaming_list_watch_exact_lists_and_watch_timeouts() {
    let sim = SimProc::start();
    let client = sim.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let a = api
        .create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    let rv_after_a = a.metadata.resource_version.clone().unwrap();
    api.create(&PostParams::default(), &cm("b", json!({})))
        .await
        .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();

    // resourceVersionMatch=Exact serves the list as it was at that resourceVersion.
    let then = api
        .list(
            &ours()
                .at(&rv_after_a)
                .matching(kube::api::VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(names(&then), ["a"]);
    assert_eq!(names(&api.list(&ours()).await.unwrap()), ["b"]);

    // kube-runtime's streaming-list mode: sendInitialEvents + the initial-events-end bookmark.
    let config = watcher::Config::default()
        .labels("made-by=test")
        .streaming_lists();
    let mut events = watcher(api.clone(), config).boxed();
    let mut initial = Vec::new();
    timeout(T, async {
        loop {
            match events.try_next().await.unwrap().unwrap() {
                watcher::Event::InitApply(c) => initial.push(c.metadata.name.unwrap()),
                watcher::Event::InitDone => break,
                _ => {}
            }
        }
    })
    .await
    .expect("initial events end");
    assert_eq!(initial, ["b"]);

    // timeoutSeconds ends the stream cleanly.
    let mut stream = api
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    let ended = timeout(T, async {
        while let Some(e) = stream.try_next().await.unwrap() {
            let _ = e;
        }
    })
    .await;
    assert!(ended.is_ok(), "watch with timeoutSeconds=1 did not end");
}

#[tokio::test]
async fn leases_are_ordinary_resources_with_optimistic_concurrency() {
    use k8s_openapi::api::coordination::v1::Lease;
    let sim = SimProc::start();
    let leases: Api<Lease> = Api::namespaced(sim.client().await, "kube-node-lease");
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "driftd"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}))
    .unwrap();
    let created = leases.create(&PostParams::default(), &lease).await.unwrap();
    let mut renewed = created.clone();
    renewed.spec.as_mut().unwrap().holder_identity = Some("b".into());
    leases
        .replace("driftd", &PostParams::default(), &renewed)
        .await
        .unwrap();
    // A second candidate holding the old resourceVersion loses the race.
    let err = api_err(
        leases
            .replace("driftd", &PostParams::default(), &renewed)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    let now = leases.get("driftd").await.unwrap();
    assert_eq!(now.spec.unwrap().holder_identity.as_deref(), Some("b"));
}

#[tokio::test]
async fn label_selected_watches_see_objects_enter_and_leave() {
    let sim = SimProc::start();
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    let mut stream = api
        .watch(
            &WatchParams::default().labels("team=a").disable_bookmarks(),
            "0",
        )
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("x", json!({"team": "b"})))
        .await
        .unwrap();
    let relabel =
        |team: &str| kube::api::Patch::Merge(json!({"metadata": {"labels": {"team": team}}}));
    api.patch("x", &Default::default(), &relabel("a"))
        .await
        .unwrap();
    api.patch("x", &Default::default(), &relabel("b"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let e = timeout(T, stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        seen.push(match e {
            WatchEvent::Added(c) => format!("ADDED {}", c.metadata.labels.unwrap()["team"]),
            WatchEvent::Deleted(c) => format!("DELETED {}", c.metadata.labels.unwrap()["team"]),
            other => panic!("unexpected {other:?}"),
        });
    }
    // Entering the selector reads as ADDED, leaving it as DELETED (with the new labels).
    assert_eq!(seen, ["ADDED a", "DELETED b"]);
}

#[tokio::test]
async fn kube_runtime_recorder_creates_then_bumps_a_series() {
    use k8s_openapi::api::core::v1::{Event as CoreEvent, ObjectReference};
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let sim = SimProc::start();
    let client = sim.client().await;
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "driftd".into(),
            instance: Some("driftd-0".into()),
        },
    );
    let reference = ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("Deployment".into()),
        name: Some("web".into()),
        namespace: Some("default".into()),
        ..Default::default()
    };
    let event = Event {
        type_: EventType::Warning,
        reason: "Drifted".into(),
        note: Some("spec.replicas differs".into()),
        action: "Compare".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await.unwrap();
    recorder.publish(&event, &reference).await.unwrap();
    // Read back through core/v1, as `kubectl get events` would.
    let core: Api<CoreEvent> = Api::namespaced(client, "default");
    let events = core
        .list(&ListParams::default().fields("involvedObject.name=web"))
        .await
        .unwrap();
    assert_eq!(
        events.items.len(),
        1,
        "the repeat bumps the series instead of adding an event"
    );
    let e = &events.items[0];
    assert_eq!(e.reason.as_deref(), Some("Drifted"));
    assert_eq!(e.message.as_deref(), Some("spec.replicas differs"));
    assert_eq!(e.reporting_component.as_deref(), Some("driftd"));
    assert_eq!(e.series.as_ref().and_then(|s| s.count), Some(2));
}

#[tokio::test]
async fn aggregated_and_legacy_discovery_agree() {
    use kube::discovery::{Discovery, Scope};
    let sim = SimProc::start();
    let client = sim.client().await;
    let gvk = kube::api::GroupVersionKind::gvk("apps", "v1", "Deployment");
    for discovery in [
        Discovery::new(client.clone())
            .run_aggregated()
            .await
            .unwrap(),
        Discovery::new(client.clone()).run().await.unwrap(),
    ] {
        let (ar, caps) = discovery.resolve_gvk(&gvk).expect("deployments discovered");
        assert_eq!(ar.plural, "deployments");
        assert_eq!(caps.scope, Scope::Namespaced);
        let mut subs: Vec<String> = caps
            .subresources
            .iter()
            .map(|(sub, _)| sub.plural.clone())
            .collect();
        subs.sort();
        assert_eq!(subs, ["scale", "status"]);
        let ns = kube::api::GroupVersionKind::gvk("", "v1", "Namespace");
        assert_eq!(discovery.resolve_gvk(&ns).unwrap().1.scope, Scope::Cluster);
    }
}

#[tokio::test]
async fn library_simulator_faults_and_stops_when_dropped() {
    use driftd_sim::Simulator;
    let sim = Simulator::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let kc = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig_yaml()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    sim.fail_next("configmaps", 1, 500);
    assert_eq!(api_err(api.list(&ours()).await.unwrap_err()).code, 500);
    api.list(&ours()).await.unwrap();

    let url = sim.url();
    drop(sim);
    let deadline = std::time::Instant::now() + T;
    while reqwest::get(format!("{url}/version")).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "simulator still answering after drop"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
