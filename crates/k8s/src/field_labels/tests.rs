use super::*;
use serde_json::json;

fn labels(group: &str, version: &str, kind: &str) -> FieldLabels {
    FieldLabels::builtin(group, version, kind, kind != "Node" && kind != "Namespace")
}

fn refusal(labels: &FieldLabels, selector: &str) -> String {
    labels.selector(selector).unwrap_err()
}

/// The refusals as kube-apiserver words them, each from where it is written.
#[test]
fn unsupported_labels_are_refused_in_each_kinds_words() {
    // pkg/apis/core/v1/conversion.go, AddFieldLabelConversionsForEvent: core/v1 Events
    // select on involvedObject.*, not on events.k8s.io's names.
    assert_eq!(
        refusal(&labels("", "v1", "Event"), "regarding.name=web"),
        "field label not supported: regarding.name"
    );
    // The reverse, as a real API server answered it for
    // /apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dfoo
    // (kubernetes-client/javascript issue 1364): message of the 400 BadRequest Status.
    assert_eq!(
        refusal(
            &labels("events.k8s.io", "v1", "Event"),
            "involvedObject.name=foo"
        ),
        "field label not supported: involvedObject.name"
    );
    // kubernetes.io, "Field Selectors", Supported fields: `kubectl get ingress
    // --field-selector foo.bar=baz` (a kind without a registered conversion).
    assert_eq!(
        refusal(&labels("networking.k8s.io", "v1", "Ingress"), "foo.bar=baz"),
        r#""foo.bar" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
    // pkg/apis/batch/v1/conversion.go, addConversionFuncs.
    assert_eq!(
        refusal(&labels("batch", "v1", "Job"), "status.succeeded=1"),
        r#"field label "status.succeeded" not supported for batchv1.Job"#
    );
    // pkg/apis/core/v1/conversion.go: Node lists metadata.name and spec.unschedulable only.
    assert_eq!(
        refusal(&labels("", "v1", "Node"), "metadata.namespace=x"),
        "field label not supported: metadata.namespace"
    );
    // pkg/apis/apps/v1beta2/conversion.go, addConversionFuncs.
    assert_eq!(
        refusal(&labels("apps", "v1beta2", "StatefulSet"), "spec.replicas=1"),
        "field label not supported for appsv1beta2.StatefulSet: spec.replicas"
    );
    // Every requirement is converted: the first refused one is the answer.
    assert_eq!(
        refusal(
            &labels("", "v1", "Pod"),
            "status.phase=Running,spec.containers=x"
        ),
        "field label not supported: spec.containers"
    );
}

/// The labels each conversion accepts (pkg/apis/core/v1/conversion.go,
/// pkg/apis/events/v1/conversion.go), and what they become.
#[test]
fn supported_labels_convert_to_the_fields_the_registry_exposes() {
    let pod = labels("", "v1", "Pod");
    for label in [
        "metadata.name",
        "metadata.namespace",
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ] {
        assert_eq!(pod.convert(label).as_deref(), Ok(label));
    }
    // "This is for backwards compatibility with old v1 clients which send spec.host".
    assert_eq!(pod.convert("spec.host").as_deref(), Ok("spec.nodeName"));
    let events = labels("events.k8s.io", "v1", "Event");
    for (label, field) in [
        ("regarding.kind", "involvedObject.kind"),
        ("regarding.name", "involvedObject.name"),
        ("regarding.namespace", "involvedObject.namespace"),
        ("regarding.uid", "involvedObject.uid"),
        ("reportingController", "reportingComponent"),
        ("reason", "reason"),
        ("type", "type"),
    ] {
        assert_eq!(events.convert(label).as_deref(), Ok(field), "{label}");
    }
    for label in ["spec.clusterIP", "spec.type"] {
        assert!(labels("", "v1", "Service").convert(label).is_ok());
    }
    assert!(labels("", "v1", "Secret").convert("type").is_ok());
    assert!(labels("", "v1", "Namespace")
        .convert("status.phase")
        .is_ok());
    // apps/v1 registers no conversion in 1.32: the default two only.
    let rs = labels("apps", "v1", "ReplicaSet");
    assert!(rs.convert("metadata.namespace").is_ok());
    assert!(rs.convert("status.replicas").is_err());
}

/// pkg/registry/core/pod/strategy_test.go, TestMatchPod: its cases as data (the internal
/// type's `PodIPs` and `SecurityContext.HostNetwork` are v1's `status.podIPs` and
/// `spec.hostNetwork`).
#[test]
fn pods_match_as_the_pod_registry_matches_them() {
    let cases = [
        (
            json!({"spec": {"nodeName": "nodeA"}}),
            "spec.nodeName=nodeA",
            true,
        ),
        (
            json!({"spec": {"nodeName": "nodeB"}}),
            "spec.nodeName=nodeA",
            false,
        ),
        (
            json!({"spec": {"restartPolicy": "Always"}}),
            "spec.restartPolicy=Always",
            true,
        ),
        (
            json!({"spec": {"restartPolicy": "Always"}}),
            "spec.restartPolicy=Never",
            false,
        ),
        (
            json!({"spec": {"schedulerName": "scheduler1"}}),
            "spec.schedulerName=scheduler1",
            true,
        ),
        (
            json!({"spec": {"schedulerName": "scheduler1"}}),
            "spec.schedulerName=scheduler2",
            false,
        ),
        (
            json!({"spec": {"serviceAccountName": "serviceAccount1"}}),
            "spec.serviceAccountName=serviceAccount1",
            true,
        ),
        (
            json!({"spec": {"schedulerName": "serviceAccount1"}}),
            "spec.serviceAccountName=serviceAccount2",
            false,
        ),
        (
            json!({"status": {"phase": "Running"}}),
            "status.phase=Running",
            true,
        ),
        (
            json!({"status": {"phase": "Running"}}),
            "status.phase=Pending",
            false,
        ),
        (
            json!({"status": {"podIPs": [{"ip": "1.2.3.4"}]}}),
            "status.podIP=1.2.3.4",
            true,
        ),
        (
            json!({"status": {"podIPs": [{"ip": "1.2.3.4"}]}}),
            "status.podIP=4.3.2.1",
            false,
        ),
        (
            json!({"status": {"nominatedNodeName": "node1"}}),
            "status.nominatedNodeName=node1",
            true,
        ),
        (
            json!({"status": {"nominatedNodeName": "node1"}}),
            "status.nominatedNodeName=node2",
            false,
        ),
        (
            json!({"status": {"podIPs": [{"ip": "2001:db8::"}]}}),
            "status.podIP=2001:db8::",
            true,
        ),
        (
            json!({"status": {"podIPs": [{"ip": "2001:db8::"}]}}),
            "status.podIP=2001:db7::",
            false,
        ),
        (
            json!({"spec": {"hostNetwork": true}}),
            "spec.hostNetwork=true",
            true,
        ),
        (
            json!({"spec": {"hostNetwork": true}}),
            "spec.hostNetwork=false",
            false,
        ),
        (
            json!({"spec": {"hostNetwork": false}}),
            "spec.hostNetwork=false",
            true,
        ),
        (json!({"spec": {}}), "spec.hostNetwork=false", true),
        (json!({"spec": {}}), "spec.hostNetwork=true", false),
    ];
    let pod = labels("", "v1", "Pod");
    for (object, selector, expected) in cases {
        let selection = pod.selector(selector).unwrap();
        assert_eq!(
            selection.matches(&object),
            expected,
            "{selector} on {object}"
        );
    }
}

/// pkg/registry/core/event/strategy.go, ToSelectableFields: both APIs select on the one
/// stored Event, events.k8s.io's labels mapped onto the core fields; `source` is the
/// source component, else the reporting controller.
#[test]
fn events_match_from_either_api_shape() {
    let core = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "shop"},
        "involvedObject": {"kind": "Deployment", "name": "web"},
        "reason": "DriftDetected", "type": "Warning",
        "reportingComponent": "driftd", "source": {}});
    let events = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "web.1", "namespace": "shop"},
        "regarding": {"kind": "Deployment", "name": "web"},
        "reason": "DriftDetected", "type": "Warning",
        "reportingController": "driftd"});
    let core_labels = labels("", "v1", "Event");
    let events_labels = labels("events.k8s.io", "v1", "Event");
    for (labels, object, selector, expected) in [
        (&core_labels, &core, "involvedObject.name=web", true),
        (&core_labels, &core, "involvedObject.name=api", false),
        (
            &core_labels,
            &core,
            "reason=DriftDetected,type=Warning",
            true,
        ),
        (&core_labels, &core, "source=driftd", true),
        (&core_labels, &core, "reportingComponent=driftd", true),
        (&events_labels, &events, "regarding.name=web", true),
        (
            &events_labels,
            &events,
            "regarding.kind=Deployment,reason=DriftDetected",
            true,
        ),
        (&events_labels, &events, "regarding.name!=web", false),
        (&events_labels, &events, "reportingController=driftd", true),
        (&events_labels, &events, "source=driftd", true),
    ] {
        let selection = labels.selector(selector).unwrap();
        assert_eq!(selection.matches(object), expected, "{selector}");
    }
}

