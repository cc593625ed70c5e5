//! Drift episodes: when an object started drifting, what about it, and when it stopped.
//! Kept in the database so "drifting since" survives daemon restarts.

use super::{key_from_db, ns_to_db, ts_from_db, ts_to_db, Episode, Store, StoreError};
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde::{Deserialize, Serialize};

const COLUMNS: &str =
    "grp, kind, namespace, name, source, class, first_seen, last_seen, resolved_at, paths";

fn episode_from_row(row: &rusqlite::Row) -> rusqlite::Result<Episode> {
    let paths: String = row.get(9)?;
    let paths: Vec<String> = serde_json::from_str(&paths).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(9, rusqlite::types::Type::Text, Box::new(e))
    })?;
    let resolved_at = match row.get::<_, Option<String>>(8)? {
        None => None,
        Some(_) => Some(ts_from_db(row, 8)?),
    };
    Ok(Episode {
        key: key_from_db(row, 0)?,
        source: row.get(4)?,
        class: row.get(5)?,
        first_seen: ts_from_db(row, 6)?,
        last_seen: ts_from_db(row, 7)?,
        resolved_at,
        paths,
    })
}

fn open_episode(conn: &Connection, key: &ObjectKey) -> rusqlite::Result<Option<Episode>> {
    conn.query_row(
        &format!(
            "SELECT {COLUMNS} FROM episodes WHERE resolved_at IS NULL
             AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4"
        ),
        params![key.group, key.kind, ns_to_db(&key.namespace), key.name],
        episode_from_row,
    )
    .optional()
}

/// How a drift episode ended, derived by the engine from what it knows as the episode
/// closes (docs/history.md lists the rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeEnd {
    /// The live object went back to its desired state, by someone other than driftd.
    Reverted,
    /// The live object went back to its desired state through driftd's own field manager
    /// (`driftd reconcile` or `driftd apply`), with no remediation recorded.
    Reconciled,
    /// driftd's automatic remediation (`remediation = "auto"`) re-applied the object.
    Remediated,
    /// A new revision made the desired state equal the live object.
    Committed,
    /// A new revision made the desired state equal the live object, and `driftd adopt
    /// --write` had written the object's manifest since the drift began (`by`: who ran it).
    Adopted,
    /// The live object was deleted (its drift became `missing`, or an object only an intent
    /// wanted is gone).
    Deleted,
    /// The object left the desired state (removed from its source, or its source deleted).
    NoLongerDesired,
    /// The object kept drifting, in another class: a new episode began.
    ClassChanged,
}

impl EpisodeEnd {
    pub const ALL: [EpisodeEnd; 8] = [
        EpisodeEnd::Reverted,
        EpisodeEnd::Reconciled,
        EpisodeEnd::Remediated,
        EpisodeEnd::Committed,
        EpisodeEnd::Adopted,
        EpisodeEnd::Deleted,
        EpisodeEnd::NoLongerDesired,
        EpisodeEnd::ClassChanged,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EpisodeEnd::Reverted => "reverted",
            EpisodeEnd::Reconciled => "reconciled",
            EpisodeEnd::Remediated => "remediated",
            EpisodeEnd::Committed => "committed",
            EpisodeEnd::Adopted => "adopted",
            EpisodeEnd::Deleted => "deleted",
            EpisodeEnd::NoLongerDesired => "no_longer_desired",
            EpisodeEnd::ClassChanged => "class_changed",
        }
    }

    pub(crate) fn from_db(text: &str) -> Option<EpisodeEnd> {
        EpisodeEnd::ALL.into_iter().find(|e| e.as_str() == text)
    }
}

/// One writer of a drifting field: its field manager and when it wrote, as the live
/// object's `managedFields` say. A JSON object in the `who` column, so that what else is
/// learnt about the person (an audit event's user) can be added beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changer {
    /// Empty for the person who deleted a missing object (no field manager names them).
    pub manager: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<String>,
    /// The person behind the write (`user.username` of the audit event it was joined to).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

/// How an episode ends and who ended it, when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending<'a> {
    pub how: EpisodeEnd,
    pub by: Option<&'a str>,
}

impl Ending<'_> {
    pub fn new(how: EpisodeEnd) -> Ending<'static> {
        Ending { how, by: None }
    }
}

