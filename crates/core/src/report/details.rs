//! The changes and restoring patch of a drift entry, held as their compact JSON text.
//!
//! The daemon keeps an entry per drifting object for as long as it drifts. As trees, one
//! changed Deployment image cost about 1.5 KB (`Change` is 248 bytes before its strings and
//! values, a patch operation a few hundred more): at 50,000 drifting objects that was the
//! largest part of driftd's memory after its packed copies. The same content as
//! text is a single allocation of a fraction of that, and it is what `/drift` sends anyway:
//! it serializes as is, with no tree built per query. Readers that need the values parse it
//! ([`Changes::to_vec`], [`DriftPatch::to_patch`]); only Events, remediation and the pages do,
//! one entry at a time.

use crate::diff::Change;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// The changes of one drift entry (see the module doc).
#[derive(Clone, Default)]
pub struct Changes {
    /// `None`: no changes (in-sync entries allocate nothing).
    text: Option<Box<RawValue>>,
    len: u32,
}

impl Changes {
    pub fn new(changes: &[Change]) -> Changes {
        Changes {
            text: raw(changes, changes.is_empty()),
            len: changes.len() as u32,
        }
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The changes, parsed.
    pub fn to_vec(&self) -> Vec<Change> {
        match &self.text {
            Some(text) => serde_json::from_str(text.get()).expect("changes serialized by new"),
            None => Vec::new(),
        }
    }

    /// The `path` of every change, in order; the rest of the text is skipped, not built.
    pub fn paths(&self) -> Vec<String> {
        #[derive(Deserialize)]
        struct Path {
            path: String,
        }
        match &self.text {
            Some(text) => serde_json::from_str::<Vec<Path>>(text.get())
                .expect("changes serialized by new")
                .into_iter()
                .map(|p| p.path)
                .collect(),
            None => Vec::new(),
        }
    }
}

impl Changes {
    /// The field managers that wrote the changed fields and when (newest time per manager),
    /// in the order of their first change; the rest of the text is skipped, not built.
    pub fn writers(&self) -> Vec<(String, Option<String>)> {
        #[derive(Deserialize)]
        struct Writer {
            manager: Option<String>,
            changed_at: Option<String>,
        }
        let Some(text) = &self.text else {
            return Vec::new();
        };
        let mut writers: Vec<(String, Option<String>)> = Vec::new();
        for w in serde_json::from_str::<Vec<Writer>>(text.get()).expect("changes serialized by new")
        {
            let Some(manager) = w.manager else { continue };
            match writers.iter_mut().find(|(m, _)| *m == manager) {
                Some((_, at)) => *at = (*at).clone().max(w.changed_at),
                None => writers.push((manager, w.changed_at)),
            }
        }
        writers
    }
}

impl From<Vec<Change>> for Changes {
    fn from(changes: Vec<Change>) -> Changes {
        Changes::new(&changes)
    }
}

/// The patch that restores the desired fields of one drift entry (see the module doc).
#[derive(Clone, Default)]
pub struct DriftPatch {
    /// `None`: no operations.
    text: Option<Box<RawValue>>,
}

impl DriftPatch {
    pub fn new(patch: &json_patch::Patch) -> DriftPatch {
        DriftPatch {
            text: raw(patch, patch.0.is_empty()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_none()
    }

    /// The patch, parsed.
    pub fn to_patch(&self) -> json_patch::Patch {
        match &self.text {
            Some(text) => serde_json::from_str(text.get()).expect("patch serialized by new"),
            None => json_patch::Patch::default(),
        }
    }
}

impl From<json_patch::Patch> for DriftPatch {
    fn from(patch: json_patch::Patch) -> DriftPatch {
        DriftPatch::new(&patch)
    }
}

/// `value` as compact JSON text, or `None` when `empty`.
fn raw<T: Serialize + ?Sized>(value: &T, empty: bool) -> Option<Box<RawValue>> {
    (!empty).then(|| {
        let text = serde_json::to_string(value).expect("changes and patches serialize");
        RawValue::from_string(text).expect("serde_json writes valid JSON")
    })
}

fn text(raw: &Option<Box<RawValue>>) -> &str {
    raw.as_deref().map_or("[]", RawValue::get)
}

impl PartialEq for Changes {
    fn eq(&self, other: &Self) -> bool {
        text(&self.text) == text(&other.text)
    }
}

impl PartialEq for DriftPatch {
    fn eq(&self, other: &Self) -> bool {
        text(&self.text) == text(&other.text)
    }
}

impl std::fmt::Debug for Changes {
    // The parsed form, as the `Vec<Change>` it replaced printed (values are already redacted
    // where they are secret).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_vec().fmt(f)
    }
}

impl std::fmt::Debug for DriftPatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.to_patch().fmt(f)
    }
}

