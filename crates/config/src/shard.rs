//! `[shard]`: one of several `driftd serve` instances that split the sources between them
//! (docs/scaling.md). Each shard has its own database and Lease; Prometheus aggregates.

use driftd_store::SourceScope;
use serde::Deserialize;

/// See the module documentation. The defaults (no name, no patterns) are one unsharded
/// instance owning every source.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ShardConfig {
    /// Names the shard in logs, `/drift`, `driftd_shard_info` and its default Lease
    /// (`driftd-<name>`), so two shards never contend for one leadership.
    pub name: String,
    /// Source-name patterns this shard owns (`*` matches anything, `/` and `:` included),
    /// e.g. `["team-a/*", "helm:team-a/*"]`. Empty: every source.
    pub sources: Vec<String>,
}

impl ShardConfig {
    /// The sources this instance imports, loads and judges.
    pub fn scope(&self) -> SourceScope {
        SourceScope::new(&self.sources).expect("shard.sources was validated at load")
    }

    /// `(key, reason)` of the first invalid value.
    pub(super) fn check(&self) -> Result<(), (String, String)> {
        // `driftd-<name>` must stay a valid Lease name (a DNS-1123 subdomain; a label here).
        let label_ok = |s: &str| {
            s.len() <= 56
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !s.starts_with('-')
                && !s.ends_with('-')
        };
        if !self.name.is_empty() && !label_ok(&self.name) {
            return Err((
                "shard.name".into(),
                format!(
                    "{:?} is not a shard name (1 to 56 lowercase letters, digits and '-', not \
                     starting or ending with '-')",
                    self.name
                ),
            ));
        }
        if !self.sources.is_empty() && self.name.is_empty() {
            return Err((
                "shard.name".into(),
                "must be set when shard.sources is: it names the shard's Lease and metrics".into(),
            ));
        }
        SourceScope::new(&self.sources)
            .map(|_| ())
            .map_err(|(i, reason)| (format!("shard.sources[{i}]"), reason))
    }
}
