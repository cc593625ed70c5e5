//! `driftd adopt`: puts accepted drift back where desired state lives. For each object of a
//! source that drifts, it edits the manifest file the object was committed from (the
//! revision records its file and document) so that it says what the live object has at
//! every drifting path, and changes nothing else in the file (`driftd_core::adopt`). A
//! unified diff by default; `--write` writes the files, each atomically. The user then
//! commits them to git and runs `driftd commit` as usual.
//!
//! The differences are the ones `/drift` reports: the same differ, the configuration's
//! ignore rules and controller managers, the source's previous revision. After editing, the
//! edited file is read back and compared with the live objects again; what still differs is
//! reported, never silently left. Secret values are never adopted (they would be written in
//! clear) and never printed. Helm releases and Pulumi stacks have no manifest file to edit:
//! adopt says what to change instead, or why it cannot tell.

mod files;

use super::store::KeyArgs;
use anyhow::Context;
use driftd_cluster::reconcile::{self, SourceRevision};
use driftd_config::Config;
use driftd_core::adopt::{self as edit, Refusal};
use driftd_core::diff::{Change, ChangeOp, ClusterFacts, CompareInput, Differ, DriftClass};
use driftd_core::manifest::{self, LoadOptions};
use driftd_k8s::object_ref::ObjectRef;
use driftd_k8s::ObjectKey;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// The source whose drift to adopt.
    #[arg(long)]
    pub source: String,
    /// Only this object of the source: `KIND[.GROUP]/NAMESPACE/NAME` (`KIND[.GROUP]/NAME` for
    /// a cluster-scoped one). Repeatable.
    #[arg(long = "object", value_name = "KIND[.GROUP]/[NAMESPACE/]NAME", value_parser = ObjectRef::parse)]
    pub objects: Vec<ObjectRef>,
    /// The manifest files (or folders) the source was committed from; objects committed
    /// from other files are reported, not edited.
    #[arg(short = 'f', long = "filename", num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Write the edited files (atomically). Without it, only the diff is printed.
    #[arg(long)]
    pub write: bool,
    /// With --write, write what can be adopted even when some differences are refused
    /// (they stay drift). Without it, a refusal writes nothing.
    #[arg(long)]
    pub partial: bool,
    /// Configuration (the file `driftd serve` reads): its ignore rules, controller managers
    /// and `[secrets]` keys, so the differences are those `/drift` reports.
    #[command(flatten)]
    pub keys: KeyArgs,
}

/// One drifting object and where it was committed from.
struct Drifting {
    key: ObjectKey,
    changes: Vec<Change>,
    origin: (String, usize),
}

