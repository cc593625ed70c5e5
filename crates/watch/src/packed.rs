//! A JSON object kept as compressed bytes rather than as a `serde_json::Value` tree.
//!
//! The engine holds one desired and one live copy of every tracked object, but reads them
//! only when it compares that object. A `Value` tree (with `preserve_order` IndexMaps, a
//! `String` per key) costs about 3 to 4 times the object's JSON text; the same text
//! compressed costs a fraction of it. So copies are kept packed and unpacked for the one
//! comparison that needs them, as kube-state-metrics keeps rendered bytes per object rather
//! than object trees.
//!
//! Objects are small (a few KB) and alike (the same keys, managedFields, labels and images
//! over and over), which is where a zstd *dictionary* pays: trained from the objects this
//! cluster actually has, it packs a typical object to about a third of what a dictionary-less
//! compressor does, and five times faster than deflate (measured in `benches/RESULTS.md`).
//! Until a dictionary is trained values are packed without one; the engine trains it from a
//! sample of the live copies it holds ([`train`]) and repacks what it holds with it
//! ([`Packed::repacked`]). It does so early: as soon as every watched kind has sent some
//! objects, not when every list is in (copies packed without a dictionary cost about three
//! times as much, and at 100,000 objects they made the first lists the peak of driftd's
//! memory), and from every kind in proportion to its objects (the first copies
//! packed are the first pages of whichever kinds listed first). Watchers pack live copies as
//! they parse events, with whatever dictionary exists then: copies still on their way when
//! it is trained are repacked with the rest when every list is in.

use driftd_core::par;
use serde_json::Value;
use std::cell::RefCell;
use std::sync::OnceLock;
use zstd::bulk::{Compressor, Decompressor};
use zstd::dict::{DecoderDictionary, EncoderDictionary};

/// zstd's fastest regular level: comparisons are CPU-bound, and a dictionary already gives
/// most of the ratio.
const LEVEL: i32 = 1;

/// Bytes of the trained dictionary (zstd's default size for `--train`).
const DICTIONARY_BYTES: usize = 112_640;

/// Values to train the dictionary from, and at most this many bytes of each.
pub const SAMPLES: usize = 2_048;
const SAMPLE_BYTES: usize = 16 * 1024;

/// Objects packed per thread at least when many are packed on every core (a load, a
/// repack): packing one takes about 10 µs, starting a thread some tens.
pub const PER_THREAD: usize = 256;

/// Repacks those of `copies` packed before the newest dictionary, on every core; how many
/// were.
pub fn repack_all(copies: Vec<&mut Packed>) -> usize {
    par::map_owned(copies, PER_THREAD, |copy| match copy.repacked() {
        Some(newer) => {
            *copy = newer;
            true
        }
        None => false,
    })
    .into_iter()
    .filter(|repacked| *repacked)
    .count()
}

/// Fewer samples than this make no useful dictionary: training waits for more.
const MIN_SAMPLES: usize = 64;

/// Generations: the first byte of packed bytes says which dictionary packed them.
const PLAIN: u8 = 0;
const TRAINED: u8 = 1;

/// The trained dictionary, prepared for both directions; one per process (every engine
/// packs the same cluster's objects).
struct Dictionary {
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
}

static DICTIONARY: OnceLock<Dictionary> = OnceLock::new();

/// Whether a dictionary was trained: copies packed before it are worth repacking.
pub fn trained() -> bool {
    DICTIONARY.get().is_some()
}

/// The texts a dictionary is trained from, in the one buffer zstd's trainer reads. Copies
/// are unpacked straight into it: a list of sample texts that zstd then copies into one
/// buffer held the samples twice, and training was the cold start's peak of memory
/// (`driftd bench` at 3,000 objects: 30 MiB more while it ran).
#[derive(Default)]
pub struct Samples {
    texts: Vec<u8>,
    sizes: Vec<usize>,
}

impl Samples {
    /// Adds the text of `packed`.
    pub fn add(&mut self, packed: &Packed) {
        PACKER.with_borrow_mut(|packer| {
            packer.unpack_text(&packed.0);
            self.add_text(&packer.text);
            packer.release_large_buffer();
        })
    }

    /// Adds `text`, or its first [`SAMPLE_BYTES`] (enough to learn an object's shape).
    fn add_text(&mut self, text: &[u8]) {
        let text = &text[..text.len().min(SAMPLE_BYTES)];
        self.texts.extend_from_slice(text);
        self.sizes.push(text.len());
    }

    /// How many texts were added.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Whether no text was added.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// The texts added, in order.
    pub fn texts(&self) -> impl Iterator<Item = &[u8]> {
        self.sizes.iter().scan(0, |start, &size| {
            let text = &self.texts[*start..*start + size];
            *start += size;
            Some(text)
        })
    }
}

