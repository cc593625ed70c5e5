//! Generated objects for the property tests, built from `k8s-openapi` types: Deployments,
//! Services, ConfigMaps and Pods with quantities in several spellings, ports, volumes,
//! probes, IntOrString values and images with and without tags.
//!
//! Each [`Case`] carries three forms of one object: `desired` (the manifest as written),
//! `defaulted` (the manifest with kube-apiserver's defaults, in manifest order) and `live`
//! (`defaulted` as the server returns it: metadata, status and allocations added, keyed
//! lists in another order, zero values omitted), made by `server`.

use super::oracle::{Perms, Quantity as Qty};
use super::server::{apply_defaults, live_form};
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One generated object in its three forms, and how `live` reordered the keyed lists.
#[derive(Debug, Clone)]
pub struct Case {
    pub kind: &'static str,
    pub desired: Value,
    pub defaulted: Value,
    pub live: Value,
    pub perms: Perms,
    /// Chooses the live order of keyed lists and the server's identifiers.
    pub salt: u64,
}

/// A quantity as the generator wrote it: its spelling in the manifest (sometimes a JSON
/// number) and the amount (canonical spelling computed by `oracle::Quantity`).
#[derive(Debug, Clone)]
struct Spelled {
    desired: Value,
    amount: Qty,
}

/// Quantities are generated as placeholders (`__q<N>__`) in the typed objects and replaced
/// in their JSON: the manifest gets the spelling, the server forms the canonical value.
#[derive(Debug, Clone, Default)]
struct Quantities(Vec<Spelled>);

fn cpu() -> impl Strategy<Value = Spelled> {
    (
        prop::sample::select(vec![100i64, 250, 500, 1000, 1500, 2000]),
        0..3u8,
    )
        .prop_map(|(milli, style)| {
            let amount = Qty::decimal_milli(milli);
            let desired = match style {
                0 => json!(format!("{milli}m")),
                1 if milli % 1000 == 0 => json!(milli / 1000),
                _ => json!(amount.decimal_text()),
            };
            Spelled { desired, amount }
        })
}

fn memory() -> impl Strategy<Value = Spelled> {
    (
        prop::sample::select(vec![64i64, 128, 256, 512, 1024, 1536, 2048]),
        0..3u8,
    )
        .prop_map(|(mi, style)| {
            let bytes = mi * 1024 * 1024;
            match style {
                0 => Spelled {
                    desired: json!(format!("{mi}Mi")),
                    amount: Qty::binary_bytes(bytes),
                },
                1 if mi % 512 == 0 => Spelled {
                    desired: json!(format!("{}Gi", mi as f64 / 1024.0)),
                    amount: Qty::binary_bytes(bytes),
                },
                _ => Spelled {
                    desired: json!(bytes.to_string()),
                    amount: Qty::decimal_milli(bytes * 1000),
                },
            }
        })
}

fn resources() -> impl Strategy<Value = (Option<Spelled>, Option<Spelled>, Option<Spelled>)> {
    (
        prop::option::of(cpu()),
        prop::option::of(memory()),
        prop::option::of(cpu()),
    )
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,5}"
}

/// Images with a tag, `:latest`, no tag, a digest, and a registry with a port.
fn image() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", "registry.example.com/", "localhost:5000/"]),
        "[a-z]{1,6}",
        prop_oneof![
            Just(String::new()),
            Just(":latest".to_string()),
            "[0-9]\\.[0-9]{1,2}".prop_map(|t| format!(":{t}")),
            "[0-9a-f]{64}".prop_map(|d| format!("@sha256:{d}")),
        ],
    )
        .prop_map(|(host, repo, suffix)| format!("{host}{repo}{suffix}"))
}

fn int_or_string() -> impl Strategy<Value = IntOrString> {
    prop_oneof![
        (1..65535i32).prop_map(IntOrString::Int),
        "[a-z]{1,6}".prop_map(IntOrString::String),
    ]
}

