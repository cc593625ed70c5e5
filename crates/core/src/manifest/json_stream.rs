//! A JSON stream read a document at a time, and a List's `items` an item at a time: the
//! largest desired states are one `kind: List` (what `kubectl get -o json` and `driftd bench`
//! write), and holding it as one tree before unwrapping it cost several times its size.
//!
//! A List's items are taken one by one only when its `kind` (ending in `List`, kubectl's
//! test in `meta.IsListType` being an `items` list) comes before `items`, as every writer
//! of Lists puts it; otherwise the document is read whole and unwrapped later, as before.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;
use std::io::Read;
use std::rc::Rc;

use super::limits::{object_too_large, too_large, Crossed, Limited, Meter};
use super::yaml::integral_floats_to_integers;
use super::{ManifestError, Origin, RawDocument, RawInput};

/// How a JSON reading ended early.
pub(super) enum JsonFailure {
    /// The first document is not JSON; its bytes (all taken so far) let YAML read it.
    FirstDocument {
        error: ManifestError,
        taken: Vec<u8>,
    },
    Other(ManifestError),
}

/// Reads every JSON value of `inner` into `out`, List items one by one. With `replay`, the
/// bytes of the first document are kept until it has been read (or until they exceed the
/// per-object limit), so that a caller may hand them to YAML if it is not JSON.
pub(super) fn read_json<R: Read>(
    inner: &mut R,
    file: &str,
    meter: Rc<Meter>,
    total_limit: usize,
    replay: bool,
    out: &mut RawInput,
) -> Result<(), JsonFailure> {
    let mut reader = Limited::new(inner, meter.clone(), replay);
    let max_object = meter.max_unit() as usize;
    let mut document = 0;
    loop {
        meter.start_unit();
        if !skip_whitespace(&mut reader).map_err(|e| {
            JsonFailure::Other(io_error(
                file,
                document,
                None,
                &meter,
                max_object,
                total_limit,
                e,
            ))
        })? {
            return Ok(());
        }
        let lines_before = meter.lines();
        let item: RefCell<Option<usize>> = RefCell::new(None);
        let mut sink = |index: usize, mut value: Value| {
            integral_floats_to_integers(&mut value);
            out.push(RawDocument {
                origin: Origin {
                    file: file.to_string(),
                    document,
                },
                prefix: format!("items[{index}]."),
                value,
            });
        };
        let seed = DocumentSeed {
            meter: &meter,
            item: &item,
            sink: &mut sink,
        };
        let mut de = serde_json::Deserializer::from_reader(&mut reader);
        let result = seed.deserialize(&mut de);
        drop(de);
        let value = match result {
            Ok(value) => value,
            Err(e) => {
                let item = item.borrow().map(|i| format!("items[{i}]"));
                let error = if let Some(crossed) = meter.crossed() {
                    match crossed {
                        Crossed::Object => object_too_large(file, document, item, max_object),
                        Crossed::Total => too_large(file, total_limit),
                    }
                } else {
                    ManifestError::new(file, document, None, json_reason(&e, lines_before))
                };
                return Err(match reader.replay.take() {
                    Some(taken) if document == 0 && meter.crossed().is_none() => {
                        JsonFailure::FirstDocument { error, taken }
                    }
                    _ => JsonFailure::Other(error),
                });
            }
        };
        reader.replay = None;
        let mut value = value;
        integral_floats_to_integers(&mut value);
        out.push(RawDocument {
            origin: Origin {
                file: file.to_string(),
                document,
            },
            prefix: String::new(),
            value,
        });
        document += 1;
    }
}

/// Skips whitespace between documents; `false` at the end of the input.
fn skip_whitespace<R: Read>(reader: &mut Limited<'_, R>) -> std::io::Result<bool> {
    // One byte at a time, so nothing past the whitespace is taken from the reader: the next
    // byte is pushed back as the first of the next document.
    loop {
        let mut byte = [0u8];
        if reader.read(&mut byte)? == 0 {
            return Ok(false);
        }
        if !matches!(byte[0], b' ' | b'\t' | b'\r' | b'\n') {
            reader.pending = Some(byte[0]);
            return Ok(true);
        }
    }
}

fn io_error(
    file: &str,
    document: usize,
    item: Option<String>,
    meter: &Meter,
    max_object: usize,
    total_limit: usize,
    e: std::io::Error,
) -> ManifestError {
    match meter.crossed() {
        Some(Crossed::Object) => object_too_large(file, document, item, max_object),
        Some(Crossed::Total) => too_large(file, total_limit),
        None => ManifestError::new(file, document, None, format!("cannot read: {e}")),
    }
}

/// serde_json's message with the line counted from the start of the file (each document is
/// parsed afresh). It gives line and column but never echoes the input.
fn json_reason(e: &serde_json::Error, lines_before: u64) -> String {
    let text = e.to_string();
    if e.line() == 0 {
        return format!("invalid JSON: {text}");
    }
    let message = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    format!(
        "invalid JSON: {message} at line {} column {}",
        e.line() as u64 + lines_before,
        e.column()
    )
}

/// One top-level document; a List's items go to the sink instead (see the module doc).
struct DocumentSeed<'a, F> {
    meter: &'a Meter,
    item: &'a RefCell<Option<usize>>,
    sink: &'a mut F,
}

impl<'de, F: FnMut(usize, Value)> DeserializeSeed<'de> for DocumentSeed<'_, F> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, F: FnMut(usize, Value)> Visitor<'de> for DocumentSeed<'_, F> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let is_list = matches!(map.get("kind"), Some(Value::String(k)) if k.ends_with("List"));
            if key == "items" && is_list {
                let items = access.next_value_seed(ItemsSeed {
                    meter: self.meter,
                    item: self.item,
                    sink: &mut *self.sink,
                })?;
                // Streamed items leave the envelope a List of none, which still goes
                // through a List's checks (apiVersion, kind).
                map.insert(key, items.unwrap_or_else(|| Value::Array(Vec::new())));
            } else {
                let value: Value = access.next_value()?;
                map.insert(key, value);
            }
        }
        Ok(Value::Object(map))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = access.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Value::Null)
    }
}

/// A List's `items`: each item handed to the sink as soon as it is read; `None` when they
/// were, `Some` value when `items` is not a list (the List is refused later, as before).
struct ItemsSeed<'a, F> {
    meter: &'a Meter,
    item: &'a RefCell<Option<usize>>,
    sink: &'a mut F,
}

impl<'de, F: FnMut(usize, Value)> DeserializeSeed<'de> for ItemsSeed<'_, F> {
    type Value = Option<Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, F: FnMut(usize, Value)> Visitor<'de> for ItemsSeed<'_, F> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut index = 0;
        loop {
            // Each item is one object as far as the per-object limit goes.
            self.meter.start_unit();
            *self.item.borrow_mut() = Some(index);
            match access.next_element::<Value>()? {
                Some(value) => (self.sink)(index, value),
                None => break,
            }
            index += 1;
        }
        *self.item.borrow_mut() = None;
        // What follows the items belongs to the envelope again.
        self.meter.start_unit();
        Ok(None)
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<Self::Value, A::Error> {
        let map: Map<String, Value> =
            de::Deserialize::deserialize(de::value::MapAccessDeserializer::new(access))?;
        Ok(Some(Value::Object(map)))
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Value::String(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Some(Value::Null))
    }
}
