//! Secret values at rest. A committed Secret is stored with every value replaced by its
//! keyed hash (`driftd_core::diff::secret::hash_values`): enough to tell whether a live value
//! is the committed one, useless to someone who reads the file without the hash key. The
//! values themselves are kept only when an encryption key is configured, sealed with
//! XChaCha20-Poly1305 in the object's `sealed` column, because putting a Secret back needs
//! them. The encryption key comes from a file (a mounted Kubernetes Secret is a file), never
//! from the database. So does the hash key when it is configured (`secrets.hash_key_file`,
//! or the key driftd keeps in a Kubernetes Secret, `secrets.hash_key_secret`, which the
//! daemon reads and hands over as a [`Key`]); only a local run without either keys the
//! hashes with the random installation key in `meta`.
//!
//! `sealed` layout: a version byte (`1`), the 8-byte id of the key, a 24-byte random nonce,
//! then the ciphertext with its 16-byte tag. The plaintext is the JSON map of the values by
//! JSON pointer into the object; the additional data is the object's identity, so a blob
//! copied onto another object does not open.

use super::StoreError;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use driftd_core::diff::secret::hash_values;
use driftd_k8s::ObjectKey;
use rusqlite::{Connection, OptionalExtension};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

const SEAL_VERSION: u8 = 1;
const KEY_ID_LEN: usize = 8;
const NONCE_LEN: usize = 24;
/// `meta` row naming (by id) the key the stored hashes were made with.
const HASH_KEY_ID: &str = "hash_key_id";

/// Short public name of a key: the first 8 bytes of a SHA-256 over it (a key is 32 random
/// bytes, so this reveals nothing usable), in messages and in `sealed` blobs.
pub(crate) fn key_id(bytes: &[u8]) -> [u8; KEY_ID_LEN] {
    let digest = Sha256::new()
        .chain_update(b"driftd key id\0")
        .chain_update(bytes)
        .finalize();
    digest[..KEY_ID_LEN].try_into().expect("8 of 32 bytes")
}

/// A 32-byte key and where it came from. Debug output shows only its id and origin.
#[derive(Clone)]
pub struct Key {
    bytes: Zeroizing<[u8; 32]>,
    id: [u8; KEY_ID_LEN],
    origin: String,
    /// How messages name it: "the hash key file PATH", "the hash key in Secret NS/NAME".
    described: String,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Key({} from {})", hex::encode(self.id), self.origin)
    }
}

impl Key {
    /// Reads a key file: 32 raw bytes (a Kubernetes Secret mounted as a file holds the decoded
    /// bytes), or 64 hex digits, or base64 of 32 bytes (`openssl rand -base64 32`), with
    /// surrounding white space ignored. Errors never show the file's content.
    pub fn from_file(path: &Path) -> Result<Key, StoreError> {
        let bad = |reason: String| StoreError::KeyFile {
            path: path.display().to_string(),
            reason,
        };
        let raw = Zeroizing::new(std::fs::read(path).map_err(|e| bad(e.to_string()))?);
        let bytes = parse_key(&raw).ok_or_else(|| {
            bad(format!(
                "holds {} bytes, which are not a 32-byte key: write 32 random bytes, 64 hex \
                 digits or their base64 (e.g. `openssl rand -base64 32 > FILE`)",
                raw.len()
            ))
        })?;
        Ok(Key::new(bytes, path.display().to_string()))
    }

    fn new(bytes: Zeroizing<[u8; 32]>, origin: String) -> Key {
        Key {
            id: key_id(&bytes[..]),
            bytes,
            described: format!("the hash key file {origin}"),
            origin,
        }
    }

    /// A key from bytes (tests and tools that make their own).
    pub fn from_bytes(bytes: [u8; 32], origin: &str) -> Key {
        Key::new(Zeroizing::new(bytes), origin.to_string())
    }

    /// A key read from elsewhere than a file (a Kubernetes Secret's data), in any form a key
    /// file may hold; `None` when it holds no 32-byte key. `origin` names it in messages.
    pub fn parse(raw: &[u8], origin: &str) -> Option<Key> {
        parse_key(raw).map(|bytes| Key {
            described: format!("the hash key {origin}"),
            ..Key::new(bytes, origin.to_string())
        })
    }

    /// Where the key came from (a file's path, a Secret's name), for messages.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The key's public id, as 16 hex digits.
    pub fn id(&self) -> String {
        hex::encode(self.id)
    }
}

