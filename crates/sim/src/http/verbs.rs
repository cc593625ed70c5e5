//! The verbs on a resource path: list, get, create, update, patch, delete and
//! deletecollection, the `status` and `scale` subresources, and Table output. Objects and
//! lists are answered with the stored bytes (spliced into a list body) unless a Table or
//! another version's shape is asked for.

use super::patch::{scale_of, write_scale, PatchType};
use super::{
    bytes_response, json_response, list_params, manager_of, parse_body, truthy, App, Target,
};
use crate::status::ApiError;
use crate::store::{DeleteOpts, Page, WriteCtx};
use crate::table;
use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap};
use axum::response::Response;
use driftd_k8s::kinds::ResourceType;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Serves `verb` on `target`.
pub(super) fn serve(
    app: &Arc<App>,
    verb: &str,
    target: &Target,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let ctx = WriteCtx {
        manager: manager_of(q, headers),
        dry_run: q.get("dryRun").is_some_and(|d| d == "All"),
        apply: None,
        internal: false,
    };
    let store = &app.store;
    let info = &target.info;
    let ns = target.namespace.as_deref();
    let wants_table = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=Table"));
    let columns = wants_table.then(|| store.printer_columns(info)).flatten();
    let include = q
        .get("includeObject")
        .map(String::as_str)
        .unwrap_or("Metadata");
    match (verb, target.name.as_deref(), target.subresource.as_deref()) {
        ("list", _, _) => {
            let page = store.list_page(info, &list_params(store, info, q, ns)?)?;
            if wants_table {
                let items: Vec<Value> = page.items.iter().map(|s| s.value_as(info)).collect();
                return Ok(json_response(
                    200,
                    &table::table_with(
                        &info.kind,
                        columns.as_deref(),
                        &items,
                        list_metadata(&page),
                        include,
                    ),
                ));
            }
            Ok(bytes_response(200, list_body(info, page)))
        }
        ("create", None, None) => {
            let obj = parse_body(&body)?;
            let created = store.create_written(info, ns, obj, &ctx)?;
            Ok(bytes_response(201, created.json_as(info)))
        }
        ("deletecollection", None, None) => {
            let mut p = list_params(store, info, q, ns)?;
            p.limit = None;
            p.continue_token = None;
            let list = store.list(info, &p)?;
            let mut deleted = Vec::new();
            for item in list["items"].as_array().into_iter().flatten() {
                let name = item
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let item_ns = item.pointer("/metadata/namespace").and_then(Value::as_str);
                if let Ok(d) = store.delete(info, item_ns, name, None, ctx.dry_run) {
                    deleted.push(d);
                }
            }
            Ok(json_response(
                200,
                &json!({"kind": format!("{}List", info.kind), "apiVersion": info.api_version(),
                "metadata": {"resourceVersion": store.current_rv().to_string()}, "items": deleted}),
            ))
        }
        ("get", Some(name), None) | ("get", Some(name), Some("status")) => {
            let stored = store.get_stored(info, ns, name)?;
            if wants_table {
                let obj = stored.value_as(info);
                return Ok(json_response(
                    200,
                    &table::table_with(&info.kind, columns.as_deref(), &[obj], json!({}), include),
                ));
            }
            Ok(bytes_response(200, stored.json_as(info)))
        }
        ("get", Some(name), Some("scale")) => {
            Ok(json_response(200, &scale_of(&store.get(info, ns, name)?)))
        }
        ("update", Some(name), sub @ (None | Some("status"))) => {
            let obj = parse_body(&body)?;
            let updated = store.write_written(info, ns, name, sub, &ctx, |_| Ok(obj))?;
            Ok(bytes_response(200, updated.json_as(info)))
        }
        ("update", Some(name), Some("scale")) => {
            let scale = parse_body(&body)?;
            let updated = write_scale(store, info, ns, name, &ctx, move |_| Ok(scale))?;
            Ok(json_response(200, &updated))
        }
        ("patch", Some(name), sub) => {
            let ctype = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            if ctype == "application/apply-patch+yaml" && sub.is_none() {
                let text = std::str::from_utf8(&body)
                    .map_err(|_| ApiError::bad_request("apply configuration is not UTF-8"))?;
                let config: Value = serde_saphyr::from_str(text).map_err(|e| {
                    ApiError::bad_request(format!("error decoding YAML apply configuration: {e}"))
                })?;
                // Server-side apply takes the manager only from fieldManager, never the User-Agent.
                let ctx = WriteCtx {
                    manager: q.get("fieldManager").cloned().unwrap_or_default(),
                    ..ctx
                };
                let (obj, created) =
                    store.apply(info, ns, name, config, &ctx, truthy(q, "force"))?;
                return Ok(json_response(if created { 201 } else { 200 }, &obj));
            }
            let patch_type = PatchType::from_content_type(&ctype, info)?;
            let patch: Value = serde_json::from_slice(&body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            let kind = info.kind.clone();
            if sub == Some("scale") {
                let updated = write_scale(store, info, ns, name, &ctx, move |scale| {
                    patch_type.apply("Scale", scale, &patch)
                })?;
                return Ok(json_response(200, &updated));
            }
            let out = store.write_written(info, ns, name, sub, &ctx, move |old| {
                let mut new = patch_type.apply(&kind, old, &patch)?;
                // A patch that does not mention resourceVersion carries no precondition.
                if patch.pointer("/metadata/resourceVersion").is_none()
                    && patch_type != PatchType::Json
                {
                    if let Some(md) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                        md.remove("resourceVersion");
                    }
                }
                Ok(new)
            })?;
            Ok(bytes_response(200, out.json_as(info)))
        }
        ("delete", Some(name), None) => {
            let body_opts: Value = if body.is_empty() {
                json!({})
            } else {
                parse_body(&body)?
            };
            let s = |p: &str| {
                body_opts
                    .pointer(p)
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            let opts = DeleteOpts {
                precondition_rv: s("/preconditions/resourceVersion"),
                precondition_uid: s("/preconditions/uid"),
                propagation: s("/propagationPolicy")
                    .or_else(|| q.get("propagationPolicy").cloned())
                    .or_else(|| {
                        // The deprecated orphanDependents flag, still sent by old clients.
                        (body_opts.get("orphanDependents") == Some(&json!(true)))
                            .then(|| "Orphan".into())
                    }),
                dry_run: ctx.dry_run
                    || body_opts
                        .get("dryRun")
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().any(|d| d == "All")),
            };
            let deletion = store.delete_with(info, ns, name, &opts)?;
            if !deletion.gone || (info.kind == "Pod" && !info.custom) {
                // Not deleted yet (finalizers), or a Pod (graceful deletion): kube-apiserver
                // returns the object.
                return Ok(json_response(200, &deletion.object));
            }
            let uid = deletion
                .object
                .pointer("/metadata/uid")
                .cloned()
                .unwrap_or(Value::Null);
            let mut details =
                json!({"name": name, "group": info.group, "kind": info.plural, "uid": uid});
            if info.group.is_empty() {
                details.as_object_mut().map(|d| d.remove("group"));
            }
            Ok(json_response(
                200,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Success", "details": details}),
            ))
        }
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// `metadata` of a list response.
fn list_metadata(page: &Page) -> Value {
    let mut metadata = json!({"resourceVersion": page.rv.to_string()});
    if let Some(c) = &page.continue_token {
        metadata["continue"] = json!(c);
    }
    metadata
}

/// Bytes per chunk of a streamed list body.
const LIST_CHUNK: usize = 256 * 1024;

/// A `<Kind>List` body made of the items' stored bytes, streamed in chunks so a list of the
/// whole store is never one buffer.
fn list_body(info: &ResourceType, page: Page) -> Body {
    let mut head = serde_json::to_string(&json!({
        "kind": format!("{}List", info.kind),
        "apiVersion": info.api_version(),
        "metadata": list_metadata(&page),
    }))
    .expect("JSON values serialize");
    head.pop(); // the closing brace: items follow
    head.push_str(",\"items\":[");
    if page.items.len() < 64 {
        let mut out = head.into_bytes();
        for (i, s) in page.items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            s.write_json_as(info, &mut out);
        }
        out.extend_from_slice(b"]}");
        return Body::from(out);
    }
    let info = info.clone();
    let mut items = page.items.into_iter().enumerate();
    let mut head = Some(head.into_bytes());
    let mut done = false;
    let chunks = std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut buf = head.take().unwrap_or_default();
        loop {
            match items.next() {
                Some((i, s)) => {
                    if i > 0 {
                        buf.push(b',');
                    }
                    s.write_json_as(&info, &mut buf);
                    if buf.len() >= LIST_CHUNK {
                        return Some(Ok::<_, std::io::Error>(Bytes::from(buf)));
                    }
                }
                None => {
                    buf.extend_from_slice(b"]}");
                    done = true;
                    return Some(Ok(Bytes::from(buf)));
                }
            }
        }
    });
    Body::from_stream(tokio_stream::iter(chunks))
}
