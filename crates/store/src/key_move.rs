//! Moving the hash key out of the database. A database created without a configured hash key
//! keeps a random installation key in `meta`, next to the hashes it keys: a copy of the file
//! (a backup, a volume snapshot) is then enough to test guesses of short Secret values
//! offline. Once a hash key is configured outside the database (`secrets.hash_key_secret`,
//! `secrets.hash_key_file`), [`Store::move_hash_key`] rehashes every stored value under it
//! and deletes the installation key, in one transaction: a crash midway leaves the database
//! as it was (still usable with its own key), and a second run finds nothing to do.
//!
//! A stored value is only its hash, so rehashing needs the value itself. It comes from its
//! sealed copy when an encryption key kept one; else from the live Secret, whose value is
//! taken only where it hashes, under the old key, to the stored hash (then it *is* the
//! committed value). A value neither gives (a Secret that drifts or is gone, an old
//! revision's value changed since) cannot be rehashed, and the old key is not kept for it:
//! its hash is replaced by a placeholder no live value hashes to, so it reads as changed
//! until its manifest is committed again.

use super::rewrite::{rehash_contents, secret_rows, update, Row};
use super::secrets::{
    installation_key, key_id, record_hash_key, recorded_hash_key, secrets_stored, unseal,
    unseal_error, HashKey, SecretKeys, Unseal,
};
use super::{checkpoint, Store, StoreError, BUSY_TIMEOUT};
use base64::Engine as _;
use driftd_core::diff::pointer::{escape, unescape};
use driftd_core::diff::secret::{
    hash_values, holds_hashes, is_stored_hash, restore_values, STORED_HASH,
};
use driftd_k8s::ObjectKey;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use zeroize::Zeroizing;

/// The annotation `kubectl apply` writes, hashed at rest like a value (it embeds one).
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A move of the hash key the database still has to make, and what it needs from the cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyMove {
    /// Stored Secrets whose values no sealed copy holds: their live objects are the only
    /// place the values can be recovered from (by name; each once).
    pub live_needed: Vec<ObjectKey>,
}

/// What [`Store::move_hash_key`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyMoveReport {
    /// Stored Secrets rehashed from their sealed values.
    pub from_sealed: usize,
    /// Stored Secrets rehashed from the live Secret, which holds their committed values.
    pub from_live: usize,
    /// Stored Secrets with a value recovered from nowhere, as "Secret app/db (revision 3 of
    /// source app)": they read as changed until committed again.
    pub unrecoverable: Vec<String>,
    /// Whether the installation key was deleted from the database.
    pub key_removed: bool,
}

impl KeyMoveReport {
    /// Whether the move rewrote anything.
    pub fn changed(&self) -> bool {
        self.key_removed
            || self.from_sealed > 0
            || self.from_live > 0
            || !self.unrecoverable.is_empty()
    }
}

impl Store {
    /// The move of the hash key this database still needs: `None` without a configured hash
    /// key (a local run keeps the installation key), when the database keeps no key of its own,
    /// or when its hashes are under another key kept outside it (that is a change of hash key,
    /// which `rekey` makes from sealed values, and which comparisons refuse until then).
    pub fn pending_key_move(&self) -> Result<Option<KeyMove>, StoreError> {
        let Some(state) = state(&self.conn, &self.keys)? else {
            return Ok(None);
        };
        let mut needed = BTreeSet::new();
        if state.rehash {
            for row in secret_rows(&self.conn)? {
                if holds_hashes(&row.body) && sealed_values(&self.keys, &row)?.is_none() {
                    needed.insert(row.key);
                }
            }
        }
        Ok(Some(KeyMove {
            live_needed: needed.into_iter().collect(),
        }))
    }

    /// The id of the key kept outside the database at `path` that its stored Secret hashes
    /// were made with, read without writing anything: `None` when there is no database there,
    /// it keeps its own key, or it holds no Secret. Before making a new outside key, `driftd
    /// serve` checks that no database needs the one it replaces.
    pub fn outside_key_of(path: &Path) -> Result<Option<String>, StoreError> {
        if !path.exists() {
            return Ok(None);
        }
        // Read-write (a WAL database may need its `-shm`), but never created.
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let has_meta: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta')",
            [],
            |r| r.get(0),
        )?;
        if !has_meta || installation_key(&conn)?.is_some() || !secrets_stored(&conn)? {
            return Ok(None);
        }
        Ok(recorded_hash_key(&conn)?.map(hex::encode))
    }

    /// Rehashes every stored Secret value under the configured hash key and deletes the
    /// installation key (see the module documentation), with `live` holding the cluster's
    /// Secrets by key (those [`Store::pending_key_move`] named; any missing is taken as gone).
    /// One transaction, then checkpointed so the file no longer holds the key or the old
    /// hashes. Does nothing when nothing is pending.
    pub fn move_hash_key(
        &mut self,
        live: &BTreeMap<ObjectKey, Value>,
    ) -> Result<KeyMoveReport, StoreError> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let report = run(&tx, &self.keys, live)?;
        tx.commit()?;
        if report.changed() && self.path.is_some() {
            checkpoint(&self.conn)?;
        }
        Ok(report)
    }
}

/// What a move starts from.
struct State {
    new: HashKey,
    installation: Zeroizing<Vec<u8>>,
    /// The stored hashes are under the installation key (and it is not the configured one).
    rehash: bool,
}

