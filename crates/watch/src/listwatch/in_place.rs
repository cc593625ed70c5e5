//! A re-list made while the watch goes on: the engine's periodic re-list. A new watcher
//! would list first and stream nothing meanwhile, so every change of the kind waited for the
//! whole list (at a million objects, minutes: far past what `/drift` is expected to show
//! within). Here the watch keeps streaming, its events forwarded before any listed object.
//!
//! The list only adds what the watch could have missed. A listed copy of an object the
//! watch changed or deleted since the re-list began is passed over: the watch delivers
//! every version of the object after the one it sent, in order, so that copy is one it has
//! sent, an older one (a deletion would come back to life), or one it will send.
//!
//! The engine sees the same messages as for a re-list by a new watcher (`Init`, objects,
//! `InitDone`, `Position`), with the watch's changes among them; `Init` comes first, so
//! every change after it counts as seen by the list.

use super::{watched, End, Events, Outcome, Selectors, State, IDLE, PAGE};
use crate::live_object::LiveObject;
use crate::outbox::Outbox;
use crate::{WatchError, WatchEvent};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use kube::api::{ApiResource, ListParams, ObjectList};
use kube::{Api, Resource};
use std::collections::{HashSet, VecDeque};
use tokio::sync::OwnedSemaphorePermit;

type Fetch = BoxFuture<'static, (kube::Result<ObjectList<LiveObject>>, OwnedSemaphorePermit)>;

/// A re-list under way while the watch goes on.
pub struct InPlace {
    /// The watch's resourceVersion when the re-list began: a list below it says the
    /// server's state went back.
    began_at: String,
    /// The page being fetched (it outlives the steps that forward watch events meanwhile).
    fetching: Option<Fetch>,
    /// Listed objects not forwarded yet, and their page's turn, held until they are (as a
    /// first list holds it: it bounds the pages parsed and waiting over every watcher).
    listed: VecDeque<LiveObject>,
    turn: Option<OwnedSemaphorePermit>,
    /// The next page's token once a page was fetched; `None` after the last one.
    next: Option<Option<String>>,
    /// The list's resourceVersion (its first page's: later pages are read at it).
    list_rv: Option<String>,
    /// Objects (namespace, name) the watch changed or deleted since the re-list began.
    changed: HashSet<(Option<String>, String)>,
    /// A listed object goes next, before another watch event: under a steady stream of
    /// changes the list would never end otherwise.
    listed_turn: bool,
}

impl InPlace {
    pub(super) fn new(rv: &str) -> InPlace {
        InPlace {
            began_at: rv.to_string(),
            fetching: None,
            listed: VecDeque::new(),
            turn: None,
            next: None,
            list_rv: None,
            changed: HashSet::new(),
            listed_turn: false,
        }
    }

    /// The watch changed or deleted `object`.
    pub(super) fn changed(&mut self, object: &LiveObject) {
        self.changed.insert(identity(object));
    }

    /// Whether a listed `object` goes to the engine (see the module documentation).
    fn forwards(&self, object: &LiveObject) -> bool {
        self.changed.is_empty() || !self.changed.contains(&identity(object))
    }
}

