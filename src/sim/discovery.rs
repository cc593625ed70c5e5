//! Discovery documents (`/version`, `/api`, `/apis`, group and group-version resource lists)
//! in the legacy (non-aggregated) JSON form; kubectl falls back to it when the server does
//! not answer with `apidiscovery.k8s.io/v2`.

use super::store::ResourceInfo;
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

fn group_doc(name: &str, types: &[ResourceInfo]) -> Value {
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
pub fn api_group(name: &str, types: &[ResourceInfo]) -> Option<Value> {
    if !types.iter().any(|t| t.group == name) {
        return None;
    }
    let mut g = group_doc(name, types);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

pub fn api_group_list(types: &[ResourceInfo]) -> Value {
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
pub fn resource_list(group: &str, version: &str, types: &[ResourceInfo]) -> Option<Value> {
    let here: Vec<&ResourceInfo> = types
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
