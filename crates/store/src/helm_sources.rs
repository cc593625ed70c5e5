//! Helm releases as sources (`helm:<namespace>/<name>`): the importer (`driftd serve`)
//! hands over where a release stands, and one transaction brings its source there. The
//! newest `deployed` version is the newest revision (same content, no new revision); a
//! version pending newer than that is a pending intent (the source's lock, expiring after
//! `helm.stale_after`), committed when that version is deployed, failed when the release
//! moved on without it; an uninstalled release's source gets an empty revision and leaves
//! the source list (its history stays).
//!
//! Rows written here take ids from [`HELM_ID_BASE`] up: the cluster log's numbers, which
//! every replica imports as ids, start at 1, and a Helm row must never take one of them.

use super::intents::{self, commit_in, finish_in, lock_of, record, IntentAction, IntentInfo};
use super::revisions::{
    check_owners, insert_objects, insert_revision, newest_revision, validate_objects, NewRevision,
    Sealing,
};
use super::secrets::record_hash_key;
use super::{ts_to_db, CommitOutcome, RevisionInfo, StoreError};
use driftd_core::helm::PendingLock;
use driftd_core::manifest::ManifestObject;
use jiff::{SignedDuration, Timestamp};
use rusqlite::{params, Connection, TransactionBehavior};
use std::time::Duration;

/// First id of revisions and intents written for Helm releases.
pub const HELM_ID_BASE: i64 = 1_000_000_000;

/// Who Helm rows are by, in history.
const ACTOR: &str = "helm";

/// One version of a release, as the source takes it.
pub struct HelmVersion<'a> {
    pub version: i64,
    /// `version 3, chart web 0.1.0` as history shows it.
    pub describe: &'a str,
    /// When it was deployed (`info.last_deployed`).
    pub at: Timestamp,
    pub objects: &'a [ManifestObject],
}

/// Where one release stands (see `driftd_core::helm::standing`).
pub struct HelmSync<'a> {
    pub source: &'a str,
    pub deployed: Option<HelmVersion<'a>>,
    /// The version in flight and its lock (`PendingLock::holder` is the intent's holder).
    pub pending: Option<(HelmVersion<'a>, PendingLock)>,
    /// Uninstalled: the source desires nothing any more.
    pub gone: bool,
    /// A pending version older than this is a stale lock (the intent's TTL).
    pub stale_after: Duration,
}

/// What a sync changed (for the log); all empty when the source already stood there.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HelmOutcome {
    pub revision: Option<RevisionInfo>,
    pub ended: Option<IntentInfo>,
    pub begun: Option<IntentInfo>,
    pub retired: bool,
}

/// The next id of `table` for an imported source's row (Helm release, Pulumi stack).
pub(super) fn next_id(tx: &Connection, table: &str) -> Result<i64, StoreError> {
    let max: Option<i64> =
        tx.query_row(&format!("SELECT MAX(id) FROM {table}"), [], |r| r.get(0))?;
    Ok(max.map_or(HELM_ID_BASE, |m| (m + 1).max(HELM_ID_BASE)))
}

fn ttl_seconds(stale_after: Duration) -> i64 {
    let ttl = stale_after.clamp(intents::MIN_TTL, intents::MAX_TTL);
    ttl.as_secs() as i64
}

