//! The desired-state store: SQLite (WAL), schema versioned by `PRAGMA user_version`.
//! Sources, immutable revisions, their objects, intents (the write-ahead log of deploys and
//! the per-source lock), drift episodes, the content hashes of the cluster's Secrets and
//! ConfigMaps (`stale_config`), and, unless the hash key is kept outside (`key_move`), the
//! installation key.
//!
//! Secret values are never stored in clear (see [`secrets`]): keyed hashes always, the values
//! sealed only under a configured encryption key. The file is created 0600, deleted content
//! is overwritten (`secure_delete`), and [`Store::insecure_files`] tells when someone made it
//! readable to others.
//!
//! Several processes share one database file (`driftd commit` while `driftd serve` runs), so
//! every write is one `BEGIN IMMEDIATE` transaction and readers poll `data_version` to learn
//! that someone else committed.

mod commit;
mod config_content;
mod episode_history;
mod episodes;
mod error;
mod files;
mod helm_sources;
mod history;
mod import;
mod intents;
mod key_move;
mod pulumi;
mod remediations;
mod revisions;
mod rewrite;
mod schema;
mod scope;
pub mod secrets;
mod sqlite;

use driftd_core::manifest::{Desired, ManifestObject};
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use rusqlite::Connection;
use serde::Serialize;
use serde_json::Value;
use sqlite::{checkpoint, connection_settings, retry_busy};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use config_content::{ConfigContent, ContentChange, ContentWriter};
pub use episode_history::{EpisodeRecord, HistoryQuery};
pub use episodes::{
    Changer, ClosedEpisode, Ending, EpisodeChanges, EpisodeEnd, EpisodeWrite, OpenedEpisode,
};
use error::open_error;
pub use error::StoreError;
pub use files::{insecure_files, insecure_warning, InsecureFile};
pub use helm_sources::{HelmOutcome, HelmSync, HelmVersion, HELM_ID_BASE};
pub use history::{HistoryEntry, IntentEvent};
pub use import::{ClusterIntent, ClusterRevision, ImportedIds, IntentImport, RevisionImport};
pub use intents::{
    holder_pod, BeginRequest, IntentAction, IntentInfo, IntentObject, IntentState, LockHeld,
    OpenIntent, WrongState, MAX_TTL, MIN_TTL,
};
pub use key_move::{KeyMove, KeyMoveReport};
pub use pulumi::{PulumiOutcome, PulumiPending, PulumiSync};
pub use remediations::{RemediationEvent, RemediationOutcome};
pub use revisions::{canonical_json, validate_source_name};
pub use rewrite::RekeyReport;
pub use scope::SourceScope;
pub use secrets::{Key, SecretKeys};

/// Metadata of one committed revision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RevisionInfo {
    pub id: i64,
    pub source: String,
    pub author: String,
    pub message: String,
    pub committed_at: Timestamp,
    pub content_hash: String,
    pub object_count: usize,
    /// Objects of the input left out of the revision (`generateName` without a `name`).
    pub skipped_count: usize,
}

/// A source and its newest revision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceSummary {
    pub name: String,
    pub latest: Option<RevisionInfo>,
}

/// What `commit` did.
#[derive(Debug, Clone, PartialEq)]
pub enum CommitOutcome {
    Created(RevisionInfo),
    /// Identical content to the newest revision: nothing written.
    Unchanged(RevisionInfo),
}

/// A commit to make: the whole object set of one source.
pub struct CommitRequest<'a, O = ManifestObject> {
    pub source: &'a str,
    pub message: &'a str,
    pub author: &'a str,
    /// As trees, or as text ([`driftd_core::manifest::CompactObject`]) when there are many:
    /// a commit makes each object's tree only while it writes its stored form.
    pub objects: &'a [O],
    /// When it was committed; `None` is now. A revision imported from elsewhere (another
    /// replica, the cluster) keeps its original time.
    pub committed_at: Option<Timestamp>,
    /// How many objects of the input were left out (`generateName` without a `name`),
    /// recorded with the revision.
    pub skipped: usize,
}

/// One object of the current desired state (newest revision of its source).
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredObject {
    pub source: String,
    pub revision: i64,
    pub key: ObjectKey,
    pub api_version: String,
    pub object: Value,
    /// The same object as the source's previous revision had it, if it was there.
    pub previous: Option<Value>,
}

