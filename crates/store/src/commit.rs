//! A commit to a source: a new revision, and the source's failed and interrupted intents
//! superseded by it, in one transaction. Apart from `revisions` so that revisions (what
//! intents build on) need nothing of intents.

use super::intents;
use super::revisions::{
    check_owners, fill_sealed, insert_revision, newest_revision, validate_objects, NewRevision,
    Sealing, StoredObject,
};
use super::secrets::record_hash_key;
use super::{CommitOutcome, CommitRequest, StoreError};
use driftd_core::manifest::Desired;
use jiff::Timestamp;
use rusqlite::{Connection, TransactionBehavior};

/// Validates and writes the commit `req` (see the module documentation).
pub(super) fn commit<O: Desired>(
    conn: &mut Connection,
    req: &CommitRequest<O>,
    sealing: &Sealing,
    now: Timestamp,
) -> Result<CommitOutcome, StoreError> {
    let (hash, objects) = validate_objects(req.source, req.objects, sealing)?;
    write_commit(conn, req, sealing, (&hash, &objects), now)
}

/// Writes a validated commit (`hash` and `objects` from [`validate_objects`]).
fn write_commit<O: Desired>(
    conn: &mut Connection,
    req: &CommitRequest<O>,
    sealing: &Sealing,
    (hash, objects): (&str, &[StoredObject]),
    now: Timestamp,
) -> Result<CommitOutcome, StoreError> {
    // Checks and writes happen under the write lock, so no other commit can take an
    // object between our ownership check and our insert. Dropping `tx` without commit
    // rolls back; nothing has been written to the file at that point.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some(newest) = newest_revision(&tx, req.source)? {
        if newest.content_hash == hash {
            if objects.iter().any(|o| o.sealed.is_some()) {
                fill_sealed(&tx, newest.id, objects)?;
                tx.commit()?;
            }
            return Ok(CommitOutcome::Unchanged(newest));
        }
    }
    record_hash_key(&tx, &sealing.hash)?;
    check_owners(&tx, req.source, objects)?;
    let revision = insert_revision(
        &tx,
        &NewRevision {
            id: None,
            source: req.source,
            author: req.author,
            message: req.message,
            committed_at: req.committed_at.unwrap_or(now),
            content_hash: hash,
            skipped: req.skipped,
        },
        objects,
        now,
    )?;
    // A newer committed desired state is the team's decision: the source's failed and
    // interrupted deploys are history from here on.
    intents::supersede(&tx, req.source, revision.id, req.author, now)?;
    tx.commit()?;
    Ok(CommitOutcome::Created(revision))
}
