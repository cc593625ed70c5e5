//! Helm releases as sources: a watch on Helm's release Secrets (`owner=helm`), and after
//! every change the store brought to where the changed release stands
//! ([`driftd_core::helm::standing`], [`driftd_store::Store::sync_helm`]): its newest deployed
//! version as the source's revision, a version in flight as its pending intent, an
//! uninstall as the end of the source. The engine notices the new rows as it notices any
//! commit (it polls the database's data version).
//!
//! A release Secret's payload (the chart, the user's values) is decoded in memory, only the
//! manifest is kept, and nothing of it is logged: errors name the Secret and what is wrong.

use driftd_config::HelmConfig;
use driftd_core::helm::{self, PendingLock, Release, Standing};
use driftd_core::manifest::{self, LoadOptions, ManifestError, ManifestObject};
use driftd_store::{HelmSync, HelmVersion, Store};
use driftd_watch::secrets::{self, Change, Followed};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::Duration;

/// A release: (namespace, name).
type ReleaseId = (String, String);

/// Starts importing Helm releases into `store` until `stop` is true.
pub fn spawn(
    client: kube::Client,
    config: &HelmConfig,
    store: Store,
    stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    let scopes: Vec<Option<String>> = if config.namespaces.is_empty() {
        vec![None]
    } else {
        config.namespaces.iter().cloned().map(Some).collect()
    };
    let apis = scopes
        .iter()
        .map(|ns| match ns {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        })
        .collect();
    let stale_after = config.stale_after;
    tokio::spawn(async move {
        let where_ = match config_namespaces(&scopes) {
            Some(list) => format!("namespaces {list}"),
            None => "every namespace".to_string(),
        };
        tracing::info!("helm: reading Helm release Secrets in {where_}");
        let mut importer = Importer {
            store,
            scopes,
            stale_after,
            decoded: HashMap::new(),
            warned: HashSet::new(),
        };
        let what = "helm: watching Helm release Secrets";
        secrets::follow(
            apis,
            helm::SELECTOR,
            what,
            key_of,
            stop,
            |objects, change| importer.changed(objects, change),
        )
        .await;
    })
}

