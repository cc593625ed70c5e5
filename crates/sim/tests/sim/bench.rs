//! The benchmark endpoints as a benchmark uses them: a bulk load over HTTP (array and
//! NDJSON), then a bulk edit while a kube client watches, with the delivery the simulator
//! reports matching what the client received.

use crate::support::SimProc;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::time::timeout;

const T: Duration = Duration::from_secs(20);

async fn post(sim: &SimProc, path: &str, body: String) -> (u16, Value) {
    let resp = reqwest::Client::new()
        .post(format!("{}/_sim/{path}", sim.url))
        .body(body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

fn cm(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns}, "data": {"color": "blue"}})
}

#[tokio::test]
async fn bulk_load_then_bulk_edit_reaches_a_watching_client() {
    let sim = SimProc::start();
    let api: Api<ConfigMap> = Api::namespaced(sim.client().await, "bench");

    let array = json!([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
        cm("bench", "a"), cm("bench", "b"),
    ]);
    let (code, report) = post(&sim, "bulk-load", array.to_string()).await;
    assert_eq!(code, 200, "{report}");
    assert_eq!(
        (report["created"].as_u64(), report["failed"].as_u64()),
        (Some(3), Some(0))
    );
    let ndjson = format!("{}\n{}\n", cm("bench", "c"), cm("nowhere", "d"));
    let (_, report) = post(&sim, "bulk-load", ndjson).await;
    assert_eq!(
        (report["created"].as_u64(), report["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(
        report["errors"][0].as_str().unwrap().contains("nowhere"),
        "{report}"
    );

    let listed = api.list(&ListParams::default()).await.unwrap();
    let mut names: Vec<String> = listed
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    names.sort();
    // The namespace controller's kube-root-ca.crt is there too.
    assert_eq!(names, ["a", "b", "c", "kube-root-ca.crt"]);

    // The edits cycle through every ConfigMap of every namespace (each namespace has its
    // kube-root-ca.crt), so the client watches them all.
    let everywhere: Api<ConfigMap> = Api::all(sim.client().await);
    let rv = everywhere
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = everywhere
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    let edits = 30;
    let (code, report) = post(
        &sim,
        "bulk-edit",
        json!({"count": edits, "kinds": ["configmaps"]}).to_string(),
    )
    .await;
    assert_eq!(code, 200, "{report}");
    assert_eq!(report["made"].as_u64(), Some(edits));
    let mut modified = 0;
    while modified < edits {
        match timeout(T, stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            WatchEvent::Modified(c) => {
                assert!(c
                    .data
                    .unwrap()
                    .values()
                    .any(|v| v.starts_with("bulk-edit-")));
                modified += 1;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    // Every edit of a watched kind reached this one stream, and the simulator counted it.
    let stats: Value = reqwest::get(format!("{}/_sim/stats", sim.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["bulkEdit"]["made"].as_u64(), Some(edits), "{stats}");
    assert_eq!(
        stats["bulkEdit"]["watchEventsDelivered"].as_u64(),
        Some(edits),
        "{stats}"
    );
    assert!(
        stats["bulkEdit"]["deliveryEventsPerSecond"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(stats["objects"].as_u64().unwrap() >= 4);

    let (code, _) = post(
        &sim,
        "bulk-edit",
        json!({"count": 1, "kinds": ["nosuch"]}).to_string(),
    )
    .await;
    assert_eq!(code, 400);
}
