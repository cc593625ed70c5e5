//! `driftd commit|sources|history` as a user runs them: the real binary, a real database file.

use driftd_store::Store;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_driftd");

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifests")
}

/// Runs driftd with `args`, optional stdin, and a clean environment for the db default.
pub(crate) fn driftd(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("DRIFTD_DB")
        .env("USER", "tester")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("driftd starts");
    if let Some(text) = stdin {
        // driftd may refuse before reading its input: a closed pipe is not our failure.
        let written = child.stdin.take().unwrap().write_all(text.as_bytes());
        if let Err(e) = written {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
        }
    }
    child.wait_with_output().unwrap()
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
pub(crate) fn assert_ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
    stdout(o)
}

/// sha256 of the database file and its WAL (if any): "byte-for-byte unchanged" made checkable.
pub(crate) fn db_fingerprint(db: &Path) -> (String, Option<String>) {
    let hash = |p: &Path| hex::encode(Sha256::digest(std::fs::read(p).unwrap()));
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    (hash(db), wal.exists().then(|| hash(&wal)))
}

const CM_A: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";

#[test]
fn commit_helm_output_folder_then_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let helm = fixtures().join("helm");
    let helm = helm.to_str().unwrap();
    let out = driftd(
        dir.path(),
        &[
            "commit", "--db", "d.db", "--source", "web", "-m", "first", "-f", helm,
        ],
        None,
    );
    assert_eq!(assert_ok(&out), "revision 1 of source web (7 objects)\n");

    let store = Store::open(&dir.path().join("d.db")).unwrap();
    let state = store.desired_state().unwrap();
    let keys: Vec<String> = state.objects.iter().map(|o| o.key.to_string()).collect();
    for expected in [
        "Namespace web",
        "ServiceAccount default/web",
        "ConfigMap default/web-config",
        "Service default/web",
        "Deployment.apps default/web",
        "Role.rbac.authorization.k8s.io default/web-reader",
        "RoleBinding.rbac.authorization.k8s.io default/web-reader",
    ] {
        assert!(
            keys.contains(&expected.to_string()),
            "{expected} in {keys:?}"
        );
    }
    let deploy = state
        .objects
        .iter()
        .find(|o| o.key.kind == "Deployment")
        .unwrap();
    assert_eq!(
        deploy.object["spec"]["template"]["spec"]["volumes"][0]["configMap"]["defaultMode"], 420,
        "0644 is octal, as kubectl reads it"
    );
    let ns = state
        .objects
        .iter()
        .find(|o| o.key.kind == "Namespace")
        .unwrap();
    assert!(ns.object["metadata"].get("namespace").is_none());
    drop(store);

    let before = db_fingerprint(&dir.path().join("d.db"));
    let out = driftd(
        dir.path(),
        &[
            "commit", "--db", "d.db", "--source", "web", "-m", "again", "-f", helm,
        ],
        None,
    );
    assert_eq!(
        assert_ok(&out),
        "unchanged: source web is already at revision 1\n"
    );
    assert_eq!(db_fingerprint(&dir.path().join("d.db")), before);
}

#[test]
fn stdin_yaml_and_json_and_several_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = driftd(
        dir.path(),
        &["commit", "--source", "web", "-n", "team", "-f", "-"],
        Some(CM_A),
    );
    assert_eq!(assert_ok(&out), "revision 1 of source web (1 object)\n");
    // No --db and no DRIFTD_DB: driftd.db in the working directory.
    let store = Store::open(&dir.path().join("driftd.db")).unwrap();
    let state = store.desired_state().unwrap();
    assert_eq!(state.objects[0].key.namespace.as_deref(), Some("team"));
    assert_eq!(state.objects[0].object["metadata"]["namespace"], "team");
    drop(store);

    let json = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}}"#;
    let out = driftd(
        dir.path(),
        &["commit", "--db", "j.db", "--source", "web", "-f", "-"],
        Some(json),
    );
    assert_eq!(assert_ok(&out), "revision 1 of source web (1 object)\n");

    std::fs::write(dir.path().join("a.yaml"), CM_A).unwrap();
    std::fs::write(dir.path().join("b.json"), json).unwrap();
    std::fs::write(dir.path().join("c.yml"), CM_A.replace("name: a", "name: c")).unwrap();
    // One -f with several values, and -f repeated.
    let out = driftd(
        dir.path(),
        &[
            "commit", "--db", "m.db", "--source", "web", "-f", "a.yaml", "b.json", "-f", "c.yml",
        ],
        None,
    );
    assert_eq!(assert_ok(&out), "revision 1 of source web (3 objects)\n");
}

