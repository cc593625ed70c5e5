//! Lists: a page of a type as it was at one resourceVersion, without copying the type.
//! Objects unchanged since then are read from the current map; the few changed since are
//! undone from the history (each change keeps the version before it). Continue tokens
//! carry the resourceVersion and the last key, as kube-apiserver's do.

use super::super::status::ApiError;
use super::object::{Key, Stored};
use super::{Inner, Store};
use driftd_k8s::field_labels::FieldSelection;
use driftd_k8s::kinds::ResourceType;
use driftd_k8s::selector::Selector;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

/// Parameters of a list call.
#[derive(Debug, Default, Clone)]
pub struct ListParams {
    pub namespace: Option<String>,
    pub labels: Selector,
    /// Converted for the listed kind (an unsupported field is refused before listing).
    pub fields: FieldSelection,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
}

/// One page of a list: the stored versions (bytes shared with the store), the
/// resourceVersion the page shows, and the token for the next page.
pub struct Page {
    pub rv: u64,
    pub items: Vec<Arc<Stored>>,
    pub continue_token: Option<String>,
}

fn decode_continue(token: &str) -> Result<(u64, Key), ApiError> {
    use base64::Engine;
    let bad = || ApiError::bad_request(format!("invalid continue token: {token:?}"));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    // `namespace/name`: neither may contain a slash.
    let (ns, name) = start.split_once('/').ok_or_else(bad)?;
    Ok((rv, (ns.to_string(), name.to_string())))
}

