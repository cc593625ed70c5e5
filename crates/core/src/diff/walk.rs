//! The walk over the (defaulted) desired object: every field it sets is compared with the
//! live one, live-only fields are not (apply semantics for maps), fields the previous
//! revision set and the new one dropped are pruned, and every difference is recorded with
//! its path on both sides.

use super::lists;
use super::normalize::{
    is_omitted_zero, is_quantity_field, is_vacuous, quantities_equal, scalars_equal,
    secret_values_equal,
};
use super::pointer::{field_names, Seg};
use super::ChangeOp;
use driftd_k8s::crd::{MapType, Step, Structural};
use serde_json::Value;

/// A difference before attribution, redaction and ignore rules.
#[derive(Debug, Clone)]
pub(crate) struct RawChange {
    pub segs: Vec<Seg>,
    pub op: ChangeOp,
    pub desired: Option<Value>,
    pub live: Option<Value>,
}

/// Metadata kube-apiserver fills or maintains itself; never compared even when a desired
/// file carries it (files exported with `kubectl get -o yaml` often do).
pub(crate) const SERVER_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// Annotations written by kubectl and controllers, not by the person who owns the object.
const SERVER_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
];

/// Whether the field at `segs` + `key` is outside what a user can drift.
fn skipped(segs: &[Seg], key: &str) -> bool {
    if segs.len() > 2 {
        return false;
    }
    let names = field_names(segs);
    match names.as_slice() {
        // Identity and status: apiVersion/kind select the object, status is the controllers'.
        [] if segs.is_empty() => matches!(key, "apiVersion" | "kind" | "status"),
        ["metadata"] if segs.len() == 1 => SERVER_METADATA.contains(&key),
        ["metadata", "annotations"] if segs.len() == 2 => {
            SERVER_ANNOTATIONS.contains(&key) || key.starts_with("driftd.io/")
        }
        _ => false,
    }
}

/// What a walk compares by: the object's type, its schema and the desired object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Context<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    /// A built-in kind: its atomic lists compare exactly (`kubectl apply` replaces them
    /// whole). Custom resources without a schema keep per-position apply semantics.
    pub builtin: bool,
    /// The structural schema of a custom resource's version, when its CRD is known: list
    /// and map types come from it.
    pub schema: Option<&'a Structural>,
    /// The (prepared) desired object, whose admission plugins' conditions decide which
    /// live list items they appended.
    pub desired: &'a Value,
}

pub(crate) struct Walker<'a> {
    pub kind: &'a str,
    pub builtin: bool,
    pub ctx: Context<'a>,
    pub changes: Vec<RawChange>,
}

impl<'a> Walker<'a> {
    pub fn new(ctx: Context<'a>) -> Self {
        Walker {
            kind: ctx.kind,
            builtin: ctx.builtin,
            ctx,
            changes: Vec::new(),
        }
    }

