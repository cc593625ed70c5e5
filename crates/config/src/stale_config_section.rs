//! `[stale_config]`: pods running on Secrets/ConfigMaps older than the live ones.

use serde::Deserialize;
use std::time::Duration;

/// `[stale_config]`: report running pods of Deployments, StatefulSets and DaemonSets that
/// started before the current content of a Secret or ConfigMap they read (class
/// `stale_config`). Needs `list`/`watch` on Pods, ReplicaSets, Secrets and ConfigMaps.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StaleConfigConfig {
    pub enabled: bool,
    /// The kubelet's sync period (`syncFrequency`, 1 m) plus its cache TTL: after this long
    /// a whole-volume mount shows a config's new content, so its pods are no longer stale.
    pub kubelet_sync_seconds: f64,
}

impl Default for StaleConfigConfig {
    fn default() -> Self {
        StaleConfigConfig {
            enabled: true,
            kubelet_sync_seconds: 90.0,
        }
    }
}

impl StaleConfigConfig {
    pub fn kubelet_sync(&self) -> Duration {
        Duration::from_secs_f64(self.kubelet_sync_seconds)
    }

    /// Why the section is invalid: (key, reason).
    pub(super) fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if !(0.0..=86_400.0).contains(&self.kubelet_sync_seconds) {
            return Err((
                "stale_config.kubelet_sync_seconds",
                "must be between 0 and 86400",
            ));
        }
        Ok(())
    }
}