fn parse_key(raw: &[u8]) -> Option<Zeroizing<[u8; 32]>> {
    let mut out = Zeroizing::new([0u8; 32]);
    if raw.len() == 32 {
        out.copy_from_slice(raw);
        return Some(out);
    }
    let text = std::str::from_utf8(raw).ok()?.trim();
    let decoded = Zeroizing::new(if text.len() == 64 {
        hex::decode(text).ok()?
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text))
            .ok()?
    });
    (decoded.len() == 32).then(|| {
        out.copy_from_slice(&decoded);
        out
    })
}

/// The keys one driftd process was configured with. Without any, Secret values are stored
/// only as hashes under the installation key.
#[derive(Debug, Default, Clone)]
pub struct SecretKeys {
    /// `secrets.hash_key_file` or `secrets.hash_key_secret`: keys the stored and reported
    /// hashes instead of the installation key in the database.
    pub hash: Option<Key>,
    /// `secrets.encryption_key_file`: values are stored sealed under it.
    pub encryption: Option<Key>,
    /// `secrets.previous_encryption_key_files`: open values sealed before a rotation.
    pub previous: Vec<Key>,
}

impl SecretKeys {
    /// Reads the configured key files; each error names its file.
    pub fn from_files(
        hash_key_file: Option<&Path>,
        encryption_key_file: Option<&Path>,
        previous_encryption_key_files: &[PathBuf],
    ) -> Result<SecretKeys, StoreError> {
        Ok(SecretKeys {
            hash: hash_key_file.map(Key::from_file).transpose()?,
            encryption: encryption_key_file.map(Key::from_file).transpose()?,
            previous: previous_encryption_key_files
                .iter()
                .map(|p| Key::from_file(p))
                .collect::<Result<_, _>>()?,
        })
    }

    fn decryption_key(&self, id: &[u8]) -> Option<&Key> {
        self.encryption
            .iter()
            .chain(&self.previous)
            .find(|k| k.id[..] == *id)
    }
}

/// The key the hashes of one database are made with, once checked against what the
/// database records.
pub(crate) struct HashKey {
    pub bytes: Zeroizing<Vec<u8>>,
    id: [u8; KEY_ID_LEN],
}

impl HashKey {
    pub(crate) fn has_id(&self, id: &[u8]) -> bool {
        self.id[..] == *id
    }
}

/// How a key is described in messages.
fn describe(id: &[u8], installation: Option<&[u8; KEY_ID_LEN]>, file: Option<&Key>) -> String {
    match file {
        Some(k) if k.id[..] == *id => format!("{} (id {})", k.described, k.id()),
        _ if installation.is_some_and(|i| i[..] == *id) => format!(
            "the installation key kept in the database (id {})",
            hex::encode(id)
        ),
        _ => format!(
            "another hash key, kept outside the database (id {})",
            hex::encode(id)
        ),
    }
}

/// The random key a database created without a configured hash key keeps in `meta`; `None`
/// once the key lives outside (see `key_move`).
pub(crate) fn installation_key(conn: &Connection) -> rusqlite::Result<Option<Zeroizing<Vec<u8>>>> {
    conn.query_row(
        "SELECT value FROM meta WHERE key = 'installation_key'",
        [],
        |r| r.get(0),
    )
    .optional()
    .map(|k| k.map(Zeroizing::new))
}

impl HashKey {
    pub(crate) fn of(key: &Key) -> HashKey {
        HashKey {
            bytes: Zeroizing::new(key.bytes.to_vec()),
            id: key.id,
        }
    }

    pub(crate) fn of_bytes(bytes: Zeroizing<Vec<u8>>) -> HashKey {
        HashKey {
            id: key_id(&bytes),
            bytes,
        }
    }
}

/// The hash key this process uses: the configured one, else the installation key. Not
/// checked against the database ([`checked_hash_key`]). A database whose key was moved out
/// holds none: without a configured key it is refused, naming the key it needs.
pub(crate) fn configured_hash_key(
    conn: &Connection,
    keys: &SecretKeys,
    database: &str,
) -> Result<HashKey, StoreError> {
    if let Some(k) = &keys.hash {
        return Ok(HashKey::of(k));
    }
    match installation_key(conn)? {
        Some(bytes) => Ok(HashKey::of_bytes(bytes)),
        None => Err(StoreError::NoHashKey {
            database: database.to_string(),
            id: recorded_hash_key(conn)?
                .map_or_else(|| "none recorded yet".to_string(), hex::encode),
        }),
    }
}

pub(crate) fn recorded_hash_key(conn: &Connection) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.query_row(
        "SELECT value FROM meta WHERE key = ?1",
        [HASH_KEY_ID],
        |r| r.get(0),
    )
    .optional()
}

