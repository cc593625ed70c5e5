//! Helm 3 interop, pure (no I/O): release records as Helm stores them in the cluster, what a
//! release desires, and the commands that clear a release stuck mid-deploy.
//!
//! **Release Secrets.** Helm's default storage driver (`pkg/storage/driver/secrets.go`,
//! `newSecretsObject`) keeps every version of a release as a Secret named
//! `sh.helm.release.v1.<name>.v<version>` in the release namespace, of type
//! `helm.sh/release.v1`, labelled `owner=helm`, `name`, `status`, `version`. Its data key
//! `release` holds the release as JSON, gzipped, base64-encoded (`pkg/storage/driver/util.go`,
//! `encodeRelease`; `decodeRelease` also takes JSON not gzipped, from before compression),
//! and the Secret's `data` base64-encodes that text once more on the wire. The release
//! (`pkg/release/release.go`, `info.go`, `status.go`) carries `name`, `namespace`, `version`,
//! `info.status`, `info.last_deployed`, `chart.metadata`, `manifest` (the rendered templates,
//! hooks excluded), and the user's values (`config`), which are never read here.
//!
//! **Desired state.** A release's committed state is the manifest of its newest `deployed`
//! version; objects without a namespace get the release namespace (namespaced kinds only, as
//! Helm's kube client does), hook resources (`helm.sh/hook`, `pkg/release/hook.go`) are not
//! desired state. A version `pending-install|upgrade|rollback` newer than that is a deploy in
//! flight, whose `info.last_deployed` is when it began (`pkg/action/upgrade.go` sets it on the
//! pending release it records first).

use crate::manifest::{self, LoadOptions, ManifestError, ManifestObject};
use crate::text::shell_quote;
use base64::Engine as _;
use flate2::read::GzDecoder;
use jiff::Timestamp;
use serde::Deserialize;
use std::io::Read;

/// The Secret type of a Helm 3 release record.
pub const RELEASE_TYPE: &str = "helm.sh/release.v1";
/// The label selector of Helm's release Secrets.
pub const SELECTOR: &str = "owner=helm";
/// The Secret data key of the record.
pub const DATA_KEY: &str = "release";
/// The annotation that makes a template a hook (`pkg/release/hook.go`, `HookAnnotation`).
pub const HOOK_ANNOTATION: &str = "helm.sh/hook";
/// Prefix of the sources Helm releases become: `helm:<namespace>/<name>`.
pub const SOURCE_PREFIX: &str = "helm:";
/// Largest decompressed release accepted. A Secret holds at most 1 MiB; real releases
/// compress 5-20x, so this leaves room for any real chart and refuses a gzip bomb.
pub const MAX_RELEASE_BYTES: u64 = 64 * 1024 * 1024;

const GZIP_MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];

/// A release Secret that cannot be read. Names the Secret, never quotes its payload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Helm release Secret {secret}: {reason}")]
pub struct HelmError {
    /// `namespace/name` of the Secret.
    pub secret: String,
    pub reason: String,
}

/// `info.status` of a release version (`pkg/release/status.go`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    Unknown,
    Deployed,
    Uninstalled,
    Superseded,
    Failed,
    Uninstalling,
    PendingInstall,
    PendingUpgrade,
    PendingRollback,
}

impl Status {
    pub fn parse(text: &str) -> Option<Status> {
        Some(match text {
            "unknown" => Status::Unknown,
            "deployed" => Status::Deployed,
            "uninstalled" => Status::Uninstalled,
            "superseded" => Status::Superseded,
            "failed" => Status::Failed,
            "uninstalling" => Status::Uninstalling,
            "pending-install" => Status::PendingInstall,
            "pending-upgrade" => Status::PendingUpgrade,
            "pending-rollback" => Status::PendingRollback,
            _ => return None,
        })
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Unknown => "unknown",
            Status::Deployed => "deployed",
            Status::Uninstalled => "uninstalled",
            Status::Superseded => "superseded",
            Status::Failed => "failed",
            Status::Uninstalling => "uninstalling",
            Status::PendingInstall => "pending-install",
            Status::PendingUpgrade => "pending-upgrade",
            Status::PendingRollback => "pending-rollback",
        }
    }

    /// An install, upgrade or rollback in progress: Helm refuses another operation on the
    /// release meanwhile ("another operation (install/upgrade/rollback) is in progress").
    pub fn is_pending(&self) -> bool {
        matches!(
            self,
            Status::PendingInstall | Status::PendingUpgrade | Status::PendingRollback
        )
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One version of a release: what driftd keeps of its record (the values are dropped).
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    pub name: String,
    pub namespace: String,
    pub version: i64,
    pub status: Status,
    /// Chart name and version (`chart.metadata`); empty when the record has none.
    pub chart: String,
    pub chart_version: String,
    /// `info.last_deployed`: when this version's operation began (absent: Go's zero time).
    pub last_deployed: Option<Timestamp>,
    /// The rendered templates, hooks excluded.
    pub manifest: String,
}

