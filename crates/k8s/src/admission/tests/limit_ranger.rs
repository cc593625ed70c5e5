//! LimitRanger, against the cases of its upstream test file
//! (`plugin/pkg/admission/limitranger/admission_test.go`, release-1.2x/1.32 era: the one
//! with `withRestartableInitContainer` and two-argument `PodValidateLimitFunc`) and the
//! outputs the Kubernetes documentation shows from a real cluster
//! (`kubernetes/website`, `content/en/docs/tasks/administer-cluster/manage-resources/`).
//!
//! The upstream cases call `PodMutateLimitFunc` and `PodValidateLimitFunc` on an internal
//! Pod that was never defaulted, with LimitRanges that were never defaulted either; the
//! ports call the same two steps (`limit_ranger::mutate`, `validate_pod`) on the same data.

use serde_json::{json, Value};

use crate::admission::limit_ranger::{mutate, validate_claim, validate_pod};
use crate::admission::{self, AdmissionFacts, LIMIT_RANGER_ANNOTATION};

/// `getComputeResourceList` / `getLocalStorageResourceList`: a list of one resource, or
/// an empty one for `""`.
fn list(resource: &str, amount: &str) -> Value {
    if amount.is_empty() {
        json!({})
    } else {
        json!({ resource: amount })
    }
}

fn compute(cpu: &str, memory: &str) -> Value {
    let mut l = list("cpu", cpu);
    if !memory.is_empty() {
        l["memory"] = json!(memory);
    }
    l
}

/// `getResourceRequirements(requests, limits)`.
fn requirements(requests: Value, limits: Value) -> Value {
    json!({"requests": requests, "limits": limits})
}

/// `validPod(name, n, resources)`: containers `foo-0`..`foo-<n-1>` in namespace `test`.
fn valid_pod(name: &str, n: usize, resources: &Value) -> Value {
    let containers: Vec<Value> = (0..n)
        .map(|i| json!({"image": format!("foo:V{i}"), "name": format!("foo-{i}"), "resources": resources}))
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "test"}, "spec": {"containers": containers}})
}

/// `validPodInit(pod, resources...)`: init containers `foo-0`.. with these resources.
fn with_init(mut pod: Value, resources: &[Value]) -> Value {
    let inits: Vec<Value> = resources
        .iter()
        .enumerate()
        .map(|(i, r)| json!({"image": format!("foo:V{i}"), "name": format!("foo-{i}"), "resources": r}))
        .collect();
    pod["spec"]["initContainers"] = json!(inits);
    pod
}

/// `createLimitRange(type, min, max, default, defaultRequest, maxLimitRequestRatio)`.
fn limit_range(
    kind: &str,
    min: Value,
    max: Value,
    default: Value,
    request: Value,
    ratio: Value,
) -> Value {
    json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "abc", "namespace": "test"},
        "spec": {"limits": [{"type": kind, "min": min, "max": max, "default": default,
            "defaultRequest": request, "maxLimitRequestRatio": ratio}]}})
}

/// `validLimitRange()`.
fn valid_limit_range() -> Value {
    json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "abc", "namespace": "test"},
        "spec": {"limits": [
            {"type": "Pod", "max": compute("200m", "4Gi"), "min": compute("50m", "2Mi")},
            {"type": "Container", "max": compute("100m", "2Gi"), "min": compute("25m", "1Mi"),
                "default": compute("75m", "10Mi"), "defaultRequest": compute("50m", "5Mi")}]}})
}

fn resources_of<'a>(pod: &'a Value, list: &str, i: usize) -> &'a Value {
    &pod["spec"][list][i]["resources"]
}

#[test]
fn test_pod_limit_func_apply_default() {
    // TestPodLimitFuncApplyDefault: a container and an init container without resources
    // get validLimitRange's defaults (limits 10Mi/75m, requests 5Mi/50m).
    let mut pod = with_init(
        valid_pod("foo", 1, &requirements(json!({}), json!({}))),
        &[requirements(json!({}), json!({}))],
    );
    mutate(&mut pod, &[valid_limit_range()]);
    let want = requirements(compute("50m", "5Mi"), compute("75m", "10Mi"));
    assert_eq!(*resources_of(&pod, "containers", 0), want);
    assert_eq!(*resources_of(&pod, "initContainers", 0), want);
}

