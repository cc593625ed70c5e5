//! Where watches start and what they read: a watch is a position in the history. It
//! starts at the current resourceVersion (after synthetic ADDED events for the objects
//! there are) or at the one the client asked for, then reads the changes after its
//! position in batches, waiting on a signal when it has read them all. A reader that falls
//! further behind than the history reaches gets 410 Expired, as a client resuming from a
//! compacted resourceVersion does.

use super::super::status::ApiError;
use super::history::{Change, Compacted};
use super::object::Stored;
use super::Store;
use driftd_k8s::kinds::ResourceType;
use std::sync::Arc;
use tokio::sync::watch as signal;

/// A watch ready to stream.
pub struct WatchStart {
    /// Objects to send first as ADDED (empty when resuming from a resourceVersion).
    pub initial: Vec<Arc<Stored>>,
    /// The position to read changes after.
    pub from: u64,
}

impl Store {
    /// Sets up a watch: `resource_version` "" or "0" starts with synthetic ADDED events for
    /// current objects; a number resumes after it (a compacted one fails on the first read).
    pub fn watch(
        &self,
        info: &ResourceType,
        namespace: Option<&str>,
        resource_version: Option<&str>,
    ) -> Result<WatchStart, ApiError> {
        let g = self.lock();
        match resource_version {
            None | Some("") | Some("0") => {
                let initial = g
                    .kind(info)
                    .map(|k| {
                        k.objects
                            .iter()
                            .filter(|((ns, _), _)| namespace.is_none_or(|want| want == ns))
                            .map(|(_, s)| s.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(WatchStart {
                    initial,
                    from: g.rv,
                })
            }
            Some(s) => {
                let rv: u64 = s.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid resource version: {s:?}"))
                })?;
                if rv < g.history.oldest() {
                    return Err(expired(rv, g.history.oldest()));
                }
                Ok(WatchStart {
                    initial: Vec::new(),
                    from: rv,
                })
            }
        }
    }

    /// Up to `max` changes after `rv` (all types), oldest first; 410 Expired when the
    /// history no longer reaches back to `rv`.
    pub fn changes_after(&self, rv: u64, max: usize) -> Result<Vec<Arc<Change>>, ApiError> {
        self.lock()
            .history
            .after(rv, max)
            .map_err(|Compacted { oldest }| expired(rv, oldest))
    }

    /// Signals every new resourceVersion; a reader marks what it has seen before reading
    /// the changes, then waits for `changed()`.
    pub fn changes_signal(&self) -> signal::Receiver<u64> {
        self.lock().changed.subscribe()
    }

    /// Signals [`Store::close_watches`].
    pub fn closes_signal(&self) -> signal::Receiver<u64> {
        self.closes.subscribe()
    }
}

/// kube-apiserver's answer to a request for a resourceVersion it has not reached
/// (`storage.NewTooLargeResourceVersionError`, `staging/src/k8s.io/apiserver/pkg/storage/
/// errors.go`): 504 Timeout, the cause `ResourceVersionTooLarge` (how client-go's reflector
/// recognizes it), retry after 1 s (`resourceVersionTooHighRetrySeconds`).
pub fn too_large(rv: u64, current: u64) -> ApiError {
    ApiError {
        details: Some(serde_json::json!({
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        })),
        ..ApiError::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {rv}, current: {current}"),
        )
    }
}

fn expired(rv: u64, oldest: u64) -> ApiError {
    ApiError::expired(format!("too old resource version: {rv} ({oldest})"))
}
