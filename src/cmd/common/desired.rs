//! Reading desired objects from manifest files, as `commit`, `intent begin`, `run`,
//! `import` and `check` do, and the words they report a commit with.

use crate::cmd::cluster::ClusterArgs;
use crate::cmd::store::{self, KeyArgs};
use driftd_core::manifest::{self, CompactObject, Desired, LoadOptions, Loaded, ManifestError};
use driftd_store::{validate_source_name, CommitOutcome, Store};
use std::path::{Path, PathBuf};

/// Where desired objects come from and whom they are recorded for: the options `commit`,
/// `intent begin` and `run` share.
#[derive(Debug, clap::Args)]
pub struct DesiredArgs {
    /// SQLite database holding sources and revisions.
    #[arg(long, env = "DRIFTD_DB", default_value = "driftd.db")]
    pub db: PathBuf,
    /// Name of the source (one team's or one app's object set) this replaces.
    #[arg(long)]
    pub source: String,
    /// Why this change is made; shown by `driftd history`.
    #[arg(long, short = 'm', default_value = "")]
    pub message: String,
    /// Who makes it (default: $USER, or "unknown").
    #[arg(long)]
    pub author: Option<String>,
    /// Namespace for namespaced objects that do not name one, as `kubectl -n`.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Files or folders (recursive: *.yaml, *.yml, *.json) to read; `-` reads stdin.
    #[arg(short = 'f', long = "filename", required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// Allow no objects at all (the source then desires nothing).
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub keys: KeyArgs,
    #[command(flatten)]
    pub input: InputArgs,
    #[command(flatten)]
    pub cluster: ClusterArgs,
}

/// How input is read: what `commit` (and `intent begin`, `run`) and `check` share.
#[derive(Debug, Clone, clap::Args)]
pub struct InputArgs {
    /// Declares a kind namespaced when no CustomResourceDefinition in the input or committed
    /// earlier defines it (an aggregated API, a CRD installed by other means): `Kind.group`,
    /// e.g. `PodMetrics.metrics.k8s.io`. Repeatable.
    #[arg(long = "namespaced", value_name = "KIND.GROUP", value_parser = parse_kind_group)]
    pub namespaced: Vec<(String, String)>,
    /// Declares a kind cluster-scoped, as `--namespaced` does. Repeatable.
    #[arg(long = "cluster-scoped", value_name = "KIND.GROUP", value_parser = parse_kind_group)]
    pub cluster_scoped: Vec<(String, String)>,
    /// Largest input, all files together (bytes, or with a Ki/Mi/Gi suffix). Input is read
    /// an object at a time, so memory grows with the objects, not with this limit.
    #[arg(
        long,
        env = "DRIFTD_MAX_INPUT_SIZE",
        value_name = "SIZE",
        default_value = "1Gi",
        value_parser = parse_size
    )]
    pub max_input_size: usize,
    /// Largest single document or List item, refused as soon as reading crosses it (the
    /// default is kube-apiserver's own request body limit: no larger object can exist).
    #[arg(
        long,
        env = "DRIFTD_MAX_OBJECT_SIZE",
        value_name = "SIZE",
        default_value = "3Mi",
        value_parser = parse_size
    )]
    pub max_object_size: usize,
}

impl InputArgs {
    /// Adds the declared scopes and the size limits to `options`.
    pub fn apply(&self, options: &mut LoadOptions) {
        for ((kind, group), namespaced) in self
            .namespaced
            .iter()
            .map(|k| (k, true))
            .chain(self.cluster_scoped.iter().map(|k| (k, false)))
        {
            options
                .custom_scopes
                .insert((group.clone(), kind.clone()), namespaced);
        }
        options.max_total_bytes = self.max_input_size;
        options.max_object_bytes = self.max_object_size;
    }
}

