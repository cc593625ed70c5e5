//! `basic_auth_users`: HTTP basic authentication against bcrypt hashes, as exporter-toolkit
//! does it (`web/handler.go`): an unknown user costs a bcrypt comparison too (against a
//! hash of nothing), so timing does not tell which users exist; bcrypt runs one at a time,
//! off the async threads; a verified (user, hash, password) is remembered, so a scrape every
//! 15 s does not cost a bcrypt each.
//!
//! What is remembered is an HMAC of the password under a key made at start, one per
//! configured user (so the memory is bounded by the config), compared in constant time;
//! wrong passwords are never remembered and always cost a bcrypt comparison.

use axum::http::{header, HeaderMap};
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use subtle::ConstantTimeEq;

/// The longest password bcrypt reads (Go's `bcrypt.ErrPasswordTooLong` above it).
const MAX_PASSWORD: usize = 72;

/// The configured users and what was verified.
pub struct BasicAuth {
    users: BTreeMap<String, String>,
    /// A hash of no password, for unknown users.
    decoy: String,
    key: [u8; 32],
    verified: Mutex<HashMap<String, [u8; 32]>>,
    /// bcrypt is CPU-bound by design: one comparison at a time.
    bcrypt: tokio::sync::Mutex<()>,
}

impl BasicAuth {
    /// `None` when no users are configured (no authentication, as in exporter-toolkit).
    pub fn new(users: BTreeMap<String, String>) -> Option<BasicAuth> {
        let cost = users
            .values()
            .filter_map(|h| h.parse::<bcrypt::HashParts>().ok())
            .map(|p| p.get_cost())
            .min()?;
        let decoy = bcrypt::hash(rand::random::<[u8; 16]>(), cost).expect("valid bcrypt cost");
        Some(BasicAuth {
            users,
            decoy,
            key: rand::random(),
            verified: Mutex::new(HashMap::new()),
            bcrypt: tokio::sync::Mutex::new(()),
        })
    }

    /// Whether `headers` carry the credentials of a configured user.
    pub async fn allows(&self, headers: &HeaderMap) -> bool {
        let Some((user, password)) = credentials(headers) else {
            return false;
        };
        let (hash, known) = match self.users.get(&user) {
            Some(hash) => (hash.clone(), true),
            None => (self.decoy.clone(), false),
        };
        let digest = self.digest(&user, &hash, &password);
        if known {
            let verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
            if verified
                .get(&user)
                .is_some_and(|seen| bool::from(seen.ct_eq(&digest)))
            {
                return true;
            }
        }
        let matches = {
            let _one_at_a_time = self.bcrypt.lock().await;
            // Go's bcrypt refuses passwords over 72 bytes instead of cutting them.
            tokio::task::spawn_blocking(move || {
                password.len() <= MAX_PASSWORD && bcrypt::verify(&password, &hash).unwrap_or(false)
            })
            .await
            .unwrap_or(false)
        };
        if matches && known {
            self.verified
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(user, digest);
        }
        matches && known
    }

    fn digest(&self, user: &str, hash: &str, password: &[u8]) -> [u8; 32] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        for part in [user.as_bytes(), hash.as_bytes(), password] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.finalize().into_bytes().into()
    }
}

/// User and password of an `Authorization: Basic` header (Go's `Request.BasicAuth`).
fn credentials(headers: &HeaderMap) -> Option<(String, Vec<u8>)> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let (scheme, encoded) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    let user = String::from_utf8(decoded[..colon].to_vec()).ok()?;
    Some((user, decoded[colon + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user: &str, password: &str) -> HeaderMap {
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            format!("Basic {token}").parse().unwrap(),
        );
        headers
    }

    fn auth() -> BasicAuth {
        let users =
            BTreeMap::from([("prometheus".to_string(), bcrypt::hash("s3cret", 4).unwrap())]);
        BasicAuth::new(users).unwrap()
    }

    #[tokio::test]
    async fn only_the_configured_user_with_the_right_password_passes() {
        let auth = auth();
        assert!(auth.allows(&basic("prometheus", "s3cret")).await);
        // Remembered now, and still only for the right password.
        assert!(auth.allows(&basic("prometheus", "s3cret")).await);
        assert!(!auth.allows(&basic("prometheus", "s3cre")).await);
        assert!(!auth.allows(&basic("prometheus", "s3cret ")).await);
        assert!(!auth.allows(&basic("grafana", "s3cret")).await);
        assert!(!auth.allows(&HeaderMap::new()).await);
        let mut bearer = HeaderMap::new();
        bearer.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(!auth.allows(&bearer).await);
    }

    #[tokio::test]
    async fn passwords_longer_than_bcrypt_reads_are_refused_as_go_does() {
        let long = "x".repeat(80);
        let users = BTreeMap::from([("u".to_string(), bcrypt::hash(&long[..72], 4).unwrap())]);
        let auth = BasicAuth::new(users).unwrap();
        assert!(auth.allows(&basic("u", &long[..72])).await);
        assert!(!auth.allows(&basic("u", &long)).await);
    }

    #[test]
    fn no_users_means_no_authentication() {
        assert!(BasicAuth::new(BTreeMap::new()).is_none());
    }
}
