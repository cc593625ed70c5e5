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

fn ips_and_ports(svc: &Value) -> (Vec<&str>, Vec<u16>) {
    let ips = svc
        .pointer("/spec/clusterIPs")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let ports = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| p.get("nodePort")?.as_u64())
                .filter_map(|p| u16::try_from(p).ok())
                .collect()
        })
        .unwrap_or_default();
    (ips, ports)
}

impl Held {
    pub fn add(&mut self, svc: &Value) {
        let (ips, ports) = ips_and_ports(svc);
        for ip in ips {
            *self.ips.entry(ip.to_string()).or_default() += 1;
        }
        for p in ports {
            *self.ports.entry(p).or_default() += 1;
        }
    }

    /// Whether a stored Service holds `ip`.
    #[cfg(test)]
    pub fn holds_ip(&self, ip: &str) -> bool {
        self.ips.contains_key(ip)
    }

    pub fn remove(&mut self, svc: &Value) {
        let (ips, ports) = ips_and_ports(svc);
        for ip in ips {
            if let Some(n) = self.ips.get_mut(ip) {
                *n -= 1;
                if *n == 0 {
                    self.ips.remove(ip);
                }
            }
        }
        for p in ports {
            if let Some(n) = self.ports.get_mut(&p) {
                *n -= 1;
                if *n == 0 {
                    self.ports.remove(&p);
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