/// Whether any stored object holds Secret values (hashed ones included).
pub(crate) fn secrets_stored(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM revision_objects WHERE kind = 'Secret')
             OR EXISTS (SELECT 1 FROM intent_objects WHERE kind = 'Secret')",
        [],
        |r| r.get(0),
    )
}

/// The configured hash key, refused when the stored hashes were made with another one:
/// values hashed under one key cannot be compared with values hashed under another.
pub(crate) fn checked_hash_key(
    conn: &Connection,
    keys: &SecretKeys,
    database: &str,
) -> Result<HashKey, StoreError> {
    let key = configured_hash_key(conn, keys, database)?;
    match recorded_hash_key(conn)? {
        Some(id) if id != key.id && secrets_stored(conn)? => {
            Err(mismatch(conn, keys, database, &id)?)
        }
        _ => Ok(key),
    }
}

/// The refusal of a configured hash key other than the one the stored hashes were made with.
pub(crate) fn mismatch(
    conn: &Connection,
    keys: &SecretKeys,
    database: &str,
    stored: &[u8],
) -> Result<StoreError, StoreError> {
    let configured = configured_hash_key(conn, keys, database)?;
    let installation = installation_key(conn)?.map(|k| key_id(&k));
    Ok(StoreError::HashKeyMismatch {
        database: database.to_string(),
        stored: describe(stored, installation.as_ref(), keys.hash.as_ref()),
        configured: describe(&configured.id, installation.as_ref(), keys.hash.as_ref()),
    })
}

/// Records that the stored hashes are made with `key` (inside the write that stores them).
pub(crate) fn record_hash_key(conn: &Connection, key: &HashKey) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE value != excluded.value",
        rusqlite::params![HASH_KEY_ID, &key.id[..]],
    )?;
    Ok(())
}

/// What an object is stored as: its body with Secret values hashed, and the values sealed
/// when an encryption key is given. Only Secrets hold values: any other object is stored as
/// it is, without a copy.
pub(crate) fn stored_form<'a>(
    hash: &HashKey,
    encryption: Option<&Key>,
    key: &ObjectKey,
    object: &'a Value,
) -> (Cow<'a, Value>, Option<Vec<u8>>) {
    if object.get("kind").and_then(Value::as_str) != Some("Secret") {
        return (Cow::Borrowed(object), None);
    }
    let mut body = object.clone();
    let values = hash_values(&hash.bytes, &mut body);
    let sealed = match encryption {
        Some(enc) if !values.is_empty() => Some(seal(enc, key, &values)),
        _ => None,
    };
    (Cow::Owned(body), sealed)
}

fn aad(key: &ObjectKey) -> Vec<u8> {
    let ns = key.namespace.as_deref().unwrap_or("");
    format!(
        "driftd secret values v1\0{}\0{}\0{ns}\0{}",
        key.group, key.kind, key.name
    )
    .into_bytes()
}

/// Seals the values of `object` under `key`.
pub(crate) fn seal(key: &Key, object: &ObjectKey, values: &BTreeMap<String, Value>) -> Vec<u8> {
    let plaintext = Zeroizing::new(serde_json::to_vec(values).expect("JSON values serialize"));
    let nonce: [u8; NONCE_LEN] = rand::random();
    let cipher = XChaCha20Poly1305::new((&*key.bytes).into());
    let ciphertext = cipher
        .encrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: &plaintext,
                aad: &aad(object),
            },
        )
        .expect("XChaCha20-Poly1305 encrypts any length we store");
    let mut out = Vec::with_capacity(1 + KEY_ID_LEN + NONCE_LEN + ciphertext.len());
    out.push(SEAL_VERSION);
    out.extend_from_slice(&key.id);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ciphertext);
    out
}

/// Why sealed values could not be opened.
#[derive(Debug, PartialEq)]
pub(crate) enum Unseal {
    /// No configured key (current or previous) has this id.
    NoKey(String),
    /// The blob is damaged, or belongs to another object.
    Damaged,
}

/// Opens values sealed by [`seal`] with whichever configured key sealed them.
pub(crate) fn unseal(
    keys: &SecretKeys,
    object: &ObjectKey,
    blob: &[u8],
) -> Result<BTreeMap<String, Value>, Unseal> {
    let header = 1 + KEY_ID_LEN + NONCE_LEN;
    if blob.len() < header || blob[0] != SEAL_VERSION {
        return Err(Unseal::Damaged);
    }
    let id = &blob[1..1 + KEY_ID_LEN];
    let key = keys
        .decryption_key(id)
        .ok_or_else(|| Unseal::NoKey(hex::encode(id)))?;
    let cipher = XChaCha20Poly1305::new((&*key.bytes).into());
    let plaintext = Zeroizing::new(
        cipher
            .decrypt(
                XNonce::from_slice(&blob[1 + KEY_ID_LEN..header]),
                Payload {
                    msg: &blob[header..],
                    aad: &aad(object),
                },
            )
            .map_err(|_| Unseal::Damaged)?,
    );
    serde_json::from_slice(&plaintext).map_err(|_| Unseal::Damaged)
}

