//! `driftd check`: compares desired files with live object files (`kubectl get -o json`
//! output) offline, with the same differ the daemon uses. Exit 0 no drift, 1 drift, 2 error.
//!
//! The `--format json` shape is a contract (golden tests and scripts read it):
//! `{"objects":[{"apiVersion","kind","namespace","name","class","changes":[{"path","op",
//! "desired","live","field","manager","changed_at"}]}]}` with only drifting objects, in
//! desired input order (custom resources also carry `"schema"`, and `"scope": "unresolved"`
//! when neither a CRD nor a live object of their kind tells their scope). `desired`/`live`
//! are `null` where the op has no such side.
//!
//! Live objects that no desired object names are not reported: check answers "does the
//! cluster match what we committed", not "what else is running". What was committed is the
//! manifest plus kube-apiserver's deterministic defaults (see `driftd_core::diff`).
//!
//! Custom resources are compared by the structural schema of their CRD when a
//! CustomResourceDefinition of their kind is among the `--desired` inputs (committed) or,
//! failing that, the `--live` ones (the cluster's); a drifting custom resource's JSON entry says
//! `"schema": "crd"` or `"schema": "none"` (no CRD found: the plain rules applied).
//!
//! `--expected` takes server-side dry-run answers (`kubectl apply --server-side
//! --dry-run=server -o json`): an object named there is compared against the answer, as
//! `serve` compares a `compare = "dry-run"` source (see `driftd_core::diff::dry_run`).

use anyhow::Context;
use driftd_core::diff::{ClusterFacts, CompareInput, Comparison, Differ, DriftClass};
use driftd_core::manifest::{self, LoadOptions, ManifestObject};
use driftd_k8s::kinds;
use driftd_k8s::ObjectKey;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

pub use super::Format;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Desired files or folders, parsed exactly as `driftd commit` parses them.
    #[arg(long, required = true, num_args = 1..)]
    pub desired: Vec<PathBuf>,
    /// Live object files: `kubectl get -o json` / `-o yaml` output (a List or objects). Add
    /// `--show-managed-fields` to that `kubectl get` to see who changed each field.
    #[arg(long, required = true, num_args = 1..)]
    pub live: Vec<PathBuf>,
    /// Server-side dry-run answers (`kubectl apply --server-side --dry-run=server -o json`
    /// of the desired files): a desired object named in them is compared against the object
    /// the server said it would store (mutating webhooks included) instead of the static
    /// model, as `serve` compares a `compare = "dry-run"` source.
    #[arg(long, num_args = 1..)]
    pub expected: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// The daemon configuration file (or a TOML file with only `[[ignore]]` and
    /// `[[controller_managers]]` tables): its ignore rules and controller managers apply.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// Key for the hashes shown instead of Secret values; random per run by default. Set it
    /// to get reproducible output (golden files) or to compare hashes across runs.
    #[arg(long, env = "DRIFTD_CHECK_HASH_KEY", hide_env_values = true)]
    pub hash_key: Option<String>,
    /// Namespace for namespaced desired objects that do not name one, as `kubectl -n`.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Allow desired files without any object (then nothing can drift), as `commit` does.
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub input: super::common::desired::InputArgs,
}

/// One compared object that drifts.
struct Drifting<'a> {
    desired: &'a ManifestObject,
    comparison: Comparison,
}