/// One change to an object's drift episode. A settle step writes all of its changes in one
/// transaction: at 100,000 objects a transaction per episode was most of the engine's time
/// per watch event.
#[derive(Debug, Clone, Copy)]
pub enum EpisodeWrite<'a> {
    /// `key` drifts (`class`, at `paths`, changed by `who`) as of `at`: opens its episode, or
    /// updates the open one of the same class (its `first_seen` stays; `last_seen` only
    /// moves forward, should two watchers report out of order; `who` gains new managers); an
    /// open one of another class ends at `at` as `replaced` says (`deleted` for a drift that
    /// became `missing`, else `class_changed`).
    Drifting {
        key: &'a ObjectKey,
        source: &'a str,
        class: &'a str,
        at: Timestamp,
        paths: &'a [String],
        who: &'a [Changer],
        replaced: EpisodeEnd,
    },
    /// `key` stopped drifting at `at`: closes its open episode, if any, as `ending` says. A
    /// `reverted` or `reconciled` ending becomes `remediated` (by the remediation's actor)
    /// when driftd's remediation applied the object since the episode began.
    Resolved {
        key: &'a ObjectKey,
        at: Timestamp,
        ending: Ending<'a>,
    },
}

/// An episode a write opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedEpisode {
    pub source: String,
    pub class: String,
}

/// An episode a write closed, with its whole duration: `first_seen` is as stored, so an
/// episode an earlier run opened counts from when that run first saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedEpisode {
    pub source: String,
    pub class: String,
    pub first_seen: Timestamp,
    pub resolved_at: Timestamp,
    pub ended: EpisodeEnd,
}

impl ClosedEpisode {
    /// How long the episode lasted, in seconds (0 if the clock went back).
    pub fn seconds(&self) -> f64 {
        let d = self.resolved_at.duration_since(self.first_seen);
        d.as_secs_f64().max(0.0)
    }
}

/// What a batch of writes opened and closed (the counters and histogram of drift as a
/// service level count these).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpisodeChanges {
    pub opened: Vec<OpenedEpisode>,
    pub closed: Vec<ClosedEpisode>,
}

/// Adds the managers of `new` that `old` (JSON text) does not have, newest time kept, and
/// the person behind a manager's newest write once an audit event named them.
fn merge_who(old: Option<&str>, new: &[Changer]) -> Option<String> {
    let mut who: Vec<Changer> = old
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default();
    for changer in new {
        match who.iter_mut().find(|c| c.manager == changer.manager) {
            Some(known) if changer.changed_at > known.changed_at => *known = changer.clone(),
            Some(known) if changer.changed_at == known.changed_at && changer.user.is_some() => {
                known.user = changer.user.clone()
            }
            Some(_) => {}
            None => who.push(changer.clone()),
        }
    }
    (!who.is_empty()).then(|| serde_json::to_string(&who).expect("changers serialize"))
}

