//! The bounded history of changes: what watches replay and resume from, and what lists at
//! an older resourceVersion undo. Every change gets the next resourceVersion, so the
//! history is a window of consecutive versions and finding a position is arithmetic.

use super::object::{Key, StorageKey, Stored};
use driftd_k8s::kinds::ResourceType;
use std::collections::VecDeque;
use std::sync::Arc;

/// A change as watchers see it. `prev` is the version before the change, kept so lists at
/// an older resourceVersion (continue tokens, `resourceVersionMatch=Exact`) can be rebuilt.
/// Both share their bytes with the store.
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub kind: &'static str,
    pub storage: Arc<StorageKey>,
    /// The new version; for `DELETED`, the last version stamped with the deletion's rv.
    pub object: Arc<Stored>,
    pub prev: Option<Arc<Stored>>,
    /// Made by an in-process controller (see [`super::WriteCtx::controller`]).
    pub internal: bool,
}

impl Change {
    pub fn key(&self) -> &Key {
        &self.object.key
    }

    pub fn namespace(&self) -> &str {
        &self.object.key.0
    }

    /// Whether this change concerns the storage of objects of type `info`.
    pub fn concerns(&self, info: &ResourceType) -> bool {
        let (g, p) = super::object::storage_of(info);
        self.storage.0 == g && self.storage.1 == p
    }
}

pub struct History {
    changes: VecDeque<Arc<Change>>,
    limit: usize,
    /// Every change with rv > window_start is in `changes`, `changes[i].rv == window_start + 1 + i`.
    window_start: u64,
    /// Nothing at or before this may be resumed from (set by compaction). Readers already
    /// past it (open watches, the controllers) keep reading the buffer, as open watches on
    /// kube-apiserver's watch cache survive an etcd compaction.
    compacted: u64,
}

/// The position asked for is older than the history holds (410 Expired).
pub struct Compacted {
    pub oldest: u64,
}

impl History {
    pub fn new(limit: usize) -> History {
        History {
            changes: VecDeque::new(),
            limit: limit.max(1),
            window_start: 0,
            compacted: 0,
        }
    }

    /// The oldest resourceVersion a new watch, a continue token or an exact list may start
    /// from.
    pub fn oldest(&self) -> u64 {
        self.window_start.max(self.compacted)
    }

    /// Changes held (what `/_sim/stats` reports as `historyLength`).
    pub fn held(&self) -> usize {
        self.changes.len()
    }

    pub fn push(&mut self, change: Arc<Change>) {
        debug_assert_eq!(change.rv, self.window_start + 1 + self.changes.len() as u64);
        self.changes.push_back(change);
        self.trim();
    }

    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.max(1);
        self.trim();
    }

    /// Forbids resuming from anything up to `rv` (the current version), as an etcd
    /// compaction does.
    pub fn compact(&mut self, rv: u64) {
        self.compacted = rv;
    }

    /// Starts over at `rv` with no change held, as the watch cache of an API server that
    /// restarted on a restored etcd: nothing before `rv` can be resumed from.
    pub fn restart_at(&mut self, rv: u64) {
        self.changes.clear();
        self.window_start = rv;
        self.compacted = rv;
    }

    fn trim(&mut self) {
        while self.changes.len() > self.limit {
            if let Some(c) = self.changes.pop_front() {
                self.window_start = c.rv;
            }
        }
    }

    /// Up to `max` changes after `rv`, oldest first, for a reader already at `rv`.
    pub fn after(&self, rv: u64, max: usize) -> Result<Vec<Arc<Change>>, Compacted> {
        if rv < self.window_start {
            return Err(Compacted {
                oldest: self.window_start,
            });
        }
        let skip = ((rv - self.window_start) as usize).min(self.changes.len());
        Ok(self.changes.range(skip..).take(max).cloned().collect())
    }

    /// Changes after `rv`, newest first (for undoing them).
    pub fn newest_after(&self, rv: u64) -> impl Iterator<Item = &Arc<Change>> {
        self.changes.iter().rev().take_while(move |c| c.rv > rv)
    }
}
