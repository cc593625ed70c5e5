//! The README's first command: `driftd demo` shows drift with no cluster at hand.

use crate::scaffold::*;
use std::process::Command;
use std::time::Duration;

#[test]
fn demo_shows_drift_of_the_example_app() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(DRIFTD);
    cmd.args([
        "demo",
        "--listen",
        "127.0.0.1:0",
        "--edit-after",
        "1",
        "--workdir",
    ])
    .arg(dir.path());
    let mut demo = Proc::spawn("driftd demo", cmd);
    let line = demo.wait_line("listening on http://", Duration::from_secs(60));
    let url = line[line.find("http://").unwrap()..].trim().to_string();

    let drift = wait_for(
        "demo drift on web and web-config",
        Duration::from_secs(60),
        || {
            let (status, body) = http_get(&format!("{url}/drift"));
            let v: serde_json::Value = serde_json::from_str(&body).ok()?;
            (status == 200
                && find(&v, "Deployment", "web").is_some()
                && find(&v, "ConfigMap", "web-config").is_some())
            .then_some(v)
        },
    );
    // The other three example objects were compared and found in sync, so "nothing else
    // drifts" below is a verdict on them, not a look before they were compared.
    wait_for(
        "the other three objects in sync",
        Duration::from_secs(60),
        || {
            let (status, body) = http_get(&format!("{url}/drift?class=in_sync"));
            let v: serde_json::Value = serde_json::from_str(&body).ok()?;
            (status == 200 && v["objects"].as_array()?.len() == 3).then_some(())
        },
    );
    let web = find(&drift, "Deployment", "web").unwrap();
    assert_eq!(web["class"], "modified");
    let cm = find(&drift, "ConfigMap", "web-config").unwrap();
    assert_eq!(cm["changes"][0]["path"], "/data/LOG_LEVEL");
    assert_eq!(cm["changes"][0]["live"], "debug");
    // Nothing else drifts: the simulator's defaults are not drift.
    let (status, body) = http_get(&format!("{url}/drift"));
    assert_eq!(status, 200, "{body}");
    let drift: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(drift["objects"].as_array().unwrap().len(), 2, "{drift:#}");

    // The drift page is served by the demo too.
    let (status, page) = http_get(&format!("{url}/"));
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<span class=\"name\">shop/web-config</span>"),
        "{page}"
    );

    let (_, metrics) = http_get(&format!("{url}/metrics"));
    assert!(
        metrics.contains("driftd_objects{class=\"modified\",source=\"shop\"} 2"),
        "{metrics}"
    );
    assert!(demo.terminate().success());
}
