//! Which fields a list or watch may select on, kind by kind, and the values it compares:
//! what kube-apiserver does with a `fieldSelector` before and while it filters.
//!
//! Before listing, the handler (`apiserver/pkg/endpoints/handlers/get.go`, `ListResource`)
//! passes every field label through the scheme's `ConvertFieldLabel` for the request's
//! group, version and kind, and answers `400 BadRequest` with the conversion's error as
//! the message when one is refused. The conversions are those registered with
//! `AddFieldLabelConversionFunc` (for core/v1 in `pkg/apis/core/v1/conversion.go`, for
//! events.k8s.io in `pkg/apis/events/v1/conversion.go`, batch and certificates in their
//! `conversion.go`); a kind without one gets `runtime.DefaultMetaV1FieldSelectorConversion`
//! (`metadata.name`, `metadata.namespace` only); a custom resource gets
//! `metadata.name`, `metadata.namespace` when namespaced, and its version's
//! `selectableFields` (apiextensions-apiserver's converter; `CustomResourceFieldSelectors`
//! is on in 1.32). Each kind words its refusal its own way, and the message is kept
//! exactly.
//!
//! The selector then matches the fields the kind's registry exposes (`GetAttrs`, e.g.
//! `pkg/registry/core/pod/strategy.go`, `ToSelectableFields`): values are texts (`"true"`,
//! `"3"`), and a field the object lacks reads as its zero value.
//!
//! Kubernetes 1.32 as this module assumes it: Pods select on `status.podIP` but not yet on
//! `status.podIPs`; apps/v1 registers no conversion (its ReplicaSets and StatefulSets
//! select on `metadata.name`/`metadata.namespace` only, the beta versions' StatefulSet
//! conversion being theirs); Services select on `spec.clusterIP` and `spec.type` (since
//! 1.30).

use crate::selector::Selector;
use serde_json::Value;

/// How one kind's field labels are converted and its fields read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldLabels {
    /// A built-in kind with a registered conversion (see [`Builtin`]).
    Builtin(Builtin),
    /// No registered conversion: `metadata.name` and `metadata.namespace`.
    Default { namespaced: bool },
    /// A custom resource: `metadata.name`, `metadata.namespace` when namespaced, and the
    /// served version's `selectableFields` (their `jsonPath` without the leading dot).
    Custom {
        namespaced: bool,
        selectable: Vec<String>,
    },
}

/// The built-in kinds whose group version registers a field label conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Pod,
    Node,
    ReplicationController,
    CoreEvent,
    /// events.k8s.io (v1, v1beta1): its labels are mapped onto the core Event's fields.
    EventsEvent,
    Namespace,
    Secret,
    Service,
    Job,
    CertificateSigningRequest,
    /// apps/v1beta1 and v1beta2 (the error names the version).
    BetaStatefulSet(&'static str),
}

impl FieldLabels {
    /// The labels of built-in kind `kind` in `group`/`version`.
    pub fn builtin(group: &str, version: &str, kind: &str, namespaced: bool) -> FieldLabels {
        let builtin = match (group, version, kind) {
            ("", "v1", "Pod") => Builtin::Pod,
            ("", "v1", "Node") => Builtin::Node,
            ("", "v1", "ReplicationController") => Builtin::ReplicationController,
            ("", "v1", "Event") => Builtin::CoreEvent,
            ("", "v1", "Namespace") => Builtin::Namespace,
            ("", "v1", "Secret") => Builtin::Secret,
            ("", "v1", "Service") => Builtin::Service,
            ("events.k8s.io", "v1" | "v1beta1", "Event") => Builtin::EventsEvent,
            ("batch", "v1", "Job") => Builtin::Job,
            ("certificates.k8s.io", "v1" | "v1beta1", "CertificateSigningRequest") => {
                Builtin::CertificateSigningRequest
            }
            ("apps", "v1beta1", "StatefulSet") => Builtin::BetaStatefulSet("appsv1beta1"),
            ("apps", "v1beta2", "StatefulSet") => Builtin::BetaStatefulSet("appsv1beta2"),
            _ => return FieldLabels::Default { namespaced },
        };
        FieldLabels::Builtin(builtin)
    }

