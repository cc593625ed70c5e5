//! How the cluster log's records look as Kubernetes objects: the one place that knows their
//! names, types, labels, annotations and payload encoding, for the writer (`driftd
//! commit|intent|run --cluster`) and the importer (`driftd serve`) alike.
//!
//! Modelled on Helm 3's release storage (`pkg/storage/driver/secrets.go`, `util.go`): a
//! Secret of a driftd type (`driftd.io/revision.v1`, like `helm.sh/release.v1`) whose data
//! key `record` holds the payload as JSON, gzipped, base64-encoded; listed by a label
//! (`app.kubernetes.io/managed-by=driftd`, like Helm's `owner=helm`). Unlike Helm, a payload
//! larger than one Secret may hold is split: the record's own object holds the first part,
//! objects `<name>-1`, `<name>-2`, ... the rest, written *before* the record itself, so a
//! reader that sees the record finds every part (checked with the payload's SHA-256).
//!
//! | object | name | type |
//! | --- | --- | --- |
//! | the sequence (next number of the log) | `driftd-sequence` | `driftd.io/sequence.v1` |
//! | a source's head (its lock) | `driftd-source-<source>` | `driftd.io/source.v1` |
//! | a revision | `driftd.revision.<N>` | `driftd.io/revision.v1` |
//! | an intent | `driftd.intent.<N>` | `driftd.io/intent.v1` |
//! | a further part of a record | `<record name>-<i>` | `driftd.io/chunk.v1` |
//!
//! A revision's payload is immutable. An intent's payload is too (what it wanted); its state
//! lives in its labels and annotations, which every transition updates at the
//! `resourceVersion` read.

use base64::Engine as _;
use driftd_k8s::ObjectKey;
use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The label every object of the log carries; the importer watches this selector.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
pub const SELECTOR: &str = "app.kubernetes.io/managed-by=driftd";

pub const TYPE_SEQUENCE: &str = "driftd.io/sequence.v1";
pub const TYPE_SOURCE: &str = "driftd.io/source.v1";
pub const TYPE_REVISION: &str = "driftd.io/revision.v1";
pub const TYPE_INTENT: &str = "driftd.io/intent.v1";
pub const TYPE_CHUNK: &str = "driftd.io/chunk.v1";

pub const SEQUENCE_NAME: &str = "driftd-sequence";

/// Labels (values always valid label values: see [`label_value`]).
pub const LABEL_SOURCE: &str = "driftd.io/source";
pub const LABEL_STATE: &str = "driftd.io/state";
pub const LABEL_HOLDER: &str = "driftd.io/holder";
pub const LABEL_ID: &str = "driftd.io/id";
pub const LABEL_CHUNK: &str = "driftd.io/chunk";
pub const LABEL_CHUNK_OF: &str = "driftd.io/chunk-of";

/// Annotations: full values where labels cannot hold them, and an intent's changing state.
pub const ANN_SOURCE: &str = "driftd.io/source";
pub const ANN_HOLDER: &str = "driftd.io/holder";
pub const ANN_NEXT: &str = "driftd.io/next";
pub const ANN_LOCK: &str = "driftd.io/lock";
pub const ANN_CHUNKS: &str = "driftd.io/chunks";
pub const ANN_SHA256: &str = "driftd.io/payload-sha256";
pub const ANN_TTL: &str = "driftd.io/ttl-seconds";
pub const ANN_EXPIRES: &str = "driftd.io/expires-at";
pub const ANN_ENDED_SEQ: &str = "driftd.io/ended-sequence";
pub const ANN_ENDED_AT: &str = "driftd.io/ended-at";
pub const ANN_ENDED_BY: &str = "driftd.io/ended-by";
pub const ANN_END_REASON: &str = "driftd.io/end-reason";
pub const ANN_REVISION: &str = "driftd.io/revision";
/// On an intent released by a daemon (`locks.auto_release_after`) rather than a person:
/// `auto-release`, so every replica's history tells the two apart.
pub const ANN_END_ACTION: &str = "driftd.io/end-action";
pub const AUTO_RELEASE: &str = "auto-release";
/// On an intent that lost the race for its source's lock: it never held it.
pub const ANN_LOCK_REFUSED: &str = "driftd.io/lock-refused";

