//! Daemon configuration: built-in defaults, then the TOML file, then `DRIFTD_*` environment
//! variables, then command-line flags (the caller applies flags last).
//!
//! Every key is documented with its default in `config.example.toml`; an unknown key or a
//! value of the wrong type fails at start with an error naming the key, so a typo never
//! silently falls back to a default.

use driftd_k8s::TypeKey;
use serde::Deserialize;

mod comparison;
mod remediation;
pub use comparison::{Compare, DryRunConfig, SourceConfig};
pub use remediation::{Remediation, RemediationConfig};
mod stale_config_section;
pub use stale_config_section::StaleConfigConfig;
mod shard;
pub use shard::ShardConfig;
mod secrets;
pub use secrets::SecretsConfig;
mod audit;
pub use audit::AuditConfig;
mod http;
pub use http::{HttpAuth, HttpConfig, MIN_CONNECTIONS};
mod history;
pub use history::HistoryConfig;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// An invalid configuration; names where it came from and the offending key.
#[derive(Debug, thiserror::Error)]
#[error("config {origin}: key `{key}`: {reason}")]
pub struct ConfigError {
    pub origin: String,
    pub key: String,
    pub reason: String,
}

/// The whole daemon configuration.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// SQLite database with sources, revisions and drift episodes.
    pub database: PathBuf,
    /// Address of the HTTP server (`/drift`, `/metrics`, `/healthz`, `/readyz`).
    pub listen: SocketAddr,
    /// How long a drift state must hold before Events and episodes record it; a
    /// controller that rewrites a field and puts it back within this time makes no noise.
    pub settle_seconds: f64,
    /// How often the daemon checks the database for new commits.
    pub desired_poll_millis: u64,
    /// Every listed kind is listed again this often (0: never), so a change no watch event
    /// carried (an API server whose state went back to lower resourceVersions sends nothing
    /// newer than a watcher's position) is found within this time.
    pub relist_seconds: f64,
    /// driftd's own namespace: where its leader Lease lives. One setting for `serve` and the
    /// CLI (`DRIFTD_NAMESPACE`).
    pub namespace: String,
    pub metrics: MetricsConfig,
    pub events: EventsConfig,
    pub leader_election: LeaderElectionConfig,
    pub locks: LocksConfig,
    pub pulumi: PulumiConfig,
    pub helm: HelmConfig,
    pub unmanaged: UnmanagedConfig,
    pub secrets: SecretsConfig,
    pub http: HttpConfig,
    /// `[[ignore]]` rules: differences a team decided are not drift.
    pub ignore: Vec<driftd_core::diff::IgnoreRule>,
    /// `[[controller_managers]]`: field managers whose fields in live `managedFields` are
    /// never drift (controllers acting by design). Setting any replaces the default list.
    pub controller_managers: Vec<driftd_core::diff::ManagerMatch>,
    /// `[[sources]]`: per-source settings (how each source is compared).
    pub sources: Vec<SourceConfig>,
    /// `[dry_run]`: server-side dry runs of `compare = "dry-run"` sources.
    pub dry_run: DryRunConfig,
    /// `[remediation]`: pace of `remediation = "auto"` sources.
    pub remediation: RemediationConfig,
    /// `[stale_config]`: pods older than the Secrets/ConfigMaps they read.
    pub stale_config: StaleConfigConfig,
    /// `[shard]`: which sources this instance owns when several share them.
    pub shard: ShardConfig,
    /// `[audit]`: the API server's audit events, to say who made each change.
    pub audit: AuditConfig,
    /// `[history]`: how long closed drift episodes are kept.
    pub history: HistoryConfig,
}

/// `[unmanaged]`: opt-in coverage. Live objects of these kinds in these namespaces that no
/// source owns (and no controller created) are reported as class `unmanaged`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct UnmanagedConfig {
    /// Kinds as `Kind` for built-ins (`ConfigMap`, `Deployment`) or `apiVersion/Kind`
    /// (`apps/v1/Deployment`, `example.com/v1/Widget`). Empty: coverage is off.
    pub kinds: Vec<String>,
    /// Namespaces to cover; empty means every namespace.
    pub namespaces: Vec<String>,
}

