//! What discovery says of a built-in resource besides its names and scope: short names,
//! categories, and whether it has a `scale` subresource. k8s-openapi does not carry these;
//! they are each registry's `ShortNames()`, `Categories()` and scale storage in kube's
//! `pkg/registry/<group>/<resource>/storage/storage.go`. (A `status` subresource is read
//! from the type itself: every built-in with a `status` field serves one.)

/// Discovery facts of one resource beyond k8s-openapi's.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras {
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// Serves `/scale` (the kinds `kubectl scale` and an HPA can scale).
    pub scale: bool,
}

const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// (group, plural, short names, categories, scale).
type Row = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    bool,
);

const ROWS: &[Row] = &[
    ("", "configmaps", &["cm"], &[], false),
    ("", "componentstatuses", &["cs"], &[], false),
    ("", "endpoints", &["ep"], &[], false),
    ("", "events", &["ev"], &[], false),
    ("", "limitranges", &["limits"], &[], false),
    ("", "namespaces", &["ns"], &[], false),
    ("", "nodes", &["no"], &[], false),
    ("", "persistentvolumeclaims", &["pvc"], &[], false),
    ("", "persistentvolumes", &["pv"], &[], false),
    ("", "pods", &["po"], ALL, false),
    ("", "replicationcontrollers", &["rc"], ALL, true),
    ("", "resourcequotas", &["quota"], &[], false),
    ("", "serviceaccounts", &["sa"], &[], false),
    ("", "services", &["svc"], ALL, false),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicies",
        &[],
        API_EXTENSIONS,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
        &[],
        API_EXTENSIONS,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        &[],
        API_EXTENSIONS,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        &[],
        API_EXTENSIONS,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        &[],
        API_EXTENSIONS,
        false,
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        &[],
        API_EXTENSIONS,
        false,
    ),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        &["crd", "crds"],
        API_EXTENSIONS,
        false,
    ),
    (
        "apiregistration.k8s.io",
        "apiservices",
        &[],
        API_EXTENSIONS,
        false,
    ),
    ("apps", "daemonsets", &["ds"], ALL, false),
    ("apps", "deployments", &["deploy"], ALL, true),
    ("apps", "replicasets", &["rs"], ALL, true),
    ("apps", "statefulsets", &["sts"], ALL, true),
    (
        "autoscaling",
        "horizontalpodautoscalers",
        &["hpa"],
        ALL,
        false,
    ),
    ("batch", "cronjobs", &["cj"], ALL, false),
    ("batch", "jobs", &[], ALL, false),
    (
        "certificates.k8s.io",
        "certificatesigningrequests",
        &["csr"],
        &[],
        false,
    ),
    ("events.k8s.io", "events", &["ev"], &[], false),
    ("networking.k8s.io", "ingresses", &["ing"], &[], false),
    (
        "networking.k8s.io",
        "networkpolicies",
        &["netpol"],
        &[],
        false,
    ),
    ("policy", "poddisruptionbudgets", &["pdb"], &[], false),
    ("scheduling.k8s.io", "priorityclasses", &["pc"], &[], false),
    ("storage.k8s.io", "storageclasses", &["sc"], &[], false),
];

/// The extras of the resource `plural` in `group` (none for most).
pub fn extras(group: &str, plural: &str) -> Extras {
    ROWS.iter()
        .find(|r| r.0 == group && r.1 == plural)
        .map(|&(_, _, short_names, categories, scale)| Extras {
            short_names,
            categories,
            scale,
        })
        .unwrap_or_default()
}
