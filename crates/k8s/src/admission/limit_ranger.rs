//! LimitRanger (`plugin/pkg/admission/limitranger/admission.go`), on create.
//!
//! Mutation (`PodMutateLimitFunc`), Pods only: for each LimitRange of the namespace in
//! turn, its `Container` items give default limits (`default`) and requests
//! (`defaultRequest`), a later item's value overriding an earlier one's
//! (`defaultContainerResourceRequirements`); every container, then every init container,
//! gets each default it has no value for (`mergeContainerResources`), so the first
//! LimitRange to set a resource wins. What a LimitRange set is written into the
//! `kubernetes.io/limit-ranger` annotation, `LimitRanger plugin set: ` and, per container,
//! `cpu, memory request for container app` then `... limit for container app` (resource
//! names sorted, `init container` for init containers), joined by `; `; each LimitRange
//! that sets something overwrites the annotation, so the last one's text remains.
//!
//! This runs after defaulting: `SetDefaults_Pod` already copied a container's limits into
//! its unset requests when the request was decoded, so a container with `limits.memory:
//! 1Gi` keeps a 1Gi request and does not get the LimitRange's `defaultRequest`. The
//! LimitRange itself is read as stored, with `SetDefaults_LimitRangeItem`'s defaults
//! (`default` from `max`, `defaultRequest` from `default` or `min`).
//!
//! Validation (`PodValidateLimitFunc`, `PersistentVolumeClaimValidateLimitFunc`), after the
//! mutating plugins: `Container` items check each container's and init container's
//! requests and limits against `min`, `max` and `maxLimitRequestRatio`; `Pod` items check
//! the pod's totals (containers summed, sidecar init containers added, other init
//! containers as a maximum); `PersistentVolumeClaim` items check a claim's requests
//! against `min` and `max`. Claims get no defaults ("storage is a required part of
//! pvc.Spec"). The first LimitRange with a violation refuses the object with all of its
//! messages (`utilerrors.NewAggregate`). Amounts are compared in milli-units, or in units
//! when one is too large for that (`requestLimitEnforcedValues`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::quantity::{self, Quantity};

/// The annotation LimitRanger writes on a Pod it gave defaults (`limitRangerAnnotation`).
pub const LIMIT_RANGER_ANNOTATION: &str = "kubernetes.io/limit-ranger";
/// `resource.MaxMilliValue`: past it, amounts are compared in units.
const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;

/// Resource name to quantity, as a `ResourceList`; keys in order, as Go encodes a map.
type Resources = BTreeMap<String, Quantity>;

fn limit_items(range: &Value) -> impl Iterator<Item = &Value> {
    range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn item_type(item: &Value) -> &str {
    item.get("type").and_then(Value::as_str).unwrap_or("")
}

fn resources(list: Option<&Value>) -> Resources {
    list.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), quantity::parse_value(v)?)))
        .collect()
}

fn containers(pod: &Value, list: &str) -> Vec<Value> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

pub(super) fn mutate(pod: &mut Value, ranges: &[Value]) {
    for range in ranges {
        let (mut requests, mut limits) = (Map::new(), Map::new());
        for item in limit_items(range).filter(|i| item_type(i) == "Container") {
            for (field, defaults) in [("defaultRequest", &mut requests), ("default", &mut limits)] {
                for (k, v) in item
                    .get(field)
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    let canonical = quantity::canonicalize_value(v).map_or(v.clone(), Value::from);
                    defaults.insert(k.clone(), canonical);
                }
            }
        }
        if requests.is_empty() && limits.is_empty() {
            continue;
        }
        let mut notes = Vec::new();
        for (list, prefix) in [
            ("containers", "container"),
            ("initContainers", "init container"),
        ] {
            let Some(Value::Array(list)) = pod.pointer_mut(&format!("/spec/{list}")) else {
                continue;
            };
            for c in list.iter_mut().filter(|c| c.is_object()) {
                let name = c
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let set_limits = fill(c, "limits", &limits);
                let set_requests = fill(c, "requests", &requests);
                if !set_requests.is_empty() {
                    notes.push(format!(
                        "{} request for {prefix} {name}",
                        set_requests.join(", ")
                    ));
                }
                if !set_limits.is_empty() {
                    notes.push(format!(
                        "{} limit for {prefix} {name}",
                        set_limits.join(", ")
                    ));
                }
            }
        }
        if !notes.is_empty() {
            let text = format!("LimitRanger plugin set: {}", notes.join("; "));
            let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) else {
                continue;
            };
            let annotations = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if !annotations.is_object() {
                *annotations = Value::Object(Map::new());
            }
            annotations[LIMIT_RANGER_ANNOTATION] = Value::String(text);
        }
    }
}