/// A [`DesiredObject`] as its stored JSON text (compact, keys in their order), checked to
/// parse: what [`Store::each_desired_object`] streams.
#[derive(Debug, Clone, PartialEq)]
pub struct DesiredText {
    pub source: String,
    pub revision: i64,
    pub key: ObjectKey,
    pub api_version: String,
    pub body: String,
    /// The same object as the source's previous revision had it, if it was there.
    pub previous: Option<String>,
}

/// The newest committed revision of every source, with their objects.
#[derive(Debug, Clone, Default)]
pub struct DesiredState {
    pub revisions: Vec<RevisionInfo>,
    pub objects: Vec<DesiredObject>,
}

/// A drift episode: one continuous stretch during which an object drifted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Episode {
    pub key: ObjectKey,
    pub source: String,
    pub class: String,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    pub resolved_at: Option<Timestamp>,
    pub paths: Vec<String>,
}

/// Page size of a new database file (see `setup`).
const PAGE_SIZE: i64 = 16 * 1024;

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Handle on the SQLite database. Not `Sync`: keep one per task/thread.
pub struct Store {
    conn: Connection,
    clock: Box<dyn Fn() -> Timestamp + Send>,
    keys: SecretKeys,
    /// The file, for messages and permission checks; `None` in memory.
    path: Option<PathBuf>,
    /// The sources what the engine loads comes from (a shard's); see [`Store::scoped`].
    scope: SourceScope,
}

