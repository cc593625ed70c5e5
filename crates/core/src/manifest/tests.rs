//! The manifest reader as `commit` and `check` use it.

use super::yaml::scrub_quoted;
use super::*;

fn parse(text: &str) -> Result<Vec<ManifestObject>, ManifestError> {
    parse_text(text, "in.yaml", &LoadOptions::default())
}

#[test]
fn helm_template_output_with_comments_empty_and_null_documents() {
    let text = "---\n# Source: chart/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# Source: chart/templates/empty.yaml\n---\n---\nnull\n---\n~\n---\n# Source: chart/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: b\n  namespace: prod\n";
    let objs = parse(text).unwrap();
    assert_eq!(objs.len(), 2);
    assert_eq!(objs[0].key.name, "a");
    assert_eq!(objs[0].key.namespace.as_deref(), Some("default"));
    assert_eq!(objs[0].object["metadata"]["namespace"], "default");
    assert_eq!(objs[0].origin.document, 0);
    assert_eq!(objs[1].key.namespace.as_deref(), Some("prod"));
    // documents: 0 cm, 1 comment-only, 2 empty, 3 null, 4 ~, 5 svc
    assert_eq!(objs[1].origin.document, 5);
}

#[test]
fn implicit_first_document_is_document_zero() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n";
    let objs = parse(text).unwrap();
    assert_eq!(
        objs.iter().map(|o| o.origin.document).collect::<Vec<_>>(),
        vec![0, 1]
    );
}

#[test]
fn lists_are_unwrapped_and_keep_the_wrapper_document() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: why}\n---\napiVersion: v1\nkind: ConfigMapList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: z}\n";
    let objs = parse(text).unwrap();
    let names: Vec<_> = objs
        .iter()
        .map(|o| (o.key.name.as_str(), o.origin.document))
        .collect();
    assert_eq!(names, vec![("first", 0), ("x", 1), ("why", 1), ("z", 2)]);
    assert_eq!(objs[2].key.group, "apps");
}

#[test]
fn list_item_errors_name_the_item() {
    let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: x}\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {}\n";
    let err = parse(text).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("items[1].metadata.name"));
    assert_eq!(err.document, 0);
    let err = parse("apiVersion: v1\nkind: List\n").unwrap_err();
    assert_eq!(err.field.as_deref(), Some("items"));
}

#[test]
fn missing_fields_are_named() {
    for (text, field) in [
        ("kind: ConfigMap\nmetadata: {name: a}\n", "apiVersion"),
        (
            "apiVersion: ''\nkind: ConfigMap\nmetadata: {name: a}\n",
            "apiVersion",
        ),
        ("apiVersion: v1\nmetadata: {name: a}\n", "kind"),
        ("apiVersion: v1\nkind: ConfigMap\n", "metadata.name"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n",
            "metadata.name",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ''}\n",
            "metadata.name",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 5}\n",
            "metadata.name",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: [a]\n",
            "metadata",
        ),
    ] {
        let err = parse(&format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ok}}\n---\n{text}"
        ))
        .unwrap_err();
        assert_eq!(err.field.as_deref(), Some(field), "{text}");
        assert_eq!(err.document, 1, "{text}");
        assert!(
            err.to_string()
                .contains(&format!("in.yaml: document 1: field {field} ")),
            "{err}"
        );
    }
}

#[test]
fn non_object_documents_are_rejected() {
    let err = parse("- a\n- b\n").unwrap_err();
    assert!(err.reason.contains("found a list"), "{err}");
    let err = parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\njust text\n")
        .unwrap_err();
    assert_eq!(err.document, 1);
    assert!(err.reason.contains("found a string"), "{err}");
}

#[test]
fn yaml_syntax_errors_give_line_and_document() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: [unclosed\nmetadata: {name: b}\n";
    let err = parse(text).unwrap_err();
    assert_eq!(err.document, 1, "{err}");
    assert!(err.reason.contains("invalid YAML at line"), "{err}");
}

