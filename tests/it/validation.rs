//! `commit` and `check` accept exactly what kube-apiserver accepts: objects it refuses are
//! refused (exit 2, file, document and field named in its words, nothing stored), objects
//! it accepts are accepted, and what cannot be compared is skipped with a warning.

use crate::commit_cli::{assert_ok, db_fingerprint, driftd, stderr, stdout};
use driftd_store::Store;
use std::path::Path;
use std::process::Output;

const CM_A: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";
const EMPTY_LIVE: &str = r#"{"apiVersion": "v1", "kind": "List", "items": []}"#;

/// `driftd commit --db d.db --source app` of `files` in `dir`.
fn commit_app(dir: &Path, extra: &[&str], files: &[&str]) -> Output {
    let mut args = vec!["commit", "--db", "d.db", "--source", "app"];
    args.extend(extra);
    for f in files {
        args.extend(["-f", f]);
    }
    driftd(dir, &args, None)
}

/// Exits 2 with `text` in its error.
#[track_caller]
fn assert_refused(out: &Output, text: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(text), "expected {text:?} in {err}");
}

fn cm(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n")
}

fn deploy_with(replicas: &str) -> String {
    format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec:\n      containers:\n      - name: web\n        image: nginx\n")
}

/// Objects kube-apiserver refuses, each with what the error must say: the one list both
/// `commit` (here) and the simulator (`validation_agreement`) are held to.
pub(crate) fn refused() -> Vec<(&'static str, String, Vec<String>)> {
    let long = "a".repeat(254);
    let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    let big = "x".repeat(256 * 1024);
    vec![
        ("long-name.yaml", cm(&long), vec![format!("long-name.yaml: document 0: ConfigMap \"{long}\" is invalid: metadata.name: Invalid value: \"{long}\": must be no more than 253 characters")]),
        ("upper.yaml", cm("Web"), vec![format!("metadata.name: Invalid value: \"Web\": {subdomain}")]),
        ("slash.yaml", cm("'a/b'"), vec![format!("metadata.name: Invalid value: \"a/b\": {subdomain}")]),
        ("dots.yaml", cm("a..b"), vec![format!("metadata.name: Invalid value: \"a..b\": {subdomain}")]),
        ("dotdot.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: '..'}\nrules: []\n".into(), vec!["ClusterRole.rbac.authorization.k8s.io \"..\" is invalid: metadata.name: Invalid value: \"..\": may not be '..'".into()]),
        ("control.yaml", cm("\"a\\x01b\""), vec![format!("metadata.name: Invalid value: \"a\\x01b\": {subdomain}")]),
        ("namespace.yaml", format!("{}  namespace: Team_A\n", cm("b")), vec!["metadata.namespace: Invalid value: \"Team_A\": a lowercase RFC 1123 label must consist of".into()]),
        ("long-namespace.yaml", format!("{}  namespace: {}\n", cm("b"), "n".repeat(64)), vec!["metadata.namespace: Invalid value:".into(), "must be no more than 63 characters".into()]),
        ("wrong-group.yaml", "apiVersion: v1\nkind: Deployment\nmetadata: {name: web}\n".into(), vec!["wrong-group.yaml: document 0: no matches for kind \"Deployment\" in version \"v1\"; Deployment is served as apps/v1".into()]),
        ("removed-version.yaml", "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n".into(), vec!["no matches for kind \"PodDisruptionBudget\" in version \"policy/v1beta1\"; PodDisruptionBudget is served as policy/v1".into()]),
        ("huge-replicas.yaml", deploy_with("99999999999999999999999"), vec!["Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal number 1e+23 into Go struct field DeploymentSpec.spec.replicas of type int32".into()]),
        ("word-replicas.yaml", deploy_with("'two'"), vec!["cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32".into()]),
        ("int32-replicas.yaml", deploy_with("2147483648"), vec!["cannot unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas of type int32".into()]),
        ("data-number.yaml", format!("{}data: 5\n", cm("b")), vec!["ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type map".into()]),
        ("base64.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  password: hunter2!\n".into(), vec!["Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 7".into()]),
        ("python.yaml", format!("{}data:\n  cmd: !!python/object/apply:os.system [\"echo hunter2\"]\n", cm("b")), vec!["cannot unmarshal array into Go struct field ConfigMap.data.cmd of type string".into()]),
        ("label-value.yaml", format!("{}  labels: {{app: -web-}}\n", cm("b")), vec!["metadata.labels: Invalid value: \"-web-\": a valid label must be an empty string or consist of alphanumeric characters".into()]),
        ("label-key.yaml", format!("{}  labels: {{'bad key': x}}\n", cm("b")), vec!["metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters".into()]),
        ("annotations.yaml", format!("{}  annotations: {{big: {big}}}\n", cm("b")), vec!["metadata.annotations: Too long: may not be more than 262144 bytes".into()]),
        ("service.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: 1st}\nspec: {ports: [{port: 80}]}\n".into(), vec!["Service \"1st\" is invalid: metadata.name: Invalid value: \"1st\": a DNS-1035 label must consist of".into()]),
        ("namespace-dot.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: team.a}\n".into(), vec!["Namespace \"team.a\" is invalid: metadata.name: Invalid value: \"team.a\": must not contain dots".into()]),
        ("cronjob.yaml", format!("apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: {}}}\nspec:\n  schedule: '@daily'\n  jobTemplate: {{spec: {{template: {{spec: {{restartPolicy: Never, containers: [{{name: c, image: i}}]}}}}}}}}\n", "c".repeat(53)), vec!["must be no more than 52 characters".into()]),
        ("port-type.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    ports: [{containerPort: '80'}]\n".into(), vec!["cannot unmarshal string into Go struct field ContainerPort.spec.containers[0].ports[0].containerPort of type int32".into()]),
        ("quantity.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    resources: {limits: {cpu: lots}}\n".into(), vec!["quantities must match the regular expression".into()]),
        ("secret-key.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {'bad key': hunter2}\n".into(), vec!["data[bad key]: Invalid value: \"bad key\": a valid config key must consist of".into()]),
        ("generate-name.yaml", "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: Migrate-}\nspec: {template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}\n".into(), vec!["metadata.generateName: Invalid value: \"Migrate-\"".into()]),
        ("crd-name.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widget.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n".into(), vec!["metadata.name: Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group".into()]),
        // A group without a dot that is not built in: no CRD can define it.
        ("unserved-group.yaml", "apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: i}\n".into(), vec!["no matches for kind \"Ingress\" in version \"extensions/v1beta1\"; Ingress is served as networking.k8s.io/v1".into()]),
    ]
}

