//! `[[sources]]` (per-source settings: comparison, remediation) and `[dry_run]` (the
//! server-side dry-run oracle): how a source's objects are compared.

use serde::Deserialize;
use std::time::Duration;

/// `[[sources]]`: settings of one source, by name. Sources without an entry use the
/// defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    pub name: String,
    /// How its objects are compared.
    #[serde(default)]
    pub compare: Compare,
    /// Whether the leader writes its committed state back when it drifts.
    #[serde(default)]
    pub remediation: super::Remediation,
}

/// What live objects are compared against.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Compare {
    /// The manifest plus the API server's modelled defaults, admission and CRD schemas.
    #[default]
    Static,
    /// The object the API server answers to a server-side apply dry run of the manifest
    /// (field manager `driftd`): covers mutating webhooks and admission plugins no static
    /// model knows, at the price of API requests. Secrets stay on the static model.
    DryRun,
}

/// `[dry_run]`: the server-side dry runs of `compare = "dry-run"` sources.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct DryRunConfig {
    /// Each object's dry run is made again this often, even when nothing changed: what a
    /// webhook answers may depend on things driftd cannot see.
    pub refresh_seconds: f64,
    /// Dry-run requests per second at most, over all objects (the API server's budget).
    pub max_per_second: f64,
}

impl Default for DryRunConfig {
    fn default() -> Self {
        DryRunConfig {
            refresh_seconds: 600.0,
            max_per_second: 5.0,
        }
    }
}

impl DryRunConfig {
    pub fn refresh(&self) -> Duration {
        Duration::from_secs_f64(self.refresh_seconds)
    }

    /// `(key, reason)` of the first invalid value.
    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.refresh_seconds >= 1.0 && self.refresh_seconds <= 86400.0) {
            return Err((
                "dry_run.refresh_seconds",
                "must be between 1 and 86400".into(),
            ));
        }
        if !(self.max_per_second > 0.0 && self.max_per_second <= 1000.0) {
            return Err((
                "dry_run.max_per_second",
                "must be above 0 and at most 1000".into(),
            ));
        }
        Ok(())
    }
}

/// `(key, reason)` if two `[[sources]]` entries name one source, or one names none.
pub(super) fn check_sources(sources: &[SourceConfig]) -> Result<(), (String, String)> {
    let mut seen = std::collections::BTreeSet::new();
    for (i, s) in sources.iter().enumerate() {
        if s.name.is_empty() {
            return Err((format!("sources[{i}].name"), "must not be empty".into()));
        }
        if !seen.insert(&s.name) {
            return Err((
                format!("sources[{i}].name"),
                format!("source `{}` is configured twice", s.name),
            ));
        }
    }
    Ok(())
}
