//! The lock holders the CLI looks up in the cluster: an explicit `--holder pod:NS/NAME` at
//! `intent begin` and `run` (a pod that does not exist is refused: a typo would make a lock
//! nobody can ever be shown to have abandoned), and the holder pods of `driftd locks
//! --cluster`.

use driftd_store::holder_pod;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::Api;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// How long a look-up may take before the CLI goes on without its answer.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(10);

fn pods() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Pod"))
}

/// Refuses `holder` when it is a pod (`pod:NAMESPACE/NAME`) that does not exist or has
/// finished. When the cluster cannot tell (no kubeconfig, no right to read pods, no
/// answer), says so on stderr and lets the caller go on: the daemon then judges the lock by
/// its TTL until it has seen the pod run.
pub async fn check_pod(holder: &str) -> anyhow::Result<()> {
    let Some((namespace, name)) = holder_pod(holder) else {
        return Ok(());
    };
    let unchecked = |why: &str| {
        eprintln!(
            "warning: holder pod {namespace}/{name} not checked ({why}); driftd serve judges \
             the lock by its TTL until it has seen that pod run"
        );
        Ok(())
    };
    let client = match tokio::time::timeout(LOOKUP_TIMEOUT, kube::Client::try_default()).await {
        Ok(Ok(client)) => client,
        Ok(Err(err)) => return unchecked(&format!("no connection to Kubernetes: {err}")),
        Err(_) => return unchecked("no connection to Kubernetes in time"),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client, namespace, &pods());
    let pod = match tokio::time::timeout(LOOKUP_TIMEOUT, api.get_opt(name)).await {
        Ok(Ok(pod)) => pod,
        Ok(Err(kube::Error::Api(s))) if s.code == 403 => {
            return unchecked("Kubernetes does not let this user get pods there")
        }
        Ok(Err(err)) => return unchecked(&err.to_string()),
        Err(_) => return unchecked("Kubernetes did not answer in time"),
    };
    let Some(pod) = pod else {
        anyhow::bail!(
            "holder pod {namespace}/{name} does not exist: a lock is held by the pod that \
             deploys (in a pod, leave --holder out: it defaults to $POD_NAMESPACE/$POD_NAME), \
             so that driftd can tell when it is gone; check --holder"
        );
    };
    let phase = pod.data.pointer("/status/phase").and_then(Value::as_str);
    if let Some(phase @ ("Succeeded" | "Failed")) = phase {
        anyhow::bail!(
            "holder pod {namespace}/{name} has finished (phase {phase}): it cannot hold a lock; \
             check --holder"
        );
    }
    Ok(())
}

/// Every pod named as each of `names`, in any namespace (a `metadata.name` field selector,
/// as `serve` watches them); `None` with the reason when they cannot be listed.
pub async fn list_named(
    client: kube::Client,
    names: &BTreeSet<String>,
) -> Result<BTreeMap<String, Vec<Value>>, String> {
    let api: Api<DynamicObject> = Api::all_with(client, &pods());
    let mut found = BTreeMap::new();
    for name in names {
        let params = ListParams::default().fields(&format!("metadata.name={name}"));
        let listed = match tokio::time::timeout(LOOKUP_TIMEOUT, api.list(&params)).await {
            Ok(Ok(list)) => list,
            Ok(Err(kube::Error::Api(s))) if s.code == 403 => {
                return Err("Kubernetes does not let this user list pods".into())
            }
            Ok(Err(err)) => return Err(err.to_string()),
            Err(_) => return Err("Kubernetes did not answer in time".into()),
        };
        let pods = listed
            .items
            .into_iter()
            .filter_map(|pod| serde_json::to_value(pod).ok())
            .map(|mut pod| {
                // Listed items carry no kind; the judgement does not need it, Events would.
                pod["apiVersion"] = "v1".into();
                pod["kind"] = "Pod".into();
                pod
            })
            .collect();
        found.insert(name.clone(), pods);
    }
    Ok(found)
}
