//! Rewrites of every stored Secret: the migration that replaces the values older versions
//! stored in clear by their hashes (schema step 3), and `rekey`, which seals every value
//! under the current encryption key and rehashes them under the current hash key. Both run
//! inside one write transaction, and recompute the content hash of every revision and
//! intent, since it covers the stored form.

use super::revisions::content_hash;
use super::secrets::{
    configured_hash_key, record_hash_key, recorded_hash_key, seal, sealed_by_current, stored_form,
    unseal, unseal_error, HashKey, SecretKeys,
};
use super::{key_from_db, ns_to_db, StoreError};
use driftd_core::diff::secret::{holds_hashes, restore_values};
use driftd_k8s::ObjectKey;
use rusqlite::{params, Connection};
use serde_json::Value;
use std::collections::BTreeMap;

/// The two tables that hold objects: the table, the column naming the owner, how to name
/// the owner in messages, and how to reach that name.
const TABLES: [(&str, &str, &str, &str); 2] = [
    (
        "revision_objects",
        "revision_id",
        "'revision ' || o.revision_id || ' of source ' || s.name",
        "revision_objects o JOIN revisions r ON r.id = o.revision_id
         JOIN sources s ON s.id = r.source_id",
    ),
    (
        "intent_objects",
        "intent_id",
        "'intent ' || o.intent_id || ' of source ' || i.source",
        "intent_objects o JOIN intents i ON i.id = o.intent_id",
    ),
];

/// One stored Secret.
pub(crate) struct Row {
    table: &'static str,
    owner_column: &'static str,
    owner: i64,
    /// "revision 3 of source app", for messages.
    pub place: String,
    pub key: ObjectKey,
    pub body: Value,
    pub sealed: Option<Vec<u8>>,
}

/// Every stored Secret, of revisions and intents alike.
pub(crate) fn secret_rows(conn: &Connection) -> Result<Vec<Row>, StoreError> {
    let mut rows = Vec::new();
    for (table, owner_column, place, from) in TABLES {
        let mut stmt = conn.prepare(&format!(
            "SELECT o.{owner_column}, {place}, o.grp, o.kind, o.namespace, o.name, o.body,
                    o.sealed
             FROM {from} WHERE o.kind = 'Secret' ORDER BY 1, 3, 4, 5, 6"
        ))?;
        let found = stmt.query_map([], |r| {
            let body: String = r.get(6)?;
            Ok(Row {
                table,
                owner_column,
                owner: r.get(0)?,
                place: r.get(1)?,
                key: key_from_db(r, 2)?,
                body: serde_json::from_str(&body).map_err(|e| {
                    rusqlite::Error::FromSqlConversionFailure(
                        6,
                        rusqlite::types::Type::Text,
                        Box::new(e),
                    )
                })?,
                sealed: r.get(7)?,
            })
        })?;
        rows.extend(found.collect::<rusqlite::Result<Vec<_>>>()?);
    }
    Ok(rows)
}

/// Writes a rewritten Secret back where it was read.
pub(crate) fn update(conn: &Connection, row: &Row) -> Result<(), StoreError> {
    conn.execute(
        &format!(
            "UPDATE {} SET body = ?1, sealed = ?2
             WHERE {} = ?3 AND grp = ?4 AND kind = ?5 AND namespace = ?6 AND name = ?7",
            row.table, row.owner_column
        ),
        params![
            row.body.to_string(),
            row.sealed,
            row.owner,
            row.key.group,
            row.key.kind,
            ns_to_db(&row.key.namespace),
            row.key.name
        ],
    )?;
    Ok(())
}

