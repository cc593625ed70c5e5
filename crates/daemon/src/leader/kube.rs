//! The election's Lease through the Kubernetes API, as client-go's `LeaseLock` keeps it:
//! the record in the spec, writes replacing the whole object at the `resourceVersion` last
//! read (so a concurrent writer makes them fail with 409), the object's metadata (labels,
//! annotations) kept as last read.

use super::election::{LeaseApi, LeaseError, LeaseRecord, Versioned};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::PostParams;
use kube::Api;
use std::sync::Mutex;

/// The Lease `name` in one namespace.
pub struct KubeLease {
    api: Api<Lease>,
    namespace: String,
    name: String,
    /// The object last read or written, whose metadata writes keep.
    last: Mutex<Option<Lease>>,
}

impl KubeLease {
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> KubeLease {
        KubeLease {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_string(),
            name: name.to_string(),
            last: Mutex::new(None),
        }
    }

    /// Keeps `lease` as the last object seen; returns its version.
    fn remember(&self, lease: Lease) -> Versioned {
        let versioned = Versioned {
            record: record_of(&lease),
            resource_version: lease.metadata.resource_version.clone().unwrap_or_default(),
        };
        *self.last.lock().unwrap() = Some(lease);
        versioned
    }
}

/// `record` as the Lease `name` to write: at `resource_version` on the metadata of `last`
/// (an update), or fresh (a create, `None`).
fn lease_object(
    name: &str,
    last: Option<&Lease>,
    record: &LeaseRecord,
    resource_version: Option<&str>,
) -> Lease {
    let metadata = match (resource_version, last) {
        (Some(version), Some(last)) => ObjectMeta {
            resource_version: Some(version.to_string()),
            ..last.metadata.clone()
        },
        (version, _) => ObjectMeta {
            name: Some(name.to_string()),
            resource_version: version.map(str::to_string),
            ..ObjectMeta::default()
        },
    };
    Lease {
        metadata,
        spec: Some(LeaseSpec {
            holder_identity: Some(record.holder.clone()),
            lease_duration_seconds: Some(record.lease_duration_seconds),
            acquire_time: record.acquire_time.map(MicroTime),
            renew_time: record.renew_time.map(MicroTime),
            lease_transitions: Some(record.transitions),
            ..LeaseSpec::default()
        }),
    }
}

fn record_of(lease: &Lease) -> LeaseRecord {
    let spec = lease.spec.clone().unwrap_or_default();
    LeaseRecord {
        holder: spec.holder_identity.unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
        acquire_time: spec.acquire_time.map(|t| t.0),
        renew_time: spec.renew_time.map(|t| t.0),
        transitions: spec.lease_transitions.unwrap_or(0),
    }
}

/// 409s as the races they are; everything else as it came.
fn classify(err: kube::Error) -> LeaseError {
    match &err {
        kube::Error::Api(status) if status.is_already_exists() => LeaseError::AlreadyExists,
        kube::Error::Api(status) if status.is_conflict() => LeaseError::Conflict,
        _ => LeaseError::Api(err),
    }
}

impl LeaseApi for KubeLease {
    async fn get(&self) -> Result<Option<Versioned>, LeaseError> {
        match self.api.get_opt(&self.name).await.map_err(classify)? {
            Some(lease) => Ok(Some(self.remember(lease))),
            None => Ok(None),
        }
    }

    async fn create(&self, record: &LeaseRecord) -> Result<String, LeaseError> {
        let lease = lease_object(&self.name, None, record, None);
        let created = match self.api.create(&PostParams::default(), &lease).await {
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                return Err(LeaseError::NoNamespace(self.namespace.clone()))
            }
            result => result.map_err(classify)?,
        };
        Ok(self.remember(created).resource_version)
    }

    async fn update(
        &self,
        record: &LeaseRecord,
        resource_version: &str,
    ) -> Result<String, LeaseError> {
        let last = self.last.lock().unwrap().clone();
        let lease = lease_object(&self.name, last.as_ref(), record, Some(resource_version));
        let replaced = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map_err(classify)?;
        Ok(self.remember(replaced).resource_version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> LeaseRecord {
        LeaseRecord {
            holder: "driftd-0".into(),
            lease_duration_seconds: 15,
            acquire_time: Some("2026-01-01T00:00:00.123456Z".parse().unwrap()),
            renew_time: Some("2026-01-01T00:00:02.5Z".parse().unwrap()),
            transitions: 3,
        }
    }

    #[test]
    fn the_record_round_trips_through_the_lease_spec_at_microsecond_precision() {
        let lease = lease_object("driftd", None, &record(), None);
        let json = serde_json::to_value(&lease).unwrap();
        assert_eq!(json["metadata"], serde_json::json!({"name": "driftd"}));
        assert_eq!(json["spec"]["renewTime"], "2026-01-01T00:00:02.500000Z");
        assert_eq!(json["spec"]["holderIdentity"], "driftd-0");
        let back: Lease = serde_json::from_value(json).unwrap();
        assert_eq!(record_of(&back), record());
    }

    #[test]
    fn updates_carry_the_version_read_and_keep_the_metadata() {
        let mut last = lease_object("driftd", None, &record(), Some("41"));
        last.metadata.labels = Some([("team".to_string(), "platform".to_string())].into());
        let released = LeaseRecord {
            holder: String::new(),
            ..record()
        };
        let lease = lease_object("driftd", Some(&last), &released, Some("42"));
        assert_eq!(lease.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(lease.metadata.labels, last.metadata.labels);
        // A released Lease names nobody, explicitly (as client-go writes it).
        let json = serde_json::to_value(&lease).unwrap();
        assert_eq!(json["spec"]["holderIdentity"], "");
    }
}
