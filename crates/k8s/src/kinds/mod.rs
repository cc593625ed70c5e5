//! The built-in resource types driftd and the simulator know without asking discovery.
//!
//! Group, version, kind, plural and scope of every built-in kind come from `k8s-openapi`'s
//! `Resource` trait (the OpenAPI documents kube-apiserver publishes), never typed by hand,
//! so the manifest loader never guesses a scope; discovery's short names, categories and
//! subresources are added from kube's registry code ([`discovery`]). The simulator's
//! discovery and the manifest loader's namespace defaulting both read this table.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

/// One servable resource type (a built-in, or a version a CustomResourceDefinition lists),
/// as a discovery document describes it. The simulator serves these, the manifest loader
/// takes scopes from them; both read CRDs with [`CustomResourceTypes::read`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    /// Discovery categories; kubectl's `get all` expands the `all` category.
    pub categories: Vec<String>,
    /// Subresources served besides the main resource (e.g. `status`, `scale`).
    pub subresources: Vec<String>,
    /// Defined by a CustomResourceDefinition rather than built into kube-apiserver.
    pub custom: bool,
    /// Whether the version is served (a CRD may list versions it no longer serves).
    pub served: bool,
    /// Whether objects are stored in this version (one version of a CRD).
    pub storage: bool,
}

impl ResourceType {
    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether the subresource `sub` (`status`, `scale`) is served.
    pub fn has(&self, sub: &str) -> bool {
        self.subresources.iter().any(|s| s == sub)
    }
}

mod discovery;
mod openapi_types;

pub(crate) use openapi_types::for_each_openapi_resource;

/// A resource scope as a value: whether a k8s-openapi scope type is namespaced (`None` for
/// subresources, which the type list leaves out).
trait ScopeValue {
    const NAMESPACED: Option<bool>;
}

impl ScopeValue for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: Option<bool> = Some(true);
}

impl ScopeValue for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: Option<bool> = Some(false);
}

impl ScopeValue for k8s_openapi::SubResourceScope {
    const NAMESPACED: Option<bool> = None;
}

/// The type `T` as kube-apiserver's discovery describes it: names and scope from
/// k8s-openapi, short names, categories and subresources from [`discovery`].
fn openapi_type<T>() -> Option<ResourceType>
where
    T: k8s_openapi::Resource,
    T::Scope: ScopeValue,
{
    let namespaced = <T::Scope as ScopeValue>::NAMESPACED?;
    let extras = discovery::extras(T::GROUP, T::URL_PATH_SEGMENT);
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
    let mut subresources = Vec::new();
    if crate::api_types::has_status(T::GROUP, T::VERSION, T::KIND) {
        subresources.push("status".to_string());
    }
    if extras.scale {
        subresources.push("scale".to_string());
    }
    Some(ResourceType {
        group: T::GROUP.into(),
        version: T::VERSION.into(),
        kind: T::KIND.into(),
        plural: T::URL_PATH_SEGMENT.into(),
        singular: T::KIND.to_lowercase(),
        namespaced,
        short_names: strings(extras.short_names),
        categories: strings(extras.categories),
        subresources,
        custom: false,
        served: is_ga(T::VERSION),
        // Set by `all_builtin` once every version of the kind is known.
        storage: false,
    })
}

macro_rules! collect_openapi_types {
    ($($ty:path),* $(,)?) => {
        vec![$(openapi_type::<$ty>()),*]
    };
}

/// Every built-in kind in every version k8s-openapi knows, served or not.
///
/// `served` is whether kube-apiserver serves the version without `--runtime-config`: GA
/// versions only, since beta APIs are off by default from Kubernetes 1.24 (KEP-3136) and
/// alpha APIs always were. `storage` marks the preferred version of each kind (highest
/// priority by kube's version ordering, `version.CompareKubeAwareVersionStrings`), the one
/// a client uses and the simulator serves.
pub static ALL_BUILTIN: LazyLock<Vec<ResourceType>> = LazyLock::new(|| {
    let mut types: Vec<ResourceType> =
        openapi_types::for_each_openapi_resource!(collect_openapi_types)
            .into_iter()
            .flatten()
            .collect();
    let preferred: Vec<usize> = (0..types.len())
        .filter(|&i| {
            let t = &types[i];
            !types.iter().any(|o| {
                o.group == t.group
                    && o.kind == t.kind
                    && version_priority(&o.version) > version_priority(&t.version)
            })
        })
        .collect();
    for i in preferred {
        types[i].storage = true;
    }
    types
});

