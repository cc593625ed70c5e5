//! Custom resources as kube-apiserver stores them, from their CustomResourceDefinition's
//! structural schemas: pruning of fields the schema does not allow ([`pruning`]), `default:`
//! values ([`defaulting`]), list and map semantics ([`schema::ListType`],
//! [`schema::MapType`]) and the uniqueness of sets and map-lists ([`listtype`]). The differ
//! compares a desired custom resource in the form [`CrdSchemas::as_served`] gives it; the
//! simulator stores custom resources through the same functions.
//!
//! Versions: an object written against a served version that is not the storage version is
//! stored in the storage version and converted back when read. Only the `None` conversion
//! strategy is modelled (apiVersion changes, fields are pruned and defaulted by each
//! version's schema on the way); conversion webhooks are not: a CRD with
//! `conversion.strategy: Webhook` converts through code no static model can know.

pub mod defaulting;
pub mod listtype;
pub mod pruning;
pub mod schema;

#[cfg(test)]
mod defaulting_tests;
#[cfg(test)]
mod listtype_tests;
#[cfg(test)]
mod pruning_tests;
#[cfg(test)]
mod tests;

pub use schema::{ListType, MapType, Step, Structural};

use serde_json::Value;

/// A CRD that cannot be read into structural schemas.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("not a CustomResourceDefinition: {0}")]
    NotACrd(String),
    #[error("version {0} is not defined by the CustomResourceDefinition")]
    NoSuchVersion(String),
    #[error("{path}: {why}")]
    Invalid { path: String, why: String },
}

/// One version of a CRD: whether it is served and stored, and its structural schema
/// (`None` when the version has none, which a v1 CRD does not allow).
#[derive(Debug, Clone, PartialEq)]
pub struct VersionSchema {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub schema: Option<Structural>,
}

/// Every version's structural schema of one CRD: what the differ and the simulator need
/// to store, read and compare its custom resources.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdSchemas {
    pub group: String,
    pub kind: String,
    /// The CRD's name (`<plural>.<group>`), for messages.
    pub name: String,
    /// `spec.preserveUnknownFields` (legacy; v1 CRDs must leave it false): nothing is pruned.
    pub preserve_unknown_fields: bool,
    pub versions: Vec<VersionSchema>,
}

/// What [`CrdSchemas::as_served`] did to an object: the fields kube-apiserver would drop.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Served {
    /// Paths (`spec.foo`, `spec.items[1].bar`, `metadata.foo`) of fields the schema of the
    /// written version prunes, sorted.
    pub pruned: Vec<String>,
}

impl Structural {
    /// The structural schema of `version` of the CustomResourceDefinition `crd`, its
    /// defaults pruned as the server prunes them when it loads the CRD.
    pub fn from_crd(crd: &Value, version: &str) -> Result<Structural, SchemaError> {
        CrdSchemas::from_crd(crd)?
            .versions
            .into_iter()
            .find(|v| v.name == version)
            .and_then(|v| v.schema)
            .ok_or_else(|| SchemaError::NoSuchVersion(version.to_string()))
    }
}

