//! Retention of the drift history: closed drift episodes older than `[history]
//! retention_days` are deleted once an hour (and at start), a batch at a time through a
//! connection of their own, so no write holds the database long enough to delay the
//! engine's episode writes behind it.

use driftd_store::{Store, StoreError};
use jiff::{SignedDuration, Timestamp};
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Episodes deleted per statement: each is a short write transaction.
pub const BATCH: usize = 500;

/// How often old episodes are looked for.
pub const PERIOD: Duration = Duration::from_secs(3600);

/// Deletes every episode closed before `before`, [`BATCH`] at a time, yielding between
/// batches; returns how many.
pub async fn prune(store: &mut Store, before: Timestamp) -> Result<usize, StoreError> {
    let mut total = 0;
    loop {
        let deleted = store.prune_episodes(before, BATCH)?;
        total += deleted;
        if deleted < BATCH {
            return Ok(total);
        }
        tokio::task::yield_now().await;
    }
}

/// Runs retention until `stop` turns true.
pub fn spawn(
    mut store: Store,
    retention: Duration,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let keep = SignedDuration::try_from(retention).unwrap_or(SignedDuration::MAX);
        loop {
            let before = Timestamp::now().checked_sub(keep).unwrap_or(Timestamp::MIN);
            match prune(&mut store, before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    deleted = n,
                    before = %before,
                    "drift history: deleted episodes past the retention"
                ),
                Err(err) => {
                    tracing::warn!(error = %err, "drift history: cannot delete old episodes")
                }
            }
            tokio::select! {
                _ = stop.wait_for(|s| *s) => return,
                _ = tokio::time::sleep(PERIOD) => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftd_k8s::ObjectKey;
    use driftd_store::{Ending, EpisodeEnd, EpisodeWrite, HistoryQuery};

    #[tokio::test]
    async fn every_episode_past_the_retention_goes_in_batches_and_open_ones_stay() {
        let mut store = Store::open_in_memory().unwrap();
        let t = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
        let n = BATCH * 2 + 7;
        let keys: Vec<ObjectKey> = (0..n + 1)
            .map(|i| ObjectKey {
                group: String::new(),
                kind: "ConfigMap".into(),
                namespace: Some("shop".into()),
                name: format!("c{i}"),
            })
            .collect();
        let drifting: Vec<EpisodeWrite> = keys
            .iter()
            .map(|key| EpisodeWrite::Drifting {
                key,
                source: "shop",
                class: "modified",
                at: t(0),
                paths: &[],
                who: &[],
                replaced: EpisodeEnd::ClassChanged,
            })
            .collect();
        store.write_episodes(&drifting).unwrap();
        // All but the last close at 100; the last stays open.
        let resolved: Vec<EpisodeWrite> = keys[..n]
            .iter()
            .map(|key| EpisodeWrite::Resolved {
                key,
                at: t(100),
                ending: Ending::new(EpisodeEnd::Reverted),
            })
            .collect();
        store.write_episodes(&resolved).unwrap();
        assert_eq!(
            prune(&mut store, t(100)).await.unwrap(),
            0,
            "not before 100"
        );
        assert_eq!(prune(&mut store, t(101)).await.unwrap(), n);
        let left = store
            .episode_history(&HistoryQuery {
                limit: 10,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].object.name, format!("c{n}"));
    }
}
