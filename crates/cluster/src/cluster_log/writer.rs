//! Writes the cluster log: what `driftd commit|intent|run --cluster` do instead of writing a
//! database. Every write that must not race is made at the `resourceVersion` it read, so
//! kube-apiserver refuses a concurrent one with `409 Conflict` (or a second create of one
//! name with `409 AlreadyExists`): the log's numbers come from one sequence object updated
//! that way, and a source's lock is its head object, updated that way.

use super::format::{self, *};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;

/// How often a write lost to a concurrent one is tried again before giving up.
const RETRIES: usize = 20;

/// Why a write to the cluster log failed; each says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error(
        "Kubernetes refused access to Secrets in namespace {namespace} ({message}): the \
         deployer needs create, get, list and update on secrets there (deploy/deployer/role.yaml)"
    )]
    Forbidden { namespace: String, message: String },
    #[error("namespace {0} does not exist: create it, or set --driftd-namespace (DRIFTD_NAMESPACE) to driftd's namespace")]
    NoNamespace(String),
    #[error("Kubernetes API: {0}")]
    Api(#[source] kube::Error),
    #[error(
        "source {source_name:?} is locked by intent {intent} ({state}, held by {holder}, begun \
         {age} ago); end it first (`driftd intent commit|abort|release {intent} --cluster`)"
    )]
    Locked {
        source_name: String,
        intent: i64,
        holder: String,
        state: String,
        age: String,
    },
    #[error("no intent {0} in the cluster log")]
    NoIntent(i64),
    #[error("intent {id} is {state}: it cannot be {attempted}")]
    WrongState {
        id: i64,
        state: String,
        attempted: &'static str,
    },
    #[error("the cluster log: {0}")]
    Format(#[from] FormatError),
    #[error("{0} kept changing under concurrent writers; try again")]
    Contended(String),
    /// The database in memory a snapshot of the log is read into.
    #[error(transparent)]
    Store(#[from] driftd_store::StoreError),
}

/// How a write went at the Kubernetes API.
enum Write {
    Done(Box<Secret>),
    /// Someone wrote it since it was read, or created it first: a race lost.
    Raced,
}

/// The cluster log in driftd's namespace.
#[derive(Clone)]
pub struct ClusterLog {
    api: Api<Secret>,
    namespace: String,
}

/// A revision to record ([`ClusterLog::commit`]).
pub struct NewRevision {
    pub source: String,
    pub author: String,
    pub message: String,
    pub objects: Vec<RecordObject>,
}

/// An intent to begin ([`ClusterLog::begin`]).
pub struct NewIntent {
    pub source: String,
    pub holder: String,
    pub author: String,
    pub message: String,
    pub ttl_seconds: i64,
    pub objects: Vec<RecordObject>,
}

/// How an intent ends without a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Abort,
    Fail,
    Interrupt,
    Release,
}

impl End {
    /// The state it leaves, the words for it, the states it may leave from.
    fn transition(self) -> (&'static str, &'static str, &'static [&'static str]) {
        match self {
            End::Abort => ("aborted", "aborted", LOCKING),
            End::Fail => ("failed", "marked failed", LOCKING),
            End::Interrupt => ("interrupted", "marked interrupted", LOCKING),
            End::Release => ("released", "released", OPEN),
        }
    }
}

/// States (as the objects hold them; `expired` is `pending` past its expiry) that hold the
/// source's lock, and those that may still be committed or released: as the store's.
const LOCKING: &[&str] = &["pending"];
const OPEN: &[&str] = &["pending", "failed", "interrupted"];

fn classify(namespace: &str, err: kube::Error) -> Result<Write, LogError> {
    match err {
        kube::Error::Api(s) if s.is_conflict() || s.is_already_exists() => Ok(Write::Raced),
        kube::Error::Api(s) if s.code == 403 => Err(LogError::Forbidden {
            namespace: namespace.to_string(),
            message: s.message.clone(),
        }),
        kube::Error::Api(s) if s.is_not_found() => Err(LogError::NoNamespace(namespace.into())),
        other => Err(LogError::Api(other)),
    }
}

