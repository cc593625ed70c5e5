//! The cluster simulator: an HTTP server speaking the Kubernetes REST/watch protocol, so the
//! real `kube` client and `kubectl` can be pointed at it in tests and demos.
//!
//! What it serves (plain HTTP, no auth):
//! - discovery (`/version`, `/api`, `/apis`, group and group-version documents; aggregated
//!   `apidiscovery.k8s.io/v2` when the Accept header asks for it, as kubectl 1.32 and
//!   `kube::Discovery::run_aggregated` do) and an OpenAPI v3 index with one PATCH operation per kind
//!   so kubectl leaves field validation to the server (`openapi.rs` explains why that suffices);
//! - list (selectors, `limit`/`continue` over a consistent snapshot, `resourceVersionMatch`),
//!   watch (history replay, `allowWatchBookmarks`, `sendInitialEvents`, `timeoutSeconds`,
//!   `410 Expired` from compacted history), get, create, update, patch (merge, JSON,
//!   strategic for built-in kinds), delete and deletecollection, `status` and `scale`
//!   subresources, Table output for `kubectl get` (also in watch events, for `get -w`),
//!   protobuf bodies for Namespace/ConfigMap/Secret (what kubectl's `create` generators send);
//! - every type in [`driftd_k8s::kinds::BUILTIN`] (every built-in kind k8s-openapi knows,
//!   in its preferred GA version, with its scope, plural and discovery extras: one table
//!   for discovery, OpenAPI and storage; generic storage where no controller or defaults
//!   are modelled) plus kinds defined by CRDs; and the other versions kube-apiserver serves
//!   a built-in kind in by default whose conversion [`driftd_k8s::convert`] knows
//!   (autoscaling/v1 HorizontalPodAutoscalers, stored as autoscaling/v2): every verb
//!   converts the body to the stored version (defaulted in its own version first) and
//!   answers in the version asked, managedFields recorded as that version shows the
//!   object; discovery lists them after the preferred version;
//! - validation of every create, update and patch with [`driftd_k8s::validation`], the same
//!   functions `driftd commit` uses, answered in kube-apiserver's words: a body that does
//!   not decode into the kind's type is `400 BadRequest`; names by each kind's rule (RBAC
//!   names need only be path segments, so `system:aggregated-metrics-reader` is fine),
//!   namespaces, labels, annotations (256 KiB together), finalizers, ConfigMap and Secret
//!   keys and sizes are `422 Invalid` with one cause per field error;
//! - server-set metadata (uid, resourceVersion, generation, creationTimestamp, managedFields),
//!   kube-apiserver defaults ([`driftd_k8s::defaults`] for declared fields, then
//!   [`server_defaults`]: allocations, initial status), finalizers/deletionTimestamp,
//!   owner-reference garbage collection, and core/v1 + events.k8s.io/v1 Events sharing one
//!   storage;
//! - in-process controllers: Deployments (ReplicaSets and Running Pods), StatefulSets and
//!   DaemonSets (Pods, and claims from volumeClaimTemplates), Jobs (Pods that succeed, then
//!   Complete), PersistentVolumeClaims (bound at once), with status written like
//!   kube-controller-manager and the kubelet, and
//!   Events like theirs; every namespace gets the `default` ServiceAccount and the
//!   `kube-root-ca.crt` ConfigMap (the `kubernetes` Service in `default` is not created).
//!
//! - server-side apply (`application/apply-patch+yaml`): Apply managedFields, conflicts
//!   (409, worded like kube-apiserver) unless `force`, removal of fields a manager stops
//!   applying. Simplified: merging uses strategic-merge semantics (JSON merge for custom
//!   resources), set-lists are atomic, and apply is not offered on subresources.
//!
//! - custom resources stored as apiextensions-apiserver stores them: pruned and defaulted by
//!   their CRD's structural schema on every write, `set` and `map` lists with repeated items
//!   refused (422 Invalid); reading a served non-storage version returns the stored object
//!   with that apiVersion (its own schema's pruning on read is not applied);
//! - kube-apiserver's default mutating admission chain on create
//!   ([`driftd_k8s::admission`]): ServiceAccount (token volume and mounts),
//!   DefaultTolerationSeconds, Priority, DefaultStorageClass, DefaultIngressClass.
//!
//! - audit events of writes ([`audit`]), the user taken from the request's bearer token;
//! - the review APIs of delegated authentication ([`auth`]): TokenReview of the tokens it
//!   issued (`kubectl create token`: the `serviceaccounts/token` subresource) and of its
//!   kubeconfig user's token (a `system:masters` administrator), SubjectAccessReview decided
//!   by RBAC over the stored ClusterRoles, Roles and bindings.
//!
//! Not served: protobuf bodies for other kinds (415 naming the problem),
//! `fieldValidation=Strict` checks, admission webhooks and other plugins, authentication
//! and authorization of its own requests (every request is served, whatever its token),
//! pod logs/exec.
//!
//! # Fault injection
//! As a library ([`Simulator::fail_next`], [`Simulator::set_latency`], [`Simulator::compact`],
//! [`Simulator::close_watches`]) and over HTTP (JSON bodies):
//! - `POST /_sim/faults` `{"resource": "deployments"|"*", "verb": "list"?, "count": N, "code": 503}`:
//!   the next N matching requests fail with a `Status` of that code (verbs: list, watch, get,
//!   create, update, patch, delete, deletecollection; omitted = any). `DELETE /_sim/faults` clears.
//!   Note kube's client retries 429/503/504 by itself; use 500 to see one failure per fault.
//! - `POST /_sim/webhooks` `{"name", "group", "kind", "operations"?, "patch"}`: a mutating
//!   admission webhook, modelled: `patch` (strategic merge; JSON merge for custom resources)
//!   applied on CREATE/UPDATE of that kind, dry runs included (`store::webhook`). `GET` lists
//!   them, `DELETE` removes them all.
//! - `POST /_sim/latency` `{"millis": N}`: delay every API request by N ms (0 turns it off).
//! - `POST /_sim/compact`: drop the watch history; watches and continue tokens from an older
//!   resourceVersion get `410 Expired`.
//! - `POST /_sim/close-watches`: end every open watch stream (clients must re-watch).
//! - `POST /_sim/snapshot`: remember the state now (answers its `resourceVersion`);
//!   `POST /_sim/restore`: go back to it, as after an etcd restore: the objects as they were,
//!   the resourceVersion counter back at the snapshot's (lower than clients have seen), the
//!   watch history empty and every watch stream closed. The in-process controllers are not
//!   rewound.
//! - `POST /_sim/history-limit` `{"limit": N}`: how many past changes watches can resume from.
//! - `POST /_sim/audit` `{"webhookConfigFile"?, "logPath"?, "level"?, "secretsLevel"?}`: audit
//!   events of every write from now on ([`audit`]), to a webhook named by a kubeconfig file
//!   and/or appended to a JSON-lines log; levels default to `RequestResponse`, Secrets
//!   `Metadata`. `driftd sim --audit-webhook-config-file/--audit-log-path` do the same.
//! - `POST /_sim/users` `{"username", "groups"?}`: a bearer token for a new user (answered as
//!   `{"token"}`), so a kubeconfig can carry several people; their writes are audited as them.
//! - `GET /_sim/stats`: `{"resourceVersion", "openWatches", "objects", "storedBytes",
//!   "historyLength", "controllers", "watchEvents", "watchBytes", "tokenReviews",
//!   "subjectAccessReviews"}` and, after a bulk edit,
//!   `"bulkEdit"` (its report with the watch delivery measured up to now).
//!
//! # Benchmarks
//! In process, so HTTP does not limit them (also [`Simulator::bulk_load`] and
//! [`Simulator::bulk_edit`]):
//! - `POST /_sim/bulk-load` with a JSON array, a `List` or NDJSON of objects: each created in
//!   order as `kubectl create` would (server defaults, one resourceVersion and watch event
//!   each); answers `{"created", "failed", "errors", "resourceVersion", "seconds",
//!   "objectsPerSecond"}`.
//! - `POST /_sim/bulk-edit` `{"count": M, "kinds": ["configmaps", ...]?, "rate": R?}`: M
//!   modifications made by the simulator itself, cycling through existing objects; answers
//!   `{"made", "failed", "seconds", "writesPerSecond", "resourceVersion",
//!   "watchEventsDelivered", "deliverySeconds", "deliveryEventsPerSecond"}`, the delivery
//!   counting watch events written to every open stream since the edit started.
//!
//! [`SimOptions::controllers`] `false` runs no controller at all, for pure-load benchmarks.

