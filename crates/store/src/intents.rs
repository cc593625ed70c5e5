//! Intents: the write-ahead log of deploys. An intent records the object set a deployer is
//! about to apply *before* it applies it, so a deploy that dies halfway leaves a record of
//! what the cluster may now hold. A pending intent is also the source's lock: while it
//! stands, nobody else may begin one for that source, so an intent nobody renews any more is
//! a stale lock that someone has to release on purpose.
//!
//! Every write is one `BEGIN IMMEDIATE` transaction, like `commit`, and a refused operation
//! writes nothing. Expiry is derived, never written: a pending intent whose `expires_at` has
//! passed *reads* as [`IntentState::Expired`].

use super::revisions::{
    check_owners, fill_sealed, insert_objects, insert_revision, newest_revision, validate_objects,
    NewRevision, Sealing, StoredObject,
};
use super::secrets::record_hash_key;
use super::{key_from_db, ts_from_db, ts_to_db, CommitOutcome, StoreError};
use jiff::{SignedDuration, Timestamp};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::time::Duration;

mod types;
pub(crate) use types::friendly;
pub use types::*;

const LOCK_STATES: &[IntentState] = &[IntentState::Pending, IntentState::Expired];
const RELEASABLE: &[IntentState] = &[
    IntentState::Pending,
    IntentState::Expired,
    IntentState::Failed,
    IntentState::Interrupted,
];
/// A failed or interrupted deploy may have applied all it wanted: the team can keep it by
/// committing the intent, the way out `/drift` offers for `uncommitted` objects.
const COMMITTABLE: &[IntentState] = RELEASABLE;

const COLUMNS: &str = "id, source, holder, state, author, message, created_at, ttl_seconds, \
                       expires_at, ended_at, ended_by, end_reason, content_hash, object_count, \
                       revision_id, \
                       EXISTS (SELECT 1 FROM cluster_intents c \
                               WHERE c.id = intents.id AND c.refused IS NULL)";

pub(super) fn conversion_error(idx: usize, message: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, message.into())
}

fn intent_from_row(row: &rusqlite::Row, now: Timestamp) -> rusqlite::Result<IntentInfo> {
    let stored: String = row.get(3)?;
    let mut state = IntentState::from_db(&stored)
        .ok_or_else(|| conversion_error(3, format!("unknown intent state {stored:?}")))?;
    let expires_at = ts_from_db(row, 8)?;
    if state == IntentState::Pending && expires_at <= now {
        state = IntentState::Expired;
    }
    let ended_at = match row.get::<_, Option<String>>(9)? {
        None => None,
        Some(_) => Some(ts_from_db(row, 9)?),
    };
    Ok(IntentInfo {
        id: row.get(0)?,
        source: row.get(1)?,
        holder: row.get(2)?,
        state,
        author: row.get(4)?,
        message: row.get(5)?,
        created_at: ts_from_db(row, 6)?,
        ttl_seconds: row.get(7)?,
        expires_at,
        ended_at,
        ended_by: row.get(10)?,
        end_reason: row.get(11)?,
        content_hash: row.get(12)?,
        object_count: row.get::<_, i64>(13)? as usize,
        revision_id: row.get(14)?,
        cluster: row.get(15)?,
    })
}

pub(super) fn get(
    conn: &Connection,
    id: i64,
    now: Timestamp,
) -> Result<Option<IntentInfo>, StoreError> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM intents WHERE id = ?1"),
            [id],
            |row| intent_from_row(row, now),
        )
        .optional()?)
}

pub(super) fn require(
    conn: &Connection,
    id: i64,
    now: Timestamp,
) -> Result<IntentInfo, StoreError> {
    get(conn, id, now)?.ok_or(StoreError::IntentNotFound(id))
}

fn require_state(
    intent: IntentInfo,
    attempted: &'static str,
    allowed: &'static [IntentState],
) -> Result<IntentInfo, StoreError> {
    if allowed.contains(&intent.state) {
        Ok(intent)
    } else {
        Err(StoreError::WrongState(Box::new(WrongState {
            intent,
            attempted,
            allowed,
        })))
    }
}