impl UnmanagedConfig {
    /// The kinds as watcher type keys; errors name the entry.
    pub fn type_keys(&self) -> Result<Vec<TypeKey>, KindError> {
        self.kinds.iter().map(|k| parse_kind(k)).collect()
    }
}

/// An `unmanaged.kinds` entry that names no kind; says how to write it instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    #[error("`{0}` is not a built-in kind; write it as apiVersion/Kind, e.g. example.com/v1/{0}")]
    NotBuiltin(String),
    #[error("`{given}` is ambiguous; write it as apiVersion/Kind, e.g. {example}/{given}")]
    Ambiguous { given: String, example: String },
    #[error("`{0}` is not `Kind` or `apiVersion/Kind`")]
    Malformed(String),
}

/// `Kind` (a built-in) or `apiVersion/Kind`.
fn parse_kind(text: &str) -> Result<TypeKey, KindError> {
    let (api_version, kind) = match text.rsplit_once('/') {
        Some((api_version, kind)) => (api_version.to_string(), kind.to_string()),
        None => {
            let matches: Vec<_> = driftd_k8s::kinds::BUILTIN
                .iter()
                .filter(|r| r.kind == text)
                .collect();
            match matches.as_slice() {
                [one] => (one.api_version(), one.kind.to_string()),
                [] => return Err(KindError::NotBuiltin(text.to_string())),
                _ => {
                    return Err(KindError::Ambiguous {
                        given: text.to_string(),
                        example: matches[0].api_version(),
                    })
                }
            }
        }
    };
    if api_version.is_empty()
        || kind.is_empty()
        || !kind.starts_with(|c: char| c.is_ascii_uppercase())
    {
        return Err(KindError::Malformed(text.to_string()));
    }
    Ok(TypeKey { api_version, kind })
}

/// `[metrics]`
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// At most this many per-object drift series; more are counted in
    /// `driftd_object_drift_series_omitted_total` instead of exported.
    pub max_object_series: usize,
}

/// `[events]`
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EventsConfig {
    /// Publish `DriftDetected` / `DriftResolved` Kubernetes Events.
    pub enabled: bool,
    /// `reportingController` of the Events.
    pub reporting_controller: String,
    /// Events published per second on average (a token bucket), so a cold start with
    /// thousands of drifting objects does not flood the API server.
    pub max_per_second: f64,
    /// Events that may go at once before `max_per_second` applies.
    pub burst: u32,
    /// The queue holds two Events per tracked object, and never fewer than this; only past
    /// that bound is an Event dropped (and counted).
    pub queue_min: usize,
}

/// `[leader_election]`: which replica publishes Events (and, later, does the other
/// leader-only work). Every replica watches and serves `/drift` and `/metrics` either way.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LeaderElectionConfig {
    /// Off: this replica always acts as leader (one replica only).
    pub enabled: bool,
    /// Name of the `coordination.k8s.io/v1` Lease in `namespace`.
    pub lease_name: String,
    /// How long followers wait without seeing the Lease renewed before they take it over.
    /// Whole seconds: the Lease's `leaseDurationSeconds` holds it.
    pub lease_duration_seconds: u32,
    /// A leader that has not renewed for this long stops acting as leader (before any
    /// follower may take over, since it is shorter than the lease duration).
    pub renew_deadline_seconds: f64,
    /// How often the leader renews and followers try to acquire.
    pub retry_period_seconds: f64,
}

