//! Pulumi lock files found in the fixtures (Pulumi's own formats, see
//! tests/fixtures/pulumi/README.md) and judged against holder pods and age.

use super::*;
use crate::test_support::watch_apply;
use driftd_watch::{WatchControl, WatchEvent, WatcherId};
use serde_json::json;
use std::path::Path;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pulumi")
}

/// Hands out watcher ids; the test feeds the events.
#[derive(Default)]
struct Control {
    last: u64,
    started: BTreeSet<String>,
}

impl WatchControl for Control {
    fn start(&mut self, _: &driftd_k8s::TypeKey) -> WatcherId {
        unreachable!("no kinds here")
    }
    fn stop(&mut self, _: &driftd_k8s::TypeKey) {}
    fn start_pods_named(&mut self, name: &str) -> WatcherId {
        self.last += 1;
        self.started.insert(name.to_string());
        WatcherId(self.last)
    }
    fn stop_pods_named(&mut self, name: &str) {
        self.started.remove(name);
    }
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn workspace_pod() -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "shop-dev-workspace-0", "namespace": "pulumi", "uid": "u1",
                        "creationTimestamp": "2024-05-14T07:00:00Z"},
           "status": {"phase": "Running"}})
}

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn lock_files_of_both_layouts_are_found_with_their_stacks() {
    let found = scan_pulumi(&[
        fixtures().join("backend"),
        fixtures().join("legacy-backend"),
        fixtures().join("no-such-backend"),
    ]);
    let stacks: Vec<(String, String)> = found
        .iter()
        .map(|f| (f.lock.stack_name(), f.lock.hostname.clone()))
        .collect();
    assert_eq!(
        stacks,
        [
            (
                "organization/shop/dev".into(),
                "shop-dev-workspace-0".into()
            ),
            ("dev".into(), "alice-laptop".into())
        ]
    );
    let names = holder_names([], found.iter().map(|f| &f.lock));
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["alice-laptop", "shop-dev-workspace-0"],
        "both could be pod names"
    );
}

#[test]
fn a_pulumi_lock_is_stale_by_age_or_by_its_pod_being_gone() {
    let found = scan_pulumi(&[fixtures().join("backend")]);
    let f = &found[0];
    let taken = f.lock.timestamp;
    let mut holders = Holders::default();
    let mut control = Control::default();
    holders.sync(&["shop-dev-workspace-0".to_string()].into(), &mut control);
    let watcher = WatcherId(control.last);
    let soon = at("2024-05-14T07:20:00Z");

    // Young, holder not listed yet: not stale.
    assert!(judge_pulumi(&f.lock, &f.path, &holders, soon, HOUR).is_none());
    // The pod lives: still not stale.
    for event in [
        WatchEvent::Init,
        watch_apply(workspace_pod()),
        WatchEvent::InitDone,
    ] {
        holders.step(watcher, &event, soon);
    }
    assert!(judge_pulumi(&f.lock, &f.path, &holders, soon, HOUR).is_none());

    // Its pod is deleted: stale at once, with Pulumi's own cancel command.
    let deleted = at("2024-05-14T07:21:00Z");
    assert!(holders.step(watcher, &WatchEvent::Delete(workspace_pod()), deleted));
    let judged = judge_pulumi(&f.lock, &f.path, &holders, deleted, HOUR).unwrap();
    assert_eq!(
        judged.lock.reason,
        "holder pod pulumi/shop-dev-workspace-0 no longer exists"
    );
    assert_eq!(judged.lock.since, deleted);
    assert_eq!(judged.lock.kind, LockKind::Pulumi);
    assert_eq!(judged.lock.source, "organization/shop/dev");
    assert_eq!(judged.lock.id, "0c7e5b7a-2f4d-4c1b-9a8e-3d6f1e2b4c5a");
    assert_eq!(
        judged.lock.holder,
        "pulumi-kubernetes-operator@shop-dev-workspace-0 (pid 30553)"
    );
    assert_eq!(judged.lock.release, f.lock.cancel_command());
    assert!(
        judged
            .lock
            .release
            .starts_with("PULUMI_BACKEND_URL=file://")
            && judged
                .lock
                .release
                .ends_with("pulumi cancel --yes --stack organization/shop/dev"),
        "{}",
        judged.lock.release
    );
    assert_eq!(judged.pod.unwrap().namespace, "pulumi");
    assert_eq!(
        judged.releasable, None,
        "Pulumi locks are never released by driftd"
    );

    // A hostname never seen as a pod (a laptop) is judged by age alone.
    let mut holders = Holders::default();
    holders.sync(&["shop-dev-workspace-0".to_string()].into(), &mut control);
    let watcher = WatcherId(control.last);
    holders.step(watcher, &WatchEvent::Init, soon);
    holders.step(watcher, &WatchEvent::InitDone, soon);
    assert!(judge_pulumi(&f.lock, &f.path, &holders, soon, HOUR).is_none());
    let late = taken + jiff::SignedDuration::from_hours(2);
    let judged = judge_pulumi(&f.lock, &f.path, &holders, late, HOUR).unwrap();
    assert!(
        judged.lock.reason.contains("longer than the allowed 1h"),
        "{}",
        judged.lock.reason
    );
    assert_eq!(
        judged.lock.since,
        taken + jiff::SignedDuration::from_hours(1)
    );
    assert!(judged.pod.is_none());
}
