//! `[history]`: how long the drift history (closed drift episodes, `GET /history`,
//! `driftd history --drift`) is kept in the database.

use serde::Deserialize;
use std::time::Duration;

/// The longest retention accepted: 100 years, past which "keep forever" (0) is meant.
const MAX_RETENTION_DAYS: u64 = 36_500;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// Closed drift episodes older than this many days (by when they closed) are deleted by
    /// `driftd serve`; open ones are always kept. 0: kept forever.
    pub retention_days: u64,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        HistoryConfig { retention_days: 90 }
    }
}

impl HistoryConfig {
    /// How long closed episodes are kept; `None`: forever.
    pub fn retention(&self) -> Option<Duration> {
        (self.retention_days > 0).then(|| Duration::from_secs(self.retention_days * 86_400))
    }

    /// `(key, reason)` of the first invalid value.
    pub(super) fn check(&self) -> Result<(), (&'static str, String)> {
        if self.retention_days > MAX_RETENTION_DAYS {
            return Err((
                "history.retention_days",
                format!(
                    "must be at most {MAX_RETENTION_DAYS} (use 0 to keep the history forever), \
                     not {}",
                    self.retention_days
                ),
            ));
        }
        Ok(())
    }
}
