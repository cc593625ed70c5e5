//! List, then watch from the list's resourceVersion, as client-go's reflector and
//! kube-runtime's `watcher` do, but with what those keep to themselves told to the engine:
//! - every failed attempt ([`WatchEvent::Error`]), however soon a retry succeeds;
//! - every answer: a watch that opens is [`WatchEvent::Opened`] (kube-runtime's watcher
//!   says nothing when a resumed watch opens, so a recovered kind would look failed until
//!   its next change);
//! - the server's resourceVersion ([`WatchEvent::Position`], [`WatchEvent::Bookmark`]): the
//!   list's, each bookmark's, and before a watch resumes, the server's current one (a list of at most one object).
//!   kube-apiserver accepts a plain watch from a resourceVersion it has not reached and
//!   stays silent until it does (`staging/src/k8s.io/apiserver/pkg/storage/cacher/
//!   cacher.go`, `waitUntilWatchCacheFreshAndForceAllEvents` only waits for watch-lists),
//!   so after an etcd restore only that question reveals that the state went back.
//!
//! A re-list the engine asks of a running watcher (periodic) is made while the watch goes on
//! ([`in_place`]), so changes are not held back until the list ends.
//!
//! One explicit state machine ([`State`]) stepped by [`step`], with a jittered backoff
//! ([`Backoff`]) after each failure.

mod in_place;

use super::backoff::Backoff;
use super::live_object::LiveObject;
use super::outbox::Outbox;
use super::{WatchError, WatchEvent};
use futures::stream::BoxStream;
use futures::StreamExt;
use in_place::InPlace;
use kube::api::{ApiResource, ListParams, WatchEvent as ApiEvent, WatchParams};
use kube::{Api, Resource};
use std::time::Duration;

/// Sends `$event` to `$outbox`, or ends the list+watch if the engine is gone.
macro_rules! send_or_end {
    ($outbox:expr, $event:expr) => {
        if !$outbox.send($event).await {
            return (State::Empty, Outcome::End(End::EngineGone));
        }
    };
}

/// Objects per list page (client-go's pager default).
const PAGE: u32 = 500;

/// The server ends a watch after this long (as kube-runtime asks: below kube-apiserver's
/// 5 minute request timeout); the watcher then resumes it.
const WATCH_TIMEOUT: u32 = 290;

/// A watch stream silent for this long is taken as dead (a connection lost without a
/// close), and resumed.
const IDLE: Duration = Duration::from_secs(WATCH_TIMEOUT as u64 + 10);

type Events = BoxStream<'static, kube::Result<ApiEvent<LiveObject>>>;

/// Where one list+watch stands.
pub enum State {
    /// Next: a fresh list.
    Empty,
    /// Listed up to `rv`; next: a watch from it. `ask` first asks the server's current
    /// resourceVersion (every resume but the one right after a list). A re-list in place
    /// under way goes on once the watch is open again.
    Listed {
        rv: String,
        ask: bool,
        relist: Option<Box<InPlace>>,
    },
    /// Streaming from `rv` (the last event's or bookmark's), and re-listing in place if asked.
    Watching {
        rv: String,
        events: Events,
        relist: Option<Box<InPlace>>,
    },
}

/// Which objects of the resource one list+watch follows: kube-apiserver's field and label
/// selectors, sent alike on every list and watch so a re-list covers exactly what the watch
/// did.
#[derive(Debug, Clone, Default)]
pub struct Selectors {
    pub fields: Option<String>,
    pub labels: Option<String>,
}

impl Selectors {
    fn list(&self) -> ListParams {
        ListParams {
            field_selector: self.fields.clone(),
            label_selector: self.labels.clone(),
            ..ListParams::default()
        }
    }
}

/// Why [`run`] returned.
pub enum End {
    /// The engine is gone.
    EngineGone,
    /// The resource is no longer found (its CRD went away): ask discovery again.
    NotFound,
}