#[test]
fn secret_values_never_appear_in_errors() {
    let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: \"hunter2-very-secret\n  other: [\n";
    let err = parse(text).unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    // A key given twice: the warning names the key, never a value.
    let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  password: aHVudGVyMg==\n  password: c2VjcmV0\n";
    let loaded = read_text(text, "in.yaml", &LoadOptions::default()).unwrap();
    let warning = loaded.warnings[0].to_string();
    assert!(
        !warning.contains("aHVudGVyMg") && !warning.contains("c2VjcmV0"),
        "{warning}"
    );
    // Bad base64, a number, a list: the value is never quoted.
    for bad in ["hunter2-very-secret!", "12345678", "[hunter2]"] {
        let text = format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: s}}\ndata:\n  password: {bad}\n"
        );
        let err = parse(&text).unwrap_err().to_string();
        assert!(
            !err.contains("hunter2") && !err.contains("12345678"),
            "{err}"
        );
    }
}

#[test]
fn quoted_input_is_scrubbed_from_parser_messages() {
    assert_eq!(
        scrub_quoted("non-finite float `.inf` rejected, tag `!!str` unsupported"),
        "non-finite float `…` rejected, tag `!!str` unsupported"
    );
    assert_eq!(scrub_quoted("unclosed `quote"), "unclosed `quote");
    let err = parse("apiVersion: v1\nkind: Secret\nmetadata: {name: a}\np: .inf\n").unwrap_err();
    assert!(!err.reason.contains(".inf"), "{err}");
}

#[test]
fn alias_bombs_are_refused() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let prev = format!("*a{}", i - 1);
        text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let err = parse(&text).unwrap_err();
    assert!(err.reason.contains("invalid YAML"), "{err}");
}

#[test]
fn deep_nesting_is_refused() {
    let text = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    assert!(parse_text(&text, "in.yaml", &LoadOptions::default()).is_err());
    let text = format!("a: {}{}", "[".repeat(5000), "]".repeat(5000));
    assert!(parse(&text).is_err());
}

#[test]
fn json_stream_of_objects() {
    let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}
{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"prod","namespace":"ignored"}}"#;
    let objs = parse_text(text, "x.json", &LoadOptions::default()).unwrap();
    assert_eq!(objs.len(), 2);
    assert_eq!(objs[1].origin.document, 1);
    assert_eq!(objs[1].key.namespace, None);
    assert!(objs[1].object["metadata"].get("namespace").is_none());
    let err = parse_text(
        "{\"apiVersion\": \"v1\",",
        "x.json",
        &LoadOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.reason.contains("invalid JSON") && err.reason.contains("line 1"),
        "{err}"
    );
}

#[test]
fn yaml_flow_mappings_are_not_mistaken_for_json() {
    let objs = parse("{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n").unwrap();
    assert_eq!(objs[0].key.name, "a");
    let err = parse("{\"apiVersion\": \"v1\",,}").unwrap_err();
    assert!(err.reason.contains("invalid JSON"), "{err}");
}

#[test]
fn namespace_defaulting_follows_scope() {
    let opts = LoadOptions {
        default_namespace: "team".into(),
        custom_scopes: [
            (("example.com".to_string(), "Known".to_string()), false),
            (("example.com".to_string(), "Widget".to_string()), true),
        ]
        .into(),
        ..LoadOptions::default()
    };
    let text = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: x}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: x}\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\nspec:\n  group: example.com\n  scope: Cluster\n  names: {kind: Gadget, plural: gadgets}\n";
    let objs = parse_text(text, "in.yaml", &opts).unwrap();
    assert_eq!(objs[0].key.namespace, None);
    assert_eq!(objs[1].key.namespace.as_deref(), Some("team"));
    assert_eq!(objs[2].key.namespace, None, "CRD in the input says Cluster");
    assert_eq!(objs[3].key.namespace, None);
    let text = "apiVersion: example.com/v1\nkind: Known\nmetadata: {name: k, namespace: x}\n";
    let objs = parse_text(text, "in.yaml", &opts).unwrap();
    assert_eq!(objs[0].key.namespace, None, "scope from custom_scopes");
}

