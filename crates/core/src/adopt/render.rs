//! Writing a JSON value as YAML text for the places adopt puts it: a scalar in the style
//! the replaced one had, a block mapping or list at a given indentation, or flow (JSON) text
//! inside a flow collection. Strings are written plain only when every YAML reader (kubectl's
//! YAML 1.1 go-yaml as well as YAML 1.2) reads them back as the same string; otherwise
//! double-quoted with JSON's escapes, which YAML's double-quoted style reads the same.

use serde_json::Value;
use serde_saphyr::granit_parser::ScalarStyle;

/// Words YAML 1.1 (go-yaml v2, which kubectl reads with) resolves to booleans or null.
const YAML11_WORDS: &[&str] = &[
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~",
];

/// Whether `s` may be written as a plain scalar and read back as this string.
fn plain_ok(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if !(first.is_ascii_alphabetic() || first == '/') {
        return false;
    }
    if YAML11_WORDS.contains(&s.to_ascii_lowercase().as_str()) {
        return false;
    }
    // Only characters with no meaning in a plain scalar; `:` only when not followed by a
    // space or the end (`nginx:1.25` is one scalar).
    let ok_chars = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._/-@+=:".contains(c));
    ok_chars && !s.ends_with(':') && !s.contains(": ") && !s.contains(" #")
}

/// JSON text of a string: valid YAML double-quoted scalar.
fn double_quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// A scalar value as YAML text; `like` is the style of the scalar it replaces, kept where
/// the value allows it.
pub(crate) fn scalar(value: &Value, like: Option<ScalarStyle>) -> String {
    match value {
        Value::String(s) => match like {
            Some(ScalarStyle::SingleQuoted)
                if s.chars().all(|c| !c.is_control()) && !s.is_empty() =>
            {
                format!("'{}'", s.replace('\'', "''"))
            }
            Some(ScalarStyle::DoubleQuoted) => double_quoted(s),
            _ if plain_ok(s) => s.clone(),
            _ => double_quoted(s),
        },
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// Whether a string is written as a literal block (`|`): several lines, none with trailing
/// blanks or a tab or a control character, not starting with a blank.
fn literal_ok(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    body.contains('\n')
        && !body.ends_with('\n')
        && !s.starts_with([' ', '\n'])
        && body
            .lines()
            .all(|l| l == l.trim_end() && !l.chars().any(|c| c.is_control() && c != '\n'))
}

/// Text after `key:` (or after `- `) for `value` in block context, where the node's own lines
/// are indented by `indent` spaces: ` scalar`, or a newline and the block lines.
pub(crate) fn block_value(value: &Value, indent: usize, like: Option<ScalarStyle>) -> String {
    match value {
        Value::Object(map) if !map.is_empty() => format!("\n{}", block_map(map, indent)),
        Value::Array(items) if !items.is_empty() => format!("\n{}", block_seq(items, indent)),
        Value::Object(_) => " {}".into(),
        Value::Array(_) => " []".into(),
        Value::String(s) if literal_ok(s) => {
            let chomp = if s.ends_with('\n') { "" } else { "-" };
            let pad = " ".repeat(indent);
            let body = s.strip_suffix('\n').unwrap_or(s);
            let lines: Vec<String> = body
                .split('\n')
                .map(|l| {
                    if l.is_empty() {
                        String::new()
                    } else {
                        format!("{pad}{l}")
                    }
                })
                .collect();
            format!(" |{chomp}\n{}", lines.join("\n"))
        }
        scalar_value => format!(" {}", scalar(scalar_value, like)),
    }
}

/// Block mapping lines at `indent`, without a final newline.
pub(crate) fn block_map(map: &serde_json::Map<String, Value>, indent: usize) -> String {
    let pad = " ".repeat(indent);
    map.iter()
        .map(|(k, v)| format!("{pad}{}:{}", key(k), block_value(v, indent + 2, None)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Block list lines with their dash at `indent`, without a final newline.
pub(crate) fn block_seq(items: &[Value], indent: usize) -> String {
    let pad = " ".repeat(indent);
    items
        .iter()
        .map(|v| format!("{pad}-{}", item(v, indent)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Text after a dash at `dash` for one list item: a mapping's first entry on the dash's line.
pub(crate) fn item(value: &Value, dash: usize) -> String {
    match value {
        Value::Object(map) if !map.is_empty() => {
            let text = block_map(map, dash + 2);
            format!(" {}", &text[dash + 2..])
        }
        other => block_value(other, dash + 2, None),
    }
}

/// A mapping key.
pub(crate) fn key(k: &str) -> String {
    scalar(&Value::String(k.to_string()), None)
}

/// Flow (JSON) text of a value, for inside a flow collection.
pub(crate) fn flow(value: &Value) -> String {
    value.to_string()
}
