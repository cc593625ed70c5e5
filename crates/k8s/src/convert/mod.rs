//! Conversion between the versions kube-apiserver serves one built-in kind in.
//!
//! kube-apiserver keeps every object of a kind in one storage version and converts on each
//! request: the body from the request's version to the internal type, the internal type to
//! the storage version for etcd, and back to whatever version a client reads. A client that
//! writes `autoscaling/v1` and reads `autoscaling/v2` (or the reverse) sees what those
//! conversions make of its object, which is not always what it wrote (an `autoscaling/v1`
//! HorizontalPodAutoscaler without a CPU target reads back with 80%). The simulator
//! converts with these functions so it answers every served version as kube does; the
//! differ may use them to compare a manifest with a live object read in another version.
//!
//! The storage shape of every kind here is its preferred version, which is also kube's
//! internal shape written in that version's field names, so a conversion between a served
//! version and the storage version is the composition kube-apiserver runs (served ->
//! internal -> storage), taken as one step.

mod autoscaling;

use serde_json::Value;

use crate::kinds::{split_api_version, ResourceType, ALL_BUILTIN};

pub use autoscaling::{hpa_v1_to_v2, hpa_v2_to_v1};

/// A conversion known between two versions of one kind: (group, kind, from, to).
type Conversion = (&'static str, &'static str, &'static str, &'static str);

/// Every conversion driftd knows, each from a served version to the storage version and
/// back. kube-apiserver v1.32 serves only one built-in kind in two GA versions of one group
/// by default: HorizontalPodAutoscaler in autoscaling/v2 (storage) and autoscaling/v1
/// (`pkg/apis/autoscaling/v1/conversion.go`). The two Event APIs live in different groups
/// and are the simulator's own business (one storage, two shapes).
const KNOWN: &[Conversion] = &[
    ("autoscaling", "HorizontalPodAutoscaler", "v1", "v2"),
    ("autoscaling", "HorizontalPodAutoscaler", "v2", "v1"),
];

/// `object` (an object of a built-in kind, with its `apiVersion`) in the version
/// `to_api_version` of the same group, as kube-apiserver converts it; `None` when driftd
/// knows no conversion between the two versions. Converting to the object's own version
/// returns it unchanged.
pub fn convert(object: &Value, to_api_version: &str) -> Option<Value> {
    let from = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let (group, from_version) = split_api_version(from);
    let (to_group, to_version) = split_api_version(to_api_version);
    if group != to_group {
        return None;
    }
    if from_version == to_version {
        return Some(object.clone());
    }
    match (group, kind, from_version, to_version) {
        ("autoscaling", "HorizontalPodAutoscaler", "v1", "v2") => Some(hpa_v1_to_v2(object)),
        ("autoscaling", "HorizontalPodAutoscaler", "v2", "v1") => Some(hpa_v2_to_v1(object)),
        _ => None,
    }
}

/// `object` (of a built-in type, already defaulted for its own version) as a client reads it
/// back in that version when kube-apiserver stores the kind in another: converted to the
/// storage version, given that version's defaults (applied when the stored object is
/// decoded), converted back. What a manifest leaves out can come back set this way (an
/// autoscaling/v1 HorizontalPodAutoscaler without a CPU target reads back with 80%), so
/// that is the committed state to compare with. `None` when the type is its own storage
/// version or driftd knows no conversion.
pub fn read_back(object: &Value) -> Option<Value> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let served = crate::kinds::builtin(api_version, kind)?;
    let storage = storage_type(served)?;
    let storage_version = storage.api_version();
    let mut stored = convert(object, &storage_version)?;
    crate::defaults::apply(&storage_version, kind, &mut stored);
    convert(&stored, api_version)
}

/// Whether driftd can convert objects of `group`/`kind` between `version` and `other`.
pub fn converts(group: &str, kind: &str, version: &str, other: &str) -> bool {
    version == other
        || KNOWN
            .iter()
            .any(|&(g, k, from, to)| (g, k, from, to) == (group, kind, version, other))
}

/// The built-in types kube-apiserver serves by default besides each kind's preferred
/// version ([`crate::kinds::BUILTIN`]) whose conversion driftd knows: what a server that
/// answers every version of a kind serves in addition, in [`ALL_BUILTIN`]'s order.
pub fn also_served() -> impl Iterator<Item = &'static ResourceType> {
    ALL_BUILTIN.iter().filter(|t| {
        t.served
            && !t.storage
            && ALL_BUILTIN.iter().any(|s| {
                s.storage
                    && s.served
                    && s.group == t.group
                    && s.kind == t.kind
                    && converts(&t.group, &t.kind, &t.version, &s.version)
                    && converts(&t.group, &t.kind, &s.version, &t.version)
            })
    })
}

/// The type objects of the built-in `t` are stored as (its preferred version), when that is
/// another version; `None` for a type that is its own storage and for custom resources.
pub fn storage_type(t: &ResourceType) -> Option<&'static ResourceType> {
    if t.custom || t.storage {
        return None;
    }
    ALL_BUILTIN
        .iter()
        .find(|s| s.storage && s.group == t.group && s.kind == t.kind)
}