/// Recomputes `content_hash` of every revision and intent from their stored objects.
pub(crate) fn rehash_contents(conn: &Connection) -> Result<(), StoreError> {
    for (owners, objects, owner_column) in [
        ("revisions", "revision_objects", "revision_id"),
        ("intents", "intent_objects", "intent_id"),
    ] {
        let ids: Vec<i64> = conn
            .prepare(&format!("SELECT id FROM {owners}"))?
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut select = conn.prepare(&format!(
            "SELECT grp, kind, namespace, name, body FROM {objects} WHERE {owner_column} = ?1"
        ))?;
        for id in ids {
            let stored = select
                .query_map([id], |r| {
                    let body: String = r.get(4)?;
                    Ok((key_from_db(r, 0)?, body))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let parsed = stored
                .into_iter()
                .map(|(key, body)| Ok((key, serde_json::from_str::<Value>(&body)?)))
                .collect::<Result<Vec<_>, serde_json::Error>>()
                .map_err(|e| StoreError::Schema(format!("stored object of {owners} {id}: {e}")))?;
            conn.execute(
                &format!("UPDATE {owners} SET content_hash = ?1 WHERE id = ?2"),
                params![content_hash(parsed.iter().map(|(k, v)| (k, v))), id],
            )?;
        }
    }
    Ok(())
}

/// Schema step 3: every Secret value stored in clear by an older driftd is replaced by its
/// hash under the hash key this process is configured with, and sealed when an encryption
/// key is configured too. Without one the values are gone from the database for good (the
/// manifests still hold them); with one, remediation keeps working for old revisions.
/// Returns whether anything was rewritten.
pub(crate) fn hash_stored_values(
    conn: &Connection,
    keys: &SecretKeys,
    database: &str,
) -> Result<bool, StoreError> {
    let hash = configured_hash_key(conn, keys, database)?;
    record_hash_key(conn, &hash)?;
    let rows = secret_rows(conn)?;
    let mut rewrote = false;
    for mut row in rows {
        let (body, sealed) = stored_form(&hash, keys.encryption.as_ref(), &row.key, &row.body);
        if *body != row.body {
            row.body = body.into_owned();
            row.sealed = sealed;
            update(conn, &row)?;
            rewrote = true;
        }
    }
    if rewrote {
        rehash_contents(conn)?;
    }
    Ok(rewrote)
}

/// What [`rekey`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RekeyReport {
    /// Stored Secrets whose values are now sealed under the current encryption key (they
    /// were sealed under a previous one).
    pub resealed: usize,
    /// Stored Secrets already sealed under the current key.
    pub already_current: usize,
    /// Stored Secrets whose values were never kept (only their hashes are stored).
    pub hashes_only: usize,
    /// Whether the hashes were remade under a new hash key.
    pub rehashed: bool,
}

/// Seals every stored value under the current encryption key and, when the configured hash
/// key is not the one the stored hashes were made with, rehashes every value under it. One
/// transaction: either every Secret is rewritten or none.
pub(crate) fn rekey(
    conn: &Connection,
    keys: &SecretKeys,
    database: &str,
) -> Result<RekeyReport, StoreError> {
    let hash = configured_hash_key(conn, keys, database)?;
    let rows = secret_rows(conn)?;
    let rehash = recorded_hash_key(conn)?.is_none_or(|id| !hash.has_id(&id));
    if keys.encryption.is_none() && rows.iter().any(|r| r.sealed.is_some()) {
        return Err(StoreError::SecretValues(
            "rekey seals the stored Secret values under the current encryption key, and none \
             is configured: set secrets.encryption_key_file (DRIFTD_SECRETS_ENCRYPTION_KEY_FILE) \
             to the new key and list the old one in secrets.previous_encryption_key_files"
                .into(),
        ));
    }
    let mut report = RekeyReport {
        rehashed: rehash,
        ..RekeyReport::default()
    };
    let mut unrecoverable = Vec::new();
    for mut row in rows {
        let values = match &row.sealed {
            Some(blob) => Some(
                unseal(keys, &row.key, blob)
                    .map_err(|why| unseal_error(why, &row.key, &row.place))?,
            ),
            None => None,
        };
        let current = row
            .sealed
            .as_deref()
            .is_some_and(|b| sealed_by_current(keys, b));
        let mut changed = false;
        if rehash && holds_hashes(&row.body) {
            match &values {
                Some(values) => {
                    rehash_row(&mut row, &hash, values)?;
                    changed = true;
                }
                None => unrecoverable.push(format!("{} ({})", row.key, row.place)),
            }
        }
        match (&values, &keys.encryption) {
            (Some(_), _) if current => report.already_current += 1,
            (Some(values), Some(enc)) => {
                row.sealed = Some(seal(enc, &row.key, values));
                report.resealed += 1;
                changed = true;
            }
            _ if holds_hashes(&row.body) => report.hashes_only += 1,
            _ => {}
        }
        if changed {
            update(conn, &row)?;
        }
    }
    if !unrecoverable.is_empty() {
        return Err(StoreError::SecretValues(format!(
            "cannot rehash the stored Secrets under the new hash key: {} {} only as hashes \
             under the old key (no encryption key was configured when {} committed): {}. \
             Keep the old hash key, or commit their manifests again with an encryption key \
             configured before changing it",
            unrecoverable.len(),
            if unrecoverable.len() == 1 {
                "is stored"
            } else {
                "are stored"
            },
            if unrecoverable.len() == 1 {
                "it was"
            } else {
                "they were"
            },
            list(&unrecoverable)
        )));
    }
    if rehash {
        record_hash_key(conn, &hash)?;
        rehash_contents(conn)?;
    }
    Ok(report)
}

/// Remakes the hashes of one stored Secret from its values.
fn rehash_row(
    row: &mut Row,
    hash: &HashKey,
    values: &BTreeMap<String, Value>,
) -> Result<(), StoreError> {
    let mut body = row.body.clone();
    if !restore_values(&mut body, values) {
        return Err(StoreError::SecretValues(format!(
            "{} ({}): its encrypted values do not match its stored hashes",
            row.key, row.place
        )));
    }
    row.body = stored_form(hash, None, &row.key, &body).0.into_owned();
    Ok(())
}

/// The first few items, and how many more.
fn list(items: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

/// The values of a stored Secret, opened, for the object `body` stored with `sealed`.
pub(crate) fn with_values(
    keys: &SecretKeys,
    key: &ObjectKey,
    place: &str,
    mut body: Value,
    sealed: Option<&[u8]>,
) -> Result<Value, StoreError> {
    if !holds_hashes(&body) {
        return Ok(body);
    }
    let Some(blob) = sealed else {
        return Err(StoreError::SecretValues(format!(
            "{key} ({place}): its values are stored only as keyed hashes, because no encryption \
             key (secrets.encryption_key_file, DRIFTD_SECRETS_ENCRYPTION_KEY_FILE) was configured \
             when it was committed; restoring it needs its manifest again: apply the manifest, \
             or commit it again with an encryption key configured"
        )));
    };
    if keys.encryption.is_none() && keys.previous.is_empty() {
        return Err(StoreError::SecretValues(format!(
            "{key} ({place}): its values are stored encrypted, and no encryption key is \
             configured to open them: set secrets.encryption_key_file \
             (DRIFTD_SECRETS_ENCRYPTION_KEY_FILE), or apply its manifest again"
        )));
    }
    let values = unseal(keys, key, blob).map_err(|why| unseal_error(why, key, place))?;
    if !restore_values(&mut body, &values) {
        return Err(StoreError::SecretValues(format!(
            "{key} ({place}): its encrypted values do not match its stored hashes"
        )));
    }
    Ok(body)
}