pub mod audit;
pub mod auth;
mod controller;
mod discovery;
mod events;
pub mod fields;
mod http;
pub mod mix;
mod openapi;
mod proto;

pub mod server_defaults;
pub mod smp;
pub mod status;
pub mod store;
mod table;
pub mod testing;
mod tls;

pub use http::admin::{BulkEditOutcome, DeliveryStats};
pub use http::Fault;
pub use store::bulk::{BulkEdit, BulkEditReport, BulkLoadReport};

use base64::Engine as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Tunables; `Default` suits tests and demos.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Past changes kept for watches to resume from (older resourceVersions get 410).
    pub history_limit: usize,
    /// How often watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Run the in-process controllers (workloads, namespaces' system objects, claim
    /// binding); off for pure-load benchmarks, where the store then does only what requests
    /// ask.
    pub controllers: bool,
    /// Serve HTTPS with a self-signed certificate (the kubeconfig trusts it), so kubectl
    /// sends its users' bearer tokens, which it does not over plain HTTP.
    pub tls: bool,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            history_limit: 10_000,
            bookmark_interval: Duration::from_secs(5),
            controllers: true,
            tls: false,
        }
    }
}

/// A running simulator. Dropping it stops the server.
pub struct Simulator {
    addr: SocketAddr,
    app: Arc<http::App>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    stop: tokio::sync::watch::Sender<bool>,
    /// The certificate served, with `SimOptions::tls`.
    cert_pem: Option<String>,
}