pub(super) fn sync(
    conn: &mut Connection,
    req: &HelmSync,
    sealing: &Sealing,
    now: Timestamp,
) -> Result<HelmOutcome, StoreError> {
    let deployed = req
        .deployed
        .as_ref()
        .map(|d| validate_objects(req.source, d.objects, sealing))
        .transpose()?;
    let pending = req
        .pending
        .as_ref()
        .map(|(p, _)| validate_objects(req.source, p.objects, sealing))
        .transpose()?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    record_hash_key(&tx, &sealing.hash)?;
    let mut outcome = HelmOutcome::default();

    // 1. The open intent, if it no longer stands for the version in flight, ends: committed
    // when what it wanted is deployed now, else failed (Helm moved on without it).
    let open = lock_of(&tx, req.source, now)?;
    // The same version in the same status (its rollback target may read differently once
    // Helm pruned old versions: still the same deploy).
    let in_flight = req.pending.as_ref().map(|(_, l)| (l.version, l.status));
    let mut locked = false;
    if let Some(open) = open {
        let held = PendingLock::parse(req.source, &open.holder).map(|l| (l.version, l.status));
        if held.is_some() && held == in_flight {
            locked = true;
        } else {
            let landed = match (&req.deployed, &deployed) {
                (Some(d), Some((hash, _))) if *hash == open.content_hash => Some(d),
                _ => None,
            };
            outcome.ended = Some(match landed {
                Some(d) => {
                    let id = next_id(&tx, "revisions")?;
                    let (ended, committed) = commit_in(&tx, open.id, ACTOR, now, Some(id))?;
                    if let CommitOutcome::Created(revision) = committed {
                        // Said as any deployed version is, at the time Helm deployed it.
                        let message = format!("helm: {} deployed", d.describe);
                        tx.execute(
                            "UPDATE revisions SET message = ?2, committed_at = ?3 WHERE id = ?1",
                            params![revision.id, message, ts_to_db(d.at)],
                        )?;
                    }
                    ended
                }
                None if req.gone => finish_in(
                    &tx,
                    open.id,
                    IntentAction::Abort,
                    ACTOR,
                    "the Helm release was uninstalled",
                    now,
                )?,
                None => finish_in(
                    &tx,
                    open.id,
                    IntentAction::Fail,
                    ACTOR,
                    "the Helm release moved on without deploying this version",
                    now,
                )?,
            });
        }
    }

    // 2. The newest deployed version is the newest revision; an uninstall empties it.
    let newest = newest_revision(&tx, req.source)?;
    let wanted = match (&req.deployed, deployed) {
        (Some(d), Some(stored)) => Some((format!("helm: {} deployed", d.describe), d.at, stored)),
        _ if req.gone && newest.as_ref().is_some_and(|n| n.object_count > 0) => {
            let (hash, stored) = validate_objects::<ManifestObject>(req.source, &[], sealing)?;
            Some(("helm: release uninstalled".to_string(), now, (hash, stored)))
        }
        _ => None,
    };
    if let Some((message, at, (hash, objects))) = wanted {
        if newest.as_ref().map(|n| &n.content_hash) != Some(&hash) {
            check_owners(&tx, req.source, &objects)?;
            let revision = insert_revision(
                &tx,
                &NewRevision {
                    id: Some(next_id(&tx, "revisions")?),
                    source: req.source,
                    author: ACTOR,
                    message: &message,
                    committed_at: at,
                    content_hash: &hash,
                    // Not counted for Helm releases: `generateName`-only objects of a chart
                    // are dropped by the manifest reader like any commit's, uncounted here.
                    skipped: 0,
                },
                &objects,
                now,
            )?;
            // As a commit does: the release's failed attempts are history from here on.
            intents::supersede(&tx, req.source, revision.id, ACTOR, now)?;
            outcome.retired = objects.is_empty();
            outcome.revision = Some(revision);
        }
    }
    // A deploy newer than a failed attempt is the release's answer to it (a rollback
    // deploys content already committed, so no new revision says so).
    if let (Some(d), Some(newest)) = (&req.deployed, newest_revision(&tx, req.source)?) {
        supersede_older(&tx, req.source, d.version, newest.id, now)?;
    }

    // 3. The version in flight holds the source's lock.
    if let (false, Some((p, lock)), Some((hash, objects))) = (locked, &req.pending, pending) {
        check_owners(&tx, req.source, &objects)?;
        let id = next_id(&tx, "intents")?;
        let ttl = ttl_seconds(req.stale_after);
        let message = format!("helm: {} {}", lock.status, p.describe);
        tx.execute(
            "INSERT INTO intents (id, source, holder, state, author, message, created_at,
                                  ttl_seconds, expires_at, content_hash, object_count)
             VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                id,
                req.source,
                lock.holder(),
                ACTOR,
                message,
                ts_to_db(p.at),
                ttl,
                ts_to_db(intents::plus(p.at, ttl)),
                hash,
                objects.len() as i64
            ],
        )?;
        insert_objects(&tx, "intent_objects", "intent_id", id, &objects)?;
        let intent = intents::require(&tx, id, now)?;
        let detail = format!(
            "{}; {} object{}; stale after {}",
            lock.holder(),
            objects.len(),
            if objects.len() == 1 { "" } else { "s" },
            intents::friendly(SignedDuration::from_secs(ttl))
        );
        record(&tx, &intent, IntentAction::Begin, ACTOR, &detail, p.at)?;
        outcome.begun = Some(intent);
    }
    tx.commit()?;
    Ok(outcome)
}

/// Marks failed attempts of versions older than `deployed` superseded by `revision`.
fn supersede_older(
    tx: &Connection,
    source: &str,
    deployed: i64,
    revision: i64,
    now: Timestamp,
) -> Result<(), StoreError> {
    intents::supersede_where(tx, source, revision, ACTOR, now, |i| {
        PendingLock::parse(source, &i.holder).is_some_and(|l| l.version < deployed)
    })
}

#[cfg(test)]
#[path = "helm_sources_tests.rs"]
mod tests;