fn state(conn: &Connection, keys: &SecretKeys) -> Result<Option<State>, StoreError> {
    let (Some(configured), Some(installation)) = (&keys.hash, installation_key(conn)?) else {
        return Ok(None);
    };
    let new = HashKey::of(configured);
    let rehash = match recorded_hash_key(conn)? {
        Some(id) if new.has_id(&id) => false,
        Some(id) if id == key_id(&installation) => true,
        // Hashes under a third key: not this move's to change (comparisons refuse it).
        Some(_) => return Ok(None),
        None => false,
    };
    Ok(Some(State {
        new,
        installation,
        rehash,
    }))
}

/// The values of a stored Secret from its sealed copy, if one opens with the configured keys.
fn sealed_values(
    keys: &SecretKeys,
    row: &Row,
) -> Result<Option<BTreeMap<String, Value>>, StoreError> {
    match row
        .sealed
        .as_deref()
        .map(|blob| unseal(keys, &row.key, blob))
    {
        None | Some(Err(Unseal::NoKey(_))) => Ok(None),
        Some(Ok(values)) => Ok(Some(values)),
        Some(Err(why)) => Err(unseal_error(why, &row.key, &row.place)),
    }
}

fn run(
    conn: &Connection,
    keys: &SecretKeys,
    live: &BTreeMap<ObjectKey, Value>,
) -> Result<KeyMoveReport, StoreError> {
    let Some(state) = state(conn, keys)? else {
        return Ok(KeyMoveReport::default());
    };
    let mut report = KeyMoveReport::default();
    if state.rehash {
        let old = HashKey::of_bytes(state.installation.clone());
        for mut row in secret_rows(conn)? {
            if !holds_hashes(&row.body) {
                continue;
            }
            let hashed = hashed_pointers(&row.body);
            let sealed = sealed_values(keys, &row)?;
            let values = match (&sealed, live.get(&row.key)) {
                (Some(values), _) => values.clone(),
                (None, Some(live)) => from_live(&old, &row.body, live),
                (None, None) => BTreeMap::new(),
            };
            let mut body = row.body.clone();
            if !restore_values(&mut body, &values) {
                return Err(StoreError::SecretValues(format!(
                    "{} ({}): its encrypted values do not match its stored hashes",
                    row.key, row.place
                )));
            }
            hash_values(&state.new.bytes, &mut body);
            let lost: Vec<&String> = hashed.iter().filter(|p| !values.contains_key(*p)).collect();
            for pointer in &lost {
                let slot = body.pointer_mut(pointer).expect("a pointer of this body");
                *slot = placeholder(&state.new, slot);
            }
            match (lost.is_empty(), sealed.is_some()) {
                (false, _) => report
                    .unrecoverable
                    .push(format!("{} ({})", row.key, row.place)),
                (true, true) => report.from_sealed += 1,
                (true, false) => report.from_live += 1,
            }
            row.body = body;
            update(conn, &row)?;
        }
        record_hash_key(conn, &state.new)?;
        rehash_contents(conn)?;
    }
    conn.execute("DELETE FROM meta WHERE key = 'installation_key'", [])?;
    // The contents of the cluster's configs (`stale_config`) were hashed under the key that is
    // going: the daemon could no longer compare them, and they are the last thing it keyed.
    conn.execute("DELETE FROM config_contents", [])?;
    report.key_removed = true;
    Ok(report)
}

/// JSON pointers of the stored hashes in a stored Secret.
fn hashed_pointers(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for field in ["data", "stringData"] {
        if let Some(map) = body.get(field).and_then(Value::as_object) {
            out.extend(
                map.iter()
                    .filter(|(_, v)| is_stored_hash(v))
                    .map(|(k, _)| format!("/{field}/{}", escape(k))),
            );
        }
    }
    let annotation = format!("/metadata/annotations/{}", escape(LAST_APPLIED));
    if body.pointer(&annotation).is_some_and(is_stored_hash) {
        out.push(annotation);
    }
    out
}

/// The values of `live` that hash, under `old`, to what `stored` holds at the same place:
/// the committed values the live Secret still has. A `stringData` value is matched against
/// the live `data` value of its key (the API server folds one into the other).
fn from_live(old: &HashKey, stored: &Value, live: &Value) -> BTreeMap<String, Value> {
    let data = |key: &str| live.get("data")?.get(key)?.as_str().map(str::to_string);
    let mut candidates = BTreeMap::new();
    for pointer in hashed_pointers(stored) {
        let candidate = if let Some(key) = pointer.strip_prefix("/data/") {
            data(&unescape(key)).map(Value::String)
        } else if let Some(key) = pointer.strip_prefix("/stringData/") {
            data(&unescape(key))
                .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .map(Value::String)
        } else {
            live.pointer(&pointer).filter(|v| v.is_string()).cloned()
        };
        if let Some(value) = candidate {
            candidates.insert(pointer, value);
        }
    }
    let mut probe = stored.clone();
    restore_values(&mut probe, &candidates);
    hash_values(&old.bytes, &mut probe);
    candidates.retain(|pointer, _| probe.pointer(pointer) == stored.pointer(pointer));
    candidates
}

/// What stands for a value that could not be recovered: the keyed hash, under the new key, of
/// a text naming its old hash. It has the stored form, no live value hashes to it, and equal
/// old hashes (one value in several revisions) stay equal. It is computed as every stored
/// hash is, by hashing the text as a `stringData` value.
fn placeholder(new: &HashKey, old: &Value) -> Value {
    let old_hex = old.get(STORED_HASH).and_then(Value::as_str).unwrap_or("");
    let mut carrier = json!({
        "kind": "Secret",
        "stringData": {"v": format!("driftd: a value hashed under a retired key, {old_hex}")}
    });
    hash_values(&new.bytes, &mut carrier);
    carrier["stringData"]["v"].take()
}

#[cfg(test)]
#[path = "key_move_tests.rs"]
mod tests;
