use super::*;
use driftd_core::report::DriftEntry;
use driftd_engine::Leadership;
use driftd_k8s::ObjectKey;
use jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, RwLock};

fn entry(source: &str, namespace: &str, name: &str, class: DriftClass) -> (ObjectKey, DriftEntry) {
    let key = driftd_engine::test_support::configmap(namespace, name);
    let since = "2026-11-30T10:00:00Z".parse().unwrap();
    let entry = driftd_engine::test_support::entry(source, &key, class, since);
    (key, entry)
}

fn setup(cap: usize) -> (SharedIndex, Metrics) {
    let index = Arc::new(RwLock::new(DriftIndex::new(cap)));
    let metrics = Metrics::new(index.clone(), Leadership::always());
    (index, metrics)
}

fn upsert(index: &SharedIndex, (key, entry): (ObjectKey, DriftEntry)) {
    index.write().unwrap().upsert(key, entry);
}

/// The value of the series written exactly as `series` (`name{labels}` or `name`).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn sources(names: &[&str]) -> BTreeMap<String, Timestamp> {
    names
        .iter()
        .map(|n| (n.to_string(), "2026-11-30T09:00:00Z".parse().unwrap()))
        .collect()
}

#[test]
fn per_object_series_are_capped_and_counted() {
    let (index, m) = setup(1);
    index.write().unwrap().set_sources(sources(&["shop"]));
    upsert(&index, entry("shop", "shop", "a", DriftClass::Modified));
    upsert(&index, entry("shop", "shop", "b", DriftClass::Missing));
    // Re-evaluating b while still capped must not count it twice.
    upsert(&index, entry("shop", "shop", "b", DriftClass::Missing));
    let text = m.render();
    let a = r#"{class="modified",kind="ConfigMap",name="a",namespace="shop",source="shop"}"#;
    assert_eq!(
        sample(&text, &format!("driftd_object_drift{a}")),
        Some(1.0),
        "{text}"
    );
    assert!(!text.contains(r#"name="b""#), "{text}");
    assert_eq!(
        sample(&text, "driftd_object_drift_series_omitted_total"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            &format!("driftd_object_drift_since_timestamp_seconds{a}")
        ),
        Some(1796032800.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"driftd_objects{class="missing",source="shop"}"#),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, r#"driftd_objects{class="in_sync",source="shop"}"#),
        Some(0.0)
    );
    assert_eq!(
        sample(
            &text,
            r#"driftd_desired_revision_timestamp_seconds{source="shop"}"#
        ),
        Some(1796029200.0)
    );

    // a resolves: its series goes, and b, drifting without one, takes the slot.
    upsert(&index, entry("shop", "shop", "a", DriftClass::InSync));
    let text = m.render();
    assert!(
        !text.contains(r#"driftd_object_drift{class="modified""#),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            r#"driftd_object_drift{class="missing",kind="ConfigMap",name="b",namespace="shop",source="shop"}"#
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, r#"driftd_objects{class="in_sync",source="shop"}"#),
        Some(1.0)
    );

    // The source leaves the store (and its objects the index): every series of it goes.
    {
        let mut index = index.write().unwrap();
        index.set_sources(BTreeMap::new());
        for name in ["a", "b"] {
            index.remove(&entry("shop", "shop", name, DriftClass::InSync).0);
        }
    }
    assert!(!m.render().contains(r#"source="shop""#));
}

#[test]
fn coverage_ratio_is_absent_while_coverage_is_off() {
    let (index, m) = setup(10);
    let text = m.render();
    assert!(!text.contains("driftd_coverage_ratio"), "{text}");
    assert!(!text.contains("driftd_unmanaged_objects"), "{text}");

    index.write().unwrap().set_owned_covered(Some(0));
    assert_eq!(
        sample(&m.render(), "driftd_coverage_ratio"),
        Some(1.0),
        "nothing covered yet"
    );

    index.write().unwrap().set_owned_covered(Some(2));
    upsert(&index, entry("", "shop", "stray", DriftClass::Unmanaged));
    upsert(&index, entry("", "default", "other", DriftClass::Unmanaged));
    upsert(&index, entry("", "shop", "third", DriftClass::Unmanaged));
    let text = m.render();
    assert_eq!(sample(&text, "driftd_coverage_ratio"), Some(0.4), "{text}");
    assert_eq!(
        sample(
            &text,
            r#"driftd_unmanaged_objects{kind="ConfigMap",namespace="shop"}"#
        ),
        Some(2.0)
    );
    assert!(
        !text.contains("driftd_objects{"),
        "unmanaged objects belong to no source: {text}"
    );
    assert!(!text.contains("driftd_object_drift{"), "{text}");
}

#[test]
fn scalars_are_always_there() {
    let (index, m) = setup(10);
    let text = m.render();
    assert_eq!(sample(&text, "driftd_ready"), Some(0.0), "{text}");
    assert_eq!(sample(&text, "driftd_ignore_rules_expired"), Some(0.0));
    assert_eq!(
        sample(&text, "driftd_object_drift_series_omitted_total"),
        Some(0.0)
    );
    assert!(
        text.contains("# TYPE driftd_object_drift_series_omitted_total counter"),
        "{text}"
    );
    assert!(text.contains("driftd_build_info{version="), "{text}");
    {
        let mut index = index.write().unwrap();
        index.set_ready(true);
        index.set_rules_expired(2);
    }
    let text = m.render();
    assert_eq!(sample(&text, "driftd_ready"), Some(1.0));
    assert_eq!(sample(&text, "driftd_ignore_rules_expired"), Some(2.0));
}

#[test]
fn leader_gauge_says_whether_this_replica_acts_as_leader() {
    let index = Arc::new(RwLock::new(DriftIndex::new(10)));
    let clock = Arc::new(driftd_engine::SystemClock);
    let follower = Metrics::new(index.clone(), Leadership::elected(clock)).render();
    assert_eq!(sample(&follower, "driftd_leader"), Some(0.0), "{follower}");
    let single = Metrics::new(index, Leadership::always()).render();
    assert_eq!(sample(&single, "driftd_leader"), Some(1.0), "{single}");
}

#[test]
fn intents_and_stale_locks_have_bounded_series_with_zeros_for_known_sources() {
    let (index, m) = setup(10);
    {
        let mut index = index.write().unwrap();
        index.set_sources(sources(&["shop"]));
        index.set_intents(BTreeMap::from([
            (("shop".to_string(), "interrupted"), 1),
            (("shop".to_string(), "committed"), 3),
            (("new".to_string(), "pending"), 1),
        ]));
        let lock = |kind, source: &str, id: &str| driftd_core::report::StaleLock {
            kind,
            source: source.into(),
            id: id.into(),
            holder: "pod:shop/deploy-x".into(),
            state: None,
            created_at: "2026-11-30T09:00:00Z".parse().unwrap(),
            age_seconds: 0,
            since: "2026-11-30T09:10:00Z".parse().unwrap(),
            reason: "r".into(),
            release: "driftd intent release 1".into(),
            path: None,
        };
        use driftd_core::report::LockKind;
        index.set_locks(
            vec![
                lock(LockKind::Intent, "new", "1"),
                lock(LockKind::Pulumi, "organization/shop/dev", "a"),
                lock(LockKind::Pulumi, "organization/shop/dev", "b"),
            ],
            true,
        );
    }
    let text = m.render();
    let intents = |source: &str, state: &str| {
        sample(
            &text,
            &format!(r#"driftd_intents{{source="{source}",state="{state}"}}"#),
        )
    };
    assert_eq!(intents("shop", "interrupted"), Some(1.0), "{text}");
    assert_eq!(intents("shop", "committed"), Some(3.0));
    assert_eq!(
        intents("shop", "expired"),
        Some(0.0),
        "zeros for known sources"
    );
    assert_eq!(
        intents("new", "pending"),
        Some(1.0),
        "a source with no revision yet"
    );
    assert_eq!(intents("new", "failed"), Some(0.0));
    assert_eq!(
        text.matches("driftd_intents{").count(),
        16,
        "2 sources x 8 states"
    );
    let locks = |source: &str, kind: &str| {
        sample(
            &text,
            &format!(r#"driftd_stale_locks{{kind="{kind}",source="{source}"}}"#),
        )
    };
    assert_eq!(locks("shop", "intent"), Some(0.0), "{text}");
    assert_eq!(locks("new", "intent"), Some(1.0));
    assert_eq!(locks("organization/shop/dev", "pulumi"), Some(2.0));
}

#[test]
fn stale_config_pods_count_per_workload_and_config_and_vanish_when_resolved() {
    use driftd_core::report::{StaleConfigNote, StaleConfigUse, StalePod};
    let (index, m) = setup(10);
    let (key, mut web) = entry("shop", "shop", "web", DriftClass::StaleConfig);
    web.kind = "Deployment".into();
    let pod = |name: &str| StalePod {
        name: name.into(),
        started_at: "2026-11-30T09:00:00Z".parse().unwrap(),
        reads: vec!["env".into()],
        containers: vec!["app".into()],
    };
    let used = |config: &str, pods: Vec<StalePod>| StaleConfigUse {
        config: config.into(),
        changed_at: "2026-11-30T10:00:00Z".parse().unwrap(),
        pods,
    };
    web.stale_config = Some(Box::new(StaleConfigNote {
        fix: "kubectl rollout restart deployment/web -n shop".into(),
        configs: vec![
            used("ConfigMap/web-config", vec![pod("a"), pod("b")]),
            used("Secret/web-db", vec![pod("a")]),
        ],
    }));
    upsert(&index, (key.clone(), web.clone()));
    let text = m.render();
    let series = |config: &str| {
        format!(r#"driftd_stale_config_pods{{config="{config}",namespace="shop",workload="web"}}"#)
    };
    assert_eq!(
        sample(&text, &series("ConfigMap/web-config")),
        Some(2.0),
        "{text}"
    );
    assert_eq!(sample(&text, &series("Secret/web-db")), Some(1.0), "{text}");

    web.stale_config = None;
    web.class = DriftClass::InSync;
    upsert(&index, (key, web));
    assert!(!m.render().contains("driftd_stale_config_pods{"));
}

#[test]
fn per_object_series_are_written_as_the_client_library_writes_them() {
    let (index, m) = setup(10);
    index.write().unwrap().set_sources(sources(&["shop"]));
    for (name, class) in [("a", DriftClass::Modified), ("b", DriftClass::Missing)] {
        upsert(&index, entry("shop", "shop", name, class));
    }
    let ours: BTreeSet<String> = m
        .render()
        .lines()
        .filter(|l| l.contains("driftd_object_drift") && !l.contains("omitted"))
        .map(str::to_string)
        .collect();

    let labels = ["source", "namespace", "kind", "name", "class"];
    let drift = IntGaugeVec::new(
        Opts::new(
            "driftd_object_drift",
            "1 for each drifting object (capped by metrics.max_object_series).",
        ),
        &labels,
    )
    .unwrap();
    let since = GaugeVec::new(
        Opts::new(
            "driftd_object_drift_since_timestamp_seconds",
            "Unix time at which the object started drifting.",
        ),
        &labels,
    )
    .unwrap();
    for e in index.read().unwrap().series_holders() {
        let values = [
            e.source.as_str(),
            e.namespace.as_deref().unwrap_or(""),
            e.kind.as_str(),
            e.name.as_str(),
            e.class.as_str(),
        ];
        drift.with_label_values(&values).set(1);
        since
            .with_label_values(&values)
            .set(e.since.unwrap().as_millisecond() as f64 / 1000.0);
    }
    let mut families = drift.collect();
    families.extend(since.collect());
    let mut buf = Vec::new();
    TextEncoder::new().encode(&families, &mut buf).unwrap();
    let library: BTreeSet<String> = String::from_utf8(buf)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(ours.len(), 2 + 2 + 2 * 2, "{ours:?}");
    assert_eq!(ours, library);
}

#[test]
fn label_values_are_escaped() {
    assert_eq!(
        LabelValue("a\"b\\c\nd").to_string(),
        r#"a\"b\\c\nd"#,
        "quote, backslash and newline escaped"
    );
    assert_eq!(LabelValue("helm:shop/web").to_string(), "helm:shop/web");
}

#[test]
fn every_watched_kinds_counters_start_at_zero() {
    let (index, m) = setup(10);
    let kind = |kind: &str| driftd_k8s::TypeKey {
        api_version: "v1".into(),
        kind: kind.into(),
    };
    index.write().unwrap().set_watch_health(
        ["ConfigMap", "Secret"]
            .into_iter()
            .map(|k| driftd_engine::WatchHealth {
                kind: kind(k),
                healthy: false,
                unhealthy_since: None,
                last_event: None,
            })
            .collect(),
    );
    let text = m.render();
    for k in ["ConfigMap", "Secret"] {
        for family in ["driftd_watch_errors_total", "driftd_watch_events_total"] {
            let series = format!("{family}{{kind=\"{k}\"}}");
            assert_eq!(sample(&text, &series), Some(0.0), "{series} in {text}");
        }
    }
    // A replica that cannot take its Lease says so; a leader does not.
    assert_eq!(sample(&text, "driftd_leader_election_failing"), Some(0.0));
}

/// The engine's health of a kind as the families show it (the engine's test checks it
/// follows the server's answers and failures).
#[test]
fn the_metrics_families_follow_the_health() {
    let (index, metrics) = setup(10);
    let seen: Timestamp = "2026-11-30T10:00:00Z".parse().unwrap();
    let health = |healthy| {
        vec![driftd_engine::WatchHealth {
            kind: driftd_k8s::TypeKey {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
            },
            healthy,
            unhealthy_since: (!healthy).then_some(seen),
            last_event: Some(seen),
        }]
    };
    let line = |text: &str, name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name}{{kind=\"ConfigMap\"}}")))
            .map(|l| l.rsplit_once(' ').unwrap().1.to_string())
    };
    index.write().unwrap().set_watch_health(health(true));
    let text = metrics.render();
    assert_eq!(line(&text, "driftd_watch_healthy").as_deref(), Some("1"));
    let seen = seen.as_second().to_string();
    assert_eq!(
        line(&text, "driftd_watch_last_event_timestamp_seconds").as_deref(),
        Some(seen.as_str())
    );
    index.write().unwrap().set_watch_health(health(false));
    let text = metrics.render();
    assert_eq!(line(&text, "driftd_watch_healthy").as_deref(), Some("0"));
    assert_eq!(
        line(&text, "driftd_watch_last_event_timestamp_seconds").as_deref(),
        Some(seen.as_str()),
        "the last answer, not the failure"
    );
}

fn closed(source: &str, class: &str, seconds: i64) -> driftd_store::ClosedEpisode {
    let first_seen: Timestamp = "2026-11-30T10:00:00Z".parse().unwrap();
    driftd_store::ClosedEpisode {
        source: source.into(),
        class: class.into(),
        first_seen,
        resolved_at: first_seen + jiff::SignedDuration::from_secs(seconds),
        ended: driftd_store::EpisodeEnd::Reverted,
    }
}

#[test]
fn episodes_are_counted_per_source_and_class_and_timed_to_resolution() {
    let (index, m) = setup(10);
    index
        .write()
        .unwrap()
        .set_sources(sources(&["shop", "idle"]));
    m.episodes.record(&driftd_store::EpisodeChanges {
        opened: vec![
            driftd_store::OpenedEpisode {
                source: "shop".into(),
                class: "modified".into(),
            };
            2
        ],
        // One hour and five seconds, and two minutes.
        closed: vec![
            closed("shop", "modified", 3605),
            closed("shop", "missing", 120),
        ],
    });
    let text = m.render();
    let series = |s: &str| sample(&text, s);
    assert_eq!(
        series(r#"driftd_drift_episodes_opened_total{class="modified",source="shop"}"#),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        series(r#"driftd_drift_episodes_closed_total{class="missing",source="shop"}"#),
        Some(1.0)
    );
    // Prometheus buckets are cumulative: `le` counts observations at or below it.
    for (le, count) in [
        ("60", 0.0),
        ("300", 1.0),
        ("3600", 1.0),
        ("7200", 2.0),
        ("+Inf", 2.0),
    ] {
        assert_eq!(
            series(&format!(
                r#"driftd_drift_resolution_seconds_bucket{{source="shop",le="{le}"}}"#
            )),
            Some(count),
            "le={le}\n{text}"
        );
    }
    assert_eq!(
        series(r#"driftd_drift_resolution_seconds_sum{source="shop"}"#),
        Some(3725.0)
    );
    assert_eq!(
        series(r#"driftd_drift_resolution_seconds_count{source="shop"}"#),
        Some(2.0)
    );
    // A source without episodes has its series at 0 from the start.
    assert_eq!(
        series(r#"driftd_drift_episodes_opened_total{class="modified",source="idle"}"#),
        Some(0.0)
    );
    assert_eq!(
        series(r#"driftd_drift_resolution_seconds_count{source="idle"}"#),
        Some(0.0)
    );
    assert!(
        !text.contains(r#"driftd_drift_episodes_opened_total{class="in_sync""#),
        "no episode is in sync"
    );
}

#[test]
fn the_oldest_open_drift_is_the_earliest_since_of_each_source() {
    let (index, m) = setup(10);
    index
        .write()
        .unwrap()
        .set_sources(sources(&["shop", "web", "calm"]));
    let at = |source: &str, name: &str, class: DriftClass, since: &str| {
        let key = driftd_engine::test_support::configmap("ns", name);
        let entry = driftd_engine::test_support::entry(source, &key, class, since.parse().unwrap());
        (key, entry)
    };
    upsert(
        &index,
        at("shop", "a", DriftClass::Modified, "2026-11-30T10:00:00Z"),
    );
    upsert(
        &index,
        at("shop", "b", DriftClass::Missing, "2026-11-29T08:00:00Z"),
    );
    upsert(
        &index,
        at("web", "c", DriftClass::Uncommitted, "2026-11-30T12:00:00Z"),
    );
    upsert(
        &index,
        at("calm", "d", DriftClass::InSync, "2026-11-01T00:00:00Z"),
    );
    let text = m.render();
    let oldest = |source: &str| {
        sample(
            &text,
            &format!(r#"driftd_drift_oldest_open_timestamp_seconds{{source="{source}"}}"#),
        )
    };
    // `date -u -d 2026-11-29T08:00:00Z +%s` = 1795939200; 2026-11-30T12:00:00Z = 1796040000.
    assert_eq!(oldest("shop"), Some(1795939200.0), "{text}");
    assert_eq!(oldest("web"), Some(1796040000.0));
    assert_eq!(oldest("calm"), None, "nothing drifts: no series");
}
