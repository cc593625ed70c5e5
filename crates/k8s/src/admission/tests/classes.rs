//! DefaultStorageClass and DefaultIngressClass, against every case of `TestAdmission` in
//! `plugin/pkg/admission/storage/storageclass/setdefault/admission_test.go` and
//! `plugin/pkg/admission/network/defaultingressclass/admission_test.go` (the versions that
//! pick the newest of several defaults, ties by the smaller name).

use serde_json::{json, Value};

use crate::admission::{admit, AdmissionFacts};

fn class(kind: &str, name: &str, annotation: Option<&str>, created: Option<&str>) -> Value {
    let (api_version, key) = match kind {
        "StorageClass" => (
            "storage.k8s.io/v1",
            "storageclass.kubernetes.io/is-default-class",
        ),
        _ => (
            "networking.k8s.io/v1",
            "ingressclass.kubernetes.io/is-default-class",
        ),
    };
    let mut c = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if let Some(a) = annotation {
        c["metadata"]["annotations"] = json!({ key: a });
    }
    if let Some(t) = created {
        c["metadata"]["creationTimestamp"] = json!(t);
    }
    c
}

/// The classes both test files define: two defaults, one `"false"`, one unannotated, one
/// `""`, and two defaults created a nanosecond apart (2022-01-01, `default1` the newer).
fn classes(kind: &str) -> [Value; 7] {
    [
        class(kind, "default1", Some("true"), None),
        class(kind, "default2", Some("true"), None),
        class(kind, "nondefault1", Some("false"), None),
        class(kind, "nondefault2", None, None),
        class(kind, "nondefault2", Some(""), None),
        class(
            kind,
            "default1",
            Some("true"),
            Some("2022-01-01T00:00:00.000000001Z"),
        ),
        class(kind, "default2", Some("true"), Some("2022-01-01T00:00:00Z")),
    ]
}

/// A case: name, which of [`classes`] exist, the class the object names, the class
/// expected after admission.
type Case<'a> = (&'a str, &'a [usize], Option<&'a str>, Option<&'a str>);
/// An Ingress case: as [`Case`], with the class annotation after the field.
type IngressCase<'a> = (
    &'a str,
    &'a [usize],
    Option<&'a str>,
    Option<&'a str>,
    Option<&'a str>,
);

fn pick<'a>(all: &'a [Value; 7], which: &[usize]) -> Vec<&'a Value> {
    which.iter().map(|i| &all[*i]).collect()
}

#[test]
fn storage_class_test_admission() {
    let all = classes("StorageClass");
    let claim = |class: Option<&str>| {
        let mut c = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "claim", "namespace": "ns"}, "spec": {}});
        if let Some(class) = class {
            c["spec"]["storageClassName"] = json!(class);
        }
        c
    };
    let no_default = [2, 3, 4];
    let one_default = [0, 2, 3, 4];
    let two_defaults = [0, 1, 2, 3, 4];
    let two_timed = [5, 6, 2, 3, 4];
    let cases: [Case; 8] = [
        (
            "no default, no modification of PVCs",
            &no_default,
            None,
            None,
        ),
        (
            "one default, modify PVC with class=nil",
            &one_default,
            None,
            Some("default1"),
        ),
        (
            "one default, no modification of PVC with class=''",
            &one_default,
            Some(""),
            Some(""),
        ),
        (
            "one default, no modification of PVC with class='foo'",
            &one_default,
            Some("foo"),
            Some("foo"),
        ),
        (
            "two defaults, no modification of PVC with class=''",
            &two_defaults,
            Some(""),
            Some(""),
        ),
        (
            "two defaults, no modification of PVC with class='foo'",
            &two_defaults,
            Some("foo"),
            Some("foo"),
        ),
        (
            "two defaults with same creation time, choose the one with smaller name",
            &two_defaults,
            None,
            Some("default1"),
        ),
        (
            "two defaults, choose the one with newer creation time",
            &two_timed,
            None,
            Some("default1"),
        ),
    ];
    for (name, which, given, want) in cases {
        let facts = AdmissionFacts::from_objects(pick(&all, which));
        let mut pvc = claim(given);
        admit("PersistentVolumeClaim", &mut pvc, &facts, "unused");
        assert_eq!(
            pvc["spec"].get("storageClassName").and_then(Value::as_str),
            want,
            "{name}"
        );
    }
    // Hand derivation from `helper.PersistentVolumeClaimHasClass` (pkg/apis/core/helper):
    // a claim with the beta annotation has a class, even without the field.
    let facts = AdmissionFacts::from_objects(pick(&all, &one_default));
    let mut pvc = claim(None);
    pvc["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "slow"});
    admit("PersistentVolumeClaim", &mut pvc, &facts, "unused");
    assert!(pvc["spec"].get("storageClassName").is_none());
    // `IsDefaultAnnotation` (pkg/volume/util/storageclass.go): the beta key marks a default too.
    let beta = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "beta",
        "annotations": {"storageclass.beta.kubernetes.io/is-default-class": "true"}}});
    assert_eq!(
        AdmissionFacts::from_objects([&beta])
            .default_storage_class
            .as_deref(),
        Some("beta")
    );
}