#[test]
fn test_merge_pod_resource_requirements() {
    let range = valid_limit_range();
    // "pod with no resources enumerated should get each resource from default request"
    let mut pod = valid_pod("empty-resources", 1, &requirements(json!({}), json!({})));
    mutate(&mut pod, std::slice::from_ref(&range));
    assert_eq!(
        pod["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION],
        "LimitRanger plugin set: cpu, memory request for container foo-0; cpu, memory limit for container foo-0"
    );

    // "pod with some resources enumerated should only merge empty": a container and an init
    // container requesting 512Mi of memory keep it and get the rest. Upstream's expected
    // annotation, "LimitRanger plugin set: cpu request for container foo-0; cpu, memory
    // limit for container foo-0", names no init container only because its test passes the
    // same Go maps to both containers, so the container's merge already filled the init
    // container's; decoded from JSON each container has its own, and
    // `mergePodResourceRequirements` goes on to the init containers with the prefix
    // "init container" (hand derivation from admission.go).
    let input = requirements(compute("", "512Mi"), compute("", ""));
    let mut pod = with_init(
        valid_pod("limit-memory", 1, &input),
        std::slice::from_ref(&input),
    );
    mutate(&mut pod, std::slice::from_ref(&range));
    let want = requirements(compute("50m", "512Mi"), compute("75m", "10Mi"));
    assert_eq!(*resources_of(&pod, "containers", 0), want);
    assert_eq!(*resources_of(&pod, "initContainers", 0), want);
    assert_eq!(
        pod["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION],
        "LimitRanger plugin set: cpu request for container foo-0; cpu, memory limit for container foo-0; \
         cpu request for init container foo-0; cpu, memory limit for init container foo-0"
    );

    // "pod with all resources enumerated should not merge anything"
    let input = requirements(compute("100m", "512Mi"), compute("200m", "1G"));
    let init = requirements(compute("200m", "1G"), compute("400m", "2G"));
    let mut pod = with_init(
        valid_pod("limit-memory", 1, &input),
        std::slice::from_ref(&init),
    );
    mutate(&mut pod, &[range]);
    assert_eq!(*resources_of(&pod, "containers", 0), input);
    assert_eq!(*resources_of(&pod, "initContainers", 0), init);
    assert!(
        pod["metadata"].get("annotations").is_none(),
        "expectNoAnnotation"
    );
}

/// `TestPodLimitFunc`'s cases, one a line: name, containers, resource, request, limit,
/// init containers' `request/limit` (comma-separated), limit type, min, max,
/// maxLimitRequestRatio; `-` for none.
const SUCCESS_CASES: &str = "
ctr-min-cpu-request                                 1 cpu    100m  -     -              Container 50m   -     -
ctr-min-cpu-request-limit                           1 cpu    100m  200m  -              Container 50m   -     -
ctr-min-memory-request                              1 memory 60Mi  -     -              Container 50Mi  -     -
ctr-min-memory-request-limit                        1 memory 60Mi  100Mi -              Container 50Mi  -     -
ctr-max-cpu-request-limit                           1 cpu    500m  1     -              Container -     2     -
ctr-max-cpu-limit                                   1 cpu    -     1     -              Container -     2     -
ctr-max-mem-request-limit                           1 memory 250Mi 500Mi -              Container -     1Gi   -
ctr-max-cpu-ratio                                   1 cpu    500m  750m  -              Container -     -     1.5
ctr-max-mem-limit                                   1 memory -     500Mi -              Container -     1Gi   -
pod-min-cpu-request                                 2 cpu    75m   -     -              Pod       100m  -     -
pod-min-cpu-request-limit                           2 cpu    75m   200m  -              Pod       100m  -     -
pod-min-memory-request                              2 memory 60Mi  -     -              Pod       100Mi -     -
pod-min-memory-request-limit                        2 memory 60Mi  100Mi -              Pod       100Mi -     -
pod-init-min-memory-request                         2 memory 60Mi  -     100Mi/-        Pod       100Mi -     -
pod-init-min-memory-request-limit                   2 memory 60Mi  100Mi 80Mi/100Mi     Pod       100Mi -     -
pod-max-cpu-request-limit                           2 cpu    500m  1     -              Pod       -     2     -
pod-max-cpu-limit                                   2 cpu    -     1     -              Pod       -     2     -
pod-init-max-cpu-request-limit                      2 cpu    500m  1     1/2,1/1        Pod       -     2     -
pod-init-max-cpu-limit                              2 cpu    -     1     -/2,-/2        Pod       -     2     -
pod-max-mem-request-limit                           2 memory 250Mi 500Mi -              Pod       -     1Gi   -
pod-max-mem-limit                                   2 memory -     500Mi -              Pod       -     1Gi   -
pod-max-mem-ratio                                   3 memory 300Mi 450Mi -              Pod       -     2Gi   1.5
ctr-1-min-local-ephemeral-storage-request           1 eph    60Mi  -     -              Container 50Mi  -     -
ctr-1-min-local-ephemeral-storage-request-limit     1 eph    60Mi  100Mi -              Container 50Mi  -     -
ctr-1-max-local-ephemeral-storage-request-limit     1 eph    250Mi 500Mi -              Container -     1Gi   -
ctr-1-max-local-ephemeral-storage-limit             1 eph    -     500Mi -              Container -     1Gi   -
ctr-2-min-local-ephemeral-storage-request           2 eph    60Mi  -     -              Container 50Mi  -     -
ctr-2-min-local-ephemeral-storage-request-limit     2 eph    60Mi  100Mi -              Container 50Mi  -     -
ctr-2-max-local-ephemeral-storage-request-limit     2 eph    250Mi 500Mi -              Container -     600Mi -
ctr-2-max-local-ephemeral-storage-limit             2 eph    -     500Mi -              Container -     600Mi -
pod-min-local-ephemeral-storage-request             2 eph    60Mi  -     -              Pod       100Mi -     -
pod-min-local-ephemeral-storage-request-limit       2 eph    60Mi  100Mi -              Pod       100Mi -     -
pod-init-min-local-ephemeral-storage-request        2 eph    60Mi  -     100Mi/-        Pod       100Mi -     -
pod-init-min-local-ephemeral-storage-request-limit  2 eph    60Mi  100Mi 80Mi/100Mi     Pod       100Mi -     -
pod-max-local-ephemeral-storage-request-limit       2 eph    250Mi 500Mi -              Pod       -     1Gi   -
pod-max-local-ephemeral-storage-limit               2 eph    -     500Mi -              Pod       -     1Gi   -
pod-max-local-ephemeral-storage-ratio               3 eph    300Mi 450Mi -              Pod       -     2Gi   1.5
";

const ERROR_CASES: &str = "
ctr-min-cpu-request                                 1 cpu    40m   -     -              Container 50m   -     -
ctr-min-cpu-request-limit                           1 cpu    40m   200m  -              Container 50m   -     -
ctr-min-cpu-no-request-limit                        1 cpu    -     -     -              Container 50m   -     -
ctr-min-memory-request                              1 memory 40Mi  -     -              Container 50Mi  -     -
ctr-min-memory-request-limit                        1 memory 40Mi  100Mi -              Container 50Mi  -     -
ctr-min-memory-no-request-limit                     1 memory -     -     -              Container 50Mi  -     -
ctr-max-cpu-request-limit                           1 cpu    500m  2500m -              Container -     2     -
ctr-max-cpu-limit                                   1 cpu    -     2500m -              Container -     2     -
ctr-max-cpu-no-request-limit                        1 cpu    -     -     -              Container -     2     -
ctr-max-cpu-ratio                                   1 cpu    1250m 2500m -              Container -     -     1
ctr-max-mem-request-limit                           1 memory 250Mi 2Gi   -              Container -     1Gi   -
ctr-max-mem-limit                                   1 memory -     2Gi   -              Container -     1Gi   -
ctr-max-mem-no-request-limit                        1 memory -     -     -              Container -     1Gi   -
pod-min-cpu-request                                 1 cpu    75m   -     -              Pod       100m  -     -
pod-min-cpu-request-limit                           1 cpu    75m   200m  -              Pod       100m  -     -
pod-min-memory-request                              1 memory 60Mi  -     -              Pod       100Mi -     -
pod-min-memory-request-limit                        1 memory 60Mi  100Mi -              Pod       100Mi -     -
pod-max-cpu-request-limit                           3 cpu    500m  1     -              Pod       -     2     -
pod-max-cpu-limit                                   3 cpu    -     1     -              Pod       -     2     -
pod-max-mem-request-limit                           3 memory 250Mi 500Mi -              Pod       -     1Gi   -
pod-max-mem-limit                                   3 memory -     500Mi -              Pod       -     1Gi   -
pod-init-max-mem-limit                              1 memory -     500Mi -/1.5Gi        Pod       -     1Gi   -
pod-max-mem-ratio                                   3 memory 250Mi 500Mi -              Pod       -     2Gi   1.5
ctr-1-min-local-ephemeral-storage-request           1 eph    40Mi  -     -              Container 50Mi  -     -
ctr-1-min-local-ephemeral-storage-request-limit     1 eph    40Mi  100Mi -              Container 50Mi  -     -
ctr-1-min-local-ephemeral-storage-no-request-limit  1 eph    -     -     -              Container 50Mi  -     -
ctr-1-max-local-ephemeral-storage-request-limit     1 eph    250Mi 2Gi   -              Container -     1Gi   -
ctr-1-max-local-ephemeral-storage-limit             1 eph    -     2Gi   -              Container -     1Gi   -
ctr-1-max-local-ephemeral-storage-no-request-limit  1 eph    -     -     -              Container -     1Gi   -
ctr-2-min-local-ephemeral-storage-request           2 eph    40Mi  -     -              Container 50Mi  -     -
ctr-2-min-local-ephemeral-storage-request-limit     2 eph    40Mi  100Mi -              Container 50Mi  -     -
ctr-2-min-local-ephemeral-storage-no-request-limit  2 eph    -     -     -              Container 50Mi  -     -
ctr-2-max-local-ephemeral-storage-request-limit     2 eph    250Mi 2Gi   -              Container -     1Gi   -
ctr-2-max-local-ephemeral-storage-limit             2 eph    -     2Gi   -              Container -     1Gi   -
ctr-2-max-local-ephemeral-storage-no-request-limit  2 eph    -     -     -              Container -     1Gi   -
pod-min-local-ephemeral-storage-request             1 eph    60Mi  -     -              Pod       100Mi -     -
pod-min-local-ephemeral-storage-request-limit       1 eph    60Mi  100Mi -              Pod       100Mi -     -
pod-max-local-ephemeral-storage-request-limit       3 eph    250Mi 500Mi -              Pod       -     1Gi   -
pod-max-local-ephemeral-storage-limit               3 eph    -     500Mi -              Pod       -     1Gi   -
pod-init-max-local-ephemeral-storage-limit          1 eph    -     500Mi -/1.5Gi        Pod       -     1Gi   -
pod-max-local-ephemeral-storage-ratio               3 eph    250Mi 500Mi -              Pod       -     2Gi   1.5
";

/// Runs one line of a case table: `PodMutateLimitFunc` then `PodValidateLimitFunc`.
fn run(line: &str) -> (String, Result<(), String>) {
    let f: Vec<&str> = line.split_whitespace().collect();
    let amount = |s: &str| {
        if s == "-" {
            String::new()
        } else {
            s.to_string()
        }
    };
    let res = if f[2] == "eph" {
        "ephemeral-storage"
    } else {
        f[2]
    };
    let resources =
        |req: &str, lim: &str| requirements(list(res, &amount(req)), list(res, &amount(lim)));
    let pod = valid_pod(f[0], f[1].parse().unwrap(), &resources(f[3], f[4]));
    let inits: Vec<Value> = match f[5] {
        "-" => Vec::new(),
        pairs => pairs
            .split(',')
            .map(|pair| {
                let (r, l) = pair.split_once('/').unwrap();
                resources(r, l)
            })
            .collect(),
    };
    let mut pod = if inits.is_empty() {
        pod
    } else {
        with_init(pod, &inits)
    };
    let bound = |s: &str| list(res, &amount(s));
    let range = limit_range(
        f[6],
        bound(f[7]),
        bound(f[8]),
        json!({}),
        json!({}),
        bound(f[9]),
    );
    mutate(&mut pod, std::slice::from_ref(&range));
    (f[0].to_string(), validate_pod(&pod, &[range]))
}

fn cases(table: &'static str) -> impl Iterator<Item = &'static str> {
    table.lines().filter(|l| !l.trim().is_empty())
}

#[test]
fn test_pod_limit_func_success_cases() {
    assert_eq!(cases(SUCCESS_CASES).count(), 37);
    for line in cases(SUCCESS_CASES) {
        let (name, result) = run(line);
        assert_eq!(result, Ok(()), "{name}");
    }
}

#[test]
fn test_pod_limit_func_error_cases() {
    assert_eq!(cases(ERROR_CASES).count(), 41);
    for line in cases(ERROR_CASES) {
        let (name, result) = run(line);
        assert!(result.is_err(), "{name} should be refused");
    }

    // "ctr-max-cpu-limit-restartable-init-container": a sidecar's request adds to the
    // containers' (1000m + 1500m), past the Pod max of 2.
    let mut pod = valid_pod(
        "ctr-max-cpu-limit-restartable-init-container",
        1,
        &requirements(compute("1000m", ""), compute("1500m", "")),
    );
    pod["spec"]["initContainers"] = json!([{"restartPolicy": "Always", "image": "foo:V0", "name": "foo-0",
        "resources": requirements(compute("1500m", ""), json!({}))}]);
    let range = limit_range(
        "Pod",
        json!({}),
        compute("2", ""),
        json!({}),
        json!({}),
        json!({}),
    );
    mutate(&mut pod, std::slice::from_ref(&range));
    assert_eq!(
        validate_pod(&pod, &[range]),
        Err("maximum cpu usage per Pod is 2, but request is 2500m".to_string()),
        "the message hand-derived from maxConstraint's format"
    );
}

#[test]
fn test_limit_ranger_admit_pod() {
    // TestLimitRangerAdmitPod: a pod without resources in a namespace whose LimitRange
    // (validLimitRangeNoDefaults, as the test builds it: no defaults) sets minimums is
    // refused by Validate on create. (Its update and subresource halves are out of scope:
    // driftd models creates.) The message is hand-derived: the Pod item's min cpu comes
    // first, and the aggregate lists every violation of the first refusing LimitRange.
    let range = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "abc", "namespace": "test"},
        "spec": {"limits": [
            {"type": "Pod", "max": compute("200m", "4Gi"), "min": compute("50m", "2Mi")},
            {"type": "Container", "max": compute("100m", "2Gi"), "min": compute("25m", "1Mi")}]}});
    let facts = AdmissionFacts::from_objects([&range]);
    let mut pod = valid_pod("testPod", 1, &json!({}));
    admission::mutate("Pod", &mut pod, &facts, "kube-api-access-abcde").unwrap();
    let refusal = admission::validate("Pod", &pod, &facts).unwrap_err();
    assert_eq!(refusal.plugin, "LimitRanger");
    assert!(
        refusal
            .message
            .starts_with("[minimum cpu usage per Pod is 50m.  No request is specified, "),
        "{}",
        refusal.message
    );
}