/// Lists and watches what `selectors` pick of `resource` in the scope of `api` (a namespace
/// or the whole cluster) to `outbox` until its receiver is gone or the resource is not found.
pub async fn run(
    api: Api<LiveObject>,
    resource: &ApiResource,
    selectors: &Selectors,
    outbox: &Outbox,
) -> End {
    let mut backoff = Backoff::default();
    let mut state = State::Empty;
    loop {
        let (next, outcome) = step(state, &api, resource, selectors, outbox).await;
        state = next;
        match outcome {
            Outcome::Sent => {}
            Outcome::Answered => backoff.reset(),
            Outcome::Failed => tokio::time::sleep(backoff.next_wait()).await,
            Outcome::End(end) => return end,
        }
    }
}

/// What one step did, for the backoff.
pub enum Outcome {
    /// Delivered events (or nothing to report).
    Sent,
    /// The server answered a request: the backoff starts over.
    Answered,
    /// A request failed: wait before the next.
    Failed,
    End(End),
}

/// Advances one list+watch by one state. Every message goes to `outbox`.
pub async fn step(
    state: State,
    api: &Api<LiveObject>,
    resource: &ApiResource,
    selectors: &Selectors,
    outbox: &Outbox,
) -> (State, Outcome) {
    match state {
        State::Empty => {
            // A fresh list is whatever re-list was asked.
            outbox.relist.take();
            let mut continue_token: Option<String> = None;
            let mut first = true;
            loop {
                let params = ListParams {
                    limit: Some(PAGE),
                    continue_token: continue_token.take(),
                    ..selectors.list()
                };
                let turn = outbox.list_page_turn().await;
                let page = match api.list(&params).await {
                    Ok(page) => page,
                    Err(err) => {
                        let not_found = is_not_found(&err);
                        send_or_end!(outbox, WatchEvent::Error(WatchError::List(err)));
                        if not_found {
                            return (State::Empty, Outcome::End(End::NotFound));
                        }
                        return (State::Empty, Outcome::Failed);
                    }
                };
                if first {
                    send_or_end!(outbox, WatchEvent::Init);
                    first = false;
                }
                for object in page.items {
                    send_or_end!(outbox, outbox.applied(object.into_json(resource)));
                }
                drop(turn);
                continue_token = page.metadata.continue_.filter(|c| !c.is_empty());
                if continue_token.is_some() {
                    continue;
                }
                let Some(rv) = page.metadata.resource_version.filter(|rv| !rv.is_empty()) else {
                    send_or_end!(outbox, WatchEvent::Error(WatchError::NoResourceVersion));
                    return (State::Empty, Outcome::Failed);
                };
                send_or_end!(outbox, WatchEvent::InitDone);
                send_or_end!(outbox, WatchEvent::Position(rv.clone()));
                let listed = State::Listed {
                    rv,
                    ask: false,
                    relist: None,
                };
                return (listed, Outcome::Answered);
            }
        }
        State::Listed { rv, ask, relist } => {
            if ask {
                let params = ListParams {
                    limit: Some(1),
                    ..selectors.list()
                };
                match api.list(&params).await {
                    Ok(list) => {
                        if let Some(current) = list.metadata.resource_version {
                            send_or_end!(outbox, WatchEvent::Position(current));
                        }
                    }
                    Err(err) => {
                        send_or_end!(outbox, WatchEvent::Error(WatchError::List(err)));
                        return (State::Listed { rv, ask, relist }, Outcome::Failed);
                    }
                }
            }
            // (Bookmarks are asked for by default.)
            let mut params = WatchParams::default().timeout(WATCH_TIMEOUT);
            if let Some(fields) = &selectors.fields {
                params = params.fields(fields);
            }
            if let Some(labels) = &selectors.labels {
                params = params.labels(labels);
            }
            match api.watch(&params, &rv).await {
                Ok(events) => {
                    send_or_end!(outbox, WatchEvent::Opened);
                    let events = events.boxed();
                    (State::Watching { rv, events, relist }, Outcome::Answered)
                }
                Err(err) => {
                    let gone = matches!(&err, kube::Error::Api(s) if s.code == 410);
                    send_or_end!(outbox, WatchEvent::Error(WatchError::Watch(err)));
                    let next = match gone {
                        true => State::Empty,
                        false => State::Listed {
                            rv,
                            ask: true,
                            relist,
                        },
                    };
                    (next, Outcome::Failed)
                }
            }
        }
        State::Watching {
            rv,
            mut events,
            relist: None,
        } => {
            if outbox.relist.take() {
                // From here on every change counts as seen by the re-list.
                send_or_end!(outbox, WatchEvent::Init);
                let relist = Some(Box::new(InPlace::new(&rv)));
                return (State::Watching { rv, events, relist }, Outcome::Sent);
            }
            let item = tokio::select! {
                item = tokio::time::timeout(IDLE, events.next()) => item.unwrap_or_else(|_| {
                    tracing::debug!(kind = %outbox.key, "watch silent too long; resuming it");
                    None
                }),
                _ = outbox.relist.asked() => {
                    return (State::Watching { rv, events, relist: None }, Outcome::Sent);
                }
            };
            watched(item, rv, events, None, resource, outbox).await
        }
        State::Watching {
            rv,
            events,
            relist: Some(relist),
        } => in_place::step(rv, events, relist, api, resource, selectors, outbox).await,
    }
}

