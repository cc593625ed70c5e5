//! Pulumi stacks as sources, read from file-backend state directories (`pulumi.state_dirs`):
//! every `pulumi.scan_seconds`, each stack's state that changed is brought into the store
//! ([`driftd_store::Store::sync_pulumi`]): its Kubernetes objects as the newest revision of
//! `pulumi:<project>/<stack>`, each operation an interrupted `pulumi up` left pending as an
//! `interrupted` intent. The engine notices the new rows as it notices any commit. Stale
//! lock files of the same roots are the engine's (`drift::locks`).
//!
//! Where the file backend keeps a stack (pulumi `pkg/backend/diy/store.go`, `state.go`):
//! `<root>/.pulumi/stacks/<project>/<stack>.json` (the legacy layout without projects:
//! `.pulumi/stacks/<stack>.json`), gzip-compressed as `.json.gz` or zstd-compressed as
//! `.json.zst` when the backend compresses; while it changes compression both may exist,
//! and Pulumi reads the most recently modified (`stackPath`). `.bak` copies and the
//! `history`/`backups` folders are not the state.
//!
//! A state's secrets never leave this module as values: ciphertext and plaintext outside
//! a Secret's data are left out (`driftd_core::pulumi`), and messages name files, resources
//! and fields only.

use driftd_config::PulumiConfig;
use driftd_core::manifest::{self, LoadOptions};
use driftd_core::pulumi::{self, interrupted, StackExport};
use driftd_store::{CommitOutcome, PulumiPending, PulumiSync, Store};
use jiff::Timestamp;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Largest state read, compressed or not. Real checkpoints of large stacks are tens of
/// megabytes; this refuses a compression bomb without refusing them.
pub const MAX_STATE_BYTES: u64 = 256 * 1024 * 1024;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The text of a state file, decompressed by its content as Pulumi does
/// (`encoding.DetectCompression`), not by its name. `name` names the file in errors.
pub fn decode_state(bytes: &[u8], name: &str) -> Result<String, String> {
    decode_within(bytes, name, MAX_STATE_BYTES)
}

fn decode_within(bytes: &[u8], name: &str, limit: u64) -> Result<String, String> {
    let mut text = Vec::new();
    let read = if bytes.starts_with(&GZIP_MAGIC) {
        flate2::read::GzDecoder::new(bytes)
            .take(limit + 1)
            .read_to_end(&mut text)
    } else if bytes.starts_with(&ZSTD_MAGIC) {
        zstd::stream::read::Decoder::new(bytes)
            .and_then(|d| d.take(limit + 1).read_to_end(&mut text))
    } else {
        text = bytes.to_vec();
        Ok(text.len())
    };
    read.map_err(|e| format!("{name}: cannot decompress: {e}"))?;
    if text.len() as u64 > limit {
        return Err(format!(
            "{name}: larger than {limit} bytes once decompressed"
        ));
    }
    String::from_utf8(text).map_err(|_| format!("{name}: not UTF-8 text"))
}

/// One stack's state file.
#[derive(Debug, Clone, PartialEq)]
pub struct StackFile {
    /// The backend root (the folder holding `.pulumi`).
    pub root: PathBuf,
    /// The file Pulumi reads (the newest of the `.json`, `.json.gz`, `.json.zst` variants).
    pub path: PathBuf,
    /// `None` in the legacy layout: the project is then known from the state's URNs.
    pub project: Option<String>,
    pub stack: String,
    pub len: u64,
    pub modified: SystemTime,
}

impl StackFile {
    /// The stack as `pulumi --stack` takes it on this backend (`diyBackendReference`): the
    /// organization of a file backend is always `organization`.
    pub fn qualified(&self) -> String {
        match &self.project {
            Some(project) => format!("organization/{project}/{}", self.stack),
            None => self.stack.clone(),
        }
    }

    /// `file://<root>`, as `PULUMI_BACKEND_URL` takes it.
    pub fn backend(&self) -> String {
        format!("file://{}", self.root.display())
    }
}

/// What a scan found; `complete` is false when a folder could not be read (a stack that
/// seems gone may only be unreadable).
#[derive(Debug, Default)]
pub struct Scan {
    pub files: Vec<StackFile>,
    pub complete: bool,
}

/// (project, stack); no project in the legacy layout.
type StackName = (Option<String>, String);
/// A file that may hold a stack's state: path, length, modification time.
type Candidate = (PathBuf, u64, SystemTime);

