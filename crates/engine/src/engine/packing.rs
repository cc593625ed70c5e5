//! The engine's side of packing: when the packing dictionary is trained, from what, and
//! repacking what was packed before it (`driftd_watch::packed` says why it is trained early).

use super::Engine;
use crate::memory::release_free_memory;
use crate::outputs::Outputs;
use driftd_watch::packed;
use driftd_watch::WatchControl;
use std::time::Instant;

impl<W: WatchControl, O: Outputs> Engine<W, O> {
    /// During the first lists: trains the dictionary once every kind can be sampled, so
    /// what was packed without one shrinks now and the rest of the lists is packed with it.
    pub(super) fn train_packing_early(&mut self) {
        if !self.wanted.tracked.packing().trained()
            && self.watching.lists.each_kind_begun()
            && self
                .wanted
                .tracked
                .live_keys()
                .nth(packed::SAMPLES)
                .is_some()
            && self.train_packing()
        {
            self.repack();
        }
    }

    /// After a burst (the first lists, a reload): trains the packing dictionary from the
    /// objects seen so far if there is none yet, repacks what was packed before it, then
    /// gives freed pages back.
    pub(super) fn compact_memory(&mut self) {
        if self.watching.lists.all_listed() {
            self.train_packing();
            self.repack();
        }
        release_free_memory();
    }

    /// Trains the packing dictionary (once) from live copies of every kind,
    /// topped up with manifests when few objects exist live; true if it did.
    fn train_packing(&mut self) -> bool {
        if self.wanted.tracked.packing().trained() {
            return false;
        }
        let mut samples = packed::Samples::default();
        self.wanted.tracked.sample(packed::SAMPLES, &mut samples);
        if samples.len() < packed::SAMPLES {
            self.wanted
                .desired
                .sample(packed::SAMPLES - samples.len(), &mut samples);
        }
        self.wanted.tracked.packing().train(&samples)
    }

    /// Repacks with the dictionary the copies packed before it was trained.
    fn repack(&mut self) {
        if !self.wanted.tracked.packing().trained() {
            return;
        }
        let started = Instant::now();
        let repacked = self.wanted.desired.repack() + self.wanted.tracked.repack();
        if repacked > 0 {
            tracing::info!(
                objects = repacked,
                took_ms = started.elapsed().as_millis() as u64,
                desired_bytes = self.wanted.desired.packed_bytes(),
                live_bytes = self.wanted.tracked.packed_bytes(),
                "packed copies repacked with a dictionary trained on this cluster's objects"
            );
        }
    }
}
