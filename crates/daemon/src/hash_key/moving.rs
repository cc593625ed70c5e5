//! Moving a database that still keeps its own installation key to the configured hash key
//! (`driftd_store::Store::move_hash_key`): the live Secrets its hash-only values may be
//! recovered from are read here, by name, and handed to the store, which takes a value only
//! where it hashes to the committed one. `driftd serve` does it at start, before anything
//! compares; `driftd store rekey` on demand.

use super::HashKeyError;
use driftd_k8s::ObjectKey;
use driftd_store::{KeyMoveReport, Store};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use serde_json::Value;
use std::collections::BTreeMap;

/// Live Secrets read at once while moving: enough to be quick, few enough for any API server.
const CONCURRENT_READS: usize = 8;

/// Moves `store` to its configured hash key if it still keeps its own, reading from the
/// cluster the Secrets whose values only live objects can give back. `None` when there was
/// nothing to move.
pub async fn move_database(
    store: &mut Store,
    client: &kube::Client,
) -> Result<Option<KeyMoveReport>, HashKeyError> {
    let Some(pending) = store.pending_key_move()? else {
        return Ok(None);
    };
    let live = live_secrets(client, &pending.live_needed).await?;
    Ok(Some(store.move_hash_key(&live)?))
}

/// The live Secrets of `keys` that exist, as JSON (what the API returns). One that is gone is
/// left out; so is one driftd may not read (RBAC narrowed: it cannot watch it either), said in
/// the log: their values become unrecoverable. Any other failure (the API server unreachable,
/// a timeout) stops the move, since it would lose values a later try recovers.
async fn live_secrets(
    client: &kube::Client,
    keys: &[ObjectKey],
) -> Result<BTreeMap<ObjectKey, Value>, HashKeyError> {
    let read = futures::stream::iter(keys.iter().cloned())
        .map(|key| async move {
            let namespace = key.namespace.clone().unwrap_or_default();
            let api: Api<Secret> = Api::namespaced(client.clone(), &namespace);
            match api.get_opt(&key.name).await {
                Ok(Some(secret)) => Ok(serde_json::to_value(secret).ok().map(|v| (key, v))),
                Ok(None) => Ok(None),
                Err(kube::Error::Api(s)) if s.code == 403 => {
                    tracing::warn!(
                        secret = %key,
                        "may not read {key} to recover its committed values while moving the \
                         hash key out of the database: {}",
                        s.message
                    );
                    Ok(None)
                }
                Err(e) => Err(HashKeyError::LiveRead {
                    secret: key.to_string(),
                    message: e.to_string(),
                }),
            }
        })
        .buffer_unordered(CONCURRENT_READS)
        .collect::<Vec<_>>()
        .await;
    let mut live = BTreeMap::new();
    for found in read {
        live.extend(found?);
    }
    Ok(live)
}

/// Says in the log what a move did: counts, the Secrets whose values could not be recovered
/// (names only), and what to do about them.
pub fn log_move(report: &KeyMoveReport, key_id: &str) {
    tracing::info!(
        from_sealed = report.from_sealed,
        from_live = report.from_live,
        unrecoverable = report.unrecoverable.len(),
        key_removed = report.key_removed,
        "moved the database to hash key {key_id}: {} stored Secrets rehashed from their sealed \
         values, {} from the live Secrets, which hold the committed values; the database keeps \
         no hash key",
        report.from_sealed,
        report.from_live
    );
    if !report.unrecoverable.is_empty() {
        const SHOWN: usize = 20;
        let mut named = report.unrecoverable[..report.unrecoverable.len().min(SHOWN)].join(", ");
        if report.unrecoverable.len() > SHOWN {
            named.push_str(&format!(" and {} more", report.unrecoverable.len() - SHOWN));
        }
        tracing::warn!(
            "{} stored Secrets had values that neither a sealed copy nor the live Secret held \
             (they differed, or the Secret was gone): they read as changed until their \
             manifests are committed again: {named}",
            report.unrecoverable.len()
        );
    }
}
