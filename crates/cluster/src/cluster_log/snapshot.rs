//! The cluster log read once, for the CLI's `--cluster` listings (`driftd intent list`,
//! `driftd locks`): every record imported, in the log's order, into a database in memory
//! by the importer `serve` runs. That is what a replica starting now would hold, so the
//! listings show the states, columns and refusals of their `--db` forms without any
//! database file.

use super::format::{name_of, SELECTOR};
use super::importer;
use super::writer::LogError;
use driftd_store::Store;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};

/// The cluster log of `namespace`, imported into a new database in memory.
pub async fn snapshot(client: kube::Client, namespace: &str) -> Result<Store, LogError> {
    let api: Api<Secret> = Api::namespaced(client, namespace);
    let params = ListParams::default().labels(SELECTOR);
    let listed = api.list(&params).await.map_err(|err| match err {
        kube::Error::Api(s) if s.code == 403 => LogError::Forbidden {
            namespace: namespace.to_string(),
            message: s.message.clone(),
        },
        other => LogError::Api(other),
    })?;
    let objects = listed
        .items
        .into_iter()
        .map(|s| (name_of(&s).to_string(), (0, s)))
        .collect();
    Ok(importer::import_once(Store::open_in_memory()?, &objects))
}
