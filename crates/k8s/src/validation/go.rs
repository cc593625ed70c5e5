//! The two pieces of Go's standard library kube-apiserver's answers depend on: `%q` string
//! quoting (how a bad value is shown in `Invalid value: "..."`) and `encoding/base64`'s
//! `StdEncoding` decoder (how a `[]byte` field such as a Secret's `data` is decoded).

/// `s` quoted as Go's `strconv.Quote` (`fmt`'s `%q`) quotes it: printable characters as
/// they are, `\a \b \f \n \r \t \v`, other control characters as `\xHH`, other
/// non-printable characters as `\uHHHH` / `\UHHHHHHHH`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII
/// space. Approximated from what std knows: control characters, separators other than the
/// space, the format characters (category Cf) and private-use characters are not
/// printable; unassigned code points (which std cannot tell apart) count as printable.
fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    let format = matches!(u,
        0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x890..=0x891 | 0x8E2 | 0x180E
        | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2064 | 0x2066..=0x206F | 0xFEFF
        | 0xFFF9..=0xFFFB | 0x110BD | 0x110CD | 0x13430..=0x1343F | 0x1BCA0..=0x1BCA3
        | 0x1D173..=0x1D17A | 0xE0001 | 0xE0020..=0xE007F);
    let private = matches!(u, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    let separator = matches!(u, 0x2028 | 0x2029);
    !(format || private || separator)
}

/// The alphabet of RFC 4648 standard base64, as `encoding/base64.StdEncoding` uses it.
fn decode_symbol(b: u8) -> Option<u8> {
    match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes `src` as Go's `base64.StdEncoding.Decode` does (padding required, `\r` and `\n`
/// skipped anywhere, trailing bits not checked), which is how kube-apiserver's JSON decoder
/// reads a `[]byte` field. `Err(offset)` is Go's `CorruptInputError`: kube reports it as
/// `illegal base64 data at input byte <offset>`.
pub fn base64_decode(src: &str) -> Result<Vec<u8>, usize> {
    let src = src.as_bytes();
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    while si < src.len() {
        // One quantum, ported from encoding/base64's decodeQuantum.
        let mut dbuf = [0u8; 4];
        let mut dlen = 4;
        let mut j = 0;
        let mut trailing_garbage = None;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                // StdEncoding pads, so a quantum cut short is corrupt.
                return Err(si - j);
            }
            let byte = src[si];
            si += 1;
            if let Some(v) = decode_symbol(byte) {
                dbuf[j] = v;
                j += 1;
                continue;
            }
            if byte == b'\n' || byte == b'\r' {
                continue;
            }
            if byte != b'=' {
                return Err(si - 1);
            }
            // Padding: only at positions 2 and 3 of a quantum.
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && (src[si] == b'\n' || src[si] == b'\r') {
                si += 1;
            }
            if si < src.len() {
                trailing_garbage = Some(si);
            }
            dlen = j;
            break;
        }
        let val = (u32::from(dbuf[0]) << 18)
            | (u32::from(dbuf[1]) << 12)
            | (u32::from(dbuf[2]) << 6)
            | u32::from(dbuf[3]);
        let bytes = [(val >> 16) as u8, (val >> 8) as u8, val as u8];
        out.extend_from_slice(&bytes[..dlen - 1]);
        if let Some(at) = trailing_garbage {
            return Err(at);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_as_go_does() {
        assert_eq!(quote("plain"), r#""plain""#);
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("a\u{1}b\tc\n\u{7f}"), r#""a\x01b\tc\n\x7f""#);
        assert_eq!(quote("é日本"), "\"é日本\"");
        assert_eq!(quote("\u{200b}\u{a0}"), r#""\u200b\u00a0""#);
        assert_eq!(quote("\u{F0000}"), r#""\U000f0000""#);
    }

    #[test]
    fn base64_decodes_as_go_std_encoding() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("").unwrap(), b"");
        // Newlines are skipped anywhere, as in line-wrapped Secret data.
        assert_eq!(base64_decode("aGVs\nbG8=\n").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVsbA==").unwrap(), b"hell");
        // Trailing bits are not checked by the non-strict StdEncoding ("aGVsbB==" ~ "hell").
        assert_eq!(base64_decode("aGVsbB==").unwrap(), b"hell");
        // Offsets are those of Go's CorruptInputError.
        assert_eq!(base64_decode("aGVsbG8"), Err(4));
        assert_eq!(base64_decode("not base64!"), Err(3));
        assert_eq!(base64_decode("aGVsbG8=x"), Err(8));
        assert_eq!(base64_decode("a==="), Err(1));
        assert_eq!(base64_decode("aG=="), Ok(b"h".to_vec()));
        assert_eq!(base64_decode("aG="), Err(3));
        assert_eq!(base64_decode("aGVs bG8="), Err(4));
        assert_eq!(base64_decode("aGVsbG8=aGVs"), Err(8));
    }
}