fn write_episodes(
    conn: &Connection,
    writes: &[EpisodeWrite],
) -> Result<EpisodeChanges, StoreError> {
    let mut changes = EpisodeChanges::default();
    if writes.is_empty() {
        return Ok(changes);
    }
    // IMMEDIATE: a read-then-write transaction must hold the write lock from the start, or
    // a concurrent writer makes its upgrade fail with SQLITE_BUSY without waiting.
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
    {
        let mut open = tx.prepare_cached(
            "SELECT last_seen, class, who FROM episodes WHERE resolved_at IS NULL
             AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4",
        )?;
        let mut update = tx.prepare_cached(
            "UPDATE episodes SET source = ?5, class = ?6, paths = ?7, last_seen = ?8, who = ?9
             WHERE resolved_at IS NULL AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4",
        )?;
        let mut insert = tx.prepare_cached(
            "INSERT INTO episodes (grp, kind, namespace, name, source, class, first_seen, last_seen, resolved_at, paths, who)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?8, ?8, NULL, ?7, ?9)",
        )?;
        let mut resolve = tx.prepare_cached(
            "UPDATE episodes SET resolved_at = ?5, ended = ?6, ended_by = ?7
             WHERE resolved_at IS NULL AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4
             RETURNING source, class, first_seen",
        )?;
        let mut remediated = tx.prepare_cached(
            "SELECT r.actor FROM remediations r JOIN episodes e
               ON e.grp = r.grp AND e.kind = r.kind AND e.namespace = r.namespace
              AND e.name = r.name
             WHERE e.resolved_at IS NULL AND r.outcome = 'applied' AND r.at >= e.first_seen
               AND r.grp = ?1 AND r.kind = ?2 AND r.namespace = ?3 AND r.name = ?4
             ORDER BY r.id DESC LIMIT 1",
        )?;
        let mut adopted = tx.prepare_cached(
            "SELECT a.actor FROM adoptions a JOIN episodes e
               ON e.grp = a.grp AND e.kind = a.kind AND e.namespace = a.namespace
              AND e.name = a.name
             WHERE e.resolved_at IS NULL AND a.at >= e.first_seen
               AND a.grp = ?1 AND a.kind = ?2 AND a.namespace = ?3 AND a.name = ?4
             ORDER BY a.id DESC LIMIT 1",
        )?;
        let mut close = |key: &ObjectKey,
                         at: Timestamp,
                         ending: Ending|
         -> Result<Option<ClosedEpisode>, StoreError> {
            let namespace = ns_to_db(&key.namespace);
            let by_driftd = matches!(ending.how, EpisodeEnd::Reverted | EpisodeEnd::Reconciled);
            let remediation: Option<String> = match by_driftd {
                true => remediated
                    .query_row(params![key.group, key.kind, namespace, key.name], |r| {
                        r.get(0)
                    })
                    .optional()?,
                false => None,
            };
            // A commit of files `driftd adopt` wrote since the drift began: adopted.
            let adoption: Option<String> = match ending.how {
                EpisodeEnd::Committed => adopted
                    .query_row(params![key.group, key.kind, namespace, key.name], |r| {
                        r.get(0)
                    })
                    .optional()?,
                _ => None,
            };
            let (how, by) = match (&remediation, &adoption) {
                (Some(actor), _) => (EpisodeEnd::Remediated, Some(actor.as_str())),
                (None, Some(actor)) => (EpisodeEnd::Adopted, Some(actor.as_str())),
                (None, None) => (ending.how, ending.by),
            };
            let closed = resolve
                .query_row(
                    params![
                        key.group,
                        key.kind,
                        namespace,
                        key.name,
                        ts_to_db(at),
                        how.as_str(),
                        by
                    ],
                    |row| {
                        Ok(ClosedEpisode {
                            source: row.get(0)?,
                            class: row.get(1)?,
                            first_seen: ts_from_db(row, 2)?,
                            resolved_at: at,
                            ended: how,
                        })
                    },
                )
                .optional()?;
            Ok(closed)
        };
        for write in writes {
            match *write {
                EpisodeWrite::Drifting {
                    key,
                    source,
                    class,
                    at,
                    paths,
                    who,
                    replaced,
                } => {
                    let paths = serde_json::to_string(paths).expect("a list of strings serializes");
                    let namespace = ns_to_db(&key.namespace);
                    let found = open
                        .query_row(params![key.group, key.kind, namespace, key.name], |row| {
                            Ok((
                                ts_from_db(row, 0)?,
                                row.get::<_, String>(1)?,
                                row.get::<_, Option<String>>(2)?,
                            ))
                        })
                        .optional()?;
                    // Another class is another episode: the open one ends as this begins.
                    let found = match found {
                        Some((_, open_class, _)) if open_class != class => {
                            changes
                                .closed
                                .extend(close(key, at, Ending::new(replaced))?);
                            None
                        }
                        other => other,
                    };
                    // Both take the key, source, class, paths, a time (`last_seen`, and
                    // `first_seen` too for a new episode) and who.
                    let (write, time, who) = match found {
                        Some((seen, _, old_who)) => (
                            &mut update,
                            seen.max(at),
                            merge_who(old_who.as_deref(), who),
                        ),
                        None => {
                            changes.opened.push(OpenedEpisode {
                                source: source.to_string(),
                                class: class.to_string(),
                            });
                            (&mut insert, at, merge_who(None, who))
                        }
                    };
                    write.execute(params![
                        key.group,
                        key.kind,
                        namespace,
                        key.name,
                        source,
                        class,
                        paths,
                        ts_to_db(time),
                        who
                    ])?;
                }
                EpisodeWrite::Resolved { key, at, ending } => {
                    changes.closed.extend(close(key, at, ending)?);
                }
            }
        }
    }
    tx.commit()?;
    Ok(changes)
}