fn identity(object: &LiveObject) -> (Option<String>, String) {
    let meta = object.meta();
    (
        meta.namespace.clone(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// What the re-list waits on next.
// One at a time, for one step: its size costs nothing.
#[allow(clippy::large_enum_variant)]
enum Next {
    Event(Option<kube::Result<kube::api::WatchEvent<LiveObject>>>),
    Page(kube::Result<ObjectList<LiveObject>>, OwnedSemaphorePermit),
}

/// One step of watching from `rv` while re-listing: a watch event if one is ready, else a
/// listed object (in turns while both are), else the next page (or a watch event,
/// whichever comes first), else the end of the list.
pub(super) async fn step(
    rv: String,
    mut events: Events,
    mut relist: Box<InPlace>,
    api: &Api<LiveObject>,
    resource: &ApiResource,
    selectors: &Selectors,
    outbox: &Outbox,
) -> (State, Outcome) {
    macro_rules! send {
        ($event:expr) => {
            if !outbox.send($event).await {
                return (State::Empty, Outcome::End(End::EngineGone));
            }
        };
    }
    // A change first (it is newer than anything listed), then a listed object, in turns.
    if !relist.listed_turn || relist.listed.is_empty() {
        if let Some(item) = events.next().now_or_never() {
            relist.listed_turn = true;
            return watched(item, rv, events, Some(relist), resource, outbox).await;
        }
    }
    relist.listed_turn = false;
    if let Some(object) = relist.listed.pop_front() {
        if relist.forwards(&object) {
            send!(outbox.applied(object.into_json(resource)));
        }
        return (
            State::Watching {
                rv,
                events,
                relist: Some(relist),
            },
            Outcome::Sent,
        );
    }
    relist.turn = None;
    if relist.fetching.is_none() {
        let continue_token = match &relist.next {
            None => None,
            Some(Some(token)) => Some(token.clone()),
            Some(None) => return finish(rv, events, relist, outbox).await,
        };
        let params = ListParams {
            limit: Some(PAGE),
            continue_token,
            ..selectors.list()
        };
        let (api, pages) = (api.clone(), outbox.list_pages.clone());
        relist.fetching = Some(
            async move {
                let turn = pages
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed");
                (api.list(&params).await, turn)
            }
            .boxed(),
        );
    }
    let next = {
        let fetching = relist.fetching.as_mut().expect("set above");
        tokio::select! {
            item = tokio::time::timeout(IDLE, events.next()) => Next::Event(item.unwrap_or_else(|_| {
                tracing::debug!(kind = %outbox.key, "watch silent too long; resuming it");
                None
            })),
            (page, turn) = fetching => Next::Page(page, turn),
        }
    };
    match next {
        Next::Event(item) => {
            relist.listed_turn = true;
            watched(item, rv, events, Some(relist), resource, outbox).await
        }
        Next::Page(Ok(page), turn) => {
            relist.fetching = None;
            if relist.list_rv.is_none() {
                relist.list_rv = page.metadata.resource_version.filter(|rv| !rv.is_empty());
            }
            relist.next = Some(page.metadata.continue_.filter(|c| !c.is_empty()));
            relist.listed = page.items.into();
            relist.turn = Some(turn);
            let state = State::Watching {
                rv,
                events,
                relist: Some(relist),
            };
            (state, Outcome::Answered)
        }
        Next::Page(Err(err), _) => {
            // Listed afresh instead, as after any failed list.
            let not_found = super::is_not_found(&err);
            send!(WatchEvent::Error(WatchError::List(err)));
            if not_found {
                return (State::Empty, Outcome::End(End::NotFound));
            }
            (State::Empty, Outcome::Failed)
        }
    }
}

/// Every page forwarded: the list ends, and the watch goes on. The position told is the
/// newer of the list's and the watch's, unless the list is older than where the watch was
/// when the re-list began: the server's state went back, and the watch starts over from the
/// list (a watch from a position the server has not reached is silent until it does).
async fn finish(
    rv: String,
    events: Events,
    relist: Box<InPlace>,
    outbox: &Outbox,
) -> (State, Outcome) {
    macro_rules! send {
        ($event:expr) => {
            if !outbox.send($event).await {
                return (State::Empty, Outcome::End(End::EngineGone));
            }
        };
    }
    let Some(list_rv) = relist.list_rv else {
        send!(WatchEvent::Error(WatchError::NoResourceVersion));
        return (State::Empty, Outcome::Failed);
    };
    send!(WatchEvent::InitDone);
    let number = |rv: &str| rv.parse::<u64>().ok();
    match (number(&list_rv), number(&relist.began_at), number(&rv)) {
        (Some(listed), Some(began), _) if listed < began => {
            send!(WatchEvent::Position(list_rv.clone()));
            let next = State::Listed {
                rv: list_rv,
                ask: false,
                relist: None,
            };
            (next, Outcome::Answered)
        }
        (Some(listed), _, Some(watch)) if listed < watch => {
            send!(WatchEvent::Position(rv.clone()));
            let state = State::Watching {
                rv,
                events,
                relist: None,
            };
            (state, Outcome::Answered)
        }
        _ => {
            send!(WatchEvent::Position(list_rv));
            let state = State::Watching {
                rv,
                events,
                relist: None,
            };
            (state, Outcome::Answered)
        }
    }
}
