//! Helm releases as sources: a deployed version is a revision once, a version in flight a
//! pending intent that ends with the release's next step, an uninstall retires the source,
//! and Helm rows never take a number of the cluster log.

use super::*;
use crate::{ClusterRevision, IntentState, RevisionImport, Store};
use driftd_core::helm::Status;
use driftd_core::manifest::{self, LoadOptions};

const SOURCE: &str = "helm:shop/web";

fn objects(image: &str) -> Vec<ManifestObject> {
    let text = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  image: \"{image}\"\n"
    );
    let options = LoadOptions {
        default_namespace: "shop".into(),
        ..LoadOptions::default()
    };
    manifest::parse_text(&text, "Helm release shop/web", &options).unwrap()
}

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + second).unwrap()
}

fn lock(version: i64, status: Status, last_deployed: Option<i64>) -> PendingLock {
    PendingLock {
        namespace: "shop".into(),
        name: "web".into(),
        version,
        status,
        last_deployed,
    }
}

struct Release {
    deployed: Option<(i64, Vec<ManifestObject>)>,
    pending: Option<(i64, Vec<ManifestObject>, PendingLock)>,
    gone: bool,
}

fn sync(store: &mut Store, release: &Release) -> HelmOutcome {
    let describe = |v: i64| format!("version {v}, chart web 0.1.0");
    let d = release
        .deployed
        .as_ref()
        .map(|(v, o)| (describe(*v), *v, o));
    let p = release
        .pending
        .as_ref()
        .map(|(v, o, l)| (describe(*v), *v, o, l));
    store
        .sync_helm(&HelmSync {
            source: SOURCE,
            deployed: d.as_ref().map(|(describe, v, objects)| HelmVersion {
                version: *v,
                describe,
                at: at(*v * 100),
                objects,
            }),
            pending: p.as_ref().map(|(describe, v, objects, lock)| {
                (
                    HelmVersion {
                        version: *v,
                        describe,
                        at: at(*v * 100),
                        objects,
                    },
                    (*lock).clone(),
                )
            }),
            gone: release.gone,
            stale_after: Duration::from_secs(900),
        })
        .unwrap()
}

fn deployed(v: i64, image: &str) -> Release {
    Release {
        deployed: Some((v, objects(image))),
        pending: None,
        gone: false,
    }
}

/// Version 1 deployed (nginx:1.16) and version 2 pending-upgrade with `image`.
fn upgrading(image: &str) -> Release {
    Release {
        deployed: Some((1, objects("nginx:1.16"))),
        pending: Some((2, objects(image), lock(2, Status::PendingUpgrade, Some(1)))),
        gone: false,
    }
}

#[test]
fn a_deployed_version_is_one_revision_and_an_upgrade_in_flight_a_pending_intent() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(1000));
    let first = sync(&mut store, &deployed(1, "nginx:1.16"));
    let rev = first.revision.expect("a revision");
    assert!(rev.id >= HELM_ID_BASE, "{}", rev.id);
    assert_eq!(rev.author, "helm");
    assert_eq!(rev.message, "helm: version 1, chart web 0.1.0 deployed");
    assert_eq!(rev.committed_at, at(100));
    assert_eq!(
        sync(&mut store, &deployed(1, "nginx:1.16")),
        HelmOutcome::default(),
        "same content: nothing new"
    );
    let listed: Vec<String> = store
        .sources()
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(listed, [SOURCE]);
    assert_eq!(store.helm_sources().unwrap(), [SOURCE]);

    // `helm upgrade` recorded version 2 pending-upgrade.
    let upgrading = upgrading("nginx:1.17");
    let begun = sync(&mut store, &upgrading).begun.expect("an intent");
    assert_eq!(begun.state, IntentState::Pending);
    assert_eq!(
        begun.holder,
        "helm pending-upgrade of version 2; last deployed version 1"
    );
    assert_eq!(begun.created_at, at(200));
    assert_eq!(begun.expires_at, at(200 + 900), "stale after 15m");
    assert_eq!(begun.release_command(), "helm rollback web 1 -n shop");
    assert_eq!(sync(&mut store, &upgrading), HelmOutcome::default());
    // Between Helm's two writes (1 superseded, 2 not yet deployed) nothing changes.
    let between = Release {
        deployed: None,
        ..upgrading
    };
    assert_eq!(sync(&mut store, &between), HelmOutcome::default());

    // Version 2 deployed: the intent is committed as the new revision, once.
    let done = sync(&mut store, &deployed(2, "nginx:1.17"));
    let ended = done.ended.expect("the intent ended");
    assert_eq!(ended.state, IntentState::Committed);
    assert_eq!(done.revision, None, "the commit is the revision");
    let history = store.history(SOURCE).unwrap();
    assert_eq!(history.len(), 2);
    assert_eq!(ended.revision_id, Some(history[0].id));
    assert_eq!(
        history[0].message,
        "helm: version 2, chart web 0.1.0 deployed"
    );
    assert_eq!(history[0].committed_at, at(200));
    assert!(history[0].id > rev.id);
    let desired = store.desired_state().unwrap();
    assert_eq!(desired.objects[0].object["data"]["image"], "nginx:1.17");
    assert!(store.open_intents().unwrap().is_empty());
}