    /// The schema node at `segs`, for a custom resource compared by its CRD's schema;
    /// `None` without a schema or where it says nothing (preserve-unknown-fields subtrees).
    pub fn schema_at(&self, segs: &[Seg]) -> Option<&'a Structural> {
        // Asked at every object of every walk: built-in kinds have no schema to step into.
        let schema = self.ctx.schema?;
        let steps: Vec<Step> = segs
            .iter()
            .map(|s| match s {
                Seg::Field(f) => Step::Field(f),
                Seg::Item { .. } => Step::Item,
            })
            .collect();
        schema.at(&steps)
    }

    /// Whether `v` at `segs` is a zero value the encoder leaves out for this kind.
    fn omitted_zero(&self, segs: &[Seg], v: &Value) -> bool {
        is_omitted_zero(self.ctx.api_version, self.kind, &field_names(segs), v)
    }

    pub fn push(
        &mut self,
        segs: &[Seg],
        op: ChangeOp,
        desired: Option<&Value>,
        live: Option<&Value>,
    ) {
        self.changes.push(RawChange {
            segs: segs.to_vec(),
            op,
            desired: desired.cloned(),
            live: live.cloned(),
        });
    }

    /// Compares the desired value `d` at `segs` with the live value `l`; `p` is what the
    /// previous revision had there.
    pub fn value(&mut self, segs: &mut Vec<Seg>, d: &Value, l: Option<&Value>, p: Option<&Value>) {
        if d.is_null() {
            // `field: null` leaves the field to the server.
            return;
        }
        let Some(l) = l else {
            if !is_vacuous(d) && !self.omitted_zero(segs, d) {
                self.push(segs, ChangeOp::Add, Some(d), None);
            }
            return;
        };
        match (d, l) {
            (Value::Object(_), Value::Object(_))
                if self.schema_at(segs).map(Structural::map_type) == Some(MapType::Atomic) =>
            {
                // `x-kubernetes-map-type: atomic`: one value, replaced whole by apply.
                if !self.exactly_equal(segs, d, l) {
                    self.push(segs, ChangeOp::Replace, Some(d), Some(l));
                }
            }
            (Value::Object(dm), Value::Object(lm)) => {
                for (k, dv) in dm {
                    if skipped(segs, k) {
                        continue;
                    }
                    segs.push(Seg::Field(k.clone()));
                    let pv = p.and_then(|p| p.get(k));
                    if self.is_namespace(segs) {
                        self.namespace(segs, dv, lm.get(k));
                    } else {
                        self.value(segs, dv, lm.get(k), pv);
                    }
                    segs.pop();
                }
                if let Some(Value::Object(pm)) = p {
                    for (k, pv) in pm {
                        if dm.contains_key(k) || skipped(segs, k) {
                            continue;
                        }
                        if let Some(lv) = lm.get(k) {
                            segs.push(Seg::Field(k.clone()));
                            self.prune(segs, pv, lv);
                            segs.pop();
                        }
                    }
                }
            }
            (Value::Array(da), Value::Array(la)) => {
                let pa = p.and_then(Value::as_array).map(Vec::as_slice);
                lists::compare(self, segs, da, la, pa);
            }
            _ => {
                if !self.scalar_equal(segs, d, l) {
                    self.push(segs, ChangeOp::Replace, Some(d), Some(l));
                }
            }
        }
    }

    fn is_namespace(&self, segs: &[Seg]) -> bool {
        segs.len() == 2 && field_names(segs) == ["metadata", "namespace"]
    }

    /// A namespaced object written without a namespace lands in `default`; a cluster-scoped
    /// object has its namespace cleared by kube-apiserver.
    fn namespace(&mut self, segs: &[Seg], d: &Value, l: Option<&Value>) {
        let Some(l) = l else { return };
        let d_ns = d.as_str().filter(|s| !s.is_empty()).unwrap_or("default");
        if Some(d_ns) != l.as_str() {
            self.push(segs, ChangeOp::Replace, Some(d), Some(l));
        }
    }

    /// Exact equality of a desired and a live value inside an atomic list: every key on
    /// either side counts (an extra live key is a difference), but spellings still do not
    /// (quantities, numbers), and an absent field equals `null`, `{}`, `[]` and the zero
    /// values kube-apiserver omits on output.
    pub fn exactly_equal(&self, segs: &mut Vec<Seg>, d: &Value, l: &Value) -> bool {
        match (d, l) {
            (Value::Object(dm), Value::Object(lm)) => {
                let keys: std::collections::BTreeSet<&String> =
                    dm.keys().chain(lm.keys()).collect();
                keys.into_iter().all(|k| {
                    segs.push(Seg::Field(k.clone()));
                    let present = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
                    let eq = match (present(dm.get(k)), present(lm.get(k))) {
                        (None, None) => true,
                        (Some(v), None) | (None, Some(v)) => {
                            is_vacuous(&v) || self.omitted_zero(segs, &v)
                        }
                        (Some(dv), Some(lv)) => self.exactly_equal(segs, &dv, &lv),
                    };
                    segs.pop();
                    eq
                })
            }
            (Value::Array(da), Value::Array(la)) => self.lists_exactly_equal(segs, da, la),
            _ => self.scalar_equal(segs, d, l),
        }
    }

    /// [`Walker::exactly_equal`] for two lists at `segs`, item by item.
    pub fn lists_exactly_equal(&self, segs: &mut Vec<Seg>, d: &[Value], l: &[Value]) -> bool {
        d.len() == l.len()
            && d.iter().zip(l).enumerate().all(|(i, (dv, lv))| {
                segs.push(Seg::Item {
                    desired: Some(i),
                    live: Some(i),
                    key: None,
                });
                let eq = self.exactly_equal(segs, dv, lv);
                segs.pop();
                eq
            })
    }

    fn scalar_equal(&self, segs: &[Seg], d: &Value, l: &Value) -> bool {
        let names = field_names(segs);
        if is_quantity_field(self.kind, &names) {
            return quantities_equal(d, l);
        }
        if self.kind == "Secret" && names.len() == 2 && names[0] == "data" {
            return secret_values_equal(d, l);
        }
        scalars_equal(d, l)
    }

    /// Three-way prune: the previous revision set the field at `segs` (value `p`), the new
    /// desired does not, and live still has it. Mirrors `kubectl apply`, which deletes such
    /// fields; only reported while live still holds the previously applied value (a value
    /// the server re-defaulted after the prune is not ours).
    fn prune(&mut self, segs: &mut Vec<Seg>, p: &Value, l: &Value) {
        if is_vacuous(p) {
            return;
        }
        if let (Value::Object(pm), Value::Object(lm)) = (p, l) {
            for (k, pv) in pm {
                if skipped(segs, k) {
                    continue;
                }
                if let Some(lv) = lm.get(k) {
                    segs.push(Seg::Field(k.clone()));
                    self.prune(segs, pv, lv);
                    segs.pop();
                }
            }
            return;
        }
        if let (Value::Array(pa), Value::Array(la)) = (p, l) {
            if lists::is_set_list(&field_names(segs)) && segs.len() == 2 {
                return lists::set(self, segs, &[], la, Some(pa), false);
            }
        }
        let mut probe = Walker::new(self.ctx);
        let mut probe_segs = segs.clone();
        probe.value(&mut probe_segs, p, Some(l), None);
        if probe.changes.is_empty() {
            self.push(segs, ChangeOp::Remove, None, Some(l));
        }
    }
}
