//! Pulumi stacks as sources: one transaction brings a source to what the stack's state
//! records. The state's Kubernetes objects are the newest revision (same content, no new
//! revision); each operation the state still records as pending is an `interrupted` intent
//! held by the stack's update (an interrupted `pulumi up`). An intent stands while later
//! states still record its operation; once one does not, it ends: superseded by the new
//! revision that state brought, or released when the state's objects did not change (the
//! record was cleared, e.g. by `pulumi stack export | pulumi stack import`).
//!
//! The intents are not locks: Pulumi's own lock is its lock file, judged apart. They are
//! written as `interrupted` directly, never `pending`, so they never hold the source's lock
//! and a `driftd run` of the same source is not refused because of them.
//!
//! `driftd import pulumi` writes with the next local numbers; `driftd serve`'s importer with
//! ids from [`HELM_ID_BASE`](super::HELM_ID_BASE) up, as Helm rows, so a row it writes never
//! takes a number of the cluster log.

use super::helm_sources::next_id;
use super::intents::{self, finish_in, record, IntentAction, IntentInfo, IntentState};
use super::revisions::{
    check_owners, fill_sealed, insert_objects, insert_revision, newest_revision, validate_objects,
    NewRevision, Sealing, StoredObject,
};
use super::secrets::record_hash_key;
use super::{ts_to_db, CommitOutcome, StoreError};
use driftd_core::manifest::ManifestObject;
use driftd_core::pulumi::interrupted::{Interrupted, ACTOR};
use jiff::Timestamp;
use rusqlite::{params, Connection, TransactionBehavior};
use std::collections::BTreeSet;

/// What a stack's state records, as its source takes it.
pub struct PulumiSync<'a> {
    pub source: &'a str,
    /// The stack's Kubernetes objects (empty for a stack destroyed or removed).
    pub objects: &'a [ManifestObject],
    /// Who the revision is by, and why, as history shows it.
    pub author: &'a str,
    pub message: &'a str,
    /// When Pulumi wrote the state; `None`: now.
    pub at: Option<Timestamp>,
    /// Operations the state records as pending.
    pub pending: &'a [PulumiPending<'a>],
    /// Ids from `HELM_ID_BASE` up (a daemon's import) instead of the next local number.
    pub imported: bool,
}

/// One pending operation: its words and the object it applies (none for a delete).
pub struct PulumiPending<'a> {
    pub operation: &'a Interrupted,
    pub objects: &'a [ManifestObject],
}

/// What a sync did.
#[derive(Debug, Clone, PartialEq)]
pub struct PulumiOutcome {
    pub revision: CommitOutcome,
    /// Intents of operations the state records for the first time.
    pub begun: Vec<IntentInfo>,
    /// Intents of operations the state records no more (superseded or released), and
    /// failed or interrupted deploys of the source the new revision superseded.
    pub ended: Vec<IntentInfo>,
    /// Intents of operations still recorded, as they were.
    pub standing: Vec<IntentInfo>,
}

/// The operation an open intent of `source` stands for, if Pulumi's state recorded it.
fn operation_of(intent: &IntentInfo) -> Option<Interrupted> {
    (intent.state == IntentState::Interrupted)
        .then(|| Interrupted::parse(&intent.holder, &intent.message))
        .flatten()
}

