//! The `continue` token of a paged `/drift`: opaque to clients, as Kubernetes' is (base64 of
//! JSON, `staging/src/k8s.io/apiserver/pkg/storage/continue.go`). It names the snapshot the
//! list is read from, where the next page starts in it, and the last key answered, so that a
//! replica which does not hold the snapshot can still continue after that key; and a digest of
//! the filters, as a token says nothing about another list.
//!
//! What a token carries is object identities (source, kind, namespace, name, apiVersion),
//! never anything of an object's content: no Secret value can be in one.

use base64::Engine as _;
use driftd_core::report::{DriftEntry, DriftFilter};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where an entry stands in every list `/drift` answers: source, kind, namespace, name, then
/// apiVersion. The last makes the order total (two kinds of one name in different groups), as
/// resuming after a key needs; Kubernetes resumes after an etcd key, which is unique.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(crate) struct ListKey(String, String, Option<String>, String, String);

/// Borrowed form of [`ListKey`], for sorting without copying.
pub(crate) type ListOrder<'a> = (&'a str, &'a str, Option<&'a str>, &'a str, &'a str);

pub(crate) fn order(e: &DriftEntry) -> ListOrder<'_> {
    (
        &e.source,
        &e.kind,
        e.namespace.as_deref(),
        &e.name,
        &e.api_version,
    )
}

impl ListKey {
    pub(crate) fn of(e: &DriftEntry) -> ListKey {
        ListKey(
            e.source.clone(),
            e.kind.clone(),
            e.namespace.clone(),
            e.name.clone(),
            e.api_version.clone(),
        )
    }

    pub(crate) fn as_order(&self) -> ListOrder<'_> {
        (&self.0, &self.1, self.2.as_deref(), &self.3, &self.4)
    }
}

/// The current token format; a token of another is malformed.
const VERSION: u8 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Token {
    #[serde(rename = "v")]
    pub version: u8,
    /// The process that took the snapshot (random per process), so a token of another replica
    /// or of a restarted one is not mistaken for a snapshot of this one with the same number.
    #[serde(rename = "i")]
    pub instance: String,
    /// The snapshot; absent in the token an expired one is answered with: continue after
    /// `last` in the current state (Kubernetes' `resourceVersion: -1` token).
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<u64>,
    /// Index in the snapshot of the next page's first entry.
    #[serde(rename = "p", default)]
    pub position: usize,
    /// The last entry answered.
    #[serde(rename = "k")]
    pub last: ListKey,
    /// [`filter_digest`] of the filters of the first page.
    #[serde(rename = "f")]
    pub filter: String,
}

impl Token {
    pub(crate) fn new(
        instance: &str,
        snapshot: Option<u64>,
        position: usize,
        last: ListKey,
        filter: String,
    ) -> Token {
        Token {
            version: VERSION,
            instance: instance.to_string(),
            snapshot,
            position,
            last,
            filter,
        }
    }

    pub(crate) fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("a token serializes");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    /// The token of `text`, or why it is none (never echoing the text back).
    pub(crate) fn decode(text: &str) -> Result<Token, &'static str> {
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text.trim_end_matches('='))
            .map_err(|_| "not base64url")?;
        let token: Token = serde_json::from_slice(&json).map_err(|_| "not a driftd token")?;
        if token.version != VERSION {
            return Err("a token of another driftd version");
        }
        Ok(token)
    }
}

/// A short digest of the filters: equal filters, equal digests, whatever their order in the
/// query string.
pub(crate) fn filter_digest(filter: &DriftFilter) -> String {
    let mut hash = Sha256::new();
    for (key, value) in filter.to_pairs() {
        hash.update(key.as_bytes());
        hash.update([0]);
        hash.update(value.as_bytes());
        hash.update([0]);
    }
    hex::encode(&hash.finalize()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftd_core::report::DriftClass;

    #[test]
    fn a_token_round_trips_and_garbage_is_refused() {
        let key = ListKey(
            "shop".into(),
            "ConfigMap".into(),
            Some("web".into()),
            "a".into(),
            "v1".into(),
        );
        let token = Token::new("ab12", Some(7), 500, key, "0011".into());
        let text = token.encode();
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "safe in a query string unescaped: {text}"
        );
        assert_eq!(Token::decode(&text), Ok(token));
        assert_eq!(Token::decode("!!"), Err("not base64url"));
        assert_eq!(Token::decode("e30"), Err("not a driftd token")); // `{}`
    }

    #[test]
    fn the_digest_tells_filters_apart() {
        let a = DriftFilter {
            namespace: Some("shop".into()),
            ..DriftFilter::default()
        };
        let b = DriftFilter {
            class: Some(DriftClass::Missing),
            ..a.clone()
        };
        assert_eq!(filter_digest(&a), filter_digest(&a.clone()));
        assert_ne!(filter_digest(&a), filter_digest(&b));
        assert_ne!(filter_digest(&a), filter_digest(&DriftFilter::default()));
    }
}
