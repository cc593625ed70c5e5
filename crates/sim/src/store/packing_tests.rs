//! Stored texts packed with the trained dictionary read back as they were written.
//! Expected values are what each test wrote (names, data, the resourceVersion each write
//! answered), not what the store computes.

use super::*;

fn configmap(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": format!("cm-{i}"), "labels": {"app": format!("app-{}", i % 13)}},
        "data": {"index": i.to_string(), "color": "blue"}})
}

#[test]
fn objects_stored_past_the_training_read_back_as_written() {
    let store = Store::new(100);
    let cms = store.resolve("", "v1", "configmaps").unwrap();
    let ctx = WriteCtx::new("test");
    let count = TRAIN_AT + 10;
    let mut written = Vec::new();
    for i in 0..count {
        let created = store
            .create(&cms, Some("default"), configmap(i), &ctx)
            .unwrap();
        written.push(created["metadata"]["resourceVersion"].clone());
    }
    for (i, rv) in written.iter().enumerate() {
        let name = format!("cm-{i}");
        let stored = store.get_stored(&cms, Some("default"), &name).unwrap();
        assert!(stored.is_trained(), "{name}: packed with the dictionary");
        let got = stored.value();
        assert_eq!(got["metadata"]["resourceVersion"], *rv, "{name}");
        assert_eq!(got["data"]["index"], json!(i.to_string()), "{name}");
        assert_eq!(*stored.json(), serde_json::to_vec(&got).unwrap(), "{name}");
    }
    let page = store
        .list_page(
            &cms,
            &ListParams {
                namespace: Some("default".into()),
                ..ListParams::default()
            },
        )
        .unwrap();
    let mut indexes: Vec<usize> = page
        .items
        .iter()
        .map(|s| {
            s.value()["data"]["index"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    indexes.sort_unstable();
    assert_eq!(indexes, (0..count).collect::<Vec<_>>());
}

#[test]
fn a_text_holding_its_resource_version_twice_is_kept_whole() {
    let key: Key = ("default".into(), "x".into());
    let object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "x", "resourceVersion": "5"}, "spec": {"resourceVersion": "5"}});
    let stored = Stored::new(5, key.clone(), &object, Arc::from("example.com/v1"));
    assert!(stored.restamped(6).is_none(), "the digits are ambiguous");
    assert_eq!(*stored.json(), serde_json::to_vec(&object).unwrap());

    let once = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "resourceVersion": "5"}, "data": {"resourceVersion": "6"}});
    let stored = Stored::new(5, key, &once, Arc::from("v1"));
    let restamped = stored.restamped(70).unwrap().value();
    assert_eq!(restamped["metadata"]["resourceVersion"], "70");
    assert_eq!(restamped["data"]["resourceVersion"], "6");
}
