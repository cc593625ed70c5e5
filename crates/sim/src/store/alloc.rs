//! ClusterIPs and NodePorts handed out at random among those no Service holds yet, as
//! kube-apiserver's allocators do. What Services hold is kept as counts updated on every
//! Service write, so allocating does not look at every Service.

use super::super::server_defaults;
use super::new_uid;
use rand::Rng;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The addresses and ports stored Services hold (counted: a user may set one twice).
#[derive(Default, Clone)]
pub struct Held {
    ips: HashMap<String, u32>,
    ports: HashMap<u16, u32>,
}

/// The addresses and ports one Service holds.
#[derive(Debug, Default, PartialEq)]
pub struct Holds {
    ips: Vec<String>,
    ports: Vec<u16>,
}

impl Holds {
    /// What the Service `svc` holds.
    pub fn of(svc: &Value) -> Holds {
        let spec = svc.get("spec");
        let field = |name| spec.and_then(|s| s.get(name));
        Holds::in_spec(field("clusterIPs"), field("ports"))
    }

    /// What the Service stored as `json` holds, read without building the rest of its
    /// tree: every Service write counts what the old and the new version hold, and two
    /// whole parses per write were 39% of the simulator's CPU during a bulk edit
    ///. Reads the same values as [`Holds::of`].
    pub fn of_json(json: &[u8]) -> Holds {
        #[derive(serde::Deserialize)]
        struct Service {
            spec: Option<Spec>,
        }
        #[derive(serde::Deserialize)]
        struct Spec {
            #[serde(rename = "clusterIPs")]
            cluster_ips: Option<Value>,
            ports: Option<Value>,
        }
        // A `spec` that is not an object holds nothing, as with `of`.
        match serde_json::from_slice::<Service>(json) {
            Ok(Service { spec: Some(spec) }) => {
                Holds::in_spec(spec.cluster_ips.as_ref(), spec.ports.as_ref())
            }
            _ => Holds::default(),
        }
    }

    /// What a Service whose `spec` has these `clusterIPs` and `ports` holds.
    fn in_spec(cluster_ips: Option<&Value>, ports: Option<&Value>) -> Holds {
        let ips = cluster_ips
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let ports = ports
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|p| node_port(p.get("nodePort")?))
                    .collect()
            })
            .unwrap_or_default();
        Holds { ips, ports }
    }
}

fn node_port(port: &Value) -> Option<u16> {
    u16::try_from(port.as_u64()?).ok()
}

impl Held {
    pub fn add(&mut self, holds: &Holds) {
        for ip in &holds.ips {
            *self.ips.entry(ip.clone()).or_default() += 1;
        }
        for p in &holds.ports {
            *self.ports.entry(*p).or_default() += 1;
        }
    }

    /// Whether a stored Service holds `ip`.
    #[cfg(test)]
    pub fn holds_ip(&self, ip: &str) -> bool {
        self.ips.contains_key(ip)
    }

    pub fn remove(&mut self, holds: &Holds) {
        for ip in &holds.ips {
            if let Some(n) = self.ips.get_mut(ip) {
                *n -= 1;
                if *n == 0 {
                    self.ips.remove(ip);
                }
            }
        }
        for p in &holds.ports {
            if let Some(n) = self.ports.get_mut(p) {
                *n -= 1;
                if *n == 0 {
                    self.ports.remove(p);
                }
            }
        }
    }
}

/// One write's allocator: what Services hold plus what this write took so far.
pub struct Allocations<'a> {
    held: &'a Held,
    ips: HashSet<String>,
    ports: HashSet<u16>,
}

impl Allocations<'_> {
    pub fn of(held: &Held) -> Allocations<'_> {
        Allocations {
            held,
            ips: HashSet::new(),
            ports: HashSet::new(),
        }
    }
}

impl server_defaults::Allocator for Allocations<'_> {
    fn cluster_ip(&mut self) -> Option<String> {
        // 10.96.0.0/12, skipping .0 and the first address (kubernetes.default).
        let mut r = rand::rng();
        for _ in 0..10_000 {
            let off: u32 = r.random_range(2..server_defaults::SERVICE_CIDR_SIZE - 1);
            let ip =
                std::net::Ipv4Addr::from(server_defaults::SERVICE_CIDR_FIRST + off).to_string();
            if !self.held.ips.contains_key(&ip) && self.ips.insert(ip.clone()) {
                return Some(ip);
            }
        }
        None
    }
    fn node_port(&mut self) -> Option<u16> {
        let mut r = rand::rng();
        for _ in 0..10_000 {
            let p: u16 =
                r.random_range(server_defaults::NODE_PORT_MIN..=server_defaults::NODE_PORT_MAX);
            if !self.held.ports.contains_key(&p) && self.ports.insert(p) {
                return Some(p);
            }
        }
        None
    }
    fn uid(&mut self) -> String {
        new_uid()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The partial read of the stored bytes finds what the tree read finds, whatever shape
    /// the fields have.
    #[test]
    fn stored_bytes_hold_what_the_tree_holds() {
        let shapes = [
            json!({"spec": {"clusterIPs": ["10.96.0.7", "fd00::7"], "ports": [
                {"port": 80, "nodePort": 30080}, {"port": 81}, {"nodePort": 70000},
                {"nodePort": "30001"}, {"nodePort": 30002, "name": "b"}]}}),
            json!({"metadata": {"name": "a"}, "spec": {"type": "ClusterIP", "clusterIPs": ["10.96.0.8"]}}),
            json!({"spec": {"clusterIPs": null, "ports": null}}),
            json!({"spec": {"clusterIPs": "10.96.0.9", "ports": {"nodePort": 30003}}}),
            json!({"spec": {"clusterIPs": [1, "10.96.0.10", null]}}),
            json!({"spec": null}),
            json!({"spec": ["clusterIPs"]}),
            json!({"spec": "text"}),
            json!({"kind": "Service"}),
        ];
        for svc in shapes {
            let bytes = serde_json::to_vec(&svc).unwrap();
            assert_eq!(Holds::of_json(&bytes), Holds::of(&svc), "{svc}");
        }
        let first = Holds::of(
            &json!({"spec": {"clusterIPs": ["10.96.0.7"], "ports": [{"nodePort": 30080}]}}),
        );
        assert_eq!(first.ips, ["10.96.0.7"]);
        assert_eq!(first.ports, [30080]);
    }

    #[test]
    fn held_counts_each_holder() {
        let svc = Holds::of(
            &json!({"spec": {"clusterIPs": ["10.96.0.7"], "ports": [{"nodePort": 30080}]}}),
        );
        let mut held = Held::default();
        held.add(&svc);
        held.add(&svc);
        held.remove(&svc);
        assert!(held.holds_ip("10.96.0.7"), "one holder left");
        assert_eq!(held.ports.get(&30080), Some(&1));
        held.remove(&svc);
        assert!(!held.holds_ip("10.96.0.7"));
        assert!(held.ports.is_empty());
    }
}