#[test]
fn driftd_db_environment_variable_is_the_default_db() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("from-env.db");
    let out = Command::new(BIN)
        .args(["commit", "--source", "web", "-f", "-"])
        .current_dir(dir.path())
        .env("DRIFTD_DB", &db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(CM_A.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert_ok(&out);
    assert!(db.exists());
    assert!(!dir.path().join("driftd.db").exists());
}

#[test]
fn sources_and_history_list_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], stdin: &str| assert_ok(&driftd(dir.path(), args, Some(stdin)));
    run(
        &[
            "commit", "--db", "d.db", "--source", "web", "-m", "first", "-f", "-",
        ],
        CM_A,
    );
    run(
        &[
            "commit",
            "--db",
            "d.db",
            "--source",
            "web",
            "-m",
            "scale up\nlong explanation",
            "--author",
            "bob",
            "-f",
            "-",
        ],
        &CM_A.replace("k: v", "k: w"),
    );
    run(
        &[
            "commit", "--db", "d.db", "--source", "db", "-m", "db", "-f", "-",
        ],
        // A hook kube-apiserver names on create: skipped, and counted with the revision.
        &format!(
            "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: hook-\n",
            CM_A.replace("name: a", "name: pg")
        ),
    );

    let table = assert_ok(&driftd(dir.path(), &["sources", "--db", "d.db"], None));
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["SOURCE", "REVISION", "OBJECTS", "SKIPPED", "AUTHOR", "AGE", "MESSAGE"]
    );
    let db_row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(db_row[..5], ["db", "3", "1", "1", "tester"]);
    let web_row: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(web_row[..5], ["web", "2", "1", "0", "bob"]);
    assert!(lines[2].ends_with("scale up ..."), "{table}");
    // Columns are aligned: every row's REVISION starts under its header.
    let col = lines[0].find("REVISION").unwrap();
    assert_eq!(&lines[1][col..col + 1], "3");
    assert_eq!(&lines[2][col..col + 1], "2");

    let json = assert_ok(&driftd(
        dir.path(),
        &["sources", "--db", "d.db", "--format", "json"],
        None,
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[1]["name"], "web");
    assert_eq!(v[1]["latest"]["id"], 2);
    assert_eq!(v[1]["latest"]["author"], "bob");
    assert_eq!(v[1]["latest"]["skipped_count"], 0);
    assert_eq!(v[0]["latest"]["skipped_count"], 1, "{json}");
    let at = v[1]["latest"]["committed_at"].as_str().unwrap();
    assert!(at.parse::<jiff::Timestamp>().is_ok(), "RFC 3339: {at}");

    let table = assert_ok(&driftd(
        dir.path(),
        &["history", "--db", "d.db", "--source", "web"],
        None,
    ));
    let ids: Vec<&str> = table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(ids, ["2", "1"], "newest first:\n{table}");
    assert!(table.lines().next().unwrap().starts_with("REVISION"));

    let json = assert_ok(&driftd(
        dir.path(),
        &[
            "history", "--db", "d.db", "--source", "web", "--format", "json",
        ],
        None,
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[0]["message"], "scale up\nlong explanation");
    assert_eq!(v[1]["message"], "first");
    assert_eq!(v[1]["content_hash"].as_str().unwrap().len(), 64);

    let out = driftd(
        dir.path(),
        &["history", "--db", "d.db", "--source", "nope"],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("source \"nope\" not found"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("db, web"), "{}", stderr(&out));

    let out = driftd(dir.path(), &["sources", "--db", "missing.db"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.db does not exist"));
    assert!(
        !dir.path().join("missing.db").exists(),
        "listing never creates a database"
    );
}

/// Each bad input: exit 2, an error naming file, document and field, and no write at all.
#[test]
fn bad_input_exits_2_names_the_place_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    assert_ok(&driftd(
        dir.path(),
        &["commit", "--db", "d.db", "--source", "web", "-f", "-"],
        Some(CM_A),
    ));
    let two = |second: &str| format!("{CM_A}---\n{second}");
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "syntax.yaml",
            two("apiVersion: v1\nkind: [ConfigMap\nmetadata: {name: b}\n"),
            vec!["syntax.yaml: document 1: invalid YAML at line"],
        ),
        (
            "syntax.json",
            "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",,}".into(),
            vec!["syntax.json: document 0: invalid JSON", "line 1"],
        ),
        (
            "no-api-version.yaml",
            two("kind: ConfigMap\nmetadata: {name: b}\n"),
            vec!["no-api-version.yaml: document 1: field apiVersion is required"],
        ),
        (
            "empty-kind.yaml",
            two("apiVersion: v1\nkind: \"\"\nmetadata: {name: b}\n"),
            vec!["empty-kind.yaml: document 1: field kind must not be empty"],
        ),
        (
            "no-name.yaml",
            two("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {a: b}\n"),
            vec!["no-name.yaml: document 1: field metadata.name is required"],
        ),
        (
            "scalar.yaml",
            two("just some text\n"),
            vec!["scalar.yaml: document 1: expected a Kubernetes object, found a string"],
        ),
        (
            "list-item.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n- apiVersion: v1\n  metadata: {name: y}\n".into(),
            vec!["list-item.yaml: document 0: field items[1].kind is required"],
        ),
        (
            "twice.yaml",
            two(&CM_A.replace("name: a", "name: a\n  namespace: default")),
            vec!["twice.yaml: document 1: ConfigMap default/a is defined twice: also in twice.yaml: document 0"],
        ),
        (
            "secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: \"hunter2\n".into(),
            vec!["secret.yaml: document 0: invalid YAML at line 5"],
        ),
        ("empty.yaml", "# nothing here\n---\n".into(), vec!["no objects found in empty.yaml"]),
    ];
    let before = db_fingerprint(&db);
    for (file, text, expected) in cases {
        std::fs::write(dir.path().join(file), &text).unwrap();
        let out = driftd(
            dir.path(),
            &["commit", "--db", "d.db", "--source", "web", "-f", file],
            None,
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.starts_with("error: "), "{file}: {err}");
        for e in expected {
            assert!(err.contains(e), "{file}: expected {e:?} in {err}");
        }
        assert!(!err.contains("hunter2"), "secret value leaked: {err}");
        assert!(stdout(&out).is_empty(), "{file}");
        assert_eq!(db_fingerprint(&db), before, "{file} changed the database");
    }
    // Bad input never creates a database either.
    let out = driftd(
        dir.path(),
        &[
            "commit",
            "--db",
            "new.db",
            "--source",
            "web",
            "-f",
            "no-name.yaml",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("new.db").exists());
    // A bad source name is refused before the database is created.
    let out = driftd(
        dir.path(),
        &[
            "commit",
            "--db",
            "new.db",
            "--source",
            "no spaces",
            "-f",
            "-",
        ],
        Some(CM_A),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid source name"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("new.db").exists());
    // A path that does not exist is named.
    let out = driftd(
        dir.path(),
        &[
            "commit",
            "--db",
            "d.db",
            "--source",
            "web",
            "-f",
            "nope.yaml",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("nope.yaml"), "{}", stderr(&out));
}

#[test]
fn an_object_owned_by_another_source_is_refused_without_writing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    std::fs::write(dir.path().join("web.yaml"), CM_A).unwrap();
    assert_ok(&driftd(
        dir.path(),
        &[
            "commit", "--db", "d.db", "--source", "web", "-f", "web.yaml",
        ],
        None,
    ));
    let other = format!("{}---\n{CM_A}", CM_A.replace("name: a", "name: mine"));
    std::fs::write(dir.path().join("other.yaml"), other).unwrap();

    let before = db_fingerprint(&db);
    let out = driftd(
        dir.path(),
        &[
            "commit",
            "--db",
            "d.db",
            "--source",
            "other",
            "-f",
            "other.yaml",
        ],
        None,
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("ConfigMap default/a"), "{err}");
    assert!(err.contains("other.yaml: document 1"), "{err}");
    assert!(err.contains("already owned by source \"web\""), "{err}");
    assert_eq!(
        db_fingerprint(&db),
        before,
        "a refused commit writes nothing"
    );

    let sources = assert_ok(&driftd(dir.path(), &["sources", "--db", "d.db"], None));
    assert!(!sources.contains("other"), "{sources}");
}

#[test]
fn a_database_from_a_newer_driftd_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    drop(Store::open(&db).unwrap());
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA user_version = 999")
        .unwrap();
    let out = driftd(
        dir.path(),
        &["commit", "--db", "d.db", "--source", "web", "-f", "-"],
        Some(CM_A),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("newer driftd"), "{}", stderr(&out));
}

#[test]
fn custom_resources_take_their_scope_from_crds_committed_by_another_source() {
    let dir = tempfile::tempdir().unwrap();
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: clusterwidgets.example.com\nspec:\n  group: example.com\n  scope: Cluster\n  names: {kind: ClusterWidget, plural: clusterwidgets}\n  versions: [{name: v1, served: true, storage: true}]\n";
    let crs = "apiVersion: example.com/v1\nkind: ClusterWidget\nmetadata: {name: w}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: nw}\n";
    assert_ok(&driftd(
        dir.path(),
        &["commit", "--db", "d.db", "--source", "platform", "-f", "-"],
        Some(crd),
    ));
    // Widget has no CRD anywhere (its operator was installed by someone else): committed,
    // and the user is told its scope and schema come from the cluster.
    let out = driftd(
        dir.path(),
        &["commit", "--db", "d.db", "--source", "app", "-f", "-"],
        Some(crs),
    );
    assert_ok(&out);
    let err = stderr(&out);
    assert!(
        err.contains("no CustomResourceDefinition committed or in the input defines Widget.example.com (1 object)")
            && err.contains("--namespaced/--cluster-scoped KIND.GROUP declare a scope"),
        "{err}"
    );
    assert!(
        !err.contains("ClusterWidget"),
        "its CRD is committed: {err}"
    );
    assert_ok(&driftd(
        dir.path(),
        &[
            "commit",
            "--db",
            "d.db",
            "--source",
            "app",
            "--namespaced",
            "Widget.example.com",
            "-f",
            "-",
        ],
        Some(crs),
    ));
    let state = Store::open(&dir.path().join("d.db"))
        .unwrap()
        .desired_state()
        .unwrap();
    let ns = |kind: &str| {
        state
            .objects
            .iter()
            .find(|o| o.key.kind == kind)
            .unwrap()
            .key
            .namespace
            .clone()
    };
    assert_eq!(
        ns("ClusterWidget"),
        None,
        "cluster-scoped by the committed CRD"
    );
    assert_eq!(
        ns("Widget").as_deref(),
        Some("default"),
        "namespaced as declared"
    );
}