#[test]
fn ingress_class_test_admission() {
    let all = classes("IngressClass");
    let ingress = |field: Option<&str>, annotation: Option<&str>| {
        let mut i = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "testing", "namespace": "testing"}, "spec": {}});
        if let Some(f) = field {
            i["spec"]["ingressClassName"] = json!(f);
        }
        if let Some(a) = annotation {
            i["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": a});
        }
        i
    };
    let no_default = [2, 3, 4];
    let one_default = [0, 2, 3, 4];
    let two_defaults = [0, 1, 2, 3, 4];
    let two_timed = [5, 6, 2, 3, 4];
    let cases: [IngressCase; 8] = [
        (
            "no default, no modification of Ingress",
            &no_default,
            None,
            None,
            None,
        ),
        (
            "one default, modify Ingress with class=nil",
            &one_default,
            None,
            None,
            Some("default1"),
        ),
        (
            "one default, no modification of Ingress with class field=''",
            &one_default,
            Some(""),
            None,
            Some(""),
        ),
        (
            "one default, no modification of Ingress with class field='foo'",
            &one_default,
            Some("foo"),
            None,
            Some("foo"),
        ),
        (
            "one default, no modification of Ingress with class annotation='foo'",
            &one_default,
            None,
            Some("foo"),
            None,
        ),
        (
            "two defaults with the same creation time, choose the one with the lower name",
            &two_defaults,
            None,
            None,
            Some("default1"),
        ),
        (
            "two defaults, no modification with Ingress with class field=''",
            &two_defaults,
            Some(""),
            None,
            Some(""),
        ),
        (
            "two defaults, choose the one with the newer creation time",
            &two_timed,
            None,
            None,
            Some("default1"),
        ),
    ];
    for (name, which, field, annotation, want) in cases {
        let facts = AdmissionFacts::from_objects(pick(&all, which));
        let mut ing = ingress(field, annotation);
        admit("Ingress", &mut ing, &facts, "unused");
        assert_eq!(
            ing["spec"].get("ingressClassName").and_then(Value::as_str),
            want,
            "{name}"
        );
    }
}

#[test]
fn a_newer_default_wins_whatever_its_name() {
    // Hand derivation from GetDefaultClass's sort: newest first, so the later-created
    // `aaa` beats `zzz` although its name sorts first only on a tie.
    let older = class(
        "StorageClass",
        "zzz",
        Some("true"),
        Some("2026-11-20T09:15:00Z"),
    );
    let newer = class(
        "StorageClass",
        "aaa",
        Some("true"),
        Some("2026-11-20T09:15:01Z"),
    );
    let older_b = class(
        "StorageClass",
        "aaa",
        Some("true"),
        Some("2026-11-20T09:15:00Z"),
    );
    let newer_b = class(
        "StorageClass",
        "zzz",
        Some("true"),
        Some("2026-11-20T09:15:01Z"),
    );
    assert_eq!(
        AdmissionFacts::from_objects([&older, &newer])
            .default_storage_class
            .as_deref(),
        Some("aaa")
    );
    assert_eq!(
        AdmissionFacts::from_objects([&older_b, &newer_b])
            .default_storage_class
            .as_deref(),
        Some("zzz")
    );
}
