//! The store taken back to an earlier snapshot, as after an etcd restore from a backup: every
//! object as it was then, the resourceVersion counter back at the snapshot's (lower than
//! what clients have seen), the watch history empty, and every watch stream closed (the API
//! servers restart on the restored etcd). A client that resumes a watch from its last
//! resourceVersion is then ahead of the server: kube-apiserver accepts such a watch and
//! sends nothing until the server gets there, so the changes in between are never sent.
//!
//! The in-process controllers are not rewound; tests use this for the objects driftd
//! compares, not for workloads' rollouts.

use super::alloc::Held;
use super::{Inner, Kind, Store};
use driftd_k8s::kinds::ResourceType;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Everything a restore puts back (the history is not part of it: it starts over).
pub struct Snapshot {
    types: Arc<Vec<ResourceType>>,
    crd_schemas: HashMap<(String, String), Arc<driftd_k8s::crd::CrdSchemas>>,
    kinds: HashMap<String, HashMap<String, Kind>>,
    rv: u64,
    dependents: HashMap<Box<str>, BTreeSet<(Arc<super::StorageKey>, super::Key)>>,
    services: Held,
    versions: HashMap<String, Arc<str>>,
    count: usize,
    bytes: usize,
}

impl Snapshot {
    /// The resourceVersion the store goes back to.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    fn of(g: &Inner) -> Snapshot {
        Snapshot {
            types: g.types.clone(),
            crd_schemas: g.crd_schemas.clone(),
            kinds: g.kinds.clone(),
            rv: g.rv,
            dependents: g.dependents.clone(),
            services: g.services.clone(),
            versions: g.versions.clone(),
            count: g.count,
            bytes: g.bytes,
        }
    }
}

impl Store {
    /// The state now (objects share their bytes with the store: cheap).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(&self.lock())
    }

    /// Puts `snapshot` back and closes every watch; returns the resourceVersion now current.
    pub fn restore(&self, snapshot: &Snapshot) -> u64 {
        {
            let mut g = self.lock();
            g.types = snapshot.types.clone();
            g.crd_schemas = snapshot.crd_schemas.clone();
            g.kinds = snapshot.kinds.clone();
            g.rv = snapshot.rv;
            g.dependents = snapshot.dependents.clone();
            g.services = snapshot.services.clone();
            g.versions = snapshot.versions.clone();
            g.count = snapshot.count;
            g.bytes = snapshot.bytes;
            g.history.restart_at(snapshot.rv);
        }
        self.close_watches();
        snapshot.rv
    }
}