/// What a run found beyond the edits: each line says what was not adopted and why.
#[derive(Default)]
struct Report {
    adopted: usize,
    /// The objects edited, by file: recorded as adopted once their file is written.
    edited: Vec<(PathBuf, ObjectKey)>,
    refused: Vec<String>,
    outside: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = Config::load(args.keys.config.as_deref())?;
    let store = super::store::open(
        super::common::database::existing(&args.db)?,
        super::store::load_keys(&config)?,
    )?;
    let revision = reconcile::load(&store, &args.source)?;
    if let Some(unknown) = args
        .objects
        .iter()
        .find(|o| !revision.objects.iter().any(|s| o.matches(&s.key)))
    {
        anyhow::bail!(
            "revision {} of source {} has no object {unknown}",
            revision.revision.id,
            args.source
        );
    }
    let imported = driftd_core::helm::parse_source(&args.source).is_some()
        || driftd_core::pulumi::interrupted::parse_source(&args.source).is_some();
    if args.files.is_empty() && !imported {
        anyhow::bail!(
            "-f is required: the manifest files (or folders) source {} was committed from",
            args.source
        );
    }
    let origins = store.revision_origins(revision.revision.id)?;
    let hash_key = store.installation_key()?;
    let differ = Differ::new(&hash_key).with_rules(config.rule_set());
    let rt = super::runtime()?;
    let live = rt.block_on(async {
        let mut cluster = super::plan::connect().await?;
        anyhow::Ok(revision.live(&mut cluster).await?)
    })?;
    let mut facts = revision.facts(&live);
    facts.controller_managers = config.controller_managers.clone();
    let context = Comparing {
        source: &args.source,
        revision: &revision,
        differ: &differ,
        hash_key: &hash_key,
        facts: &facts,
        live: &live,
    };
    let mut drifting = Vec::new();
    let mut not_live = Vec::new();
    for o in revision
        .objects
        .iter()
        .filter(|o| args.objects.is_empty() || args.objects.iter().any(|r| r.matches(&o.key)))
    {
        let comparison = context.compare(&o.key, &o.object);
        match comparison.class {
            DriftClass::Missing => not_live.push(o.key.clone()),
            DriftClass::InSync => {}
            _ => drifting.push(Drifting {
                key: o.key.clone(),
                changes: comparison.changes,
                origin: origins
                    .get(&o.key)
                    .cloned()
                    .unwrap_or_else(|| ("?".into(), 0)),
            }),
        }
    }
    for key in &not_live {
        println!(
            "not adopted: {key} is not live; nothing to adopt (if it was deleted on purpose, \
             remove it from its manifest by hand)"
        );
    }
    if drifting.is_empty() {
        println!(
            "nothing to adopt: source {} (revision {}) matches the cluster",
            args.source, revision.revision.id
        );
        return Ok(exit(not_live.is_empty()));
    }
    if let Some((ns, name)) = driftd_core::helm::parse_source(&args.source) {
        let values = rt.block_on(release_values(ns, name, &drifting));
        helm_refusals(ns, name, &drifting, values.as_ref());
        return Ok(ExitCode::from(1));
    }
    if let Some((project, stack)) = driftd_core::pulumi::interrupted::parse_source(&args.source) {
        pulumi_changes(project, stack, &drifting);
        return Ok(ExitCode::from(1));
    }
    let files = files::manifest_files(&args.files)?;
    let options = load_options(&store)?;
    let mut report = Report::default();
    let mut by_file: BTreeMap<PathBuf, Vec<&Drifting>> = BTreeMap::new();
    for d in &drifting {
        match files::find_origin(&d.origin.0, &files) {
            Some(f) => by_file.entry(f.clone()).or_default().push(d),
            None => report.outside.push(format!(
                "not adopted: {} was committed from {}: document {}, which is not among -f",
                d.key, d.origin.0, d.origin.1
            )),
        }
    }
    let mut edited = Vec::new();
    for (path, objects) in &by_file {
        let (before, after, has_secret) =
            context.edit_file(path, objects, &options, &mut report)?;
        if before != after {
            edited.push((path, before, after, has_secret));
        }
    }
    for (path, before, after, has_secret) in &edited {
        // A Secret's values are in its file: no context lines around its edits.
        let context_lines = if *has_secret { 0 } else { 3 };
        print!(
            "{}",
            files::unified_diff(path, before, after, context_lines)
        );
    }
    if !edited.is_empty() {
        println!();
    }
    for line in report.outside.iter().chain(&report.refused) {
        println!("{line}");
    }
    let left = report.refused.len() + report.outside.len() + not_live.len();
    println!(
        "{} difference(s) adopted in {} file(s); {} not adopted",
        report.adopted,
        edited.len(),
        left
    );
    if !args.write {
        if !edited.is_empty() {
            println!("dry run: nothing written; --write writes the files");
        }
        return Ok(exit(left == 0));
    }
    if !report.refused.is_empty() && !args.partial {
        println!(
            "nothing written: {} difference(s) refused (above); resolve them, leave their objects \
             out with --object, or write the rest with --partial",
            report.refused.len()
        );
        return Ok(ExitCode::from(1));
    }
    for (path, _, after, _) in &edited {
        files::write_atomically(path, after)?;
        println!("wrote {}", path.display());
    }
    // So that the commit which ends these objects' drift says `adopted` in the history.
    let written: Vec<ObjectKey> = report
        .edited
        .iter()
        .filter(|(path, _)| edited.iter().any(|(p, ..)| *p == path))
        .map(|(_, key)| key.clone())
        .collect();
    store
        .record_adoptions(
            &args.source,
            revision.revision.id,
            &written,
            jiff::Timestamp::now(),
            &super::common::desired::author_or_user(None),
        )
        .context("the files were written, but recording the adoption failed")?;
    if !edited.is_empty() {
        let files: Vec<String> = args
            .files
            .iter()
            .map(|f| driftd_core::text::shell_quote(&f.display().to_string()))
            .collect();
        println!(
            "next: review and commit the files to git, then record them: driftd commit --source {} -f {}",
            driftd_core::text::shell_quote(&args.source),
            files.join(" ")
        );
    }
    Ok(exit(left == 0))
}

fn exit(clean: bool) -> ExitCode {
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// How edited files are read back: as `commit` read them, custom resources taking their
/// scope from the CRDs committed by any source.
fn load_options(store: &driftd_store::Store) -> anyhow::Result<LoadOptions> {
    let custom_scopes = store
        .committed_crds()?
        .iter()
        .filter_map(|o| manifest::crd_scope("CustomResourceDefinition", o))
        .collect();
    Ok(LoadOptions {
        custom_scopes,
        ..LoadOptions::default()
    })
}

/// Everything a comparison of this source needs, as `serve` compares it.
struct Comparing<'a> {
    source: &'a str,
    revision: &'a SourceRevision,
    differ: &'a Differ,
    /// The installation key: Secret values are stored as hashes keyed by it.
    hash_key: &'a [u8],
    facts: &'a ClusterFacts,
    live: &'a HashMap<ObjectKey, Value>,
}

