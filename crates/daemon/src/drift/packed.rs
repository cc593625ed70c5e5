//! A JSON object kept as deflate-compressed bytes rather than as a `serde_json::Value` tree.
//!
//! The engine holds one desired and one live copy of every tracked object, but reads them
//! only when it compares that object. A `Value` tree (with `preserve_order` IndexMaps, a
//! `String` per key) costs about 3 to 4 times the object's JSON text; the same text deflated
//! costs about a quarter of it. So copies are kept packed and unpacked for the one
//! comparison that needs them, as kube-state-metrics keeps rendered bytes per object rather
//! than object trees (issue #11).

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use serde_json::Value;
use std::cell::RefCell;

thread_local! {
    // One compressor, one decompressor and their buffers per thread, reused: a new
    // compressor allocates and clears hundreds of KB of tables, and buffers allocated per
    // call fragment the heap (glibc's malloc then slows down with its size).
    static DEFLATE: RefCell<(Compress, Vec<u8>, Vec<u8>)> =
        RefCell::new((Compress::new(Compression::fast(), false), Vec::new(), Vec::new()));
    static INFLATE: RefCell<(Decompress, Vec<u8>)> =
        RefCell::new((Decompress::new(false), Vec::new()));
}

/// Buffers larger than this are not kept between calls (one huge object must not pin memory).
const KEEP_BUFFER: usize = 1 << 20;

/// One JSON value, compressed. Packing the same value twice gives the same bytes, so two
/// packed values are equal exactly when the values are.
#[derive(Clone, PartialEq, Eq)]
pub struct Packed(Box<[u8]>);

impl Packed {
    /// Packs `value` (serialized compactly, keys in their order).
    pub fn new(value: &Value) -> Packed {
        DEFLATE.with_borrow_mut(|(deflate, text, out)| {
            text.clear();
            serde_json::to_writer(&mut *text, value).expect("a Value always serializes");
            deflate.reset();
            out.clear();
            out.reserve(text.len() / 2 + 64);
            loop {
                let read = deflate.total_in() as usize;
                let status = deflate
                    .compress_vec(&text[read..], out, FlushCompress::Finish)
                    .expect("deflate accepts any input");
                if status == Status::StreamEnd {
                    break;
                }
                out.reserve(out.capacity().max(64));
            }
            let packed = Packed(Box::from(&out[..]));
            if text.capacity() > KEEP_BUFFER {
                *text = Vec::new();
                *out = Vec::new();
            }
            packed
        })
    }

    /// The value as packed.
    pub fn unpack(&self) -> Value {
        INFLATE.with_borrow_mut(|(inflate, out)| {
            inflate.reset(false);
            out.clear();
            out.reserve(self.0.len() * 4 + 64);
            loop {
                let read = inflate.total_in() as usize;
                // `Finish` would refuse an output buffer too small for the whole value.
                let status = inflate
                    .decompress_vec(&self.0[read..], out, FlushDecompress::None)
                    .expect("bytes packed by Packed::new inflate");
                if status == Status::StreamEnd {
                    break;
                }
                assert!(
                    out.len() == out.capacity() || inflate.total_in() as usize > read,
                    "bytes packed by Packed::new end their stream"
                );
                out.reserve(out.capacity());
            }
            let value = serde_json::from_slice(out).expect("bytes packed by Packed::new parse");
            if out.capacity() > KEEP_BUFFER {
                *out = Vec::new();
            }
            value
        })
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
        // Larger than any first guess of the output's size, and incompressible.
        let noise: String = (0..20_000u32)
            .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26))
            .collect();
        let big = json!({"data": {"noise": noise}});
        assert_eq!(Packed::new(&big).unpack(), big);
    }

    #[test]
    fn debug_output_shows_no_content() {
        let packed = Packed::new(&json!({"data": {"password": "hunter2"}}));
        assert!(!format!("{packed:?}").contains("hunter2"));
    }
}
