use super::*;
use serde_json::json;
use std::time::Duration;

pub(super) const KEY: &[u8] = b"installation key";
pub(super) const SYNC: Duration = Duration::from_secs(90);

pub(super) fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

pub(super) fn kind(name: &str) -> TypeKey {
    watched_kinds()
        .into_iter()
        .find(|k| k.kind == name)
        .unwrap()
}

pub(super) fn secret(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "namespace": "shop", "creationTimestamp": "2026-01-01T00:00:00Z"},
           "data": {"password": value}})
}

pub(super) fn replica_set(name: &str, deployment: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
           "metadata": {"name": name, "namespace": "shop", "ownerReferences": [
               {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment, "controller": true}]}})
}

/// A running pod of `owner` (kind/name) started at `start`, whose one container reads as
/// `reads` says: `env`, `envFrom`, `subPath`, `volume`, `optional-env` (Secret `db`).
fn pod(name: &str, owner: (&str, &str), start: &str, reads: &str) -> Value {
    let mut container = json!({"name": "app", "image": "app:1"});
    let mut volumes = json!([]);
    match reads {
        "env" => {
            container["env"] = json!([{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}])
        }
        "optional-env" => {
            container["env"] = json!([{"name": "P", "valueFrom": {"secretKeyRef": {"name": "nowhere", "key": "k", "optional": true}}}])
        }
        "envFrom" => container["envFrom"] = json!([{"secretRef": {"name": "db"}}]),
        "subPath" | "volume" => {
            volumes = json!([{"name": "creds", "secret": {"secretName": "db"}}]);
            container["volumeMounts"] = if reads == "subPath" {
                json!([{"name": "creds", "mountPath": "/etc/p", "subPath": "password"}])
            } else {
                json!([{"name": "creds", "mountPath": "/etc/creds"}])
            };
        }
        "volume+env" => {
            volumes = json!([{"name": "creds", "secret": {"secretName": "db"}}]);
            container["volumeMounts"] = json!([{"name": "creds", "mountPath": "/etc/creds"}]);
            container["env"] = json!([{"name": "P", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]);
        }
        _ => {}
    }
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "shop", "ownerReferences": [
               {"apiVersion": "apps/v1", "kind": owner.0, "name": owner.1, "controller": true}]},
           "spec": {"containers": [container], "volumes": volumes},
           "status": {"phase": "Running", "startTime": start}})
}

pub(super) fn observe(s: &mut StaleConfigs, object: &Value, now: Timestamp) {
    let key = ObjectKey::of(object).unwrap();
    s.observe(
        &kind(object["kind"].as_str().unwrap()),
        &key,
        Some(object),
        now,
    );
}

fn delete(s: &mut StaleConfigs, object: &Value, now: Timestamp) {
    let key = ObjectKey::of(object).unwrap();
    s.observe(&kind(object["kind"].as_str().unwrap()), &key, None, now);
}

pub(super) fn deployment(name: &str) -> ObjectKey {
    ObjectKey {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: Some("shop".into()),
        name: name.into(),
    }
}

/// Stale workloads after a flush at `now`: name -> (config, stale pod names with reads).
pub(super) fn stale(
    s: &mut StaleConfigs,
    now: Timestamp,
) -> BTreeMap<String, Vec<(String, Vec<String>)>> {
    s.flush(now);
    s.judged
        .iter()
        .map(|(k, note)| {
            let uses = note
                .configs
                .iter()
                .map(|c| {
                    let pods = c
                        .pods
                        .iter()
                        .map(|p| format!("{}:{}", p.name, p.reads.join("+")))
                        .collect();
                    (c.config.clone(), pods)
                })
                .collect();
            (format!("{}/{}", k.kind, k.name), uses)
        })
        .collect()
}

/// One Deployment per way of reading Secret `db`, plus one reading nothing, all started at
/// 10:00; the Secret first seen (created) at 09:00.
fn cluster() -> StaleConfigs {
    let mut s = StaleConfigs::new(true, SYNC, KEY, Vec::new());
    let t0 = at("2026-03-01T09:00:00Z");
    observe(&mut s, &secret("db", "b2xk"), t0);
    for reads in [
        "env",
        "envFrom",
        "subPath",
        "volume",
        "none",
        "optional-env",
    ] {
        let rs = format!("{reads}-1");
        observe(&mut s, &replica_set(&rs, reads), t0);
        observe(
            &mut s,
            &pod(
                &format!("{reads}-1-a"),
                ("ReplicaSet", &rs),
                "2026-03-01T10:00:00Z",
                reads,
            ),
            t0,
        );
    }
    s
}