impl Comparing<'_> {
    fn compare(&self, key: &ObjectKey, desired: &Value) -> driftd_core::diff::Comparison {
        let previous = self.revision.previous_objects();
        self.differ.compare_in(
            Some(self.source),
            &CompareInput {
                desired,
                live: self.live.get(key),
                previous: previous.get(key).copied(),
                facts: self.facts,
            },
        )
    }

    /// Edits the objects of one file; returns the text before and after, and whether the
    /// file holds a Secret. Fails, naming file and document, when the file no longer holds
    /// what was committed or an edit cannot be made.
    fn edit_file(
        &self,
        path: &std::path::Path,
        objects: &[&Drifting],
        options: &LoadOptions,
        report: &mut Report,
    ) -> anyhow::Result<(String, String, bool)> {
        let shown = path.display().to_string();
        let before =
            std::fs::read_to_string(path).with_context(|| format!("cannot read {shown}"))?;
        let mut after = before.clone();
        // Any Secret in the file, adopted or not, keeps its lines out of the diff's context
        // (unreadable as objects: kept out too).
        let has_secret = manifest::parse_text(&before, &shown, options)
            .map_or(true, |all| all.iter().any(|o| o.key.kind == "Secret"));
        let mut refused_fields: HashMap<&ObjectKey, Vec<String>> = HashMap::new();
        for d in objects {
            let document = d.origin.1;
            let at =
                |e: &dyn std::fmt::Display| format!("{shown}: document {document}: {}: {e}", d.key);
            let committed = self
                .revision
                .object(&d.key)
                .map(|o| &o.object)
                .context("the object is in the revision")?;
            let in_file = read_object(&before, &shown, &d.key, options)
                .map_err(|e| anyhow::anyhow!(at(&e)))?;
            if !same_as_committed(self.hash_key, &in_file, committed) {
                anyhow::bail!(at(&format_args!(
                    "the file differs from revision {} of source {} (edited since that commit?); \
                     adopt edits the committed manifest: commit it or restore it first",
                    self.revision.revision.id, self.source
                )));
            }
            let prefix = edit::locate(&after, document, &d.key.kind, &d.key.name)
                .map_err(|e| anyhow::anyhow!(at(&e)))?;
            let (edits, refused) = edit::edits_for(&d.key.kind, &d.changes);
            after = edit::apply(&after, document, &prefix, &edits)
                .map_err(|e| anyhow::anyhow!(at(&e)))?;
            report.adopted += edits.len();
            if !edits.is_empty() {
                report.edited.push((path.to_path_buf(), d.key.clone()));
            }
            for Refusal { field, reason } in refused {
                report.refused.push(format!(
                    "refused: {} ({shown}: document {document}): field {field}: {reason}",
                    d.key
                ));
                refused_fields.entry(&d.key).or_default().push(field);
            }
        }
        // What the edited file says, compared with the live objects as before: anything
        // still differing that was not refused is reported (the edits could not express it).
        for d in objects {
            let document = d.origin.1;
            let object = read_object(&after, &shown, &d.key, options).map_err(|e| {
                anyhow::anyhow!(
                    "{shown}: document {document}: the edited file does not read back: {e}"
                )
            })?;
            let refused = refused_fields.get(&d.key).cloned().unwrap_or_default();
            for c in self.compare(&d.key, &object).changes {
                if !refused.contains(&c.field) {
                    report.adopted = report.adopted.saturating_sub(1);
                    report.refused.push(format!(
                        "refused: {} ({shown}: document {document}): field {}: the edited manifest \
                         still differs here (a default of kube-apiserver a manifest cannot turn \
                         off?); edit it by hand",
                        d.key, c.field
                    ));
                }
            }
        }
        Ok((before, after, has_secret))
    }
}

/// The object `key` as `text` (one file) reads, namespaced objects without a namespace put
/// in the key's, as `commit -n` did.
fn read_object(
    text: &str,
    file: &str,
    key: &ObjectKey,
    options: &LoadOptions,
) -> anyhow::Result<Value> {
    let mut options = options.clone();
    options.default_namespace = key.namespace.clone().unwrap_or_else(|| "default".into());
    let objects = manifest::parse_text(text, file, &options)?;
    objects
        .into_iter()
        .find(|o| &o.key == key)
        .map(|o| o.object)
        .with_context(|| format!("{file} no longer holds {key}"))
}

/// Whether the file's object is the committed one (Secret values compared as the store keeps
/// them: hashes keyed by the installation key).
fn same_as_committed(hash_key: &[u8], in_file: &Value, committed: &Value) -> bool {
    in_file == committed || {
        let mut hashed = in_file.clone();
        driftd_core::diff::secret::hash_values(hash_key, &mut hashed);
        &hashed == committed
    }
}