fn encode_continue(rv: u64, last: &Key) -> String {
    use base64::Engine;
    let start = format!("{}/{}", last.0, last.1);
    let v = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

impl ListParams {
    fn selects(&self, info: &ResourceType, s: &Stored) -> bool {
        if self.labels.is_empty() && self.fields.is_empty() {
            return true;
        }
        let obj = s.value_as(info);
        self.labels.matches_labels(obj.pointer("/metadata/labels")) && self.fields.matches(&obj)
    }
}

impl Store {
    /// Lists objects, honouring resourceVersion semantics, selectors and paging.
    pub fn list_page(&self, info: &ResourceType, p: &ListParams) -> Result<Page, ApiError> {
        let (snapshot_rv, candidates) = {
            let g = self.lock();
            let (snapshot_rv, start_after) = match &p.continue_token {
                Some(tok) if !tok.is_empty() => {
                    let (rv, start) = decode_continue(tok)?;
                    if rv < g.history.oldest() {
                        return Err(ApiError::expired(
                            "The provided continue parameter is too old to display a consistent list result. \
                             You can start a new list without the continue parameter, or use the continue token \
                             in this response to retrieve the remainder of the results. Continuing with the \
                             provided token results in an inconsistent list - objects that were created, modified, \
                             or deleted between the time the first chunk was returned and now may show up in the list.",
                        ));
                    }
                    (rv, Some(start))
                }
                _ => {
                    let requested = match p.resource_version.as_deref() {
                        None | Some("") | Some("0") => None,
                        Some(s) => Some(s.parse::<u64>().map_err(|_| {
                            ApiError::bad_request(format!("invalid resource version: {s:?}"))
                        })?),
                    };
                    match (requested, p.resource_version_match.as_deref()) {
                        (Some(rv), _) if rv > g.rv => {
                            // The cause is how client-go's reflector recognizes this case.
                            return Err(ApiError {
                                details: Some(json!({
                                    "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                                    "retryAfterSeconds": 1,
                                })),
                                ..ApiError::new(
                                    504,
                                    "Timeout",
                                    format!(
                                        "Timeout: Too large resource version: {rv}, current: {}",
                                        g.rv
                                    ),
                                )
                            });
                        }
                        (Some(rv), Some("Exact")) => {
                            if rv < g.history.oldest() {
                                return Err(ApiError::expired(format!(
                                "The resourceVersion for the provided list is too old. (requested {rv}, oldest {})",
                                g.history.oldest()
                            )));
                            }
                            (rv, None)
                        }
                        (None, Some("Exact")) => return Err(ApiError::bad_request(
                            "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"\"",
                        )),
                        _ => (g.rv, None),
                    }
                }
            };
            // Without selectors a page needs at most `limit + 1` candidates; with them, the
            // selection happens outside the lock, on every candidate after the start.
            let want = match p.limit.filter(|l| *l > 0) {
                Some(l) if p.labels.is_empty() && p.fields.is_empty() => l + 1,
                _ => usize::MAX,
            };
            let candidates = g.view(
                info,
                snapshot_rv,
                p.namespace.as_deref(),
                start_after.as_ref(),
                want,
            );
            (snapshot_rv, candidates)
        };
        let mut items = Vec::new();
        let mut next = None;
        for s in candidates {
            if !p.selects(info, &s) {
                continue;
            }
            if p.limit.is_some_and(|l| l > 0 && items.len() >= l) {
                next = items
                    .last()
                    .map(|last: &Arc<Stored>| encode_continue(snapshot_rv, &last.key));
                break;
            }
            items.push(s);
        }
        Ok(Page {
            rv: snapshot_rv,
            items,
            continue_token: next,
        })
    }

    /// [`Store::list_page`] as a `<Kind>List` object.
    pub fn list(&self, info: &ResourceType, p: &ListParams) -> Result<Value, ApiError> {
        let page = self.list_page(info, p)?;
        let mut metadata = json!({"resourceVersion": page.rv.to_string()});
        if let Some(c) = page.continue_token {
            metadata["continue"] = json!(c);
        }
        Ok(json!({
            "kind": format!("{}List", info.kind),
            "apiVersion": info.api_version(),
            "metadata": metadata,
            "items": page.items.iter().map(|s| s.value_as(info)).collect::<Vec<_>>(),
        }))
    }
}

impl Inner {
    /// Up to `max` objects of a type as they were at `rv`, in key order, after `start_after`
    /// and in `ns` when given: the current objects, with changes made after `rv` undone.
    fn view(
        &self,
        info: &ResourceType,
        rv: u64,
        ns: Option<&str>,
        start_after: Option<&Key>,
        max: usize,
    ) -> Vec<Arc<Stored>> {
        let in_range = |k: &Key| ns.is_none_or(|ns| k.0 == ns) && start_after.is_none_or(|s| k > s);
        // Key -> the version visible at `rv` (None: it did not exist then). Walking newest
        // first, the earliest change after `rv` is written last and wins.
        let mut undone: BTreeMap<&Key, Option<&Arc<Stored>>> = BTreeMap::new();
        for c in self.history.newest_after(rv) {
            if c.concerns(info) && in_range(c.key()) {
                undone.insert(c.key(), c.prev.as_ref());
            }
        }
        let lower = match (start_after, ns) {
            (Some(s), _) => Bound::Excluded(s.clone()),
            (None, Some(ns)) => Bound::Included((ns.to_string(), String::new())),
            (None, None) => Bound::Unbounded,
        };
        let current = self
            .kind(info)
            .into_iter()
            .flat_map(|k| k.objects.range((lower.clone(), Bound::Unbounded)))
            .take_while(|(k, _)| ns.is_none_or(|ns| k.0 == ns));
        let mut out = Vec::new();
        let mut undone = undone.into_iter().peekable();
        let mut current = current.peekable();
        while out.len() < max {
            let next_undone = undone.peek().map(|(k, _)| *k);
            let next_current = current.peek().map(|(k, _)| *k);
            let item = match (next_current, next_undone) {
                (None, None) => break,
                (Some(c), Some(u)) if c < u => current.next().map(|(_, s)| Some(s)),
                (Some(c), Some(u)) if c == u => {
                    current.next();
                    undone.next().map(|(_, s)| s)
                }
                (_, Some(_)) => undone.next().map(|(_, s)| s),
                (Some(_), None) => current.next().map(|(_, s)| Some(s)),
            };
            if let Some(Some(s)) = item {
                out.push(s.clone());
            }
        }
        out
    }
}