#[test]
fn test_persistent_volume_claim_limit_func() {
    let storage = |s: &str| list("storage", s);
    let pvc = |name: &str, request: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "test"},
            "spec": {"resources": {"requests": storage(request), "limits": {}}}})
    };
    let range = |min: &str, max: &str| {
        limit_range(
            "PersistentVolumeClaim",
            storage(min),
            storage(max),
            json!({}),
            json!({}),
            json!({}),
        )
    };
    for (claim, lr) in [
        (pvc("pvc-is-min-storage-request", "1Gi"), range("1Gi", "")),
        (pvc("pvc-is-max-storage-request", "1Gi"), range("", "1Gi")),
        (pvc("pvc-no-minmax-storage-request", "100Gi"), range("", "")),
        (
            pvc("pvc-within-minmax-storage-request", "5Gi"),
            range("1Gi", "10Gi"),
        ),
    ] {
        assert_eq!(
            validate_claim(&claim, &[lr]),
            Ok(()),
            "{}",
            claim["metadata"]["name"]
        );
    }
    for (claim, lr) in [
        (
            pvc("pvc-below-min-storage-request", "500Mi"),
            range("1Gi", ""),
        ),
        (
            pvc("pvc-exceeds-max-storage-request", "100Gi"),
            range("1Gi", "1Gi"),
        ),
    ] {
        assert!(
            validate_claim(&claim, &[lr]).is_err(),
            "{}",
            claim["metadata"]["name"]
        );
    }
}