/// The data key of the payload (Helm's is `release`).
pub const DATA_KEY: &str = "record";

/// Largest part of a payload in one object. A Secret's data may total 1 MiB
/// (`MaxSecretSize` in kube-apiserver's validation); the rest is room for the key, and the
/// request (data base64-encoded once more on the wire) stays under etcd's 1.5 MiB.
pub const MAX_PART: usize = 900 * 1024;

/// A payload or object that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("{name}: {reason}")]
    Invalid { name: String, reason: String },
}

fn invalid(name: &str, reason: impl std::fmt::Display) -> FormatError {
    FormatError::Invalid {
        name: name.to_string(),
        reason: reason.to_string(),
    }
}

/// One desired object as a record carries it: with its key (so the importer does not infer
/// scopes again) and where it was read from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordObject {
    pub key: ObjectKey,
    pub api_version: String,
    pub file: String,
    pub document: usize,
    pub object: Value,
}

/// A committed revision (`driftd commit --cluster`, or `intent commit` of `intent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionRecord {
    pub id: i64,
    pub source: String,
    pub author: String,
    pub message: String,
    pub committed_at: Timestamp,
    /// Who committed it (differs from the author when an intent is committed by someone).
    pub committed_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<i64>,
    pub objects: Vec<RecordObject>,
}

/// What an intent wanted when it began; its state is on the object ([`IntentStatus`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IntentRecord {
    pub id: i64,
    pub source: String,
    pub holder: String,
    pub author: String,
    pub message: String,
    pub created_at: Timestamp,
    pub objects: Vec<RecordObject>,
}

/// JSON, gzipped, base64: Helm's `encodeRelease`.
pub fn encode(payload: &impl Serialize) -> String {
    let json = serde_json::to_vec(payload).expect("records serialize");
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(&json).expect("writing to memory");
    let zipped = gz.finish().expect("writing to memory");
    base64::engine::general_purpose::STANDARD.encode(zipped)
}

/// The inverse of [`encode`]; `name` is the object, for messages (which never quote data).
pub fn decode<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> Result<T, FormatError> {
    let zipped = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| invalid(name, format!("payload is not base64: {e}")))?;
    let mut json = Vec::new();
    GzDecoder::new(&zipped[..])
        .read_to_end(&mut json)
        .map_err(|e| invalid(name, format!("payload is not gzip: {e}")))?;
    serde_json::from_slice(&json).map_err(|e| {
        // serde's message names a field and position, never the data.
        invalid(name, format!("payload is not a driftd record: {e}"))
    })
}

/// `encoded` in parts of at most `max` bytes (base64 is ASCII: any byte is a boundary).
pub fn split(encoded: &str, max: usize) -> Vec<&str> {
    if encoded.is_empty() {
        return vec![""];
    }
    encoded
        .as_bytes()
        .chunks(max)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect()
}

fn digest(encoded: &str) -> String {
    hex::encode(Sha256::digest(encoded.as_bytes()))
}

/// A valid Kubernetes label value for `text`: itself when valid, else its characters
/// mapped into the allowed ones, cut, and suffixed with a hash of the whole (so distinct
/// holders stay distinct). The full text is in an annotation next to it.
pub fn label_value(text: &str) -> String {
    if is_label_value(text) {
        return text.to_string();
    }
    let mapped: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(50)
        .collect();
    let mapped = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let hash = &digest(text)[..12];
    if mapped.is_empty() {
        hash.to_string()
    } else {
        format!("{mapped}-{hash}")
    }
}