/// The stack files under `<root>/.pulumi/stacks/` of every root.
pub fn scan_stacks(roots: &[PathBuf]) -> Scan {
    let mut scan = Scan {
        files: Vec::new(),
        complete: true,
    };
    for root in roots {
        let stacks = root.join(".pulumi").join("stacks");
        let mut found: BTreeMap<StackName, Vec<Candidate>> = BTreeMap::new();
        let mut visit = |dir: &Path, project: Option<&str>, scan: &mut Scan| {
            let entries = match std::fs::read_dir(dir) {
                Ok(entries) => entries,
                // No stack yet.
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
                Err(err) => {
                    tracing::warn!(dir = %dir.display(), error = %err, "pulumi: cannot read the stacks folder");
                    scan.complete = false;
                    return Vec::new();
                }
            };
            let mut dirs = Vec::new();
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(meta) = entry.metadata() else {
                    scan.complete = false;
                    continue;
                };
                if meta.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                let stack = [".json", ".json.gz", ".json.zst"]
                    .iter()
                    .find_map(|ext| name.strip_suffix(ext));
                if let Some(stack) = stack.filter(|s| !s.is_empty()) {
                    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    found
                        .entry((project.map(str::to_string), stack.to_string()))
                        .or_default()
                        .push((path, meta.len(), modified));
                }
            }
            dirs
        };
        // Files directly in `stacks/`: the legacy layout; folders: projects.
        for dir in visit(&stacks, None, &mut scan) {
            let Some(project) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
                continue;
            };
            visit(&dir, Some(&project), &mut scan);
        }
        for ((project, stack), mut candidates) in found {
            // The most recently modified; on a tie the last in name order, as Pulumi's
            // listing keeps the last it sees.
            candidates.sort_by(|a, b| (a.2, &a.0).cmp(&(b.2, &b.0)));
            let (path, len, modified) = candidates.pop().expect("at least one candidate");
            scan.files.push(StackFile {
                root: root.clone(),
                path,
                project,
                stack,
                len,
                modified,
            });
        }
    }
    scan
}

/// Starts importing the stacks of `config.state_dirs` into `store` until `stop` is true.
pub fn spawn(
    config: &PulumiConfig,
    store: Store,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let roots = config.state_dirs.clone();
    let period = config.scan_period();
    tokio::spawn(async move {
        tracing::info!(
            roots = ?roots,
            "pulumi: reading the stacks of {} file backend{} every {period:?}",
            roots.len(),
            if roots.len() == 1 { "" } else { "s" }
        );
        let importer = Arc::new(Mutex::new(Importer::new(store, roots)));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let stopped = tokio::select! {
                _ = tick.tick() => false,
                _ = async { let _ = stop.wait_for(|s| *s).await; } => true,
            };
            if stopped {
                break;
            }
            // File reads, decompression and the store's transaction block.
            let importer = importer.clone();
            let scan = tokio::task::spawn_blocking(move || {
                importer.lock().unwrap_or_else(|p| p.into_inner()).scan();
            });
            if let Err(err) = scan.await {
                tracing::error!(error = %err, "pulumi: a scan failed");
            }
        }
    })
}

/// What was synced from one stack file, to skip it while it does not change.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    path: PathBuf,
    len: u64,
    modified: SystemTime,
    /// The source it is, when the state was read.
    source: Option<String>,
}

pub struct Importer {
    store: Store,
    roots: Vec<PathBuf>,
    /// By stack (root, project, stack).
    seen: HashMap<(PathBuf, Option<String>, String), Seen>,
    /// Messages said once.
    warned: HashSet<String>,
}

impl Importer {
    pub fn new(store: Store, roots: Vec<PathBuf>) -> Importer {
        Importer {
            store,
            roots,
            seen: HashMap::new(),
            warned: HashSet::new(),
        }
    }

    fn warn_once(&mut self, message: String) {
        if self.warned.insert(message.clone()) {
            tracing::warn!("{message}");
        }
    }

    /// Reads every stack whose file changed since the last scan, and retires the sources of
    /// stacks no longer there.
    pub fn scan(&mut self) {
        let scan = scan_stacks(&self.roots);
        let mut present: BTreeSet<String> = BTreeSet::new();
        let mut complete = scan.complete;
        for file in &scan.files {
            let key = (file.root.clone(), file.project.clone(), file.stack.clone());
            let unchanged = self.seen.get(&key).filter(|s| {
                s.path == file.path && s.len == file.len && s.modified == file.modified
            });
            let source = match unchanged {
                Some(seen) => seen.source.clone(),
                None => {
                    let source = self.import(file);
                    self.seen.insert(
                        key,
                        Seen {
                            path: file.path.clone(),
                            len: file.len,
                            modified: file.modified,
                            source: source.clone(),
                        },
                    );
                    source
                }
            };
            // A project's stack is its source even when its state cannot be read now.
            let source = source.or_else(|| {
                file.project
                    .as_deref()
                    .map(|p| interrupted::source_name(p, &file.stack))
            });
            match source {
                Some(source) => {
                    present.insert(source);
                }
                None => complete = false,
            }
        }
        let files: HashSet<_> = scan
            .files
            .iter()
            .map(|f| (f.root.clone(), f.project.clone(), f.stack.clone()))
            .collect();
        self.seen.retain(|k, _| files.contains(k));
        if complete {
            self.retire(&present);
        }
    }

