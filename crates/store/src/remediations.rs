//! What remediation did: one row per object the daemon re-applied (or failed to), so a
//! source's history says who changed the cluster back and when, next to its revisions and
//! intents.

use super::{key_from_db, ns_to_db, ts_from_db, ts_to_db, StoreError};
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use rusqlite::{params, Connection};
use serde::Serialize;

/// How one remediation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RemediationOutcome {
    /// The committed state was applied.
    Applied,
    /// The apply was refused or could not be made (the detail says why).
    Failed,
}

impl RemediationOutcome {
    fn as_db(self) -> &'static str {
        match self {
            RemediationOutcome::Applied => "applied",
            RemediationOutcome::Failed => "failed",
        }
    }
}

/// One remediation, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemediationEvent {
    pub source: String,
    pub revision: i64,
    /// The object (`object` in JSON: the history's entries are tagged by `kind`).
    #[serde(rename = "object")]
    pub key: ObjectKey,
    pub at: Timestamp,
    /// `driftd/<replica identity>`.
    pub actor: String,
    pub outcome: RemediationOutcome,
    /// Why it was needed (the drift class) or why it failed; never a value.
    pub detail: String,
}

pub(super) fn record(conn: &Connection, event: &RemediationEvent) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO remediations (source, revision_id, grp, kind, namespace, name, at, actor,
                                   outcome, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            event.source,
            event.revision,
            event.key.group,
            event.key.kind,
            ns_to_db(&event.key.namespace),
            event.key.name,
            ts_to_db(event.at),
            event.actor,
            event.outcome.as_db(),
            event.detail,
        ],
    )?;
    Ok(())
}

/// Remediations of `source`, newest first.
pub(super) fn events(conn: &Connection, source: &str) -> Result<Vec<RemediationEvent>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT grp, kind, namespace, name, source, revision_id, at, actor, outcome, detail
         FROM remediations WHERE source = ?1 ORDER BY id DESC",
    )?;
    let rows = stmt.query_map([source], |row| {
        let outcome: String = row.get(8)?;
        Ok(RemediationEvent {
            key: key_from_db(row, 0)?,
            source: row.get(4)?,
            revision: row.get(5)?,
            at: ts_from_db(row, 6)?,
            actor: row.get(7)?,
            outcome: if outcome == "applied" {
                RemediationOutcome::Applied
            } else {
                RemediationOutcome::Failed
            },
            detail: row.get(9)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
