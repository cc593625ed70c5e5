//! Where one watcher run sends what it read: used by the list+watch loop (`listwatch`)
//! and set up by the `supervisor` that starts the run, so neither needs the other.

use super::packed::Packing;
use super::{Applied, WatchEvent, WatchMessage, WatcherId};
use driftd_k8s::TypeKey;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, Notify, Semaphore};

/// Where one watcher run sends its messages, tagged with its kind and id.
pub(super) struct Outbox {
    pub(super) key: TypeKey,
    pub(super) id: WatcherId,
    pub(super) sender: mpsc::Sender<WatchMessage>,
    pub(super) list_pages: Arc<Semaphore>,
    /// Whether the engine keeps copies of this kind (the supervisor sets it).
    pub(super) pack: Arc<AtomicBool>,
    /// What copies are packed with: the engine unpacks them with the same.
    pub(super) packing: Packing,
    /// A re-list the engine asked of this run ([`crate::WatchControl::relist`]).
    pub(super) relist: Arc<RelistRequest>,
}

/// A re-list asked of a running watcher: a flag, so a request made while the watcher is
/// busy is not lost, and a wake-up for a watcher waiting on a quiet watch.
#[derive(Debug, Default)]
pub(super) struct RelistRequest {
    asked: AtomicBool,
    wake: Notify,
}

impl RelistRequest {
    pub(super) fn ask(&self) {
        self.asked.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Whether a re-list was asked since the last call.
    pub(super) fn take(&self) -> bool {
        self.asked.swap(false, Ordering::SeqCst)
    }

    /// Completes once a re-list may have been asked (a wake-up can be stale: [`Self::take`]
    /// says).
    pub(super) async fn asked(&self) {
        self.wake.notified().await
    }
}

impl Outbox {
    /// [`WatchEvent::Apply`] of `object`, with the engine's copy packed if it keeps one.
    pub(super) fn applied(&self, object: Value) -> WatchEvent {
        WatchEvent::Apply(match self.pack.load(Ordering::Relaxed) {
            true => Applied::packed(object, &self.packing),
            false => Applied::unpacked(object),
        })
    }

    /// Waits for a turn to fetch and hand over one list page; the turn ends when the
    /// returned permit is dropped.
    pub(super) async fn list_page_turn(&self) -> tokio::sync::SemaphorePermit<'_> {
        self.list_pages
            .acquire()
            .await
            .expect("the semaphore is never closed")
    }

    /// False once the engine is gone.
    pub(super) async fn send(&self, event: WatchEvent) -> bool {
        let message = WatchMessage {
            type_key: self.key.clone(),
            watcher: self.id,
            event,
        };
        self.sender.send(message).await.is_ok()
    }
}