    /// Brings the source of `file`'s stack to its state; the source, or `None` when the
    /// state cannot be read (said once).
    fn import(&mut self, file: &StackFile) -> Option<String> {
        let name = file.path.display().to_string();
        let export = match read_state(&file.path, file.len) {
            Ok(text) => pulumi::parse_stack_export(&text, &name).map_err(|e| e.to_string()),
            Err(err) => Err(err),
        };
        let export = match export {
            Ok(export) => export,
            Err(err) => {
                self.warn_once(format!("pulumi: {err}; not imported"));
                return None;
            }
        };
        let project = file.project.as_deref().or(export.project.as_deref())?;
        let source = interrupted::source_name(project, &file.stack);
        if !self.store.scope().contains(&source) {
            return Some(source);
        }
        self.sync(&source, file, &export, &name);
        Some(source)
    }

    fn sync(&mut self, source: &str, file: &StackFile, export: &StackExport, name: &str) {
        for left in &export.left_out {
            tracing::debug!(%source, urn = %left.urn, field = %left.field, why = ?left.why,
                "pulumi: field left out");
        }
        let options = self.committed_scopes();
        let objects = match pulumi::manifest_objects(export, name, &options) {
            Ok(objects) => objects,
            Err(err) => return self.warn_once(format!("pulumi: {source} not imported: {err}")),
        };
        let (operations, warnings) = interrupted::operations(
            export,
            name,
            &options,
            &file.qualified(),
            Some(&file.backend()),
            Timestamp::now(),
        );
        for warning in warnings {
            self.warn_once(format!("pulumi: {warning}"));
        }
        let pending: Vec<PulumiPending> = operations
            .iter()
            .map(|(operation, objects)| PulumiPending { operation, objects })
            .collect();
        let at = export.time.map(|t| format!(" at {t}")).unwrap_or_default();
        let message = format!("pulumi: state of {}{at}", file.qualified());
        let req = PulumiSync {
            source,
            objects: &objects,
            author: interrupted::ACTOR,
            message: &message,
            at: export.time,
            pending: &pending,
            imported: true,
        };
        match self.store.sync_pulumi(&req) {
            Ok(outcome) => {
                if let CommitOutcome::Created(rev) = &outcome.revision {
                    tracing::info!(%source, "pulumi: {source}: revision {}: {}", rev.id, rev.message);
                }
                for ended in &outcome.ended {
                    tracing::info!(%source, "pulumi: {source}: intent {} {} ({})", ended.id,
                        ended.state, ended.end_reason.as_deref().unwrap_or(""));
                }
                for begun in &outcome.begun {
                    tracing::warn!(%source, intent = begun.id, holder = %begun.holder,
                        "pulumi: {source}: intent {}: {}", begun.id, begun.message);
                }
            }
            Err(err) => self.warn_once(format!("pulumi: {source} not imported: {err}")),
        }
    }

    /// Sources of stacks this importer brought in whose state is gone (`pulumi stack rm`):
    /// an empty revision, so they desire nothing and leave the source list.
    fn retire(&mut self, present: &BTreeSet<String>) {
        let tracked = match self.store.pulumi_sources() {
            Ok(tracked) => tracked,
            Err(err) => {
                return self.warn_once(format!("pulumi: cannot read the tracked stacks: {err}"))
            }
        };
        for source in tracked {
            if present.contains(&source) || !self.store.scope().contains(&source) {
                continue;
            }
            let req = PulumiSync {
                source: &source,
                objects: &[],
                author: interrupted::ACTOR,
                message: "pulumi: stack removed from its backend",
                at: None,
                pending: &[],
                imported: true,
            };
            match self.store.sync_pulumi(&req) {
                Ok(_) => tracing::info!(%source, "pulumi: {source}: its state is gone; retired"),
                Err(err) => self.warn_once(format!("pulumi: cannot retire {source}: {err}")),
            }
        }
    }

    /// Scopes of custom kinds from the CustomResourceDefinitions committed so far (a stack
    /// may create custom resources whose CRD another source owns).
    fn committed_scopes(&self) -> LoadOptions {
        let custom_scopes = self
            .store
            .committed_crds()
            .unwrap_or_default()
            .iter()
            .filter_map(|o| manifest::crd_scope("CustomResourceDefinition", o))
            .collect();
        LoadOptions {
            custom_scopes,
            ..LoadOptions::default()
        }
    }
}

/// The text of the state at `path` (`len` bytes when scanned).
fn read_state(path: &Path, len: u64) -> Result<String, String> {
    let name = path.display().to_string();
    if len > MAX_STATE_BYTES {
        return Err(format!("{name}: larger than {MAX_STATE_BYTES} bytes"));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    decode_state(&bytes, &name)
}

#[cfg(test)]
mod tests;
