//! `driftd serve` refuses a bad configuration at start, naming the key, before it touches
//! the cluster or the database.
//!
//! The database defaults to `driftd.db` relative to the working directory, so each run
//! starts in its own temporary directory and the check looks there;
//! `valid_config_creates_the_default_database_where_the_check_looks` proves that a daemon
//! that does start puts its database in exactly that place.

use crate::scaffold::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `driftd serve --config driftd.toml` with `config`, run in a fresh directory; returns the
/// exit code and stderr, after checking that no database appeared in the working directory.
fn serve_with(config: &str, env: &[(&str, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("driftd.toml");
    std::fs::write(&path, config).unwrap();
    let mut cmd = Command::new(DRIFTD);
    cmd.args(["serve", "--config"])
        .arg(&path)
        .current_dir(dir.path())
        .env_remove("DRIFTD_DB")
        .env("KUBECONFIG", dir.path().join("no-such-kubeconfig"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        !default_database(dir.path()).exists(),
        "a rejected config creates no database"
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Where `driftd serve` run in `cwd` without a `database` key keeps its database.
fn default_database(cwd: &Path) -> std::path::PathBuf {
    cwd.join("driftd.db")
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

/// The control for the checks above: the same invocation with a valid config and a
/// reachable cluster creates the database at `default_database`, so a rejected config that
/// opened the database would be caught there.
#[test]
fn valid_config_creates_the_default_database_where_the_check_looks() {
    let dir = tempfile::tempdir().unwrap();
    let sim = Sim::start(dir.path());
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let path = work.join("driftd.toml");
    std::fs::write(&path, "listen = \"127.0.0.1:0\"\n").unwrap();
    let mut cmd = Command::new(DRIFTD);
    cmd.args(["serve", "--config"])
        .arg(&path)
        .current_dir(&work)
        .env_remove("DRIFTD_DB")
        .env("KUBECONFIG", &sim.kubeconfig);
    let mut daemon = Proc::spawn("driftd serve", cmd);
    daemon.wait_line("listening on http://", Duration::from_secs(30));
    assert!(
        default_database(&work).exists(),
        "the default database is created in the working directory"
    );
    assert!(daemon.terminate().success());
}
