//! The intent's public types: its states and actions, what a read returns, what `begin`
//! takes, and the refusals (a held lock, a wrong state) with the words users see.

use driftd_core::manifest::ManifestObject;
use driftd_k8s::ObjectKey;
use jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// Shortest and longest accepted TTL. Below a second renewals cannot keep up; a lock that
/// may stand for more than a week unattended is no lock anyone will notice.
pub const MIN_TTL: Duration = Duration::from_secs(1);
pub const MAX_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// Where an intent stands. `Expired` is never stored: it is a pending intent read after its
/// `expires_at` (its holder stopped renewing it), i.e. an abandoned lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum IntentState {
    Pending,
    Expired,
    Committed,
    Aborted,
    Failed,
    Interrupted,
    Released,
    /// A later revision of the same source was committed: the failed or interrupted attempt
    /// is history, the newer committed desired state is the team's decision.
    Superseded,
}

impl IntentState {
    pub fn as_str(self) -> &'static str {
        match self {
            IntentState::Pending => "pending",
            IntentState::Expired => "expired",
            IntentState::Committed => "committed",
            IntentState::Aborted => "aborted",
            IntentState::Failed => "failed",
            IntentState::Interrupted => "interrupted",
            IntentState::Released => "released",
            IntentState::Superseded => "superseded",
        }
    }

    /// The intent may stand for a change in the cluster that no committed revision knows
    /// about: what the engine compares live objects against (class `uncommitted`).
    pub fn is_open(self) -> bool {
        matches!(
            self,
            IntentState::Pending
                | IntentState::Expired
                | IntentState::Failed
                | IntentState::Interrupted
        )
    }

    /// The intent holds its source's lock.
    pub fn holds_lock(self) -> bool {
        matches!(self, IntentState::Pending | IntentState::Expired)
    }

    pub(crate) fn from_db(text: &str) -> Option<IntentState> {
        Some(match text {
            "pending" => IntentState::Pending,
            "committed" => IntentState::Committed,
            "aborted" => IntentState::Aborted,
            "failed" => IntentState::Failed,
            "interrupted" => IntentState::Interrupted,
            "released" => IntentState::Released,
            "superseded" => IntentState::Superseded,
            _ => return None,
        })
    }
}

impl std::fmt::Display for IntentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transition recorded in the source's history (renewals are not: they are heartbeats).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntentAction {
    Begin,
    Commit,
    Abort,
    Fail,
    Interrupt,
    Release,
    AutoRelease,
    /// Someone (the daemon) noticed the intent had expired; recorded once per expiry.
    ExpireDetected,
    /// Renewed after it had expired: its holder came back before anyone released it.
    Revive,
    Supersede,
}

impl IntentAction {
    pub fn as_str(self) -> &'static str {
        match self {
            IntentAction::Begin => "begin",
            IntentAction::Commit => "commit",
            IntentAction::Abort => "abort",
            IntentAction::Fail => "fail",
            IntentAction::Interrupt => "interrupt",
            IntentAction::Release => "release",
            IntentAction::AutoRelease => "auto-release",
            IntentAction::ExpireDetected => "expire-detected",
            IntentAction::Revive => "revive",
            IntentAction::Supersede => "supersede",
        }
    }

    pub(crate) fn from_db(text: &str) -> Option<IntentAction> {
        [
            IntentAction::Begin,
            IntentAction::Commit,
            IntentAction::Abort,
            IntentAction::Fail,
            IntentAction::Interrupt,
            IntentAction::Release,
            IntentAction::AutoRelease,
            IntentAction::ExpireDetected,
            IntentAction::Revive,
            IntentAction::Supersede,
        ]
        .into_iter()
        .find(|a| a.as_str() == text)
    }
}

impl std::fmt::Display for IntentAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One intent, with its state as of the store's clock.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IntentInfo {
    pub id: i64,
    pub source: String,
    /// Who holds the lock: `pod:NAMESPACE/NAME` for a pod, else free text such as
    /// `alice@laptop (pid 4242)`.
    pub holder: String,
    pub state: IntentState,
    pub author: String,
    pub message: String,
    pub created_at: Timestamp,
    pub ttl_seconds: i64,
    /// Moved forward by every renewal.
    pub expires_at: Timestamp,
    pub ended_at: Option<Timestamp>,
    pub ended_by: Option<String>,
    pub end_reason: Option<String>,
    pub content_hash: String,
    pub object_count: usize,
    /// The revision it was committed as (an existing one when the content was unchanged).
    pub revision_id: Option<i64>,
    /// Recorded in the cluster (`--cluster`) and imported: it is ended there, not here.
    pub cluster: bool,
}

impl IntentInfo {
    /// The holder as a pod `(namespace, name)`, when it was given as `pod:NAMESPACE/NAME`:
    /// the daemon can then tell that the holder is gone when the pod is.
    pub fn holder_pod(&self) -> Option<(&str, &str)> {
        holder_pod(&self.holder)
    }

