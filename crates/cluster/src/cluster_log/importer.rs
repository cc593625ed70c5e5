//! Imports the cluster log into this replica's database: a watch on the log's Secrets (the
//! initial list is the catch-up), and after every change one pass that applies, in the
//! order of the log's numbers, what this database has not seen yet. The engine notices the
//! new rows as it notices any commit (it polls the database's data version).

use super::format::*;
use driftd_core::manifest::ManifestObject;
use driftd_store::{
    ClusterIntent, ClusterRevision, ImportedIds, IntentAction, IntentImport, RevisionImport, Store,
    StoreError,
};
use driftd_watch::secrets::{self, Change, Followed};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use std::collections::{BTreeMap, HashSet};

/// Starts importing the cluster log of `namespace` into `store` until `stop` is true.
pub fn spawn(
    client: kube::Client,
    namespace: &str,
    store: Store,
    stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let api: Api<Secret> = Api::namespaced(client, namespace);
    let namespace = namespace.to_string();
    tokio::spawn(async move {
        let imported = match store.imported_ids() {
            Ok(ids) => ids,
            Err(err) => {
                tracing::error!("cluster log: cannot read what was imported: {err}");
                return;
            }
        };
        let mut importer = Importer {
            store,
            imported,
            ended: HashSet::new(),
            warned: HashSet::new(),
        };
        tracing::info!(%namespace, "cluster log: importing driftd's Secrets in namespace {namespace}");
        let what = format!("cluster log: watching Secrets in {namespace}");
        let key = |s: &Secret| name_of(s).to_string();
        secrets::follow(vec![api], SELECTOR, &what, key, stop, |objects, change| {
            // A deletion imports nothing (records are immutable; an intent's end is an update).
            if !matches!(change, Change::Deleted { .. }) {
                importer.sync(&Log(objects));
            }
        })
        .await;
    })
}

/// Imports everything of `objects` into `store` (new) once, as a replica's first list does.
pub(super) fn import_once(store: Store, objects: &Followed) -> Store {
    let imported = store.imported_ids().unwrap_or_default();
    let mut importer = Importer {
        store,
        imported,
        ended: HashSet::new(),
        warned: HashSet::new(),
    };
    importer.sync(&Log(objects));
    importer.store
}

/// The log's Secrets by name, as followed.
struct Log<'a>(&'a Followed);

impl Log<'_> {
    fn get(&self, name: &str) -> Option<&Secret> {
        self.0.get(name).map(|(_, s)| s)
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &Secret)> {
        self.0.iter().map(|(name, (_, s))| (name, s))
    }
}

/// What of the log this replica's database has.
struct Importer {
    store: Store,
    imported: ImportedIds,
    /// Intent ends applied (or found not to apply) since start: (intent, state).
    ended: HashSet<(i64, String)>,
    /// Messages said once.
    warned: HashSet<String>,
}

/// One thing to apply, ordered by its number in the log.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Begin(String),
    End { id: i64, name: String },
    Revision(String),
}

fn number(secret: &Secret) -> Option<i64> {
    label(secret, LABEL_ID)?.parse().ok()
}

fn is(secret: &Secret, type_: &str) -> bool {
    secret.type_.as_deref() == Some(type_)
}

impl Importer {
    /// Whether the record's source is this shard's (records without one are not sources'
    /// and are judged by their own rules).
    fn owns(&self, secret: &Secret) -> bool {
        annotation(secret, ANN_SOURCE).is_none_or(|source| self.store.scope().contains(source))
    }

    fn warn_once(&mut self, message: String) {
        if self.warned.insert(message.clone()) {
            tracing::warn!("{message}");
        }
    }

    /// Applies everything new, in the log's order; what cannot be applied yet (a part not
    /// seen yet, a database error) is tried again at the next change.
    fn sync(&mut self, log: &Log) {
        // Which intent each source's head names as its lock holder.
        let locks: BTreeMap<&str, i64> = log
            .iter()
            .map(|(_, s)| s)
            .filter(|s| is(s, TYPE_SOURCE))
            .filter_map(|s| {
                Some((
                    annotation(s, ANN_SOURCE)?,
                    annotation(s, ANN_LOCK)?.parse().ok()?,
                ))
            })
            .collect();
        let mut steps: Vec<(i64, Step)> = Vec::new();
        let mut renewals = Vec::new();
        let mut unreadable = Vec::new();
        for (name, secret) in log.iter() {
            let Some(id) = number(secret) else { continue };
            // Another shard's source: left in the log for the shard that owns it.
            if !self.owns(secret) {
                continue;
            }
            if is(secret, TYPE_REVISION) {
                if !self.imported.revisions.contains(&id) {
                    steps.push((id, Step::Revision(name.clone())));
                }
                continue;
            }
            if !is(secret, TYPE_INTENT) {
                continue;
            }
            let status = match IntentStatus::read(secret) {
                Ok(status) => status,
                Err(err) => {
                    unreadable.push(err.to_string());
                    continue;
                }
            };
            // It never held its source's lock: it never was an intent anywhere.
            if status.lock_refused {
                continue;
            }
            let source = annotation(secret, ANN_SOURCE).unwrap_or("");
            // A pending intent counts once it holds the lock (taken right after it is
            // written); one that ended did hold it.
            let holds = status.state != "pending" || locks.get(source) == Some(&id);
            if !self.imported.intents.contains(&id) && holds {
                steps.push((id, Step::Begin(name.clone())));
            }
            match &status.ended {
                // A commit is imported with its revision, which names the intent.
                Some(ended)
                    if status.state != "committed"
                        && !self.ended.contains(&(id, status.state.clone())) =>
                {
                    steps.push((
                        ended.sequence,
                        Step::End {
                            id,
                            name: name.clone(),
                        },
                    ));
                }
                Some(_) => {}
                None if holds => renewals.push((id, status.clone())),
                None => {}
            }
        }
        for message in unreadable {
            self.warn_once(format!("cluster log: {message}"));
        }
        steps.sort();
        for (_, step) in steps {
            if let Err(err) = self.apply(log, &step) {
                self.warn_once(format!("cluster log: importing {step:?}: {err}"));
            }
        }
        for (id, status) in renewals {
            if !self.imported.intents.contains(&id) {
                continue;
            }
            let holder = log
                .get(&intent_name(id))
                .and_then(|s| annotation(s, ANN_HOLDER));
            let holder = holder.unwrap_or("").to_string();
            match self
                .store
                .import_renewal(id, status.ttl_seconds, status.expires_at, &holder)
            {
                Ok(_) | Err(StoreError::IntentNotFound(_)) => {}
                Err(err) => self.warn_once(format!("cluster log: renewal of intent {id}: {err}")),
            }
        }
    }