#[test]
fn pods_started_before_the_content_are_stale_by_how_they_read_it() {
    let mut s = cluster();
    assert!(
        stale(&mut s, at("2026-03-01T10:05:00Z")).is_empty(),
        "content older than every pod"
    );
    assert!(
        !s.pods.contains_key(&("shop".into(), "none-1-a".into())),
        "a pod reading nothing is not kept"
    );

    let changed = at("2026-03-01T11:00:00.250Z");
    observe(&mut s, &secret("db", "bmV3"), changed);
    let expect = |volume: bool| {
        let mut m = BTreeMap::new();
        for (d, r) in [
            ("env", "env"),
            ("envFrom", "envFrom"),
            ("subPath", "subPath"),
            ("volume", "volume"),
        ] {
            if d != "volume" || volume {
                m.insert(
                    format!("Deployment/{d}"),
                    vec![("Secret/db".to_string(), vec![format!("{d}-1-a:{r}")])],
                );
            }
        }
        m
    };
    assert_eq!(
        stale(&mut s, changed),
        expect(true),
        "within the sync period the volume is stale too"
    );
    let almost = changed + SignedDuration::from_secs(89);
    assert_eq!(stale(&mut s, almost), expect(true));
    // The kubelet refreshed the volume: the judgement changes by time alone.
    let synced = changed + SignedDuration::from_secs(90);
    let changes = s.flush(synced);
    assert_eq!(changes, vec![(deployment("volume"), None)]);
    assert_eq!(stale(&mut s, synced), expect(false));

    let note = s.note(&deployment("env")).unwrap();
    assert_eq!(note.fix, "kubectl rollout restart deployment/env -n shop");
    assert_eq!(note.configs[0].changed_at, changed);
    assert_eq!(
        note.configs[0].pods[0].started_at,
        at("2026-03-01T10:00:00Z")
    );
}

#[test]
fn a_pod_reading_a_volume_and_env_stays_stale_after_the_sync_period() {
    let mut s = StaleConfigs::new(true, SYNC, KEY, Vec::new());
    let t0 = at("2026-03-01T09:00:00Z");
    observe(&mut s, &secret("db", "b2xk"), t0);
    observe(
        &mut s,
        &pod(
            "web-0",
            ("StatefulSet", "web"),
            "2026-03-01T10:00:00Z",
            "volume+env",
        ),
        t0,
    );
    let changed = at("2026-03-01T11:00:00Z");
    observe(&mut s, &secret("db", "bmV3"), changed);
    let later = changed + SignedDuration::from_secs(3600);
    assert_eq!(
        stale(&mut s, later),
        BTreeMap::from([(
            "StatefulSet/web".to_string(),
            vec![(
                "Secret/db".to_string(),
                vec!["web-0:env+volume".to_string()]
            )]
        )])
    );
}

#[test]
fn pods_of_a_new_replica_set_are_not_stale_and_the_rollout_resolves_it() {
    let mut s = cluster();
    let changed = at("2026-03-01T11:00:00Z");
    observe(&mut s, &secret("db", "bmV3"), changed);
    assert!(stale(&mut s, changed).contains_key("Deployment/env"));
    // The rollout: a new ReplicaSet's pod starts after the change, the old pod goes.
    observe(&mut s, &replica_set("env-2", "env"), changed);
    observe(
        &mut s,
        &pod(
            "env-2-a",
            ("ReplicaSet", "env-2"),
            "2026-03-01T11:00:05Z",
            "env",
        ),
        changed,
    );
    assert_eq!(
        stale(&mut s, changed)["Deployment/env"],
        vec![("Secret/db".to_string(), vec!["env-1-a:env".to_string()])]
    );
    delete(
        &mut s,
        &pod(
            "env-1-a",
            ("ReplicaSet", "env-1"),
            "2026-03-01T10:00:00Z",
            "env",
        ),
        changed,
    );
    let changes = s.flush(changed);
    assert_eq!(changes, vec![(deployment("env"), None)]);
    assert!(s.note(&deployment("env")).is_none());
}