    /// The field the API server selects on for `label`, or its refusal, worded as the
    /// kind's conversion words it.
    pub fn convert(&self, label: &str) -> Result<String, String> {
        let not_supported = || format!("field label not supported: {label}");
        match self {
            FieldLabels::Default { .. } => match label {
                "metadata.name" | "metadata.namespace" => Ok(label.to_string()),
                _ => Err(format!(
                    "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                )),
            },
            FieldLabels::Custom {
                namespaced,
                selectable,
            } => match label {
                "metadata.name" => Ok(label.to_string()),
                "metadata.namespace" if *namespaced => Ok(label.to_string()),
                _ if selectable.iter().any(|s| s == label) => Ok(label.to_string()),
                _ => Err(not_supported()),
            },
            FieldLabels::Builtin(b) => {
                let (accepted, renamed): (&[&str], &[(&str, &str)]) = match b {
                    Builtin::Pod => (
                        &[
                            "metadata.name",
                            "metadata.namespace",
                            "spec.nodeName",
                            "spec.restartPolicy",
                            "spec.schedulerName",
                            "spec.serviceAccountName",
                            "spec.hostNetwork",
                            "status.phase",
                            "status.podIP",
                            "status.nominatedNodeName",
                        ],
                        // For old v1 clients that send `spec.host`.
                        &[("spec.host", "spec.nodeName")],
                    ),
                    Builtin::Node => (&["metadata.name", "spec.unschedulable"], &[]),
                    Builtin::ReplicationController => (
                        &["metadata.name", "metadata.namespace", "status.replicas"],
                        &[],
                    ),
                    Builtin::CoreEvent => (&CORE_EVENT_FIELDS, &[]),
                    Builtin::EventsEvent => (
                        &[
                            "reason",
                            "source",
                            "type",
                            "metadata.namespace",
                            "metadata.name",
                        ],
                        &[
                            ("regarding.kind", "involvedObject.kind"),
                            ("regarding.namespace", "involvedObject.namespace"),
                            ("regarding.name", "involvedObject.name"),
                            ("regarding.uid", "involvedObject.uid"),
                            ("regarding.apiVersion", "involvedObject.apiVersion"),
                            (
                                "regarding.resourceVersion",
                                "involvedObject.resourceVersion",
                            ),
                            ("regarding.fieldPath", "involvedObject.fieldPath"),
                            ("reportingController", "reportingComponent"),
                        ],
                    ),
                    Builtin::Namespace => (&["status.phase", "metadata.name"], &[]),
                    Builtin::Secret => (&["type", "metadata.namespace", "metadata.name"], &[]),
                    Builtin::Service => (
                        &[
                            "metadata.namespace",
                            "metadata.name",
                            "spec.clusterIP",
                            "spec.type",
                        ],
                        &[],
                    ),
                    Builtin::Job | Builtin::BetaStatefulSet(_) => (
                        &["metadata.name", "metadata.namespace", "status.successful"],
                        &[],
                    ),
                    Builtin::CertificateSigningRequest => {
                        (&["metadata.name", "spec.signerName"], &[])
                    }
                };
                if accepted.contains(&label) {
                    return Ok(label.to_string());
                }
                if let Some((_, to)) = renamed.iter().find(|(from, _)| *from == label) {
                    return Ok(to.to_string());
                }
                Err(match b {
                    Builtin::Job => format!("field label {label:?} not supported for batchv1.Job"),
                    Builtin::BetaStatefulSet(version) => {
                        format!("field label not supported for {version}.StatefulSet: {label}")
                    }
                    _ => not_supported(),
                })
            }
        }
    }

    /// Parses `text` as a field selector and converts its labels; the error is the
    /// message of kube-apiserver's 400 answer.
    pub fn selector(&self, text: &str) -> Result<FieldSelection, String> {
        let selector = Selector::parse_fields(text)?.rename_keys(|label| self.convert(label))?;
        Ok(FieldSelection {
            labels: self.clone(),
            selector,
        })
    }

    /// The text of field `field` (a converted label) of `object`, as `GetAttrs` gives it.
    pub fn value(&self, field: &str, object: &Value) -> String {
        let text = |path: &str| text_at(object, path);
        match (self, field) {
            (_, "metadata.name") => text("/metadata/name"),
            (_, "metadata.namespace") => text("/metadata/namespace"),
            (FieldLabels::Builtin(Builtin::Pod), field) => match field {
                "spec.nodeName" => text("/spec/nodeName"),
                "spec.restartPolicy" => text("/spec/restartPolicy"),
                "spec.schedulerName" => text("/spec/schedulerName"),
                "spec.serviceAccountName" => text("/spec/serviceAccountName"),
                "spec.hostNetwork" => flag(object, "/spec/hostNetwork"),
                "status.phase" => text("/status/phase"),
                // The first of `podIPs` (the internal type keeps only the list).
                "status.podIP" => match text("/status/podIPs/0/ip") {
                    ip if ip.is_empty() => text("/status/podIP"),
                    ip => ip,
                },
                "status.nominatedNodeName" => text("/status/nominatedNodeName"),
                _ => String::new(),
            },
            (FieldLabels::Builtin(Builtin::Node), "spec.unschedulable") => {
                flag(object, "/spec/unschedulable")
            }
            (FieldLabels::Builtin(Builtin::ReplicationController), "status.replicas") => {
                count(object, "/status/replicas")
            }
            (FieldLabels::Builtin(Builtin::CoreEvent | Builtin::EventsEvent), field) => {
                event_field(object, field)
            }
            (FieldLabels::Builtin(Builtin::Namespace), "status.phase") => text("/status/phase"),
            (FieldLabels::Builtin(Builtin::Secret), "type") => text("/type"),
            (FieldLabels::Builtin(Builtin::Service), "spec.clusterIP") => text("/spec/clusterIP"),
            (FieldLabels::Builtin(Builtin::Service), "spec.type") => text("/spec/type"),
            (FieldLabels::Builtin(Builtin::Job), "status.successful") => {
                count(object, "/status/succeeded")
            }
            (FieldLabels::Builtin(Builtin::CertificateSigningRequest), "spec.signerName") => {
                text("/spec/signerName")
            }
            (FieldLabels::Custom { .. }, field) => {
                let pointer: String = field.split('.').map(|seg| format!("/{seg}")).collect();
                match object.pointer(&pointer) {
                    Some(Value::String(s)) => s.clone(),
                    Some(v @ (Value::Bool(_) | Value::Number(_))) => v.to_string(),
                    _ => String::new(),
                }
            }
            _ => String::new(),
        }
    }
}

/// core/v1 Event's selectable fields (`AddFieldLabelConversionsForEvent`).
const CORE_EVENT_FIELDS: [&str; 13] = [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
];

/// An Event's field (core names, as `pkg/registry/core/event/strategy.go` exposes them)
/// from either shape: both APIs serve the one stored Event.
fn event_field(event: &Value, field: &str) -> String {
    let core = event.get("apiVersion").and_then(Value::as_str) == Some("v1");
    let text = |path: &str| text_at(event, path);
    if let Some(rest) = field.strip_prefix("involvedObject.") {
        let reference = if core { "involvedObject" } else { "regarding" };
        return text(&format!("/{reference}/{rest}"));
    }
    let reporting = || match core {
        true => text("/reportingComponent"),
        false => text("/reportingController"),
    };
    match field {
        "reason" => text("/reason"),
        "type" => text("/type"),
        "reportingComponent" => reporting(),
        // The source component, else the reporting controller.
        "source" => match text(if core {
            "/source/component"
        } else {
            "/deprecatedSource/component"
        }) {
            s if s.is_empty() => reporting(),
            s => s,
        },
        _ => String::new(),
    }
}

fn text_at(object: &Value, pointer: &str) -> String {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A bool as `strconv.FormatBool` writes it (false when absent).
fn flag(object: &Value, pointer: &str) -> String {
    let set = object.pointer(pointer).and_then(Value::as_bool);
    set.unwrap_or(false).to_string()
}

/// An integer as `strconv.Itoa` writes it (0 when absent).
fn count(object: &Value, pointer: &str) -> String {
    let n = object.pointer(pointer).and_then(Value::as_i64);
    n.unwrap_or(0).to_string()
}

/// A converted field selector: what a list or watch of one kind keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSelection {
    labels: FieldLabels,
    selector: Selector,
}

impl Default for FieldSelection {
    /// Selects everything.
    fn default() -> FieldSelection {
        FieldSelection {
            labels: FieldLabels::Default { namespaced: true },
            selector: Selector::default(),
        }
    }
}

impl FieldSelection {
    pub fn is_empty(&self) -> bool {
        self.selector.is_empty()
    }

    /// Whether `object` (as served in the kind's version) is selected.
    pub fn matches(&self, object: &Value) -> bool {
        self.selector
            .matches_field_values(|field| self.labels.value(field, object))
    }
}

#[cfg(test)]
mod tests;