/// Gives container `c` each of `defaults` its `resources.<field>` lacks; returns the names
/// it set, sorted. The lists are rebuilt in the order the API server prints them
/// (`limits`, `requests`, `claims`; resource names sorted).
fn fill(c: &mut Value, field: &str, defaults: &Map<String, Value>) -> Vec<String> {
    let present = |k: &str| c.pointer(&format!("/resources/{field}/{k}")).is_some();
    let mut set: Vec<String> = defaults.keys().filter(|k| !present(k)).cloned().collect();
    if set.is_empty() {
        return set;
    }
    set.sort();
    let resources = c.as_object_mut().map(|c| {
        c.entry("resources")
            .or_insert_with(|| Value::Object(Map::new()))
    });
    let Some(Value::Object(resources)) = resources else {
        return Vec::new();
    };
    let mut list = match resources.remove(field) {
        Some(Value::Object(list)) => list,
        _ => Map::new(),
    };
    for k in &set {
        list.insert(k.clone(), defaults[k].clone());
    }
    list.sort_keys();
    resources.insert(field.to_string(), Value::Object(list));
    let mut ordered = Map::new();
    for key in ["limits", "requests", "claims"] {
        if let Some(v) = resources.remove(key) {
            ordered.insert(key.to_string(), v);
        }
    }
    ordered.append(resources);
    *resources = ordered;
    set
}

/// `PodValidateLimitFunc` over the namespace's LimitRanges.
pub(super) fn validate_pod(pod: &Value, ranges: &[Value]) -> Result<(), String> {
    let lists: Vec<(Resources, Resources)> = ["containers", "initContainers"]
        .iter()
        .flat_map(|l| containers(pod, l))
        .map(|c| {
            (
                resources(c.pointer("/resources/requests")),
                resources(c.pointer("/resources/limits")),
            )
        })
        .collect();
    for range in ranges {
        let mut errors = Vec::new();
        for item in limit_items(range) {
            match item_type(item) {
                "Container" => {
                    for (requests, limits) in &lists {
                        check(item, "Container", requests, limits, &mut errors);
                    }
                }
                "Pod" => {
                    let requests = pod_total(pod, "requests");
                    let limits = pod_total(pod, "limits");
                    check(item, "Pod", &requests, &limits, &mut errors);
                }
                _ => {}
            }
        }
        if !errors.is_empty() {
            return Err(aggregate(errors));
        }
    }
    Ok(())
}

/// `PersistentVolumeClaimValidateLimitFunc`: only the claim's requests count.
pub(super) fn validate_claim(pvc: &Value, ranges: &[Value]) -> Result<(), String> {
    let requests = resources(pvc.pointer("/spec/resources/requests"));
    for range in ranges {
        let mut errors = Vec::new();
        for item in limit_items(range).filter(|i| item_type(i) == "PersistentVolumeClaim") {
            for (k, min) in bounds(item, "min") {
                errors.extend(min_constraint(
                    "PersistentVolumeClaim",
                    &k,
                    &min,
                    &requests,
                    &Resources::new(),
                ));
            }
            for (k, max) in bounds(item, "max") {
                errors.extend(max_request_constraint(
                    "PersistentVolumeClaim",
                    &k,
                    &max,
                    &requests,
                ));
            }
        }
        if !errors.is_empty() {
            return Err(aggregate(errors));
        }
    }
    Ok(())
}

/// An item's `min`, `max` or `maxLimitRequestRatio`, by resource name. Upstream ranges
/// over a Go map, so the order of several messages is random; here it is by name.
fn bounds(item: &Value, field: &str) -> Resources {
    resources(item.get(field))
}

fn check(
    item: &Value,
    kind: &str,
    requests: &Resources,
    limits: &Resources,
    errors: &mut Vec<String>,
) {
    for (k, min) in bounds(item, "min") {
        errors.extend(min_constraint(kind, &k, &min, requests, limits));
    }
    for (k, max) in bounds(item, "max") {
        errors.extend(max_constraint(kind, &k, &max, requests, limits));
    }
    for (k, ratio) in bounds(item, "maxLimitRequestRatio") {
        errors.extend(ratio_constraint(kind, &k, &ratio, requests, limits));
    }
}

/// `utilerrors.NewAggregate(...).Error()`: one message alone, several (duplicates
/// dropped) in brackets joined by `, `.
fn aggregate(errors: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    if unique.len() == 1 {
        unique.remove(0)
    } else {
        format!("[{}]", unique.join(", "))
    }
}

/// `requestLimitEnforcedValues`: the three amounts in milli-units, or in units when one of
/// them is past `MaxMilliValue`; an absent quantity is zero.
fn enforced_values(
    req: Option<&Quantity>,
    lim: Option<&Quantity>,
    enforced: &Quantity,
) -> (i128, i128, i128) {
    let at =
        |q: Option<&Quantity>, scale| q.map_or(0, |q| q.scaled_value(scale).unwrap_or(i128::MAX));
    let units = (at(req, 0), at(lim, 0), at(Some(enforced), 0));
    if units.0 <= MAX_MILLI_VALUE && units.1 <= MAX_MILLI_VALUE && units.2 <= MAX_MILLI_VALUE {
        (at(req, -3), at(lim, -3), at(Some(enforced), -3))
    } else {
        units
    }
}