/// `Kind.group` (the group may have dots: `Widget.example.com`) into (kind, group).
fn parse_kind_group(text: &str) -> Result<(String, String), String> {
    match text.split_once('.') {
        Some((kind, group)) if !kind.is_empty() && !group.is_empty() => {
            Ok((kind.to_string(), group.to_string()))
        }
        _ => Err(format!(
            "`{text}` is not KIND.GROUP (e.g. PodMetrics.metrics.k8s.io)"
        )),
    }
}

/// `1048576`, `512Ki`, `64Mi`, `1Gi`.
fn parse_size(text: &str) -> Result<usize, String> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, ""),
    };
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => return Err(format!("`{text}`: use bytes or a Ki, Mi or Gi suffix")),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{text}` is not a size"))
}

/// Reads the input as `commit` and `check` read it: warnings and skipped objects are
/// printed on stderr.
pub fn read_input(paths: &[PathBuf], options: &LoadOptions) -> anyhow::Result<Loaded> {
    read_input_as(paths, options, manifest::load)
}

/// How the objects of an input are held: as trees ([`manifest::load`]) or as text
/// ([`manifest::load_compact`]).
type LoadFn<O> = fn(&[PathBuf], &LoadOptions) -> Result<Loaded<O>, ManifestError>;

fn read_input_as<O>(
    paths: &[PathBuf],
    options: &LoadOptions,
    load: LoadFn<O>,
) -> anyhow::Result<Loaded<O>> {
    let loaded = load(paths, options)?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    for skipped in &loaded.skipped {
        eprintln!("warning: {skipped}");
    }
    Ok(loaded)
}

/// Says (on stderr) which custom kinds no CRD here defines: their objects are committed with
/// their scope and schema to be resolved from the cluster.
pub fn note_unresolved<O: Desired>(loaded: &Loaded<O>) {
    let kinds = loaded.unresolved_kinds();
    if kinds.is_empty() {
        return;
    }
    let list: Vec<String> = kinds
        .iter()
        .map(|(kind, n)| format!("{kind} ({})", count(*n, "object")))
        .collect();
    eprintln!(
        "note: no CustomResourceDefinition committed or in the input defines {}: their scope \
         (namespaced until the cluster says otherwise) and schema are taken from the cluster \
         (`serve` and `--cluster` ask discovery, `serve` reads the live CRD); \
         --namespaced/--cluster-scoped \
         KIND.GROUP declare a scope",
        list.join(", ")
    );
}

/// The refusal of an input without objects, the same for `commit` and `check`.
pub fn no_objects(files: &[PathBuf], skipped: usize) -> anyhow::Error {
    let files = files
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let skipped = if skipped > 0 {
        format!(
            " ({} skipped: generateName without a name)",
            count(skipped, "object")
        )
    } else {
        String::new()
    };
    anyhow::anyhow!(
        "no objects found in {files}{skipped}; pass --allow-empty to record an empty object set"
    )
}

impl DesiredArgs {
    /// Validates the input, then opens the database (creating it only now that the input
    /// has proven valid) and returns it with the objects and what was skipped.
    pub fn load_all(&self) -> anyhow::Result<(Store, Loaded)> {
        self.load_all_as(manifest::load)
    }

    /// [`DesiredArgs::load_all`] with the objects kept as text, what `commit` holds: a
    /// tenth of their trees, for any number of objects.
    pub fn load_all_compact(&self) -> anyhow::Result<(Store, Loaded<CompactObject>)> {
        self.load_all_as(manifest::load_compact)
    }

    fn load_all_as<O: Desired>(&self, load: LoadFn<O>) -> anyhow::Result<(Store, Loaded<O>)> {
        validate_source_name(&self.source)?;
        let Prepared {
            store,
            mut options,
            committed_crds,
        } = prepare(&self.db, &self.namespace, &self.keys)?;
        self.input.apply(&mut options);
        let loaded = read_input_as(&self.files, &options, load)?;
        if loaded.objects.is_empty() && !self.allow_empty {
            return Err(no_objects(&self.files, loaded.skipped.len()));
        }
        note_unresolved(&loaded);
        warn_pruned_fields(&committed_crds, &loaded.objects);
        let store = open_or_create(store, &self.db, &self.keys)?;
        Ok((store, loaded))
    }

    pub fn author(&self) -> String {
        author_or_user(self.author.as_deref())
    }
}

/// The database if it exists, and how to read input for it. An existing database is opened
/// first (reading does not write to it) so custom resources can take their scope from CRDs
/// committed earlier, by any source; a missing one is created by [`open_or_create`] only
/// once the input has proven valid.
pub fn prepare(db: &Path, namespace: &str, keys: &KeyArgs) -> anyhow::Result<Prepared> {
    if namespace.trim().is_empty() {
        anyhow::bail!("--namespace must not be empty");
    }
    let store = if db.exists() {
        Some(store::open(db, keys.load()?)?)
    } else {
        None
    };
    let committed_crds: Vec<serde_json::Value> = match &store {
        // Only the CRDs: other sources' objects are never read into memory for a commit.
        Some(store) => store.committed_crds()?,
        None => Vec::new(),
    };
    let custom_scopes = committed_crds
        .iter()
        .filter_map(|o| manifest::crd_scope("CustomResourceDefinition", o))
        .collect();
    let options = LoadOptions {
        default_namespace: namespace.to_string(),
        custom_scopes,
        ..LoadOptions::default()
    };
    Ok(Prepared {
        store,
        options,
        committed_crds,
    })
}

/// What [`prepare`] found: the database (if it exists), how to read input for it, and the
/// CustomResourceDefinitions committed so far (for scopes and the prune warning).
pub struct Prepared {
    pub store: Option<Store>,
    pub options: LoadOptions,
    pub committed_crds: Vec<serde_json::Value>,
}

/// Warns (on stderr, without refusing) about fields a CRD committed earlier or in `objects`
/// will prune: they can never exist live, so committing them records a wish nobody can see.
pub fn warn_pruned_fields<O: Desired>(committed_crds: &[serde_json::Value], objects: &[O]) {
    // Only custom resources can lose fields, and only CRDs define how: the trees of the
    // others (most objects) are never made.
    let custom: Vec<_> = objects
        .iter()
        .filter(|o| {
            let key = o.key();
            (key.group == "apiextensions.k8s.io" && key.kind == "CustomResourceDefinition")
                || !driftd_k8s::api_types::is_builtin(o.api_version(), &key.kind)
        })
        .map(|o| o.tree())
        .collect();
    let mut facts = driftd_core::diff::ClusterFacts::default();
    facts.add_crds(committed_crds.iter().chain(custom.iter().map(|t| &**t)));
    for pruned in driftd_core::diff::pruned_fields(custom.iter().map(|t| &**t), &facts) {
        eprintln!("warning: {pruned}");
    }
}

/// The store [`prepare`] opened, or a new database now that the input is valid.
pub fn open_or_create(store: Option<Store>, db: &Path, keys: &KeyArgs) -> anyhow::Result<Store> {
    Ok(match store {
        Some(store) => store,
        None => store::open(db, keys.load()?)?,
    })
}

/// `author`, else $USER, else "unknown".
pub fn author_or_user(author: Option<&str>) -> String {
    author
        .map(str::to_string)
        .or_else(|| std::env::var("USER").ok())
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// "revision 3 of source web (2 objects)" or "unchanged: ...", as `commit` prints it.
pub fn describe_outcome(outcome: &CommitOutcome) -> String {
    match outcome {
        CommitOutcome::Created(rev) => format!(
            "revision {} of source {} ({})",
            rev.id,
            rev.source,
            count(rev.object_count, "object")
        ),
        CommitOutcome::Unchanged(rev) => format!(
            "unchanged: source {} is already at revision {}",
            rev.source, rev.id
        ),
    }
}

/// "1 object", "3 objects".
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}
