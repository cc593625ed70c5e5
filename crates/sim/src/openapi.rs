//! Just enough OpenAPI v3 for kubectl: per group-version documents listing each kind's
//! PATCH operation (`x-kubernetes-group-version-kind`) with the `fieldValidation` query
//! parameter, which is how kubectl's QueryParamVerifierV3 decides the server validates fields
//! itself (so `kubectl create/apply` need no client-side schema). Request bodies do not
//! advertise strategic merge patch, so kubectl computes apply patches from its compiled-in
//! types, exactly as it does against servers without OpenAPI. No schemas are served.
//!
//! `/openapi/v2` is an empty document: kubectl falls back to it for client-side validation
//! of what the v3 documents do not list (a `List` of objects, a kind no one serves), and
//! skips validation of a kind it has no schema for, as against kube-apiserver for a kind
//! without one; without the document it would refuse the file ("failed to download
//! openapi") before asking the server.

use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

fn gv_path(t: &ResourceType) -> String {
    if t.group.is_empty() {
        format!("api/{}", t.version)
    } else {
        format!("apis/{}/{}", t.group, t.version)
    }
}

/// `/openapi/v3/{gv}` for one group-version, or None if nothing is served there.
pub fn gv_document(gv: &str, types: &[ResourceType]) -> Option<Value> {
    let here: Vec<&ResourceType> = types.iter().filter(|t| gv_path(t) == gv).collect();
    if here.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    for t in here {
        let base = if t.namespaced {
            format!("/{gv}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("/{gv}/{}/{{name}}", t.plural)
        };
        let param = |name: &str, place: &str| json!({"name": name, "in": place, "schema": {"type": "string", "uniqueItems": true}});
        let mut params = vec![
            param("name", "path"),
            param("dryRun", "query"),
            param("fieldManager", "query"),
            param("fieldValidation", "query"),
            param("pretty", "query"),
        ];
        if t.namespaced {
            params.push(param("namespace", "path"));
        }
        paths.insert(
            base,
            json!({
                "patch": {
                    "parameters": params,
                    "operationId": format!("patch{}", t.kind),
                    "requestBody": {"content": {
                        "application/json-patch+json": {"schema": {"type": "object"}},
                        "application/merge-patch+json": {"schema": {"type": "object"}},
                    }},
                    "responses": {"200": {"description": "OK"}},
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": t.group, "version": t.version, "kind": t.kind},
                },
            }),
        );
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

/// `/openapi/v3`: the group-version index with content hashes, as kube-apiserver serves it.
pub fn root(types: &[ResourceType]) -> Value {
    let mut paths = Map::new();
    for t in types {
        let gv = gv_path(t);
        if paths.contains_key(&gv) {
            continue;
        }
        let doc = gv_document(&gv, types).unwrap_or_default();
        let hash = hex::encode(Sha256::digest(doc.to_string().as_bytes()));
        paths.insert(
            gv.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={}", &hash[..32].to_uppercase())}),
        );
    }
    json!({"paths": paths})
}

/// The media type kube-openapi answers `/openapi/v2` with (gnostic's `openapi_v2.Document`;
/// clients ask for `...spec.v2@v1.0+protobuf`, but `@` is not valid in a Content-Type Go's
/// `mime.ParseMediaType` reads, so the handler answers with a dot).
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2` as protobuf: `swagger: "2.0"` and an `info` (title, version), no paths
/// and no definitions.
pub fn v2_document() -> Vec<u8> {
    fn field(tag: u8, bytes: &[u8], out: &mut Vec<u8>) {
        out.push(tag);
        out.push(bytes.len() as u8);
        out.extend_from_slice(bytes);
    }
    let mut info = Vec::new();
    field(0x0a, b"Kubernetes", &mut info); // title = 1
    field(0x12, b"v1.32.0", &mut info); // version = 2
    let mut doc = Vec::new();
    field(0x0a, b"2.0", &mut doc); // swagger = 1
    field(0x12, &info, &mut doc); // info = 2
    doc
}