/// Trains the dictionary from `samples` (JSON texts), once per process. True when this call
/// trained it: values packed before are then worth repacking ([`Packed::repacked`]). False
/// when one exists already, or the samples are too few to train from.
pub fn train(samples: &Samples) -> bool {
    if DICTIONARY.get().is_some() || samples.len() < MIN_SAMPLES {
        return false;
    }
    // zstd wants samples of about ten times the dictionary's size at least.
    let size = DICTIONARY_BYTES.min(samples.texts.len() / 10).max(1024);
    let trained = match zstd::dict::from_continuous(&samples.texts, &samples.sizes, size) {
        Ok(trained) => trained,
        Err(err) => {
            tracing::debug!(error = %err, "no packing dictionary from these samples; packing without");
            return false;
        }
    };
    let dictionary = Dictionary {
        encoder: EncoderDictionary::copy(&trained, LEVEL),
        decoder: DecoderDictionary::copy(&trained),
    };
    let made = DICTIONARY.set(dictionary).is_ok();
    if made {
        tracing::debug!(
            bytes = trained.len(),
            samples = samples.len(),
            "packing dictionary trained"
        );
    }
    made
}

thread_local! {
    // Compressors and their buffers per thread, reused: a new context allocates and clears
    // its tables, and buffers allocated per call fragment the heap.
    static PACKER: RefCell<Packer> = RefCell::new(Packer::default());
}

#[derive(Default)]
struct Packer {
    plain: Option<Compressor<'static>>,
    trained: Option<Compressor<'static>>,
    unplain: Option<Decompressor<'static>>,
    untrained: Option<Decompressor<'static>>,
    text: Vec<u8>,
    /// The last compressed frame.
    frame: Vec<u8>,
}

impl Packer {
    /// `text` compressed with the newest dictionary, its generation first.
    fn pack(&mut self, text: &[u8]) -> Box<[u8]> {
        let (generation, compressor) = match DICTIONARY.get() {
            Some(d) => (
                TRAINED,
                self.trained.get_or_insert_with(|| {
                    Compressor::with_prepared_dictionary(&d.encoder).expect("zstd context")
                }),
            ),
            None => (
                PLAIN,
                self.plain
                    .get_or_insert_with(|| Compressor::new(LEVEL).expect("zstd context")),
            ),
        };
        // Into a buffer kept between calls, then copied out at its exact size: no zeroed
        // bound-sized allocation and no shrinking reallocation per object.
        self.frame.clear();
        self.frame
            .reserve(zstd::zstd_safe::compress_bound(text.len()));
        compressor
            .compress_to_buffer(text, &mut self.frame)
            .expect("the output holds zstd's bound");
        let mut out = Vec::with_capacity(1 + self.frame.len());
        out.push(generation);
        out.extend_from_slice(&self.frame);
        if self.frame.capacity() > KEEP_BUFFER {
            self.frame = Vec::new();
        }
        out.into_boxed_slice()
    }

    /// The text of packed `bytes`, into `self.text`.
    fn unpack_text(&mut self, bytes: &[u8]) {
        let (generation, frame) = bytes.split_first().expect("packed bytes are never empty");
        let size = zstd::zstd_safe::get_frame_content_size(frame)
            .ok()
            .flatten()
            .expect("packed frames record their size") as usize;
        let decompressor = match *generation {
            TRAINED => self.untrained.get_or_insert_with(|| {
                let d = DICTIONARY
                    .get()
                    .expect("trained bytes exist after training");
                Decompressor::with_prepared_dictionary(&d.decoder).expect("zstd context")
            }),
            _ => self
                .unplain
                .get_or_insert_with(|| Decompressor::new().expect("zstd context")),
        };
        self.text.clear();
        self.text.reserve(size);
        decompressor
            .decompress_to_buffer(frame, &mut self.text)
            .expect("bytes packed by Packed::new unpack");
    }

    fn release_large_buffer(&mut self) {
        if self.text.capacity() > KEEP_BUFFER {
            self.text = Vec::new();
        }
    }
}

/// Buffers larger than this are not kept between calls (one huge object must not pin memory).
const KEEP_BUFFER: usize = 1 << 20;

/// One JSON value, compressed. Packing the same value gives the same bytes for one
/// dictionary; equality compares the values' texts, whatever packed them.
#[derive(Clone)]
pub struct Packed(Box<[u8]>);

impl Packed {
    /// Packs `value` (serialized compactly, keys in their order).
    pub fn new(value: &impl serde::Serialize) -> Packed {
        PACKER.with_borrow_mut(|packer| {
            let mut text = std::mem::take(&mut packer.text);
            text.clear();
            serde_json::to_writer(&mut text, value).expect("JSON values serialize");
            let packed = Packed(packer.pack(&text));
            packer.text = text;
            packer.release_large_buffer();
            packed
        })
    }

    /// Packs JSON `text` that parses (the store checks what it streams) as it is: no tree is
    /// built. The same bytes as [`Packed::new`] of its value when `text` is compact with keys
    /// in their order, as the store writes it.
    pub fn from_text(text: &str) -> Packed {
        PACKER.with_borrow_mut(|packer| Packed(packer.pack(text.as_bytes())))
    }

    /// The value as packed.
    pub fn unpack(&self) -> Value {
        self.unpack_as()
    }

