//! `driftd serve` refuses a bad configuration at start, naming the key, before it touches
//! the cluster or the database.

use crate::scaffold::*;
use std::process::Command;

fn serve_with(config: &str, env: &[(&str, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("driftd.toml");
    std::fs::write(&path, config).unwrap();
    let mut cmd = Command::new(DRIFTD);
    cmd.args(["serve", "--config"])
        .arg(&path)
        .env("KUBECONFIG", dir.path().join("no-such-kubeconfig"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let db_created = dir.path().join("driftd.db").exists();
    assert!(!db_created, "a rejected config creates no database");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn unknown_key_is_named() {
    let (code, err) = serve_with("listen = \"127.0.0.1:0\"\nsettle_second = 2\n", &[]);
    assert_eq!(code, 2);
    assert!(err.contains("settle_second"), "{err}");
}

#[test]
fn wrong_type_names_the_nested_key() {
    let (code, err) = serve_with("[metrics]\nmax_object_series = \"many\"\n", &[]);
    assert_eq!(code, 2);
    assert!(err.contains("metrics.max_object_series"), "{err}");
}

#[test]
fn bad_environment_value_names_the_variable() {
    let (code, err) = serve_with("", &[("DRIFTD_LISTEN", "nowhere")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("DRIFTD_LISTEN") && err.contains("listen"),
        "{err}"
    );
}
