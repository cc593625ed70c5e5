//! The table of upstream defaulting functions (`upstream.tsv`) against the code: every row
//! must name a driftd function and an oracle test that exist, or say why the function has
//! no effect in driftd. A new Kubernetes release is checked by re-running
//! `extract_set_defaults.py` on its checkout and adding the rows it reports missing; this
//! test then fails until each new row is implemented and tested.

use std::collections::BTreeSet;

const TABLE: &str = include_str!("../upstream.tsv");

/// The implementation modules a row may name, by module name.
const IMPLEMENTATIONS: &[(&str, &str)] = &[
    (
        "admissionregistration",
        include_str!("../admissionregistration.rs"),
    ),
    ("apiextensions", include_str!("../apiextensions.rs")),
    ("apiregistration", include_str!("../apiregistration.rs")),
    ("apps", include_str!("../apps.rs")),
    ("autoscaling", include_str!("../autoscaling.rs")),
    ("batch", include_str!("../batch.rs")),
    ("core", include_str!("../core.rs")),
    ("core_objects", include_str!("../core_objects.rs")),
    ("discovery", include_str!("../discovery.rs")),
    ("fields", include_str!("../fields.rs")),
    ("flowcontrol", include_str!("../flowcontrol.rs")),
    ("networking", include_str!("../networking.rs")),
    ("rbac", include_str!("../rbac.rs")),
    ("scheduling", include_str!("../scheduling.rs")),
    ("storage", include_str!("../storage.rs")),
];

/// The oracle modules a row may name, by module name.
const ORACLES: &[(&str, &str)] = &[
    (
        "admissionregistration_v1",
        include_str!("admissionregistration_v1.rs"),
    ),
    (
        "admissionregistration_v1alpha1",
        include_str!("admissionregistration_v1alpha1.rs"),
    ),
    (
        "admissionregistration_v1beta1",
        include_str!("admissionregistration_v1beta1.rs"),
    ),
    ("apiextensions_v1", include_str!("apiextensions_v1.rs")),
    ("apiregistration_v1", include_str!("apiregistration_v1.rs")),
    ("apps_v1", include_str!("apps_v1.rs")),
    ("autoscaling_v1", include_str!("autoscaling_v1.rs")),
    ("autoscaling_v2", include_str!("autoscaling_v2.rs")),
    ("batch_v1", include_str!("batch_v1.rs")),
    ("core_v1_objects", include_str!("core_v1_objects.rs")),
    ("core_v1_pods", include_str!("core_v1_pods.rs")),
    ("discovery_v1", include_str!("discovery_v1.rs")),
    ("flowcontrol_v1", include_str!("flowcontrol_v1.rs")),
    ("networking_v1", include_str!("networking_v1.rs")),
    ("rbac_v1", include_str!("rbac_v1.rs")),
    ("scheduling_v1", include_str!("scheduling_v1.rs")),
    ("storage_v1", include_str!("storage_v1.rs")),
];

/// One row of the table.
struct Row<'a> {
    line: usize,
    group_version: &'a str,
    file: &'a str,
    function: &'a str,
    implementation: &'a str,
    tests: &'a str,
    note: &'a str,
}

fn rows() -> Vec<Row<'static>> {
    TABLE
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(
                (5..=6).contains(&f.len()),
                "upstream.tsv:{}: {} columns, want 5 or 6: {l}",
                i + 1,
                f.len()
            );
            Row {
                line: i + 1,
                group_version: f[0],
                file: f[1],
                function: f[2],
                implementation: f[3],
                tests: f[4],
                note: f.get(5).copied().unwrap_or(""),
            }
        })
        .collect()
}

/// The source of `module` in `sources`, or a failure naming the row.
fn source<'a>(sources: &[(&str, &'a str)], module: &str, row: &Row) -> &'a str {
    sources
        .iter()
        .find(|(m, _)| *m == module)
        .map(|(_, s)| *s)
        .unwrap_or_else(|| panic!("upstream.tsv:{}: no module {module}", row.line))
}

fn split_path<'a>(path: &'a str, row: &Row) -> (&'a str, &'a str) {
    path.split_once("::")
        .unwrap_or_else(|| panic!("upstream.tsv:{}: {path} is not module::fn", row.line))
}

#[test]
fn every_upstream_function_is_implemented_or_explained() {
    let rows = rows();
    assert!(rows.len() > 50, "the table lost its rows");
    for row in &rows {
        let ctx = format!("upstream.tsv:{} {}", row.line, row.function);
        assert!(
            row.function.starts_with("SetDefaults_") || row.function.starts_with("+default "),
            "{ctx}: neither a SetDefaults_ function nor a +default marker"
        );
        assert!(
            row.file.ends_with(".go") && row.group_version.contains('v'),
            "{ctx}: file or group/version malformed"
        );
        if row.implementation == "-" {
            assert!(
                row.note.len() > 20,
                "{ctx}: no implementation and no reason why"
            );
            continue;
        }
        let (module, function) = split_path(row.implementation, row);
        let text = source(IMPLEMENTATIONS, module, row);
        assert!(
            text.contains(&format!("fn {function}(")),
            "{ctx}: {module}.rs has no fn {function}"
        );
        assert!(row.tests != "-", "{ctx}: implemented but no test named");
    }
}

#[test]
fn every_named_test_exists() {
    for row in rows() {
        if row.tests == "-" {
            continue;
        }
        for test in row.tests.split(',') {
            let (module, function) = split_path(test, &row);
            let text = source(ORACLES, module, &row);
            assert!(
                text.contains(&format!("#[test]\nfn {function}() {{")),
                "upstream.tsv:{} {}: oracle/{module}.rs has no #[test] fn {function}",
                row.line,
                row.function
            );
        }
    }
}

#[test]
fn no_function_is_listed_twice() {
    let mut seen = BTreeSet::new();
    for row in rows() {
        let key = (row.group_version, row.file, row.function);
        assert!(
            seen.insert(key),
            "upstream.tsv:{}: {} listed twice",
            row.line,
            row.function
        );
    }
}

#[test]
fn every_oracle_test_is_named_in_the_table() {
    // A test no row names checks a default the table does not account for.
    let named: BTreeSet<String> = rows()
        .iter()
        .filter(|r| r.tests != "-")
        .flat_map(|r| r.tests.split(',').map(str::to_string))
        .collect();
    for (module, text) in ORACLES {
        for rest in text.split("#[test]\nfn ").skip(1) {
            let name = rest.split('(').next().unwrap_or("");
            let path = format!("{module}::{name}");
            assert!(
                named.contains(&path),
                "upstream.tsv names no row for {path}"
            );
        }
    }
}
