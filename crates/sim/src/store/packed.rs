//! A stored version's JSON text, kept compressed: a million stored objects held as text
//! were about 4 KB of heap each (3.3 KB of it the text itself), while the objects of one
//! cluster are alike (the same keys, managedFields, labels and images over and over), which
//! is where a zstd *dictionary* pays. So the text is packed with a dictionary trained once
//! per process from the first objects a store holds ([`train`]), and unpacked for the
//! request, watch event or write that reads it, as kube-apiserver's watch cache keeps
//! serialized objects and etcd keeps them compacted on disk.
//!
//! Until a dictionary is trained, texts are kept as they are (a store that never holds
//! enough objects to train one is small). The resourceVersion's digits are left out of the
//! packed text and put back on unpacking: a version re-stamped with another
//! resourceVersion (a prepared bulk edit stored later, see `bulk.rs`) keeps its packed
//! bytes, so storing it costs no compression.

use std::cell::RefCell;
use std::ops::Range;
use std::sync::OnceLock;
use zstd::bulk::{Compressor, Decompressor};
use zstd::dict::{DecoderDictionary, EncoderDictionary};

/// zstd's fastest regular level: every write packs, and the dictionary gives most of the
/// ratio.
const LEVEL: i32 = 1;

/// Bytes of the trained dictionary (zstd's default size for `--train`).
const DICTIONARY_BYTES: usize = 112_640;

/// Texts a dictionary is trained from at most, and at most this many bytes of each.
pub const SAMPLES: usize = 2_048;
const SAMPLE_BYTES: usize = 16 * 1024;

/// Fewer samples than this make no useful dictionary: training waits for more.
pub const MIN_SAMPLES: usize = 256;

/// The first byte of packed bytes: how the rest is kept.
const RAW: u8 = 0;
const TRAINED: u8 = 1;

/// No resourceVersion digits were left out.
const NO_DIGITS: u32 = u32::MAX;

/// The trained dictionary, prepared for both directions; one per process (its objects are
/// alike whichever store holds them, and a dictionary per store would cost every
/// simulator of a test process its own training).
struct Dictionary {
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
}

static DICTIONARY: OnceLock<Dictionary> = OnceLock::new();

/// Whether a dictionary was trained: texts kept raw before are then worth repacking.
pub fn trained() -> bool {
    DICTIONARY.get().is_some()
}

/// The texts a dictionary is trained from, in the one buffer zstd's trainer reads.
#[derive(Default)]
pub struct Samples {
    texts: Vec<u8>,
    sizes: Vec<usize>,
}

impl Samples {
    /// Adds `text`, or its first [`SAMPLE_BYTES`] (enough to learn an object's shape).
    pub fn add(&mut self, text: &[u8]) {
        let text = &text[..text.len().min(SAMPLE_BYTES)];
        self.texts.extend_from_slice(text);
        self.sizes.push(text.len());
    }

    pub fn count(&self) -> usize {
        self.sizes.len()
    }
}

/// Trains the process's dictionary from `samples`. True when this call trained it; false
/// when one exists already, the samples are too few, or zstd finds nothing to learn (texts
/// are then kept raw, as before).
pub fn train(samples: &Samples) -> bool {
    if trained() || samples.count() < MIN_SAMPLES {
        return false;
    }
    // zstd wants samples of about ten times the dictionary's size at least.
    let size = DICTIONARY_BYTES.min(samples.texts.len() / 10).max(1024);
    let Ok(trained) = zstd::dict::from_continuous(&samples.texts, &samples.sizes, size) else {
        return false;
    };
    DICTIONARY
        .set(Dictionary {
            encoder: EncoderDictionary::copy(&trained, LEVEL),
            decoder: DecoderDictionary::copy(&trained),
        })
        .is_ok()
}

/// One JSON text, packed.
#[derive(Clone)]
pub struct Packed {
    /// [`RAW`] or [`TRAINED`], then the text (without the resourceVersion's digits when
    /// `digits_at` says where they go) as is or as a zstd frame.
    bytes: Box<[u8]>,
    /// Where the resourceVersion's digits go back in, or [`NO_DIGITS`].
    digits_at: u32,
    /// The text's length without the digits left out.
    len: u32,
}