#[test]
fn duplicates_name_both_origins() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n";
    let err = parse(text).unwrap_err();
    assert_eq!(err.document, 1);
    assert!(err.reason.contains("in.yaml: document 0"), "{err}");
    // Different API versions of one group/kind are the same object.
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n---\napiVersion: apps/v1beta2\nkind: Deployment\nmetadata: {name: a}\n";
    assert!(parse(text).is_err());
    // Same name in another namespace is another object.
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: other}\n";
    assert_eq!(parse(text).unwrap().len(), 2);
}

#[test]
fn octal_file_modes_read_as_kubectl_reads_them() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nmode: 0644\n";
    assert_eq!(parse(text).unwrap()[0].object["mode"], 420);
}

#[test]
fn folders_are_walked_recursively_in_sorted_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("b/c")).unwrap();
    let cm = |n: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\n");
    std::fs::write(dir.path().join("b/c/z.yml"), cm("z")).unwrap();
    std::fs::write(dir.path().join("a.yaml"), cm("a")).unwrap();
    std::fs::write(
        dir.path().join("b/m.json"),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"m"}}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("b/notes.txt"), "not a manifest").unwrap();
    std::fs::create_dir_all(dir.path().join(".github/workflows")).unwrap();
    std::fs::write(dir.path().join(".github/workflows/ci.yml"), "on: push\n").unwrap();
    std::fs::write(dir.path().join(".hidden.yaml"), "not: k8s\n").unwrap();
    let objs = load(&[dir.path().to_path_buf()], &LoadOptions::default())
        .unwrap()
        .objects;
    let names: Vec<_> = objs.iter().map(|o| o.key.name.as_str()).collect();
    assert_eq!(names, vec!["a", "z", "m"]);
    assert!(objs[1].origin.file.ends_with("b/c/z.yml"));
}

#[test]
fn custom_kinds_without_a_crd_are_accepted_with_their_scope_unresolved() {
    let text = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: v, namespace: x}\n";
    let loaded = read_text(text, "in.yaml", &LoadOptions::default()).unwrap();
    let objs = &loaded.objects;
    assert!(objs.iter().all(|o| o.scope_unresolved));
    // Keyed as namespaced until the cluster tells: the default namespace, or its own.
    assert_eq!(objs[0].key.namespace.as_deref(), Some("default"));
    assert_eq!(objs[1].key.namespace.as_deref(), Some("x"));
    assert_eq!(
        loaded.unresolved_kinds(),
        [("Widget.example.com".to_string(), 2)].into()
    );
    // A declared scope resolves it.
    let mut declared = LoadOptions::default();
    declared
        .custom_scopes
        .insert(("example.com".into(), "Widget".into()), false);
    let objs = parse_text(text, "in.yaml", &declared).unwrap();
    assert!(objs
        .iter()
        .all(|o| !o.scope_unresolved && o.key.namespace.is_none()));
    // Read back from a cluster, an object's namespace tells its scope.
    let live = LoadOptions {
        from_cluster: true,
        ..LoadOptions::default()
    };
    let text = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: x}\n---\napiVersion: example.com/v1\nkind: Gizmo\nmetadata: {name: g}\n";
    let objs = parse_text(text, "live.yaml", &live).unwrap();
    assert_eq!(objs[0].key.namespace.as_deref(), Some("x"));
    assert_eq!(objs[1].key.namespace, None);
    assert!(objs.iter().all(|o| !o.scope_unresolved));
}

