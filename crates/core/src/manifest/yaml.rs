//! Parsing a piece of a YAML stream into documents, read as kubectl reads them (apimachinery's YAMLOrJSONDecoder over sigs.k8s.io/yaml): a key given
//! twice keeps its last value (with a warning here), and a whole number written as a float
//! (`3.0`, `1e3`) is the integer kubectl sends after its JSON round trip.

use serde_json::Value;
use std::collections::HashMap;

use super::{ManifestError, Origin, RawDocument, RawInput, Warning};

/// kubectl decodes YAML and JSON numbers into Go `float64`s or `int64`s and encodes them
/// again with `encoding/json`, which writes a float holding a whole number as an integer
/// (`3.0` and `1e3` are sent as `3` and `1000`). Numbers beyond the `int64` range stay
/// floats, and kube-apiserver refuses them for integer fields (`1e+23`).
pub(super) fn integral_floats_to_integers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // 2^63 is exactly representable; anything below it in magnitude fits an i64.
            if f.fract() == 0.0 && f.abs() < 9_223_372_036_854_775_808.0 {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_integers),
        _ => {}
    }
}

/// Limits against hostile YAML (alias bombs, deep nesting, document storms), set well above
/// what real manifests need: large CRD bundles have tens of thousands of nodes, schema
/// nesting of a few dozen levels, and practically never use aliases.
fn yaml_options(max_bytes: usize) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = 128;
    budget.max_documents = 10_000;
    budget.max_nodes = 2_000_000;
    budget.max_events = 4_000_000;
    budget.max_aliases = 10_000;
    budget.max_anchors = 10_000;
    budget.max_total_scalar_bytes = max_bytes;
    budget.max_reader_input_bytes = Some(max_bytes);
    let mut alias_limits = serde_saphyr::options::AliasLimits::default();
    alias_limits.max_total_replayed_events = 100_000;
    alias_limits.max_replay_stack_depth = 32;
    alias_limits.max_alias_expansions_per_anchor = 1_000;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits = alias_limits;
    // Snippets would quote the input in errors, and the input may be a Secret.
    options.with_snippet = false;
    // kubectl's YAML (sigs.k8s.io/yaml over go-yaml v2) reads `0644` as octal, which is
    // what `defaultMode: 0644` in a volume means to everyone who writes it.
    options.legacy_octal_numbers = true;
    // go-yaml v2 keeps the last value of a key given twice, and so does kubectl; the
    // duplicates are reported by `duplicate_keys` with their lines.
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    options
}

/// Parses the documents of `text` (a piece of a file starting after `line_offset` lines,
/// its first document numbered `first_document`) into `out`; returns how many documents
/// the piece held, empty ones included.
pub(super) fn split_yaml(
    text: &str,
    file: &str,
    line_offset: u64,
    first_document: usize,
    out: &mut RawInput,
) -> Result<usize, ManifestError> {
    let starts = document_starts(text);
    let at = |line: u64| first_document + document_at(&starts, line);
    let parsed: Result<Vec<serde_saphyr::Spanned<Value>>, _> =
        serde_saphyr::from_multiple_with_options(text, yaml_options(text.len().max(1)));
    let values = parsed.map_err(|e| {
        let loc = e.location().filter(|l| l.line() > 0);
        let document = loc.map_or(first_document, |l| at(l.line()));
        let reason = yaml_reason(&e);
        let reason = match loc {
            Some(l) => format!(
                "invalid YAML at line {} column {}: {reason}",
                l.line() + line_offset,
                l.column()
            ),
            None => format!("invalid YAML: {reason}"),
        };
        ManifestError::new(file, document, None, reason)
    })?;
    // serde-saphyr skips empty and null documents (as kubectl does); map each remaining
    // value back to its position in the stream through the line its root starts on.
    for spanned in values {
        let mut value = spanned.value;
        integral_floats_to_integers(&mut value);
        out.push(RawDocument {
            origin: Origin {
                file: file.to_string(),
                document: at(spanned.defined.line()),
            },
            prefix: String::new(),
            value,
        });
    }
    for (line, first, key) in duplicate_keys(text) {
        out.warnings.push(Warning {
            file: file.to_string(),
            document: at(line),
            line: line + line_offset,
            message: format!(
                "key {key:?} is given twice in one mapping (first at line {}); the last value is used, as kubectl does",
                first + line_offset
            ),
        });
    }
    Ok(starts.len())
}

/// One open collection while scanning events.
enum Frame {
    /// A mapping: the scalar keys seen (with their line) and whether a key comes next.
    Map {
        keys: HashMap<String, u64>,
        want_key: bool,
    },
    Seq,
}

