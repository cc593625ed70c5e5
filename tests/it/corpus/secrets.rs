//! Secret values in the corpus runner: the hashes `driftd check --hash-key` shows in their
//! place, recomputed here with a hand-written HMAC-SHA256 (independent of the differ's
//! `hmac` crate), the real values put back into a restoring patch, and the scan of every
//! output for every form of every value, however short.

use base64::Engine as _;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The key the runner passes to `driftd check --hash-key`.
pub const HASH_KEY: &str = "driftd-corpus";

/// HMAC-SHA256 (RFC 2104) of `msg` under `key`.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// What `driftd check` shows instead of the Secret value `plain`: the first 8 bytes of its
/// keyed hash, in hex.
pub fn placeholder(plain: &[u8]) -> Value {
    json!({"hmac": hex::encode(&hmac_sha256(HASH_KEY.as_bytes(), plain)[..8])})
}

/// `expected` with every `{"hmac_of": "<plain value>"}` (how expected.json names a Secret
/// value without knowing the key) replaced by the placeholder `driftd check` must show.
pub fn resolve_expected(expected: &Value) -> Value {
    match expected {
        Value::Object(m) => match (m.len(), m.get("hmac_of").and_then(Value::as_str)) {
            (1, Some(plain)) => placeholder(plain.as_bytes()),
            _ => Value::Object(
                m.iter()
                    .map(|(k, v)| (k.clone(), resolve_expected(v)))
                    .collect(),
            ),
        },
        Value::Array(items) => Value::Array(items.iter().map(resolve_expected).collect()),
        other => other.clone(),
    }
}

/// The plain values of every Secret among `objects` (`data` decoded, `stringData` as is).
pub fn plain_values<'a>(objects: impl IntoIterator<Item = &'a Value>) -> Vec<Vec<u8>> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out: Vec<Vec<u8>> = Vec::new();
    for obj in objects.into_iter().filter(|o| o["kind"] == "Secret") {
        for field in ["data", "stringData"] {
            for v in obj[field].as_object().into_iter().flat_map(|m| m.values()) {
                let Some(s) = v.as_str() else { continue };
                let plain = match field {
                    "data" => b64.decode(s).unwrap_or_else(|_| s.as_bytes().to_vec()),
                    _ => s.as_bytes().to_vec(),
                };
                if !out.contains(&plain) {
                    out.push(plain);
                }
            }
        }
    }
    out
}

/// `value` (an operation's value in a restoring patch) with each placeholder replaced by the
/// base64 `data` value it stands for, found among `plain` by its hash. A placeholder that
/// is no value's hash is an error: the patch would restore something nobody committed.
pub fn unredact(value: &Value, plain: &[Vec<u8>]) -> Result<Value, String> {
    match value {
        Value::Object(m) if m.len() == 1 && m.contains_key("hmac") => plain
            .iter()
            .find(|p| placeholder(p) == *value)
            .map(|p| json!(base64::engine::general_purpose::STANDARD.encode(p)))
            .ok_or_else(|| format!("patch placeholder {value} is the hash of no Secret value")),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| Ok((k.clone(), unredact(v, plain)?)))
            .collect::<Result<_, String>>()
            .map(Value::Object),
        other => Ok(other.clone()),
    }
}

/// Every form a leaked value could take in output: plain, base64 (padded, unpadded,
/// URL-safe) and hex (lower and upper case).
fn forms(plain: &[u8]) -> Vec<String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let mut out = vec![
        STANDARD.encode(plain),
        STANDARD_NO_PAD.encode(plain),
        URL_SAFE_NO_PAD.encode(plain),
        hex::encode(plain),
        hex::encode_upper(plain),
    ];
    if let Ok(text) = std::str::from_utf8(plain) {
        out.push(text.to_string());
    }
    out.retain(|f| !f.is_empty());
    out.sort();
    out.dedup();
    out
}

/// Whether `form` occurs in `text`. Forms of 8 characters and more count anywhere; shorter
/// ones (a PIN, "yes") only as a whole word (not inside a longer run of letters and digits),
/// so they are found as a value without matching inside every longer word.
fn occurs(text: &str, form: &str) -> bool {
    if form.len() >= 8 {
        return text.contains(form);
    }
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.match_indices(form).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + form.len()..].chars().next())
    })
}

/// The first form of a value in `plain` found in `text`, described without the value.
pub fn leak(text: &str, plain: &[Vec<u8>]) -> Option<String> {
    plain.iter().enumerate().find_map(|(i, p)| {
        forms(p).iter().enumerate().find_map(|(j, f)| {
            occurs(text, f).then(|| format!("form {j} of Secret value {i} ({} bytes)", p.len()))
        })
    })
}

#[test]
fn hmac_matches_rfc_4231_test_case_2() {
    let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
    assert_eq!(
        hex::encode(mac),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

#[test]
fn short_values_are_found_as_words_only() {
    assert!(occurs(r#"{"pin":"4821"}"#, "4821"));
    assert!(occurs("value: yes\n", "yes"));
    assert!(!occurs("yesterday", "yes"));
    assert!(!occurs("a94821b", "4821"));
    assert!(occurs("xxcm90YXRlZC1ieS1oYW5kxx", "cm90YXRlZC1ieS1oYW5k"));
}
