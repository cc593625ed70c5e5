//! Discovery documents (`/version`, `/api`, `/apis`, group and group-version resource lists)
//! in the legacy JSON form, and `/api`, `/apis` as aggregated `apidiscovery.k8s.io/v2`
//! lists for clients that ask for them (one request instead of one per group-version).

use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "32",
        "gitVersion": "v1.32.0-driftd-sim",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

pub fn api_versions(addr: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}],
    })
}

fn group_doc(name: &str, types: &[ResourceType]) -> Value {
    let mut versions: Vec<&str> = Vec::new();
    for t in types.iter().filter(|t| t.group == name) {
        if !versions.contains(&t.version.as_str()) {
            versions.push(&t.version);
        }
    }
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(json!({})),
    })
}

/// `/apis/{group}`, or None if no type is served in that group.
pub fn api_group(name: &str, types: &[ResourceType]) -> Option<Value> {
    if !types.iter().any(|t| t.group == name) {
        return None;
    }
    let mut g = group_doc(name, types);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

pub fn api_group_list(types: &[ResourceType]) -> Value {
    let mut names: Vec<&str> = Vec::new();
    for t in types.iter().filter(|t| !t.group.is_empty()) {
        if !names.contains(&t.group.as_str()) {
            names.push(&t.group);
        }
    }
    json!({
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": names.iter().map(|n| group_doc(n, types)).collect::<Vec<_>>(),
    })
}

/// `/api/v1` or `/apis/{group}/{version}`, or None if nothing is served there.
pub fn resource_list(group: &str, version: &str, types: &[ResourceType]) -> Option<Value> {
    let here: Vec<&ResourceType> = types
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .collect();
    if here.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for t in here {
        let mut r = json!({
            "name": t.plural,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        for sub in &t.subresources {
            let mut s = json!({
                "name": format!("{}/{sub}", t.plural),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": ["get", "patch", "update"],
            });
            if sub == "scale" {
                s["group"] = json!("autoscaling");
                s["version"] = json!("v1");
                s["kind"] = json!("Scale");
            }
            resources.push(s);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }))
}

/// The media type of aggregated discovery (`apidiscovery.k8s.io/v2`), which clients look for
/// in the response's Content-Type before decoding it as such.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether an Accept header asks for aggregated discovery v2.
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').any(|part| {
        let p: Vec<&str> = part.split(';').map(str::trim).collect();
        p.contains(&"g=apidiscovery.k8s.io")
            && p.contains(&"v=v2")
            && p.contains(&"as=APIGroupDiscoveryList")
    })
}

fn resource_discovery(t: &ResourceType) -> Value {
    let gvk = |g: &str, v: &str, k: &str| json!({"group": g, "version": v, "kind": k});
    let subresources: Vec<Value> = t
        .subresources
        .iter()
        .map(|sub| {
            let kind = if sub == "scale" {
                gvk("autoscaling", "v1", "Scale")
            } else {
                gvk(&t.group, &t.version, &t.kind)
            };
            json!({"subresource": sub, "responseKind": kind, "verbs": ["get", "patch", "update"]})
        })
        .collect();
    let mut r = json!({
        "resource": t.plural,
        "responseKind": gvk(&t.group, &t.version, &t.kind),
        "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": t.singular,
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    });
    if !t.short_names.is_empty() {
        r["shortNames"] = json!(t.short_names);
    }
    if !t.categories.is_empty() {
        r["categories"] = json!(t.categories);
    }
    if !subresources.is_empty() {
        r["subresources"] = json!(subresources);
    }
    r
}

/// `/api` (core) or `/apis` (every other group) as an `APIGroupDiscoveryList`.
pub fn aggregated(core: bool, types: &[ResourceType]) -> Value {
    let mut groups: Vec<&str> = Vec::new();
    for t in types.iter().filter(|t| t.group.is_empty() == core) {
        if !groups.contains(&t.group.as_str()) {
            groups.push(&t.group);
        }
    }
    let items: Vec<Value> = groups
        .iter()
        .map(|g| {
            let mut versions: Vec<&str> = Vec::new();
            for t in types.iter().filter(|t| t.group == *g) {
                if !versions.contains(&t.version.as_str()) {
                    versions.push(&t.version);
                }
            }
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = types
                        .iter()
                        .filter(|t| t.group == *g && t.version == *v)
                        .map(resource_discovery)
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube-apiserver v1.32 serves HorizontalPodAutoscalers in autoscaling/v2 and
    /// autoscaling/v1, v2 preferred (`pkg/controlplane/apiserver` registers the versions in
    /// priority order; `kubectl get hpa` answers v2): the group lists both, v2 first.
    #[test]
    fn autoscaling_lists_v1_after_the_preferred_v2() {
        let types = crate::store::Store::new(10).types();
        let group = api_group("autoscaling", &types).unwrap();
        assert_eq!(group["preferredVersion"]["version"], "v2");
        let versions: Vec<&str> = group["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        assert_eq!(versions, ["v2", "v1"]);
        let v1 = resource_list("autoscaling", "v1", &types).unwrap();
        let names: Vec<&str> = v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status"
            ]
        );
        let aggregated = aggregated(false, &types);
        let autoscaling = aggregated["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["metadata"]["name"] == "autoscaling")
            .unwrap();
        assert_eq!(autoscaling["versions"][0]["version"], "v2");
        assert_eq!(autoscaling["versions"][1]["version"], "v1");
    }
}