/// A field the object lacks reads as "" (fields.Set.Get), and integers and flags as their
/// text (strconv.Itoa / FormatBool in the registries' GetAttrs).
#[test]
fn missing_fields_read_empty_and_numbers_as_text() {
    let job = labels("batch", "v1", "Job");
    let done = json!({"status": {"succeeded": 3}});
    assert!(job.selector("status.successful=3").unwrap().matches(&done));
    assert!(job
        .selector("status.successful=0")
        .unwrap()
        .matches(&json!({})));
    let node = labels("", "v1", "Node");
    assert!(node
        .selector("spec.unschedulable=false")
        .unwrap()
        .matches(&json!({"spec": {}})));
    let cm = labels("", "v1", "ConfigMap");
    let object = json!({"metadata": {"name": "a", "namespace": "default"}});
    assert!(cm
        .selector("metadata.namespace!=kube-system")
        .unwrap()
        .matches(&object));
    assert!(!cm.selector("metadata.name=b").unwrap().matches(&object));
    // A cluster-scoped kind has no namespace field: "" matches, anything else does not.
    let pv = labels("", "v1", "PersistentVolume");
    let volume = json!({"metadata": {"name": "pv-1"}});
    assert!(pv.selector("metadata.namespace=").unwrap().matches(&volume));
    assert!(!pv
        .selector("metadata.namespace=default")
        .unwrap()
        .matches(&volume));
}

