//! `/drift` in pages, end to end: the real `driftd serve` and `driftd drift` against the
//! simulator, with drift changing between pages. The expectations follow Kubernetes' list
//! chunking (every page of a list as of its first page; 410 `Expired` with a token that
//! continues from the current state), derived by hand for the objects put in.

use crate::scaffold::*;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const T: Duration = Duration::from_secs(20);

/// ConfigMaps `cm-00`.. in namespace `default`, as one file.
fn configmaps(path: &Path, names: impl IntoIterator<Item = usize>) {
    let docs: Vec<String> = names
        .into_iter()
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i:02}\n  \
                 namespace: default\ndata:\n  k: v\n"
            )
        })
        .collect();
    std::fs::write(path, docs.join("---\n")).unwrap();
}

fn names(body: &Value) -> Vec<String> {
    body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect()
}

fn cms(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("cm-{i:02}")).collect()
}

#[test]
fn drift_pages_stay_one_list_while_drift_changes_and_clients_follow_them() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let desired = dir.path().join("desired");
    std::fs::create_dir_all(&desired).unwrap();
    configmaps(&desired.join("cms.yaml"), 0..12);
    commit(&dir.path().join("driftd.db"), "paged", &desired);
    let config = write_config(dir.path(), "");
    let daemon = Daemon::start(&config, &sim.kubeconfig, &[]);
    daemon.wait_ready();
    // Committed, never applied: twelve `missing` objects, in name order.
    let all = daemon.drift("");
    assert_eq!(names(&all), cms(0..12), "{all:#}");
    assert!(
        all.get("continue").is_none(),
        "one page under the default size"
    );

    // The first page of five.
    let first = daemon.drift("?limit=5");
    assert_eq!(names(&first), cms(0..5));
    assert_eq!(first["remainingItemCount"], 7);
    let token = first["continue"].as_str().unwrap().to_string();

    // Drift changes: cm-05..07 are applied (in sync), cm-00 too.
    let applied = dir.path().join("applied.yaml");
    configmaps(&applied, [0, 5, 6, 7]);
    sim.kubectl(&["apply", "-f", applied.to_str().unwrap()]);
    wait_for("the four applied objects in sync", T, || {
        (names(&daemon.drift("")).len() == 8).then_some(())
    });

    // The list goes on as of its first page: cm-05..07 still missing, nothing repeated.
    let second = daemon.drift(&format!("?limit=5&continue={token}"));
    assert_eq!(names(&second), cms(5..10));
    assert!(second["objects"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["class"] == "missing"));
    assert_eq!(second["remainingItemCount"], 2);
    let token = second["continue"].as_str().unwrap();
    let third = daemon.drift(&format!("?limit=5&continue={token}"));
    assert_eq!(names(&third), cms(10..12));
    assert!(third.get("continue").is_none() && third.get("remainingItemCount").is_none());

    // A new list is the current state: 01..04 and 08..11.
    let now: Vec<String> = cms(1..5).into_iter().chain(cms(8..12)).collect();
    assert_eq!(names(&daemon.drift("")), now);

    // `driftd drift` follows every page (here of 3 entries: 3 + 3 + 2).
    let out = driftd(&[
        "drift",
        "--server",
        &daemon.url,
        "--format",
        "json",
        "--chunk-size",
        "3",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(names(&body), now);
    assert!(body.get("continue").is_none());

    // A second replica (same database and cluster) does not hold the first's snapshot: its
    // answer to the first's token is 410 Expired, with a token for the rest of the current
    // state, as kube-apiserver answers a compacted one.
    let other = Daemon::start(&config, &sim.kubeconfig, &[]);
    other.wait_ready();
    let first = daemon.drift("?limit=3");
    assert_eq!(names(&first), cms(1..4));
    let token = first["continue"].as_str().unwrap();
    let (status, body) = other.get(&format!("/drift?limit=3&continue={token}"));
    assert_eq!(status, 410, "{body}");
    let gone: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(gone["kind"], "Status");
    assert_eq!(gone["reason"], "Expired");
    assert_eq!(gone["code"], 410);
    let next = gone["metadata"]["continue"].as_str().unwrap();
    let rest = other.drift(&format!("?limit=10&continue={next}"));
    assert_eq!(
        names(&rest),
        now[3..].to_vec(),
        "after cm-03, the current state"
    );
    // A token that is not one, or of other filters: 400.
    assert_eq!(daemon.get("/drift?continue=nonsense").0, 400);
    assert_eq!(
        daemon
            .get(&format!("/drift?class=modified&continue={token}"))
            .0,
        400
    );

    // The drift page shows a page and links to the next.
    let (status, html) = daemon.get("/?limit=3");
    assert_eq!(status, 200);
    let needle = "id=\"next-page\" href=\"";
    let start = html.find(needle).expect("a next link") + needle.len();
    let href = html[start..start + html[start..].find('"').unwrap()].replace("&amp;", "&");
    assert!(html.contains("cm-03") && !html.contains("cm-04"), "{html}");
    let (status, next_page) = daemon.get(&format!("/{href}"));
    assert_eq!(status, 200, "{next_page}");
    assert!(next_page.contains("cm-04") && next_page.contains("cm-09"));
    assert!(!next_page.contains("cm-03") && !next_page.contains("cm-10"));
}
