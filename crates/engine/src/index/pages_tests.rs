//! Paging as Kubernetes pages a list. The cases marked "ported" are the storage tests of
//! kube-apiserver (`staging/src/k8s.io/apiserver/pkg/storage/testing/store_tests.go`), with
//! pods `namespace/name` as drifting ConfigMaps of one source: the list order (source, kind,
//! namespace, name) is then the etcd key order of those pods. The others derive their
//! expectations by hand from the semantics those tests check.

use super::*;
use driftd_core::report::DriftClass;
use jiff::Timestamp;

fn put(index: &mut DriftIndex, namespace: &str, name: &str, class: DriftClass) {
    let key = crate::test_support::configmap(namespace, name);
    let entry = crate::test_support::entry("shop", &key, class, Timestamp::UNIX_EPOCH);
    index.upsert(key, entry);
}

/// Pods first/bar, second/bar, second/foo, as `RunTestListContinuation` and
/// `RunTestListInconsistentContinuation` create them; drifting (`missing`), so the default
/// filter lists them.
fn three() -> DriftIndex {
    let mut index = DriftIndex::new(10);
    for (namespace, name) in [("first", "bar"), ("second", "bar"), ("second", "foo")] {
        put(&mut index, namespace, name, DriftClass::Missing);
    }
    index
}

fn names(page: &Page) -> Vec<String> {
    page.objects
        .iter()
        .map(|e| format!("{}/{}", e.namespace.as_deref().unwrap_or(""), e.name))
        .collect()
}

fn all() -> DriftFilter {
    DriftFilter::default()
}

#[test]
fn pages_continue_where_the_last_one_ended() {
    // Ported: RunTestListContinuation.
    let index = three();
    let now = Instant::now();
    let first = index.page(&all(), 1, None, now).unwrap();
    assert_eq!(names(&first), ["first/bar"]);
    let from_second = first.continue_token.expect("more remain");
    assert_eq!(first.remaining_item_count, Some(2));

    // "no limit, should get two items" (a limit above what remains, here).
    let rest = index
        .page(&all(), MAX_PAGE_SIZE, Some(&from_second), now)
        .unwrap();
    assert_eq!(names(&rest), ["second/bar", "second/foo"]);
    assert_eq!(rest.continue_token, None, "the last page has no token");
    assert_eq!(rest.remaining_item_count, None);

    // "limit, should get two more pages": the same token again.
    let second = index.page(&all(), 1, Some(&from_second), now).unwrap();
    assert_eq!(names(&second), ["second/bar"]);
    assert_eq!(second.remaining_item_count, Some(1));
    let from_third = second.continue_token.expect("one more");
    let third = index.page(&all(), 1, Some(&from_third), now).unwrap();
    assert_eq!(names(&third), ["second/foo"]);
    assert_eq!(third.continue_token, None);
}

#[test]
fn a_filter_pages_the_entries_it_matches() {
    // Ported: RunTestListContinuationWithFilter. Its field selector `metadata.name!=bar`
    // leaves out 2/bar; here 2/bar is in sync, which the default filter leaves out.
    let mut index = DriftIndex::new(10);
    put(&mut index, "1", "foo", DriftClass::Modified);
    put(&mut index, "2", "bar", DriftClass::InSync);
    put(&mut index, "3", "foo", DriftClass::Modified);
    put(&mut index, "4", "foo", DriftClass::Modified);
    let now = Instant::now();
    let first = index.page(&all(), 2, None, now).unwrap();
    assert_eq!(names(&first), ["1/foo", "3/foo"]);
    // Kubernetes leaves the count out under a selector, as it cannot count without reading
    // on; driftd's snapshot knows it: 3 matching, 2 answered.
    assert_eq!(first.remaining_item_count, Some(1));
    let token = first.continue_token.expect("more remain");
    let second = index.page(&all(), 2, Some(&token), now).unwrap();
    assert_eq!(names(&second), ["4/foo"]);
    assert_eq!(second.continue_token, None);
}

#[test]
fn an_expired_token_is_410_with_a_token_that_continues_in_the_current_state() {
    // Ported: RunTestListInconsistentContinuation. Compaction is the snapshot's time to live.
    let mut index = three();
    let start = Instant::now();
    let first = index.page(&all(), 1, None, start).unwrap();
    assert_eq!(names(&first), ["first/bar"]);
    let from_second = first.continue_token.unwrap();
    // "update /second/foo" (a new class here), then the snapshot expires.
    put(&mut index, "second", "foo", DriftClass::Modified);
    let later = start + SNAPSHOT_TTL;
    let Err(PageError::Expired { continue_token }) =
        index.page(&all(), 0, Some(&from_second), later)
    else {
        panic!("expected 410 Expired");
    };
    let err = PageError::Expired {
        continue_token: String::new(),
    };
    assert!(err
        .to_string()
        .starts_with("The provided continue parameter is too old "));
    let second = index.page(&all(), 1, Some(&continue_token), later).unwrap();
    assert_eq!(names(&second), ["second/bar"]);
    let from_third = second.continue_token.expect("one more");
    let third = index.page(&all(), 1, Some(&from_third), later).unwrap();
    assert_eq!(names(&third), ["second/foo"]);
    assert_eq!(
        third.objects[0].class,
        DriftClass::Modified,
        "the new state"
    );
    assert_eq!(third.continue_token, None);
}