impl CrdSchemas {
    /// Reads every version's `schema.openAPIV3Schema` of a v1 CustomResourceDefinition.
    pub fn from_crd(crd: &Value) -> Result<CrdSchemas, SchemaError> {
        let not = |why: &str| SchemaError::NotACrd(why.to_string());
        if crd.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
            return Err(not("kind is not CustomResourceDefinition"));
        }
        let spec = crd.get("spec").ok_or_else(|| not("no spec"))?;
        let text = |p: &str| spec.pointer(p).and_then(Value::as_str).map(str::to_string);
        let group = text("/group").ok_or_else(|| not("no spec.group"))?;
        let kind = text("/names/kind").ok_or_else(|| not("no spec.names.kind"))?;
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| text("/names/plural").map(|p| format!("{p}.{group}")))
            .unwrap_or_default();
        let mut versions = Vec::new();
        for v in spec["versions"].as_array().into_iter().flatten() {
            let version = v["name"].as_str().unwrap_or_default().to_string();
            let schema = match v.pointer("/schema/openAPIV3Schema") {
                Some(s) => {
                    let mut s = Structural::from_json(s).map_err(|e| match e {
                        SchemaError::Invalid { path, why } => SchemaError::Invalid {
                            path: format!("spec.versions[{version}].schema.{path}"),
                            why,
                        },
                        other => other,
                    })?;
                    defaulting::prune_defaults(&mut s);
                    Some(s)
                }
                None => None,
            };
            versions.push(VersionSchema {
                name: version,
                served: v["served"].as_bool().unwrap_or(true),
                storage: v["storage"].as_bool().unwrap_or(false),
                schema,
            });
        }
        Ok(CrdSchemas {
            group,
            kind,
            name,
            preserve_unknown_fields: spec["preserveUnknownFields"].as_bool().unwrap_or(false),
            versions,
        })
    }

    /// (group, kind): how `ClusterFacts` and the simulator index CRDs.
    pub fn key(&self) -> (String, String) {
        (self.group.clone(), self.kind.clone())
    }

    /// The version named `name`.
    pub fn version(&self, name: &str) -> Option<&VersionSchema> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// The storage version (one per CRD).
    pub fn storage(&self) -> Option<&VersionSchema> {
        self.versions.iter().find(|v| v.storage)
    }

    /// What a write does to an object at one version's schema: prune (unless the CRD
    /// preserves unknown fields), decode `metadata` into ObjectMeta, drop non-nullable
    /// nulls without default, apply defaults (`unstructuredSchemaCoercer.apply` then the
    /// codec's `unstructuredDefaulter`, `pkg/apiserver/customresource_handler.go`).
    pub fn write(&self, obj: &mut Value, schema: Option<&Structural>) -> Vec<String> {
        let mut pruned = Vec::new();
        if !self.preserve_unknown_fields {
            pruned = pruning::prune(obj, schema, true);
            defaulting::prune_nulls(obj, schema);
        }
        pruned.extend(pruning::coerce_object_meta(obj, schema));
        defaulting::apply_defaults(obj, schema);
        pruned.sort();
        pruned
    }

    /// `obj` (written against its own apiVersion's version) as kube-apiserver returns it at
    /// that version after storing it: written at that version, converted to the storage
    /// version (`None` strategy: apiVersion only; pruned and defaulted by the storage
    /// schema when stored and read), converted back and pruned by the written version's
    /// schema. Errors for a version the CRD does not define.
    pub fn as_served(&self, obj: &mut Value) -> Result<Served, SchemaError> {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let version = crate::kinds::split_api_version(&api_version).1.to_string();
        let written = self
            .version(&version)
            .ok_or_else(|| SchemaError::NoSuchVersion(version.clone()))?;
        let pruned = self.write(obj, written.schema.as_ref());
        if let Some(storage) = self.storage().filter(|s| s.name != written.name) {
            obj["apiVersion"] = Value::String(format!("{}/{}", self.group, storage.name));
            self.write(obj, storage.schema.as_ref());
            obj["apiVersion"] = Value::String(api_version);
            if !self.preserve_unknown_fields {
                pruning::prune(obj, written.schema.as_ref(), true);
                defaulting::prune_nulls(obj, written.schema.as_ref());
            }
        }
        Ok(Served { pruned })
    }

    /// `obj`, as stored, the way kube-apiserver reads it back at `version`: decoded from
    /// the storage version (pruned, and defaulted by the storage version's schema: the
    /// storage codec's `schemaCoercingDecoder` and `unstructuredDefaulter` in
    /// `apiextensions-apiserver/pkg/apiserver/customresource_handler.go`), then converted
    /// to `version` (`None` strategy: the apiVersion only) and pruned by that version's
    /// schema (`schemaCoercingConverter`). So a `default:` a CRD gained after an object was
    /// stored shows on every read without the object being written again. Errors for a
    /// version the CRD does not define.
    pub fn as_read(&self, obj: &mut Value, version: &str) -> Result<(), SchemaError> {
        let read = self
            .version(version)
            .ok_or_else(|| SchemaError::NoSuchVersion(version.to_string()))?;
        let storage = self.storage().unwrap_or(read);
        obj["apiVersion"] = Value::String(format!("{}/{}", self.group, storage.name));
        self.write(obj, storage.schema.as_ref());
        obj["apiVersion"] = Value::String(format!("{}/{}", self.group, read.name));
        if read.name != storage.name && !self.preserve_unknown_fields {
            pruning::prune(obj, read.schema.as_ref(), true);
            defaulting::prune_nulls(obj, read.schema.as_ref());
        }
        Ok(())
    }
}