/// The state after the watch of `rv` gave `item` (`None`: it ended), with the re-list in
/// place `relist` under way.
async fn watched(
    item: Option<kube::Result<ApiEvent<LiveObject>>>,
    rv: String,
    events: Events,
    mut relist: Option<Box<InPlace>>,
    resource: &ApiResource,
    outbox: &Outbox,
) -> (State, Outcome) {
    match item {
        Some(Ok(ApiEvent::Added(o) | ApiEvent::Modified(o))) => {
            let rv = o.meta().resource_version.clone().unwrap_or(rv);
            if let Some(relist) = &mut relist {
                relist.changed(&o);
            }
            send_or_end!(outbox, outbox.applied(o.into_json(resource)));
            (State::Watching { rv, events, relist }, Outcome::Sent)
        }
        Some(Ok(ApiEvent::Deleted(o))) => {
            let rv = o.meta().resource_version.clone().unwrap_or(rv);
            if let Some(relist) = &mut relist {
                relist.changed(&o);
            }
            send_or_end!(outbox, WatchEvent::Delete(o.into_json(resource)));
            (State::Watching { rv, events, relist }, Outcome::Sent)
        }
        Some(Ok(ApiEvent::Bookmark(bookmark))) => {
            let rv = bookmark.metadata.resource_version;
            send_or_end!(outbox, WatchEvent::Bookmark(rv.clone()));
            (State::Watching { rv, events, relist }, Outcome::Sent)
        }
        Some(Ok(ApiEvent::Error(status))) => {
            // 410: the position was compacted away. 504 "Too large resource
            // version": the server is behind the position (client-go's reflector
            // lists afresh on both). Anything else: resume after a pause.
            let fresh = status.code == 410 || too_large(&status);
            send_or_end!(outbox, WatchEvent::Error(WatchError::Status(status)));
            let next = match fresh {
                true => State::Empty,
                false => State::Listed {
                    rv,
                    ask: true,
                    relist,
                },
            };
            (next, Outcome::Failed)
        }
        Some(Err(err)) => {
            send_or_end!(outbox, WatchEvent::Error(WatchError::Watch(err)));
            let next = State::Listed {
                rv,
                ask: true,
                relist,
            };
            (next, Outcome::Failed)
        }
        // The server ended the stream (its timeout, or a restart): resume.
        None => {
            let next = State::Listed {
                rv,
                ask: true,
                relist,
            };
            (next, Outcome::Sent)
        }
    }
}

/// kube-apiserver's "Too large resource version" (`storage.NewTooLargeResourceVersionError`
/// in `staging/src/k8s.io/apiserver/pkg/storage/errors.go`): a 504 Timeout with the cause
/// `ResourceVersionTooLarge`.
fn too_large(status: &kube::core::Status) -> bool {
    status.code == 504
        && status.details.as_ref().is_some_and(|d| {
            d.causes
                .iter()
                .any(|c| c.reason == "ResourceVersionTooLarge")
        })
}

pub fn is_not_found(err: &kube::Error) -> bool {
    match err {
        kube::Error::Discovery(_) => true,
        kube::Error::Api(status) => status.code == 404,
        _ => false,
    }
}
