//! A JSON object kept as compressed bytes rather than as a `serde_json::Value` tree.
//!
//! The engine holds one desired and one live copy of every tracked object, but reads them
//! only when it compares that object. A `Value` tree (with `preserve_order` IndexMaps, a
//! `String` per key) costs several times the object's JSON text; the same text compressed
//! costs a fraction of it. So copies are kept packed and unpacked for the one comparison
//! that needs them, as kube-state-metrics keeps rendered bytes per object rather than
//! object trees.
//!
//! Objects are small (a few KB) and alike (the same keys, managedFields, labels and images
//! over and over), which is where a zstd *dictionary* pays: trained from the objects this
//! cluster actually has, it packs a typical object much smaller than a dictionary-less
//! compressor does, and faster than deflate (`benches/RESULTS.md` has the figures).
//! Until a dictionary is trained values are packed without one; the engine trains it from a
//! sample of the live copies it holds ([`Packing::train`]) and repacks what it holds with it
//! ([`Packing::repacked`]). It does so as soon as every watched kind has sent some objects,
//! not when every list is in (copies packed without a dictionary cost several times as
//! much, and would make the first lists the peak of driftd's memory), and from every kind
//! in proportion to its objects. Watchers pack live copies as they parse events, with
//! whatever dictionary exists then: copies still on their way when it is trained are
//! repacked with the rest when every list is in.
//!
//! The dictionary is a value, [`Packing`]: whoever wires driftd makes one and hands clones
//! to the watchers (which pack) and to the engine (which trains it and unpacks). Bytes
//! packed with a trained dictionary unpack only through the [`Packing`] that packed them.

use driftd_core::par;
use serde_json::Value;
use std::sync::{Arc, Mutex, OnceLock};
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
/// repack): packing one takes microseconds, starting a thread some tens of them.
pub const PER_THREAD: usize = 256;

/// Fewer samples than this make no useful dictionary: training waits for more.
const MIN_SAMPLES: usize = 64;

/// Generations: the first byte of packed bytes says which dictionary packed them.
const PLAIN: u8 = 0;
const TRAINED: u8 = 1;

/// Buffers larger than this are not kept between calls (one huge object must not pin memory).
const KEEP_BUFFER: usize = 1 << 20;

/// The packing dictionary of one cluster's objects (none until trained) and the zstd
/// contexts that use it. Cheap to clone: clones share both, so the watchers that pack and
/// the engine that trains and unpacks see one dictionary.
///
/// Contexts are lent per call from a pool the value owns rather than made per call (a new
/// context allocates and clears its tables, and buffers allocated per call fragment the
/// heap): the pool holds as many as were ever in use at once, one per busy thread. Taking
/// one is an uncontended lock, small next to the microseconds a (de)compression takes; the
/// dictionary itself is read without a lock.
#[derive(Clone, Default)]
pub struct Packing(Arc<Shared>);

#[derive(Default)]
struct Shared {
    /// Kept for the rest of the process once trained (a process trains one per cluster it
    /// watches): the contexts in `spare` borrow it for as long as they live.
    dictionary: OnceLock<&'static Dictionary>,
    spare: Mutex<Vec<Contexts>>,
}

/// The trained dictionary, prepared for both directions.
struct Dictionary {
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
}

impl std::fmt::Debug for Packing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packing")
            .field("trained", &self.trained())
            .finish()
    }
}

impl Packing {
    /// A packing with no dictionary yet.
    pub fn new() -> Packing {
        Packing::default()
    }

    /// Whether a dictionary was trained: copies packed before it are worth repacking.
    pub fn trained(&self) -> bool {
        self.0.dictionary.get().is_some()
    }