impl std::fmt::Debug for Packed {
    // Never the text: a Secret's values are in it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packed")
            .field("packed", &self.bytes.len())
            .field("len", &self.len)
            .finish()
    }
}

thread_local! {
    // Contexts and buffers per thread, reused: a new context allocates and clears its
    // tables, and buffers allocated per call fragment the heap.
    static PACKER: RefCell<Packer> = RefCell::new(Packer::default());
}

/// Buffers larger than this are not kept between calls (one huge object must not pin
/// memory).
const KEEP_BUFFER: usize = 1 << 20;

#[derive(Default)]
struct Packer {
    compressor: Option<Compressor<'static>>,
    decompressor: Option<Decompressor<'static>>,
    frame: Vec<u8>,
    text: Vec<u8>,
}

impl Packed {
    /// Packs `text`, leaving out `text[digits]` (the resourceVersion's digits, put back by
    /// [`Packed::write`]).
    pub fn new(text: &[u8], digits: Option<Range<usize>>) -> Packed {
        let (digits_at, kept) = match &digits {
            Some(d) => (d.start as u32, text.len() - d.len()),
            None => (NO_DIGITS, text.len()),
        };
        let parts = match &digits {
            Some(d) => [&text[..d.start], &text[d.end..]],
            None => [text, &[][..]],
        };
        let bytes = match DICTIONARY.get() {
            Some(dictionary) => PACKER.with_borrow_mut(|p| p.pack(dictionary, parts, kept)),
            None => {
                let mut out = Vec::with_capacity(1 + kept);
                out.push(RAW);
                out.extend_from_slice(parts[0]);
                out.extend_from_slice(parts[1]);
                out.into_boxed_slice()
            }
        };
        Packed {
            bytes,
            digits_at,
            len: kept as u32,
        }
    }

    /// The text's length with `digits` put back.
    pub fn len(&self, digits: &[u8]) -> usize {
        self.len as usize + if self.has_digits() { digits.len() } else { 0 }
    }

    /// Whether the resourceVersion's digits were left out (and [`Packed::write`] puts
    /// whatever digits it is given back).
    pub fn has_digits(&self) -> bool {
        self.digits_at != NO_DIGITS
    }

    /// Whether the text is packed with the trained dictionary.
    pub fn is_trained(&self) -> bool {
        self.bytes[0] == TRAINED
    }

    /// Appends the text to `out`, with `digits` where the left-out digits were.
    pub fn write(&self, digits: &[u8], out: &mut Vec<u8>) {
        let (kind, rest) = self
            .bytes
            .split_first()
            .expect("packed bytes start with their kind");
        let put = |text: &[u8], out: &mut Vec<u8>| {
            out.reserve(text.len() + digits.len());
            if self.has_digits() {
                let at = self.digits_at as usize;
                out.extend_from_slice(&text[..at]);
                out.extend_from_slice(digits);
                out.extend_from_slice(&text[at..]);
            } else {
                out.extend_from_slice(text);
            }
        };
        match *kind {
            TRAINED => PACKER.with_borrow_mut(|p| {
                p.unpack(rest, self.len as usize);
                put(&p.text, out);
                if p.text.capacity() > KEEP_BUFFER {
                    p.text = Vec::new();
                }
            }),
            _ => put(rest, out),
        }
    }

    /// The same text packed with the trained dictionary, if it was kept raw and one exists.
    pub fn repacked(&self) -> Option<Packed> {
        if self.is_trained() || !trained() {
            return None;
        }
        let (digits, at) = (b"", self.digits_at as usize);
        let mut text = Vec::with_capacity(self.len as usize);
        self.write(digits, &mut text);
        Some(Packed::new(&text, None).with_digits_at(self.has_digits().then_some(at)))
    }

    fn with_digits_at(mut self, at: Option<usize>) -> Packed {
        self.digits_at = at.map_or(NO_DIGITS, |at| at as u32);
        self
    }
}