/// Built-in types a cluster serves by default, one per kind (its preferred version): what
/// the simulator serves and `kubectl api-resources` lists.
pub static BUILTIN: LazyLock<Vec<ResourceType>> = LazyLock::new(|| {
    ALL_BUILTIN
        .iter()
        .filter(|t| t.served && t.storage)
        .cloned()
        .collect()
});

/// [`ALL_BUILTIN`] by kind: every comparison asks what its object's kind is, and a scan of
/// the whole table was a tenth of the drift engine's thread at 100,000 objects.
static BUILTIN_BY_KIND: LazyLock<HashMap<&'static str, Vec<&'static ResourceType>>> =
    LazyLock::new(|| {
        let mut by_kind: HashMap<&str, Vec<&ResourceType>> = HashMap::new();
        for t in ALL_BUILTIN.iter() {
            by_kind.entry(t.kind.as_str()).or_default().push(t);
        }
        by_kind
    });

/// The built-in types named `kind`, in every group and version.
fn builtin_of_kind(kind: &str) -> impl Iterator<Item = &'static ResourceType> {
    BUILTIN_BY_KIND.get(kind).into_iter().flatten().copied()
}

/// Whether `version` is a GA version (`v1`, `v2`), as opposed to `v1beta1`, `v2alpha1`.
fn is_ga(version: &str) -> bool {
    version
        .strip_prefix('v')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Sort key of a version as apimachinery's `CompareKubeAwareVersionStrings` orders them:
/// GA before beta before alpha, then higher major, then higher minor; versions that are not
/// Kubernetes-style sort last.
pub fn version_priority(version: &str) -> (u8, u64, u64) {
    let Some(rest) = version.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(major) = rest[..digits].parse::<u64>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    let (level, minor) = if let Some(m) = tail.strip_prefix("beta") {
        (2, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (1, m)
    } else {
        return (0, 0, 0);
    };
    match minor.parse::<u64>() {
        Ok(minor) => (level, major, minor),
        Err(_) => (0, 0, 0),
    }
}

/// What a CustomResourceDefinition declares: the kind, its scope, and one resource type per
/// version it lists (served or not). One reading of a CRD for the simulator, which serves
/// the served versions, and the manifest loader, which needs only the scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomResourceTypes {
    pub group: String,
    pub kind: String,
    /// `spec.scope` is required; `Cluster` is the only cluster-scoped value.
    pub namespaced: bool,
    /// One per `spec.versions` entry, in order.
    pub versions: Vec<ResourceType>,
}

impl CustomResourceTypes {
    /// Reads the CustomResourceDefinition `crd`; `None` without `spec.group` or
    /// `spec.names.kind`, which every other name derives from.
    pub fn read(crd: &Value) -> Option<CustomResourceTypes> {
        let spec = crd.get("spec")?;
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        let texts = |v: &Value| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        let group = spec.get("group")?.as_str()?.to_string();
        let names = &spec["names"];
        let kind = names.get("kind")?.as_str()?.to_string();
        let singular = match names["singular"].as_str() {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => kind.to_lowercase(),
        };
        let namespaced = spec["scope"].as_str() != Some("Cluster");
        let versions = spec["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| ResourceType {
                group: group.clone(),
                version: text(&v["name"]),
                kind: kind.clone(),
                plural: text(&names["plural"]),
                singular: singular.clone(),
                namespaced,
                short_names: texts(&names["shortNames"]),
                categories: texts(&names["categories"]),
                subresources: ["status", "scale"]
                    .into_iter()
                    .filter(|s| v.pointer(&format!("/subresources/{s}")).is_some())
                    .map(str::to_string)
                    .collect(),
                custom: true,
                served: v["served"].as_bool().unwrap_or(true),
                storage: v["storage"].as_bool().unwrap_or(false),
            })
            .collect();
        Some(CustomResourceTypes {
            group,
            kind,
            namespaced,
            versions,
        })
    }

    /// The versions served, as the resource types a server offers.
    pub fn served(&self) -> impl Iterator<Item = &ResourceType> {
        self.versions.iter().filter(|v| v.served)
    }
}

/// Splits an apiVersion into (group, version); the core group is "".
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Looks up a built-in type by apiVersion and kind, in any version k8s-openapi knows.
pub fn builtin(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    let (group, version) = split_api_version(api_version);
    builtin_of_kind(kind).find(|r| r.group == group && r.version == version)
}

/// Whether a built-in group/kind is namespaced, whatever the version; `None` if unknown
/// (a custom resource whose scope only its CRD can tell).
pub fn builtin_namespaced(group: &str, kind: &str) -> Option<bool> {
    builtin_of_kind(kind)
        .find(|r| r.group == group)
        .map(|r| r.namespaced)
}

