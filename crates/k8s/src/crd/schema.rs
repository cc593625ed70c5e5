//! The structural schema of a CRD version: the part of its `openAPIV3Schema` that decides
//! what kube-apiserver stores (properties, items, additionalProperties, defaults, nullable and
//! the `x-kubernetes-*` extensions), read as apiextensions-apiserver's `NewStructural` reads
//! it (`pkg/apiserver/schema/convert.go`, `structural.go`). Value validations (`enum`,
//! `pattern`, `anyOf`...) decide whether a write is accepted, not what is stored: they are
//! not kept.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::SchemaError;

/// A structural schema node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Structural {
    /// `type`: object, array, string, integer, number, boolean, or "" (int-or-string,
    /// preserve-unknown-fields).
    pub type_: String,
    pub properties: BTreeMap<String, Structural>,
    pub items: Option<Box<Structural>>,
    pub additional_properties: Option<AdditionalProperties>,
    pub default: Option<Value>,
    pub nullable: bool,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    pub map_type: Option<String>,
}

/// `additionalProperties`: a schema for every other key (`allows` is then true), or a bare
/// boolean (`StructuralOrBool` upstream).
#[derive(Debug, Clone, PartialEq)]
pub struct AdditionalProperties {
    pub schema: Option<Box<Structural>>,
    pub allows: bool,
}

/// How a list is merged and compared (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// One value, replaced whole; also every list without a list type.
    Atomic,
    /// Unique scalar (or atomic) items; their order does not matter.
    Set,
    /// Objects identified by the values of these fields (`x-kubernetes-list-map-keys`).
    Map(Vec<String>),
}

/// How an object is merged and compared (`x-kubernetes-map-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapType {
    /// Each key on its own (the default).
    Granular,
    /// One value, replaced whole.
    Atomic,
}

/// One step of a path into an object: a field or map key, or a list item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    Field(&'a str),
    Item,
}

/// Keys `NewStructural` refuses (`validateUnsupportedFields`).
const UNSUPPORTED: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
];

impl Structural {
    /// Reads a JSONSchemaProps (as JSON) into a structural schema.
    pub fn from_json(schema: &Value) -> Result<Structural, SchemaError> {
        Self::read(schema, "openAPIV3Schema")
    }

    fn read(v: &Value, at: &str) -> Result<Structural, SchemaError> {
        let bad = |why: String| SchemaError::Invalid {
            path: at.to_string(),
            why,
        };
        let m: &Map<String, Value> = v.as_object().ok_or_else(|| bad("not an object".into()))?;
        if let Some(k) = UNSUPPORTED.iter().find(|k| m.contains_key(**k)) {
            return Err(bad(format!("'{k}' is not supported")));
        }
        let text = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
        let flag = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
            return Err(bad(
                "'x-kubernetes-preserve-unknown-fields' must be true or undefined".into(),
            ));
        }
        let mut s = Structural {
            type_: text("type").unwrap_or_default(),
            default: m.get("default").cloned(),
            nullable: flag("nullable"),
            preserve_unknown_fields: flag("x-kubernetes-preserve-unknown-fields"),
            embedded_resource: flag("x-kubernetes-embedded-resource"),
            int_or_string: flag("x-kubernetes-int-or-string"),
            list_type: text("x-kubernetes-list-type"),
            list_map_keys: m
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            map_type: text("x-kubernetes-map-type"),
            ..Structural::default()
        };
        if let Some(items) = m.get("items") {
            if items.is_array() {
                return Err(bad("'items' must be a schema, but is an array".into()));
            }
            s.items = Some(Box::new(Self::read(items, &format!("{at}.items"))?));
        }
        if let Some(Value::Object(props)) = m.get("properties") {
            for (k, p) in props {
                let child = Self::read(p, &format!("{at}.properties[{k}]"))?;
                s.properties.insert(k.clone(), child);
            }
        }
        s.additional_properties = match m.get("additionalProperties") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(allows)) => Some(AdditionalProperties {
                schema: None,
                allows: *allows,
            }),
            Some(schema) => Some(AdditionalProperties {
                schema: Some(Box::new(Self::read(
                    schema,
                    &format!("{at}.additionalProperties"),
                )?)),
                allows: true,
            }),
        };
        Ok(s)
    }

    /// The schema of a field or map value of this object node: its property, else the
    /// `additionalProperties` schema.
    pub fn field(&self, name: &str) -> Option<&Structural> {
        self.properties.get(name).or_else(|| {
            self.additional_properties
                .as_ref()
                .and_then(|a| a.schema.as_deref())
        })
    }

    /// The schema node at `path` below this one, or `None` where the schema says nothing
    /// (inside `x-kubernetes-preserve-unknown-fields` subtrees, unknown fields).
    pub fn at(&self, path: &[Step]) -> Option<&Structural> {
        let mut node = self;
        for step in path {
            node = match step {
                Step::Field(name) => node.field(name)?,
                Step::Item => node.items.as_deref()?,
            };
        }
        Some(node)
    }

    /// How this (list) node is compared: `map` with its keys, `set`, or atomic (the
    /// default, and for every list without `x-kubernetes-list-type`).
    pub fn list_type(&self) -> ListType {
        match self.list_type.as_deref() {
            Some("map") if !self.list_map_keys.is_empty() => {
                ListType::Map(self.list_map_keys.clone())
            }
            Some("set") => ListType::Set,
            _ => ListType::Atomic,
        }
    }

    /// How this (object) node is compared: granular unless `x-kubernetes-map-type: atomic`.
    pub fn map_type(&self) -> MapType {
        match self.map_type.as_deref() {
            Some("atomic") => MapType::Atomic,
            _ => MapType::Granular,
        }
    }
}