impl Packer {
    /// `parts` (together `len` bytes) compressed with `dictionary`, after the [`TRAINED`]
    /// byte.
    fn pack(
        &mut self,
        dictionary: &'static Dictionary,
        parts: [&[u8]; 2],
        len: usize,
    ) -> Box<[u8]> {
        let compressor = self.compressor.get_or_insert_with(|| {
            Compressor::with_prepared_dictionary(&dictionary.encoder).expect("zstd context")
        });
        // The two parts side by side: zstd's one-shot call takes one input.
        self.text.clear();
        self.text.reserve(len);
        self.text.extend_from_slice(parts[0]);
        self.text.extend_from_slice(parts[1]);
        // Into a buffer kept between calls, then copied out at its exact size: no zeroed
        // bound-sized allocation and no shrinking reallocation per object.
        // (zstd writes a `Vec` from its start, whatever it holds: the kind byte goes first
        // on the way out.)
        self.frame.clear();
        self.frame.reserve(zstd::zstd_safe::compress_bound(len));
        compressor
            .compress_to_buffer(&self.text, &mut self.frame)
            .expect("the output holds zstd's bound");
        let mut out = Vec::with_capacity(1 + self.frame.len());
        out.push(TRAINED);
        out.extend_from_slice(&self.frame);
        let out = out.into_boxed_slice();
        if self.frame.capacity() > KEEP_BUFFER {
            self.frame = Vec::new();
        }
        if self.text.capacity() > KEEP_BUFFER {
            self.text = Vec::new();
        }
        out
    }

    /// The `len` bytes of text `frame` holds, into `self.text`.
    fn unpack(&mut self, frame: &[u8], len: usize) {
        let decompressor = self.decompressor.get_or_insert_with(|| {
            let dictionary = DICTIONARY
                .get()
                .expect("trained bytes exist after training");
            Decompressor::with_prepared_dictionary(&dictionary.decoder).expect("zstd context")
        });
        self.text.clear();
        self.text.reserve(len);
        decompressor
            .decompress_to_buffer(frame, &mut self.text)
            .expect("bytes packed by Packed::new unpack");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_of(packed: &Packed, digits: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        packed.write(digits, &mut out);
        assert_eq!(out.len(), packed.len(digits));
        out
    }

    /// Alike objects train a dictionary that packs them smaller; texts kept raw before
    /// still read back, as do their repacked forms, with the digits put back where they
    /// were. (The dictionary is the process's: other tests of this binary may have
    /// trained it already, which changes nothing read back.)
    #[test]
    fn texts_read_back_raw_packed_and_repacked_with_any_digits() {
        let object = |i: usize| {
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": format!("config-{i}"), "namespace": "team-1", "resourceVersion": "42",
                "labels": {"app": format!("app-{}", i % 17)}},
                "data": {"color": "blue", "size": i.to_string()}})
            .to_string()
            .into_bytes()
        };
        let digits = |text: &[u8]| {
            let at = text.windows(2).position(|w| w == b"42").unwrap();
            at..at + 2
        };
        let before: Vec<(Vec<u8>, Packed)> = (0..4)
            .map(|i| {
                let text = object(i);
                let packed = Packed::new(&text, Some(digits(&text)));
                (text, packed)
            })
            .collect();
        let mut samples = Samples::default();
        for i in 0..MIN_SAMPLES * 2 {
            samples.add(&object(i));
        }
        train(&samples);
        assert!(trained(), "alike texts train a dictionary");
        for (text, packed) in &before {
            assert_eq!(&text_of(packed, b"42"), text);
            let restamped = String::from_utf8(text_of(packed, b"1234567")).unwrap();
            assert!(
                restamped.contains("\"resourceVersion\":\"1234567\""),
                "{restamped}"
            );
            let repacked = packed
                .repacked()
                .unwrap_or_else(|| Packed::new(text, Some(digits(text))));
            assert!(repacked.is_trained());
            assert_eq!(&text_of(&repacked, b"42"), text);
        }
        let text = object(100_000);
        let packed = Packed::new(&text, Some(digits(&text)));
        assert!(packed.is_trained());
        assert!(
            packed.bytes.len() * 2 < text.len(),
            "{} packed from {}",
            packed.bytes.len(),
            text.len()
        );
        assert_eq!(text_of(&packed, b"42"), text);
        let whole = Packed::new(&text, None);
        assert!(!whole.has_digits());
        assert_eq!(
            text_of(&whole, b"999"),
            text,
            "no digits go into a whole text"
        );
        let empty = Packed::new(b"", None);
        assert_eq!(text_of(&empty, b""), b"");
    }
}