/// Refuses a local write (`verb`: the `driftd intent` subcommand that was run) to an
/// intent this database only mirrors: one of the cluster log, which is ended there for
/// every replica, or one standing for a Helm release's version in flight or an operation a
/// Pulumi state records as pending, which only Helm or Pulumi ends. Writing it here alone would free nothing where the lock is really held.
fn owned_elsewhere(intent: &IntentInfo, verb: &str) -> Result<(), StoreError> {
    if let Some(lock) = driftd_core::helm::PendingLock::parse(&intent.source, &intent.holder) {
        return Err(StoreError::Rejected(format!(
            "intent {} is version {} of Helm release {}/{}: Helm's release records decide it, \
             not driftd, so driftd does not {verb} it. Helm clears it: `{}`; a `helm upgrade` \
             that completes makes a new version the committed state",
            intent.id,
            lock.version,
            lock.namespace,
            lock.name,
            lock.release_command()
        )));
    }
    if driftd_core::helm::parse_source(&intent.source).is_some() {
        return Err(StoreError::Rejected(format!(
            "intent {} belongs to Helm release {}: Helm's release records decide it, not \
             driftd, so driftd does not {verb} it",
            intent.id, intent.source
        )));
    }
    if let Some(op) = intent.pulumi_operation() {
        return Err(StoreError::Rejected(format!(
            "intent {} is an operation Pulumi's state records as pending (stack {}): that \
             record decides it, not driftd, so driftd does not {verb} it. To keep what reached \
             the cluster: `{}`; to clear the record: `{}`",
            intent.id,
            op.stack,
            op.keep_command(),
            op.clear_command()
        )));
    }
    if intent.cluster {
        return Err(StoreError::Rejected(format!(
            "intent {} came from the cluster log: it is held there, for every replica, so \
             {verb} it there: `driftd intent {verb} {} --cluster`",
            intent.id, intent.id
        )));
    }
    Ok(())
}

