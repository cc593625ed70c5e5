//! Automatic releases of intents that came from the cluster log. Such an intent is held in
//! the cluster (its Secret says `pending`, its source's lock names it): releasing it in this
//! replica's database alone would leave every later `driftd run --cluster` refused while
//! `/locks` says nothing is stale. So the engine asks the cluster log's writer to release
//! it there (a task of `serve`, never the engine itself: the engine does no I/O), and the
//! replicas, this one included, import the release as they import any end of an intent.

/// A release the engine asks the cluster log for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRelease {
    /// The intent, by its number in the cluster log (its id in every replica).
    pub id: i64,
    /// Who releases it, recorded as the end's author (`driftd/<replica>`).
    pub actor: String,
    /// Why, recorded with it.
    pub reason: String,
}

/// What came of a [`ClusterRelease`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterReleased {
    pub id: i64,
    pub outcome: ReleaseOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseOutcome {
    /// Written: the intent is released in the cluster log.
    Released,
    /// It had ended there already (committed, released, ...) or was renewed: nothing done.
    NotPending(String),
    /// The write failed (RBAC, API down): left to people.
    Failed(String),
}
