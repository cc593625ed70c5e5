//! The watchers the engine runs and the state of their lists: which kinds are watched, what
//! a list delivered, when a kind is listed again (a periodic re-list, a resourceVersion
//! that went back), and watch health: a kind is unhealthy (its objects `stale`) from a
//! failed attempt until the server answers again.

use crate::list_states::{Lists, Position};
use driftd_core::diff::pointer;
use driftd_k8s::{ObjectKey, TypeKey};
use driftd_watch::{WatchControl, WatchEvent};
use jiff::Timestamp;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// See the module documentation.
pub(super) struct Watching<W> {
    pub(super) lists: Lists,
    pub(super) watches: W,
    /// Period of the periodic re-list (`relist_seconds`); `None`: off.
    relist: Option<Duration>,
}

impl<W: WatchControl> Watching<W> {
    /// Nothing watched yet; watchers are started through `watches`.
    pub(super) fn new(watches: W, relist: Option<Duration>) -> Watching<W> {
        Watching {
            lists: Lists::default(),
            watches,
            relist,
        }
    }

    pub(super) fn relist_period(&self) -> Option<Duration> {
        self.relist
    }

    /// Watches exactly `kinds`.
    pub(super) fn sync(&mut self, kinds: &BTreeSet<TypeKey>) {
        self.lists.sync(kinds, &mut self.watches);
    }

    /// Lists `kind` again; `waiting` are not judged until that list ends.
    pub(super) fn relist(&mut self, kind: &TypeKey, waiting: BTreeSet<ObjectKey>) {
        self.lists.relist(kind, waiting, &mut self.watches);
    }

    /// Lists every listed kind again (`relist_seconds`): a change the watches never
    /// delivered is found within one period.
    pub(super) fn relist_listed(&mut self) {
        let kinds = self.lists.relist_listed(&mut self.watches);
        tracing::debug!(kinds, "periodic re-list");
    }

    /// A failed attempt makes `kind` unhealthy (its objects `stale`) until the server
    /// answers again; the first failure and the recovery are logged.
    pub(super) fn health_step(&mut self, kind: &TypeKey, event: &WatchEvent, now: Timestamp) {
        match event {
            WatchEvent::Error(_) => {
                if self.lists.failed(kind, now) {
                    tracing::warn!(kind = %kind, "watch unhealthy: what driftd shows of this kind is stale until the API server answers again");
                }
            }
            // The server's current resourceVersion is asked before a watch resumes; that
            // answer alone does not prove the watch works.
            WatchEvent::Position(_) => {}
            _ => {
                if let Some(since) = self.lists.answered(kind, now) {
                    let outage = now.duration_since(since);
                    tracing::info!(kind = %kind, since = %since, outage_seconds = outage.as_secs_f64(), "watch healthy again");
                }
            }
        }
    }

    /// A watch event's object carries the server's position between lists.
    pub(super) fn event_position(&mut self, kind: &TypeKey, object: &Value) {
        let Some(rv) =
            pointer::at(object, &["metadata", "resourceVersion"]).and_then(Value::as_str)
        else {
            return;
        };
        self.position(kind, rv, Position::Event);
    }

    /// The server said where it is for `kind`; a resourceVersion lower than one already
    /// seen (a restored API state) lists the kind afresh.
    pub(super) fn position(&mut self, kind: &TypeKey, rv: &str, from: Position) {
        if self.lists.position(kind, rv, from, &mut self.watches) {
            tracing::warn!(kind = %kind, resource_version = rv, "the API server's resourceVersion went back (its state was restored?): listing the kind afresh");
        }
    }
}