#[test]
fn objects_kube_apiserver_refuses_are_refused_by_commit_and_check_with_nothing_stored() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db");
    assert_ok(&driftd(
        dir.path(),
        &["commit", "--db", "d.db", "--source", "web", "-f", "-"],
        Some(CM_A),
    ));
    std::fs::write(dir.path().join("live.json"), EMPTY_LIVE).unwrap();
    let before = db_fingerprint(&db);
    for (file, text, expected) in refused() {
        std::fs::write(dir.path().join(file), format!("{CM_A}---\n{text}")).unwrap();
        let out = driftd(
            dir.path(),
            &["commit", "--db", "d.db", "--source", "web", "-f", file],
            None,
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(
            err.starts_with(&format!("error: {file}: document 1: "))
                || err.contains(&format!("{file}: document 1: ")),
            "{file}: {err}"
        );
        for e in &expected {
            let e = e.replace("document 0", "document 1");
            assert!(err.contains(&e), "{file}: expected {e:?} in {err}");
        }
        assert!(
            !err.contains("hunter2"),
            "{file}: a Secret value leaked: {err}"
        );
        assert!(stdout(&out).is_empty(), "{file}");
        assert_eq!(db_fingerprint(&db), before, "{file} changed the database");
        // A new database is not even created.
        let out = driftd(
            dir.path(),
            &["commit", "--db", "new.db", "--source", "web", "-f", file],
            None,
        );
        assert_eq!(out.status.code(), Some(2), "{file}");
        assert!(!dir.path().join("new.db").exists(), "{file}");
        // `check` refuses the same input the same way.
        let out = driftd(
            dir.path(),
            &["check", "--desired", file, "--live", "live.json"],
            None,
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "check {file}: {err}");
        assert!(
            err.contains(&expected[0].replace("document 0", "document 1")),
            "check {file}: {err}"
        );
    }
}

