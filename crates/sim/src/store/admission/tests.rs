//! The chain as the simulator runs it on a create: the expected objects and messages are
//! the ones the Kubernetes documentation shows from a real cluster (`kubernetes/website`,
//! `content/en/docs/tasks/administer-cluster/manage-resources/`, with the example files
//! under `content/en/examples/admin/resource/`), or hand-derived from the plugins'
//! sources where named.

use super::super::{Store, WriteCtx};
use super::ApiError;
use serde_json::{json, Value};

fn create(
    store: &Store,
    group: &str,
    plural: &str,
    ns: Option<&str>,
    obj: Value,
) -> Result<Value, ApiError> {
    let info = store.resolve(group, "v1", plural).unwrap();
    store.create(&info, ns, obj, &WriteCtx::new("kubectl-client-side-apply"))
}

fn limit_range(name: &str, limits: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name}, "spec": {"limits": limits}})
}

fn pod(name: &str, resources: Option<Value>) -> Value {
    let mut c = json!({"name": format!("{name}-ctr"), "image": "nginx"});
    if let Some(r) = resources {
        c["resources"] = r;
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [c]}})
}

#[test]
fn a_pod_in_a_namespace_with_a_limit_range_gets_its_defaults() {
    let store = Store::new(100);
    // memory-defaults.yaml, in the namespace (the simulator's `default`).
    let lr = limit_range(
        "mem-limit-range",
        json!([{"default": {"memory": "512Mi"},
        "defaultRequest": {"memory": "256Mi"}, "type": "Container"}]),
    );
    create(&store, "", "limitranges", Some("default"), lr).unwrap();
    // memory-default-namespace.md: "a memory request of 256 MiB and a memory limit of 512 MiB".
    let created = create(
        &store,
        "",
        "pods",
        Some("default"),
        pod("default-mem-demo", None),
    )
    .unwrap();
    assert_eq!(
        created["spec"]["containers"][0]["resources"],
        json!({"limits": {"memory": "512Mi"}, "requests": {"memory": "256Mi"}})
    );
    assert_eq!(
        created["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: memory request for container default-mem-demo-ctr; \
         memory limit for container default-mem-demo-ctr"
    );
    // memory-defaults-pod-2.yaml, a limit and no request: "the Container's memory request
    // is set to match its memory limit" (defaulting, before LimitRanger).
    let two = pod(
        "default-mem-demo-2",
        Some(json!({"limits": {"memory": "1Gi"}})),
    );
    let created = create(&store, "", "pods", Some("default"), two).unwrap();
    assert_eq!(
        created["spec"]["containers"][0]["resources"],
        json!({"limits": {"memory": "1Gi"}, "requests": {"memory": "1Gi"}})
    );
    assert!(
        created["metadata"].get("annotations").is_none(),
        "LimitRanger set nothing"
    );

    // A LimitRange of another namespace applies only there.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}});
    create(&store, "", "namespaces", None, ns).unwrap();
    let created = create(&store, "", "pods", Some("other"), pod("elsewhere", None)).unwrap();
    assert!(created["spec"]["containers"][0].get("resources").is_none());
}

#[test]
fn creates_the_chain_refuses_are_forbidden() {
    let store = Store::new(100);
    // memory-constraints.yaml as the documentation shows it stored (with the `default` and
    // `defaultRequest` defaulting fills from `max`).
    let lr = limit_range(
        "mem-min-max-demo-lr",
        json!([{"default": {"memory": "1Gi"},
        "defaultRequest": {"memory": "1Gi"}, "max": {"memory": "1Gi"}, "min": {"memory": "500Mi"},
        "type": "Container"}]),
    );
    create(&store, "", "limitranges", Some("default"), lr).unwrap();
    // memory-constraint-namespace.md: `pods "constraints-mem-demo-2" is forbidden: maximum
    // memory usage per Container is 1Gi, but limit is 1536Mi.` (v1.32 drops the period).
    let two = pod(
        "constraints-mem-demo-2",
        Some(json!({"limits": {"memory": "1.5Gi"}, "requests": {"memory": "800Mi"}})),
    );
    let err = create(&store, "", "pods", Some("default"), two).unwrap_err();
    assert_eq!((err.code, err.reason), (403, "Forbidden"));
    assert_eq!(
        err.message,
        "pods \"constraints-mem-demo-2\" is forbidden: maximum memory usage per Container is 1Gi, but limit is 1536Mi"
    );
    assert_eq!(
        err.details,
        Some(json!({"name": "constraints-mem-demo-2", "kind": "pods"}))
    );
    let pods = store.resolve("", "v1", "pods").unwrap();
    assert!(
        store
            .get(&pods, Some("default"), "constraints-mem-demo-2")
            .is_err(),
        "not stored"
    );

    // storagelimits.yaml and pvc-limit-lower.yaml (500Mi under the 1Gi minimum); the
    // message hand-derived from `minConstraint`'s format.
    let lr = limit_range(
        "storagelimits",
        json!([{"type": "PersistentVolumeClaim",
        "max": {"storage": "2Gi"}, "min": {"storage": "1Gi"}}]),
    );
    create(&store, "", "limitranges", Some("default"), lr).unwrap();
    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "pvc-limit-lower"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "500Mi"}}}});
    let err = create(&store, "", "persistentvolumeclaims", Some("default"), pvc).unwrap_err();
    assert_eq!(
        err.message,
        "persistentvolumeclaims \"pvc-limit-lower\" is forbidden: minimum storage usage per \
         PersistentVolumeClaim is 1Gi, but request is 500Mi"
    );

    // Priority: an unknown class (`no PriorityClass with name %v was found`), and a second
    // global default (`PriorityClass %v is already marked as default. Only one default can
    // exist`).
    let mut p = pod("p", Some(json!({"limits": {"memory": "1Gi"}})));
    p["spec"]["priorityClassName"] = json!("missing");
    let err = create(&store, "", "pods", Some("default"), p).unwrap_err();
    assert_eq!(
        err.message,
        "pods \"p\" is forbidden: no PriorityClass with name missing was found"
    );
    let class = |name: &str| {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": 10, "globalDefault": true})
    };
    create(
        &store,
        "scheduling.k8s.io",
        "priorityclasses",
        None,
        class("a"),
    )
    .unwrap();
    let err = create(
        &store,
        "scheduling.k8s.io",
        "priorityclasses",
        None,
        class("b"),
    )
    .unwrap_err();
    assert_eq!(
        err.message,
        "priorityclasses.scheduling.k8s.io \"b\" is forbidden: PriorityClass a is already marked \
         as default. Only one default can exist"
    );
    // The default class now gives a pod its name, value and policy.
    let created = create(&store, "", "pods", Some("default"), pod("q", None)).unwrap();
    assert_eq!(created["spec"]["priorityClassName"], "a");
    assert_eq!(created["spec"]["priority"], 10);
}

#[test]
fn the_pods_service_account_decides_the_token_and_pull_secrets() {
    let store = Store::new(100);
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"},
        "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "registry"}]});
    create(&store, "", "serviceaccounts", Some("default"), sa).unwrap();
    let mut p = pod("p", None);
    p["spec"]["serviceAccountName"] = json!("robot");
    let created = create(&store, "", "pods", Some("default"), p).unwrap();
    // `shouldAutomount`: the account's `false` holds when the pod says nothing; the pod
    // lists no pull secrets, so it gets the account's.
    assert!(created["spec"].get("volumes").is_none());
    assert_eq!(
        created["spec"]["imagePullSecrets"],
        json!([{"name": "registry"}])
    );
}