#[test]
fn a_pending_version_older_than_stale_after_reads_expired() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(200 + 901));
    let first_install = Release {
        deployed: None,
        pending: Some((
            2,
            objects("nginx:1.16"),
            lock(2, Status::PendingInstall, None),
        )),
        gone: false,
    };
    let begun = sync(&mut store, &first_install).begun.unwrap();
    assert_eq!(begun.state, IntentState::Expired);
    assert_eq!(begun.release_command(), "helm uninstall web -n shop");
    assert!(store.sources().unwrap().is_empty(), "nothing deployed yet");
    assert_eq!(
        store.helm_sources().unwrap(),
        [SOURCE],
        "tracked by its lock"
    );
}

#[test]
fn a_failed_upgrade_stays_open_until_a_later_deploy_and_a_rollback_supersedes_it() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(1000));
    sync(&mut store, &deployed(1, "nginx:1.16"));
    sync(&mut store, &upgrading("bad"));
    // Version 2 failed: version 1 stays deployed.
    let failed = sync(&mut store, &deployed(1, "nginx:1.16")).ended.unwrap();
    assert_eq!(failed.state, IntentState::Failed);
    assert_eq!(
        store.open_intents().unwrap().len(),
        1,
        "it may have applied some"
    );
    // `helm rollback web 1`: version 3 deployed with version 1's content.
    let rolled = sync(&mut store, &deployed(3, "nginx:1.16"));
    assert_eq!(rolled.revision, None, "same content");
    assert!(store.open_intents().unwrap().is_empty());
    let intent = store.intent(failed.id).unwrap().unwrap();
    assert_eq!(intent.state, IntentState::Superseded);
}

#[test]
fn an_uninstalled_release_stops_being_a_source_and_its_lock_is_aborted() {
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(1000));
    sync(&mut store, &deployed(1, "nginx:1.16"));
    sync(&mut store, &upgrading("nginx:1.17"));
    let gone = Release {
        deployed: None,
        pending: None,
        gone: true,
    };
    let out = sync(&mut store, &gone);
    assert!(out.retired);
    assert_eq!(out.ended.unwrap().state, IntentState::Aborted);
    assert!(store.sources().unwrap().is_empty());
    assert!(store.helm_sources().unwrap().is_empty());
    assert!(store.desired_state().unwrap().objects.is_empty());
    assert_eq!(
        store.history(SOURCE).unwrap()[0].message,
        "helm: release uninstalled"
    );
    assert_eq!(sync(&mut store, &gone), HelmOutcome::default(), "once");
    // Installed again later: a source again.
    assert!(sync(&mut store, &deployed(1, "nginx:1.16"))
        .revision
        .is_some());
    assert_eq!(store.helm_sources().unwrap(), [SOURCE]);
}

#[test]
fn helm_rows_never_take_a_number_of_the_cluster_log() {
    let mut store = Store::open_in_memory().unwrap();
    sync(&mut store, &deployed(1, "nginx:1.16"));
    let objs = objects("other");
    let objs: Vec<ManifestObject> = objs
        .into_iter()
        .map(|mut o| {
            o.key.name = "other".into();
            o.object["metadata"]["name"] = "other".into();
            o
        })
        .collect();
    let imported = store
        .import_revision(&ClusterRevision {
            id: 1,
            source: "shop",
            author: "ci",
            message: "m",
            committed_at: at(1),
            objects: &objs,
            intent: None,
            actor: "ci",
        })
        .unwrap();
    assert!(
        matches!(imported, RevisionImport::Created { .. }),
        "{imported:?}"
    );
}

#[test]
fn an_object_of_another_source_is_refused_and_nothing_is_written() {
    let mut store = Store::open_in_memory().unwrap();
    let objs = objects("x");
    store
        .commit(&crate::CommitRequest {
            source: "shop",
            message: "m",
            author: "alice",
            objects: &objs,
            committed_at: None,
            skipped: 0,
        })
        .unwrap();
    let err = store
        .sync_helm(&HelmSync {
            source: SOURCE,
            deployed: Some(HelmVersion {
                version: 1,
                describe: "version 1",
                at: at(1),
                objects: &objs,
            }),
            pending: None,
            gone: false,
            stale_after: Duration::from_secs(900),
        })
        .unwrap_err();
    assert!(
        err.to_string().contains("already owned by source \"shop\""),
        "{err}"
    );
    assert!(store.history(SOURCE).unwrap().is_empty());
}

#[test]
fn a_helm_version_in_flight_is_never_committed_or_released_by_driftd() {
    // Helm's release Secrets decide: committing the pending version made it the committed
    // state while the release stayed pending-upgrade, releasing it left Helm blocked. Both
    // are refused with Helm's own command; nothing changes.
    let mut store = Store::open_in_memory().unwrap();
    store.set_clock(|| at(300));
    sync(&mut store, &deployed(1, "nginx:1.16"));
    let begun = sync(&mut store, &upgrading("nginx:1.17")).begun.unwrap();
    let id = begun.id;
    let refused = |err: StoreError| {
        let err = err.to_string();
        assert!(
            err.contains("Helm release shop/web")
                && err.contains("`helm rollback web 1 -n shop`")
                && err.contains("driftd does not"),
            "{err}"
        );
    };
    refused(store.commit_intent(id, "alice").unwrap_err());
    refused(store.release_intent(id, "alice", "").unwrap_err());
    refused(store.abort_intent(id, "alice", "").unwrap_err());
    refused(store.renew_intent(id, None, "alice").unwrap_err());
    let still = store.intent(id).unwrap().unwrap();
    assert_eq!(still.state, IntentState::Pending);
    assert_eq!(store.history(SOURCE).unwrap().len(), 1, "no revision made");
    let keep = still.commit_command();
    assert!(
        keep.starts_with("let the `helm upgrade` finish") && !keep.contains("driftd intent"),
        "{keep}"
    );
}