    /// Trains the dictionary from `samples` (JSON texts), once. True when this call trained
    /// it: values packed before are then worth repacking ([`Packing::repacked`]). False
    /// when one exists already, or the samples are too few to train from.
    pub fn train(&self, samples: &Samples) -> bool {
        if self.trained() || samples.len() < MIN_SAMPLES {
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
        // Leaked only when it is the one kept: a dictionary trained by a call that lost a
        // race is freed.
        let mut made = false;
        self.0.dictionary.get_or_init(|| {
            made = true;
            Box::leak(Box::new(dictionary))
        });
        if made {
            tracing::debug!(
                bytes = trained.len(),
                samples = samples.len(),
                "packing dictionary trained"
            );
        }
        made
    }

    /// Packs `value` (serialized compactly, keys in their order).
    pub fn pack(&self, value: &impl serde::Serialize) -> Packed {
        self.with(|contexts, dictionary| {
            let mut text = std::mem::take(&mut contexts.text);
            text.clear();
            serde_json::to_writer(&mut text, value).expect("JSON values serialize");
            let packed = Packed(contexts.pack(dictionary, &text));
            contexts.text = text;
            contexts.release_large_buffer();
            packed
        })
    }

    /// Packs JSON `text` that parses (the store checks what it streams) as it is: no tree is
    /// built. The same bytes as [`Packing::pack`] of its value when `text` is compact with
    /// keys in their order, as the store writes it.
    pub fn pack_text(&self, text: &str) -> Packed {
        self.with(|contexts, dictionary| Packed(contexts.pack(dictionary, text.as_bytes())))
    }

    /// The value as packed.
    pub fn unpack(&self, packed: &Packed) -> Value {
        self.unpack_as(packed)
    }

    /// The packed value read as a `T`: a struct of a few fields skips the rest of the text
    /// without building it.
    pub fn unpack_as<T: serde::de::DeserializeOwned>(&self, packed: &Packed) -> T {
        self.with(|contexts, dictionary| {
            contexts.unpack_text(dictionary, &packed.0);
            let value = serde_json::from_slice(&contexts.text).expect("packed bytes are JSON text");
            contexts.release_large_buffer();
            value
        })
    }

    /// The same value packed with the newest dictionary, if it was packed with an older
    /// one (no JSON is parsed: only the bytes are recompressed).
    pub fn repacked(&self, packed: &Packed) -> Option<Packed> {
        let newest = if self.trained() { TRAINED } else { PLAIN };
        if packed.0[0] == newest {
            return None;
        }
        self.with(|contexts, dictionary| {
            contexts.unpack_text(dictionary, &packed.0);
            let text = std::mem::take(&mut contexts.text);
            let repacked = Packed(contexts.pack(dictionary, &text));
            contexts.text = text;
            contexts.release_large_buffer();
            Some(repacked)
        })
    }

    /// Repacks those of `copies` packed before the newest dictionary, on every core; how
    /// many were.
    pub fn repack_all(&self, copies: Vec<&mut Packed>) -> usize {
        par::map_owned(copies, PER_THREAD, |copy| match self.repacked(copy) {
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

    /// The JSON text of `packed`.
    pub fn text(&self, packed: &Packed) -> Vec<u8> {
        self.with(|contexts, dictionary| {
            contexts.unpack_text(dictionary, &packed.0);
            let text = contexts.text.clone();
            contexts.release_large_buffer();
            text
        })
    }

    /// Whether `a` and `b` hold the same value, whichever dictionary packed each (the same
    /// dictionary packs one value to the same bytes).
    pub fn same(&self, a: &Packed, b: &Packed) -> bool {
        if a.0[0] == b.0[0] {
            return a.0 == b.0;
        }
        self.text(a) == self.text(b)
    }

    /// Runs `f` with contexts lent from the pool and the dictionary, if trained.
    fn with<R>(&self, f: impl FnOnce(&mut Contexts, Option<&'static Dictionary>) -> R) -> R {
        let taken = self.spare().pop();
        let mut contexts = taken.unwrap_or_default();
        let result = f(&mut contexts, self.0.dictionary.get().copied());
        self.spare().push(contexts);
        result
    }

    fn spare(&self) -> std::sync::MutexGuard<'_, Vec<Contexts>> {
        // Contexts hold no invariant a panic could break: a poisoned pool is still a pool.
        self.0
            .spare
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The texts a dictionary is trained from, in the one buffer zstd's trainer reads. Copies
/// are unpacked straight into it: a list of texts that zstd then copies into one buffer
/// would hold the samples twice, at the cold start's peak of memory.
#[derive(Default)]
pub struct Samples {
    texts: Vec<u8>,
    sizes: Vec<usize>,
}

impl Samples {
    /// Adds the text of `packed`, unpacked by `packing` (the one that packed it).
    pub fn add(&mut self, packing: &Packing, packed: &Packed) {
        packing.with(|contexts, dictionary| {
            contexts.unpack_text(dictionary, &packed.0);
            self.add_text(&contexts.text);
            contexts.release_large_buffer();
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

/// zstd contexts and buffers, reused between calls.
#[derive(Default)]
struct Contexts {
    plain: Option<Compressor<'static>>,
    trained: Option<Compressor<'static>>,
    unplain: Option<Decompressor<'static>>,
    untrained: Option<Decompressor<'static>>,
    text: Vec<u8>,
    /// The last compressed frame.
    frame: Vec<u8>,
}

impl Contexts {
    /// `text` compressed with `dictionary` (the newest), its generation first.
    fn pack(&mut self, dictionary: Option<&'static Dictionary>, text: &[u8]) -> Box<[u8]> {
        let (generation, compressor) = match dictionary {
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
    fn unpack_text(&mut self, dictionary: Option<&'static Dictionary>, bytes: &[u8]) {
        let (generation, frame) = bytes.split_first().expect("packed bytes are never empty");
        let size = zstd::zstd_safe::get_frame_content_size(frame)
            .ok()
            .flatten()
            .expect("packed frames record their size") as usize;
        let decompressor = match *generation {
            TRAINED => self.untrained.get_or_insert_with(|| {
                let d = dictionary.expect("trained bytes unpack through the packing that trained");
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
            .expect("packed bytes unpack");
    }

    fn release_large_buffer(&mut self) {
        if self.text.capacity() > KEEP_BUFFER {
            self.text = Vec::new();
        }
    }
}

/// One JSON value, compressed by a [`Packing`]. Packing the same value gives the same bytes
/// for one dictionary; [`Packing::same`] compares values whatever packed them.
#[derive(Clone)]
pub struct Packed(Box<[u8]>);

impl Packed {
    /// Bytes held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never: packed bytes hold at least their generation.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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
        let packing = Packing::new();
        let value = deployment(1);
        let packed = packing.pack(&value);
        let back = packing.unpack(&packed);
        assert_eq!(back, value);
        assert_eq!(back.to_string(), value.to_string(), "key order is kept");
        assert!(packed.len() < value.to_string().len());
        assert!(
            packing.same(&packing.pack(&back), &packed),
            "packing is deterministic"
        );
        assert!(!packing.same(
            &packing.pack(&json!({"a": 1})),
            &packing.pack(&json!({"a": 2}))
        ));
        // Larger than any first guess of the output's size, and incompressible.
        let noise: String = (0..20_000u32)
            .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26))
            .collect();
        let big = json!({"data": {"noise": noise}});
        assert_eq!(packing.unpack(&packing.pack(&big)), big);
    }

    #[test]
    fn stored_text_packs_as_its_value_does() {
        let packing = Packing::new();
        let value = deployment(2);
        let text = value.to_string();
        let packed = packing.pack_text(&text);
        assert_eq!(packing.unpack(&packed), value);
        assert!(
            packing.same(&packed, &packing.pack(&value)),
            "equal to the value packed"
        );
        assert_eq!(packing.unpack(&packing.pack_text("null")), Value::Null);
    }

    #[test]
    fn a_trained_dictionary_packs_alike_objects_smaller_and_old_bytes_still_unpack() {
        let packing = Packing::new();
        let before: Vec<(Value, Packed)> = (0..300)
            .map(|i| {
                let v = deployment(i);
                let p = packing.pack(&v);
                (v, p)
            })
            .collect();
        let mut few = Samples::default();
        for (_, packed) in &before[..MIN_SAMPLES - 1] {
            few.add(&packing, packed);
        }
        assert!(!packing.train(&few), "too few samples train nothing");
        let mut samples = few;
        for (_, packed) in &before[MIN_SAMPLES - 1..] {
            samples.add(&packing, packed);
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
        let other = packing.clone();
        assert!(packing.train(&samples), "this call trains it");
        assert!(
            other.trained(),
            "300 alike objects train a dictionary, for every clone"
        );
        assert!(!packing.train(&samples), "trained once");
        assert!(
            !Packing::new().trained(),
            "another packing has its own dictionary"
        );
        for (value, packed) in &before {
            assert_eq!(
                &packing.unpack(packed),
                value,
                "bytes packed before training unpack"
            );
            let repacked = packing.repacked(packed).expect("older bytes are repacked");
            assert!(
                repacked.len() < packed.len(),
                "the dictionary packs smaller"
            );
            assert_eq!(&other.unpack(&repacked), value);
            assert!(packing.same(&repacked, packed), "equal across dictionaries");
            assert!(packing.repacked(&repacked).is_none(), "newest bytes stay");
        }
        let fresh = packing.pack(&deployment(7));
        assert_eq!(packing.unpack(&fresh), deployment(7));
        assert!(packing.repacked(&fresh).is_none());
        // All at once, on every core: the older copies are counted and replaced, newer stay.
        let mut copies: Vec<Packed> = before.iter().map(|(_, p)| p.clone()).collect();
        copies.push(fresh.clone());
        let repacked = packing.repack_all(copies.iter_mut().collect());
        assert_eq!(repacked, before.len(), "each older copy, not the fresh one");
        assert_eq!(
            packing.repack_all(copies.iter_mut().collect()),
            0,
            "repacked once"
        );
        for (copy, (value, _)) in copies.iter().zip(&before) {
            assert_eq!(&packing.unpack(copy), value);
        }
        assert!(!packing.same(&fresh, &packing.pack(&deployment(8))));
    }

    #[test]
    fn debug_output_shows_no_content() {
        let packed = Packing::new().pack(&json!({"data": {"password": "hunter2"}}));
        assert!(!format!("{packed:?}").contains("hunter2"));
    }
}
