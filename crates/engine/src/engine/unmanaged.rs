//! The engine's side of unmanaged coverage (`[unmanaged]`): live objects of covered kinds
//! that no source desires become `unmanaged` entries, and the covered objects a source owns
//! are counted for `driftd_coverage_ratio`.
//!
//! The count is kept as live copies come and go: counting anew at the end of every burst of
//! watch events would be a pass over every tracked object per burst.

use super::super::coverage::Change;
use super::*;

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// An object of covered `kind` that no source tracks is `live` now (`None`: deleted).
    pub(super) fn covered_changed(&mut self, kind: &TypeKey, key: ObjectKey, live: Option<&Value>) {
        let change = match live {
            Some(object) => self.coverage.observe(kind, &key, object, self.clock.wall()),
            None if self.coverage.forget(&key) => Change::Removed,
            None => Change::None,
        };
        match change {
            Change::Added(mut entry) => {
                entry.stale_config = self.stale_configs.note(&key).cloned().map(Box::new);
                self.index.write().unwrap().upsert(key, *entry);
            }
            Change::Removed => self.withdraw_unmanaged(&key),
            Change::None => {}
        }
    }

    /// Withdraws the entry of `key` if it is an `unmanaged` one.
    pub(super) fn withdraw_unmanaged(&mut self, key: &ObjectKey) {
        let mut index = self.index.write().unwrap();
        if index
            .get(key)
            .is_some_and(|e| e.class == DriftClass::Unmanaged)
        {
            index.remove(key);
        }
    }

    /// Keeps `live` as the live copy of tracked `key` (`None`: gone), and the count of
    /// covered objects a source owns with it.
    pub(super) fn set_live_copy(&mut self, key: &ObjectKey, live: Option<Packed>) {
        let now_live = live.is_some();
        let Some(was_live) = self.tracked.set_live(key, live) else {
            return;
        };
        if was_live != now_live && self.coverage.covers_key(key) {
            match now_live {
                true => self.owned_covered += 1,
                false => self.owned_covered -= 1,
            }
        }
    }

    /// Counts the covered objects a source owns anew: the tracked set was replaced.
    pub(super) fn count_owned_covered(&mut self) {
        self.owned_covered = self.coverage.owned(self.tracked.live_keys()).unwrap_or(0);
    }
}