/// Intents newest first; only open ones unless `include_ended`.
pub(super) fn list(
    conn: &Connection,
    source: Option<&str>,
    include_ended: bool,
    now: Timestamp,
) -> Result<Vec<IntentInfo>, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {COLUMNS} FROM intents
         WHERE (?1 IS NULL OR source = ?1)
           AND (?2 OR state IN ('pending', 'failed', 'interrupted'))
         ORDER BY id DESC"
    ))?;
    let rows = stmt.query_map(params![source, include_ended], |row| {
        intent_from_row(row, now)
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn intent_objects(conn: &Connection, id: i64) -> Result<Vec<StoredObject>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT grp, kind, namespace, name, api_version, body, origin_file, origin_document,
                sealed
         FROM intent_objects WHERE intent_id = ?1 ORDER BY grp, kind, namespace, name",
    )?;
    let rows = stmt.query_map([id], |row| {
        Ok(StoredObject {
            key: key_from_db(row, 0)?,
            api_version: row.get(4)?,
            body: row.get(5)?,
            origin_file: row.get(6)?,
            origin_document: row.get(7)?,
            sealed: row.get(8)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn open_intents(
    conn: &Connection,
    now: Timestamp,
) -> Result<Vec<OpenIntent>, StoreError> {
    // One read transaction: an intent and its objects from the same moment.
    let tx = conn.unchecked_transaction()?;
    let mut intents = list(&tx, None, false, now)?;
    intents.reverse();
    let mut out = Vec::with_capacity(intents.len());
    for intent in intents {
        let objects = intent_objects(&tx, intent.id)?
            .into_iter()
            .map(|o| {
                let object = serde_json::from_str(&o.body).map_err(|e| {
                    StoreError::Sqlite(conversion_error(5, format!("intent object body: {e}")))
                })?;
                Ok(IntentObject {
                    key: o.key,
                    api_version: o.api_version,
                    object,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        out.push(OpenIntent { intent, objects });
    }
    tx.finish()?;
    Ok(out)
}

pub(super) fn record(
    conn: &Connection,
    intent: &IntentInfo,
    action: IntentAction,
    actor: &str,
    detail: &str,
    at: Timestamp,
) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO intent_events (intent_id, source, at, action, actor, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            intent.id,
            intent.source,
            ts_to_db(at),
            action.as_str(),
            actor,
            detail
        ],
    )?;
    Ok(())
}

/// The intent holding `source`'s lock, if any.
pub(super) fn lock_of(
    conn: &Connection,
    source: &str,
    now: Timestamp,
) -> Result<Option<IntentInfo>, StoreError> {
    Ok(conn
        .query_row(
            &format!("SELECT {COLUMNS} FROM intents WHERE source = ?1 AND state = 'pending'"),
            [source],
            |row| intent_from_row(row, now),
        )
        .optional()?)
}

fn validate_ttl(ttl: Duration) -> Result<i64, StoreError> {
    if ttl < MIN_TTL || ttl > MAX_TTL {
        return Err(StoreError::Rejected(format!(
            "TTL {} is out of range: use 1s to 168h",
            friendly(SignedDuration::try_from(ttl).unwrap_or(SignedDuration::MAX))
        )));
    }
    Ok(ttl.as_secs() as i64)
}

pub(super) fn plus(now: Timestamp, seconds: i64) -> Timestamp {
    now.saturating_add(SignedDuration::from_secs(seconds))
        .expect("a signed duration never needs calendar units")
}

pub(super) fn begin(
    conn: &mut Connection,
    req: &BeginRequest,
    sealing: &Sealing,
    now: Timestamp,
) -> Result<IntentInfo, StoreError> {
    let (hash, objects) = validate_objects(req.source, req.objects, sealing)?;
    if req.holder.trim().is_empty() {
        return Err(StoreError::Rejected("the holder must not be empty".into()));
    }
    let ttl = validate_ttl(req.ttl)?;

    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some(intent) = lock_of(&tx, req.source, now)? {
        return Err(StoreError::Locked(Box::new(LockHeld { intent, now })));
    }
    // Refused now rather than at commit time, after the deploy has run.
    check_owners(&tx, req.source, &objects)?;
    record_hash_key(&tx, &sealing.hash)?;
    tx.execute(
        "INSERT INTO intents (source, holder, state, author, message, created_at, ttl_seconds,
                              expires_at, content_hash, object_count, skipped_count)
         VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            req.source,
            req.holder,
            req.author,
            req.message,
            ts_to_db(now),
            ttl,
            ts_to_db(plus(now, ttl)),
            hash,
            objects.len() as i64,
            req.skipped as i64
        ],
    )?;
    let id = tx.last_insert_rowid();
    insert_objects(&tx, "intent_objects", "intent_id", id, &objects)?;
    let intent = require(&tx, id, now)?;
    let detail = format!(
        "held by {}; {} object{}; ttl {}",
        req.holder,
        objects.len(),
        if objects.len() == 1 { "" } else { "s" },
        friendly(SignedDuration::from_secs(ttl))
    );
    record(&tx, &intent, IntentAction::Begin, req.author, &detail, now)?;
    tx.commit()?;
    Ok(intent)
}

pub(super) fn renew(
    conn: &mut Connection,
    id: i64,
    ttl: Option<Duration>,
    actor: &str,
    now: Timestamp,
) -> Result<IntentInfo, StoreError> {
    let ttl = ttl.map(validate_ttl).transpose()?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let intent = require(&tx, id, now)?;
    owned_elsewhere(&intent, "renew")?;
    let intent = require_state(intent, "renewed", LOCK_STATES)?;
    let ttl = ttl.unwrap_or(intent.ttl_seconds);
    tx.execute(
        "UPDATE intents SET ttl_seconds = ?2, expires_at = ?3 WHERE id = ?1",
        params![id, ttl, ts_to_db(plus(now, ttl))],
    )?;
    if intent.state == IntentState::Expired {
        let detail = format!("renewed after expiring at {}", intent.expires_at);
        record(&tx, &intent, IntentAction::Revive, actor, &detail, now)?;
    }
    let renewed = require(&tx, id, now)?;
    tx.commit()?;
    Ok(renewed)
}

/// Ends an intent in `to`, recording `action` by `actor` with `reason`.
#[allow(clippy::too_many_arguments)]
fn end(
    tx: &Connection,
    intent: &IntentInfo,
    to: IntentState,
    action: IntentAction,
    actor: &str,
    reason: &str,
    revision: Option<i64>,
    now: Timestamp,
) -> Result<IntentInfo, StoreError> {
    tx.execute(
        "UPDATE intents SET state = ?2, ended_at = ?3, ended_by = ?4, end_reason = ?5,
                            revision_id = ?6
         WHERE id = ?1",
        params![
            intent.id,
            to.as_str(),
            ts_to_db(now),
            actor,
            reason,
            revision
        ],
    )?;
    record(tx, intent, action, actor, reason, now)?;
    require(tx, intent.id, now)
}

/// abort, fail, interrupt, release and auto-release: a state change and a history entry.
pub(super) fn finish(
    conn: &mut Connection,
    id: i64,
    action: IntentAction,
    actor: &str,
    reason: &str,
    now: Timestamp,
) -> Result<IntentInfo, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let verb = match action {
        IntentAction::Abort => "abort",
        IntentAction::Fail | IntentAction::Interrupt => "fail",
        _ => "release",
    };
    owned_elsewhere(&require(&tx, id, now)?, verb)?;
    let ended = finish_in(&tx, id, action, actor, reason, now)?;
    tx.commit()?;
    Ok(ended)
}

/// The state a finishing action leads to, as a participle, and the states it starts from.
pub(super) fn finishing(
    action: IntentAction,
) -> (IntentState, &'static str, &'static [IntentState]) {
    match action {
        IntentAction::Abort => (IntentState::Aborted, "aborted", LOCK_STATES),
        IntentAction::Fail => (IntentState::Failed, "marked failed", LOCK_STATES),
        IntentAction::Interrupt => (IntentState::Interrupted, "marked interrupted", LOCK_STATES),
        IntentAction::Release => (IntentState::Released, "released", RELEASABLE),
        IntentAction::AutoRelease => (IntentState::Released, "released automatically", LOCK_STATES),
        other => unreachable!("{other} is not a finishing action"),
    }
}

/// [`finish`] inside the caller's transaction.
pub(super) fn finish_in(
    tx: &Connection,
    id: i64,
    action: IntentAction,
    actor: &str,
    reason: &str,
    now: Timestamp,
) -> Result<IntentInfo, StoreError> {
    let (to, attempted, allowed) = finishing(action);
    let intent = require_state(require(tx, id, now)?, attempted, allowed)?;
    end(tx, &intent, to, action, actor, reason, None, now)
}

/// Commits intent `id` at `now`, as revision `revision_id` when given (an import keeps the
/// cluster's number).
pub(super) fn commit(
    conn: &mut Connection,
    id: i64,
    actor: &str,
    now: Timestamp,
    revision_id: Option<i64>,
) -> Result<(IntentInfo, CommitOutcome), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    owned_elsewhere(&require(&tx, id, now)?, "commit")?;
    let committed = commit_in(&tx, id, actor, now, revision_id)?;
    tx.commit()?;
    Ok(committed)
}

/// [`commit`] inside the caller's transaction.
pub(super) fn commit_in(
    tx: &Connection,
    id: i64,
    actor: &str,
    now: Timestamp,
    revision_id: Option<i64>,
) -> Result<(IntentInfo, CommitOutcome), StoreError> {
    let intent = require_state(require(tx, id, now)?, "committed", COMMITTABLE)?;
    let outcome = match newest_revision(tx, &intent.source)? {
        Some(newest) if newest.content_hash == intent.content_hash => {
            let objects = intent_objects(tx, id)?;
            fill_sealed(tx, newest.id, &objects)?;
            CommitOutcome::Unchanged(newest)
        }
        _ => {
            let objects = intent_objects(tx, id)?;
            // Another source may have taken one of the objects since the intent began.
            check_owners(tx, &intent.source, &objects)?;
            let skipped: i64 = tx.query_row(
                "SELECT skipped_count FROM intents WHERE id = ?1",
                [id],
                |r| r.get(0),
            )?;
            let revision = insert_revision(
                tx,
                &NewRevision {
                    id: revision_id,
                    source: &intent.source,
                    author: &intent.author,
                    message: &intent.message,
                    committed_at: now,
                    content_hash: &intent.content_hash,
                    skipped: skipped as usize,
                },
                &objects,
                now,
            )?;
            CommitOutcome::Created(revision)
        }
    };
    let (revision, reason) = match &outcome {
        CommitOutcome::Created(r) => (r.id, format!("revision {}", r.id)),
        CommitOutcome::Unchanged(r) => (
            r.id,
            format!("unchanged: source is already at revision {}", r.id),
        ),
    };
    let committed = end(
        tx,
        &intent,
        IntentState::Committed,
        IntentAction::Commit,
        actor,
        &reason,
        Some(revision),
        now,
    )?;
    supersede(tx, &intent.source, revision, actor, now)?;
    Ok((committed, outcome))
}

/// Marks the source's failed and interrupted intents superseded by `revision`.
pub(super) fn supersede(
    conn: &Connection,
    source: &str,
    revision: i64,
    actor: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    supersede_where(conn, source, revision, actor, now, |_| true)
}

/// [`supersede`] for those of the failed and interrupted intents `which` picks.
pub(super) fn supersede_where(
    conn: &Connection,
    source: &str,
    revision: i64,
    actor: &str,
    now: Timestamp,
    which: impl Fn(&IntentInfo) -> bool,
) -> Result<(), StoreError> {
    let superseded: Vec<IntentInfo> = list(conn, Some(source), false, now)?
        .into_iter()
        .filter(|i| matches!(i.state, IntentState::Failed | IntentState::Interrupted))
        .filter(|i| which(i))
        .collect();
    let reason = format!("superseded by revision {revision}");
    for intent in superseded {
        conn.execute(
            "UPDATE intents SET state = 'superseded', ended_at = ?2, ended_by = ?3,
                                end_reason = ?4
             WHERE id = ?1",
            params![intent.id, ts_to_db(now), actor, reason],
        )?;
        record(conn, &intent, IntentAction::Supersede, actor, &reason, now)?;
    }
    Ok(())
}

/// Records once that an intent was seen expired; `Ok(false)` if it is not expired or that
/// expiry was already recorded.
pub(super) fn record_expiry(
    conn: &mut Connection,
    id: i64,
    actor: &str,
    now: Timestamp,
) -> Result<bool, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let intent = require(&tx, id, now)?;
    if intent.state != IntentState::Expired {
        return Ok(false);
    }
    let last: Option<String> = tx
        .query_row(
            "SELECT action FROM intent_events WHERE intent_id = ?1 ORDER BY id DESC LIMIT 1",
            [id],
            |r| r.get(0),
        )
        .optional()?;
    if last.as_deref() == Some(IntentAction::ExpireDetected.as_str()) {
        return Ok(false);
    }
    let detail = format!(
        "not renewed since it expired at {} (ttl {})",
        intent.expires_at,
        friendly(SignedDuration::from_secs(intent.ttl_seconds))
    );
    record(
        &tx,
        &intent,
        IntentAction::ExpireDetected,
        actor,
        &detail,
        now,
    )?;
    tx.commit()?;
    Ok(true)
}
