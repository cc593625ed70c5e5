//! Writes the engine's automatic releases of the cluster log's intents (see
//! `drift::ClusterRelease`): the engine asks, this task writes the end at the intent's
//! `resourceVersion` (so a commit or a renewal that came first wins), and answers. The
//! replicas, the asking one included, then import the release like any other end.

use super::writer::{ClusterLog, LogError};
use driftd_engine::{ClusterRelease, ClusterReleased, ReleaseOutcome};
use tokio::sync::mpsc;

/// Serves `requests` until the engine drops its end.
pub fn spawn(
    log: ClusterLog,
    mut requests: mpsc::UnboundedReceiver<ClusterRelease>,
    answers: mpsc::UnboundedSender<ClusterReleased>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(request) = requests.recv().await {
            let outcome = match log
                .auto_release(request.id, &request.actor, &request.reason)
                .await
            {
                Ok(_) => ReleaseOutcome::Released,
                Err(err @ (LogError::WrongState { .. } | LogError::NoIntent(_))) => {
                    ReleaseOutcome::NotPending(err.to_string())
                }
                Err(err) => ReleaseOutcome::Failed(err.to_string()),
            };
            let answer = ClusterReleased {
                id: request.id,
                outcome,
            };
            if answers.send(answer).is_err() {
                return;
            }
        }
    })
}
