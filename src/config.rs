//! Daemon configuration: TOML file, then `DRIFTD_*` environment variables, then flags.

/// An invalid configuration; names the offending key.
#[derive(Debug, thiserror::Error)]
#[error("config {origin}: key `{key}`: {reason}")]
pub struct ConfigError {
    pub origin: String,
    pub key: String,
    pub reason: String,
}