impl LeaderElectionConfig {
    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(u64::from(self.lease_duration_seconds))
    }

    pub fn renew_deadline(&self) -> Duration {
        Duration::from_secs_f64(self.renew_deadline_seconds)
    }

    pub fn retry_period(&self) -> Duration {
        Duration::from_secs_f64(self.retry_period_seconds)
    }

    /// client-go's rules (`NewLeaderElector`): the leader must give up before anyone may
    /// take over, and must get more than one try before it gives up.
    fn check(&self) -> Result<(), (&'static str, String)> {
        if self.lease_name.is_empty() {
            return Err(("leader_election.lease_name", "must not be empty".into()));
        }
        if self.lease_duration_seconds == 0 || self.lease_duration_seconds > 3600 {
            return Err((
                "leader_election.lease_duration_seconds",
                "must be between 1 and 3600".into(),
            ));
        }
        if !self.retry_period_seconds.is_finite() || self.retry_period_seconds <= 0.0 {
            return Err((
                "leader_election.retry_period_seconds",
                "must be greater than 0".into(),
            ));
        }
        if !self.renew_deadline_seconds.is_finite()
            || self.renew_deadline_seconds >= f64::from(self.lease_duration_seconds)
        {
            return Err((
                "leader_election.renew_deadline_seconds",
                format!(
                    "must be less than lease_duration_seconds ({})",
                    self.lease_duration_seconds
                ),
            ));
        }
        if self.renew_deadline_seconds <= RETRY_JITTER * self.retry_period_seconds {
            return Err((
                "leader_election.renew_deadline_seconds",
                format!(
                    "must be greater than {RETRY_JITTER} x retry_period_seconds ({})",
                    self.retry_period_seconds
                ),
            ));
        }
        Ok(())
    }
}

/// `[locks]`: what driftd does about stale deploy locks besides reporting them at `/locks`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct LocksConfig {
    /// Release an intent automatically (recorded as `auto-release` by this replica) once its
    /// holder pod is confirmed gone and the lock is older than this. Off when absent: a
    /// release is a decision people make, unless they delegate it here.
    #[serde(deserialize_with = "some_duration")]
    pub auto_release_after: Option<Duration>,
}

/// `[pulumi]`: Pulumi's file backends. Their stacks are sources with no `driftd import`,
/// as Helm releases are, and their lock files are reported at `/locks` when stale.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PulumiConfig {
    /// Backend roots (the folders holding `.pulumi/`, as in `file://<root>`): every stack in
    /// `.pulumi/stacks/` is the source `pulumi:<project>/<stack>`, and `.pulumi/locks/` is
    /// scanned for stale locks. Empty: none.
    pub state_dirs: Vec<PathBuf>,
    /// Backend roots whose lock files alone are checked (their stacks are not read).
    pub lock_dirs: Vec<PathBuf>,
    /// How often the state and lock folders are scanned.
    pub scan_seconds: f64,
    /// A lock older than this is stale even if its holder may live: no `pulumi up` takes
    /// that long.
    #[serde(deserialize_with = "duration")]
    pub max_lock_age: Duration,
}

impl PulumiConfig {
    pub fn scan_period(&self) -> Duration {
        Duration::from_secs_f64(self.scan_seconds)
    }

    /// Every root whose lock files are checked: the state directories' and `lock_dirs`.
    pub fn lock_roots(&self) -> Vec<PathBuf> {
        let mut roots = self.state_dirs.clone();
        for dir in &self.lock_dirs {
            if !roots.contains(dir) {
                roots.push(dir.clone());
            }
        }
        roots
    }
}

impl Default for PulumiConfig {
    fn default() -> Self {
        PulumiConfig {
            state_dirs: Vec::new(),
            lock_dirs: Vec::new(),
            scan_seconds: 30.0,
            max_lock_age: Duration::from_secs(3600),
        }
    }
}

/// `[helm]`: Helm 3 releases as sources. Every release Secret (`owner=helm`, type
/// `helm.sh/release.v1`) is read; each release is source `helm:<namespace>/<name>` whose
/// committed state is its newest deployed version, so Helm users commit nothing.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HelmConfig {
    /// Watch Helm's release Secrets (needs `get`, `list`, `watch` on Secrets there).
    pub enabled: bool,
    /// Namespaces whose releases are read; empty means every namespace.
    pub namespaces: Vec<String>,
    /// A version pending (`pending-install|upgrade|rollback`) longer than this is a stale
    /// lock: no real `helm upgrade --wait` takes that long, and Helm refuses the next one.
    #[serde(deserialize_with = "duration")]
    pub stale_after: Duration,
}