impl Drop for Simulator {
    fn drop(&mut self) {
        // Stop accepting, end watch streams so in-flight connections finish, stop controllers.
        let _ = self.stop.send(true);
        self.app.store.close_watches();
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Simulator {
    /// Binds `listen` (port 0 picks a free port) and starts serving.
    pub async fn start(listen: SocketAddr) -> std::io::Result<Simulator> {
        Simulator::start_with(listen, SimOptions::default()).await
    }

    /// Like [`Simulator::start`] with explicit options.
    pub async fn start_with(listen: SocketAddr, opts: SimOptions) -> std::io::Result<Simulator> {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let app = Arc::new(http::App {
            store: store::Store::new(opts.history_limit),
            faults: Mutex::new(Vec::new()),
            latency: Mutex::new(Duration::ZERO),
            bookmark_interval: opts.bookmark_interval,
            open_watches: Default::default(),
            addr: addr.to_string(),
            delivery: Default::default(),
            last_edit: Default::default(),
            controllers: opts.controllers,
            snapshot: Mutex::new(None),
            kubelet: Default::default(),
            auth: auth::Auth::default(),
            audit: audit::Auditor::default(),
        });
        // The controllers' queue starts here, so nothing the server accepts escapes them.
        let controller_feed = opts.controllers.then(|| {
            controller::seed(&app.store);
            app.store.feed(controller::wanted)
        });
        // No body limit: `/_sim/bulk-load` takes the whole load in one request.
        let router = axum::Router::new()
            .fallback(http::handle)
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(app.clone());
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let tls = match opts.tls {
            true => Some(tls::Tls::new()?),
            false => None,
        };
        let cert_pem = tls.as_ref().map(|t| t.cert_pem.clone());
        tokio::spawn(async move {
            if let Some(tls) = tls {
                return tls::serve(listener, router, &tls, stopped).await;
            }
            let shutdown = async move {
                let _ = stopped.changed().await;
            };
            // The peer address is each audit event's `sourceIPs`.
            let service = router.into_make_service_with_connect_info::<SocketAddr>();
            if let Err(e) = axum::serve(listener, service)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::error!(error = %e, "simulator server stopped");
            }
        });
        let mut tasks = Vec::new();
        if let Some(feed) = controller_feed {
            tasks.push(tokio::spawn(controller::run(
                app.store.clone(),
                feed,
                app.kubelet.clone(),
            )));
        }
        tracing::info!(%addr, "simulator listening");
        Ok(Simulator {
            addr,
            app,
            tasks,
            stop,
            cert_pem,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` (`https` with `SimOptions::tls`).
    pub fn url(&self) -> String {
        let scheme = if self.cert_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// A kubeconfig (YAML) whose current context points at this simulator.
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: driftd-sim
  cluster:
    server: {url}{ca}
contexts:
- name: driftd-sim
  context:
    cluster: driftd-sim
    user: driftd-sim
    namespace: default
current-context: driftd-sim
users:
- name: driftd-sim
  user:
    token: {token}
preferences: {{}}
",
            url = self.url(),
            ca = match &self.cert_pem {
                Some(pem) => format!(
                    "\n    certificate-authority-data: {}",
                    base64::engine::general_purpose::STANDARD.encode(pem)
                ),
                None => String::new(),
            },
            token = self.app.auth.tokens.admin_token(),
        )
    }

    /// Writes the kubeconfig atomically (write to temp, rename) so watchers of the path
    /// never read half a file.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{file}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, self.kubeconfig_yaml())?;
        std::fs::rename(&tmp, path)
    }

    /// Direct access to storage (bypasses faults and latency), for tests and the demo.
    pub fn store(&self) -> &store::Store {
        &self.app.store
    }

    /// Fails the next `count` requests for `resource` (plural or `*`), any verb, with `code`.
    pub fn fail_next(&self, resource: &str, count: u32, code: u16) {
        self.add_fault(Fault {
            resource: resource.into(),
            verb: None,
            count,
            code,
        });
    }

    pub fn add_fault(&self, fault: Fault) {
        if fault.count > 0 {
            self.app
                .faults
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(fault);
        }
    }

    /// Delays every API request by `latency`.
    pub fn set_latency(&self, latency: Duration) {
        *self.app.latency.lock().unwrap_or_else(|e| e.into_inner()) = latency;
    }

    /// Drops watch history: resuming from any resourceVersion before now gets 410 Expired.
    pub fn compact(&self) {
        self.app.store.compact();
    }

    /// Ends every open watch stream.
    pub fn close_watches(&self) {
        self.app.store.close_watches();
    }

    /// Watch streams currently open (tests wait on this instead of sleeping).
    pub fn open_watches(&self) -> usize {
        self.app.open_watches.load(Ordering::SeqCst)
    }

    /// Creates `objects` in order as `kubectl create` would (server defaults, one
    /// resourceVersion and one watch event each), without HTTP. Blocking: from async code,
    /// call it on a blocking thread. Same as `POST /_sim/bulk-load`.
    pub fn bulk_load(
        &self,
        objects: impl IntoIterator<Item = serde_json::Value>,
    ) -> BulkLoadReport {
        self.app.store.bulk_load(objects)
    }

    /// Makes `spec.count` modifications itself and reports them with the watch delivery
    /// measured until it returns. Blocking, as [`Simulator::bulk_load`]. Same as
    /// `POST /_sim/bulk-edit`.
    pub fn bulk_edit(&self, spec: &BulkEdit) -> Result<BulkEditOutcome, status::ApiError> {
        http::admin::bulk_edit(&self.app, spec)
    }

    /// Sends audit events of writes as `options` say (same as `POST /_sim/audit`). Errors
    /// name the webhook config file.
    pub fn set_audit(&self, options: &audit::AuditOptions) -> Result<(), String> {
        self.app.audit.configure(options)
    }

    /// A bearer token for a new user `username` in `groups` (same as `POST /_sim/users`).
    pub fn add_user(&self, username: &str, groups: Vec<String>) -> String {
        self.app.auth.tokens.add_user(username, groups)
    }

    /// What `GET /_sim/stats` answers.
    pub fn stats(&self) -> serde_json::Value {
        http::admin::stats(&self.app)
    }
}
