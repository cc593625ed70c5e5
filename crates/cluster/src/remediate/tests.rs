use super::*;

fn entry(source: &str, class: DriftClass, drifting_for: i64) -> DriftEntry {
    DriftEntry {
        source: source.into(),
        revision: 1,
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        namespace: Some("shop".into()),
        name: "web".into(),
        class,
        since: Some(jiff::Timestamp::from_second(1_000_000 - drifting_for).unwrap()),
        changes: Default::default(),
        patch: Default::default(),
        ignored: Vec::new(),
        intent: None,
        schema: None,
        dry_run: None,
        stale: false,
        scope: None,
        stale_config: None,
        who: None,
    }
}

/// Whether `e` may be remediated at second 1,000,000, tried `last` seconds ago, with
/// `stale` kinds; sources `shop` and `busy` are `auto`, `busy` has an open intent.
fn allows(e: &DriftEntry, last: Option<u64>, stale: &HashSet<(String, String)>) -> bool {
    let sources = BTreeSet::from(["shop".to_string(), "busy".to_string()]);
    let open = HashSet::from(["busy".to_string()]);
    Eligible {
        sources: &sources,
        open: &open,
        stale,
        settle: Duration::from_secs(5),
        retry: Duration::from_secs(60),
    }
    .allows(
        e,
        jiff::Timestamp::from_second(1_000_000).unwrap(),
        last.map(Duration::from_secs),
    )
}

#[test]
fn only_settled_modified_or_missing_objects_of_auto_sources_without_an_open_intent() {
    let none = HashSet::new();
    assert!(allows(
        &entry("shop", DriftClass::Modified, 10),
        None,
        &none
    ));
    assert!(allows(
        &entry("shop", DriftClass::Missing, 10),
        Some(61),
        &none
    ));
    // Not settled yet, or tried too recently.
    assert!(!allows(
        &entry("shop", DriftClass::Modified, 2),
        None,
        &none
    ));
    assert!(!allows(
        &entry("shop", DriftClass::Modified, 10),
        Some(30),
        &none
    ));
    // Never what an open intent explains, nor any other class, nor another source.
    for class in [
        DriftClass::Uncommitted,
        DriftClass::InSync,
        DriftClass::Unmanaged,
        DriftClass::Rejected,
    ] {
        assert!(!allows(&entry("shop", class, 10), None, &none), "{class:?}");
    }
    assert!(!allows(
        &entry("busy", DriftClass::Modified, 10),
        None,
        &none
    ));
    assert!(!allows(
        &entry("other", DriftClass::Modified, 10),
        None,
        &none
    ));
    let mut in_sync = entry("shop", DriftClass::Modified, 10);
    in_sync.since = None;
    assert!(!allows(&in_sync, None, &none));
    // A kind whose watch fails is not known well enough to write.
    let stale = HashSet::from([("apps/v1".to_string(), "Deployment".to_string())]);
    assert!(!allows(
        &entry("shop", DriftClass::Modified, 10),
        None,
        &stale
    ));
}