/// The documentation's `mem-limit-range` (`examples/admin/resource/memory-defaults.yaml`)
/// as stored in namespace `default-mem-example`.
fn memory_defaults() -> Value {
    json!({"apiVersion": "v1", "kind": "LimitRange",
        "metadata": {"name": "mem-limit-range", "namespace": "default-mem-example"},
        "spec": {"limits": [{"default": {"memory": "512Mi"}, "defaultRequest": {"memory": "256Mi"},
            "type": "Container"}]}})
}

fn doc_pod(name: &str, resources: Option<Value>) -> Value {
    let mut c = json!({"name": format!("{name}-ctr"), "image": "nginx"});
    if let Some(r) = resources {
        c["resources"] = r;
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default-mem-example"}, "spec": {"containers": [c]}})
}

#[test]
fn the_documentation_default_memory_pods_get_what_a_cluster_gave_them() {
    // memory-default-namespace.md: `kubectl get pod default-mem-demo --output=yaml` shows
    // limits 512Mi and requests 256Mi.
    let facts = AdmissionFacts::from_objects([&memory_defaults()]);
    let mut pod = doc_pod("default-mem-demo", None);
    admission::admit("Pod", &mut pod, &facts, "kube-api-access-abcde");
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({"limits": {"memory": "512Mi"}, "requests": {"memory": "256Mi"}})
    );
    // "What if you specify a Container's limit, but not its request?": requests 1Gi, as the
    // limit, "not assigned the default memory request value of 256Mi". The request was
    // copied from the limit by defaulting (SetDefaults_Pod) before admission, so the pod
    // reaches LimitRanger with both set.
    let mut pod = doc_pod(
        "default-mem-demo-2",
        Some(json!({"limits": {"memory": "1Gi"}, "requests": {"memory": "1Gi"}})),
    );
    admission::admit("Pod", &mut pod, &facts, "kube-api-access-abcde");
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({"limits": {"memory": "1Gi"}, "requests": {"memory": "1Gi"}})
    );
    assert!(
        pod["metadata"].get("annotations").is_none(),
        "LimitRanger set nothing"
    );
    // "What if you specify a Container's request, but not its limit?": limits 512Mi,
    // requests 128Mi.
    let mut pod = doc_pod(
        "default-mem-demo-3",
        Some(json!({"requests": {"memory": "128Mi"}})),
    );
    admission::admit("Pod", &mut pod, &facts, "kube-api-access-abcde");
    assert_eq!(
        pod["spec"]["containers"][0]["resources"],
        json!({"limits": {"memory": "512Mi"}, "requests": {"memory": "128Mi"}})
    );
    assert_eq!(
        pod["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION],
        "LimitRanger plugin set: memory limit for container default-mem-demo-3-ctr"
    );
}