/// Keys given twice in one mapping: (line of the repeat, line of the first, key). Only
/// plain scalar keys are compared, by their text; the merge key `<<` is left alone.
fn duplicate_keys(text: &str) -> Vec<(u64, u64, String)> {
    use serde_saphyr::granit_parser::{Event, Parser};
    let mut found = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    // A node ended: in a mapping, a key is followed by a value and a value by a key.
    fn node_done(stack: &mut [Frame]) {
        if let Some(Frame::Map { want_key, .. }) = stack.last_mut() {
            *want_key = !*want_key;
        }
    }
    for item in Parser::new_from_str(text) {
        let Ok((event, span)) = item else {
            break;
        };
        match event {
            Event::DocumentStart(..) => stack.clear(),
            Event::MappingStart(..) => stack.push(Frame::Map {
                keys: HashMap::new(),
                want_key: true,
            }),
            Event::SequenceStart(..) => stack.push(Frame::Seq),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                node_done(&mut stack);
            }
            Event::Scalar(value, ..) => {
                if let Some(Frame::Map {
                    keys,
                    want_key: true,
                }) = stack.last_mut()
                {
                    let line = span.start.line() as u64;
                    if value != "<<" {
                        if let Some(first) = keys.get(value.as_ref()) {
                            found.push((line, *first, value.to_string()));
                        } else {
                            keys.insert(value.to_string(), line);
                        }
                    }
                }
                node_done(&mut stack);
            }
            Event::Alias(..) => node_done(&mut stack),
            _ => {}
        }
    }
    found
}

fn yaml_reason(e: &serde_saphyr::Error) -> String {
    let text = e.without_snippet().to_string();
    // The rendered message may end with its own " at line N, column M"; we say where.
    let first = text.lines().next().unwrap_or("").trim();
    let first = match first.rfind(" at line ") {
        Some(i) if first[i..].contains("column") => &first[..i],
        _ => first,
    };
    if first.is_empty() {
        "parse error".into()
    } else {
        scrub_quoted(first)
    }
}

/// Replaces back-quoted input text in a parser message (e.g. "non-finite float `.inf`") with
/// `…`, since it may come from a Secret; tags (`!!str`) are kept, they are not data.
pub(super) fn scrub_quoted(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(start) = rest.find('`') {
        let Some(len) = rest[start + 1..].find('`') else {
            break;
        };
        let quoted = &rest[start + 1..start + 1 + len];
        out.push_str(&rest[..start]);
        if quoted.starts_with('!') {
            out.push_str(&rest[start..start + len + 2]);
        } else {
            out.push_str("`…`");
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    out
}

/// The (1-based) line on which each document of the stream starts, in order.
fn document_starts(text: &str) -> Vec<u64> {
    use serde_saphyr::granit_parser::{Event, Parser};
    let mut starts = Vec::new();
    for item in Parser::new_from_str(text) {
        match item {
            Ok((Event::DocumentStart(..), span)) => starts.push(span.start.line() as u64),
            Ok(_) => {}
            Err(_) => break,
        }
    }
    starts
}

/// Index of the document containing `line`: the last one starting at or before it.
fn document_at(starts: &[u64], line: u64) -> usize {
    starts.iter().rposition(|&s| s <= line).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_found_per_mapping() {
        let text = "a: 1\nb:\n  c: 1\n  c: 2\na: 3\nlist:\n- k: 1\n- k: 2\n  k: 3\n---\na: 1\n";
        assert_eq!(
            duplicate_keys(text),
            vec![
                (4, 3, "c".to_string()),
                (5, 1, "a".to_string()),
                (9, 8, "k".to_string())
            ]
        );
        // Keys of different mappings, values equal to keys, flow style, complex keys.
        assert!(
            duplicate_keys("a: a\nb: {a: 1, b: 2}\nc: [a, a]\n? [x]\n: 1\n? [x]\n: 2\n").is_empty()
        );
        assert_eq!(
            duplicate_keys("{a: 1, a: 2}\n"),
            vec![(1, 1, "a".to_string())]
        );
    }

    #[test]
    fn whole_floats_become_integers_as_kubectl_sends_them() {
        let mut v = serde_json::json!({"a": 3.0, "b": [1e3, 2.5], "c": 1e23, "d": -0.0, "e": 7});
        integral_floats_to_integers(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"a": 3, "b": [1000, 2.5], "c": 1e23, "d": 0, "e": 7})
        );
    }
}
