//! Priority, against `plugin/pkg/admission/priority/admission_test.go`:
//! `TestDefaultPriority` (which class is the global default), `TestPodAdmission` (every
//! case) and the create cases of `TestPriorityClassAdmission` that concern the one-default
//! rule. Left out: its update and delete cases (driftd models creates) and the
//! system-name-and-value case (API validation's business since the plugin dropped it).

use serde_json::{json, Value};

use crate::admission::{mutate, validate, AdmissionFacts};

fn class(name: &str, value: i64, global_default: bool, policy: Option<&str>) -> Value {
    let mut c = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": value, "globalDefault": global_default});
    if let Some(p) = policy {
        c["preemptionPolicy"] = json!(p);
    }
    c
}

fn default_class1() -> Value {
    class("default1", 1000, true, None)
}
fn default_class2() -> Value {
    class("default2", 2000, true, None)
}
fn nondefault_class1() -> Value {
    class("nondefault1", 2000, false, None)
}
fn system_cluster_critical() -> Value {
    class("system-cluster-critical", 2_000_000_000, true, None)
}
/// `preemptionPolicyClass`: named "nopreemptionpolicy" upstream, PreemptLowerPriority.
fn preemption_policy_class() -> Value {
    class(
        "nopreemptionpolicy",
        2000,
        true,
        Some("PreemptLowerPriority"),
    )
}

fn facts(classes: &[Value]) -> AdmissionFacts {
    AdmissionFacts::from_objects(classes)
}

#[test]
fn test_default_priority() {
    let default_of = |classes: &[Value]| {
        let f = facts(classes);
        let name = f.global_default_priority_class.clone();
        let value = name.as_ref().map_or(0, |n| f.priority_classes[n].0);
        (name, value)
    };
    // "simple resolution with a default class"
    assert_eq!(
        default_of(&[default_class1()]),
        (Some("default1".into()), 1000)
    );
    // "add a default class": before, none (DefaultPriorityWhenNoDefaultClassExists = 0)
    assert_eq!(default_of(&[nondefault_class1()]), (None, 0));
    assert_eq!(
        default_of(&[nondefault_class1(), default_class1()]),
        (Some("default1".into()), 1000)
    );
    // "multiple default classes resolves to the minimum value among them"
    assert_eq!(
        default_of(&[default_class1(), default_class2()]),
        (Some("default1".into()), 1000)
    );
    assert_eq!(
        default_of(&[default_class2()]),
        (Some("default2".into()), 2000)
    );
    // "update default class and remove its global default"
    let mut updated = default_class1();
    updated["globalDefault"] = json!(false);
    assert_eq!(default_of(&[updated]), (None, 0));
}

fn pod(name: &str, namespace: &str, spec_extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "container"}]});
    for (k, v) in spec_extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": spec})
}

/// A case: name, existing classes, pod, expected priority (`None`: refused), expected
/// preemptionPolicy when the case checks it.
type Case<'a> = (&'a str, Vec<Value>, &'a Value, Option<i64>, Option<&'a str>);

