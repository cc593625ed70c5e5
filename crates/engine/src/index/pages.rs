//! `/drift` in pages, with Kubernetes' list chunking semantics
//! (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go` `GetList`): a page of at most
//! `limit` entries, an opaque `continue` token while more remain (absent on the last page),
//! `remainingItemCount` beside it, and every page of one list read from the state of its
//! first page, as Kubernetes reads every page at the first page's resourceVersion.
//!
//! A first page that does not hold everything takes a snapshot: the matching keys in list
//! order. Nothing is copied for it: when the engine then changes or removes an entry the
//! snapshot holds, the entry as it was is kept beside the snapshot (copy on write), once per
//! changed key. Entries stay boxed in the index rather than shared (`Arc`): an entry is 248
//! bytes, and the two reference counts would move every one from mimalloc's 256-byte class
//! to the 320-byte one, 64 bytes per object at all times to save a copy while a list is paged.
//!
//! Snapshots are bounded ([`SNAPSHOT_TTL`], [`MAX_SNAPSHOTS`], [`MAX_SNAPSHOT_KEYS`]), and
//! only a list longer than one page takes one. A token whose snapshot is gone (expired, evicted,
//! or taken by another replica behind the same Service) is answered as kube-apiserver answers
//! a compacted one (`etcd3/errors.go` `handleCompactedErrorForPaging`): 410 `Expired`, with a
//! token that continues after the last key answered, in the current state.

use super::token::{filter_digest, order, ListKey, Token};
use super::DriftIndex;
use driftd_core::report::{DriftEntry, DriftFilter};
use driftd_k8s::ObjectKey;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Entries per page when the request sets no `limit` (or 0): kubectl's `--chunk-size`
/// default. The first page's time is mostly the sort of every matching key; 500 entries
/// serialize in a few milliseconds.
pub const DEFAULT_PAGE_SIZE: usize = 500;
/// A larger `limit` is lowered to this, which the API conventions allow (a client follows
/// `continue` rather than counting): it bounds one answer's size and time.
pub const MAX_PAGE_SIZE: usize = 5_000;
/// How long after its first page a list can be continued consistently: kube-apiserver's
/// default etcd compaction interval (`--etcd-compaction-interval`, 5 minutes).
pub const SNAPSHOT_TTL: Duration = Duration::from_secs(300);
/// Lists being paged at once; a new one evicts the oldest (whose next page then answers
/// 410 and continues inconsistently).
pub const MAX_SNAPSHOTS: usize = 8;
/// Keys held by every snapshot together (about 40 bytes each with the copy-on-write table):
/// at most ~40 MB, whatever the number of objects. A single list larger than this is still
/// taken, alone.
pub const MAX_SNAPSHOT_KEYS: usize = 1_000_000;

/// kube-apiserver's message for an expired continue token answered with an inconsistent one
/// (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/errors.go`, `inconsistentContinue`).
pub const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display \
     a consistent list result. You can start a new list without the continue parameter, or use \
     the continue token in this response to retrieve the remainder of the results. Continuing \
     with the provided token results in an inconsistent list - objects that were created, \
     modified, or deleted between the time the first chunk was returned and now may show up in \
     the list.";

/// One page of `/drift`.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub objects: Vec<DriftEntry>,
    /// Absent on the last page.
    pub continue_token: Option<String>,
    /// Entries after this page, while `continue_token` is set.
    pub remaining_item_count: Option<u64>,
}

/// Why a `continue` token gives no page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    /// Not a token this driftd issued (400).
    #[error("invalid continue token: {0}")]
    Malformed(&'static str),
    /// Issued for a list with other filters (400): a token continues one list only.
    #[error(
        "the continue token belongs to a list with other filters (source, namespace, kind, \
         class); send the same filters as the first page, or start a new list without continue"
    )]
    OtherFilters,
    /// Its snapshot is gone (410, reason `Expired`); `continue_token` continues after the
    /// last entry answered, in the current state.
    #[error("{INCONSISTENT_CONTINUE}")]
    Expired { continue_token: String },
}

/// The snapshots of lists being paged.
#[derive(Debug)]
pub(super) struct Snapshots {
    /// Random per process: see [`Token::instance`].
    instance: String,
    next_id: u64,
    /// Oldest first.
    held: VecDeque<Snapshot>,
    keys: usize,
}

#[derive(Debug)]
struct Snapshot {
    id: u64,
    filter: String,
    taken: Instant,
    /// The matching keys as of the first page: the first `sorted` in list order, the rest
    /// after them in no order until a page past the first asks for them.
    keys: Vec<Arc<ObjectKey>>,
    sorted: usize,
    /// Every key of `keys`, with the entry as of the first page once the index changed or
    /// removed it (`None` while the index's entry is still that one).
    kept: HashMap<Arc<ObjectKey>, Option<Arc<DriftEntry>>>,
}