#[test]
fn every_page_of_a_list_is_the_state_of_its_first_page() {
    // As Kubernetes reads every page at the first page's resourceVersion (store.go
    // GetList: a continue token's revision is read `WithRev`): what changed after the
    // first page is not seen, what was removed still is, what came is not.
    let mut index = three();
    let now = Instant::now();
    let first = index.page(&all(), 1, None, now).unwrap();
    assert_eq!(names(&first), ["first/bar"]);
    put(&mut index, "second", "bar", DriftClass::Modified);
    put(&mut index, "second", "bar", DriftClass::Uncommitted); // changed twice
    index.remove(&crate::test_support::configmap("second", "foo"));
    put(&mut index, "second", "baz", DriftClass::Missing); // new, between bar and foo
    put(&mut index, "first", "bar", DriftClass::InSync);
    let rest = index
        .page(&all(), 10, first.continue_token.as_deref(), now)
        .unwrap();
    assert_eq!(names(&rest), ["second/bar", "second/foo"]);
    assert!(rest.objects.iter().all(|e| e.class == DriftClass::Missing));
    // A new list is the current state.
    let fresh = index.page(&all(), 10, None, now).unwrap();
    assert_eq!(names(&fresh), ["second/bar", "second/baz"]);
    assert_eq!(fresh.objects[0].class, DriftClass::Uncommitted);
}

#[test]
fn a_token_of_another_replica_continues_after_its_last_key() {
    // Two replicas behind one Service with the same drift: the second does not hold the
    // first's snapshot, so it answers as for a compacted token (410 and a token that
    // continues after the last key answered), and the list completes.
    let a = three();
    let b = three();
    let now = Instant::now();
    let first = a.page(&all(), 1, None, now).unwrap();
    let token = first.continue_token.unwrap();
    let Err(PageError::Expired { continue_token }) = b.page(&all(), 1, Some(&token), now) else {
        panic!("expected 410 Expired from the other replica");
    };
    let rest = b.page(&all(), 10, Some(&continue_token), now).unwrap();
    assert_eq!(names(&rest), ["second/bar", "second/foo"]);
}

#[test]
fn tokens_of_other_filters_and_garbage_are_refused() {
    let index = three();
    let now = Instant::now();
    let token = index
        .page(&all(), 1, None, now)
        .unwrap()
        .continue_token
        .unwrap();
    let other = DriftFilter {
        namespace: Some("second".into()),
        ..all()
    };
    assert_eq!(
        index.page(&other, 1, Some(&token), now),
        Err(PageError::OtherFilters)
    );
    assert!(matches!(
        index.page(&all(), 1, Some("not a token"), now),
        Err(PageError::Malformed(_))
    ));
}

#[test]
fn a_list_within_one_page_takes_no_snapshot_and_snapshots_are_bounded() {
    let index = three();
    let now = Instant::now();
    let whole = index.page(&all(), 3, None, now).unwrap();
    assert_eq!(whole.objects.len(), 3);
    assert_eq!(whole.continue_token, None);
    assert_eq!(whole.remaining_item_count, None);
    assert_eq!(index.pages.lock().unwrap().held(), (0, 0));

    let tokens: Vec<String> = (0..=MAX_SNAPSHOTS)
        .map(|_| {
            index
                .page(&all(), 1, None, now)
                .unwrap()
                .continue_token
                .unwrap()
        })
        .collect();
    assert_eq!(
        index.pages.lock().unwrap().held(),
        (MAX_SNAPSHOTS, 3 * MAX_SNAPSHOTS)
    );
    // The oldest was evicted for the newest.
    assert!(matches!(
        index.page(&all(), 1, Some(&tokens[0]), now),
        Err(PageError::Expired { .. })
    ));
    assert!(index.page(&all(), 1, Some(&tokens[1]), now).is_ok());
}

#[test]
fn pages_answer_what_the_whole_query_answers() {
    // Consistency with `query` (not fidelity): pages of every size, concatenated, are the
    // whole list.
    let mut index = DriftIndex::new(10);
    for i in 0..40 {
        let class = [
            DriftClass::Missing,
            DriftClass::Modified,
            DriftClass::InSync,
        ][i % 3];
        put(&mut index, ["a", "b"][i % 2], &format!("cm-{i:02}"), class);
    }
    let whole: Vec<String> = index
        .query(&all())
        .iter()
        .map(|e| format!("{}/{}", e.namespace.as_deref().unwrap_or(""), e.name))
        .collect();
    let now = Instant::now();
    for limit in [1, 2, 7, 26, 27] {
        let mut got = Vec::new();
        let mut token = None;
        loop {
            let page = index.page(&all(), limit, token.as_deref(), now).unwrap();
            got.extend(names(&page));
            token = page.continue_token;
            if token.is_none() {
                break;
            }
        }
        assert_eq!(got, whole, "limit {limit}");
    }
}

#[test]
fn a_token_naming_a_snapshot_of_other_filters_does_not_read_it() {
    // A token edited to carry the digest of other filters: the snapshot it names was taken
    // for every drifting object, so it is not answered for `namespace=first`; the request
    // continues from the current state under its own filters instead.
    let index = three();
    let now = Instant::now();
    let token = index
        .page(&all(), 1, None, now)
        .unwrap()
        .continue_token
        .unwrap();
    let other = DriftFilter {
        namespace: Some("second".into()),
        ..all()
    };
    let mut forged = Token::decode(&token).unwrap();
    forged.filter = filter_digest(&other);
    let Err(PageError::Expired { continue_token }) =
        index.page(&other, 10, Some(&forged.encode()), now)
    else {
        panic!("expected 410 Expired");
    };
    let rest = index.page(&other, 10, Some(&continue_token), now).unwrap();
    assert_eq!(names(&rest), ["second/bar", "second/foo"]);
}