fn probe() -> impl Strategy<Value = core::Probe> {
    (
        prop_oneof![
            (
                prop::option::of("/[a-z]{0,6}"),
                int_or_string(),
                prop::option::of(prop::sample::select(vec!["HTTP", "HTTPS"]))
            )
                .prop_map(|(path, port, scheme)| core::Probe {
                    http_get: Some(core::HTTPGetAction {
                        path,
                        port,
                        scheme: scheme.map(str::to_string),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
            int_or_string().prop_map(|port| core::Probe {
                tcp_socket: Some(core::TCPSocketAction {
                    port,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            prop::collection::vec("[a-z]{1,5}", 1..3).prop_map(|command| core::Probe {
                exec: Some(core::ExecAction {
                    command: Some(command)
                }),
                ..Default::default()
            }),
        ],
        prop::option::of(1..30i32),
        prop::option::of(1..10i32),
    )
        .prop_map(|(mut p, period, failure)| {
            p.period_seconds = period;
            p.failure_threshold = failure;
            p
        })
}

fn env() -> impl Strategy<Value = BTreeMap<String, Option<String>>> {
    prop::collection::btree_map("[A-Z][A-Z_]{0,5}", prop::option::of("[a-z0-9]{0,6}"), 0..4)
}

/// A container and the quantities it holds (placeholders refer to `qs`).
fn container() -> impl Strategy<Value = (core::Container, Vec<Spelled>)> {
    (
        (
            image(),
            prop::option::of(prop::sample::select(vec![
                "Always",
                "IfNotPresent",
                "Never",
            ])),
            env(),
            prop::collection::vec("--[a-z]{1,5}", 0..3),
            prop::collection::btree_map(
                1..65535i32,
                (
                    prop::option::of("[a-z]{1,6}"),
                    prop::option::of(prop::sample::select(vec!["TCP", "UDP"])),
                ),
                0..3,
            ),
        ),
        (
            resources(),
            prop::option::of(probe()),
            prop::option::of(probe()),
            prop::collection::btree_map("/[a-z]{1,6}", prop::option::of(any::<bool>()), 0..3),
        ),
    )
        .prop_map(
            |((image, policy, env, args, ports), (res, readiness, liveness, mounts))| {
                let mut qs = Vec::new();
                let mut q = |s: Spelled| {
                    qs.push(s);
                    Quantity(format!("__q{}__", qs.len() - 1))
                };
                let (req_cpu, mem, lim_cpu) = res;
                let mut requests = BTreeMap::new();
                let mut limits = BTreeMap::new();
                if let Some(c) = req_cpu {
                    requests.insert("cpu".to_string(), q(c));
                }
                if let Some(m) = mem {
                    limits.insert("memory".to_string(), q(m));
                }
                if let Some(c) = lim_cpu {
                    limits.insert("cpu".to_string(), q(c));
                }
                let c = core::Container {
                    image: Some(image),
                    image_pull_policy: policy.map(str::to_string),
                    env: Some(
                        env.into_iter()
                            .map(|(name, value)| match value {
                                Some(v) => core::EnvVar {
                                    name,
                                    value: Some(v),
                                    ..Default::default()
                                },
                                None => core::EnvVar {
                                    name,
                                    value_from: Some(core::EnvVarSource {
                                        field_ref: Some(core::ObjectFieldSelector {
                                            field_path: "metadata.name".into(),
                                            ..Default::default()
                                        }),
                                        ..Default::default()
                                    }),
                                    ..Default::default()
                                },
                            })
                            .collect(),
                    ),
                    args: Some(args),
                    ports: Some(
                        ports
                            .into_iter()
                            .map(|(n, (name, protocol))| core::ContainerPort {
                                container_port: n,
                                name,
                                protocol: protocol.map(str::to_string),
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    resources: (!requests.is_empty() || !limits.is_empty()).then(|| {
                        core::ResourceRequirements {
                            requests: (!requests.is_empty()).then_some(requests),
                            limits: (!limits.is_empty()).then_some(limits),
                            ..Default::default()
                        }
                    }),
                    readiness_probe: readiness,
                    liveness_probe: liveness,
                    volume_mounts: Some(
                        mounts
                            .into_iter()
                            .map(|(path, read_only)| core::VolumeMount {
                                name: "data".into(),
                                mount_path: path,
                                read_only,
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    ..Default::default()
                };
                (c, qs)
            },
        )
}

fn volume() -> impl Strategy<Value = core::Volume> {
    (
        0..4u8,
        prop::option::of(prop::sample::select(vec![0o400, 0o644, 0o755])),
    )
        .prop_map(|(source, mode)| {
            let mut v = core::Volume::default();
            match source {
                0 => {
                    v.config_map = Some(core::ConfigMapVolumeSource {
                        name: "settings".into(),
                        default_mode: mode,
                        ..Default::default()
                    })
                }
                1 => {
                    v.secret = Some(core::SecretVolumeSource {
                        secret_name: Some("creds".into()),
                        default_mode: mode,
                        ..Default::default()
                    })
                }
                2 => v.empty_dir = Some(core::EmptyDirVolumeSource::default()),
                _ => {} // no source: kube-apiserver makes it an emptyDir
            }
            v
        })
}

fn tolerations() -> impl Strategy<Value = Option<Vec<core::Toleration>>> {
    prop::option::of(prop::collection::vec(
        (
            prop::option::of("[a-z]{1,6}"),
            prop::option::of(prop::sample::select(vec!["NoSchedule", "NoExecute"])),
        )
            .prop_map(|(key, effect)| core::Toleration {
                operator: Some(if key.is_some() { "Equal" } else { "Exists" }.into()),
                value: key.as_ref().map(|_| "true".to_string()),
                key,
                effect: effect.map(str::to_string),
                ..Default::default()
            }),
        1..3,
    ))
}

/// A pod spec with uniquely named containers and volumes (every mount names a volume).
fn pod_spec() -> impl Strategy<Value = (core::PodSpec, Vec<Spelled>)> {
    (
        prop::collection::btree_map(name(), container(), 1..3),
        prop::collection::btree_map(name(), volume(), 0..3),
        tolerations(),
        prop::option::of(prop::sample::select(vec!["ClusterFirst", "Default"])),
    )
        .prop_map(|(containers, volumes, tolerations, dns)| {
            let mut qs = Vec::new();
            let volume_names: Vec<String> = volumes.keys().cloned().collect();
            let containers = containers
                .into_iter()
                .map(|(name, (mut c, cqs))| {
                    // Renumber this container's placeholders after the ones already taken.
                    let offset = qs.len();
                    let mut json = serde_json::to_value(&c).unwrap();
                    substitute(&mut json, &|n| json!(format!("__q{}__", n + offset)));
                    c = serde_json::from_value(json).unwrap();
                    qs.extend(cqs);
                    c.name = name;
                    let mounts = c.volume_mounts.get_or_insert_with(Vec::new);
                    if volume_names.is_empty() {
                        mounts.clear();
                    }
                    for (i, m) in mounts.iter_mut().enumerate() {
                        m.name = volume_names[i % volume_names.len().max(1)].clone();
                    }
                    c
                })
                .collect();
            let spec = core::PodSpec {
                containers,
                volumes: Some(
                    volumes
                        .into_iter()
                        .map(|(name, mut v)| {
                            v.name = name;
                            v
                        })
                        .collect(),
                ),
                tolerations,
                dns_policy: dns.map(str::to_string),
                ..Default::default()
            };
            (spec, qs)
        })
}

fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[a-z]{1,3}(\\.io/)?[a-z]{1,4}", "[a-z0-9]{0,5}", 0..3)
}

fn meta(name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some("shop".into()),
        labels: (!labels.is_empty()).then_some(labels),
        ..Default::default()
    }
}

fn deployment() -> impl Strategy<Value = (Value, Quantities)> {
    (
        name(),
        labels(),
        pod_spec(),
        prop::option::of(0..10i32),
        prop::option::of((
            prop::option::of(prop_oneof![
                (0..5i32).prop_map(IntOrString::Int),
                Just(IntOrString::String("50%".into())),
            ]),
            prop::option::of((0..5i32).prop_map(IntOrString::Int)),
        )),
    )
        .prop_map(|(name, labels, (spec, qs), replicas, rolling)| {
            let selector = BTreeMap::from([("app".to_string(), name.clone())]);
            let d = apps::Deployment {
                metadata: meta(name, labels),
                spec: apps::DeploymentSpec {
                    replicas,
                    selector: LabelSelector {
                        match_labels: Some(selector.clone()),
                        ..Default::default()
                    },
                    strategy: rolling.map(|(surge, unavailable)| apps::DeploymentStrategy {
                        rolling_update: Some(apps::RollingUpdateDeployment {
                            max_surge: surge,
                            max_unavailable: unavailable,
                        }),
                        ..Default::default()
                    }),
                    template: core::PodTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some(selector),
                            ..Default::default()
                        }),
                        spec: Some(spec),
                    },
                    ..Default::default()
                },
                ..Default::default()
            };
            (serde_json::to_value(d).unwrap(), Quantities(qs))
        })
}

fn pod() -> impl Strategy<Value = (Value, Quantities)> {
    (
        name(),
        labels(),
        pod_spec(),
        prop::option::of(prop::sample::select(vec!["OnFailure", "Never"])),
    )
        .prop_map(|(name, labels, (mut spec, qs), restart)| {
            spec.restart_policy = restart.map(str::to_string);
            let p = core::Pod {
                metadata: meta(name, labels),
                spec: Some(spec),
                ..Default::default()
            };
            (serde_json::to_value(p).unwrap(), Quantities(qs))
        })
}

fn service() -> impl Strategy<Value = (Value, Quantities)> {
    (
        name(),
        labels(),
        prop::collection::btree_map(
            1..65535i32,
            (
                prop::option::of(int_or_string()),
                prop::option::of(prop::sample::select(vec!["TCP", "UDP"])),
            ),
            1..4,
        ),
        prop::option::of(prop::sample::select(vec!["ClusterIP", "NodePort"])),
        prop::option::of(Just("ClientIP")),
    )
        .prop_map(|(name, labels, ports, type_, affinity)| {
            let s = core::Service {
                metadata: meta(name.clone(), labels),
                spec: Some(core::ServiceSpec {
                    selector: Some(BTreeMap::from([("app".to_string(), name)])),
                    ports: Some(
                        ports
                            .into_iter()
                            .enumerate()
                            .map(|(i, (port, (target_port, protocol)))| core::ServicePort {
                                name: Some(format!("p{i}")),
                                port,
                                target_port,
                                protocol: protocol.map(str::to_string),
                                ..Default::default()
                            })
                            .collect(),
                    ),
                    type_: type_.map(str::to_string),
                    session_affinity: affinity.map(str::to_string),
                    ..Default::default()
                }),
                ..Default::default()
            };
            (serde_json::to_value(s).unwrap(), Quantities::default())
        })
}

fn config_map() -> impl Strategy<Value = (Value, Quantities)> {
    (
        name(),
        labels(),
        prop::collection::btree_map("[a-z][a-z0-9._-]{0,8}", "[ -~\n]{0,12}", 0..5),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(name, labels, data, immutable)| {
            let c = core::ConfigMap {
                metadata: meta(name, labels),
                data: Some(data),
                immutable,
                ..Default::default()
            };
            (serde_json::to_value(c).unwrap(), Quantities::default())
        })
}

/// Any generated object, with `salt` choosing the live order of its keyed lists.
pub fn case() -> impl Strategy<Value = Case> {
    prop_oneof![
        case_of("Deployment"),
        case_of("Service"),
        case_of("ConfigMap"),
        case_of("Pod"),
    ]
}

/// The kinds [`case_of`] generates.
pub const KINDS: [&str; 4] = ["Deployment", "Service", "ConfigMap", "Pod"];

/// A case of one kind of [`KINDS`].
pub fn case_of(kind: &'static str) -> BoxedStrategy<Case> {
    let typed = match kind {
        "Deployment" => deployment().boxed(),
        "Service" => service().boxed(),
        "ConfigMap" => config_map().boxed(),
        "Pod" => pod().boxed(),
        other => panic!("the generator makes no {other}"),
    };
    (typed, any::<u64>())
        .prop_map(move |((typed, qs), salt)| build(kind, typed, &qs, salt))
        .boxed()
}

/// The three forms of `typed` (JSON of a k8s-openapi object with quantity placeholders).
fn build(kind: &'static str, typed: Value, qs: &Quantities, salt: u64) -> Case {
    let mut desired = typed.clone();
    substitute(&mut desired, &|s| qs.0[s].desired.clone());
    let mut defaulted = typed;
    apply_defaults(kind, &mut defaulted);
    substitute(&mut defaulted, &|s| json!(qs.0[s].amount.canonical()));
    let (live, perms) = live_form(kind, &defaulted, salt);
    Case {
        kind,
        desired,
        defaulted,
        live,
        perms,
        salt,
    }
}

/// `case` with `extra` added to the manifest of its previous revision: the live object was
/// made from that revision. Returns the case (desired = without `extra`) and the previous
/// manifest.
pub fn with_previous(case: &Case, extra: &Extra) -> (Case, Value) {
    let mut previous = case.desired.clone();
    let mut defaulted = case.defaulted.clone();
    extra.add(&mut previous);
    extra.add(&mut defaulted);
    let (live, perms) = live_form(case.kind, &defaulted, case.salt);
    let c = Case {
        live,
        perms,
        ..case.clone()
    };
    (c, previous)
}

/// A field the previous revision had and the current one dropped.
#[derive(Debug, Clone)]
pub enum Extra {
    Label(String),
    Annotation(String),
    /// An env var appended to the first container (Deployments and Pods).
    Env(String),
    /// A `data` key (ConfigMaps).
    Data(String),
}

impl Extra {
    pub fn strategy() -> impl Strategy<Value = Extra> {
        prop_oneof![
            "zz[a-z]{1,4}".prop_map(Extra::Label),
            "zz[a-z]{1,4}".prop_map(Extra::Annotation),
            "ZZ[A-Z]{1,4}".prop_map(Extra::Env),
            "zz[a-z]{1,4}".prop_map(Extra::Data),
        ]
    }

    /// Where the extra field sits in the previous revision's manifest (it is appended, so
    /// no other item moves); `None` if the kind has no such field.
    pub fn pointer(&self, kind: &str, previous: &Value) -> Option<String> {
        let containers = match kind {
            "Deployment" => "/spec/template/spec/containers",
            "Pod" => "/spec/containers",
            _ => "",
        };
        Some(match self {
            Extra::Label(k) => format!("/metadata/labels/{k}"),
            Extra::Annotation(k) => format!("/metadata/annotations/{k}"),
            Extra::Env(_) if containers.is_empty() => return None,
            Extra::Env(_) => {
                let env = previous
                    .pointer(&format!("{containers}/0/env"))?
                    .as_array()?;
                format!("{containers}/0/env/{}", env.len() - 1)
            }
            Extra::Data(_) if kind != "ConfigMap" => return None,
            Extra::Data(k) => format!("/data/{k}"),
        })
    }

    fn add(&self, object: &mut Value) {
        let containers = match object["kind"].as_str() {
            Some("Deployment") => "/spec/template/spec/containers/0",
            Some("Pod") => "/spec/containers/0",
            _ => "",
        };
        match self {
            Extra::Label(k) => object["metadata"]["labels"][k] = json!("v"),
            Extra::Annotation(k) => object["metadata"]["annotations"][k] = json!("v"),
            Extra::Env(k) => {
                if let Some(c) = object.pointer_mut(containers) {
                    if !c["env"].is_array() {
                        c["env"] = json!([]);
                    }
                    c["env"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": k, "value": "v"}));
                }
            }
            Extra::Data(k) => {
                if object["kind"] == "ConfigMap" {
                    object["data"][k] = json!("v");
                }
            }
        }
    }
}

fn substitute(v: &mut Value, with: &dyn Fn(usize) -> Value) {
    match v {
        Value::String(s) => {
            if let Some(n) = s
                .strip_prefix("__q")
                .and_then(|r| r.strip_suffix("__"))
                .and_then(|n| n.parse::<usize>().ok())
            {
                *v = with(n);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|c| substitute(c, with)),
        Value::Object(m) => m.values_mut().for_each(|c| substitute(c, with)),
        _ => {}
    }
}
