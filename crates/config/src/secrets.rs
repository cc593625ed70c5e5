//! `[secrets]`: where the keys for Secret values at rest come from. Keys never live in a
//! database that a configured key replaces; the CLI commands that open the database read the
//! same settings as `driftd serve`.

use serde::Deserialize;
use std::path::PathBuf;

/// See the module documentation.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SecretsConfig {
    /// Seals committed Secret values, so remediation can restore them; without it only their
    /// keyed hashes are stored.
    pub encryption_key_file: Option<PathBuf>,
    /// Earlier encryption keys: values sealed under them still open until `driftd store
    /// rekey` reseals them. The environment gives them comma-separated.
    #[serde(deserialize_with = "paths")]
    pub previous_encryption_key_files: Vec<PathBuf>,
    /// Keys the hashes of Secret values, so the database alone cannot test guesses against
    /// them; unset (and no `hash_key_secret`), a random key kept in the database does.
    pub hash_key_file: Option<PathBuf>,
    /// The name of a Secret in driftd's `namespace` holding the hash key (data key
    /// `hash.key`): `driftd serve` creates it (32 random bytes) at its first start if absent
    /// and reads it thereafter, so every replica and shard of an installation shares one key
    /// that no database holds; the CLI reads it. Excludes `hash_key_file`.
    pub hash_key_secret: Option<String>,
}

impl SecretsConfig {
    /// Reads the key files; errors name the file, never its content. The key of
    /// `hash_key_secret` is not a file: `driftd_daemon::hash_key` reads it from the cluster.
    pub fn load_keys(&self) -> Result<driftd_store::SecretKeys, driftd_store::StoreError> {
        driftd_store::SecretKeys::from_files(
            self.hash_key_file.as_deref(),
            self.encryption_key_file.as_deref(),
            &self.previous_encryption_key_files,
        )
    }

    /// `(key, reason)` of the first invalid value.
    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        let Some(name) = &self.hash_key_secret else {
            return Ok(());
        };
        if self.hash_key_file.is_some() {
            return Err((
                "secrets.hash_key_secret",
                "set either hash_key_secret or hash_key_file, not both: they would be two \
                 different hash keys"
                    .into(),
            ));
        }
        // A Secret's name is a DNS-1123 subdomain (kube-apiserver's ValidateSecretName).
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if name.len() > 253 || !name.split('.').all(label_ok) {
            return Err((
                "secrets.hash_key_secret",
                format!(
                    "{name:?} is not a Secret name (lowercase letters, digits, '-' and '.', \
                     at most 253)"
                ),
            ));
        }
        Ok(())
    }
}

/// A list of paths, or one string of comma-separated paths (as an environment variable).
fn paths<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Paths {
        List(Vec<PathBuf>),
        Joined(String),
    }
    Ok(match Paths::deserialize(d)? {
        Paths::List(list) => list,
        Paths::Joined(text) => text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use crate::Config;

    fn load(text: &str, env: &[(&str, &str)]) -> Result<Config, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driftd.toml");
        std::fs::write(&path, text).unwrap();
        Config::load_with_env(Some(&path), |k| {
            env.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
        .map_err(|e| e.to_string())
    }

    #[test]
    fn the_hash_key_secret_is_named_in_the_file_or_the_environment() {
        let c = load("[secrets]\nhash_key_secret = \"driftd-hash-key\"\n", &[]).unwrap();
        assert_eq!(
            c.secrets.hash_key_secret.as_deref(),
            Some("driftd-hash-key")
        );
        let c = load("", &[("DRIFTD_SECRETS_HASH_KEY_SECRET", "keys.driftd")]).unwrap();
        assert_eq!(c.secrets.hash_key_secret.as_deref(), Some("keys.driftd"));
        assert_eq!(load("", &[]).unwrap().secrets.hash_key_secret, None);
    }

    #[test]
    fn the_hash_key_secret_must_be_a_secret_name_and_the_only_hash_key() {
        for bad in ["Driftd", "-a", "a..b", "a_b", ""] {
            let err = load(&format!("[secrets]\nhash_key_secret = \"{bad}\"\n"), &[]).unwrap_err();
            assert!(
                err.contains("secrets.hash_key_secret") && err.contains("not a Secret name"),
                "{bad}: {err}"
            );
        }
        let err = load(
            "[secrets]\nhash_key_secret = \"k\"\nhash_key_file = \"/keys/hash\"\n",
            &[],
        )
        .unwrap_err();
        assert!(err.contains("not both"), "{err}");
    }
}