/// kube-apiserver's `IsValidLabelValue`: at most 63 characters, alphanumerics with `-`,
/// `_`, `.` inside.
pub fn is_label_value(text: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.is_empty()
        || (text.len() <= 63
            && alnum(text.chars().next())
            && alnum(text.chars().last())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
}

/// A source's name as part of an object name (a DNS subdomain: lowercase alphanumerics
/// and `-`): itself when it already is one, else mapped and suffixed with a hash.
pub fn name_part(source: &str) -> String {
    let mapped: String = source
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-') => c,
            _ => '-',
        })
        .collect();
    let trimmed = mapped.trim_matches('-');
    // `driftd-source-` plus this stays one DNS label (63 characters).
    if trimmed == source && source.len() <= 48 {
        return source.to_string();
    }
    let cut: String = trimmed.chars().take(39).collect();
    let cut = cut.trim_end_matches('-');
    let hash = &digest(source)[..8];
    if cut.is_empty() {
        hash.to_string()
    } else {
        format!("{cut}-{hash}")
    }
}

pub fn head_name(source: &str) -> String {
    format!("driftd-source-{}", name_part(source))
}

pub fn revision_name(id: i64) -> String {
    format!("driftd.revision.{id}")
}

pub fn intent_name(id: i64) -> String {
    format!("driftd.intent.{id}")
}

pub fn chunk_name(record: &str, index: usize) -> String {
    format!("{record}-{index}")
}

/// Labels of every object of the log, plus `extra`.
pub fn labels(extra: &[(&str, String)]) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = extra
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    labels.insert(MANAGED_BY.into(), "driftd".into());
    labels
}

/// A Secret of the log: `name`, `type_`, labels, annotations and (optionally) a payload part.
pub fn secret(
    name: &str,
    type_: &str,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    data: Option<&str>,
) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels),
            annotations: (!annotations.is_empty()).then_some(annotations),
            ..ObjectMeta::default()
        },
        type_: Some(type_.to_string()),
        data: data
            .map(|d| BTreeMap::from([(DATA_KEY.to_string(), ByteString(d.as_bytes().to_vec()))])),
        ..Secret::default()
    }
}

/// The objects that hold one record, in the order to create them: its further parts, then
/// the record itself (holding the first part, the number of parts and their digest).
pub fn record_secrets(
    name: &str,
    type_: &str,
    mut labels: BTreeMap<String, String>,
    mut annotations: BTreeMap<String, String>,
    encoded: &str,
    max_part: usize,
) -> Vec<Secret> {
    let parts = split(encoded, max_part);
    let mut out: Vec<Secret> = parts[1..]
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let mut chunk_labels = labels.clone();
            chunk_labels.insert(LABEL_CHUNK.into(), (i + 1).to_string());
            chunk_labels.insert(LABEL_CHUNK_OF.into(), name.to_string());
            chunk_labels.remove(LABEL_STATE);
            secret(
                &chunk_name(name, i + 1),
                TYPE_CHUNK,
                chunk_labels,
                BTreeMap::new(),
                Some(part),
            )
        })
        .collect();
    annotations.insert(ANN_CHUNKS.into(), (parts.len() - 1).to_string());
    annotations.insert(ANN_SHA256.into(), digest(encoded));
    labels.insert(LABEL_CHUNK.into(), "0".into());
    out.push(secret(name, type_, labels, annotations, Some(parts[0])));
    out
}

/// A Secret's payload part, as text.
pub fn data_of(secret: &Secret) -> Option<String> {
    let bytes = &secret.data.as_ref()?.get(DATA_KEY)?.0;
    String::from_utf8(bytes.clone()).ok()
}

pub fn name_of(secret: &Secret) -> &str {
    secret.metadata.name.as_deref().unwrap_or("")
}

pub fn annotation<'a>(secret: &'a Secret, key: &str) -> Option<&'a str> {
    secret
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

pub fn label<'a>(secret: &'a Secret, key: &str) -> Option<&'a str> {
    secret
        .metadata
        .labels
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// The whole encoded payload of `record`, its further parts found by `part` (by name);
/// `Ok(None)` while a part is missing, an error when the parts do not add up to the digest.
pub fn assemble<'a>(
    record: &Secret,
    part: impl Fn(&str) -> Option<&'a Secret>,
) -> Result<Option<String>, FormatError> {
    let name = name_of(record);
    let count: usize = annotation(record, ANN_CHUNKS)
        .unwrap_or("0")
        .parse()
        .map_err(|e| invalid(name, format!("{ANN_CHUNKS}: {e}")))?;
    let mut encoded = data_of(record).ok_or_else(|| invalid(name, "no payload"))?;
    for i in 1..=count {
        let Some(chunk) = part(&chunk_name(name, i)) else {
            return Ok(None);
        };
        encoded.push_str(&data_of(chunk).ok_or_else(|| invalid(name, "empty part"))?);
    }
    match annotation(record, ANN_SHA256) {
        Some(expected) if expected != digest(&encoded) => Err(invalid(
            name,
            format!("its {} parts do not match their digest", count + 1),
        )),
        _ => Ok(Some(encoded)),
    }
}