#[test]
fn the_documentation_memory_constraints_refuse_as_a_cluster_did() {
    // memory-constraint-namespace.md: `mem-min-max-demo-lr` (min 500Mi, max 1Gi) as the
    // cluster showed it stored, with `default` and `defaultRequest` filled from `max`.
    let stored = json!({"apiVersion": "v1", "kind": "LimitRange",
        "metadata": {"name": "mem-min-max-demo-lr", "namespace": "constraints-mem-example"},
        "spec": {"limits": [{"default": {"memory": "1Gi"}, "defaultRequest": {"memory": "1Gi"},
            "max": {"memory": "1Gi"}, "min": {"memory": "500Mi"}, "type": "Container"}]}});
    let facts = AdmissionFacts::from_objects([&stored]);
    let pod = |name: &str, resources: Option<Value>| {
        let mut p = doc_pod(name, resources);
        p["metadata"]["namespace"] = json!("constraints-mem-example");
        p
    };
    let admitted = |mut p: Value| {
        admission::mutate("Pod", &mut p, &facts, "kube-api-access-abcde")?;
        admission::validate("Pod", &p, &facts).map(|()| p)
    };
    let ok = admitted(pod(
        "constraints-mem-demo",
        Some(json!({"limits": {"memory": "800Mi"}, "requests": {"memory": "600Mi"}})),
    ))
    .unwrap();
    assert_eq!(
        ok["spec"]["containers"][0]["resources"],
        json!({"limits": {"memory": "800Mi"}, "requests": {"memory": "600Mi"}})
    );
    // The documented messages end in a period that v1.32's messages no longer carry
    // (the errors were reworded to lower-case, unpunctuated Go style); the text is theirs.
    let refused = admitted(pod(
        "constraints-mem-demo-2",
        Some(json!({"limits": {"memory": "1.5Gi"}, "requests": {"memory": "800Mi"}})),
    ))
    .unwrap_err();
    assert_eq!(
        refused.message,
        "maximum memory usage per Container is 1Gi, but limit is 1536Mi"
    );
    let refused = admitted(pod(
        "constraints-mem-demo-3",
        Some(json!({"limits": {"memory": "800Mi"}, "requests": {"memory": "100Mi"}})),
    ))
    .unwrap_err();
    assert_eq!(
        refused.message,
        "minimum memory usage per Container is 500Mi, but request is 100Mi"
    );
    // "Create a Pod that does not specify any memory request or limit": 1Gi and 1Gi.
    let four = admitted(pod("constraints-mem-demo-4", None)).unwrap();
    assert_eq!(
        four["spec"]["containers"][0]["resources"],
        json!({"limits": {"memory": "1Gi"}, "requests": {"memory": "1Gi"}})
    );
}