/// Whether `group` is one of kube-apiserver's own API groups (the core group is `""`). No
/// CustomResourceDefinition can add a kind to these (`*.k8s.io` groups need an API review
/// approval, and the core group has no CRDs at all), so an unknown kind there is a mistake.
pub fn is_builtin_group(group: &str) -> bool {
    ALL_BUILTIN.iter().any(|r| r.group == group)
}

/// The apiVersions in which kube-apiserver knows `kind` in any built-in group, preferred
/// versions first: what a mistyped apiVersion should have been.
pub fn builtin_api_versions(kind: &str) -> Vec<String> {
    let mut types: Vec<&ResourceType> = builtin_of_kind(kind).collect();
    types.sort_by_key(|r| (!r.storage, std::cmp::Reverse(version_priority(&r.version))));
    types.iter().map(|r| r.api_version()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_crd_reads_into_one_type_per_version() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"group": "example.com", "scope": "Cluster",
                "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"],
                          "categories": ["all"]},
                "versions": [
                    {"name": "v1beta1", "served": false, "storage": false},
                    {"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas"}}}]}});
        let t = CustomResourceTypes::read(&crd).unwrap();
        assert_eq!(
            (t.group.as_str(), t.kind.as_str(), t.namespaced),
            ("example.com", "Widget", false)
        );
        let served: Vec<&ResourceType> = t.served().collect();
        assert_eq!(served.len(), 1);
        let v1 = served[0];
        assert_eq!(v1.api_version(), "example.com/v1");
        assert_eq!(v1.singular, "widget");
        assert_eq!(v1.short_names, ["wd"]);
        assert_eq!(v1.categories, ["all"]);
        assert!(v1.has("status") && v1.has("scale") && v1.custom && v1.storage);
        assert!(!t.versions[0].served && !t.versions[0].storage && !t.versions[0].has("status"));

        // Scope comes from the CRD even when it lists no versions; group and kind are needed.
        let bare = json!({"spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Gadget"}}});
        let t = CustomResourceTypes::read(&bare).unwrap();
        assert!(t.namespaced && t.versions.is_empty());
        assert_eq!(
            CustomResourceTypes::read(&json!({"spec": {"names": {"kind": "X"}}})),
            None
        );
    }

    #[test]
    fn core_and_grouped_versions_split() {
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
        assert_eq!(
            builtin("apps/v1", "Deployment").unwrap().plural,
            "deployments"
        );
        assert_eq!(builtin_namespaced("", "Namespace"), Some(false));
        assert_eq!(builtin_namespaced("example.com", "Widget"), None);
    }

    #[test]
    fn scopes_come_from_k8s_openapi_for_kinds_the_hand_table_lacked() {
        for (group, kind) in [
            ("storage.k8s.io", "StorageClass"),
            ("", "PersistentVolume"),
            ("networking.k8s.io", "IngressClass"),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
            ),
            ("apiregistration.k8s.io", "APIService"),
            ("scheduling.k8s.io", "PriorityClass"),
        ] {
            assert_eq!(builtin_namespaced(group, kind), Some(false), "{kind}");
        }
        for (group, kind) in [
            ("networking.k8s.io", "NetworkPolicy"),
            ("", "ReplicationController"),
            ("policy", "PodDisruptionBudget"),
            ("", "Endpoints"),
            ("discovery.k8s.io", "EndpointSlice"),
        ] {
            assert_eq!(builtin_namespaced(group, kind), Some(true), "{kind}");
        }
    }

    #[test]
    fn served_types_are_the_preferred_ga_version_of_each_kind() {
        let served = |group: &str, kind: &str| -> Vec<String> {
            BUILTIN
                .iter()
                .filter(|t| t.group == group && t.kind == kind)
                .map(|t| t.version.clone())
                .collect()
        };
        assert_eq!(served("autoscaling", "HorizontalPodAutoscaler"), ["v2"]);
        assert_eq!(served("apps", "Deployment"), ["v1"]);
        // Only beta and alpha versions: known, not served by default.
        assert!(builtin("scheduling.k8s.io/v1beta1", "Workload").is_some());
        assert!(served("scheduling.k8s.io", "Workload").is_empty());
        // Subresources and discovery documents are not kinds.
        assert!(builtin("autoscaling/v1", "Scale").is_none());
        assert!(builtin("v1", "APIGroup").is_none());
        // Every served kind once, except the two Event APIs kube serves from one storage.
        let mut seen = std::collections::BTreeSet::new();
        for t in BUILTIN.iter() {
            assert!(seen.insert((&t.group, &t.kind)), "{} twice", t.kind);
        }
        assert_eq!(
            builtin_api_versions("HorizontalPodAutoscaler"),
            ["autoscaling/v2", "autoscaling/v1"]
        );
        assert_eq!(builtin_api_versions("Deployment"), ["apps/v1"]);
    }

    #[test]
    fn discovery_columns_of_the_simulator_are_kept() {
        let t = builtin("apps/v1", "Deployment").unwrap();
        assert_eq!(t.short_names, ["deploy"]);
        assert_eq!(t.categories, ["all"]);
        assert!(t.has("status") && t.has("scale"));
        let cm = builtin("v1", "ConfigMap").unwrap();
        assert!(cm.subresources.is_empty() && cm.short_names == ["cm"]);
        assert!(builtin("v1", "Namespace").unwrap().has("status"));
        assert!(!builtin("v1", "Secret").unwrap().has("status"));
        let crd = builtin("apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap();
        assert_eq!(crd.short_names, ["crd", "crds"]);
    }

    #[test]
    fn versions_order_as_kube_orders_them() {
        let mut v = vec![
            "v1alpha1",
            "v2beta1",
            "v1",
            "v10",
            "v2",
            "v11alpha2",
            "v1beta2",
            "foo",
        ];
        v.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(
            v,
            [
                "v10",
                "v2",
                "v1",
                "v2beta1",
                "v1beta2",
                "v11alpha2",
                "v1alpha1",
                "foo"
            ]
        );
    }

    /// The type list is k8s-openapi's: every `impl crate::Resource` of the `latest` version
    /// that is neither a subresource nor a discovery document. With `DRIFTD_BLESS=1` the
    /// list is rewritten from k8s-openapi's source (after a k8s-openapi upgrade).
    #[test]
    fn openapi_list_matches_k8s_openapi() {
        let src = k8s_openapi_source().join("src");
        let latest = std::fs::read_dir(&src)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("v1_"))
            .max_by_key(|n| n[3..].parse::<u32>().unwrap_or(0))
            .expect("a versioned module");
        let root = src.join(&latest);
        let mut files = Vec::new();
        rust_files(&root, &mut files);
        let mut paths = Vec::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let Some(line) = text
                .lines()
                .find(|l| l.starts_with("impl crate::Resource for "))
            else {
                continue;
            };
            if text.contains("type Scope = crate::SubResourceScope")
                || text.contains("const URL_PATH_SEGMENT: &'static str = \"\";")
            {
                continue;
            }
            let ty = line["impl crate::Resource for ".len()..].trim_end_matches(" {");
            let module = file.parent().unwrap().strip_prefix(&root).unwrap();
            let module: Vec<String> = module
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            paths.push(format!("k8s_openapi::{}::{ty}", module.join("::")));
        }
        paths.sort();
        let ours = include_str!("openapi_types.rs");
        let listed: Vec<String> = ours
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("k8s_openapi::"))
            .map(|l| l.trim_end_matches(',').to_string())
            .collect();
        if listed != paths && std::env::var_os("DRIFTD_BLESS").is_some() {
            let start =
                ours.find("        $callback! {\n").unwrap() + "        $callback! {\n".len();
            let end = ours.find("        }\n    };").unwrap();
            let body: String = paths
                .iter()
                .map(|p| format!("            {p},\n"))
                .collect();
            let text = format!("{}{body}{}", &ours[..start], &ours[end..]);
            let file =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/kinds/openapi_types.rs");
            std::fs::write(file, text).unwrap();
            return;
        }
        assert_eq!(listed, paths, "stale: rerun with DRIFTD_BLESS=1 ({latest})");
        assert_eq!(ALL_BUILTIN.len(), paths.len());
    }

    /// Where cargo unpacked the k8s-openapi this crate builds with.
    fn k8s_openapi_source() -> std::path::PathBuf {
        // Without a platform filter, `cargo metadata` wants every platform's dependencies.
        let rustc = std::process::Command::new("rustc")
            .arg("-vV")
            .output()
            .expect("rustc runs");
        let host = String::from_utf8_lossy(&rustc.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
            .expect("rustc names its host");
        let out = std::process::Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1", "--offline"])
            .args(["--filter-platform", &host])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
        let manifest = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "k8s-openapi")
            .and_then(|p| p["manifest_path"].as_str())
            .expect("k8s-openapi is a dependency")
            .to_string();
        std::path::PathBuf::from(manifest)
            .parent()
            .unwrap()
            .to_path_buf()
    }

    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
}
