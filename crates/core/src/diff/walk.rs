//! The walk over the (defaulted) desired object: every field it sets is compared with the
//! live one, live-only fields are not (apply semantics for maps), fields the previous
//! revision set and the new one dropped are pruned, and every difference is recorded with
//! its path on both sides.

use super::list_items;
use super::normalize::{
    bytes_equal, is_omitted_zero, is_quantity_field, is_vacuous, quantities_equal, scalars_equal,
};
use super::pointer::{field_names, with_field_names, Seg};
use super::ChangeOp;
use driftd_k8s::api_types::ScalarType;
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

/// Whether the field at `segs` + `key` is outside what a user can drift. Asked for every
/// field of every walk, so it matches the path without collecting its names.
fn skipped(segs: &[Seg], key: &str) -> bool {
    match segs {
        // Identity and status: apiVersion/kind select the object, status is the controllers'.
        [] => matches!(key, "apiVersion" | "kind" | "status"),
        // The namespace is part of the object's key: a desired object is only ever compared
        // with the live one of its namespace, and kube-apiserver clears it on cluster-scoped
        // objects (which a manifest may still name one on).
        [Seg::Field(m)] if m == "metadata" => SERVER_METADATA.contains(&key) || key == "namespace",
        [Seg::Field(m), Seg::Field(a)] if m == "metadata" && a == "annotations" => {
            SERVER_ANNOTATIONS.contains(&key) || key.starts_with("driftd.io/")
        }
        _ => false,
    }
}

/// Live fields looked at past the one matched last before a desired field is looked up by
/// its hash.
const LOOKAHEAD: usize = 2;

/// The live value of field `key`. A desired object and its live copy mostly list their fields
/// in the same order (the API server's, which defaulting follows), so the field is first
/// looked for just past the live field matched last (`cursor`), by comparing names, then
/// by hashing `key`: the lookups were a third of a walk, hashing most of it.
fn live_field<'l>(
    live: &'l serde_json::Map<String, Value>,
    cursor: &mut serde_json::map::Iter<'l>,
    key: &str,
) -> Option<&'l Value> {
    let mut ahead = cursor.clone();
    for _ in 0..LOOKAHEAD {
        match ahead.next() {
            Some((name, value)) if name == key => {
                *cursor = ahead;
                return Some(value);
            }
            Some(_) => {}
            None => break,
        }
    }
    live.get(key)
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
    /// Field names the walk has left, their buffers reused for the next fields it enters:
    /// an allocation and a free per field visited were a tenth of a walk.
    spare_names: Vec<String>,
}

impl<'a> Walker<'a> {
    pub fn new(ctx: Context<'a>) -> Self {
        Walker {
            kind: ctx.kind,
            builtin: ctx.builtin,
            ctx,
            changes: Vec::new(),
            spare_names: Vec::new(),
        }
    }

    /// Steps into field `name`: pushes it onto `segs`, in a reused buffer.
    fn enter_field(&mut self, segs: &mut Vec<Seg>, name: &str) {
        let mut field = self.spare_names.pop().unwrap_or_default();
        field.clear();
        field.push_str(name);
        segs.push(Seg::Field(field));
    }

