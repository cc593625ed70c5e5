//! The drift history: every episode with its object, class, when it opened and closed, who
//! changed the drifting fields and how it ended (`GET /history`, `driftd history --drift`);
//! and its retention, closed episodes deleted past a configured age in small batches.

use super::episodes::{Changer, EpisodeEnd};
use super::{key_from_db, ts_from_db, ts_to_db, Store, StoreError};
use driftd_core::report::DriftFilter;
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use rusqlite::types::Value as SqlValue;
use serde::{Deserialize, Serialize};

/// One drift episode as the history tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    pub source: String,
    /// The object (`group`, `kind`, `namespace`, `name`).
    pub object: ObjectKey,
    pub class: String,
    pub opened_at: Timestamp,
    /// When the engine last saw it drifting (moved once a minute while open).
    pub last_seen: Timestamp,
    /// Absent while the episode is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<Timestamp>,
    /// The changed fields (RFC 6901 pointers) as last recorded.
    pub paths: Vec<String>,
    /// Who changed the drifting fields: their field managers and when they wrote; empty
    /// when not known (episodes recorded before driftd kept it, or a `missing` object).
    #[serde(default)]
    pub who: Vec<Changer>,
    /// How it ended; absent while open, or for episodes closed before driftd recorded it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<EpisodeEnd>,
    /// Who ended it, when known (the remediating replica, the reverting field manager).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_by: Option<String>,
}

/// Which episodes a history query wants: `/drift`'s filters, and a time window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryQuery {
    pub filter: DriftFilter,
    /// Episodes still open at or closed after this instant.
    pub since: Option<Timestamp>,
    /// Episodes opened at or before this instant.
    pub until: Option<Timestamp>,
    /// At most this many, newest first (0: all).
    pub limit: usize,
}

/// Timestamps are stored as RFC 3339 text of varying precision, which orders by text only to
/// the second: SQL narrows by text with a second's slack, Rust decides exactly.
fn slack(ts: Timestamp, seconds: i64) -> String {
    ts_to_db(
        ts.checked_add(jiff::SignedDuration::from_secs(seconds))
            .unwrap_or(ts),
    )
}

impl Store {
    /// The episodes `query` selects, newest opened first (at most `query.limit`).
    pub fn episode_history(&self, query: &HistoryQuery) -> Result<Vec<EpisodeRecord>, StoreError> {
        let mut sql = String::from(
            "SELECT grp, kind, namespace, name, source, class, first_seen, last_seen,
                    resolved_at, paths, who, ended, ended_by
             FROM episodes WHERE 1 = 1",
        );
        let mut args: Vec<SqlValue> = Vec::new();
        let mut arg = |sql: &mut String, clause: &str, value: String| {
            args.push(SqlValue::Text(value));
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        };
        let filter = &query.filter;
        if let Some(source) = &filter.source {
            arg(&mut sql, " AND source = ?", source.clone());
        }
        if let Some(namespace) = &filter.namespace {
            arg(&mut sql, " AND namespace = ?", namespace.clone());
        }
        if let Some(kind) = &filter.kind {
            arg(&mut sql, " AND kind = ?", kind.clone());
        }
        if let Some(class) = filter.class {
            arg(&mut sql, " AND class = ?", class.as_str().to_string());
        }
        if let Some(since) = query.since {
            arg(
                &mut sql,
                " AND (resolved_at IS NULL OR resolved_at >= ?)",
                slack(since, -1),
            );
        }
        if let Some(until) = query.until {
            arg(&mut sql, " AND first_seen <= ?", slack(until, 1));
        }
        sql.push_str(" ORDER BY first_seen DESC, id DESC");
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), record_from_row)?;
        let mut records = Vec::new();
        for record in rows {
            let record = record?;
            let in_window = query
                .since
                .is_none_or(|since| record.closed_at.is_none_or(|c| c >= since))
                && query.until.is_none_or(|until| record.opened_at <= until);
            if in_window {
                records.push(record);
                if records.len() == query.limit {
                    break;
                }
            }
        }
        Ok(records)
    }

    /// Deletes at most `limit` episodes closed before `before`, oldest first; returns how
    /// many. Called in small batches so that no write holds the database for long (the
    /// engine writes episodes through its own connection).
    pub fn prune_episodes(&self, before: Timestamp, limit: usize) -> Result<usize, StoreError> {
        let mut prune = self.conn.prepare_cached(
            "DELETE FROM episodes WHERE id IN (
                 SELECT id FROM episodes WHERE resolved_at IS NOT NULL AND resolved_at < ?1
                 ORDER BY resolved_at LIMIT ?2)",
        )?;
        let pruned = prune.execute(rusqlite::params![ts_to_db(before), limit as i64])?;
        let mut adoptions = self.conn.prepare_cached(
            "DELETE FROM adoptions WHERE id IN (
                 SELECT id FROM adoptions WHERE at < ?1 ORDER BY id LIMIT ?2)",
        )?;
        adoptions.execute(rusqlite::params![ts_to_db(before), limit as i64])?;
        Ok(pruned)
    }
}

fn record_from_row(row: &rusqlite::Row) -> rusqlite::Result<EpisodeRecord> {
    let json_error = |idx, e: serde_json::Error| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    };
    let paths: String = row.get(9)?;
    let who: Option<String> = row.get(10)?;
    let ended: Option<String> = row.get(11)?;
    Ok(EpisodeRecord {
        object: key_from_db(row, 0)?,
        source: row.get(4)?,
        class: row.get(5)?,
        opened_at: ts_from_db(row, 6)?,
        last_seen: ts_from_db(row, 7)?,
        closed_at: match row.get::<_, Option<String>>(8)? {
            None => None,
            Some(_) => Some(ts_from_db(row, 8)?),
        },
        paths: serde_json::from_str(&paths).map_err(|e| json_error(9, e))?,
        who: match who {
            Some(text) => serde_json::from_str(&text).map_err(|e| json_error(10, e))?,
            None => Vec::new(),
        },
        ended: ended.as_deref().and_then(EpisodeEnd::from_db),
        ended_by: row.get(12)?,
    })
}
