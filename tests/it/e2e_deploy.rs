//! The shipped deployment manifest is valid Kubernetes: it commits, applies with kubectl, and
//! driftd itself reports it in sync.

use crate::scaffold::*;
use std::path::Path;
use std::time::Duration;

#[test]
fn deploy_manifest_applies_and_is_in_sync() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/driftd.yaml");
    commit(&dir.path().join("driftd.db"), "driftd", &manifest);
    sim.kubectl(&["apply", "-f", manifest.to_str().unwrap()]);
    let daemon = Daemon::start(&write_config(dir.path(), ""), &sim.kubeconfig, &[]);
    daemon.wait_ready();
    let in_sync = wait_for(
        "all deploy objects evaluated",
        Duration::from_secs(20),
        || {
            let v = daemon.drift("?class=in_sync");
            (v["objects"].as_array().unwrap().len() == 7).then_some(v)
        },
    );
    assert_eq!(
        daemon.drift("")["objects"].as_array().unwrap().len(),
        0,
        "{in_sync:#}"
    );
}