/// The id of the key a blob was sealed with.
pub(crate) fn sealed_by(blob: &[u8]) -> Option<&[u8]> {
    blob.get(1..1 + KEY_ID_LEN)
}

/// Whether `blob` is sealed under the configured encryption key.
pub(crate) fn sealed_by_current(keys: &SecretKeys, blob: &[u8]) -> bool {
    keys.encryption
        .as_ref()
        .is_some_and(|k| sealed_by(blob) == Some(&k.id[..]))
}

/// Describes why values could not be opened, naming the object and where it is stored.
pub(crate) fn unseal_error(why: Unseal, object: &ObjectKey, place: &str) -> StoreError {
    StoreError::SecretValues(match why {
        Unseal::NoKey(id) => format!(
            "{object} ({place}): its values are encrypted with key {id}, which is neither \
             secrets.encryption_key_file nor one of secrets.previous_encryption_key_files \
             (DRIFTD_SECRETS_ENCRYPTION_KEY_FILE, DRIFTD_SECRETS_PREVIOUS_ENCRYPTION_KEY_FILES): \
             configure the key they were encrypted with"
        ),
        Unseal::Damaged => format!(
            "{object} ({place}): its encrypted values do not open: the stored data is damaged \
             or was not written for this object"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(name: &str) -> ObjectKey {
        ObjectKey {
            group: String::new(),
            kind: "Secret".into(),
            namespace: Some("app".into()),
            name: name.into(),
        }
    }

    #[test]
    fn key_files_take_raw_hex_or_base64_and_errors_hide_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: [u8; 32] = rand::random();
        let id = Key::from_bytes(bytes, "x").id();
        let forms: [(&str, Vec<u8>); 4] = [
            ("raw", bytes.to_vec()),
            ("hex", format!("{}\n", hex::encode(bytes)).into_bytes()),
            (
                "base64",
                format!(
                    "{}\n",
                    base64::engine::general_purpose::STANDARD.encode(bytes)
                )
                .into_bytes(),
            ),
            (
                "unpadded",
                base64::engine::general_purpose::STANDARD_NO_PAD
                    .encode(bytes)
                    .into_bytes(),
            ),
        ];
        for (name, content) in forms {
            let path = dir.path().join(name);
            std::fs::write(&path, content).unwrap();
            assert_eq!(Key::from_file(&path).unwrap().id(), id, "{name}");
        }
        let short = dir.path().join("short");
        std::fs::write(&short, "hunter2-is-not-a-key\n").unwrap();
        let err = Key::from_file(&short).unwrap_err().to_string();
        assert!(
            err.contains("short") && err.contains("32-byte key"),
            "{err}"
        );
        assert!(!err.contains("hunter2"), "{err}");
        let err = Key::from_file(&dir.path().join("absent")).unwrap_err();
        assert!(err.to_string().contains("absent"), "{err}");
        assert!(!format!("{:?}", Key::from_bytes(bytes, "x")).contains(&hex::encode(bytes)));
    }

    #[test]
    fn sealed_values_open_with_the_key_that_sealed_them_for_that_object_only() {
        let current = Key::from_bytes([1; 32], "current");
        let old = Key::from_bytes([2; 32], "old");
        let values: BTreeMap<String, Value> =
            [("/stringData/password".to_string(), json!("hunter2"))].into();
        let blob = seal(&old, &object("db"), &values);
        assert!(!String::from_utf8_lossy(&blob).contains("hunter2"));
        assert_eq!(sealed_by(&blob), Some(&old.id[..]));
        let rotated = SecretKeys {
            encryption: Some(current),
            previous: vec![old],
            ..SecretKeys::default()
        };
        assert_eq!(unseal(&rotated, &object("db"), &blob).unwrap(), values);
        assert!(!sealed_by_current(&rotated, &blob));
        assert_eq!(
            unseal(&rotated, &object("other"), &blob),
            Err(Unseal::Damaged),
            "bound to its object"
        );
        let mut flipped = blob.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(
            unseal(&rotated, &object("db"), &flipped),
            Err(Unseal::Damaged)
        );
        let without_old = SecretKeys {
            encryption: rotated.encryption,
            ..SecretKeys::default()
        };
        assert!(matches!(
            unseal(&without_old, &object("db"), &blob),
            Err(Unseal::NoKey(_))
        ));
    }
}