impl Default for HelmConfig {
    fn default() -> Self {
        HelmConfig {
            enabled: true,
            namespaces: Vec::new(),
            stale_after: Duration::from_secs(15 * 60),
        }
    }
}

/// A duration as people write it (`90s`, `30m`, `1h30m`, ISO 8601 `PT1H`; units up to hours).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let parsed: jiff::SignedDuration = text
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: write it like 90s, 30m or 1h30m"))?;
    match Duration::try_from(parsed) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(format!("{text:?} must be longer than zero")),
    }
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

fn some_duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// The Lease an unsharded instance elects on; a shard's is `driftd-<shard.name>` unless
/// `leader_election.lease_name` says otherwise.
const DEFAULT_LEASE: &str = "driftd";

/// client-go's `JitterFactor`, kept as the margin between renew deadline and retry period.
const RETRY_JITTER: f64 = 1.2;

impl Default for Config {
    fn default() -> Self {
        Config {
            database: PathBuf::from("driftd.db"),
            listen: "0.0.0.0:9477".parse().expect("valid default address"),
            settle_seconds: 5.0,
            desired_poll_millis: 500,
            relist_seconds: 300.0,
            namespace: "driftd".into(),
            metrics: MetricsConfig::default(),
            events: EventsConfig::default(),
            leader_election: LeaderElectionConfig::default(),
            locks: LocksConfig::default(),
            pulumi: PulumiConfig::default(),
            helm: HelmConfig::default(),
            unmanaged: UnmanagedConfig::default(),
            secrets: SecretsConfig::default(),
            http: HttpConfig::default(),
            ignore: Vec::new(),
            controller_managers: driftd_core::diff::ClusterFacts::default().controller_managers,
            sources: Vec::new(),
            dry_run: DryRunConfig::default(),
            remediation: RemediationConfig::default(),
            stale_config: StaleConfigConfig::default(),
            shard: ShardConfig::default(),
            audit: AuditConfig::default(),
            history: HistoryConfig::default(),
        }
    }
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            max_object_series: 10_000,
        }
    }
}

impl Default for EventsConfig {
    fn default() -> Self {
        EventsConfig {
            enabled: true,
            reporting_controller: "driftd".into(),
            max_per_second: 20.0,
            burst: 100,
            queue_min: 1000,
        }
    }
}

impl Default for LeaderElectionConfig {
    /// client-go's defaults (15 s / 10 s / 2 s), as kube-controller-manager uses them.
    fn default() -> Self {
        LeaderElectionConfig {
            enabled: true,
            lease_name: DEFAULT_LEASE.into(),
            lease_duration_seconds: 15,
            renew_deadline_seconds: 10.0,
            retry_period_seconds: 2.0,
        }
    }
}

/// Scalar keys that `DRIFTD_*` variables may set: `DRIFTD_SETTLE_SECONDS`,
/// `DRIFTD_METRICS_MAX_OBJECT_SERIES`, ... (dots become underscores, upper case).
const ENV_KEYS: &[&str] = &[
    "database",
    "listen",
    "settle_seconds",
    "desired_poll_millis",
    "relist_seconds",
    "metrics.max_object_series",
    "events.enabled",
    "events.reporting_controller",
    "events.max_per_second",
    "events.burst",
    "events.queue_min",
    "namespace",
    "leader_election.enabled",
    "leader_election.lease_name",
    "leader_election.lease_duration_seconds",
    "leader_election.renew_deadline_seconds",
    "leader_election.retry_period_seconds",
    "secrets.encryption_key_file",
    "secrets.previous_encryption_key_files",
    "secrets.hash_key_file",
    "secrets.hash_key_secret",
    "http.header_read_timeout_seconds",
    "http.idle_timeout_seconds",
    "http.request_timeout_seconds",
    "http.max_connections",
    "http.max_in_flight_requests",
    "http.web_config_file",
    "http.health_requires_auth",
    "http.auth",
    "http.auth_cache_seconds",
    "locks.auto_release_after",
    "pulumi.scan_seconds",
    "pulumi.max_lock_age",
    "dry_run.refresh_seconds",
    "dry_run.max_per_second",
    "helm.enabled",
    "helm.stale_after",
    "stale_config.enabled",
    "stale_config.kubelet_sync_seconds",
    "shard.name",
    "shard.sources",
    "audit.webhook_token_file",
    "audit.webhook_client_certificates",
    "audit.log_path",
    "audit.max_body_bytes",
    "audit.max_requests_per_second",
    "audit.burst",
    "audit.retention_seconds",
    "audit.max_events",
    "history.retention_days",
];