impl ClusterLog {
    pub fn new(client: kube::Client, namespace: &str) -> ClusterLog {
        ClusterLog {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    async fn get(&self, name: &str) -> Result<Option<Secret>, LogError> {
        match self.api.get_opt(name).await {
            Ok(found) => Ok(found),
            Err(err) => match classify(&self.namespace, err)? {
                Write::Done(s) => Ok(Some(*s)),
                Write::Raced => Ok(None),
            },
        }
    }

    async fn create(&self, secret: &Secret) -> Result<Write, LogError> {
        match self.api.create(&PostParams::default(), secret).await {
            Ok(created) => Ok(Write::Done(Box::new(created))),
            Err(err) => classify(&self.namespace, err),
        }
    }

    /// Replaces `secret` at the `resourceVersion` it carries (the one read).
    async fn replace(&self, secret: &Secret) -> Result<Write, LogError> {
        let name = format::name_of(secret).to_string();
        match self
            .api
            .replace(&name, &PostParams::default(), secret)
            .await
        {
            Ok(replaced) => Ok(Write::Done(Box::new(replaced))),
            Err(err) => classify(&self.namespace, err),
        }
    }

    /// The next number of the log: the sequence object's `next`, taken by writing `next + 1`
    /// at the version read (or by creating it, for the first number).
    async fn next_number(&self) -> Result<i64, LogError> {
        for _ in 0..RETRIES {
            let written = match self.get(SEQUENCE_NAME).await? {
                None => {
                    let ann = BTreeMap::from([(ANN_NEXT.to_string(), "2".to_string())]);
                    let seq = secret(SEQUENCE_NAME, TYPE_SEQUENCE, labels(&[]), ann, None);
                    self.create(&seq).await?.then(1)
                }
                Some(mut seq) => {
                    let next: i64 = annotation(&seq, ANN_NEXT)
                        .and_then(|n| n.parse().ok())
                        .filter(|n| *n > 0)
                        .ok_or_else(|| FormatError::Invalid {
                            name: SEQUENCE_NAME.into(),
                            reason: format!("no number in annotation {ANN_NEXT}"),
                        })?;
                    seq.metadata
                        .annotations
                        .get_or_insert_with(BTreeMap::new)
                        .insert(ANN_NEXT.into(), (next + 1).to_string());
                    self.replace(&seq).await?.then(next)
                }
            };
            if let Some(n) = written {
                return Ok(n);
            }
        }
        Err(LogError::Contended(format!("the sequence {SEQUENCE_NAME}")))
    }

    /// Creates a record's objects under the next free number, returning it.
    async fn create_record(
        &self,
        name_of: fn(i64) -> String,
        type_: &str,
        extra_labels: &[(&str, String)],
        annotations: BTreeMap<String, String>,
        mut payload: impl FnMut(i64) -> (String, Option<IntentStatus>),
    ) -> Result<i64, LogError> {
        for _ in 0..RETRIES {
            let n = self.next_number().await?;
            let name = name_of(n);
            let (encoded, status) = payload(n);
            let mut record_labels = labels(extra_labels);
            record_labels.insert(LABEL_ID.into(), n.to_string());
            let mut objects = record_secrets(
                &name,
                type_,
                record_labels,
                annotations.clone(),
                &encoded,
                MAX_PART,
            );
            if let (Some(status), Some(last)) = (status, objects.last_mut()) {
                status.write(last);
            }
            let mut raced = false;
            for object in &objects {
                // A name already taken: the sequence was reset (deleted); take another.
                if let Write::Raced = self.create(object).await? {
                    raced = true;
                    break;
                }
            }
            if !raced {
                return Ok(n);
            }
        }
        Err(LogError::Contended("the record names".into()))
    }

    /// Records a revision of `rev.source`; returns its number.
    pub async fn commit(&self, rev: NewRevision) -> Result<i64, LogError> {
        let now = Timestamp::now();
        self.commit_record(rev, now, None, None).await
    }

    async fn commit_record(
        &self,
        rev: NewRevision,
        now: Timestamp,
        intent: Option<i64>,
        committed_by: Option<String>,
    ) -> Result<i64, LogError> {
        let source_labels = [(LABEL_SOURCE, label_value(&rev.source))];
        let ann = BTreeMap::from([(ANN_SOURCE.to_string(), rev.source.clone())]);
        let mut record = RevisionRecord {
            id: 0,
            committed_by: committed_by.unwrap_or_else(|| rev.author.clone()),
            source: rev.source,
            author: rev.author,
            message: rev.message,
            committed_at: now,
            intent,
            objects: rev.objects,
        };
        self.create_record(revision_name, TYPE_REVISION, &source_labels, ann, |n| {
            record.id = n;
            (encode(&record), None)
        })
        .await
    }

    /// Records a pending intent and takes its source's lock; returns its number, or
    /// [`LogError::Locked`] when another pending intent holds the lock (this one is then
    /// recorded as aborted, never having held it).
    pub async fn begin(&self, new: NewIntent) -> Result<i64, LogError> {
        let now = Timestamp::now();
        let expires_at = plus(now, new.ttl_seconds);
        let extra = [
            (LABEL_SOURCE, label_value(&new.source)),
            (LABEL_HOLDER, label_value(&new.holder)),
        ];
        let ann = BTreeMap::from([
            (ANN_SOURCE.to_string(), new.source.clone()),
            (ANN_HOLDER.to_string(), new.holder.clone()),
        ]);
        let mut record = IntentRecord {
            id: 0,
            source: new.source.clone(),
            holder: new.holder.clone(),
            author: new.author,
            message: new.message,
            created_at: now,
            objects: new.objects,
        };
        let status = IntentStatus {
            state: "pending".into(),
            ttl_seconds: new.ttl_seconds,
            expires_at,
            ended: None,
            lock_refused: false,
        };
        let id = self
            .create_record(intent_name, TYPE_INTENT, &extra, ann, |n| {
                record.id = n;
                (encode(&record), Some(status.clone()))
            })
            .await?;
        match self.take_lock(&new.source, id).await {
            Ok(()) => Ok(id),
            Err(err) => {
                let reason = match &err {
                    LogError::Locked { intent, .. } => format!("source locked by intent {intent}"),
                    other => format!("could not take the source's lock: {other}"),
                };
                // Best effort: importers never import an intent without the lock anyway.
                let _ = self.refuse_lock(id, &new.holder, &reason).await;
                Err(err)
            }
        }
    }

    /// Makes the source's head name intent `id` as its lock, unless a pending intent holds it.
    async fn take_lock(&self, source: &str, id: i64) -> Result<(), LogError> {
        let name = head_name(source);
        for _ in 0..RETRIES {
            let head = self.get(&name).await?;
            let holder = head
                .as_ref()
                .and_then(|h| annotation(h, ANN_LOCK))
                .and_then(|l| l.parse::<i64>().ok())
                .filter(|l| *l != id);
            if let Some(other) = holder {
                if let Some(intent) = self.get(&intent_name(other)).await? {
                    let status = IntentStatus::read(&intent)?;
                    if status.state == "pending" {
                        let created = intent.metadata.creation_timestamp.as_ref().map(|t| t.0);
                        let expired = status.expires_at <= Timestamp::now();
                        return Err(LogError::Locked {
                            source_name: source.to_string(),
                            intent: other,
                            holder: annotation(&intent, ANN_HOLDER).unwrap_or("?").to_string(),
                            state: if expired { "expired" } else { "pending" }.to_string(),
                            age: created
                                .map(|c| age(c, Timestamp::now()))
                                .unwrap_or_else(|| "?".into()),
                        });
                    }
                }
            }
            let written = match head {
                None => {
                    let ann = BTreeMap::from([
                        (ANN_LOCK.to_string(), id.to_string()),
                        (ANN_SOURCE.to_string(), source.to_string()),
                    ]);
                    let extra = [(LABEL_SOURCE, label_value(source))];
                    self.create(&secret(&name, TYPE_SOURCE, labels(&extra), ann, None))
                        .await?
                }
                Some(mut head) => {
                    head.metadata
                        .annotations
                        .get_or_insert_with(BTreeMap::new)
                        .insert(ANN_LOCK.into(), id.to_string());
                    self.replace(&head).await?
                }
            };
            if let Write::Done(_) = written {
                return Ok(());
            }
        }
        Err(LogError::Contended(format!("the lock {name}")))
    }

    async fn refuse_lock(&self, id: i64, holder: &str, reason: &str) -> Result<(), LogError> {
        self.transition(id, "aborted", &["pending"], |status| {
            status.state = "aborted".into();
            status.lock_refused = true;
            status.ended = Some(Ended {
                sequence: id,
                at: Timestamp::now(),
                by: holder.to_string(),
                reason: reason.to_string(),
                revision: None,
                automatic: false,
            });
            Ok(())
        })
        .await
        .map(|_| ())
    }

    /// Reads intent `id`, checks its state is one of `allowed`, changes it with `change` and
    /// writes it at the version read; again from the read when someone wrote in between.
    async fn transition(
        &self,
        id: i64,
        attempted: &'static str,
        allowed: &[&str],
        mut change: impl FnMut(&mut IntentStatus) -> Result<(), LogError>,
    ) -> Result<(Secret, IntentStatus), LogError> {
        for _ in 0..RETRIES {
            let mut intent = self
                .get(&intent_name(id))
                .await?
                .ok_or(LogError::NoIntent(id))?;
            let mut status = IntentStatus::read(&intent)?;
            if !allowed.contains(&status.state.as_str()) {
                return Err(LogError::WrongState {
                    id,
                    state: status.state,
                    attempted,
                });
            }
            change(&mut status)?;
            status.write(&mut intent);
            if let Write::Done(written) = self.replace(&intent).await? {
                return Ok((*written, status));
            }
        }
        Err(LogError::Contended(intent_name(id)))
    }

    /// Extends a pending intent's expiry to `ttl` (default: its own) from now; returns
    /// the new expiry.
    pub async fn renew(&self, id: i64, ttl_seconds: Option<i64>) -> Result<Timestamp, LogError> {
        let (_, status) = self
            .transition(id, "renewed", LOCKING, |status| {
                status.ttl_seconds = ttl_seconds.unwrap_or(status.ttl_seconds);
                status.expires_at = plus(Timestamp::now(), status.ttl_seconds);
                Ok(())
            })
            .await?;
        Ok(status.expires_at)
    }

    /// Ends intent `id` without a commit; returns its source.
    pub async fn end(
        &self,
        id: i64,
        end: End,
        actor: &str,
        reason: &str,
    ) -> Result<String, LogError> {
        let (state, attempted, allowed) = end.transition();
        self.write_end(id, (state, attempted, allowed), false, actor, reason)
            .await
    }

    /// A daemon's release of a lock whose holder it saw gone (`locks.auto_release_after`):
    /// only of a lock still held, as the store's `auto-release`, and marked so
    /// ([`ANN_END_ACTION`]) for every replica's history. Returns its source.
    pub async fn auto_release(
        &self,
        id: i64,
        actor: &str,
        reason: &str,
    ) -> Result<String, LogError> {
        let transition = ("released", "released automatically", LOCKING);
        self.write_end(id, transition, true, actor, reason).await
    }

    async fn write_end(
        &self,
        id: i64,
        (state, attempted, allowed): (&'static str, &'static str, &'static [&'static str]),
        automatic: bool,
        actor: &str,
        reason: &str,
    ) -> Result<String, LogError> {
        let sequence = self.next_number().await?;
        let (intent, _) = self
            .transition(id, attempted, allowed, |status| {
                status.state = state.into();
                status.ended = Some(Ended {
                    sequence,
                    at: Timestamp::now(),
                    by: actor.to_string(),
                    reason: reason.to_string(),
                    revision: None,
                    automatic,
                });
                Ok(())
            })
            .await?;
        Ok(annotation(&intent, ANN_SOURCE).unwrap_or("").to_string())
    }

    /// Commits intent `id`: marks it committed (at the version read, so an abort and a
    /// commit cannot both win), then records what it wanted as a revision under the number
    /// the commit took. Returns the source and the revision's number.
    pub async fn commit_intent(&self, id: i64, actor: &str) -> Result<(String, i64), LogError> {
        let revision = self.next_number().await?;
        let now = Timestamp::now();
        let (intent, _) = self
            .transition(id, "committed", OPEN, |status| {
                status.state = "committed".into();
                status.ended = Some(Ended {
                    sequence: revision,
                    at: now,
                    by: actor.to_string(),
                    reason: String::new(),
                    revision: Some(revision),
                    automatic: false,
                });
                Ok(())
            })
            .await?;
        let parts = self.parts_of(&intent).await?;
        let encoded =
            assemble(&intent, |name| parts.get(name))?.ok_or_else(|| FormatError::Invalid {
                name: intent_name(id),
                reason: "a part of its payload is missing".into(),
            })?;
        let record: IntentRecord = decode(&intent_name(id), &encoded)?;
        let source = record.source.clone();
        let rev = RevisionRecord {
            id: revision,
            source: record.source,
            author: record.author,
            message: record.message,
            committed_at: now,
            committed_by: actor.to_string(),
            intent: Some(id),
            objects: record.objects,
        };
        let extra = [(LABEL_SOURCE, label_value(&source))];
        let ann = BTreeMap::from([(ANN_SOURCE.to_string(), source.clone())]);
        let mut rev_labels = labels(&extra);
        rev_labels.insert(LABEL_ID.into(), revision.to_string());
        let name = revision_name(revision);
        for object in record_secrets(
            &name,
            TYPE_REVISION,
            rev_labels,
            ann,
            &encode(&rev),
            MAX_PART,
        ) {
            if let Write::Raced = self.create(&object).await? {
                return Err(LogError::Contended(name));
            }
        }
        Ok((source, revision))
    }

    /// The further parts of `record`, by name.
    async fn parts_of(&self, record: &Secret) -> Result<BTreeMap<String, Secret>, LogError> {
        let count: usize = annotation(record, ANN_CHUNKS)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let mut parts = BTreeMap::new();
        for i in 1..=count {
            let name = chunk_name(name_of(record), i);
            if let Some(part) = self.get(&name).await? {
                parts.insert(name, part);
            }
        }
        Ok(parts)
    }
}

impl Write {
    fn then(self, value: i64) -> Option<i64> {
        match self {
            Write::Done(_) => Some(value),
            Write::Raced => None,
        }
    }
}

fn plus(at: Timestamp, seconds: i64) -> Timestamp {
    at.saturating_add(SignedDuration::from_secs(seconds))
        .expect("a signed duration never needs calendar units")
}

/// `5m`, `2h3m`: how long ago, for the lock's message.
fn age(from: Timestamp, now: Timestamp) -> String {
    let secs = now.duration_since(from).as_secs().max(0);
    format!("{:#}", SignedDuration::from_secs(secs))
}