#[test]
fn a_pod_started_in_the_same_second_as_the_change_or_not_running_is_not_stale() {
    let mut s = StaleConfigs::new(true, SYNC, KEY, Vec::new());
    let t0 = at("2026-03-01T09:00:00Z");
    observe(&mut s, &secret("db", "b2xk"), t0);
    observe(
        &mut s,
        &pod("a", ("DaemonSet", "agent"), "2026-03-01T11:00:00Z", "env"),
        t0,
    );
    let mut pending = pod("b", ("DaemonSet", "agent"), "2026-03-01T10:00:00Z", "env");
    pending["status"]["phase"] = json!("Pending");
    observe(&mut s, &pending, t0);
    let mut leaving = pod("c", ("DaemonSet", "agent"), "2026-03-01T10:00:00Z", "env");
    leaving["metadata"]["deletionTimestamp"] = json!("2026-03-01T11:00:00Z");
    observe(&mut s, &leaving, t0);
    observe(
        &mut s,
        &pod("d", ("Job", "batch"), "2026-03-01T10:00:00Z", "env"),
        t0,
    );
    observe(
        &mut s,
        &secret("db", "bmV3"),
        at("2026-03-01T11:00:00.900Z"),
    );
    assert!(stale(&mut s, at("2026-03-01T11:00:01Z")).is_empty());
}

#[test]
fn unchanged_content_changes_no_record_and_a_changed_one_is_written_without_its_value() {
    let mut s = cluster();
    let first = s.take_writes();
    assert_eq!(first.len(), 1, "the Secret, once: {first:?}");
    // The same content again (another resourceVersion, a new label): nothing to write.
    let mut relabelled = secret("db", "b2xk");
    relabelled["metadata"]["labels"] = json!({"team": "a"});
    relabelled["metadata"]["resourceVersion"] = json!("99");
    observe(&mut s, &relabelled, at("2026-03-01T12:00:00Z"));
    assert!(s.take_writes().is_empty());
    assert!(s.flush(at("2026-03-01T12:00:00Z")).is_empty());

    let changed = at("2026-03-01T12:30:00Z");
    observe(&mut s, &secret("db", "c2VjcmV0LXZhbHVl"), changed);
    let writes = s.take_writes();
    let [ContentChange::Seen(record)] = writes.as_slice() else {
        panic!("one record: {writes:?}")
    };
    assert_eq!(
        (
            record.kind.as_str(),
            record.name.as_str(),
            record.first_seen
        ),
        ("Secret", "db", changed)
    );
    assert_eq!(
        record.hash.len(),
        8 + 1 + 64,
        "key tag:hmac {}",
        record.hash
    );
    let everything = format!("{writes:?} {:?}", s.flush(changed));
    for value in ["c2VjcmV0LXZhbHVl", "secret-value", "b2xk"] {
        assert!(!everything.contains(value), "{value} leaked: {everything}");
    }
    delete(&mut s, &secret("db", "c2VjcmV0LXZhbHVl"), changed);
    assert!(
        matches!(s.take_writes().as_slice(), [ContentChange::Gone { name, .. }] if name == "db")
    );
}

#[test]
fn first_sight_without_a_record_takes_the_newest_managed_fields_time_touching_data() {
    let mut s = StaleConfigs::new(true, SYNC, KEY, Vec::new());
    let mut object = secret("db", "b2xk");
    object["metadata"]["managedFields"] = json!([
        {"manager": "kubectl", "operation": "Apply", "time": "2026-03-01T08:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:password": {}}}},
        {"manager": "rotator", "operation": "Update", "time": "2026-03-01T09:30:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:binaryData": {".": {}}}},
        {"manager": "labeller", "operation": "Update", "time": "2026-03-01T10:30:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}
    ]);
    observe(&mut s, &object, at("2026-03-01T12:00:00Z"));
    let first_seen = |s: &mut StaleConfigs| match s.take_writes().as_slice() {
        [ContentChange::Seen(r)] => r.first_seen,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        first_seen(&mut s),
        at("2026-03-01T09:30:00Z"),
        "the labeller did not touch data"
    );

    // No managedFields about the content: its creation.
    let mut s = StaleConfigs::new(true, SYNC, KEY, Vec::new());
    observe(&mut s, &secret("db", "b2xk"), at("2026-03-01T12:00:00Z"));
    assert_eq!(first_seen(&mut s), at("2026-01-01T00:00:00Z"));
}

