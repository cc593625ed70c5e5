//! Edits of one document of a YAML (or JSON) file, spliced into its text: only the bytes of
//! the node an edit changes are rewritten, so comments, key order, quoting and indentation
//! of every other line stay as they were. Each edit parses the text again (manifests are
//! small), so edits never work from stale positions.

use super::render;
use super::tree::{self, Node, NodeKind};
use serde_json::Value;
use serde_saphyr::granit_parser::ScalarStyle;

/// What to do at a path of the manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Make the value at the path this (creating the mappings leading to it).
    Set(Value),
    /// Add a value the manifest lacks: an item of the list the path's parent is (appended),
    /// or else a field, as [`Action::Set`].
    Add(Value),
    /// Remove the field or list item at the path.
    Delete,
}

/// One edit: RFC 6901 tokens (unescaped) below the object's root, and the readable field
/// name errors use.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    pub tokens: Vec<String>,
    pub field: String,
    pub action: Action,
}

/// Where a node sits, which decides how its text is replaced or removed.
#[derive(Debug, Clone, Copy)]
enum Place<'a> {
    Root,
    /// The value of entry `index` of `map`.
    Entry {
        map: &'a Node,
        index: usize,
    },
    /// Item `index` of `seq`.
    Item {
        seq: &'a Node,
        index: usize,
    },
}

/// The nodes from the object's root down the path as far as the manifest has it.
struct Found<'a> {
    /// (node, place) for the root and each token found.
    chain: Vec<(&'a Node, Place<'a>)>,
}

impl<'a> Found<'a> {
    fn depth(&self) -> usize {
        self.chain.len() - 1
    }

    fn last(&self) -> (&'a Node, Place<'a>) {
        *self.chain.last().expect("the root is always found")
    }
}

fn find<'a>(root: &'a Node, tokens: &[String]) -> Found<'a> {
    let mut chain = vec![(root, Place::Root)];
    for token in tokens {
        let (node, _) = *chain.last().expect("not empty");
        let next = match &node.kind {
            NodeKind::Map { entries, .. } => entries
                .iter()
                .rposition(
                    |(k, _)| matches!(&k.kind, NodeKind::Scalar { value, .. } if value == token),
                )
                .map(|index| (&entries[index].1, Place::Entry { map: node, index })),
            NodeKind::Seq { items, .. } => token
                .parse::<usize>()
                .ok()
                .filter(|i| *i < items.len())
                .map(|index| (&items[index], Place::Item { seq: node, index })),
            _ => None,
        };
        match next {
            Some(step) => chain.push(step),
            None => break,
        }
    }
    Found { chain }
}

/// Offset of the start of the line holding `pos`.
fn line_start(text: &str, pos: usize) -> usize {
    text[..pos].rfind('\n').map_or(0, |i| i + 1)
}

/// Offset just past the newline ending the line holding `pos` (the text's end if none).
fn line_end(text: &str, pos: usize) -> usize {
    text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1)
}

fn column(text: &str, pos: usize) -> usize {
    pos - line_start(text, pos)
}

/// Offset just past the last line of a node in block context (a block scalar's range
/// already ends there).
fn after_last_line(text: &str, node: &Node) -> usize {
    let end = node.range.end;
    if end > node.range.start && text.as_bytes()[end - 1] == b'\n' {
        end
    } else {
        line_end(text, end)
    }
}

/// The dash of a block list item starting at `pos`.
fn dash_before(text: &str, pos: usize) -> Option<usize> {
    let before = text[..pos].trim_end_matches([' ', '\t', '\n', '\r']);
    before.ends_with('-').then(|| before.len() - 1)
}

/// Column of the keys of a block mapping (its first key's).
fn key_column(text: &str, map: &Node) -> usize {
    match &map.kind {
        NodeKind::Map { entries, .. } if !entries.is_empty() => {
            column(text, entries[0].0.range.start)
        }
        _ => column(text, map.range.start),
    }
}

/// One text splice.
struct Splice {
    range: std::ops::Range<usize>,
    with: String,
}

/// Applies the edits to document `document` of `text`; `prefix` leads from the document's
/// root to the object (empty, or `items/N` in a List). Sets and additions first, then
/// removals from the last list position backwards, so no edit moves what a later one
/// addresses.
pub fn apply(
    text: &str,
    document: usize,
    prefix: &[String],
    edits: &[Edit],
) -> Result<String, EditError> {
    let mut ordered: Vec<&Edit> = edits
        .iter()
        .filter(|e| e.action != Action::Delete)
        .collect();
    let mut deletes: Vec<&Edit> = edits
        .iter()
        .filter(|e| e.action == Action::Delete)
        .collect();
    deletes.sort_by(|a, b| token_order(&b.tokens, &a.tokens));
    ordered.extend(deletes);
    let mut text = text.to_string();
    for edit in ordered {
        let mut tokens = prefix.to_vec();
        tokens.extend(edit.tokens.iter().cloned());
        let splice =
            plan_one(&text, document, &tokens, &edit.action).map_err(|reason| EditError {
                field: edit.field.clone(),
                reason,
            })?;
        // New lines end as the file's lines do.
        let with = if text.contains("\r\n") {
            splice.with.replace('\n', "\r\n")
        } else {
            splice.with
        };
        text.replace_range(splice.range, &with);
    }
    Ok(text)
}