#[test]
fn several_limit_ranges_and_items_combine_as_the_plugin_iterates_them() {
    // Hand derivation from admission.go: within one LimitRange, a later Container item's
    // default overrides an earlier one's (`defaultContainerResourceRequirements` assigns
    // into one map); across LimitRanges, the first to give a resource wins (later ones
    // find it set), and each LimitRange that set something rewrites the annotation, so the
    // last such one's text remains. Ranges of other namespaces are not listed.
    let range = |name: &str, ns: &str, items: Value| {
        json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": name, "namespace": ns},
            "spec": {"limits": items}})
    };
    let a = range(
        "a",
        "test",
        json!([
        {"type": "Container", "default": {"cpu": "1"}},
        {"type": "Container", "default": {"cpu": "2"}, "defaultRequest": {"cpu": "500m"}}]),
    );
    let b = range(
        "b",
        "test",
        json!([
        {"type": "Container", "default": {"cpu": "3", "memory": "1Gi"}}]),
    );
    let elsewhere = range(
        "c",
        "other",
        json!([{"type": "Container", "default": {"ephemeral-storage": "1Gi"}}]),
    );
    let facts = AdmissionFacts::from_objects([&b, &elsewhere, &a]);
    let mut pod = valid_pod("p", 1, &json!({}));
    admission::admit("Pod", &mut pod, &facts, "kube-api-access-abcde");
    assert_eq!(
        *resources_of(&pod, "containers", 0),
        json!({"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m"}})
    );
    assert_eq!(
        pod["metadata"]["annotations"][LIMIT_RANGER_ANNOTATION],
        "LimitRanger plugin set: memory limit for container foo-0"
    );
}
