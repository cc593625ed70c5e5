//! A JSON object kept as deflate-compressed bytes rather than as a `serde_json::Value` tree.
//!
//! The engine holds one desired and one live copy of every tracked object, but reads them
//! only when it compares that object. A `Value` tree (with `preserve_order` IndexMaps, a
//! `String` per key) costs about 3 to 4 times the object's JSON text; the same text deflated
//! costs about a quarter of it. So copies are kept packed and unpacked for the one
//! comparison that needs them, as kube-state-metrics keeps rendered bytes per object rather
//! than object trees (issue #11).

use flate2::write::{DeflateDecoder, DeflateEncoder};
use flate2::Compression;
use serde_json::Value;
use std::io::Write;

/// One JSON value, compressed. Packing the same value twice gives the same bytes, so two
/// packed values are equal exactly when the values are.
#[derive(Clone, PartialEq, Eq)]
pub struct Packed(Box<[u8]>);

impl Packed {
    /// Packs `value` (serialized compactly, keys in their order).
    pub fn new(value: &Value) -> Packed {
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::fast());
        serde_json::to_writer(&mut encoder, value).expect("a Value always serializes");
        let bytes = encoder.finish().expect("writing to a Vec cannot fail");
        Packed(bytes.into_boxed_slice())
    }

    /// The value as packed.
    pub fn unpack(&self) -> Value {
        let mut decoder = DeflateDecoder::new(Vec::with_capacity(self.0.len() * 4));
        decoder
            .write_all(&self.0)
            .and_then(|_| decoder.try_finish())
            .expect("bytes packed by Packed::new inflate");
        serde_json::from_slice(decoder.get_ref()).expect("bytes packed by Packed::new parse")
    }

    /// Bytes held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl std::fmt::Debug for Packed {
    // Never the content: it may be a Secret's.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packed({} bytes)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_comes_back_as_packed_keys_in_order_and_smaller() {
        let value = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop", "labels": {"z": "1", "a": "2"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]},
            ]}}},
        });
        let packed = Packed::new(&value);
        let back = packed.unpack();
        assert_eq!(back, value);
        assert_eq!(back.to_string(), value.to_string(), "key order is kept");
        assert!(packed.len() < value.to_string().len());
        assert_eq!(Packed::new(&back), packed, "packing is deterministic");
        assert_ne!(Packed::new(&json!({"a": 1})), Packed::new(&json!({"a": 2})));
    }

    #[test]
    fn debug_output_shows_no_content() {
        let packed = Packed::new(&json!({"data": {"password": "hunter2"}}));
        assert!(!format!("{packed:?}").contains("hunter2"));
    }
}