/// Runs the check; `Err` (exit 2) for unreadable or invalid input, never for drift.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.namespace.trim().is_empty() {
        anyhow::bail!("--namespace must not be empty");
    }
    // The rules file is read as a daemon configuration, so `serve` and `check` can share one
    // file (a file with only `[[ignore]]` tables is a valid configuration too).
    let config = match &args.rules {
        Some(path) => driftd_config::Config::load_with_env(Some(path), |_| None)?,
        None => driftd_config::Config::default(),
    };
    let rules = config.rule_set();
    // The live side first: a custom resource in the desired files takes its scope from
    // the cluster's CRDs, or from its live objects (read back from a cluster, a namespaced
    // object always has a namespace), when no CRD in the desired files tells it.
    let mut live_options = LoadOptions {
        from_cluster: true,
        ..LoadOptions::default()
    };
    args.input.apply(&mut live_options);
    let live = super::common::desired::read_input(&args.live, &live_options)
        .context("live files")?
        .objects;
    let mut desired_options = LoadOptions {
        default_namespace: args.namespace.clone(),
        ..LoadOptions::default()
    };
    args.input.apply(&mut desired_options);
    for o in &live {
        if let Some((gk, namespaced)) = manifest::crd_scope(&o.key.kind, &o.object) {
            desired_options.custom_scopes.insert(gk, namespaced);
        }
    }
    for o in &live {
        if !kinds::is_builtin_group(&o.key.group) {
            desired_options
                .custom_scopes
                .entry((o.key.group.clone(), o.key.kind.clone()))
                .or_insert(o.key.namespace.is_some());
        }
    }
    let loaded = super::common::desired::read_input(&args.desired, &desired_options)
        .context("desired files")?;
    if loaded.objects.is_empty() && !args.allow_empty {
        return Err(super::common::desired::no_objects(
            &args.desired,
            loaded.skipped.len(),
        ));
    }
    let desired = loaded.objects;
    for d in &desired {
        driftd_core::diff::validate_annotations(&d.object)
            .map_err(|e| anyhow::anyhow!("{}: {e}", d.origin))?;
    }

    let live_by_key: HashMap<&ObjectKey, &ManifestObject> =
        live.iter().map(|o| (&o.key, o)).collect();
    let expected = if args.expected.is_empty() {
        Vec::new()
    } else {
        super::common::desired::read_input(&args.expected, &live_options)
            .context("expected (dry-run) files")?
            .objects
    };
    let expected_by_key: HashMap<&ObjectKey, Value> = expected
        .iter()
        .map(|o| {
            (
                &o.key,
                driftd_core::diff::dry_run::expected_desired(&o.object),
            )
        })
        .collect();
    let mut facts = cluster_facts(desired.iter().chain(live.iter()));
    facts.controller_managers = config.controller_managers.clone();
    // A committed CRD wins over the cluster's (added last), as in `serve`: a custom
    // resource was defaulted when it was created, so a `default:` changed live since then
    // is drift of the CRD, not of its objects.
    for bad in facts.add_crds(live.iter().chain(desired.iter()).map(|o| &o.object)) {
        eprintln!("warning: a CustomResourceDefinition is compared without its schema: {bad}");
    }
    // Hashes only need to be consistent within one run unless a key is given.
    let key: Vec<u8> = match &args.hash_key {
        Some(k) if !k.is_empty() => k.as_bytes().to_vec(),
        _ => rand::random::<[u8; 32]>().to_vec(),
    };
    let differ = Differ::new(&key).with_rules(rules);
    for expired in differ.expired_rules() {
        eprintln!(
            "warning: {} expired at {}; it is no longer applied",
            expired.label, expired.expires
        );
    }

    let mut drifting = Vec::new();
    for d in &desired {
        let comparison = differ.compare(&CompareInput {
            desired: expected_by_key.get(&d.key).unwrap_or(&d.object),
            live: live_by_key.get(&d.key).map(|l| &l.object),
            previous: None,
            facts: &facts,
        });
        if comparison.class != DriftClass::InSync {
            drifting.push(Drifting {
                desired: d,
                comparison,
            });
        }
    }

    let out = match args.format {
        Format::Json => serde_json::to_string_pretty(&json_report(&drifting))? + "\n",
        Format::Table => table_report(
            &drifting
                .iter()
                .map(|d| (&d.desired.key, &d.comparison))
                .collect::<Vec<_>>(),
        ),
    };
    print!("{out}");
    Ok(if drifting.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// HPA scale targets found among the given objects (desired and live HPAs alike).
fn cluster_facts<'a>(objects: impl Iterator<Item = &'a ManifestObject>) -> ClusterFacts {
    let mut facts = ClusterFacts::default();
    for o in objects.filter(|o| o.key.kind == "HorizontalPodAutoscaler") {
        facts
            .hpa_targets
            .extend(driftd_k8s::hpa_scale_target(&o.object));
    }
    facts
}