    /// The decoded payload of record `name`; `Ok(None)` while a part is not seen yet.
    fn payload<T: serde::de::DeserializeOwned>(log: &Log, name: &str) -> Result<Option<T>, String> {
        let Some(record) = log.get(name) else {
            return Ok(None);
        };
        let Some(encoded) = assemble(record, |part| log.get(part)).map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        decode(name, &encoded).map(Some).map_err(|e| e.to_string())
    }

    fn apply(&mut self, log: &Log, step: &Step) -> Result<(), String> {
        match step {
            Step::Revision(name) => {
                let Some(rec) = Self::payload::<RevisionRecord>(log, name)? else {
                    return Ok(());
                };
                let objects: Vec<ManifestObject> =
                    rec.objects.into_iter().map(Into::into).collect();
                let imported = self
                    .store
                    .import_revision(&ClusterRevision {
                        id: rec.id,
                        source: &rec.source,
                        author: &rec.author,
                        message: &rec.message,
                        committed_at: rec.committed_at,
                        objects: &objects,
                        intent: rec.intent,
                        actor: &rec.committed_by,
                    })
                    .map_err(|e| e.to_string())?;
                self.imported.revisions.insert(rec.id);
                match imported {
                    RevisionImport::Created { revision, .. } => tracing::info!(
                        source = %rec.source,
                        "cluster log: imported revision {} of source {} by {}",
                        revision.id,
                        rec.source,
                        rec.author
                    ),
                    RevisionImport::Unchanged(_) | RevisionImport::Known => {}
                    RevisionImport::Refused(reason) => {
                        tracing::warn!("cluster log: revision {} not imported: {reason}", rec.id)
                    }
                }
            }
            Step::Begin(name) => {
                let Some(secret) = log.get(name) else {
                    return Ok(());
                };
                let status = IntentStatus::read(secret).map_err(|e| e.to_string())?;
                let Some(rec) = Self::payload::<IntentRecord>(log, name)? else {
                    return Ok(());
                };
                let objects: Vec<ManifestObject> =
                    rec.objects.into_iter().map(Into::into).collect();
                let imported = self
                    .store
                    .import_intent(&ClusterIntent {
                        id: rec.id,
                        source: &rec.source,
                        holder: &rec.holder,
                        author: &rec.author,
                        message: &rec.message,
                        created_at: rec.created_at,
                        ttl_seconds: status.ttl_seconds,
                        expires_at: status.expires_at,
                        objects: &objects,
                    })
                    .map_err(|e| e.to_string())?;
                self.imported.intents.insert(rec.id);
                match imported {
                    IntentImport::Begun(intent) => tracing::info!(
                        source = %rec.source,
                        "cluster log: imported intent {} of source {}, held by {}",
                        intent.id,
                        rec.source,
                        rec.holder
                    ),
                    IntentImport::Known => {}
                    IntentImport::Refused(reason) => {
                        tracing::warn!("cluster log: intent {} not imported: {reason}", rec.id)
                    }
                }
            }
            Step::End { id, name } => {
                let Some(secret) = log.get(name) else {
                    return Ok(());
                };
                let status = IntentStatus::read(secret).map_err(|e| e.to_string())?;
                let Some(ended) = &status.ended else {
                    return Ok(());
                };
                let action = match status.state.as_str() {
                    "aborted" => IntentAction::Abort,
                    "failed" => IntentAction::Fail,
                    "interrupted" => IntentAction::Interrupt,
                    "released" if ended.automatic => IntentAction::AutoRelease,
                    "released" => IntentAction::Release,
                    other => return Err(format!("unknown intent state {other:?}")),
                };
                match self
                    .store
                    .import_intent_end(*id, action, &ended.by, &ended.reason, ended.at)
                {
                    // Not imported here (refused), or already ended otherwise here.
                    Ok(_) | Err(StoreError::IntentNotFound(_) | StoreError::WrongState(_)) => {}
                    Err(err) => return Err(err.to_string()),
                }
                self.ended.insert((*id, status.state));
            }
        }
        Ok(())
    }
}
