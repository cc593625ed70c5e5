//! The two size limits of a load, enforced while the bytes are read rather than after: one
//! document (or one item of a List) may be at most [`LoadOptions::max_object_bytes`], and
//! everything read at most [`LoadOptions::max_total_bytes`].
//!
//! Counting happens below the parser, so a hostile input is refused after at most the
//! limit and one byte have been taken from the file or pipe, however it is shaped (one
//! endless string, one endless line, a List of one giant item).
//!
//! [`LoadOptions::max_object_bytes`]: super::LoadOptions::max_object_bytes
//! [`LoadOptions::max_total_bytes`]: super::LoadOptions::max_total_bytes

use std::cell::Cell;
use std::io::Read;
use std::rc::Rc;

use super::ManifestError;

/// Which limit reading crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Crossed {
    Object,
    Total,
}

/// Bytes taken so far and where the current document or item began: shared between the
/// reader (which counts and refuses) and the parser (which says where units begin).
#[derive(Debug)]
pub(super) struct Meter {
    read: Cell<u64>,
    unit_start: Cell<u64>,
    /// Newlines taken so far, so a parser started afresh per document can report lines of
    /// the whole file.
    lines: Cell<u64>,
    max_unit: u64,
    max_total: u64,
    crossed: Cell<Option<Crossed>>,
}

impl Meter {
    pub(super) fn new(max_unit: usize, max_total: u64) -> Rc<Meter> {
        Rc::new(Meter {
            read: Cell::new(0),
            unit_start: Cell::new(0),
            lines: Cell::new(0),
            max_unit: max_unit as u64,
            max_total,
            crossed: Cell::new(None),
        })
    }

    /// A new document or List item begins at the next byte.
    pub(super) fn start_unit(&self) {
        self.unit_start.set(self.read.get());
    }

    pub(super) fn max_unit(&self) -> u64 {
        self.max_unit
    }

    pub(super) fn read(&self) -> u64 {
        self.read.get()
    }

    pub(super) fn lines(&self) -> u64 {
        self.lines.get()
    }

    pub(super) fn crossed(&self) -> Option<Crossed> {
        self.crossed.get()
    }

    /// How many more bytes may be taken before a limit is crossed.
    fn room(&self) -> u64 {
        let read = self.read.get();
        let unit = (self.unit_start.get() + self.max_unit).saturating_sub(read);
        unit.min(self.max_total.saturating_sub(read))
    }

    /// Counts `bytes` just taken; refuses once a limit is crossed.
    pub(super) fn take(&self, bytes: &[u8]) -> std::io::Result<()> {
        let read = self.read.get() + bytes.len() as u64;
        self.read.set(read);
        let newlines = bytes.iter().filter(|b| **b == b'\n').count() as u64;
        self.lines.set(self.lines.get() + newlines);
        let crossed = if read > self.max_total {
            Some(Crossed::Total)
        } else if read > self.unit_start.get() + self.max_unit {
            Some(Crossed::Object)
        } else {
            None
        };
        match crossed {
            Some(c) => {
                self.crossed.set(Some(c));
                Err(std::io::Error::other("size limit crossed"))
            }
            None => Ok(()),
        }
    }
}

/// A reader that never takes more than one byte past a limit from `inner`.
///
/// It keeps its own buffer: the JSON parser asks for one byte at a time, and going through
/// layers of readers for each byte was a sixth of a commit's time.
pub(super) struct Limited<'a, R> {
    inner: &'a mut R,
    meter: Rc<Meter>,
    /// Every byte taken, while the caller may still want to read them again (the first
    /// JSON document, which YAML may read instead); `None` once that chance has passed.
    pub(super) replay: Option<Vec<u8>>,
    /// A byte taken (and counted) ahead of the parser, given back first.
    pub(super) pending: Option<u8>,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
}

impl<'a, R> Limited<'a, R> {
    pub(super) fn new(inner: &'a mut R, meter: Rc<Meter>, replay: bool) -> Self {
        Limited {
            inner,
            meter,
            replay: replay.then(Vec::new),
            pending: None,
            buf: vec![0; 64 * 1024].into_boxed_slice(),
            pos: 0,
            filled: 0,
        }
    }
}

impl<R: Read> Read for Limited<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.meter.crossed().is_some() {
            return Err(std::io::Error::other("size limit crossed"));
        }
        if let (Some(byte), Some(first)) = (self.pending, out.first_mut()) {
            *first = byte;
            self.pending = None;
            return Ok(1);
        }
        if self.pos == self.filled {
            // Never more from `inner` than what may still be read and the byte that
            // crosses the limit: what the parser has not taken yet is in `buf`, none of it
            // counted.
            let room = usize::try_from(self.meter.room().saturating_add(1)).unwrap_or(usize::MAX);
            let cap = self.buf.len().min(room);
            self.filled = self.inner.read(&mut self.buf[..cap])?;
            self.pos = 0;
            if let Some(replay) = &mut self.replay {
                replay.extend_from_slice(&self.buf[..self.filled]);
                // More than one object's worth is no longer a document YAML might read
                // instead.
                if replay.len() as u64 > self.meter.max_unit {
                    self.replay = None;
                }
            }
        }
        let n = out.len().min(self.filled - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        self.meter.take(&out[..n])?;
        Ok(n)
    }
}

/// The refusal of a document or List item over the per-object limit. `item` is the List
/// item (`items[3]`) when it is one.
pub(super) fn object_too_large(
    file: &str,
    document: usize,
    item: Option<String>,
    max: usize,
) -> ManifestError {
    let what = if item.is_some() { "" } else { "the document " };
    ManifestError::new(
        file,
        document,
        item,
        format!(
            "{what}is larger than {}, the most one object may be (kube-apiserver refuses a \
             request body over 3 MiB); --max-object-size changes it",
            mib(max as u64)
        ),
    )
}

/// The refusal of an input that grew past the total limit while it was read (standard
/// input, or a file that grew after its size was taken).
pub(super) fn too_large(file: &str, max: usize) -> ManifestError {
    ManifestError::new(
        file,
        0,
        None,
        format!("input is larger than {}", mib(max as u64)),
    )
}

/// `n` bytes as a person reads a size: `64 MiB`, `1.5 KiB`, `300 bytes`.
pub(super) fn mib(n: u64) -> String {
    let (amount, unit) = match n {
        n if n >= 1 << 30 => (n as f64 / (1u64 << 30) as f64, "GiB"),
        n if n >= 1 << 20 => (n as f64 / (1u64 << 20) as f64, "MiB"),
        n if n >= 1 << 10 => (n as f64 / (1u64 << 10) as f64, "KiB"),
        n => return format!("{n} bytes"),
    };
    if amount.fract() == 0.0 {
        format!("{amount:.0} {unit}")
    } else {
        format!("{amount:.1} {unit}")
    }
}
