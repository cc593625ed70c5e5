//! What the engine tracks: the committed desired state, the open intents, and the objects
//! either wants, with their live copies. Only a commit or an intent (both polled from the
//! store) changes what is wanted; everything else reads it.

use crate::desired::DesiredSet;
use crate::intents::IntentSet;
use crate::tracked::{KindAndKey, TrackedSet};
use driftd_k8s::ObjectKey;
use driftd_watch::packed::Packing;
use std::sync::Arc;
use std::time::Duration;

/// See the module documentation.
pub(super) struct Wanted {
    pub(super) desired: DesiredSet,
    pub(super) intents: IntentSet,
    /// Objects the engine keeps live copies of and judges, with their kinds: the desired
    /// ones and those only an open intent wants. Memory follows the desired state.
    pub(super) tracked: TrackedSet,
    /// How often the store is asked whether someone committed (`desired_poll_millis`).
    pub(super) poll: Duration,
}

impl Wanted {
    /// Nothing wanted yet; manifests and live copies are packed with `packing`.
    pub(super) fn new(packing: Packing, poll: Duration) -> Wanted {
        Wanted {
            desired: DesiredSet::new(packing.clone()),
            intents: IntentSet::default(),
            tracked: TrackedSet::new(packing),
            poll,
        }
    }

    /// Tracks exactly what the desired state and the open intents want now. Returns the
    /// objects no longer tracked, and those newly tracked with their kind.
    pub(super) fn retrack(&mut self) -> (Vec<ObjectKey>, Vec<KindAndKey>) {
        let intent_only = self
            .intents
            .only_wanted(&self.desired)
            .into_iter()
            .map(|(key, kind)| (Arc::new(key), Arc::new(kind)));
        let desired = self
            .desired
            .typed_keys()
            .map(|(key, kind)| (key.clone(), kind.clone()));
        self.tracked.replace(intent_only.chain(desired))
    }
}