    /// The command that releases this intent, for messages that tell people what to type.
    pub fn release_command(&self) -> String {
        // A Helm release's version in flight is cleared by Helm, which driftd follows.
        if let Some(lock) = driftd_core::helm::PendingLock::parse(&self.source, &self.holder) {
            return lock.release_command();
        }
        // An operation Pulumi's state records as pending is cleared there, and driftd
        // follows that state.
        if let Some(op) = self.pulumi_operation() {
            return op.clear_command();
        }
        format!("driftd intent release {}{}", self.id, self.cluster_flag())
    }

    /// The command that keeps what this intent applied. For a Helm release's version in
    /// flight, Helm's way: driftd takes a version as committed only once Helm records it
    /// deployed, and never commits one itself.
    pub fn commit_command(&self) -> String {
        if let Some(lock) = driftd_core::helm::PendingLock::parse(&self.source, &self.holder) {
            return match self.state {
                IntentState::Pending | IntentState::Expired => format!(
                    "let the `helm upgrade` finish (Helm records version {} deployed, which \
                     driftd takes as committed); if it is stuck, `{}`, then upgrade again",
                    lock.version,
                    lock.release_command()
                ),
                _ => format!(
                    "run the `helm upgrade` again (Helm records the version deployed, which \
                     driftd takes as committed) or go back with `{}`",
                    lock.release_command()
                ),
            };
        }
        if let Some(op) = self.pulumi_operation() {
            return op.keep_command();
        }
        format!("driftd intent commit {}{}", self.id, self.cluster_flag())
    }

    /// The operation of an interrupted Pulumi update this intent stands for.
    pub fn pulumi_operation(&self) -> Option<driftd_core::pulumi::interrupted::Interrupted> {
        driftd_core::pulumi::interrupted::Interrupted::parse(&self.holder, &self.message)
    }

    fn cluster_flag(&self) -> &'static str {
        if self.cluster {
            " --cluster"
        } else {
            ""
        }
    }
}

/// Parses a holder of the form `pod:NAMESPACE/NAME`.
pub fn holder_pod(holder: &str) -> Option<(&str, &str)> {
    let (ns, name) = holder.strip_prefix("pod:")?.split_once('/')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains('/')).then_some((ns, name))
}

/// One desired object of an intent.
#[derive(Debug, Clone, PartialEq)]
pub struct IntentObject {
    pub key: ObjectKey,
    pub api_version: String,
    pub object: Value,
}

/// An intent that may stand for an uncommitted change, with the objects it wanted.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenIntent {
    pub intent: IntentInfo,
    pub objects: Vec<IntentObject>,
}

/// An intent to begin: the whole object set the deploy is about to apply.
pub struct BeginRequest<'a> {
    pub source: &'a str,
    pub holder: &'a str,
    pub author: &'a str,
    pub message: &'a str,
    pub ttl: Duration,
    pub objects: &'a [ManifestObject],
    /// Objects of the input left out (`generateName` without a `name`), recorded with the
    /// revision the intent becomes.
    pub skipped: usize,
}

/// `begin` was refused because the source is locked by another intent. Says whose lock it
/// is, how old, and the exact command that releases it.
#[derive(Debug, Clone, PartialEq)]
pub struct LockHeld {
    pub intent: IntentInfo,
    pub now: Timestamp,
}

impl std::fmt::Display for LockHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.intent;
        write!(
            f,
            "source {:?} is locked by intent {} ({}), held by {}, begun {} ago by {}",
            i.source,
            i.id,
            i.state,
            i.holder,
            friendly(self.now.duration_since(i.created_at)),
            i.author
        )?;
        if i.state == IntentState::Expired {
            write!(
                f,
                "; it expired {} ago: its holder stopped renewing it",
                friendly(self.now.duration_since(i.expires_at))
            )?;
        } else {
            write!(
                f,
                "; it expires in {} unless renewed",
                friendly(i.expires_at.duration_since(self.now))
            )?;
        }
        write!(
            f,
            ". If that deploy is gone, release the lock with `{}`",
            i.release_command()
        )
    }
}

/// A duration in whole seconds as people write it (`8m 30s`).
pub(crate) fn friendly(d: SignedDuration) -> String {
    format!("{:#}", SignedDuration::from_secs(d.as_secs().max(0)))
}

/// An operation on an intent that is in the wrong state for it.
#[derive(Debug, Clone, PartialEq)]
pub struct WrongState {
    pub intent: IntentInfo,
    /// What was attempted, as a participle: "committed", "released".
    pub attempted: &'static str,
    pub allowed: &'static [IntentState],
}

impl std::fmt::Display for WrongState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.intent;
        write!(f, "intent {} of source {:?} is {}", i.id, i.source, i.state)?;
        if let (Some(by), Some(at)) = (&i.ended_by, i.ended_at) {
            write!(f, " (by {by} at {at}")?;
            match i.end_reason.as_deref() {
                Some(reason) if !reason.is_empty() => write!(f, ": {reason})")?,
                _ => write!(f, ")")?,
            }
        }
        let allowed: Vec<&str> = self.allowed.iter().map(|s| s.as_str()).collect();
        let allowed = match allowed.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        write!(f, "; only a {allowed} intent can be {}", self.attempted)
    }
}
