//! `[remediation]` and the per-source `remediation` setting: whether and how fast the daemon
//! writes a drifting source's committed state back (see `driftd_cluster::remediate`).

use serde::Deserialize;
use std::time::Duration;

/// A source's remediation, in `[[sources]]`.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Remediation {
    /// Report drift only (the default): driftd never writes the source's objects.
    #[default]
    Off,
    /// The leader re-applies the source's `modified` and `missing` objects (server-side
    /// apply, field manager `driftd`, in plan order), rate-limited by `[remediation]`.
    Auto,
}

/// `[remediation]`: how the daemon remediates `remediation = "auto"` sources.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RemediationConfig {
    /// Remediations per minute at most, over all sources (the API server's and the
    /// on-call's budget: a fight with another controller stays slow).
    pub max_per_minute: f64,
    /// An object is remediated again at the earliest this long after the last attempt
    /// (success or failure), so the engine sees the result before anything is retried.
    pub retry_seconds: f64,
    /// How long to wait for an object's dependencies to be current before applying it.
    pub timeout_seconds: f64,
    /// Take over fields another field manager owns. A hand edit makes its author the
    /// owner of the edited fields, so without this a `modified` object is only reported
    /// (a `RemediationFailed` Event naming the fields and managers) and only `missing`
    /// objects are restored.
    pub force_conflicts: bool,
}

impl Default for RemediationConfig {
    fn default() -> Self {
        RemediationConfig {
            max_per_minute: 30.0,
            retry_seconds: 60.0,
            timeout_seconds: 120.0,
            force_conflicts: true,
        }
    }
}

impl RemediationConfig {
    pub fn retry(&self) -> Duration {
        Duration::from_secs_f64(self.retry_seconds)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_seconds)
    }

    /// `(key, reason)` of the first invalid value.
    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        if !(self.max_per_minute > 0.0 && self.max_per_minute <= 6000.0) {
            return Err((
                "remediation.max_per_minute",
                "must be above 0 and at most 6000".into(),
            ));
        }
        if !(self.retry_seconds >= 1.0 && self.retry_seconds <= 86400.0) {
            return Err((
                "remediation.retry_seconds",
                "must be between 1 and 86400".into(),
            ));
        }
        if !(self.timeout_seconds >= 1.0 && self.timeout_seconds <= 3600.0) {
            return Err((
                "remediation.timeout_seconds",
                "must be between 1 and 3600".into(),
            ));
        }
        Ok(())
    }
}
