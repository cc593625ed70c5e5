//! Structural-schema defaulting, as apiextensions-apiserver applies it after pruning
//! (`pkg/apiserver/schema/defaulting/algorithm.go`, `prunenulls.go`, `prune.go`): a
//! `default:` fills a missing field wherever its parent object exists (list items and
//! `additionalProperties` values included); a filled-in object is walked in turn, so
//! `default: {}` cascades into its children's defaults; a `null` where the schema is not
//! `nullable` is replaced by the default, or dropped when there is none.

use serde_json::Value;

use super::pruning;
use super::schema::Structural;

fn non_nullable_null(x: &Value, s: Option<&Structural>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

/// The schema of `key` in object node `s`: its property, else the `additionalProperties`
/// schema (`getSchemaForField`).
fn field_schema<'s>(s: Option<&'s Structural>, key: &str) -> Option<&'s Structural> {
    s?.field(key)
}

/// `Default`: fills in the defaults of `s` in `x`.
pub fn apply_defaults(x: &mut Value, s: Option<&Structural>) {
    let Some(s) = s else { return };
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                let missing = m.get(k).is_none_or(|v| non_nullable_null(v, Some(prop)));
                if missing {
                    m.insert(k.clone(), default.clone());
                }
            }
            let extra = s
                .additional_properties
                .as_ref()
                .and_then(|a| a.schema.as_deref());
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply_defaults(v, Some(prop));
                } else if s.additional_properties.is_some() {
                    if let Some(extra) = extra {
                        if non_nullable_null(v, Some(extra)) {
                            if let Some(default) = &extra.default {
                                *v = default.clone();
                            }
                        }
                    }
                    apply_defaults(v, extra);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.items.as_deref();
            for item in items.iter_mut() {
                if non_nullable_null(item, item_schema) {
                    if let Some(default) = item_schema.and_then(|i| i.default.as_ref()) {
                        *item = default.clone();
                    }
                }
                apply_defaults(item, item_schema);
            }
        }
        _ => {}
    }
}

/// `PruneNonNullableNullsWithoutDefaults`: removes `null` object fields whose schema is
/// neither nullable nor defaulted (those with a default are replaced by [`apply_defaults`]).
pub fn prune_nulls(x: &mut Value, s: Option<&Structural>) {
    match x {
        Value::Object(m) => {
            m.retain(|k, v| {
                let schema = field_schema(s, k);
                let drop =
                    non_nullable_null(v, schema) && schema.is_some_and(|s| s.default.is_none());
                if !drop {
                    prune_nulls(v, schema);
                }
                !drop
            });
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            items.iter_mut().for_each(|i| prune_nulls(i, item_schema));
        }
        _ => {}
    }
}

/// `PruneDefaults`: a default holding fields its schema does not specify is pruned once,
/// when the CRD is read, so the server never writes them. Pruned by the node's own schema
/// (upstream wraps the default into a skeleton of the whole object and prunes that with the
/// root schema: the same for every node below the root, whose own `default` validation
/// forbids).
pub fn prune_defaults(s: &mut Structural) {
    if let Some(mut default) = s.default.take() {
        let node = s.clone();
        pruning::coerce_embedded(&mut default, &node);
        pruning::prune(&mut default, Some(&node), false);
        s.default = Some(default);
    }
    if let Some(extra) = s
        .additional_properties
        .as_mut()
        .and_then(|a| a.schema.as_deref_mut())
    {
        prune_defaults(extra);
    }
    if let Some(items) = s.items.as_deref_mut() {
        prune_defaults(items);
    }
    for prop in s.properties.values_mut() {
        prune_defaults(prop);
    }
}