impl Release {
    /// The driftd source this release is.
    pub fn source(&self) -> String {
        source_name(&self.namespace, &self.name)
    }

    /// `chart web 1.2.0` for messages; empty without chart metadata.
    pub fn chart_label(&self) -> String {
        match (self.chart.is_empty(), self.chart_version.is_empty()) {
            (true, _) => String::new(),
            (false, true) => format!("chart {}", self.chart),
            (false, false) => format!("chart {} {}", self.chart, self.chart_version),
        }
    }

    /// Where its objects came from, for origins and errors.
    pub fn origin(&self) -> String {
        format!(
            "Helm release {}/{} version {}",
            self.namespace, self.name, self.version
        )
    }
}

/// `helm:<namespace>/<name>`.
pub fn source_name(namespace: &str, name: &str) -> String {
    format!("{SOURCE_PREFIX}{namespace}/{name}")
}

/// (namespace, name) of a Helm source; `None` for any other source.
pub fn parse_source(source: &str) -> Option<(&str, &str)> {
    let (ns, name) = source.strip_prefix(SOURCE_PREFIX)?.split_once('/')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains('/')).then_some((ns, name))
}

#[derive(Deserialize)]
struct RawRelease {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    version: i64,
    #[serde(default)]
    info: Option<RawInfo>,
    #[serde(default)]
    chart: Option<RawChart>,
    #[serde(default)]
    manifest: String,
}

#[derive(Deserialize)]
struct RawInfo {
    #[serde(default)]
    status: String,
    #[serde(default)]
    last_deployed: Option<String>,
}

#[derive(Deserialize)]
struct RawChart {
    #[serde(default)]
    metadata: Option<RawMetadata>,
}

#[derive(Deserialize)]
struct RawMetadata {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: String,
}

/// Decodes the `release` data of the Secret `secret` (`namespace/name`; the bytes as the
/// Secret holds them, i.e. the base64 text `encodeRelease` wrote). Errors say what is wrong
/// and where, never a byte of the payload; a payload larger than [`MAX_RELEASE_BYTES`] once
/// decompressed is refused.
pub fn decode_release(secret: &str, data: &[u8]) -> Result<Release, HelmError> {
    let fail = |reason: String| HelmError {
        secret: secret.to_string(),
        reason,
    };
    let raw: RawRelease = parse_release(secret, data)?;
    if raw.name.is_empty() || raw.namespace.is_empty() {
        return Err(fail("the release has no name or namespace".into()));
    }
    if raw.version < 1 {
        return Err(fail("the release has no version".into()));
    }
    let info = raw
        .info
        .ok_or_else(|| fail("the release has no info".into()))?;
    let status = Status::parse(&info.status)
        .ok_or_else(|| fail("info.status is not a Helm release status".into()))?;
    // Go marshals an unset time.Time as year 1.
    let last_deployed = info
        .last_deployed
        .and_then(|t| t.parse::<Timestamp>().ok())
        .filter(|t| t.as_second() > 0);
    let (chart, chart_version) = raw
        .chart
        .and_then(|c| c.metadata)
        .map(|m| (m.name, m.version))
        .unwrap_or_default();
    Ok(Release {
        name: raw.name,
        namespace: raw.namespace,
        version: raw.version,
        status,
        chart,
        chart_version,
        last_deployed,
        manifest: raw.manifest,
    })
}

/// The release JSON in a release Secret's `data` (see [`decode_release`]), read as `T`.
/// Errors never quote the payload.
pub(crate) fn parse_release<T: serde::de::DeserializeOwned>(
    secret: &str,
    data: &[u8],
) -> Result<T, HelmError> {
    let fail = |reason: String| HelmError {
        secret: secret.to_string(),
        reason,
    };
    let text: Vec<u8> = data
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|e| fail(format!("data `{DATA_KEY}` is not base64 ({e})")))?;
    let json = if bytes.starts_with(&GZIP_MAGIC) {
        let mut out = Vec::new();
        GzDecoder::new(&bytes[..])
            .take(MAX_RELEASE_BYTES + 1)
            .read_to_end(&mut out)
            .map_err(|e| fail(format!("data `{DATA_KEY}` is not valid gzip ({e})")))?;
        if out.len() as u64 > MAX_RELEASE_BYTES {
            return Err(fail(format!(
                "data `{DATA_KEY}` decompresses to more than {} MiB: refused",
                MAX_RELEASE_BYTES / (1024 * 1024)
            )));
        }
        out
    } else {
        bytes
    };
    serde_json::from_slice(&json).map_err(|e| {
        // Only the category and position: serde's message may quote a value.
        let what = match e.classify() {
            serde_json::error::Category::Io => "unreadable",
            serde_json::error::Category::Syntax => "not JSON",
            serde_json::error::Category::Data => "JSON of the wrong shape",
            serde_json::error::Category::Eof => "truncated JSON",
        };
        fail(format!(
            "the release is {what} (line {}, column {})",
            e.line(),
            e.column()
        ))
    })
}