/// Objects kube-apiserver accepts that a stricter reader might not (RBAC names with colons,
/// a namespace on a cluster-scoped object, cluster-scoped kinds, line-wrapped base64): shared
/// with `validation_agreement`, which creates each one in the simulator too.
pub(crate) const ACCEPTED: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'system:aggregated-metrics-reader', namespace: ignored}\nrules: []\n---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: example.com/disk\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1}\nspec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /tmp}}\n---\napiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec: {controller: k8s.io/ingress-nginx}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: hook}\nwebhooks: []\n---\napiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1beta1.metrics.k8s.io}\nspec: {group: metrics.k8s.io, version: v1beta1, groupPriorityMinimum: 100, versionPriority: 100, service: {name: m, namespace: kube-system}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: wrapped}\ndata:\n  key: |\n    aHVu\n    dGVyMg==\n";

#[test]
fn objects_kube_apiserver_accepts_are_accepted_with_their_scope() {
    let dir = tempfile::tempdir().unwrap();
    let text = ACCEPTED;
    std::fs::write(dir.path().join("ok.yaml"), text).unwrap();
    assert_eq!(
        assert_ok(&driftd(
            dir.path(),
            &["commit", "--db", "d.db", "--source", "platform", "-f", "ok.yaml"],
            None,
        )),
        "revision 1 of source platform (7 objects)\n"
    );
    let state = Store::open(&dir.path().join("d.db"))
        .unwrap()
        .desired_state()
        .unwrap();
    let keys: Vec<String> = state.objects.iter().map(|o| o.key.to_string()).collect();
    for expected in [
        "ClusterRole.rbac.authorization.k8s.io system:aggregated-metrics-reader",
        "StorageClass.storage.k8s.io fast",
        "PersistentVolume pv1",
        "IngressClass.networking.k8s.io nginx",
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io hook",
        "APIService.apiregistration.k8s.io v1beta1.metrics.k8s.io",
        "Secret default/wrapped",
    ] {
        assert!(
            keys.contains(&expected.to_string()),
            "{expected} in {keys:?}"
        );
    }
}

#[test]
fn generate_name_objects_are_skipped_and_counted_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{CM_A}---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n  annotations: {{helm.sh/hook: pre-install}}\nspec: {{template: {{spec: {{restartPolicy: Never, containers: [{{name: m, image: busybox}}]}}}}}}\n");
    std::fs::write(dir.path().join("hooks.yaml"), text).unwrap();
    let out = commit_app(dir.path(), &[], &["hooks.yaml"]);
    assert_eq!(
        assert_ok(&out),
        "revision 1 of source app (1 object); 1 object skipped: generateName without a name\n"
    );
    assert!(
        stderr(&out).contains("warning: hooks.yaml: document 1: Job with generateName \"migrate-\" and no name skipped"),
        "{}",
        stderr(&out)
    );
    // Only hooks: nothing to commit, said as for an empty input.
    std::fs::write(
        dir.path().join("only.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {generateName: hook-}\nspec: {containers: [{name: c, image: i}]}\n",
    )
    .unwrap();
    assert_refused(
        &commit_app(dir.path(), &[], &["only.yaml"]),
        "no objects found in only.yaml (1 object skipped: generateName without a name); pass --allow-empty",
    );
}

#[test]
fn a_duplicated_key_keeps_its_last_value_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("dup.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: first\n  k: last\n",
    )
    .unwrap();
    let out = commit_app(dir.path(), &[], &["dup.yaml"]);
    assert_ok(&out);
    assert!(
        stderr(&out).contains("warning: dup.yaml: document 0: line 7: key \"k\" is given twice in one mapping (first at line 6); the last value is used, as kubectl does"),
        "{}",
        stderr(&out)
    );
    let state = Store::open(&dir.path().join("d.db"))
        .unwrap()
        .desired_state()
        .unwrap();
    assert_eq!(state.objects[0].object["data"]["k"], "last");
}

#[test]
fn one_commit_is_limited_in_size_for_all_files_together() {
    let dir = tempfile::tempdir().unwrap();
    for n in ["a", "b"] {
        let text = format!("{}data: {{k: {}}}\n", cm(n), "v".repeat(700));
        std::fs::write(dir.path().join(format!("{n}.yaml")), text).unwrap();
    }
    let files = ["a.yaml", "b.yaml"];
    assert_refused(
        &commit_app(dir.path(), &["--max-input-size", "1Ki"], &files),
        "b.yaml: document 0: the input is 1.5 KiB in 2 files, more than the limit of 1 KiB for all files together",
    );
    assert!(!dir.path().join("d.db").exists());
    assert_ok(&commit_app(
        dir.path(),
        &["--max-input-size", "2Ki"],
        &files,
    ));
}

