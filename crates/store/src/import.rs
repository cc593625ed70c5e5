//! Imports from the cluster log: revisions and intents that `driftd commit|intent|run
//! --cluster` recorded as Kubernetes objects, which every replica copies into its database.
//!
//! They keep the cluster's numbers as their ids (one sequence for the whole cluster log), so
//! every replica names an intent alike and orders revisions alike: "newest" is the highest
//! id, so a revision that arrives after a higher-numbered one of its source is recorded
//! below it and never becomes the newest. Every import is idempotent (`cluster_revisions`,
//! `cluster_intents`), and applies the same rules as a local write: Secret values are
//! stored exactly as [`Store::commit`](super::Store::commit) stores them, an object owned by
//! another source is refused. What this database cannot take is *refused*: recorded with the
//! reason, so it is said once, and never retried.

use super::intents::{
    commit_in, finish_in, finishing, lock_of, record, require, IntentAction, IntentInfo,
    IntentState,
};
use super::revisions::{
    check_owners, fill_sealed, insert_objects, insert_revision, newest_revision, validate_objects,
    NewRevision, Sealing,
};
use super::secrets::record_hash_key;
use super::{intents, ts_to_db, CommitOutcome, RevisionInfo, StoreError};
use driftd_core::manifest::ManifestObject;
use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

/// A revision as the cluster log holds it.
pub struct ClusterRevision<'a> {
    /// Its number in the cluster log; the local revision takes it as its id.
    pub id: i64,
    pub source: &'a str,
    pub author: &'a str,
    pub message: &'a str,
    pub committed_at: Timestamp,
    pub objects: &'a [ManifestObject],
    /// The intent it commits (`driftd intent commit ID --cluster`), imported before it.
    pub intent: Option<i64>,
    /// Who committed it: the intent's committer, recorded in its history.
    pub actor: &'a str,
}

/// What importing a revision did.
#[derive(Debug, Clone, PartialEq)]
pub enum RevisionImport {
    /// Recorded; `newest` tells whether it is now its source's newest revision (a revision
    /// numbered below one imported earlier is recorded below it).
    Created {
        revision: RevisionInfo,
        newest: bool,
    },
    /// Same content as the source's newest revision: nothing new to record.
    Unchanged(RevisionInfo),
    /// Imported before (or refused before): nothing done.
    Known,
    /// This database cannot take it, for this reason (said once; recorded).
    Refused(String),
}

/// An intent as the cluster log holds it when it began.
pub struct ClusterIntent<'a> {
    /// Its number in the cluster log; the local intent takes it as its id.
    pub id: i64,
    pub source: &'a str,
    pub holder: &'a str,
    pub author: &'a str,
    pub message: &'a str,
    pub created_at: Timestamp,
    pub ttl_seconds: i64,
    pub expires_at: Timestamp,
    pub objects: &'a [ManifestObject],
}

/// What importing an intent did.
#[derive(Debug, Clone, PartialEq)]
pub enum IntentImport {
    Begun(Box<IntentInfo>),
    Known,
    Refused(String),
}

/// The numbers of the cluster log this database has seen (imported or refused): what an
/// importer starting up need not look at again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportedIds {
    /// Revisions of the cluster log (their numbers), imported or refused.
    pub revisions: std::collections::BTreeSet<i64>,
    /// Intents of the cluster log (their ids), imported or refused.
    pub intents: std::collections::BTreeSet<i64>,
}

fn refuse(
    tx: &Connection,
    table: &str,
    id: i64,
    source: &str,
    reason: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    tx.execute(
        &format!("INSERT INTO {table} (id, source, refused, imported_at) VALUES (?1, ?2, ?3, ?4)"),
        params![id, source, reason, ts_to_db(now)],
    )?;
    Ok(())
}