/// Environment variable that sets `key`. `database` is `DRIFTD_DB`, the name `driftd commit`,
/// `sources` and `history` read too, so one variable points every command at one database.
pub fn env_var_for(key: &str) -> String {
    if key == "database" {
        return "DRIFTD_DB".into();
    }
    format!("DRIFTD_{}", key.replace('.', "_").to_uppercase())
}

impl Config {
    /// Loads `file` (if any) over the defaults, then the environment over that.
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        Self::load_with_env(file, |k| std::env::var(k).ok())
    }

    /// As [`Config::load`], with the environment given as a lookup (for tests).
    pub fn load_with_env(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let origin = file.map_or_else(|| "defaults".to_string(), |p| p.display().to_string());
        let mut table = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
                    origin: origin.clone(),
                    key: "-".into(),
                    reason: format!("cannot read the file: {e}"),
                })?;
                text.parse::<toml::Table>().map_err(|e| ConfigError {
                    origin: origin.clone(),
                    key: "-".into(),
                    reason: format!("not valid TOML: {}", e.message()),
                })?
            }
            None => toml::Table::new(),
        };
        for key in ENV_KEYS {
            let var = env_var_for(key);
            if let Some(raw) = env(&var) {
                set_path(&mut table, key, env_value(&raw));
            }
        }
        let mut config: Config = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| {
                let key = e.path().to_string();
                let key_var = env_var_for(&key);
                let origin = if env(&key_var).is_some() {
                    format!("environment {key_var}")
                } else {
                    origin.clone()
                };
                ConfigError {
                    origin,
                    key,
                    reason: e.inner().to_string(),
                }
            })?;
        config.validate(&origin)?;
        if !config.shard.name.is_empty() && config.leader_election.lease_name == DEFAULT_LEASE {
            config.leader_election.lease_name = format!("{DEFAULT_LEASE}-{}", config.shard.name);
        }
        Ok(config)
    }

    fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let bad = |key: &str, reason: &str| ConfigError {
            origin: origin.into(),
            key: key.into(),
            reason: reason.into(),
        };
        if !(self.settle_seconds >= 0.0 && self.settle_seconds <= 3600.0) {
            return Err(bad("settle_seconds", "must be between 0 and 3600"));
        }
        if !(self.relist_seconds == 0.0
            || (self.relist_seconds >= 1.0 && self.relist_seconds <= 86400.0))
        {
            return Err(bad(
                "relist_seconds",
                "must be 0 (off) or between 1 and 86400",
            ));
        }
        if self.desired_poll_millis == 0 || self.desired_poll_millis > 60_000 {
            return Err(bad("desired_poll_millis", "must be between 1 and 60000"));
        }
        if let Err(err) = driftd_core::diff::RuleSet::new(self.ignore.clone()) {
            return Err(ConfigError {
                origin: origin.into(),
                key: format!("{}.{}", err.rule, err.field),
                reason: err.message,
            });
        }
        if let Some(i) = self
            .controller_managers
            .iter()
            .position(|m| m.manager.is_empty())
        {
            return Err(bad(
                &format!("controller_managers[{i}].manager"),
                "must not be empty",
            ));
        }
        if let Err(err) = self.unmanaged.type_keys() {
            return Err(bad("unmanaged.kinds", &err.to_string()));
        }
        if self.events.reporting_controller.is_empty() {
            return Err(bad("events.reporting_controller", "must not be empty"));
        }
        if !(self.events.max_per_second > 0.0 && self.events.max_per_second <= 10_000.0) {
            return Err(bad(
                "events.max_per_second",
                "must be above 0 and at most 10000",
            ));
        }
        if self.events.burst == 0 {
            return Err(bad("events.burst", "must be at least 1"));
        }
        if self.namespace.is_empty() {
            return Err(bad("namespace", "must not be empty"));
        }
        if let Err((key, reason)) = self.leader_election.check() {
            return Err(bad(key, &reason));
        }
        if let Err((key, reason)) = self.http.check() {
            return Err(bad(key, &reason));
        }
        if let Err((key, reason)) = self.dry_run.check() {
            return Err(bad(key, &reason));
        }
        if let Err((key, reason)) = self.remediation.check() {
            return Err(bad(key, &reason));
        }
        if let Err((key, reason)) = self.secrets.check() {
            return Err(bad(key, &reason));
        }
        if let Err((key, reason)) = self.shard.check() {
            return Err(bad(&key, &reason));
        }
        if let Err((key, reason)) = comparison::check_sources(&self.sources) {
            return Err(bad(&key, &reason));
        }
        if let Err((key, reason)) = self.stale_config.check() {
            return Err(bad(key, reason));
        }
        if let Err((key, reason)) = self.audit.check() {
            return Err(bad(key, reason));
        }
        if let Err((key, reason)) = self.history.check() {
            return Err(bad(key, &reason));
        }
        if !(self.pulumi.scan_seconds >= 1.0 && self.pulumi.scan_seconds <= 3600.0) {
            return Err(bad("pulumi.scan_seconds", "must be between 1 and 3600"));
        }
        if self.helm.stale_after < Duration::from_secs(1)
            || self.helm.stale_after > driftd_store::MAX_TTL
        {
            return Err(bad("helm.stale_after", "must be between 1s and 168h"));
        }
        if let Some(ns) = self.helm.namespaces.iter().find(|ns| {
            ns.is_empty()
                || ns.len() > 63
                || !ns
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        }) {
            return Err(bad(
                "helm.namespaces",
                &format!("{ns:?} is not a namespace name (lowercase letters, digits, '-')"),
            ));
        }
        Ok(())
    }

    /// The ignore rules, compiled (validated at load, so this cannot fail afterwards).
    pub fn rule_set(&self) -> driftd_core::diff::RuleSet {
        driftd_core::diff::RuleSet::new(self.ignore.clone()).expect("rules were validated at load")
    }

    /// Names of the sources compared by server-side dry run.
    pub fn dry_run_sources(&self) -> std::collections::BTreeSet<String> {
        self.sources
            .iter()
            .filter(|s| s.compare == Compare::DryRun)
            .map(|s| s.name.clone())
            .collect()
    }

    /// Names of the sources the leader remediates.
    pub fn remediated_sources(&self) -> std::collections::BTreeSet<String> {
        self.sources
            .iter()
            .filter(|s| s.remediation == Remediation::Auto)
            .map(|s| s.name.clone())
            .collect()
    }

    pub fn settle(&self) -> Duration {
        Duration::from_secs_f64(self.settle_seconds)
    }

    /// The periodic re-list period, `None` when off.
    pub fn relist(&self) -> Option<Duration> {
        (self.relist_seconds > 0.0).then(|| Duration::from_secs_f64(self.relist_seconds))
    }
}

/// An environment value is TOML if it parses as a TOML value (`5`, `true`), else a string.
fn env_value(raw: &str) -> toml::Value {
    format!("v = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

fn set_path(table: &mut toml::Table, dotted: &str, value: toml::Value) {
    let mut parts: Vec<&str> = dotted.split('.').collect();
    let last = parts.pop().expect("non-empty key");
    let mut cur = table;
    for part in parts {
        let entry = cur
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        cur = entry.as_table_mut().expect("just made a table");
    }
    cur.insert(last.to_string(), value);
}

#[cfg(test)]
mod tests;
