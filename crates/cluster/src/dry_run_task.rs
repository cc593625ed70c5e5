//! The server-side dry-run task (`compare = "dry-run"` sources): takes the engine's
//! requests, asks the API server what it would store for each committed manifest (a
//! server-side apply with `dryRun=All`, field manager `driftd`), at most
//! `dry_run.max_per_second` a second, and hands the answers back. The engine keeps no
//! client: this is the only place dry runs touch the network.
//!
//! `force=true`: on a dry run it only means a field another manager owns is shown with the
//! manifest's value instead of the request failing with 409, which is what comparing
//! needs (the field differing live is the drift to report). Nothing is written either way.

use driftd_engine::{DryRunAnswer, DryRunOutcome, DryRunRequest};
use driftd_export::metrics::Metrics;
use driftd_k8s::TypeKey;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::Scope;
use kube::Client;
use prometheus::{IntCounterVec, Opts};
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;

/// The field manager of driftd's dry runs.
pub const FIELD_MANAGER: &str = "driftd";

/// Starts the task: requests in, answers out. It ends when the engine drops its sender.
pub fn spawn(
    client: Client,
    max_per_second: f64,
    metrics: &Metrics,
) -> (
    mpsc::UnboundedSender<DryRunRequest>,
    mpsc::UnboundedReceiver<DryRunAnswer>,
) {
    let counter = IntCounterVec::new(
        Opts::new(
            "driftd_dry_runs_total",
            "Server-side dry runs of compare = \"dry-run\" sources, by outcome (expected, rejected, error).",
        ),
        &["outcome"],
    )
    .expect("valid metric");
    metrics.register(Box::new(counter.clone()));
    let (requests, mut inbox) = mpsc::unbounded_channel::<DryRunRequest>();
    let (answers, outbox) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut pace = tokio::time::interval(Duration::from_secs_f64(1.0 / max_per_second));
        pace.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut resources: HashMap<TypeKey, (ApiResource, Scope)> = HashMap::new();
        while let Some(request) = inbox.recv().await {
            pace.tick().await;
            let outcome = dry_run(&client, &mut resources, &request).await;
            let label = match &outcome {
                DryRunOutcome::Expected(_) => "expected",
                DryRunOutcome::Rejected(_) => "rejected",
                DryRunOutcome::Failed(_) => "error",
            };
            counter.with_label_values(&[label]).inc();
            let answer = DryRunAnswer {
                key: request.key,
                revision: request.revision,
                outcome,
            };
            if answers.send(answer).is_err() {
                return;
            }
        }
    });
    (requests, outbox)
}

/// One dry run. A status the server answers with for the request itself (4xx but 408 and
/// 429) is a rejection of the manifest; anything else (discovery, network, 5xx, throttling)
/// is a failure to ask.
async fn dry_run(
    client: &Client,
    resources: &mut HashMap<TypeKey, (ApiResource, Scope)>,
    request: &DryRunRequest,
) -> DryRunOutcome {
    let (resource, scope) = match resources.get(&request.kind) {
        Some(found) => found.clone(),
        None => {
            let (group, version) = driftd_k8s::kinds::split_api_version(&request.kind.api_version);
            let gvk = GroupVersionKind::gvk(group, version, &request.kind.kind);
            match kube::discovery::pinned_kind(client, &gvk).await {
                Ok((resource, caps)) => {
                    let found = (resource, caps.scope);
                    resources.insert(request.kind.clone(), found.clone());
                    found
                }
                Err(err) => {
                    return DryRunOutcome::Failed(format!("cannot resolve {}: {err}", request.kind))
                }
            }
        }
    };
    let api: Api<DynamicObject> = match (&scope, &request.key.namespace) {
        (Scope::Namespaced, Some(ns)) => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    let params = PatchParams::apply(FIELD_MANAGER).force().dry_run();
    match api
        .patch(&request.key.name, &params, &Patch::Apply(&request.manifest))
        .await
    {
        Ok(object) => DryRunOutcome::Expected(crate::apply::with_type(object, &resource)),
        Err(kube::Error::Api(status))
            if (400..500).contains(&status.code) && status.code != 408 && status.code != 429 =>
        {
            DryRunOutcome::Rejected(status.message.clone())
        }
        Err(err) => DryRunOutcome::Failed(err.to_string()),
    }
}