fn known(tx: &Connection, table: &str, id: i64) -> Result<bool, StoreError> {
    Ok(tx
        .query_row(
            &format!("SELECT 1 FROM {table} WHERE id = ?1"),
            [id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The words for a number of the cluster log that a row written here directly already has.
fn taken(what: &str, id: i64) -> String {
    format!(
        "{what} {id} of the cluster log cannot be imported: this database already has a {what} \
         {id} written to it directly (driftd commit|intent --db); a database that imports the \
         cluster log must be written only through it: start this replica with a new database"
    )
}

/// A rejected input (invalid object set, object owned by another source) as a refusal;
/// any other error as it is.
fn refusal<T>(result: Result<T, StoreError>) -> Result<Result<T, String>, StoreError> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(StoreError::Rejected(reason)) => Ok(Err(reason)),
        Err(StoreError::Locked(held)) => Ok(Err(held.to_string())),
        Err(StoreError::WrongState(wrong)) => Ok(Err(wrong.to_string())),
        Err(other) => Err(other),
    }
}

pub(super) fn import_revision(
    conn: &mut Connection,
    req: &ClusterRevision,
    sealing: &Sealing,
    now: Timestamp,
) -> Result<RevisionImport, StoreError> {
    let validated = refusal(validate_objects(req.source, req.objects, sealing))?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if known(&tx, "cluster_revisions", req.id)? {
        return Ok(RevisionImport::Known);
    }
    let outcome = match validated {
        Err(reason) => Err(reason),
        Ok(_) if revision_exists(&tx, req.id)? => Err(taken("revision", req.id)),
        Ok((hash, objects)) => {
            record_hash_key(&tx, &sealing.hash)?;
            match committable_intent(&tx, req.intent, req.committed_at)? {
                Some(intent) => refusal(
                    commit_in(&tx, intent, req.actor, req.committed_at, Some(req.id))
                        .map(|(_, outcome)| outcome),
                )?,
                // Not imported (refused here) or ended differently here: the revision
                // still is the cluster's, recorded as a plain commit.
                None => refusal(insert(&tx, req, &hash, &objects, now))?,
            }
        }
    };
    let result = match outcome {
        Err(reason) => {
            refuse(&tx, "cluster_revisions", req.id, req.source, &reason, now)?;
            RevisionImport::Refused(reason)
        }
        Ok(outcome) => {
            let local = match &outcome {
                CommitOutcome::Created(r) | CommitOutcome::Unchanged(r) => r.id,
            };
            tx.execute(
                "INSERT INTO cluster_revisions (id, source, revision_id, imported_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![req.id, req.source, local, ts_to_db(now)],
            )?;
            let newest = newest_revision(&tx, req.source)?.map(|r| r.id);
            match outcome {
                CommitOutcome::Created(revision) => RevisionImport::Created {
                    newest: newest == Some(revision.id),
                    revision,
                },
                CommitOutcome::Unchanged(revision) => RevisionImport::Unchanged(revision),
            }
        }
    };
    tx.commit()?;
    Ok(result)
}

fn revision_exists(tx: &Connection, id: i64) -> Result<bool, StoreError> {
    Ok(tx
        .query_row("SELECT 1 FROM revisions WHERE id = ?1", [id], |_| Ok(()))
        .optional()?
        .is_some())
}

/// `intent`, when it came from the cluster, is in this database and may be committed.
fn committable_intent(
    tx: &Connection,
    intent: Option<i64>,
    at: Timestamp,
) -> Result<Option<i64>, StoreError> {
    let Some(id) = intent else {
        return Ok(None);
    };
    let imported = tx
        .query_row(
            "SELECT 1 FROM cluster_intents WHERE id = ?1 AND refused IS NULL",
            [id],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    Ok((imported && require(tx, id, at)?.state.is_open()).then_some(id))
}

/// A plain revision (`driftd commit --cluster`), as `commit` records one, at its number.
fn insert(
    tx: &Connection,
    req: &ClusterRevision,
    hash: &str,
    objects: &[super::revisions::StoredObject],
    now: Timestamp,
) -> Result<CommitOutcome, StoreError> {
    let newest = newest_revision(tx, req.source)?;
    if let Some(newest) = newest.as_ref().filter(|n| n.content_hash == hash) {
        fill_sealed(tx, newest.id, objects)?;
        return Ok(CommitOutcome::Unchanged(newest.clone()));
    }
    let newest = newest.map(|r| r.id);
    check_owners(tx, req.source, objects)?;
    let revision = insert_revision(
        tx,
        &NewRevision {
            id: Some(req.id),
            source: req.source,
            author: req.author,
            message: req.message,
            committed_at: req.committed_at,
            content_hash: hash,
            skipped: 0,
        },
        objects,
        now,
    )?;
    // Only a newer committed state supersedes the source's failed deploys.
    if newest.is_none_or(|n| n < req.id) {
        intents::supersede(tx, req.source, req.id, req.author, req.committed_at)?;
    }
    Ok(CommitOutcome::Created(revision))
}

pub(super) fn import_intent(
    conn: &mut Connection,
    req: &ClusterIntent,
    sealing: &Sealing,
    now: Timestamp,
) -> Result<IntentImport, StoreError> {
    let validated = refusal(validate_objects(req.source, req.objects, sealing))?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if known(&tx, "cluster_intents", req.id)? {
        return Ok(IntentImport::Known);
    }
    let begun = match validated {
        Err(reason) => Err(reason),
        Ok(_) if require(&tx, req.id, now).is_ok() => Err(taken("intent", req.id)),
        Ok((hash, objects)) => match lock_of(&tx, req.source, now)? {
            Some(other) => Err(format!(
                "intent {} of the cluster log cannot be imported: source {:?} is locked here \
                 by intent {} ({}, held by {})",
                req.id, req.source, other.id, other.state, other.holder
            )),
            None => refusal(check_owners(&tx, req.source, &objects))?.map(|()| (hash, objects)),
        },
    };
    let result = match begun {
        Err(reason) => {
            refuse(&tx, "cluster_intents", req.id, req.source, &reason, now)?;
            IntentImport::Refused(reason)
        }
        Ok((hash, objects)) => {
            record_hash_key(&tx, &sealing.hash)?;
            tx.execute(
                "INSERT INTO intents (id, source, holder, state, author, message, created_at,
                                      ttl_seconds, expires_at, content_hash, object_count)
                 VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    req.id,
                    req.source,
                    req.holder,
                    req.author,
                    req.message,
                    ts_to_db(req.created_at),
                    req.ttl_seconds,
                    ts_to_db(req.expires_at),
                    hash,
                    objects.len() as i64
                ],
            )?;
            insert_objects(&tx, "intent_objects", "intent_id", req.id, &objects)?;
            tx.execute(
                "INSERT INTO cluster_intents (id, source, imported_at) VALUES (?1, ?2, ?3)",
                params![req.id, req.source, ts_to_db(now)],
            )?;
            let intent = require(&tx, req.id, now)?;
            let detail = format!(
                "held by {}; {} object{}; ttl {}; from the cluster log",
                req.holder,
                objects.len(),
                if objects.len() == 1 { "" } else { "s" },
                intents::friendly(jiff::SignedDuration::from_secs(req.ttl_seconds))
            );
            record(
                &tx,
                &intent,
                IntentAction::Begin,
                req.author,
                &detail,
                req.created_at,
            )?;
            IntentImport::Begun(Box::new(intent))
        }
    };
    tx.commit()?;
    Ok(result)
}

/// A renewal seen in the cluster log: the intent's TTL and expiry as its holder wrote them.
/// `Ok(None)` when nothing changed (not pending here, or the same expiry).
pub(super) fn import_renewal(
    conn: &mut Connection,
    id: i64,
    ttl_seconds: i64,
    expires_at: Timestamp,
    actor: &str,
    now: Timestamp,
) -> Result<Option<IntentInfo>, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let intent = require(&tx, id, now)?;
    if !intent.state.holds_lock()
        || (intent.expires_at == expires_at && intent.ttl_seconds == ttl_seconds)
    {
        return Ok(None);
    }
    tx.execute(
        "UPDATE intents SET ttl_seconds = ?2, expires_at = ?3 WHERE id = ?1",
        params![id, ttl_seconds, ts_to_db(expires_at)],
    )?;
    if intent.state == IntentState::Expired && expires_at > now {
        let detail = format!("renewed after expiring at {}", intent.expires_at);
        record(&tx, &intent, IntentAction::Revive, actor, &detail, now)?;
    }
    let renewed = require(&tx, id, now)?;
    tx.commit()?;
    Ok(Some(renewed))
}

/// An intent's end (abort, fail, interrupt, release) seen in the cluster log, at the time
/// it happened there. `Ok(None)` when the intent already is in that state here.
pub(super) fn import_end(
    conn: &mut Connection,
    id: i64,
    action: IntentAction,
    actor: &str,
    reason: &str,
    at: Timestamp,
) -> Result<Option<IntentInfo>, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let (to, _, _) = finishing(action);
    if require(&tx, id, at)?.state == to {
        return Ok(None);
    }
    let ended = finish_in(&tx, id, action, actor, reason, at)?;
    tx.commit()?;
    Ok(Some(ended))
}

pub(super) fn imported_ids(conn: &Connection) -> Result<ImportedIds, StoreError> {
    let ids = |table: &str| -> Result<std::collections::BTreeSet<i64>, StoreError> {
        let mut stmt = conn.prepare(&format!("SELECT id FROM {table}"))?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    Ok(ImportedIds {
        revisions: ids("cluster_revisions")?,
        intents: ids("cluster_intents")?,
    })
}