/// apiextensions-apiserver's converter: `metadata.namespace` only for namespaced custom
/// resources, plus the version's `selectableFields`; anything else is refused with the
/// core wording.
#[test]
fn custom_resources_select_on_their_selectable_fields() {
    let namespaced = FieldLabels::Custom {
        namespaced: true,
        selectable: vec!["spec.color".into(), "spec.size".into()],
    };
    let shirt = json!({"metadata": {"name": "s", "namespace": "shop"}, "spec": {"color": "blue", "size": 2}});
    assert!(namespaced
        .selector("spec.color=blue")
        .unwrap()
        .matches(&shirt));
    assert!(namespaced.selector("spec.size=2").unwrap().matches(&shirt));
    assert!(namespaced
        .selector("metadata.namespace=shop")
        .unwrap()
        .matches(&shirt));
    assert_eq!(
        refusal(&namespaced, "spec.weight=1"),
        "field label not supported: spec.weight"
    );
    let cluster = FieldLabels::Custom {
        namespaced: false,
        selectable: Vec::new(),
    };
    assert_eq!(
        refusal(&cluster, "metadata.namespace=shop"),
        "field label not supported: metadata.namespace"
    );
}

#[test]
fn malformed_selectors_are_refused_before_conversion() {
    let pod = labels("", "v1", "Pod");
    assert!(pod.selector("status.phase").is_err());
    assert!(pod.selector("").unwrap().is_empty());
}
