//! A YAML stream read a document at a time: the text is cut at document markers (`---` at
//! the start of a line) and each piece parsed on its own, so only one document's text and
//! tree are held while it is parsed.
//!
//! Cutting there is safe because YAML forbids a line starting with `---` and a blank inside
//! any scalar or collection (`c-forbidden` in YAML 1.2, section 9.1.4): it always begins a
//! new document. Lines before a marker that hold no node (comments, blank lines, `%`
//! directives) stay with the document that follows, where a parser reading the whole
//! stream would put them too.

use std::io::BufRead;

use super::limits::{object_too_large, too_large};
use super::yaml::split_yaml;
use super::{ManifestError, RawInput};

/// Limits a YAML reading enforces as it takes lines.
pub(super) struct YamlLimits {
    pub(super) max_object: usize,
    pub(super) max_total: usize,
    /// Bytes the caller may still take from this input in all.
    pub(super) room: u64,
}

/// Reads every document of `reader` into `out`; returns the bytes taken.
pub(super) fn read_yaml<R: BufRead>(
    reader: &mut R,
    file: &str,
    limits: &YamlLimits,
    out: &mut RawInput,
) -> Result<u64, ManifestError> {
    let mut taken: u64 = 0;
    let mut piece = Piece::default();
    let mut document = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let room_left = |taken: u64| limits.room.saturating_sub(taken);
        let room =
            (limits.max_object.saturating_sub(piece.text.len()) as u64).min(room_left(taken));
        let mut n = read(reader, &mut line, room, file, document)?;
        if n == 0 {
            break;
        }
        taken += n as u64;
        let marker = is_marker(&line) && piece.has_node;
        if marker {
            document += piece.parse(file, document, out)?;
            piece = piece.next();
            if n as u64 > room {
                // The full piece left no room for the marker that ends it: the rest of the
                // line belongs to the new, empty piece.
                let room = (limits.max_object as u64).min(room_left(taken));
                let more = read(reader, &mut line, room - n as u64, file, document)?;
                taken += more as u64;
                n += more;
            }
        }
        let room = (limits.max_object.saturating_sub(piece.text.len()) as u64)
            .min(room_left(taken - n as u64));
        if n as u64 > room {
            return Err(if taken > limits.room {
                too_large(file, limits.max_total)
            } else {
                object_too_large(file, document, None, limits.max_object)
            });
        }
        piece.push(&line);
    }
    if piece.has_node {
        piece.parse(file, document, out)?;
    }
    Ok(taken)
}

/// The text of one document (and the node-less lines before it).
struct Piece {
    text: Vec<u8>,
    /// 1-based line of the file the piece starts on.
    first_line: u64,
    next_line: u64,
    /// Offset in the file of the piece's first byte, for UTF-8 errors.
    start_byte: u64,
    /// Bytes pushed (the text is taken when parsed).
    len: u64,
    /// Whether any line is more than a comment, blank or directive.
    has_node: bool,
}

impl Default for Piece {
    fn default() -> Self {
        Piece {
            text: Vec::new(),
            first_line: 1,
            next_line: 1,
            start_byte: 0,
            len: 0,
            has_node: false,
        }
    }
}

impl Piece {
    fn push(&mut self, line: &[u8]) {
        let trimmed = line.trim_ascii_start();
        if !(trimmed.is_empty() || trimmed.starts_with(b"#") || line.starts_with(b"%")) {
            self.has_node = true;
        }
        self.text.extend_from_slice(line);
        self.len += line.len() as u64;
        self.next_line += 1;
    }

    /// The empty piece that starts where this one ends.
    fn next(&self) -> Piece {
        Piece {
            first_line: self.next_line,
            next_line: self.next_line,
            start_byte: self.start_byte + self.len,
            ..Piece::default()
        }
    }

    /// Parses the piece as documents numbered from `document`; returns how many it held.
    fn parse(
        &mut self,
        file: &str,
        document: usize,
        out: &mut RawInput,
    ) -> Result<usize, ManifestError> {
        let bytes = std::mem::take(&mut self.text);
        let text = String::from_utf8(bytes).map_err(|e| {
            ManifestError::new(
                file,
                document,
                None,
                format!(
                    "not UTF-8 text (invalid byte at offset {})",
                    self.start_byte + e.utf8_error().valid_up_to() as u64
                ),
            )
        })?;
        split_yaml(&text, file, self.first_line - 1, document, out)
    }
}

/// `---` alone or followed by a blank: a document marker.
fn is_marker(line: &[u8]) -> bool {
    line.starts_with(b"---") && line.get(3).is_none_or(|b| b.is_ascii_whitespace())
}

/// Appends one line (with its newline) to `line`, taking at most `room + 1` bytes, so an
/// endless line is refused as soon as it is longer than what may still be read.
fn read_line<R: BufRead>(reader: &mut R, line: &mut Vec<u8>, room: u64) -> std::io::Result<usize> {
    let cap = usize::try_from(room.saturating_add(1)).unwrap_or(usize::MAX);
    let mut n = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(n);
        }
        let want = cap - n;
        let (len, done) = match buf.iter().take(want).position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => {
                let len = buf.len().min(want);
                (len, len == want)
            }
        };
        line.extend_from_slice(&buf[..len]);
        reader.consume(len);
        n += len;
        if done {
            return Ok(n);
        }
    }
}

/// [`read_line`] with the error a user reads.
fn read<R: BufRead>(
    reader: &mut R,
    line: &mut Vec<u8>,
    room: u64,
    file: &str,
    document: usize,
) -> Result<usize, ManifestError> {
    read_line(reader, line, room)
        .map_err(|e| ManifestError::new(file, document, None, format!("cannot read: {e}")))
}