#[test]
fn wrong_group_or_version_of_a_built_in_kind_names_the_served_ones() {
    let err = parse("apiVersion: v1\nkind: Deployment\nmetadata: {name: web}\n").unwrap_err();
    assert_eq!(err.cause, Cause::Rejected);
    assert_eq!(err.field.as_deref(), Some("apiVersion"));
    assert_eq!(
        err.to_string(),
        "in.yaml: document 0: no matches for kind \"Deployment\" in version \"v1\"; Deployment is served as apps/v1"
    );
    let err = parse("apiVersion: extensions/v1beta1\nkind: Ingress\nmetadata: {name: i}\n");
    // `extensions` is no longer a group kube-apiserver serves, and no CRD can define a
    // group without a dot: no cluster serves it.
    let err = err.unwrap_err();
    assert_eq!(err.cause, Cause::Rejected);
    assert!(
        err.reason
            .ends_with("Ingress is served as networking.k8s.io/v1"),
        "{err}"
    );
    let err = parse("apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: p}\n")
        .unwrap_err();
    assert!(
        err.reason
            .ends_with("PodDisruptionBudget is served as policy/v1"),
        "{err}"
    );
    // A CRD in the input decides which versions of its kind exist.
    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {kind: Widget, plural: widgets}\n  versions: [{name: v1, served: true, storage: true}]\n";
    let err = parse(&format!(
        "{crd}---\napiVersion: example.com/v2\nkind: Widget\nmetadata: {{name: w}}\n"
    ))
    .unwrap_err();
    assert!(
        err.reason.ends_with("Widget is served as example.com/v1"),
        "{err}"
    );
    assert_eq!(err.document, 1);
}

#[test]
fn invalid_objects_are_refused_in_kube_apiservers_words() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: Web}\n";
    let err = parse(text).unwrap_err();
    assert_eq!(err.cause, Cause::Rejected);
    assert_eq!(err.document, 1);
    assert_eq!(err.field.as_deref(), Some("items[0].metadata.name"));
    assert!(
        err.to_string().starts_with("in.yaml: document 1: items[0]: Deployment.apps \"Web\" is invalid: metadata.name: Invalid value: \"Web\": a lowercase RFC 1123 subdomain"),
        "{err}"
    );
    let err = parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n").and(parse_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        "in.yaml",
        &LoadOptions {
            default_namespace: "Not_A_Label".into(),
            ..LoadOptions::default()
        },
    ));
    assert!(err
        .unwrap_err()
        .reason
        .contains("metadata.namespace: Invalid value: \"Not_A_Label\""));
}

#[test]
fn generate_name_only_objects_are_skipped_and_the_file_kept() {
    let text = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: busybox}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {generateName: hook-}\n  spec: {containers: [{name: c, image: i}]}\n";
    let loaded = read_text(text, "hooks.yaml", &LoadOptions::default()).unwrap();
    assert_eq!(loaded.objects.len(), 1);
    assert_eq!(loaded.objects[0].key.name, "a");
    assert_eq!(loaded.skipped.len(), 2);
    let s = &loaded.skipped[0];
    assert_eq!(
        (s.kind.as_str(), s.generate_name.as_str(), s.origin.document),
        ("Job", "migrate-", 0)
    );
    assert_eq!(
        s.to_string(),
        "hooks.yaml: document 0: Job with generateName \"migrate-\" and no name skipped: kube-apiserver names it on create, so no live object can be matched to it"
    );
    assert_eq!(loaded.skipped[1].item.as_deref(), Some("items[0]"));
    assert!(loaded.skipped[1]
        .to_string()
        .contains("document 2: items[0]: Pod"));
    // A generateName kube-apiserver would refuse still refuses the input.
    let bad = "apiVersion: v1\nkind: Pod\nmetadata: {generateName: Hook-}\nspec: {containers: [{name: c, image: i}]}\n";
    assert!(parse(bad)
        .unwrap_err()
        .reason
        .contains("metadata.generateName: Invalid value: \"Hook-\""));
    // No name and no generateName is still an error.
    assert!(parse("apiVersion: v1\nkind: Pod\nmetadata: {generateName: ''}\n").is_err());
}