    /// Steps out of the field [`Walker::enter_field`] entered, keeping its buffer.
    fn leave_field(&mut self, segs: &mut Vec<Seg>) {
        if let Some(Seg::Field(field)) = segs.pop() {
            self.spare_names.push(field);
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
        with_field_names(segs, |names| {
            is_omitted_zero(self.ctx.api_version, self.kind, names, v)
        })
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
                let mut cursor = lm.iter();
                for (k, dv) in dm {
                    if skipped(segs, k) {
                        continue;
                    }
                    self.enter_field(segs, k);
                    let pv = p.and_then(|p| p.get(k));
                    let lv = live_field(lm, &mut cursor, k);
                    if self.is_namespace(segs) {
                        self.namespace(segs, dv, lv);
                    } else {
                        self.value(segs, dv, lv, pv);
                    }
                    self.leave_field(segs);
                }
                if let Some(Value::Object(pm)) = p {
                    for (k, pv) in pm {
                        if dm.contains_key(k) || skipped(segs, k) {
                            continue;
                        }
                        if let Some(lv) = lm.get(k) {
                            self.enter_field(segs, k);
                            self.prune(segs, pv, lv);
                            self.leave_field(segs);
                        }
                    }
                }
            }
            (Value::Array(da), Value::Array(la)) => {
                let pa = p.and_then(Value::as_array).map(Vec::as_slice);
                list_items::compare(self, segs, da, la, pa);
            }
            _ => {
                if !self.scalar_equal(segs, d, l) {
                    self.push(segs, ChangeOp::Replace, Some(d), Some(l));
                }
            }
        }
    }

    fn is_namespace(&self, segs: &[Seg]) -> bool {
        matches!(segs, [Seg::Field(m), Seg::Field(n)] if m == "metadata" && n == "namespace")
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

    /// Equal as kube-apiserver stores them: values of the same spelling always are, so the
    /// field's type is only looked up for the few that differ.
    fn scalar_equal(&self, segs: &[Seg], d: &Value, l: &Value) -> bool {
        if scalars_equal(d, l) {
            return true;
        }
        with_field_names(segs, |names| {
            match driftd_k8s::api_types::scalar_type(self.ctx.api_version, self.kind, names) {
                Some(ScalarType::Quantity) => quantities_equal(d, l),
                Some(ScalarType::Bytes) => bytes_equal(d, l),
                Some(ScalarType::Plain) => false,
                // A custom resource is stored as written; quantities where a pod spec's
                // sit are still read as quantities (operators canonicalize what they copy).
                None => is_quantity_field(self.kind, names) && quantities_equal(d, l),
            }
        })
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
                    self.enter_field(segs, k);
                    self.prune(segs, pv, lv);
                    self.leave_field(segs);
                }
            }
            return;
        }
        if let (Value::Array(pa), Value::Array(la)) = (p, l) {
            if list_items::is_set_list(&field_names(segs)) && segs.len() == 2 {
                return list_items::set(self, segs, &[], la, Some(pa), false);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The ordered lookup answers as a hashed one does, whatever order the live fields are
    /// in: the same, reversed, with fields interleaved, or with fields missing.
    #[test]
    fn a_live_field_is_found_in_any_order() {
        let desired = ["a", "b", "c", "d", "e", "f"];
        let lives = [
            json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6}),
            json!({"f": 6, "e": 5, "d": 4, "c": 3, "b": 2, "a": 1}),
            json!({"x": 0, "a": 1, "y": 0, "z": 0, "w": 0, "b": 2, "c": 3, "f": 6}),
            json!({"c": 3, "a": 1, "f": 6, "b": 2}),
            json!({}),
        ];
        for live in &lives {
            let map = live.as_object().unwrap();
            let mut cursor = map.iter();
            for key in desired {
                assert_eq!(
                    live_field(map, &mut cursor, key),
                    map.get(key),
                    "{key} in {live}"
                );
            }
        }
    }

    /// Server metadata, identity and status are skipped where they are, and only there.
    #[test]
    fn only_server_fields_at_their_place_are_skipped() {
        let field = |name: &str| Seg::Field(name.to_string());
        assert!(skipped(&[], "status"));
        assert!(skipped(&[], "apiVersion"));
        assert!(!skipped(&[], "spec"));
        assert!(skipped(&[field("metadata")], "resourceVersion"));
        assert!(skipped(&[field("metadata")], "managedFields"));
        assert!(!skipped(&[field("metadata")], "labels"));
        assert!(!skipped(&[field("spec")], "resourceVersion"));
        let annotations = [field("metadata"), field("annotations")];
        assert!(skipped(&annotations, "deployment.kubernetes.io/revision"));
        assert!(skipped(&annotations, "driftd.io/source"));
        assert!(!skipped(&annotations, "team"));
        assert!(!skipped(
            &[field("spec"), field("annotations")],
            "driftd.io/x"
        ));
        let item = Seg::Item {
            desired: Some(0),
            live: Some(0),
            key: None,
        };
        assert!(!skipped(&[item, field("metadata")], "uid"));
    }
}