fn json_report(drifting: &[Drifting]) -> Value {
    let objects: Vec<Value> = drifting
        .iter()
        .map(|d| {
            let changes: Vec<Value> = d
                .comparison
                .changes
                .iter()
                .map(|c| {
                    json!({
                        "path": c.path,
                        "op": c.op,
                        "desired": c.desired,
                        "live": c.live,
                        "field": c.field,
                        "manager": c.manager,
                        "changed_at": c.changed_at,
                    })
                })
                .collect();
            let mut obj = json!({
                "apiVersion": d.desired.api_version,
                "kind": d.desired.key.kind,
                "namespace": d.desired.key.namespace,
                "name": d.desired.key.name,
                "class": d.comparison.class.as_str(),
                "changes": changes,
            });
            if !d.comparison.patch.0.is_empty() {
                obj["patch"] = serde_json::to_value(&d.comparison.patch).unwrap_or_default();
            }
            if !d.comparison.ignored.is_empty() {
                obj["ignored"] = serde_json::to_value(&d.comparison.ignored).unwrap_or_default();
            }
            if let Some(schema) = d.comparison.schema {
                obj["schema"] = serde_json::to_value(schema).unwrap_or_default();
            }
            // A custom kind no CRD here defines and no live object tells the scope of: it
            // is keyed as namespaced, which nothing could confirm.
            if d.desired.scope_unresolved {
                obj["scope"] = json!("unresolved");
            }
            obj
        })
        .collect();
    json!({ "objects": objects })
}

/// Longest cell text before it is cut with `...`, so one huge value cannot wreck the table.
const MAX_CELL: usize = 60;

fn cell(v: Option<&Value>) -> String {
    let text = match v {
        None => "<absent>".to_string(),
        // A string that reads as another JSON type is quoted, so `"8080"` and `8080` differ.
        Some(Value::String(s))
            if serde_json::from_str::<Value>(s).is_ok_and(|v| !v.is_string()) =>
        {
            Value::String(s.clone()).to_string()
        }
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let text = text.replace(['\n', '\t'], " ");
    if text.chars().count() > MAX_CELL {
        let cut: String = text.chars().take(MAX_CELL - 3).collect();
        format!("{cut}...")
    } else {
        text
    }
}

/// The drifting objects as a table of fields (desired, live, who changed it); Secret values
/// are already hashes in a [`Comparison`]. `driftd reconcile` prints its diffs with it too.
pub fn table_report(drifting: &[(&ObjectKey, &Comparison)]) -> String {
    if drifting.is_empty() {
        return "no drift\n".to_string();
    }
    let mut rows: Vec<[String; 5]> = vec![[
        "OBJECT".into(),
        "FIELD".into(),
        "DESIRED".into(),
        "LIVE".into(),
        "MANAGER".into(),
    ]];
    let mut ignored = 0;
    for (key, comparison) in drifting {
        let object = key.to_string();
        ignored += comparison.ignored.iter().map(|i| i.count).sum::<usize>();
        if comparison.class == DriftClass::Missing {
            rows.push([
                object,
                "(object)".into(),
                "<present>".into(),
                "<absent>".into(),
                "-".into(),
            ]);
            continue;
        }
        for c in &comparison.changes {
            rows.push([
                object.clone(),
                c.field.clone(),
                cell(c.desired.as_ref()),
                cell(c.live.as_ref()),
                c.manager.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
    }
    let mut widths = [0usize; 5];
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(c);
            } else {
                line.push_str(&format!("{c:<w$}   "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let changes = rows.len() - 1;
    out.push_str(&format!(
        "\n{} object(s) drift, {changes} difference(s)",
        drifting.len()
    ));
    if ignored > 0 {
        out.push_str(&format!(", {ignored} more ignored by ignore rules"));
    }
    out.push('\n');
    out
}
