//! An etcd restore in the simulator (`/_sim/snapshot`, `/_sim/restore`) and requests for a
//! resourceVersion the server has not reached, answered as kube-apiserver answers them.

use crate::support::{first_watch_event, SimProc};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use std::time::Duration;
use tokio::time::timeout;

/// A ConfigMap labelled `made-by=test`.
fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"made-by": "test"}}, "data": {"k": name}}))
    .unwrap()
}

fn names(api_list: &kube::core::ObjectList<ConfigMap>) -> Vec<String> {
    api_list
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect()
}

/// `/_sim/restore` goes back to the snapshot as an etcd restore does (lower resourceVersions,
/// no history, watches closed), and requests for a resourceVersion the server has not
/// reached get kube-apiserver's answers: a plain watch is accepted and silent (no bookmark
/// either), a watch-list waits 3 s then ends with 504 "Too large resource version", and a
/// watch from before the restore point is 410.
#[tokio::test]
async fn a_restore_goes_back_and_watches_ahead_of_the_server_wait() {
    let sim = SimProc::start_with(driftd_sim::SimOptions {
        bookmark_interval: Duration::from_millis(300),
        ..Default::default()
    });
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let snapshot = sim.admin("snapshot", json!({})).await;
    let at: u64 = snapshot["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    // Two writes past the snapshot: still ahead after one write following the restore.
    let b = api.create(&PostParams::default(), &cm("b2")).await.unwrap();
    let ahead = b.metadata.resource_version.unwrap();
    assert!(ahead.parse::<u64>().unwrap() > at + 1);

    let restored = sim.admin("restore", json!({})).await;
    assert_eq!(restored["resourceVersion"], at.to_string());
    assert_eq!(
        names(
            &api.list(&ListParams::default().labels("made-by=test"))
                .await
                .unwrap()
        ),
        ["a"]
    );
    let c = api.create(&PostParams::default(), &cm("c")).await.unwrap();
    assert_eq!(
        c.metadata.resource_version.unwrap(),
        (at + 1).to_string(),
        "the counter went back"
    );

    // A plain watch from `ahead` opens and says nothing, not even a bookmark, until the
    // server gets there.
    let mut silent = api
        .watch(&WatchParams::default(), &ahead)
        .await
        .unwrap()
        .boxed();
    assert!(
        timeout(Duration::from_millis(1500), silent.try_next())
            .await
            .is_err(),
        "a watch ahead of the server is silent"
    );

    // A watch-list from `ahead` waits 3 s, then fails with 504 Too large resource version.
    let started = std::time::Instant::now();
    match first_watch_event(&api, &WatchParams::streaming_lists(), &ahead).await {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (504, "Timeout"), "{s:?}");
            assert!(
                s.message
                    .starts_with("Timeout: Too large resource version: "),
                "{s:?}"
            );
            let details = s.details.unwrap();
            assert_eq!(details.causes[0].reason, "ResourceVersionTooLarge");
            assert_eq!(details.retry_after_seconds, 1);
        }
        other => panic!("expected 504, got {other:?}"),
    }
    assert!(started.elapsed() >= Duration::from_millis(2900));

    // Resuming from before the restore point: its history is gone.
    match first_watch_event(&api, &WatchParams::default(), &(at - 1).to_string()).await {
        WatchEvent::Error(s) => assert_eq!(s.code, 410),
        other => panic!("expected 410, got {other:?}"),
    }
}