/// The live value of a change as adopt may print it: never a Secret's (they are hashes).
fn shown_value(kind: &str, c: &Change) -> String {
    let secret = kind == "Secret" && !c.path.starts_with("/metadata/labels");
    match (&c.live, secret) {
        (_, true) => "(a Secret value: not shown)".into(),
        (Some(v), false) => v.to_string(),
        (None, false) => "(absent)".into(),
    }
}

/// The values the committed version of release `ns/name` was rendered with, read from its
/// release Secret (the version is in the objects' origin, `Helm release NS/NAME version N`);
/// `None`, with a warning, when they cannot be read: the refusals then say so.
async fn release_values(ns: &str, name: &str, drifting: &[Drifting]) -> Option<Value> {
    let version = drifting
        .iter()
        .find_map(|d| d.origin.0.rsplit_once(" version ")?.1.parse::<i64>().ok())?;
    let secret = format!("sh.helm.release.v1.{name}.v{version}");
    let key = ObjectKey {
        group: String::new(),
        kind: "Secret".into(),
        namespace: Some(ns.to_string()),
        name: secret.clone(),
    };
    let read = async {
        let mut cluster = super::plan::connect().await.map_err(|e| e.to_string())?;
        let object = cluster
            .get(&key, Some("v1"))
            .await?
            .ok_or_else(|| "not found".to_string())?;
        driftd_core::helm::values::release_values_in(&format!("{ns}/{secret}"), &object)
            .map_err(|e| e.to_string())
    };
    match read.await {
        Ok(values) => Some(values),
        Err(e) => {
            eprintln!("warning: cannot read the values of release {ns}/{name} from Secret {ns}/{secret}: {e}");
            None
        }
    }
}

/// For each drifting field of a Helm release: the values key to set when exactly one key
/// of the release's values holds the committed value (then that key most likely renders the
/// field), otherwise a refusal saying why nothing can be derived.
fn helm_refusals(ns: &str, name: &str, drifting: &[Drifting], values: Option<&Value>) {
    for d in drifting {
        for c in &d.changes {
            let keys = match (values, &c.desired, d.key.kind == "Secret") {
                (Some(values), Some(desired), false) => {
                    driftd_core::helm::values::keys_holding(values, desired)
                }
                _ => Vec::new(),
            };
            let live = c.live.as_ref().filter(|l| !l.is_object() && !l.is_array());
            if let ([key], Some(live), ChangeOp::Replace) = (keys.as_slice(), live, c.op) {
                let set = match live {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                println!(
                    "{}: field {} (live: {}): values key `{key}` of release {ns}/{name} holds the \
                     committed value, and no other key does: `helm upgrade {name} -n {ns} \
                     --reuse-values --set {key}={}` should render the live value (check that the \
                     chart's template uses it there)",
                    d.key,
                    c.field,
                    shown_value(&d.key.kind, c),
                    driftd_core::text::shell_quote(&set)
                );
                continue;
            }
            let why = match (values, keys.len()) {
                (None, _) => "the release's values could not be read".to_string(),
                (Some(_), 0) => "no key of the release's values holds the committed value".into(),
                (Some(_), n) => {
                    format!("{n} keys of the release's values hold the committed value")
                }
            };
            println!(
                "refused: {}: field {} (live: {}): source helm:{ns}/{name} is a Helm release, \
                 rendered from its chart and values, and {why}, so which value renders this \
                 field cannot be derived. Change the values (e.g. `helm upgrade {name} -n {ns} \
                 --reuse-values --set KEY=VALUE`) or the chart so it renders the live value; \
                 driftd takes the new release version by itself",
                d.key,
                c.field,
                shown_value(&d.key.kind, c)
            );
        }
    }
    println!("nothing written: adopt edits manifest files, and a Helm release has none");
}

fn pulumi_changes(project: &str, stack: &str, drifting: &[Drifting]) {
    println!(
        "source pulumi:{project}/{stack} is a Pulumi stack: adopt does not edit programs. \
         Change these resource arguments in the program, run `pulumi up`, then \
         `driftd import` the stack's new state:"
    );
    for d in drifting {
        let (file, index) = &d.origin;
        for c in &d.changes {
            let secret = d.key.kind == "Secret" && !c.path.starts_with("/metadata/labels");
            let what = match (c.op, secret) {
                (_, true) => format!(
                    "refused: field {}: a Secret value; update it where the value is kept",
                    c.field
                ),
                (ChangeOp::Add, false) => format!("remove `{}`", c.field),
                (_, false) => format!("set `{}` to {}", c.field, shown_value(&d.key.kind, c)),
            };
            println!(
                "  {} (resources[{index}] of the stack state {file}): {what}",
                d.key
            );
        }
    }
    println!("nothing written: adopt edits manifest files, and a Pulumi stack has none");
}