/// An intent's changing state, as its object's labels and annotations hold it.
#[derive(Debug, Clone, PartialEq)]
pub struct IntentStatus {
    /// `pending`, `committed`, `aborted`, `failed`, `interrupted` or `released`.
    pub state: String,
    pub ttl_seconds: i64,
    pub expires_at: Timestamp,
    pub ended: Option<Ended>,
    pub lock_refused: bool,
}

/// How an intent ended: the number the end took in the log, when, by whom, why.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub sequence: i64,
    pub at: Timestamp,
    pub by: String,
    pub reason: String,
    /// For `committed`: the revision.
    pub revision: Option<i64>,
    /// Released by a daemon on its own (`released` only).
    pub automatic: bool,
}

impl IntentStatus {
    /// Reads the state of an intent object.
    pub fn read(secret: &Secret) -> Result<IntentStatus, FormatError> {
        let name = name_of(secret);
        let get = |key: &str| {
            annotation(secret, key).ok_or_else(|| invalid(name, format!("no {key} annotation")))
        };
        let number = |key: &str| -> Result<i64, FormatError> {
            get(key)?
                .parse()
                .map_err(|e| invalid(name, format!("{key}: {e}")))
        };
        let time = |key: &str| -> Result<Timestamp, FormatError> {
            get(key)?
                .parse()
                .map_err(|e| invalid(name, format!("{key}: {e}")))
        };
        let state = label(secret, LABEL_STATE)
            .ok_or_else(|| invalid(name, format!("no {LABEL_STATE} label")))?
            .to_string();
        let ended = match state.as_str() {
            "pending" => None,
            _ => Some(Ended {
                sequence: number(ANN_ENDED_SEQ)?,
                at: time(ANN_ENDED_AT)?,
                by: get(ANN_ENDED_BY)?.to_string(),
                reason: annotation(secret, ANN_END_REASON).unwrap_or("").to_string(),
                revision: annotation(secret, ANN_REVISION).and_then(|r| r.parse().ok()),
                automatic: annotation(secret, ANN_END_ACTION) == Some(AUTO_RELEASE),
            }),
        };
        Ok(IntentStatus {
            ttl_seconds: number(ANN_TTL)?,
            expires_at: time(ANN_EXPIRES)?,
            lock_refused: annotation(secret, ANN_LOCK_REFUSED).is_some(),
            ended,
            state,
        })
    }

    /// Writes this state onto an intent object (labels and annotations it owns).
    pub fn write(&self, secret: &mut Secret) {
        let labels = secret.metadata.labels.get_or_insert_with(BTreeMap::new);
        labels.insert(LABEL_STATE.into(), self.state.clone());
        let ann = secret
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new);
        ann.insert(ANN_TTL.into(), self.ttl_seconds.to_string());
        ann.insert(ANN_EXPIRES.into(), self.expires_at.to_string());
        if self.lock_refused {
            ann.insert(ANN_LOCK_REFUSED.into(), "true".into());
        }
        if let Some(ended) = &self.ended {
            ann.insert(ANN_ENDED_SEQ.into(), ended.sequence.to_string());
            ann.insert(ANN_ENDED_AT.into(), ended.at.to_string());
            ann.insert(ANN_ENDED_BY.into(), ended.by.clone());
            ann.insert(ANN_END_REASON.into(), ended.reason.clone());
            if let Some(revision) = ended.revision {
                ann.insert(ANN_REVISION.into(), revision.to_string());
            }
            if ended.automatic {
                ann.insert(ANN_END_ACTION.into(), AUTO_RELEASE.into());
            }
        }
    }
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