fn config_namespaces(scopes: &[Option<String>]) -> Option<String> {
    let names: Vec<&str> = scopes.iter().flatten().map(String::as_str).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

fn key_of(s: &Secret) -> String {
    format!(
        "{}/{}",
        s.metadata.namespace.as_deref().unwrap_or(""),
        s.metadata.name.as_deref().unwrap_or("")
    )
}

/// The release a Secret records: its namespace and Helm's `name` label.
fn release_of(s: &Secret) -> Option<ReleaseId> {
    if s.type_.as_deref() != Some(helm::RELEASE_TYPE) {
        return None;
    }
    let ns = s.metadata.namespace.clone()?;
    let name = s.metadata.labels.as_ref()?.get("name")?.clone();
    Some((ns, name))
}

struct Importer {
    store: Store,
    /// The watched namespaces by scope index (`None`: every namespace).
    scopes: Vec<Option<String>>,
    stale_after: Duration,
    /// Decoded records by Secret key, with the resourceVersion they were decoded at: a
    /// record is decompressed once, not at every change of its release.
    decoded: HashMap<String, (Option<String>, Result<Release, helm::HelmError>)>,
    /// Messages said once.
    warned: HashSet<String>,
}

impl Importer {
    fn warn_once(&mut self, message: String) {
        if self.warned.insert(message.clone()) {
            tracing::warn!("{message}");
        }
    }

    fn changed(&mut self, objects: &Followed, change: &Change) {
        let mut releases: BTreeSet<ReleaseId> = BTreeSet::new();
        match change {
            Change::Listed { scope } => {
                // Every release the scope holds, and every tracked one it no longer does.
                releases.extend(
                    objects
                        .values()
                        .filter(|(s, _)| s == scope)
                        .filter_map(|(_, secret)| release_of(secret)),
                );
                let tracked = match self.store.helm_sources() {
                    Ok(tracked) => tracked,
                    Err(err) => {
                        self.warn_once(format!("helm: cannot read the tracked releases: {err}"));
                        Vec::new()
                    }
                };
                let within = self.scopes[*scope].clone();
                for source in tracked {
                    if let Some((ns, name)) = helm::parse_source(&source) {
                        if within.as_deref().is_none_or(|w| w == ns) {
                            releases.insert((ns.to_string(), name.to_string()));
                        }
                    }
                }
                let keys: HashSet<&String> = objects.keys().collect();
                self.decoded.retain(|k, _| keys.contains(k));
            }
            Change::Applied { key } => {
                releases.extend(objects.get(key).and_then(|(_, s)| release_of(s)));
            }
            Change::Deleted { key, secret } => {
                self.decoded.remove(key);
                releases.extend(release_of(secret));
            }
        }
        // Another shard's releases are that shard's to import.
        releases.retain(|(ns, name)| self.store.scope().contains(&helm::source_name(ns, name)));
        for release in releases {
            self.sync(objects, &release);
        }
    }

    /// The decoded versions of `release` among `objects`; unreadable ones are said once and
    /// left out.
    fn versions(&mut self, objects: &Followed, release: &ReleaseId) -> Vec<(Release, Timestamp)> {
        let mut out = Vec::new();
        let mut errors = Vec::new();
        for (key, (_, secret)) in objects {
            if release_of(secret).as_ref() != Some(release) {
                continue;
            }
            let version = secret.metadata.resource_version.clone();
            let fresh = self
                .decoded
                .get(key)
                .is_some_and(|(v, _)| *v == version && version.is_some());
            if !fresh {
                let data = secret
                    .data
                    .as_ref()
                    .and_then(|d| d.get(helm::DATA_KEY))
                    .map(|b| b.0.as_slice())
                    .unwrap_or_default();
                self.decoded
                    .insert(key.clone(), (version, helm::decode_release(key, data)));
            }
            match &self.decoded[key].1 {
                Ok(r) => {
                    let created = secret
                        .metadata
                        .creation_timestamp
                        .as_ref()
                        .map(|t| t.0)
                        .unwrap_or_else(Timestamp::now);
                    out.push((r.clone(), created));
                }
                Err(err) => errors.push(err.to_string()),
            }
        }
        for message in errors {
            self.warn_once(format!("helm: {message}; left out"));
        }
        out
    }

    /// Brings the source of `release` to where the release stands.
    fn sync(&mut self, objects: &Followed, release: &ReleaseId) {
        let versions = self.versions(objects, release);
        let source = helm::source_name(&release.0, &release.1);
        let records: Vec<Release> = versions.iter().map(|(r, _)| r.clone()).collect();
        let standing = helm::standing(&records);
        let when = |r: &Release| {
            r.last_deployed.unwrap_or_else(|| {
                versions
                    .iter()
                    .find(|(v, _)| v.version == r.version)
                    .map_or_else(Timestamp::now, |(_, created)| *created)
            })
        };
        let deployed = match standing.deployed.map(|r| self.objects_of(r)).transpose() {
            Ok(d) => d,
            Err(message) => return self.warn_once(message),
        };
        let pending = match standing.pending.map(|r| self.objects_of(r)).transpose() {
            Ok(p) => p,
            Err(message) => return self.warn_once(message),
        };
        let describe = |r: &Release| match r.chart_label() {
            chart if chart.is_empty() => format!("version {}", r.version),
            chart => format!("version {}, {chart}", r.version),
        };
        let deployed_text = standing.deployed.map(describe);
        let pending_text = standing.pending.map(describe);
        let req = HelmSync {
            source: &source,
            deployed: match (standing.deployed, &deployed, &deployed_text) {
                (Some(r), Some(objects), Some(text)) => Some(HelmVersion {
                    version: r.version,
                    describe: text,
                    at: when(r),
                    objects,
                }),
                _ => None,
            },
            pending: match (standing.pending, &pending, &pending_text) {
                (Some(r), Some(objects), Some(text)) => Some((
                    HelmVersion {
                        version: r.version,
                        describe: text,
                        at: when(r),
                        objects,
                    },
                    lock_of(r, &standing),
                )),
                _ => None,
            },
            gone: standing.gone,
            stale_after: self.stale_after,
        };
        match self.store.sync_helm(&req) {
            Ok(outcome) => {
                if let Some(ended) = &outcome.ended {
                    tracing::info!(%source, "helm: {source}: intent {} {} ({})", ended.id,
                        ended.state, ended.end_reason.as_deref().unwrap_or(""));
                }
                if let Some(rev) = &outcome.revision {
                    tracing::info!(%source, "helm: {source}: revision {}: {}", rev.id, rev.message);
                }
                if let Some(begun) = &outcome.begun {
                    tracing::info!(%source, "helm: {source}: intent {} for {}", begun.id, begun.holder);
                }
            }
            Err(err) => self.warn_once(format!("helm: {source} not imported: {err}")),
        }
    }

    /// The desired objects of one version; the error names release, version, document and
    /// field. A release with custom resources of a kind its manifest does not define is
    /// read again with the scopes of the CustomResourceDefinitions committed so far (a
    /// chart's `crds/` are not in its manifest); what stays unresolved is resolved by
    /// discovery.
    fn objects_of(&self, release: &Release) -> Result<Vec<ManifestObject>, String> {
        let fail = |err: ManifestError| {
            format!(
                "helm: {} not imported: {err}",
                helm::source_name(&release.namespace, &release.name)
            )
        };
        let objects = helm::desired_objects(release, &LoadOptions::default()).map_err(fail)?;
        if !objects.iter().any(|o| o.scope_unresolved) {
            return Ok(objects);
        }
        helm::desired_objects(release, &self.committed_scopes()).map_err(fail)
    }

    fn committed_scopes(&self) -> LoadOptions {
        let custom_scopes: BTreeMap<(String, String), bool> = self
            .store
            .desired_state()
            .map(|d| d.objects)
            .unwrap_or_default()
            .iter()
            .filter(|o| o.key.group == "apiextensions.k8s.io")
            .filter_map(|o| manifest::crd_scope(&o.key.kind, &o.object))
            .collect();
        LoadOptions {
            custom_scopes,
            ..LoadOptions::default()
        }
    }
}

fn lock_of(pending: &Release, standing: &Standing) -> PendingLock {
    PendingLock {
        namespace: pending.namespace.clone(),
        name: pending.name.clone(),
        version: pending.version,
        status: pending.status,
        last_deployed: standing.rollback_to,
    }
}

#[cfg(test)]
mod tests;