impl Store {
    /// Episodes not yet resolved, oldest first.
    pub fn open_episodes(&self) -> Result<Vec<Episode>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT {COLUMNS} FROM episodes WHERE resolved_at IS NULL ORDER BY id"
        ))?;
        let rows = stmt.query_map([], episode_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Opens an episode, or updates class/paths/last_seen of the open one for `key`.
    ///
    /// `first_seen` of an open episode never changes, so a restarted daemon keeps
    /// reporting "drifting since" the moment drift was first seen.
    pub fn record_drift(
        &self,
        key: &ObjectKey,
        source: &str,
        class: &str,
        at: Timestamp,
        paths: &[String],
    ) -> Result<Episode, StoreError> {
        self.write_episodes(&[EpisodeWrite::Drifting {
            key,
            source,
            class,
            at,
            paths,
            who: &[],
            replaced: EpisodeEnd::ClassChanged,
        }])?;
        Ok(open_episode(&self.conn, key)?.expect("the open episode was just written"))
    }

    /// Closes the open episode of `key`, if any, as `reverted` by someone unknown.
    pub fn resolve_drift(&self, key: &ObjectKey, at: Timestamp) -> Result<(), StoreError> {
        self.write_episodes(&[EpisodeWrite::Resolved {
            key,
            at,
            ending: Ending::new(EpisodeEnd::Reverted),
        }])
        .map(drop)
    }

    /// Moves `last_seen` to `at` for at most `limit` open episodes, those with an id above
    /// `after`, in id order; returns the last id moved (`None`: none was left). Called in
    /// steps, each a short write: one statement over 50,000 open episodes held the engine's
    /// thread for 90-210 ms, which showed as the latency figure's p99.
    pub fn touch_open_episodes(
        &self,
        at: Timestamp,
        after: i64,
        limit: usize,
    ) -> Result<Option<i64>, StoreError> {
        let mut touch = self.conn.prepare_cached(
            "UPDATE episodes SET last_seen = ?1 WHERE id IN (
                 SELECT id FROM episodes WHERE resolved_at IS NULL AND id > ?2
                 ORDER BY id LIMIT ?3)
             RETURNING id",
        )?;
        let ids = touch.query_map(params![ts_to_db(at), after, limit as i64], |r| {
            r.get::<_, i64>(0)
        })?;
        let mut last = None;
        for id in ids {
            last = last.max(Some(id?));
        }
        Ok(last)
    }

    /// Records that `driftd adopt --write` (run by `actor`) wrote `objects` of `source`, as
    /// committed at `revision`, back into their manifests: the commit that then ends their
    /// drift ends it as `adopted` rather than `committed`.
    pub fn record_adoptions(
        &self,
        source: &str,
        revision: i64,
        objects: &[ObjectKey],
        at: Timestamp,
        actor: &str,
    ) -> Result<(), StoreError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO adoptions (source, revision_id, grp, kind, namespace, name, at, actor)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for key in objects {
                insert.execute(params![
                    source,
                    revision,
                    key.group,
                    key.kind,
                    ns_to_db(&key.namespace),
                    key.name,
                    ts_to_db(at),
                    actor
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Adds what is now known of who changed each object to its open episode, if it has
    /// one: audit events often arrive after the drift they explain was recorded (the
    /// webhook backend batches for up to 30 s). An object without an open episode is left
    /// alone: its episode, once recorded, carries its changers from the start.
    pub fn add_episode_changers(
        &self,
        changers: &[(&ObjectKey, Vec<Changer>)],
    ) -> Result<(), StoreError> {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        {
            let mut open = tx.prepare_cached(
                "SELECT id, who FROM episodes WHERE resolved_at IS NULL
                 AND grp = ?1 AND kind = ?2 AND namespace = ?3 AND name = ?4",
            )?;
            let mut update = tx.prepare_cached("UPDATE episodes SET who = ?2 WHERE id = ?1")?;
            for (key, who) in changers {
                let found = open
                    .query_row(
                        params![key.group, key.kind, ns_to_db(&key.namespace), key.name],
                        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, Option<String>>(1)?)),
                    )
                    .optional()?;
                if let Some((id, old)) = found {
                    update.execute(params![id, merge_who(old.as_deref(), who)])?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Writes several episode changes in one transaction: all or none. Returns the
    /// episodes it opened and closed.
    pub fn write_episodes(&self, writes: &[EpisodeWrite]) -> Result<EpisodeChanges, StoreError> {
        write_episodes(&self.conn, writes)
    }
}
