//! Adopting drift: turning the differences the differ reports into edits of the manifest
//! file an object came from, so that the file says what the live object has at each
//! drifting path, and nothing else in the file changes.
//!
//! The differences are the differ's own [`Change`]s (the same list `/drift` reports, after
//! normalization and ignore rules), so what adopt writes is exactly what is reported as
//! drift. Each change becomes an [`Edit`] at its RFC 6901 path into the desired object:
//! `replace` sets the live value, `remove` (live has what the manifest lacks: a list item,
//! or a field a previous revision set) adds it, `add` (the manifest has what live lacks)
//! deletes it. List items are addressed by their position in the desired list (keyed lists
//! are matched by key, and the position is where that key's item is in the manifest); an item
//! only live has is appended to the list.
//!
//! Files are edited as text, node by node ([`edit`], over [`tree`]: byte ranges from the
//! spans of the YAML parser `manifest` reads with), never re-serialised: every byte outside
//! an edited node stays. Secret values are never adopted (they would be written in clear).

mod edit;
mod render;
#[cfg(test)]
mod tests;
mod tree;

pub use edit::{apply, Action, Edit, EditError};

use crate::diff::pointer::unescape;
use crate::diff::{Change, ChangeOp};
use tree::NodeKind;

/// A change adopt does not make, and why (never with a value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: String,
    pub reason: String,
}

/// The edits that make a manifest of kind `kind` equal the live object at the paths of
/// `changes`, and the changes refused.
pub fn edits_for(kind: &str, changes: &[Change]) -> (Vec<Edit>, Vec<Refusal>) {
    let mut edits = Vec::new();
    let mut refused = Vec::new();
    for c in changes {
        let tokens: Vec<String> = c.path.split('/').skip(1).map(unescape).collect();
        if let Some(reason) = secret_refusal(kind, &tokens) {
            refused.push(Refusal {
                field: c.field.clone(),
                reason,
            });
            continue;
        }
        let action = match (c.op, &c.live) {
            (ChangeOp::Add, _) => Action::Delete,
            (ChangeOp::Replace, Some(live)) => Action::Set(live.clone()),
            (ChangeOp::Remove, Some(live)) => Action::Add(live.clone()),
            (_, None) => {
                refused.push(Refusal {
                    field: c.field.clone(),
                    reason: "the difference carries no live value".into(),
                });
                continue;
            }
        };
        edits.push(Edit {
            tokens,
            field: c.field.clone(),
            action,
        });
    }
    (edits, refused)
}

/// Why a change of a Secret is not adopted: its values (and its annotations, which the
/// differ shows as hashes since the last-applied one embeds the values) would be written in
/// clear, and are only known as hashes anyway.
fn secret_refusal(kind: &str, tokens: &[String]) -> Option<String> {
    if kind != "Secret" {
        return None;
    }
    let first = tokens.first().map(String::as_str);
    let annotations = tokens.len() <= 3
        && tokens.first().is_some_and(|t| t == "metadata")
        && tokens.get(1).is_some_and(|t| t == "annotations");
    if matches!(first, Some("data" | "stringData")) || annotations {
        Some(
            "a Secret value: adopt never writes Secret values in clear. Update it where the \
             value is kept (your secret manager, a SealedSecret or SOPS file, or by hand from \
             `kubectl get secret` yourself), then commit as usual"
                .into(),
        )
    } else {
        None
    }
}

/// The path from document `document`'s root to object `kind`/`name` in `text`: empty when
/// the document is the object, `items/N` when it is a List holding it. An error says what
/// the document is instead (the file changed since it was committed).
pub fn locate(text: &str, document: usize, kind: &str, name: &str) -> Result<Vec<String>, String> {
    let docs = tree::parse(text)?;
    let Some(Some(root)) = docs.get(document) else {
        return Err(format!("the file has no document {document}"));
    };
    let scalar = |node: &tree::Node, path: &[&str]| -> Option<String> {
        let mut n = node;
        for p in path {
            n = &n.entry(p)?.1;
        }
        match &n.kind {
            NodeKind::Scalar { value, .. } => Some(value.clone()),
            _ => None,
        }
    };
    let is_it = |node: &tree::Node| {
        scalar(node, &["kind"]).as_deref() == Some(kind)
            && scalar(node, &["metadata", "name"]).as_deref() == Some(name)
    };
    if is_it(root) {
        return Ok(Vec::new());
    }
    let is_list = scalar(root, &["kind"]).is_some_and(|k| k.ends_with("List"));
    if let (true, Some((_, items))) = (is_list, root.entry("items")) {
        if let NodeKind::Seq { items, .. } = &items.kind {
            if let Some(i) = items.iter().position(is_it) {
                return Ok(vec!["items".into(), i.to_string()]);
            }
        }
    }
    Err(format!(
        "document {document} is not {kind} {name:?} (the file changed since it was committed?)"
    ))
}