    /// The packed value read as a `T`: a struct of a few fields skips the rest of the text
    /// without building it.
    pub fn unpack_as<T: serde::de::DeserializeOwned>(&self) -> T {
        PACKER.with_borrow_mut(|packer| {
            packer.unpack_text(&self.0);
            let value =
                serde_json::from_slice(&packer.text).expect("bytes packed by Packed::new parse");
            packer.release_large_buffer();
            value
        })
    }

    /// The same value packed with the newest dictionary, if it was packed with an older
    /// one (no JSON is parsed: only the bytes are recompressed).
    pub fn repacked(&self) -> Option<Packed> {
        let newest = if DICTIONARY.get().is_some() {
            TRAINED
        } else {
            PLAIN
        };
        if self.0[0] == newest {
            return None;
        }
        PACKER.with_borrow_mut(|packer| {
            packer.unpack_text(&self.0);
            let text = std::mem::take(&mut packer.text);
            let packed = Packed(packer.pack(&text));
            packer.text = text;
            packer.release_large_buffer();
            Some(packed)
        })
    }

    /// The JSON text of the value.
    pub fn text(&self) -> Vec<u8> {
        PACKER.with_borrow_mut(|packer| {
            packer.unpack_text(&self.0);
            let text = packer.text.clone();
            packer.release_large_buffer();
            text
        })
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never: packed bytes hold at least their generation.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl PartialEq for Packed {
    fn eq(&self, other: &Self) -> bool {
        if self.0[0] == other.0[0] {
            return self.0 == other.0;
        }
        self.text() == other.text()
    }
}

impl Eq for Packed {}

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

    fn deployment(i: usize) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": format!("web-{i}"), "namespace": "shop",
                "labels": {"z": "1", "a": "2", "app.kubernetes.io/name": format!("web-{i}")}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [
                {"name": "web", "image": format!("nginx:1.{i}"), "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "nginx:1.27", "env": [{"name": "A", "value": "1"}]},
            ]}}},
        })
    }

    #[test]
    fn a_value_comes_back_as_packed_keys_in_order_and_smaller() {
        let value = deployment(1);
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
    fn stored_text_packs_as_its_value_does() {
        let value = deployment(2);
        let text = value.to_string();
        let packed = Packed::from_text(&text);
        assert_eq!(packed.unpack(), value);
        assert_eq!(packed, Packed::new(&value), "equal to the value packed");
        assert_eq!(Packed::from_text("null").unpack(), Value::Null);
    }

    #[test]
    fn a_trained_dictionary_packs_alike_objects_smaller_and_old_bytes_still_unpack() {
        // Other tests of this process may have trained it already: then only the second
        // half is checked, which is what holds in every process once trained.
        let before: Vec<(Value, Packed)> = (0..300)
            .map(|i| {
                let v = deployment(i);
                let p = Packed::new(&v);
                (v, p)
            })
            .collect();
        let mut few = Samples::default();
        for (_, packed) in &before[..MIN_SAMPLES - 1] {
            few.add(packed);
        }
        assert!(!train(&few), "too few samples train nothing");
        let mut samples = few;
        for (_, packed) in &before[MIN_SAMPLES - 1..] {
            samples.add(packed);
        }
        let texts: Vec<Value> = samples
            .texts()
            .map(|t| serde_json::from_slice(t).unwrap())
            .collect();
        let values: Vec<&Value> = before.iter().map(|(v, _)| v).collect();
        assert_eq!(
            texts.iter().collect::<Vec<_>>(),
            values,
            "the texts, in order"
        );
        let trained_here = train(&samples);
        assert!(trained(), "300 alike objects train a dictionary");
        assert!(!train(&samples), "trained once per process");
        for (value, packed) in &before {
            assert_eq!(
                &packed.unpack(),
                value,
                "bytes packed before training unpack"
            );
            let repacked = packed.repacked();
            if trained_here {
                let repacked = repacked.expect("older bytes are repacked");
                assert!(
                    repacked.len() < packed.len(),
                    "the dictionary packs smaller"
                );
                assert_eq!(&repacked.unpack(), value);
                assert_eq!(&repacked, packed, "equal across dictionaries");
                assert_eq!(repacked.repacked(), None, "newest bytes stay");
            }
        }
        let fresh = Packed::new(&deployment(7));
        assert_eq!(fresh.unpack(), deployment(7));
        assert_eq!(fresh.repacked(), None);
        // All at once, on every core: the older copies are counted and replaced, newer stay.
        let mut copies: Vec<Packed> = before.iter().map(|(_, p)| p.clone()).collect();
        copies.push(fresh.clone());
        let repacked = repack_all(copies.iter_mut().collect());
        if trained_here {
            assert_eq!(repacked, before.len(), "each older copy, not the fresh one");
        }
        assert_eq!(repack_all(copies.iter_mut().collect()), 0, "repacked once");
        for (copy, (value, _)) in copies.iter().zip(&before) {
            assert_eq!(&copy.unpack(), value);
        }
        assert_ne!(fresh, Packed::new(&deployment(8)));
    }

    #[test]
    fn debug_output_shows_no_content() {
        let packed = Packed::new(&json!({"data": {"password": "hunter2"}}));
        assert!(!format!("{packed:?}").contains("hunter2"));
    }
}