#[test]
fn an_oversize_item_late_in_a_list_is_refused_and_the_database_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), CM_A).unwrap();
    assert_ok(&commit_app(dir.path(), &[], &["a.yaml"]));
    let before = db_fingerprint(&dir.path().join("d.db"));
    // Nine small ConfigMaps (about 100 bytes each) and a tenth of about 2 KiB, over a
    // per-object limit of 1 KiB: the List as a whole is larger than the limit too, which
    // only its last item may not be.
    let item = |n: usize, len: usize| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{n}"}},"data":{{"k":"{}"}}}}"#,
            "v".repeat(len)
        )
    };
    let items: Vec<String> = (0..10)
        .map(|n| item(n, if n == 9 { 2048 } else { 20 }))
        .collect();
    let list = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        items.join(",")
    );
    std::fs::write(dir.path().join("list.json"), list).unwrap();
    assert_refused(
        &commit_app(dir.path(), &["--max-object-size", "1Ki"], &["list.json"]),
        "list.json: document 0: field items[9] is larger than 1 KiB, the most one object may be",
    );
    assert_eq!(db_fingerprint(&dir.path().join("d.db")), before);
    // Under the default limit (3 MiB) the same List is committed.
    assert_ok(&commit_app(dir.path(), &[], &["list.json"]));
}

#[test]
fn check_refuses_an_empty_desired_input_as_commit_does() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.yaml"), "# nothing here\n---\n").unwrap();
    std::fs::write(dir.path().join("live.json"), EMPTY_LIVE).unwrap();
    let check = driftd(
        dir.path(),
        &["check", "--desired", "empty.yaml", "--live", "live.json"],
        None,
    );
    let commit = commit_app(dir.path(), &[], &["empty.yaml"]);
    assert_eq!(check.status.code(), Some(2), "{}", stderr(&check));
    assert_eq!(commit.status.code(), Some(2));
    assert_eq!(
        stderr(&check),
        "error: no objects found in empty.yaml; pass --allow-empty to record an empty object set\n"
    );
    assert_eq!(stderr(&check), stderr(&commit));
    let allowed = driftd(
        dir.path(),
        &[
            "check",
            "--desired",
            "empty.yaml",
            "--live",
            "live.json",
            "--allow-empty",
        ],
        None,
    );
    assert_eq!(allowed.status.code(), Some(0), "{}", stderr(&allowed));
}

#[test]
fn check_takes_a_custom_kinds_scope_from_the_live_objects() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("desired.yaml"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: shop}\nspec: {size: 2}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("live.json"),
        r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "shop"}, "spec": {"size": 3}}"#,
    )
    .unwrap();
    let out = driftd(
        dir.path(),
        &["check", "--desired", "desired.yaml", "--live", "live.json"],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Widget.example.com shop/w"),
        "{}",
        stdout(&out)
    );
    // With no live object and no CRD, nothing tells its scope: missing, keyed as
    // namespaced, and the JSON says the scope is unresolved.
    std::fs::write(dir.path().join("none.json"), EMPTY_LIVE).unwrap();
    let out = driftd(
        dir.path(),
        &[
            "check",
            "--desired",
            "desired.yaml",
            "--live",
            "none.json",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let o = &report["objects"][0];
    assert_eq!(
        (&o["class"], &o["namespace"], &o["scope"]),
        (
            &serde_json::json!("missing"),
            &serde_json::json!("shop"),
            &serde_json::json!("unresolved")
        ),
        "{report}"
    );
    // A cluster-scoped kind: a live object without a namespace tells, and the namespace the
    // manifest names is dropped (kube-apiserver clears it), so the two are one object.
    std::fs::write(
        dir.path().join("cluster.json"),
        r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 2}}"#,
    )
    .unwrap();
    let out = driftd(
        dir.path(),
        &[
            "check",
            "--desired",
            "desired.yaml",
            "--live",
            "cluster.json",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
}