/// One side of a bound check: what the value is called in messages, the value, and its
/// amount in the compared unit.
type Side<'a> = (&'static str, Option<&'a Quantity>, i128);

/// The shape `minConstraint`, `maxConstraint` and `maxRequestConstraint` share: a value
/// that must be given and within the bound, then one that may be given and must be too.
fn bounded(
    head: String,
    outside: impl Fn(i128) -> bool,
    required: Side,
    optional: Option<Side>,
) -> Option<String> {
    let (what, value, amount) = required;
    let Some(value) = value else {
        return Some(format!("{head}.  No {what} is specified"));
    };
    if outside(amount) {
        return Some(format!("{head}, but {what} is {value}"));
    }
    match optional {
        Some((what, Some(value), amount)) if outside(amount) => {
            Some(format!("{head}, but {what} is {value}"))
        }
        _ => None,
    }
}

/// `minConstraint`: the request must be given and at least the bound, the limit too if given.
fn min_constraint(
    kind: &str,
    name: &str,
    enforced: &Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let (req, lim) = (requests.get(name), limits.get(name));
    let (r, l, e) = enforced_values(req, lim, enforced);
    let head = format!("minimum {name} usage per {kind} is {enforced}");
    bounded(
        head,
        |v| v < e,
        ("request", req, r),
        Some(("limit", lim, l)),
    )
}

/// `maxConstraint`: the limit must be given and at most the bound, the request too if given.
fn max_constraint(
    kind: &str,
    name: &str,
    enforced: &Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let (req, lim) = (requests.get(name), limits.get(name));
    let (r, l, e) = enforced_values(req, lim, enforced);
    let head = format!("maximum {name} usage per {kind} is {enforced}");
    bounded(
        head,
        |v| v > e,
        ("limit", lim, l),
        Some(("request", req, r)),
    )
}

/// `maxRequestConstraint`, for kinds whose limits are not the user's (claims).
fn max_request_constraint(
    kind: &str,
    name: &str,
    enforced: &Quantity,
    requests: &Resources,
) -> Option<String> {
    let req = requests.get(name);
    let (r, _, e) = enforced_values(req, None, enforced);
    let head = format!("maximum {name} usage per {kind} is {enforced}");
    bounded(head, |v| v > e, ("request", req, r), None)
}

fn ratio_constraint(
    kind: &str,
    name: &str,
    enforced: &Quantity,
    requests: &Resources,
    limits: &Resources,
) -> Option<String> {
    let (req, lim) = (requests.get(name), limits.get(name));
    let (r, l, _) = enforced_values(req, lim, enforced);
    let head = format!("{name} max limit to request ratio per {kind} is {enforced}");
    if req.is_none() || r == 0 {
        return Some(format!(
            "{head}, but no request is specified or request is 0"
        ));
    }
    if lim.is_none() || l == 0 {
        return Some(format!("{head}, but no limit is specified or limit is 0"));
    }
    let shown = l as f64 / r as f64;
    let units = enforced.scaled_value(0).unwrap_or(i128::MAX);
    let (observed, allowed) = if units <= MAX_MILLI_VALUE {
        (
            shown * 1000.0,
            enforced.scaled_value(-3).unwrap_or(i128::MAX) as f64,
        )
    } else {
        (shown, units as f64)
    };
    // Go's `%f`: six decimals.
    (observed > allowed).then(|| format!("{head}, but provided ratio is {shown:.6}"))
}

/// `podRequests`/`podLimits` (the feature-gated in-place resize and pod-level resources,
/// both off in v1.32, aside): containers summed; a sidecar (init container with
/// `restartPolicy: Always`) adds to the sum and to what later init containers run beside;
/// other init containers count as the largest of them, against which the sum is maxed.
fn pod_total(pod: &Value, field: &str) -> Resources {
    let of = |c: &Value| resources(c.pointer(&format!("/resources/{field}")));
    let mut total = Resources::new();
    for c in containers(pod, "containers") {
        add(&mut total, &of(&c));
    }
    let (mut sidecars, mut init) = (Resources::new(), Resources::new());
    for c in containers(pod, "initContainers") {
        let own = of(&c);
        let effective = if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut with_sidecars = own;
            add(&mut with_sidecars, &sidecars);
            with_sidecars
        };
        max(&mut init, &effective);
    }
    max(&mut total, &init);
    total
}

/// `addResourceList`.
fn add(list: &mut Resources, other: &Resources) {
    for (k, q) in other {
        let sum = match list.get(k) {
            None => Some(q.clone()),
            Some(v) => v.add(q),
        };
        if let Some(sum) = sum {
            list.insert(k.clone(), sum);
        }
    }
}

/// `maxResourceList`.
fn max(list: &mut Resources, other: &Resources) {
    for (k, q) in other {
        if list.get(k).is_none_or(|v| q.cmp_amount(v).is_gt()) {
            list.insert(k.clone(), q.clone());
        }
    }
}