#[test]
fn duplicate_keys_keep_the_last_value_with_a_warning() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ntype: Opaque\nstringData:\n  password: hunter2\ntype: kubernetes.io/basic-auth\n";
    let loaded = read_text(text, "dup.yaml", &LoadOptions::default()).unwrap();
    assert_eq!(loaded.objects[1].object["type"], "kubernetes.io/basic-auth");
    assert_eq!(loaded.warnings.len(), 1);
    let w = &loaded.warnings[0];
    assert_eq!((w.document, w.line), (1, 12));
    assert_eq!(
        w.to_string(),
        "dup.yaml: document 1: line 12: key \"type\" is given twice in one mapping (first at line 9); the last value is used, as kubectl does"
    );
    assert!(!w.to_string().contains("hunter2"));
}

#[test]
fn whole_floats_are_sent_as_integers_and_huge_ones_refused() {
    let deploy = |replicas: &str| {
        format!("apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec: {{containers: [{{name: web, image: nginx}}]}}\n")
    };
    assert_eq!(
        parse(&deploy("3.0")).unwrap()[0].object["spec"]["replicas"],
        3
    );
    let err = parse(&deploy("99999999999999999999999")).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("spec.replicas"));
    assert!(err.reason.contains("cannot unmarshal number 1e+23 into Go struct field DeploymentSpec.spec.replicas of type int32"), "{err}");
    let err = parse(&deploy("'two'")).unwrap_err();
    assert!(err.reason.contains("cannot unmarshal string into"), "{err}");
}

#[test]
fn the_input_size_is_limited_for_all_files_together() {
    let dir = tempfile::tempdir().unwrap();
    let cm = |n: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\ndata: {{k: {}}}\n",
            "v".repeat(600)
        )
    };
    for n in ["a", "b", "c"] {
        std::fs::write(dir.path().join(format!("{n}.yaml")), cm(n)).unwrap();
    }
    let limit = |max| LoadOptions {
        max_total_bytes: max,
        ..LoadOptions::default()
    };
    assert_eq!(
        load(&[dir.path().to_path_buf()], &limit(4096))
            .unwrap()
            .objects
            .len(),
        3
    );
    let err = load(&[dir.path().to_path_buf()], &limit(1500)).unwrap_err();
    assert!(err.file.ends_with("c.yaml"), "{err}");
    assert!(
        err.reason == "the input is 1.9 KiB in 3 files, more than the limit of 1.5 KiB for all files together",
        "{err}"
    );
    assert!(read_text(&cm("a"), "a.yaml", &limit(100)).is_err());
}

#[test]
fn of_many_bad_objects_the_first_in_the_input_is_reported() {
    // Enough documents that validation runs on several threads: the error is the one a
    // single pass meets first, whichever thread finds it, and whatever kind of error.
    let doc = |name: &str, api_version: &str| {
        format!("apiVersion: {api_version}\nkind: ConfigMap\nmetadata: {{name: {name}}}\n---\n")
    };
    let text = |bad: &[(usize, &str, &str)]| {
        (0..2_000)
            .map(|i| match bad.iter().find(|(at, _, _)| *at == i) {
                Some((_, name, api_version)) => doc(name, api_version),
                None => doc(&format!("cm-{i}"), "v1"),
            })
            .collect::<String>()
    };
    // An invalid name late, another early: the early one.
    let err = parse(&text(&[(1_900, "Late", "v1"), (700, "Early", "v1")])).unwrap_err();
    assert_eq!((err.document, &err.cause), (700, &Cause::Rejected), "{err}");
    assert!(err.reason.contains("\"Early\""), "{err}");
    // A kind no version serves before an invalid name.
    let err = parse(&text(&[(1_200, "Bad", "v1"), (300, "cm-300", "v2")])).unwrap_err();
    assert_eq!(
        (err.document, err.field.as_deref()),
        (300, Some("apiVersion")),
        "{err}"
    );
    // And an invalid name before a kind no version serves.
    let err = parse(&text(&[(1_200, "cm-1200", "v2"), (300, "Bad", "v1")])).unwrap_err();
    assert_eq!(
        (err.document, err.field.as_deref()),
        (300, Some("metadata.name")),
        "{err}"
    );
}