#[test]
fn a_record_from_an_earlier_run_keeps_its_time_for_the_same_content() {
    let mut s = StaleConfigs::new(true, SYNC, KEY, Vec::new());
    observe(&mut s, &secret("db", "b2xk"), at("2026-03-01T09:00:00Z"));
    let records: Vec<ConfigContent> = s
        .take_writes()
        .into_iter()
        .map(|w| match w {
            ContentChange::Seen(mut r) => {
                r.first_seen = at("2026-03-01T11:00:00Z");
                r
            }
            other => panic!("{other:?}"),
        })
        .collect();
    let mut restarted = StaleConfigs::new(true, SYNC, KEY, records.clone());
    observe(
        &mut restarted,
        &pod(
            "web-0",
            ("StatefulSet", "web"),
            "2026-03-01T10:00:00Z",
            "env",
        ),
        at("2026-03-01T12:00:00Z"),
    );
    observe(
        &mut restarted,
        &secret("db", "b2xk"),
        at("2026-03-01T12:00:00Z"),
    );
    assert!(
        restarted.take_writes().is_empty(),
        "same content: the record stands"
    );
    assert!(stale(&mut restarted, at("2026-03-01T12:00:00Z")).contains_key("StatefulSet/web"));

    // Records made under another hash key (hash_key_file changed) cannot be compared: the
    // content is dated as on a first start (here: its creation), not as changed now.
    let mut rekeyed = StaleConfigs::new(true, SYNC, b"another key", records);
    observe(
        &mut rekeyed,
        &secret("db", "b2xk"),
        at("2026-03-01T12:00:00Z"),
    );
    match rekeyed.take_writes().as_slice() {
        [ContentChange::Seen(r)] => assert_eq!(r.first_seen, at("2026-01-01T00:00:00Z")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_list_forgets_what_it_did_not_return() {
    let mut s = cluster();
    let changed = at("2026-03-01T11:00:00Z");
    observe(&mut s, &secret("db", "bmV3"), changed);
    assert!(!stale(&mut s, changed).is_empty());
    s.take_writes();
    s.retain_listed(&kind("Pod"), &HashSet::new(), changed);
    assert!(stale(&mut s, changed).is_empty());
    s.retain_listed(&kind("Secret"), &HashSet::new(), changed);
    assert!(matches!(
        s.take_writes().as_slice(),
        [ContentChange::Gone { .. }]
    ));
}

#[test]
fn off_it_reads_nothing() {
    let mut s = StaleConfigs::new(false, SYNC, KEY, Vec::new());
    observe(&mut s, &secret("db", "b2xk"), at("2026-03-01T09:00:00Z"));
    assert!(s.take_writes().is_empty());
    assert!(!s.reads(&kind("Pod")));
}

#[test]
fn a_config_deleted_and_re_created_with_the_same_content_did_not_change() {
    let mut s = cluster();
    let t = at("2026-03-01T11:00:00Z");
    delete(&mut s, &secret("db", "b2xk"), t);
    // kubectl apply again, a minute later: same content, new managedFields time.
    let mut again = secret("db", "b2xk");
    again["metadata"]["creationTimestamp"] = json!("2026-03-01T11:01:00Z");
    let later = at("2026-03-01T11:01:00Z");
    observe(&mut s, &again, later);
    assert!(stale(&mut s, later).is_empty());
    match s.take_writes().as_slice() {
        [ContentChange::Seen(_), ContentChange::Gone { .. }, ContentChange::Seen(r)] => {
            assert_eq!(
                r.first_seen,
                at("2026-01-01T00:00:00Z"),
                "the old content's time"
            )
        }
        other => panic!("{other:?}"),
    }
    // Re-created with other content: changed, dated by its (re-)creation.
    delete(&mut s, &again, later);
    let mut other = secret("db", "bmV3");
    other["metadata"]["creationTimestamp"] = json!("2026-03-01T11:02:00Z");
    observe(&mut s, &other, at("2026-03-01T11:02:00Z"));
    assert_eq!(
        stale(&mut s, at("2026-03-01T11:02:00Z")).len(),
        4,
        "env, envFrom, subPath and (within its sync period) volume"
    );
}

#[test]
fn a_pod_event_judges_only_its_workload_and_keeps_the_namespace_sync_deadline() {
    let mut s = cluster();
    let changed = at("2026-03-01T11:00:00Z");
    observe(&mut s, &secret("db", "bmV3"), changed);
    assert_eq!(stale(&mut s, changed).len(), 4);
    // The env pod goes: only env changes; the others keep their notes.
    delete(
        &mut s,
        &pod(
            "env-1-a",
            ("ReplicaSet", "env-1"),
            "2026-03-01T10:00:00Z",
            "env",
        ),
        changed,
    );
    assert!(
        s.dirty.is_empty(),
        "a pod event does not make the namespace dirty"
    );
    assert_eq!(s.flush(changed), vec![(deployment("env"), None)]);
    assert_eq!(s.judged.len(), 3);
    // The volume reader's sync period still ends the judgement by time alone.
    let synced = changed + SignedDuration::from_secs(90);
    assert_eq!(s.flush(synced), vec![(deployment("volume"), None)]);
}

#[test]
fn a_change_reverted_leaves_the_pods_that_read_the_first_content_up_to_date() {
    // Pods started at 10:00 on content A (seen 09:00). A hand edit to B at 11:00 makes
    // them stale; putting A back at 11:30 (reconcile, remediation, a rollback) makes them
    // up to date again: they read A, A is live. A pod started during B is stale then.
    let mut s = cluster();
    observe(&mut s, &secret("db", "Ymhh"), at("2026-03-01T11:00:00Z"));
    assert!(stale(&mut s, at("2026-03-01T11:00:01Z")).contains_key("Deployment/env"));
    observe(
        &mut s,
        &pod(
            "env-1-b",
            ("ReplicaSet", "env-1"),
            "2026-03-01T11:10:00Z",
            "env",
        ),
        at("2026-03-01T11:10:00Z"),
    );
    let reverted = at("2026-03-01T11:30:00Z");
    observe(&mut s, &secret("db", "b2xk"), reverted);
    let now = stale(&mut s, reverted);
    assert_eq!(
        now.get("Deployment/env"),
        Some(&vec![(
            "Secret/db".to_string(),
            vec!["env-1-b:env".to_string()]
        )]),
        "only the pod that started on B: {now:?}"
    );
    assert!(!now.contains_key("Deployment/envFrom"), "{now:?}");
    assert!(!now.contains_key("Deployment/subPath"), "{now:?}");

    // The history is kept in the record: a restarted daemon judges alike.
    let records: Vec<ConfigContent> = s
        .take_writes()
        .into_iter()
        .filter_map(|w| match w {
            ContentChange::Seen(r) => Some(r),
            _ => None,
        })
        .rfind(|r| r.name == "db")
        .into_iter()
        .collect();
    assert_eq!(records[0].earlier.len(), 2, "{records:?}");
    let mut restarted = StaleConfigs::new(true, SYNC, KEY, records);
    observe(&mut restarted, &replica_set("env-1", "env"), reverted);
    observe(
        &mut restarted,
        &pod(
            "env-1-a",
            ("ReplicaSet", "env-1"),
            "2026-03-01T10:00:00Z",
            "env",
        ),
        reverted,
    );
    observe(&mut restarted, &secret("db", "b2xk"), reverted);
    assert!(stale(&mut restarted, reverted).is_empty());
}

#[test]
fn content_hash_is_the_keyed_hash_of_data_and_binary_data_as_recorded_before() {
    // Hashes recorded by earlier runs were taken over this rendering; a different text
    // would make every ConfigMap and Secret look changed after an upgrade.
    let key = b"installation key";
    for object in [
        json!({"kind": "ConfigMap", "data": {"b": "2", "a": "é\n\"x\""}, "metadata": {}}),
        json!({"kind": "Secret", "data": {"t": "dG9r"}, "binaryData": {"z": "AAE="}}),
        json!({"kind": "ConfigMap", "metadata": {"name": "empty"}}),
    ] {
        let rendered = json!({
            "data": object.get("data").unwrap_or(&Value::Null),
            "binaryData": object.get("binaryData").unwrap_or(&Value::Null),
        })
        .to_string();
        assert_eq!(
            super::content_hash(key, &object),
            super::hmac(key, rendered.as_bytes()),
            "{object}"
        );
    }
    assert_ne!(
        super::content_hash(key, &json!({"data": {"a": "1"}})),
        super::content_hash(key, &json!({"data": {"a": "2"}}))
    );
}

#[test]
fn reads_exactly_the_watched_kinds_when_enabled() {
    let on = StaleConfigs::new(true, SYNC, KEY, Vec::new());
    let off = StaleConfigs::new(false, SYNC, KEY, Vec::new());
    for kind in watched_kinds() {
        assert!(on.reads(&kind), "{kind:?}");
        assert!(!off.reads(&kind), "{kind:?}");
    }
    for (api_version, kind) in [("apps/v1", "Deployment"), ("v1", "Service"), ("v2", "Pod")] {
        let other = TypeKey {
            api_version: api_version.into(),
            kind: kind.into(),
        };
        assert!(!on.reads(&other), "{other:?}");
    }
}