impl Serialize for Changes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.text {
            Some(text) => text.serialize(serializer),
            None => serializer.collect_seq(std::iter::empty::<Change>()),
        }
    }
}

impl Serialize for DriftPatch {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.text {
            Some(text) => text.serialize(serializer),
            None => serializer.collect_seq(std::iter::empty::<()>()),
        }
    }
}

// Through the parsed types, so any deserializer works (a `Value`, not only text).
impl<'de> Deserialize<'de> for Changes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Change>::deserialize(deserializer).map(Changes::from)
    }
}

impl<'de> Deserialize<'de> for DriftPatch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        json_patch::Patch::deserialize(deserializer).map(DriftPatch::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::ChangeOp;
    use serde_json::json;

    fn change(path: &str, desired: &str) -> Change {
        Change {
            path: path.to_string(),
            op: ChangeOp::Replace,
            desired: Some(json!(desired)),
            live: Some(json!("edited")),
            field: path.trim_start_matches('/').replace('/', "."),
            manager: Some("kubectl-edit".to_string()),
            changed_at: None,
        }
    }

    #[test]
    fn changes_serialize_as_the_array_they_are_and_come_back() {
        let list = vec![change("/data/a", "1"), change("/data/b", "2")];
        let changes = Changes::new(&list);
        assert_eq!(changes.len(), 2);
        assert!(!changes.is_empty());
        assert_eq!(changes.to_vec(), list);
        assert_eq!(changes.paths(), ["/data/a", "/data/b"]);
        assert_eq!(
            serde_json::to_value(&changes).unwrap(),
            serde_json::to_value(&list).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&changes).unwrap(),
            serde_json::to_string(&list).unwrap()
        );
        let back: Changes = serde_json::from_value(serde_json::to_value(&list).unwrap()).unwrap();
        assert_eq!(back, changes);
        assert_ne!(Changes::new(&list[..1]), changes);
    }

    #[test]
    fn writers_are_each_manager_once_with_its_newest_time() {
        let at = |manager: Option<&str>, when: Option<&str>, path: &str| Change {
            manager: manager.map(str::to_string),
            changed_at: when.map(str::to_string),
            ..change(path, "x")
        };
        let changes = Changes::new(&[
            at(
                Some("kubectl-edit"),
                Some("2026-12-01T10:00:00Z"),
                "/data/a",
            ),
            at(Some("helm"), None, "/data/b"),
            at(None, None, "/data/c"),
            at(
                Some("kubectl-edit"),
                Some("2026-12-01T11:00:00Z"),
                "/data/d",
            ),
        ]);
        assert_eq!(
            changes.writers(),
            [
                (
                    "kubectl-edit".to_string(),
                    Some("2026-12-01T11:00:00Z".to_string())
                ),
                ("helm".to_string(), None),
            ]
        );
        assert!(Changes::default().writers().is_empty());
    }

    #[test]
    fn no_changes_are_an_empty_array_and_allocate_nothing() {
        let none = Changes::default();
        assert!(none.is_empty());
        assert!(none.text.is_none());
        assert_eq!(none, Changes::new(&[]));
        assert_eq!(serde_json::to_string(&none).unwrap(), "[]");
        assert!(none.to_vec().is_empty() && none.paths().is_empty());
        let back: Changes = serde_json::from_str("[]").unwrap();
        assert!(back.text.is_none());
    }

    #[test]
    fn a_patch_serializes_as_its_operations_and_comes_back() {
        let ops = json!([{"op": "replace", "path": "/data/a", "value": "1"},
            {"op": "remove", "path": "/data/b"}]);
        let patch: json_patch::Patch = serde_json::from_value(ops.clone()).unwrap();
        let held = DriftPatch::new(&patch);
        assert!(!held.is_empty());
        assert_eq!(held.to_patch(), patch);
        assert_eq!(serde_json::to_value(&held).unwrap(), ops);
        let back: DriftPatch = serde_json::from_value(ops).unwrap();
        assert_eq!(back, held);
        assert!(DriftPatch::default().is_empty());
        assert_eq!(serde_json::to_string(&DriftPatch::default()).unwrap(), "[]");
        assert_eq!(DriftPatch::default(), DriftPatch::new(&Default::default()));
    }
}