impl Store {
    /// Opens (creating and migrating if needed) the database at `path`, with no key files:
    /// Secret values are hashed under the installation key and not kept.
    ///
    /// Opening an up-to-date database writes nothing to it.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Self::open_with_keys(path, SecretKeys::default())
    }

    /// Opens (creating it 0600, migrating if needed) the database at `path` with the
    /// configured keys: they hash and seal the Secret values this handle writes, and those a
    /// migration rewrites.
    pub fn open_with_keys(path: &Path, keys: SecretKeys) -> Result<Store, StoreError> {
        let display = path.display().to_string();
        files::create_private(path);
        let conn = Connection::open(path).map_err(|e| open_error(&display, e))?;
        Self::setup(conn, Some(path.to_path_buf()), keys)
    }

    /// A private database in memory, for tests and one-shot tools.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        Self::open_in_memory_with_keys(SecretKeys::default())
    }

    /// [`Store::open_in_memory`] with keys.
    pub fn open_in_memory_with_keys(keys: SecretKeys) -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory()?;
        Self::setup(conn, None, keys)
    }

    fn setup(
        mut conn: Connection,
        path: Option<PathBuf>,
        keys: SecretKeys,
    ) -> Result<Store, StoreError> {
        let display = path
            .as_ref()
            .map_or_else(|| ":memory:".to_string(), |p| p.display().to_string());
        let open_err = |e| open_error(&display, e);
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        if path.is_some() {
            // The first statement is where SQLite notices a file that is not a database.
            let mode: String =
                retry_busy(|| conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)))
                    .map_err(open_err)?;
            if !mode.eq_ignore_ascii_case("wal") {
                // Before the first page is written (a no-op on an existing database): with
                // SQLite's 4 KiB pages a `revision_objects` row longer than about 1 KB spilled
                // into an overflow page of its own, and 100,000 objects took 158 MB for 66 MB
                // of bodies; 16 KiB pages keep rows up to about 4 KB on their b-tree page.
                conn.pragma_update(None, "page_size", PAGE_SIZE)
                    .map_err(open_err)?;
                // WAL lets `driftd serve` keep reading while `driftd commit` writes. Switching
                // needs an exclusive lock, and SQLite answers BUSY at once (no busy handler)
                // while another process opens the same fresh file: retry within the timeout.
                retry_busy(|| {
                    conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                })
                .map_err(open_err)?;
            }
        }
        connection_settings(&conn, path.is_some()).map_err(open_err)?;
        let rewrote = schema::migrate(&mut conn, &display, &keys).map_err(|e| match e {
            StoreError::Sqlite(e) => open_error(&display, e),
            other => other,
        })?;
        if rewrote && path.is_some() {
            // The pages that held values in clear are rewritten in the file itself now, and
            // the WAL is emptied, rather than at some later checkpoint.
            checkpoint(&conn)?;
        }
        Ok(Store {
            conn,
            clock: Box::new(Timestamp::now),
            keys,
            path,
            scope: SourceScope::all(),
        })
    }

    /// This handle reads only the sources of `scope`: the desired state, the source list and
    /// the intents a sharded `driftd serve` engine loads. Writes and other reads are not
    /// scoped (importers skip foreign sources themselves, the CLI sees everything).
    pub fn scoped(mut self, scope: SourceScope) -> Store {
        self.scope = scope;
        self
    }

    /// The sources this handle was scoped to: importers writing through it skip the others.
    pub fn scope(&self) -> &SourceScope {
        &self.scope
    }

    /// The database's files (main, `-wal`, `-shm`) that its group or others can access:
    /// they hold the desired state and Secret hashes, so the daemon and the CLI warn.
    pub fn insecure_files(&self) -> Vec<InsecureFile> {
        self.path.as_deref().map(insecure_files).unwrap_or_default()
    }

    fn display(&self) -> String {
        self.path
            .as_ref()
            .map_or_else(|| ":memory:".to_string(), |p| p.display().to_string())
    }

    /// Seals every stored Secret value under the configured encryption key (opening those
    /// sealed under a previous key) and, when the configured hash key is not the one the
    /// stored hashes were made with, rehashes every value: in one transaction, then
    /// checkpointed so the file no longer holds what was replaced.
    pub fn rekey(&mut self) -> Result<RekeyReport, StoreError> {
        let display = self.display();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let report = rewrite::rekey(&tx, &self.keys, &display)?;
        tx.commit()?;
        if self.path.is_some() {
            checkpoint(&self.conn)?;
        }
        Ok(report)
    }

    /// The newest committed state of one object of `source` with its Secret values in clear,
    /// as restoring it needs them; `Ok(None)` if the source does not desire it. Refused, naming
    /// the Secret and the missing key, when the values were never kept or cannot be opened.
    pub fn desired_with_values(
        &self,
        source: &str,
        key: &ObjectKey,
    ) -> Result<Option<Value>, StoreError> {
        let Some(stored) = revisions::newest_stored(&self.conn, source, key)? else {
            return Ok(None);
        };
        let place = format!("revision {} of source {source}", stored.revision);
        rewrite::with_values(
            &self.keys,
            key,
            &place,
            stored.body,
            stored.sealed.as_deref(),
        )
        .map(Some)
    }

    /// Replaces the clock every timestamp the store writes, and every expiry it derives,
    /// comes from: tests and simulations move time without sleeping.
    pub fn set_clock(&mut self, clock: impl Fn() -> Timestamp + Send + 'static) {
        self.clock = Box::new(clock);
    }

    /// The store's current time.
    pub fn now(&self) -> Timestamp {
        (self.clock)()
    }

    /// Atomically records a new revision, or nothing if content equals the newest one.
    ///
    /// Rejected (and nothing written) when an object is owned by another source's newest
    /// revision: two sources fighting over one object would make drift meaningless.
    /// A new revision supersedes the source's failed and interrupted intents.
    pub fn commit<O: Desired>(
        &mut self,
        req: &CommitRequest<O>,
    ) -> Result<CommitOutcome, StoreError> {
        let now = self.now();
        let sealing = sealing(&self.conn, &self.keys, &self.display())?;
        commit::commit(&mut self.conn, req, &sealing, now)
    }

    /// Records a pending intent (the objects a deploy is about to apply) and takes the
    /// source's lock. Validated like [`Store::commit`]; refused with [`StoreError::Locked`]
    /// while another intent holds the lock, even an expired one. Nothing is written when
    /// refused.
    pub fn begin_intent(&mut self, req: &BeginRequest) -> Result<IntentInfo, StoreError> {
        let now = self.now();
        let sealing = sealing(&self.conn, &self.keys, &self.display())?;
        intents::begin(&mut self.conn, req, &sealing, now)
    }

    /// Heartbeat: moves `expires_at` to now + TTL (`ttl` replaces the intent's TTL). Renewing
    /// an expired intent nobody released revives it (recorded in history).
    pub fn renew_intent(
        &mut self,
        id: i64,
        ttl: Option<Duration>,
        actor: &str,
    ) -> Result<IntentInfo, StoreError> {
        let now = self.now();
        intents::renew(&mut self.conn, id, ttl, actor, now)
    }

    /// Makes an open intent (pending, expired, failed or interrupted: a deploy that died may
    /// have applied everything) the source's newest committed revision, in one transaction. Content equal to the newest revision creates no revision
    /// ([`CommitOutcome::Unchanged`], which the intent then points at).
    pub fn commit_intent(
        &mut self,
        id: i64,
        actor: &str,
    ) -> Result<(IntentInfo, CommitOutcome), StoreError> {
        let now = self.now();
        intents::commit(&mut self.conn, id, actor, now, None)
    }

    /// Drops a pending intent: the deploy did not happen.
    pub fn abort_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::Abort, actor, reason)
    }

    /// The deploy ran and failed: what it wanted may be partly applied.
    pub fn fail_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::Fail, actor, reason)
    }

    /// The deploy was stopped by a signal: what it wanted may be partly applied.
    pub fn interrupt_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::Interrupt, actor, reason)
    }

    /// Explicit release by a named actor, of a pending, expired, failed or interrupted
    /// intent: frees the lock and stops the intent from explaining drift.
    pub fn release_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::Release, actor, reason)
    }

    /// Release decided by the daemon (holder pod gone for long enough): only for intents
    /// holding a lock, and recorded as `auto-release` so people can tell it apart.
    pub fn auto_release_intent(
        &mut self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        self.finish_intent(id, IntentAction::AutoRelease, actor, reason)
    }

    fn finish_intent(
        &mut self,
        id: i64,
        action: IntentAction,
        actor: &str,
        reason: &str,
    ) -> Result<IntentInfo, StoreError> {
        let now = self.now();
        intents::finish(&mut self.conn, id, action, actor, reason, now)
    }

    /// Records in history that `actor` saw the intent expired; once per expiry, so a
    /// daemon can call it on every pass. `Ok(true)` when it recorded.
    pub fn record_intent_expiry(&mut self, id: i64, actor: &str) -> Result<bool, StoreError> {
        let now = self.now();
        intents::record_expiry(&mut self.conn, id, actor, now)
    }

    /// Imports a revision of the cluster log at its number (see [`import`]): idempotent,
    /// stored like [`Store::commit`] stores one, never the newest below a higher number.
    pub fn import_revision(&mut self, req: &ClusterRevision) -> Result<RevisionImport, StoreError> {
        let now = self.now();
        let sealing = sealing(&self.conn, &self.keys, &self.display())?;
        import::import_revision(&mut self.conn, req, &sealing, now)
    }

    /// Imports a pending intent of the cluster log at its number, taking its source's lock
    /// here as it took it there.
    pub fn import_intent(&mut self, req: &ClusterIntent) -> Result<IntentImport, StoreError> {
        let now = self.now();
        let sealing = sealing(&self.conn, &self.keys, &self.display())?;
        import::import_intent(&mut self.conn, req, &sealing, now)
    }

    /// A renewal of an imported intent, with the expiry its holder wrote. `Ok(None)` when
    /// nothing changed.
    pub fn import_renewal(
        &mut self,
        id: i64,
        ttl_seconds: i64,
        expires_at: Timestamp,
        actor: &str,
    ) -> Result<Option<IntentInfo>, StoreError> {
        let now = self.now();
        import::import_renewal(&mut self.conn, id, ttl_seconds, expires_at, actor, now)
    }

    /// The end (abort, fail, interrupt, release) of an imported intent, at the time it
    /// happened in the cluster. `Ok(None)` when it already ended so here.
    pub fn import_intent_end(
        &mut self,
        id: i64,
        action: IntentAction,
        actor: &str,
        reason: &str,
        at: Timestamp,
    ) -> Result<Option<IntentInfo>, StoreError> {
        import::import_end(&mut self.conn, id, action, actor, reason, at)
    }

    /// Brings the source of one Helm release to where the release stands (see [`helm`]):
    /// its deployed version as the newest revision, its version in flight as the pending
    /// intent. Validated like a commit; nothing is written when refused.
    pub fn sync_helm(&mut self, req: &HelmSync) -> Result<HelmOutcome, StoreError> {
        let now = self.now();
        let sealing = sealing(&self.conn, &self.keys, &self.display())?;
        helm_sources::sync(&mut self.conn, req, &sealing, now)
    }

    /// The Helm sources (`helm:...`) this database tracks: with objects, or a first install
    /// in flight. A release no longer in the cluster is retired with [`Store::sync_helm`].
    pub fn helm_sources(&self) -> Result<Vec<String>, StoreError> {
        revisions::tracked_with_prefix(&self.conn, "helm:", "pending")
    }

    /// Brings the source of one Pulumi stack to what its state records (see [`pulumi`]): its
    /// objects as the newest revision, each operation left pending as an `interrupted`
    /// intent, intents of operations no longer recorded ended. Validated like a commit;
    /// nothing is written when refused.
    pub fn sync_pulumi(&mut self, req: &PulumiSync) -> Result<PulumiOutcome, StoreError> {
        let now = self.now();
        let sealing = sealing(&self.conn, &self.keys, &self.display())?;
        pulumi::sync(&mut self.conn, req, &sealing, now)
    }

    /// The Pulumi sources (`pulumi:...`) this database tracks: with objects, or an
    /// interrupted operation Pulumi recorded.
    pub fn pulumi_sources(&self) -> Result<Vec<String>, StoreError> {
        revisions::tracked_with_prefix(&self.conn, "pulumi:", "interrupted")
    }

    /// The numbers of the cluster log this database imported or refused.
    pub fn imported_ids(&self) -> Result<ImportedIds, StoreError> {
        import::imported_ids(&self.conn)
    }

    /// One intent, with its derived state.
    pub fn intent(&self, id: i64) -> Result<Option<IntentInfo>, StoreError> {
        intents::get(&self.conn, id, self.now())
    }

    /// Intents newest first, of one source or all; only open ones (pending, expired, failed,
    /// interrupted) unless `include_ended`.
    pub fn intents(
        &self,
        source: Option<&str>,
        include_ended: bool,
    ) -> Result<Vec<IntentInfo>, StoreError> {
        let mut list = intents::list(&self.conn, source, include_ended, self.now())?;
        if !self.scope.is_all() {
            list.retain(|i| self.scope.contains(&i.source));
        }
        Ok(list)
    }

    /// Every open intent (pending, expired, failed, interrupted) with its objects, oldest
    /// first, read as one snapshot: what live objects may equal instead of the committed
    /// desired state, and the locks that may be stale.
    pub fn open_intents(&self) -> Result<Vec<OpenIntent>, StoreError> {
        let mut open = intents::open_intents(&self.conn, self.now())?;
        if !self.scope.is_all() {
            open.retain(|i| self.scope.contains(&i.intent.source));
        }
        Ok(open)
    }

    /// Records one remediation; the source's history lists it.
    pub fn record_remediation(&self, event: &RemediationEvent) -> Result<(), StoreError> {
        remediations::record(&self.conn, event)
    }

    /// Revisions, intent transitions and remediations of one source, newest first.
    pub fn timeline(&self, source: &str) -> Result<Vec<HistoryEntry>, StoreError> {
        history::timeline(&self.conn, source)
    }

    /// Every source with its newest revision, by name.
    pub fn sources(&self) -> Result<Vec<SourceSummary>, StoreError> {
        let mut sources = revisions::sources(&self.conn)?;
        if !self.scope.is_all() {
            sources.retain(|s| self.scope.contains(&s.name));
        }
        Ok(sources)
    }

    /// Revisions of one source, newest first (empty if the source is unknown).
    pub fn history(&self, source: &str) -> Result<Vec<RevisionInfo>, StoreError> {
        revisions::history(&self.conn, source)
    }

    /// Every object of one revision as stored (Secret values as their hashes), in key
    /// order, as (key, apiVersion, body): what `driftd plan` orders and `--prune` compares.
    pub fn revision_objects(
        &self,
        revision: i64,
    ) -> Result<Vec<(ObjectKey, String, Value)>, StoreError> {
        revisions::revision_objects(&self.conn, revision)
    }

    /// Where each object of one revision came from: its file as `commit` was given it and
    /// the 0-based document in that file (what `driftd adopt` edits).
    pub fn revision_origins(
        &self,
        revision: i64,
    ) -> Result<HashMap<ObjectKey, (String, usize)>, StoreError> {
        revisions::revision_origins(&self.conn, revision)
    }

    /// The CustomResourceDefinitions in the newest revision of every source (for the scopes
    /// of custom resources a commit reads), without reading any other object.
    pub fn committed_crds(&self) -> Result<Vec<Value>, StoreError> {
        revisions::newest_of_kind(
            &self.conn,
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
        )
    }

    /// The newest revision of every source with its objects, read as one consistent snapshot.
    pub fn desired_state(&self) -> Result<DesiredState, StoreError> {
        let mut state = revisions::desired_state(&self.conn)?;
        if !self.scope.is_all() {
            state.revisions.retain(|r| self.scope.contains(&r.source));
            state.objects.retain(|o| self.scope.contains(&o.source));
        }
        Ok(state)
    }

    /// The desired state one object at a time (see [`Store::desired_state`]), for readers
    /// that keep objects in a compact form: the whole state is never held as JSON trees.
    /// Returns the newest revision of every source.
    pub fn each_desired_object(
        &self,
        mut each: impl FnMut(DesiredText),
    ) -> Result<Vec<RevisionInfo>, StoreError> {
        let mut revisions = revisions::each_desired_object(&self.conn, |object| {
            if self.scope.contains(&object.source) {
                each(object)
            }
        })?;
        revisions.retain(|r| self.scope.contains(&r.source));
        Ok(revisions)
    }

    /// Changes whenever another connection commits (`PRAGMA data_version`): cheap to poll.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }

    /// The key of the HMAC that stands in for Secret values, stored and reported: the
    /// configured hash key (`secrets.hash_key_file`, `secrets.hash_key_secret`), else the
    /// random key created with the database. Refused when the stored hashes were made with
    /// another key.
    pub fn installation_key(&self) -> Result<Vec<u8>, StoreError> {
        Ok(
            secrets::checked_hash_key(&self.conn, &self.keys, &self.display())?
                .bytes
                .to_vec(),
        )
    }

    /// The recorded content of every Secret and ConfigMap driftd has seen (`stale_config`).
    pub fn config_contents(&self) -> Result<Vec<ConfigContent>, StoreError> {
        config_content::config_contents(&self.conn)
    }

    /// Records new or changed config contents and forgets deleted configs, in one write.
    pub fn record_config_contents(&self, changes: &[ContentChange]) -> Result<(), StoreError> {
        config_content::record(&self.conn, changes)
    }

    /// A writer of config contents on a connection and thread of its own (see
    /// [`ContentWriter`]); `None` for a database in memory, which no other connection reaches.
    pub fn content_writer(&self) -> Result<Option<ContentWriter>, StoreError> {
        let Some(path) = &self.path else {
            return Ok(None);
        };
        let display = self.display();
        let open_err = |e| open_error(&display, e);
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // The file is in WAL mode already: this handle made it so.
        connection_settings(&conn, true).map_err(open_err)?;
        let writer = ContentWriter::start(conn).map_err(|e| StoreError::Open {
            path: display.clone(),
            message: format!("cannot start the config contents' writer: {e}"),
        })?;
        Ok(Some(writer))
    }
}