/// The desired objects of `release`: its manifest read as any manifest is (validated, one
/// origin per document), namespaced objects without a namespace in the release namespace,
/// hook resources left out. `options` gives the custom kinds' scopes known elsewhere.
pub fn desired_objects(
    release: &Release,
    options: &LoadOptions,
) -> Result<Vec<ManifestObject>, ManifestError> {
    let options = LoadOptions {
        default_namespace: release.namespace.clone(),
        ..options.clone()
    };
    let loaded = manifest::read_text(&release.manifest, &release.origin(), &options)?;
    Ok(loaded
        .objects
        .into_iter()
        .filter(|o| {
            o.object
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(HOOK_ANNOTATION))
                .is_none()
        })
        .collect())
}

/// What the versions of one release stand for now.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing<'a> {
    /// The committed state: the newest `deployed` version.
    pub deployed: Option<&'a Release>,
    /// A deploy in flight: the newest version, pending, newer than `deployed`.
    pub pending: Option<&'a Release>,
    /// What a rollback of `pending` goes back to: the newest version below it that was
    /// deployed (`deployed`, or `superseded` between an upgrade's two writes).
    pub rollback_to: Option<i64>,
    /// Uninstalled (every version gone, or the newest `uninstalled` and none deployed): the
    /// source desires nothing any more.
    pub gone: bool,
}

/// Judges the versions of one release (any order). Between an upgrade's two writes (the old
/// version `superseded`, then the new one `deployed`) no version is deployed: that is not an
/// uninstall, so `gone` needs an `uninstalled` newest version or no version at all.
pub fn standing(versions: &[Release]) -> Standing<'_> {
    let deployed = versions
        .iter()
        .filter(|r| r.status == Status::Deployed)
        .max_by_key(|r| r.version);
    let newest = versions.iter().max_by_key(|r| r.version);
    let pending =
        newest.filter(|n| n.status.is_pending() && deployed.is_none_or(|d| n.version > d.version));
    let gone = match newest {
        None => true,
        Some(n) => deployed.is_none() && n.status == Status::Uninstalled,
    };
    let rollback_to = pending.and_then(|p| {
        versions
            .iter()
            .filter(|r| r.version < p.version)
            .filter(|r| matches!(r.status, Status::Deployed | Status::Superseded))
            .map(|r| r.version)
            .max()
    });
    Standing {
        deployed,
        pending,
        rollback_to,
        gone,
    }
}

/// A release version pending: what its intent's holder says, and how to clear it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingLock {
    pub namespace: String,
    pub name: String,
    pub version: i64,
    pub status: Status,
    /// The version to roll back to; `None` when no version was ever deployed.
    pub last_deployed: Option<i64>,
}

impl PendingLock {
    /// The holder text of the intent that stands for this pending version; [`PendingLock::parse`]
    /// reads it back (the store keeps it as the intent's holder).
    pub fn holder(&self) -> String {
        let last = match self.last_deployed {
            Some(v) => format!("last deployed version {v}"),
            None => "never deployed".to_string(),
        };
        format!("helm {} of version {}; {last}", self.status, self.version)
    }

    /// The lock of the intent of Helm source `source` held by `holder`.
    pub fn parse(source: &str, holder: &str) -> Option<PendingLock> {
        let (namespace, name) = parse_source(source)?;
        let rest = holder.strip_prefix("helm ")?;
        let (status, rest) = rest.split_once(" of version ")?;
        let (version, last) = rest.split_once("; ")?;
        let last_deployed = match last {
            "never deployed" => None,
            other => Some(other.strip_prefix("last deployed version ")?.parse().ok()?),
        };
        Some(PendingLock {
            namespace: namespace.to_string(),
            name: name.to_string(),
            version: version.parse().ok()?,
            status: Status::parse(status).filter(Status::is_pending)?,
            last_deployed,
        })
    }

    /// What clears it: a rollback to the last deployed version, or an uninstall when there
    /// is none (what `helm` itself suggests for a release stuck pending).
    pub fn release_command(&self) -> String {
        let (name, ns) = (shell_quote(&self.name), shell_quote(&self.namespace));
        match self.last_deployed {
            Some(v) => format!("helm rollback {name} {v} -n {ns}"),
            None => format!("helm uninstall {name} -n {ns}"),
        }
    }
}

pub mod values;

#[cfg(test)]
mod tests;
