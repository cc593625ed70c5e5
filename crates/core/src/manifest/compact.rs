//! Desired objects held as their JSON text between the steps of a load, and the trait that
//! lets a commit take either form.
//!
//! A `serde_json::Value` of a typical object costs about ten times its text (a map, a hash
//! table and a heap string per field): a commit of 100,000 objects read into trees peaked at
//! 1.1 GB. Text is what the store keeps anyway, so a commit holds each object as text and
//! makes its tree only while one step needs it.

use driftd_k8s::ObjectKey;
use serde_json::Value;
use std::borrow::Cow;

use super::{ManifestObject, Origin};

/// One desired object, validated, as compact JSON text (namespace filled in).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactObject {
    pub origin: Origin,
    pub key: ObjectKey,
    pub api_version: String,
    /// The object as serde_json writes it: parsing it gives back the validated tree.
    pub text: Box<str>,
    /// See [`ManifestObject::scope_unresolved`].
    pub scope_unresolved: bool,
}

impl CompactObject {
    /// The object's tree.
    pub fn tree(&self) -> Value {
        serde_json::from_str(&self.text).expect("the text was written by serde_json")
    }

    pub fn into_manifest(self) -> ManifestObject {
        let object = self.tree();
        ManifestObject {
            origin: self.origin,
            key: self.key,
            api_version: self.api_version,
            object,
            scope_unresolved: self.scope_unresolved,
        }
    }
}

/// A desired object in either form: what a commit needs of one.
pub trait Desired: Sync {
    fn key(&self) -> &ObjectKey;
    fn origin(&self) -> &Origin;
    fn api_version(&self) -> &str;
    fn scope_unresolved(&self) -> bool;
    /// The tree: borrowed when the object is one, made from the text when not.
    fn tree(&self) -> Cow<'_, Value>;
}

impl Desired for ManifestObject {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn origin(&self) -> &Origin {
        &self.origin
    }
    fn api_version(&self) -> &str {
        &self.api_version
    }
    fn scope_unresolved(&self) -> bool {
        self.scope_unresolved
    }
    fn tree(&self) -> Cow<'_, Value> {
        Cow::Borrowed(&self.object)
    }
}

impl Desired for CompactObject {
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn origin(&self) -> &Origin {
        &self.origin
    }
    fn api_version(&self) -> &str {
        &self.api_version
    }
    fn scope_unresolved(&self) -> bool {
        self.scope_unresolved
    }
    fn tree(&self) -> Cow<'_, Value> {
        Cow::Owned(CompactObject::tree(self))
    }
}