#[test]
fn test_pod_admission() {
    let mirror = |mut p: Value| {
        p["metadata"]["annotations"] = json!({"kubernetes.io/config.mirror": ""});
        p
    };
    let pods = [
        pod(
            "pod-w-priorityclass",
            "namespace",
            json!({"priorityClassName": "default1"}),
        ),
        pod("pod-wo-priorityclass", "namespace", json!({})),
        pod(
            "pod-w-non-existing-priorityclass",
            "namespace",
            json!({"priorityClassName": "non-existing"}),
        ),
        pod(
            "pod-w-integer-priority",
            "namespace",
            json!({"priorityClassName": "default1", "priority": 1000}),
        ),
        pod(
            "pod-w-system-priority",
            "kube-system",
            json!({"priorityClassName": "system-cluster-critical"}),
        ),
        mirror(pod(
            "mirror-pod-w-system-priority",
            "kube-system",
            json!({"priorityClassName": "system-cluster-critical"}),
        )),
        mirror(pod(
            "mirror-pod-w-integer-priority",
            "namespace",
            json!({"priorityClassName": "default1", "priority": 1000}),
        )),
        pod(
            "pod-w-system-priority-in-nonsystem-namespace",
            "non-system-namespace",
            json!({"priorityClassName": "system-cluster-critical"}),
        ),
        pod(
            "pod-w-zero-priority-in-nonsystem-namespace",
            "non-system-namespace",
            json!({"priority": 0}),
        ),
        pod(
            "pod-w-priority-matching-default-priority",
            "non-system-namespace",
            json!({"priority": 2000}),
        ),
        pod(
            "pod-w-priority-matching-resolved-default-priority",
            "kube-system",
            json!({"priorityClassName": "system-cluster-critical", "priority": 2_000_000_000}),
        ),
        pod(
            "pod-never-preemption-policy-matching-resolved-preemption-policy",
            "kube-system",
            json!({"priorityClassName": "nopreemptionpolicy", "priority": 2000}),
        ),
        pod(
            "pod-preemption-policy-matching-resolved-preemption-policy",
            "kube-system",
            json!({"priorityClassName": "nopreemptionpolicy", "priority": 2000, "preemptionPolicy": "PreemptLowerPriority"}),
        ),
        pod(
            "pod-preemption-policy-not-matching-resolved-preemption-policy",
            "kube-system",
            json!({"priorityClassName": "nopreemptionpolicy", "priority": 2000, "preemptionPolicy": "Never"}),
        ),
    ];
    let cases: Vec<Case> = vec![
        (
            "Pod with priority class",
            vec![default_class1(), nondefault_class1()],
            &pods[0],
            Some(1000),
            None,
        ),
        (
            "Pod without priority class",
            vec![default_class1()],
            &pods[1],
            Some(1000),
            None,
        ),
        (
            "pod without priority class and no existing priority class",
            vec![],
            &pods[1],
            Some(0),
            None,
        ),
        (
            "pod without priority class and no default class",
            vec![nondefault_class1()],
            &pods[1],
            Some(0),
            None,
        ),
        (
            "pod with a system priority class",
            vec![system_cluster_critical()],
            &pods[4],
            Some(2_000_000_000),
            None,
        ),
        (
            "Pod with non-existing priority class",
            vec![default_class1(), nondefault_class1()],
            &pods[2],
            None,
            None,
        ),
        ("pod with integer priority", vec![], &pods[3], None, None),
        (
            "mirror pod with system priority class",
            vec![system_cluster_critical()],
            &pods[5],
            Some(2_000_000_000),
            None,
        ),
        (
            "mirror pod with integer priority",
            vec![],
            &pods[6],
            None,
            None,
        ),
        (
            "pod with system critical priority in non-system namespace",
            vec![system_cluster_critical()],
            &pods[7],
            Some(2_000_000_000),
            None,
        ),
        (
            "pod with priority that matches computed priority",
            vec![nondefault_class1()],
            &pods[8],
            Some(0),
            None,
        ),
        (
            "pod with priority that matches default priority",
            vec![default_class2()],
            &pods[9],
            Some(2000),
            None,
        ),
        (
            "pod with priority that matches resolved priority",
            vec![system_cluster_critical()],
            &pods[10],
            Some(2_000_000_000),
            None,
        ),
        (
            "pod with nil preemtpion policy",
            vec![preemption_policy_class()],
            &pods[11],
            Some(2000),
            None,
        ),
        (
            "pod with preemtpion policy that matches resolved preemtpion policy",
            vec![preemption_policy_class()],
            &pods[12],
            Some(2000),
            Some("PreemptLowerPriority"),
        ),
        (
            "pod with preemtpion policy that does't matches resolved preemtpion policy",
            vec![preemption_policy_class()],
            &pods[13],
            None,
            None,
        ),
    ];
    for (name, classes, pod, priority, policy) in cases {
        let mut p = pod.clone();
        let result = mutate("Pod", &mut p, &facts(&classes), "kube-api-access-abcde");
        match priority {
            Some(want) => {
                assert_eq!(result, Ok(()), "{name}");
                assert_eq!(p["spec"]["priority"], want, "{name}");
                if let Some(policy) = policy {
                    assert_eq!(p["spec"]["preemptionPolicy"], policy, "{name}");
                }
            }
            None => {
                let refusal = result.expect_err(name);
                assert_eq!(refusal.plugin, "Priority", "{name}");
            }
        }
    }
}

#[test]
fn refusal_messages_are_the_plugins() {
    // The message a real cluster gave, quoted in a user's report of it: "the string value
    // of PreemptionPolicy (Never) must not be provided in pod spec; priority admission
    // controller computed PreemptLowerPriority from the given PriorityClass name".
    let mut p = pod(
        "p",
        "ns",
        json!({"priorityClassName": "high", "preemptionPolicy": "Never"}),
    );
    let refusal = mutate(
        "Pod",
        &mut p,
        &facts(&[class("high", 10, false, None)]),
        "kube-api-access-abcde",
    )
    .unwrap_err();
    assert_eq!(
        refusal.message,
        "the string value of PreemptionPolicy (Never) must not be provided in pod spec; \
         priority admission controller computed PreemptLowerPriority from the given PriorityClass name"
    );
    // admission.go: `no PriorityClass with name %v was found`.
    let mut p = pod("p", "ns", json!({"priorityClassName": "missing"}));
    let refusal = mutate("Pod", &mut p, &facts(&[]), "kube-api-access-abcde").unwrap_err();
    assert_eq!(
        refusal.message,
        "no PriorityClass with name missing was found"
    );
}

#[test]
fn a_default_class_names_itself_on_the_pod() {
    // Hand derivation from `admitPod`: `pod.Spec.PriorityClassName = pcName` with the
    // default class's name, or "" (left out) when there is none; the policy comes with it.
    let mut p = pod("p", "ns", json!({}));
    mutate(
        "Pod",
        &mut p,
        &facts(&[class("low", 5, true, Some("Never"))]),
        "kube-api-access-abcde",
    )
    .unwrap();
    assert_eq!(p["spec"]["priorityClassName"], "low");
    assert_eq!(p["spec"]["preemptionPolicy"], "Never");
    let mut p = pod("p", "ns", json!({}));
    mutate("Pod", &mut p, &facts(&[]), "kube-api-access-abcde").unwrap();
    assert!(p["spec"].get("priorityClassName").is_none());
    assert_eq!(p["spec"]["preemptionPolicy"], "PreemptLowerPriority");
}

#[test]
fn test_priority_class_admission_creates() {
    // "create operator with default class": no class yet, allowed.
    assert_eq!(
        validate("PriorityClass", &default_class1(), &facts(&[])),
        Ok(())
    );
    // "create operator with one existing default class": refused.
    let refusal = validate(
        "PriorityClass",
        &default_class2(),
        &facts(&[default_class1()]),
    )
    .unwrap_err();
    assert_eq!(
        refusal.message,
        "PriorityClass default1 is already marked as default. Only one default can exist"
    );
    // A class that is not a default is never refused for it.
    assert_eq!(
        validate(
            "PriorityClass",
            &nondefault_class1(),
            &facts(&[default_class1()])
        ),
        Ok(())
    );
}