/// Orders paths with list positions compared as numbers.
fn token_order(a: &[String], b: &[String]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.parse::<usize>(), y.parse::<usize>()) {
            (Ok(i), Ok(j)) => i.cmp(&j),
            _ => x.cmp(y),
        };
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// An edit adopt could not make, naming the field; never holds a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field {field}: {reason}")]
pub struct EditError {
    pub field: String,
    pub reason: String,
}

fn plan_one(
    text: &str,
    document: usize,
    tokens: &[String],
    action: &Action,
) -> Result<Splice, String> {
    let docs = tree::parse(text)?;
    let root = docs
        .get(document)
        .and_then(Option::as_ref)
        .ok_or_else(|| format!("the file has no document {document}"))?;
    let found = find(root, tokens);
    let (node, place) = found.last();
    let complete = found.depth() == tokens.len();
    match action {
        Action::Delete if complete => delete(text, node, place),
        // A field the manifest leaves to kube-apiserver's defaults: nothing to remove here.
        // Whether the default still applies once the other edits are made (a `Recreate`
        // strategy has no `rollingUpdate`) is for the caller to check by comparing again.
        Action::Delete => Ok(Splice {
            range: 0..0,
            with: String::new(),
        }),
        Action::Set(value) | Action::Add(value) if complete => replace(text, node, place, value),
        Action::Set(value) | Action::Add(value) => {
            let rest = &tokens[found.depth()..];
            let is_add = matches!(action, Action::Add(_));
            match &node.kind {
                NodeKind::Seq { .. } if is_add && rest.len() == 1 => append(text, node, value),
                NodeKind::Map { .. } => {
                    let inner = nest(&rest[1..], value)?;
                    insert(text, node, &rest[0], &inner)
                }
                _ if node.is_null() && found.depth() > 0 => {
                    replace(text, node, place, &nest(rest, value)?)
                }
                _ => Err(format!(
                    "the manifest has {} at {} where the live object has more",
                    node.what(),
                    shown(&tokens[..found.depth()])
                )),
            }
        }
    }
}

fn shown(tokens: &[String]) -> String {
    if tokens.is_empty() {
        "the object's root".into()
    } else {
        tokens.join(".")
    }
}

/// `value` below the fields `tokens` (`a`, `b` -> `{a: {b: value}}`).
fn nest(tokens: &[String], value: &Value) -> Result<Value, String> {
    let mut out = value.clone();
    for t in tokens.iter().rev() {
        if t.parse::<usize>().is_ok() {
            return Err(format!(
                "the manifest lacks the list that position {t} is in; add the list by hand"
            ));
        }
        let mut map = serde_json::Map::new();
        map.insert(t.clone(), out);
        out = Value::Object(map);
    }
    Ok(out)
}

/// Whether a place is inside a flow collection (`{...}`, `[...]`, JSON).
fn in_flow(place: Place) -> bool {
    match place {
        Place::Root => false,
        Place::Entry { map, .. } => map.is_flow(),
        Place::Item { seq, .. } => seq.is_flow(),
    }
}

/// The text of `node` replaced by `value`.
fn replace(text: &str, node: &Node, place: Place, value: &Value) -> Result<Splice, String> {
    if matches!(node.kind, NodeKind::Alias) {
        return Err("the manifest gives it through an alias (`*name`); edit it by hand".into());
    }
    // Inside a flow collection, or a flow collection itself (`[a, b]` after a key): flow
    // text in its place, so the rest of the line stays.
    if in_flow(place) || node.is_flow() {
        return Ok(Splice {
            range: node.range.clone(),
            with: render::flow(value),
        });
    }
    let style = match &node.kind {
        NodeKind::Scalar { style, .. } => Some(*style),
        _ => None,
    };
    let block_scalar = matches!(style, Some(ScalarStyle::Literal | ScalarStyle::Folded));
    let scalar_value = !value.is_object() && !value.is_array();
    // A scalar by a scalar on its own line: the token only, the rest of the line (a comment)
    // stays.
    if scalar_value && style.is_some() && !block_scalar {
        let fits_line = !matches!(value, Value::String(s) if s.contains('\n'));
        if fits_line {
            return Ok(Splice {
                range: node.range.clone(),
                with: render::scalar(value, style),
            });
        }
    }
    let end = match &node.kind {
        NodeKind::Scalar { .. } if block_scalar => node.range.end - 1,
        NodeKind::Map { flow: false, .. } | NodeKind::Seq { flow: false, .. } => {
            // Up to the newline of its last line (a comment there goes with it).
            text[node.range.end..]
                .find('\n')
                .map_or(text.len(), |i| node.range.end + i)
        }
        _ => node.range.end,
    };
    match place {
        Place::Root => Err("adopt does not replace a whole object".into()),
        Place::Entry { map, index } => {
            let NodeKind::Map { entries, .. } = &map.kind else {
                unreachable!("an entry's parent is a mapping")
            };
            let key = &entries[index].0;
            let colon = text[key.range.end..]
                .find(':')
                .map(|i| key.range.end + i + 1)
                .ok_or("no `:` after the key")?;
            let indent = key_column(text, map) + 2;
            Ok(Splice {
                range: colon..end,
                with: render::block_value(value, indent, style),
            })
        }
        Place::Item { seq, index } => {
            let NodeKind::Seq { items, .. } = &seq.kind else {
                unreachable!("an item's parent is a list")
            };
            let dash = dash_before(text, items[index].range.start).ok_or("no `-` before item")?;
            Ok(Splice {
                range: dash + 1..end,
                with: render::item(value, column(text, dash)),
            })
        }
    }
}