/// The keys a write stores Secret values with, the hash key checked against the database's.
fn sealing<'a>(
    conn: &Connection,
    keys: &'a SecretKeys,
    display: &str,
) -> Result<revisions::Sealing<'a>, StoreError> {
    Ok(revisions::Sealing {
        hash: secrets::checked_hash_key(conn, keys, display)?,
        encryption: keys.encryption.as_ref(),
    })
}

/// Stored form of a namespace: `''` for cluster-scoped objects (see schema).
fn ns_to_db(ns: &Option<String>) -> &str {
    ns.as_deref().unwrap_or("")
}

fn ns_from_db(ns: String) -> Option<String> {
    (!ns.is_empty()).then_some(ns)
}

/// The object key stored in columns `first..first + 4` (group, kind, namespace, name).
fn key_from_db(row: &rusqlite::Row, first: usize) -> rusqlite::Result<ObjectKey> {
    Ok(ObjectKey {
        group: row.get(first)?,
        kind: row.get(first + 1)?,
        namespace: ns_from_db(row.get(first + 2)?),
        name: row.get(first + 3)?,
    })
}

fn ts_to_db(ts: Timestamp) -> String {
    ts.to_string()
}

/// Reads a stored RFC 3339 timestamp from column `idx`.
fn ts_from_db(row: &rusqlite::Row, idx: usize) -> rusqlite::Result<Timestamp> {
    let text: String = row.get(idx)?;
    text.parse().map_err(|e: jiff::Error| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

#[cfg(test)]
mod compact_tests;
#[cfg(test)]
mod episode_tests;
#[cfg(test)]
mod import_tests;
#[cfg(test)]
mod intent_tests;
#[cfg(test)]
mod secret_tests;
#[cfg(test)]
mod tests;