impl Snapshots {
    pub(super) fn new() -> Snapshots {
        use std::hash::{BuildHasher, Hasher};
        // Random enough to tell processes apart, without a dependency for it.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        Snapshots {
            instance: format!("{:016x}", hasher.finish()),
            next_id: 1,
            held: VecDeque::new(),
            keys: 0,
        }
    }

    /// Keeps `old`, the entry of `key` before the index changes or removes it, for every
    /// snapshot that holds `key` and has not kept it yet.
    pub(super) fn preserve(&mut self, key: &ObjectKey, old: Option<&DriftEntry>) {
        if self.held.is_empty() {
            return;
        }
        self.expire(Instant::now());
        let Some(old) = old else { return };
        let mut shared: Option<Arc<DriftEntry>> = None;
        for snapshot in &mut self.held {
            if let Some(slot @ None) = snapshot.kept.get_mut(key) {
                *slot = Some(shared.get_or_insert_with(|| Arc::new(old.clone())).clone());
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        while self
            .held
            .front()
            .is_some_and(|s| now.saturating_duration_since(s.taken) >= SNAPSHOT_TTL)
        {
            self.drop_front();
        }
    }

    fn drop_front(&mut self) {
        if let Some(s) = self.held.pop_front() {
            self.keys -= s.keys.len();
        }
    }

    fn insert(
        &mut self,
        filter: String,
        keys: Vec<Arc<ObjectKey>>,
        sorted: usize,
        now: Instant,
    ) -> u64 {
        while !self.held.is_empty()
            && (self.held.len() >= MAX_SNAPSHOTS || self.keys + keys.len() > MAX_SNAPSHOT_KEYS)
        {
            self.drop_front();
        }
        let id = self.next_id;
        self.next_id += 1;
        self.keys += keys.len();
        let kept = keys.iter().map(|k| (k.clone(), None)).collect();
        self.held.push_back(Snapshot {
            id,
            filter,
            taken: now,
            keys,
            sorted,
            kept,
        });
        id
    }

    /// The snapshot `token` names, if this process holds it. One of other filters than the
    /// token says is not it (a forged token): its list is not answered for other filters.
    fn find(&self, token: &Token) -> Option<usize> {
        let id = token.snapshot?;
        if token.instance != self.instance {
            return None;
        }
        self.held
            .iter()
            .position(|s| s.id == id && s.filter == token.filter)
    }

    /// Lists held and keys they hold (tests and the docs' memory bound).
    #[cfg(test)]
    pub(super) fn held(&self) -> (usize, usize) {
        (self.held.len(), self.keys)
    }
}

impl DriftIndex {
    /// One page of the entries matching `filter`, in list order (source, kind, namespace,
    /// name, apiVersion); `limit` is clamped to 1..=[`MAX_PAGE_SIZE`] (the HTTP layer maps
    /// an absent or 0 `limit` to [`DEFAULT_PAGE_SIZE`]). `now` is the request's time, for the
    /// snapshots' time to live.
    pub fn page(
        &self,
        filter: &DriftFilter,
        limit: usize,
        continue_token: Option<&str>,
        now: Instant,
    ) -> Result<Page, PageError> {
        let limit = limit.clamp(1, MAX_PAGE_SIZE);
        let digest = filter_digest(filter);
        let lock = || {
            self.pages
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let after = match continue_token {
            None => None,
            Some(text) => {
                let token = Token::decode(text).map_err(PageError::Malformed)?;
                if token.filter != digest {
                    return Err(PageError::OtherFilters);
                }
                let mut snapshots = lock();
                snapshots.expire(now);
                match (snapshots.find(&token), token.snapshot) {
                    (Some(at), _) => {
                        return self.snapshot_page(&mut snapshots, at, token.position, limit)
                    }
                    (None, Some(_)) => {
                        let next = Token::new(&snapshots.instance, None, 0, token.last, digest);
                        return Err(PageError::Expired {
                            continue_token: next.encode(),
                        });
                    }
                    // An inconsistent continuation: from the current state, after `last`.
                    (None, None) => Some(token.last),
                }
            }
        };
        // The sort is done without the snapshots' lock: concurrent first pages (under the
        // index's read lock) do not wait for each other. No write comes between reading the
        // entries and taking the snapshot: writes need `&mut self`.
        let stale = self.stale_set();
        let mut matching: Vec<(&Arc<ObjectKey>, &DriftEntry)> = self
            .candidates(filter)
            .filter_map(|key| Some((key, self.get(key)?)))
            .filter(|(_, e)| filter.matches(e))
            .filter(|(_, e)| after.as_ref().is_none_or(|a| a.as_order() < order(e)))
            .collect();
        let by_order = |a: &(&Arc<ObjectKey>, &DriftEntry), b: &(&Arc<ObjectKey>, &DriftEntry)| {
            order(a.1).cmp(&order(b.1))
        };
        // The first page needs only the `limit` first entries in order: selecting them is
        // linear, and the rest is sorted once a page after this one asks for it.
        if matching.len() > limit {
            matching.select_nth_unstable_by(limit - 1, by_order);
        }
        let first = limit.min(matching.len());
        matching[..first].sort_unstable_by(by_order);
        if matching.len() <= limit {
            let objects = matching
                .iter()
                .map(|(_, e)| self.answered(e, &stale))
                .collect();
            return Ok(Page {
                objects,
                continue_token: None,
                remaining_item_count: None,
            });
        }
        let objects = matching[..limit]
            .iter()
            .map(|(_, e)| self.answered(e, &stale))
            .collect();
        let last = ListKey::of(matching[limit - 1].1);
        let remaining = (matching.len() - limit) as u64;
        let keys: Vec<Arc<ObjectKey>> = matching.into_iter().map(|(k, _)| k.clone()).collect();
        let mut snapshots = lock();
        snapshots.expire(now);
        let id = snapshots.insert(digest.clone(), keys, limit, now);
        let token = Token::new(&snapshots.instance, Some(id), limit, last, digest);
        Ok(Page {
            objects,
            continue_token: Some(token.encode()),
            remaining_item_count: Some(remaining),
        })
    }

    /// The page at `position` of the snapshot at `at`.
    fn snapshot_page(
        &self,
        snapshots: &mut Snapshots,
        at: usize,
        position: usize,
        limit: usize,
    ) -> Result<Page, PageError> {
        self.sort_snapshot(&mut snapshots.held[at]);
        let snapshots = &*snapshots;
        let snapshot = &snapshots.held[at];
        let len = snapshot.keys.len();
        if position == 0 || position > len {
            return Err(PageError::Malformed("a position outside its list"));
        }
        let end = (position + limit).min(len);
        let stale = self.stale_set();
        let entries: Vec<&DriftEntry> = snapshot.keys[position..end]
            .iter()
            .filter_map(|key| match snapshot.kept.get(key) {
                Some(Some(kept)) => Some(&**kept),
                // Unchanged since the first page: the index's entry is that one.
                _ => self.get(key),
            })
            .collect();
        let objects: Vec<DriftEntry> = entries.iter().map(|e| self.answered(e, &stale)).collect();
        // The snapshot stays after its last page: a token may be used again (as Kubernetes'
        // can, until compaction), and the bounds above end it.
        if end == len {
            return Ok(Page {
                objects,
                continue_token: None,
                remaining_item_count: None,
            });
        }
        let last = entries
            .last()
            .map(|e| ListKey::of(e))
            .ok_or(PageError::Malformed("an empty page"))?;
        let token = Token::new(
            &snapshots.instance,
            Some(snapshot.id),
            end,
            last,
            snapshot.filter.clone(),
        );
        Ok(Page {
            objects,
            continue_token: Some(token.encode()),
            remaining_item_count: Some((len - end) as u64),
        })
    }

    /// Puts the keys after a snapshot's first page in list order, by their entries as of
    /// the first page (kept ones where the index changed them since).
    fn sort_snapshot(&self, snapshot: &mut Snapshot) {
        if snapshot.sorted >= snapshot.keys.len() {
            return;
        }
        let Snapshot {
            keys, kept, sorted, ..
        } = snapshot;
        let mut rest: Vec<(Option<&DriftEntry>, &Arc<ObjectKey>)> = keys[*sorted..]
            .iter()
            .map(|key| {
                let entry = match kept.get(key) {
                    Some(Some(kept)) => Some(&**kept),
                    _ => self.get(key),
                };
                (entry, key)
            })
            .collect();
        // Every key had an entry when the snapshot was taken, and a removed one is kept:
        // `None` does not happen; it sorts last rather than failing the list.
        rest.sort_unstable_by(|a, b| match (a.0, b.0) {
            (Some(x), Some(y)) => order(x).cmp(&order(y)),
            (x, y) => y.is_some().cmp(&x.is_some()),
        });
        let rest: Vec<Arc<ObjectKey>> = rest.into_iter().map(|(_, key)| key.clone()).collect();
        keys.truncate(*sorted);
        keys.extend(rest);
        *sorted = keys.len();
    }

    /// Kinds whose watch is failing, as (apiVersion, kind): their entries are answered
    /// `stale`.
    pub(super) fn stale_set(&self) -> BTreeSet<(&str, &str)> {
        self.watch_health
            .iter()
            .filter(|h| h.unhealthy_since.is_some())
            .map(|h| (h.kind.api_version.as_str(), h.kind.kind.as_str()))
            .collect()
    }

    /// `e` as answered: with the marks set when answered, never stored.
    pub(super) fn answered(&self, e: &DriftEntry, stale: &BTreeSet<(&str, &str)>) -> DriftEntry {
        let mut e = e.clone();
        e.stale = stale.contains(&(e.api_version.as_str(), e.kind.as_str()));
        e.scope = self.scope_of(&e);
        e
    }
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
