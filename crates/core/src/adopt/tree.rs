//! A YAML stream as a tree of nodes that know where their text is: byte ranges into the
//! file, from the event spans of the parser `manifest` reads files with (serde-saphyr's
//! granit parser), so the node adopt edits is the node the loader read, and everything
//! outside an edited range stays byte for byte.

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle, StructureStyle};
use std::ops::Range;

/// One node and the bytes of the file it covers (for a block collection, from its first
/// child's first byte to its last child's last byte; for a block scalar, through the newline
/// of its last line).
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub range: Range<usize>,
    pub kind: NodeKind,
}

#[derive(Debug, Clone)]
pub(crate) enum NodeKind {
    Scalar {
        value: String,
        style: ScalarStyle,
    },
    Map {
        flow: bool,
        entries: Vec<(Node, Node)>,
    },
    Seq {
        flow: bool,
        items: Vec<Node>,
    },
    /// An alias (`*name`): adopt never edits through one.
    Alias,
}

impl Node {
    /// The value of a plain scalar that reads as null (`~`, `null`, nothing), as YAML's core
    /// schema has it.
    pub fn is_null(&self) -> bool {
        matches!(&self.kind, NodeKind::Scalar { value, style: ScalarStyle::Plain }
            if matches!(value.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    pub fn is_flow(&self) -> bool {
        matches!(
            self.kind,
            NodeKind::Map { flow: true, .. } | NodeKind::Seq { flow: true, .. }
        )
    }

    /// The entry of a mapping whose scalar key is `key`.
    pub fn entry(&self, key: &str) -> Option<&(Node, Node)> {
        match &self.kind {
            NodeKind::Map { entries, .. } => entries
                .iter()
                .rev()
                .find(|(k, _)| matches!(&k.kind, NodeKind::Scalar { value, .. } if value == key)),
            _ => None,
        }
    }

    /// What the node is, in words for an error ("a list").
    pub fn what(&self) -> &'static str {
        match &self.kind {
            NodeKind::Scalar { .. } if self.is_null() => "null",
            NodeKind::Scalar { .. } => "a scalar",
            NodeKind::Map { .. } => "a mapping",
            NodeKind::Seq { .. } => "a list",
            NodeKind::Alias => "an alias",
        }
    }
}

/// The root node of each document of `text` (`None` for an empty document), in the order
/// and with the numbering `manifest` gives documents (one per document start).
pub(crate) fn parse(text: &str) -> Result<Vec<Option<Node>>, String> {
    let mut docs = Vec::new();
    let mut stack: Vec<Building> = Vec::new();
    let mut root: Option<Node> = None;
    for item in Parser::new_from_str(text) {
        let (event, span) = item.map_err(|e| format!("invalid YAML: {e}"))?;
        let range = span
            .byte_range()
            .ok_or_else(|| "the YAML parser gave no byte offsets".to_string())?;
        let done = match event {
            Event::DocumentStart(..) => {
                root = None;
                None
            }
            Event::DocumentEnd => {
                docs.push(root.take());
                None
            }
            Event::MappingStart(style, ..) => {
                stack.push(Building::Map {
                    start: range.start,
                    flow: matches!(style, StructureStyle::Flow),
                    entries: Vec::new(),
                    key: None,
                });
                None
            }
            Event::SequenceStart(style, ..) => {
                stack.push(Building::Seq {
                    start: range.start,
                    flow: matches!(style, StructureStyle::Flow),
                    items: Vec::new(),
                });
                None
            }
            Event::MappingEnd | Event::SequenceEnd => {
                let built = stack.pop().ok_or("unbalanced YAML events")?;
                Some(built.finish(range.end))
            }
            Event::Scalar(value, style, ..) => {
                let mut range = range;
                if matches!(style, ScalarStyle::Literal | ScalarStyle::Folded) {
                    // The span runs into the next line's indentation; the scalar's own text
                    // ends with the newline of its last line.
                    if let Some(nl) = text[range.clone()].rfind('\n') {
                        range.end = range.start + nl + 1;
                    }
                }
                Some(Node {
                    range,
                    kind: NodeKind::Scalar {
                        value: value.into_owned(),
                        style,
                    },
                })
            }
            Event::Alias(..) => Some(Node {
                range,
                kind: NodeKind::Alias,
            }),
            _ => None,
        };
        if let Some(node) = done {
            match stack.last_mut() {
                Some(parent) => parent.add(node),
                None => root = Some(node),
            }
        }
    }
    Ok(docs)
}

/// A collection whose end has not been read yet.
enum Building {
    Map {
        start: usize,
        flow: bool,
        entries: Vec<(Node, Node)>,
        key: Option<Node>,
    },
    Seq {
        start: usize,
        flow: bool,
        items: Vec<Node>,
    },
}

impl Building {
    fn add(&mut self, node: Node) {
        match self {
            Building::Map { entries, key, .. } => match key.take() {
                Some(k) => entries.push((k, node)),
                None => *key = Some(node),
            },
            Building::Seq { items, .. } => items.push(node),
        }
    }

    fn finish(self, end_token_end: usize) -> Node {
        match self {
            Building::Map {
                start,
                flow,
                entries,
                ..
            } => {
                let end = match (flow, entries.last()) {
                    (false, Some((_, v))) => v.range.end,
                    _ => end_token_end,
                };
                Node {
                    range: start..end.max(start),
                    kind: NodeKind::Map { flow, entries },
                }
            }
            Building::Seq { start, flow, items } => {
                let end = match (flow, items.last()) {
                    (false, Some(v)) => v.range.end,
                    _ => end_token_end,
                };
                Node {
                    range: start..end.max(start),
                    kind: NodeKind::Seq { flow, items },
                }
            }
        }
    }
}
