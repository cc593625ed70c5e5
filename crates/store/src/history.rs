//! A source's history: its revisions, the transitions of its intents and the remediations
//! of its objects, one timeline.

use super::intents::{conversion_error, IntentAction};
use super::{revisions, ts_from_db, RevisionInfo, StoreError};
use jiff::Timestamp;
use rusqlite::Connection;
use serde::Serialize;

/// One transition of one intent, for the source's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntentEvent {
    pub intent_id: i64,
    pub source: String,
    pub at: Timestamp,
    pub action: IntentAction,
    pub actor: String,
    pub detail: String,
}

/// Transitions of `source`'s intents, newest first.
fn events(conn: &Connection, source: &str) -> Result<Vec<IntentEvent>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT intent_id, source, at, action, actor, detail FROM intent_events
         WHERE source = ?1 ORDER BY id DESC",
    )?;
    let rows = stmt.query_map([source], |row| {
        let action: String = row.get(3)?;
        Ok(IntentEvent {
            intent_id: row.get(0)?,
            source: row.get(1)?,
            at: ts_from_db(row, 2)?,
            action: IntentAction::from_db(&action)
                .ok_or_else(|| conversion_error(3, format!("unknown action {action:?}")))?,
            actor: row.get(4)?,
            detail: row.get(5)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One line of a source's history: a revision or an intent transition.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HistoryEntry {
    Revision(RevisionInfo),
    Intent(IntentEvent),
    /// The daemon re-applied (or failed to re-apply) one object of the source.
    Remediation(super::RemediationEvent),
}

impl HistoryEntry {
    pub fn at(&self) -> Timestamp {
        match self {
            HistoryEntry::Revision(r) => r.committed_at,
            HistoryEntry::Intent(e) => e.at,
            HistoryEntry::Remediation(e) => e.at,
        }
    }
}

/// Revisions and intent transitions of `source`, newest first; at the same instant a
/// revision comes before the intent commit that created it.
pub(super) fn timeline(conn: &Connection, source: &str) -> Result<Vec<HistoryEntry>, StoreError> {
    let tx = conn.unchecked_transaction()?;
    let mut entries: Vec<HistoryEntry> = revisions::history(&tx, source)?
        .into_iter()
        .map(HistoryEntry::Revision)
        .chain(events(&tx, source)?.into_iter().map(HistoryEntry::Intent))
        .chain(
            super::remediations::events(&tx, source)?
                .into_iter()
                .map(HistoryEntry::Remediation),
        )
        .collect();
    tx.finish()?;
    // Stable: within each kind the order by id (newest first) is kept.
    entries.sort_by(|a, b| {
        b.at().cmp(&a.at()).then_with(|| {
            matches!(a, HistoryEntry::Revision(_))
                .cmp(&matches!(b, HistoryEntry::Revision(_)))
                .reverse()
        })
    });
    Ok(entries)
}