/// A field `key` with `value` added to the mapping `map`.
fn insert(text: &str, map: &Node, key: &str, value: &Value) -> Result<Splice, String> {
    let NodeKind::Map { flow, entries } = &map.kind else {
        unreachable!("insert is called on mappings")
    };
    if *flow {
        // Before the closing brace, in flow (JSON) text: `{}` becomes `{"key": value}`.
        let close = map.range.end - 1;
        let sep = if entries.is_empty() { "" } else { ", " };
        return Ok(Splice {
            range: close..close,
            with: format!(
                "{sep}{}: {}",
                render::flow(&Value::String(key.into())),
                render::flow(value)
            ),
        });
    }
    let at = after_last_line(text, map);
    let indent = key_column(text, map);
    let lead = if at > 0 && !text[..at].ends_with('\n') {
        "\n"
    } else {
        ""
    };
    Ok(Splice {
        range: at..at,
        with: format!(
            "{lead}{}{}:{}\n",
            " ".repeat(indent),
            render::key(key),
            render::block_value(value, indent + 2, None)
        ),
    })
}

/// `value` appended to the list `seq`.
fn append(text: &str, seq: &Node, value: &Value) -> Result<Splice, String> {
    let NodeKind::Seq { flow, items } = &seq.kind else {
        unreachable!("append is called on lists")
    };
    if *flow || items.is_empty() {
        let close = seq.range.end - 1;
        let sep = if items.is_empty() { "" } else { ", " };
        return Ok(Splice {
            range: close..close,
            with: format!("{sep}{}", render::flow(value)),
        });
    }
    let dash = dash_before(text, items[0].range.start).ok_or("no `-` before the first item")?;
    let col = column(text, dash);
    let at = after_last_line(text, seq);
    let lead = if at > 0 && !text[..at].ends_with('\n') {
        "\n"
    } else {
        ""
    };
    Ok(Splice {
        range: at..at,
        with: format!("{lead}{}-{}\n", " ".repeat(col), render::item(value, col)),
    })
}

/// The field or item `node` removed.
fn delete(text: &str, node: &Node, place: Place) -> Result<Splice, String> {
    match place {
        Place::Root => Err("adopt does not remove a whole object".into()),
        Place::Entry { map, index } => {
            let NodeKind::Map { flow, entries } = &map.kind else {
                unreachable!("an entry's parent is a mapping")
            };
            let key = &entries[index].0;
            if *flow {
                return Ok(Splice {
                    range: flow_cut(
                        entries.iter().map(|(k, v)| (k.range.start, v.range.end)),
                        index,
                    ),
                    with: String::new(),
                });
            }
            if entries.len() == 1 {
                return Err(
                    "it is the mapping's only field; the mapping would be empty (null): \
                     edit it by hand"
                        .into(),
                );
            }
            let start = line_start(text, key.range.start);
            if text[start..key.range.start].trim().is_empty() {
                Ok(Splice {
                    range: start..after_last_line(text, node).max(line_end(text, key.range.start)),
                    with: String::new(),
                })
            } else {
                // The first field of a list item, on the dash's line: the next field moves up.
                Ok(Splice {
                    range: key.range.start..entries[index + 1].0.range.start,
                    with: String::new(),
                })
            }
        }
        Place::Item { seq, index } => {
            let NodeKind::Seq { flow, items } = &seq.kind else {
                unreachable!("an item's parent is a list")
            };
            if *flow {
                return Ok(Splice {
                    range: flow_cut(items.iter().map(|i| (i.range.start, i.range.end)), index),
                    with: String::new(),
                });
            }
            if items.len() == 1 {
                return Err("it is the list's only item; edit the list by hand".into());
            }
            let dash = dash_before(text, node.range.start).ok_or("no `-` before the item")?;
            Ok(Splice {
                range: line_start(text, dash)..after_last_line(text, node),
                with: String::new(),
            })
        }
    }
}

/// The bytes removing element `index` of a flow collection takes, with one separator.
fn flow_cut(
    elements: impl Iterator<Item = (usize, usize)>,
    index: usize,
) -> std::ops::Range<usize> {
    let spans: Vec<(usize, usize)> = elements.collect();
    let (start, end) = spans[index];
    match (spans.get(index + 1), index.checked_sub(1).map(|i| spans[i])) {
        (Some(next), _) => start..next.0,
        (None, Some(prev)) => prev.1..end,
        (None, None) => start..end,
    }
}