pub(super) fn sync(
    conn: &mut Connection,
    req: &PulumiSync,
    sealing: &Sealing,
    now: Timestamp,
) -> Result<PulumiOutcome, StoreError> {
    let (hash, objects) = validate_objects(req.source, req.objects, sealing)?;
    let pending = req
        .pending
        .iter()
        .map(|p| validate_objects(req.source, p.objects, sealing).map(|v| (p, v)))
        .collect::<Result<Vec<_>, _>>()?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    record_hash_key(&tx, &sealing.hash)?;

    // 1. The operations still recorded keep their intents (same operation, resource and
    // objects; the state may have been written again since).
    let open: Vec<(IntentInfo, Interrupted)> = intents::list(&tx, Some(req.source), false, now)?
        .into_iter()
        .filter_map(|i| operation_of(&i).map(|op| (i, op)))
        .collect();
    let mut kept: BTreeSet<i64> = BTreeSet::new();
    let mut standing = Vec::new();
    let mut new = Vec::new();
    for (p, (p_hash, p_objects)) in &pending {
        let same = open.iter().find(|(i, op)| {
            !kept.contains(&i.id) && op.same_operation(p.operation) && i.content_hash == *p_hash
        });
        match same {
            Some((intent, _)) => {
                kept.insert(intent.id);
                standing.push(intent.clone());
            }
            None => new.push((p, p_hash, p_objects)),
        }
    }

    // 2. The state's objects are the newest revision; a new one supersedes the source's
    // failed and interrupted deploys but those still recorded.
    let mut ended = Vec::new();
    let revision = match newest_revision(&tx, req.source)? {
        Some(newest) if newest.content_hash == hash => {
            if objects.iter().any(|o| o.sealed.is_some()) {
                fill_sealed(&tx, newest.id, &objects)?;
            }
            CommitOutcome::Unchanged(newest)
        }
        _ => {
            check_owners(&tx, req.source, &objects)?;
            let id = req
                .imported
                .then(|| next_id(&tx, "revisions"))
                .transpose()?;
            let revision = insert_revision(
                &tx,
                &NewRevision {
                    id,
                    source: req.source,
                    author: req.author,
                    message: req.message,
                    committed_at: req.at.unwrap_or(now),
                    content_hash: &hash,
                    skipped: 0,
                },
                &objects,
                now,
            )?;
            let superseded: Vec<i64> = intents::list(&tx, Some(req.source), false, now)?
                .into_iter()
                .filter(|i| matches!(i.state, IntentState::Failed | IntentState::Interrupted))
                .map(|i| i.id)
                .filter(|id| !kept.contains(id))
                .collect();
            intents::supersede_where(&tx, req.source, revision.id, ACTOR, now, |i| {
                superseded.contains(&i.id)
            })?;
            for id in superseded {
                ended.push(intents::require(&tx, id, now)?);
            }
            CommitOutcome::Created(revision)
        }
    };

    // 3. Operations the state records no more, with nothing that supersedes them: their
    // record was cleared.
    for (intent, _) in &open {
        if kept.contains(&intent.id) || ended.iter().any(|e| e.id == intent.id) {
            continue;
        }
        let reason = format!(
            "Pulumi's state{} no longer records the operation as pending",
            req.at.map(|t| format!(" of {t}")).unwrap_or_default()
        );
        ended.push(finish_in(
            &tx,
            intent.id,
            IntentAction::Release,
            ACTOR,
            &reason,
            now,
        )?);
    }

    // 4. Operations recorded for the first time.
    let mut begun = Vec::new();
    for (p, p_hash, p_objects) in new {
        check_owners(&tx, req.source, p_objects)?;
        begun.push(begin_interrupted(
            &tx,
            req,
            p.operation,
            p_hash,
            p_objects,
            now,
        )?);
    }
    tx.commit()?;
    Ok(PulumiOutcome {
        revision,
        begun,
        ended,
        standing,
    })
}

/// Records `op` as an intent that began when the update wrote it and is interrupted now.
fn begin_interrupted(
    tx: &Connection,
    req: &PulumiSync,
    op: &Interrupted,
    hash: &str,
    objects: &[StoredObject],
    now: Timestamp,
) -> Result<IntentInfo, StoreError> {
    let id = req.imported.then(|| next_id(tx, "intents")).transpose()?;
    // Never pending, so the TTL only fills the column.
    let ttl = intents::MIN_TTL.as_secs() as i64;
    let reason = format!(
        "Pulumi's state{} records the operation as pending: the update stopped before it \
         finished",
        req.at.map(|t| format!(" of {t}")).unwrap_or_default()
    );
    tx.execute(
        "INSERT INTO intents (id, source, holder, state, author, message, created_at,
                              ttl_seconds, expires_at, ended_at, ended_by, end_reason,
                              content_hash, object_count)
         VALUES (?1, ?2, ?3, 'interrupted', ?4, ?5, ?6, ?7, ?8, ?9, ?4, ?10, ?11, ?12)",
        params![
            id,
            req.source,
            op.holder(),
            ACTOR,
            op.message(),
            ts_to_db(op.at),
            ttl,
            ts_to_db(intents::plus(op.at, ttl)),
            ts_to_db(now),
            reason,
            hash,
            objects.len() as i64
        ],
    )?;
    let id = tx.last_insert_rowid();
    insert_objects(tx, "intent_objects", "intent_id", id, objects)?;
    let intent = intents::require(tx, id, now)?;
    let detail = format!(
        "{}; {} object{}",
        op.holder(),
        objects.len(),
        if objects.len() == 1 { "" } else { "s" }
    );
    record(tx, &intent, IntentAction::Begin, ACTOR, &detail, op.at)?;
    record(tx, &intent, IntentAction::Interrupt, ACTOR, &reason, now)?;
    Ok(intent)
}

#[cfg(test)]
#[path = "pulumi_tests.rs"]
mod tests;
