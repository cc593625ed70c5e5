//! Paths into objects: RFC 6901 pointers for patches and a readable dotted form for people.
//!
//! A path is kept as segments rather than a string because the same field sits at different
//! list positions in the desired and the live object (keyed lists are matched by key, not
//! by index), and because ignore rules match keyed items by their merge key.

/// One step from a value to a child value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// A field of an object (or a key of a map such as `labels`).
    Field(String),
    /// An item of a list. Indexes are positions in the desired and in the live list; a keyed
    /// item also carries its merge key field and value.
    Item {
        desired: Option<usize>,
        live: Option<usize>,
        key: Option<(String, String)>,
    },
}

/// Escapes one reference token as RFC 6901 requires (`~` first, then `/`).
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Undoes [`escape`].
pub fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Which object's list positions a pointer should use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Desired,
    Live,
}

/// RFC 6901 pointer of `segs`, using list positions of `side` (falling back to the other
/// side's position for an item that exists only there).
pub fn pointer(segs: &[Seg], side: Side) -> String {
    let mut out = String::new();
    for seg in segs {
        out.push('/');
        match seg {
            Seg::Field(name) => out.push_str(&escape(name)),
            Seg::Item { desired, live, .. } => {
                let index = match side {
                    Side::Desired => desired.or(*live),
                    Side::Live => live.or(*desired),
                };
                out.push_str(&index.unwrap_or(0).to_string());
            }
        }
    }
    out
}

/// The value at field names `path` below `value`. What `Value::pointer` answers for a
/// pointer without list positions or escapes, without the two `String`s it allocates per
/// token: the engine asks a few such paths of every watch event.
pub fn at<'v>(value: &'v serde_json::Value, path: &[&str]) -> Option<&'v serde_json::Value> {
    path.iter().try_fold(value, |value, name| value.get(name))
}

/// Field names (list positions left out), the shape `merge_key` expects.
pub fn field_names(segs: &[Seg]) -> Vec<&str> {
    segs.iter()
        .filter_map(|s| match s {
            Seg::Field(n) => Some(n.as_str()),
            Seg::Item { .. } => None,
        })
        .collect()
}

/// Calls `f` with the field names of `segs` (as [`field_names`]) from a buffer on the stack:
/// the walk asks for them at every scalar it compares, where a `Vec` each was a tenth of its
/// time in allocations.
pub fn with_field_names<R>(segs: &[Seg], f: impl FnOnce(&[&str]) -> R) -> R {
    const DEPTH: usize = 24;
    let mut names = [""; DEPTH];
    let mut len = 0;
    for seg in segs {
        if let Seg::Field(name) = seg {
            if len == DEPTH {
                return f(&field_names(segs));
            }
            names[len] = name;
            len += 1;
        }
    }
    f(&names[..len])
}

fn is_plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Readable path: `spec.template.spec.containers[name=app].image`,
/// `metadata.labels["app.kubernetes.io/name"]`, `spec.args[2]`.
pub fn display(segs: &[Seg]) -> String {
    let mut out = String::new();
    for seg in segs {
        match seg {
            Seg::Field(name) if is_plain_name(name) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Seg::Field(name) => {
                out.push('[');
                // A JSON string literal quotes and escapes exactly as a reader expects.
                out.push_str(&serde_json::Value::String(name.clone()).to_string());
                out.push(']');
            }
            Seg::Item {
                key: Some((field, value)),
                ..
            } => {
                out.push_str(&format!("[{field}={value}]"));
            }
            Seg::Item { desired, live, .. } => {
                out.push_str(&format!("[{}]", desired.or(*live).unwrap_or(0)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_answers_as_a_pointer_does() {
        let object = serde_json::json!({"metadata": {"name": "web", "labels": {"a": "1"}},
            "spec": [1, 2], "data": null});
        for path in [
            &["metadata", "name"][..],
            &["metadata", "labels"],
            &["metadata", "absent"],
            &["metadata", "name", "deeper"],
            &["spec", "0"],
            &["data"],
            &[],
        ] {
            let pointer: String = path.iter().map(|p| format!("/{p}")).collect();
            let expected = match path {
                ["spec", "0"] => None, // list positions are not field names
                _ => object.pointer(&pointer),
            };
            assert_eq!(at(&object, path), expected, "{pointer}");
        }
    }

    #[test]
    fn field_names_on_the_stack_are_the_field_names_at_any_depth() {
        for depth in [0, 1, 5, 24, 25, 40] {
            let segs: Vec<Seg> = (0..depth)
                .flat_map(|i| {
                    [
                        Seg::Field(format!("f{i}")),
                        Seg::Item {
                            desired: Some(i),
                            live: None,
                            key: None,
                        },
                    ]
                })
                .collect();
            let expected = field_names(&segs);
            assert_eq!(expected.len(), depth);
            with_field_names(&segs, |names| assert_eq!(names, expected.as_slice()));
        }
    }

    fn f(s: &str) -> Seg {
        Seg::Field(s.to_string())
    }

    #[test]
    fn pointers_escape_tilde_and_slash() {
        let segs = [f("metadata"), f("annotations"), f("a/b~c")];
        assert_eq!(pointer(&segs, Side::Live), "/metadata/annotations/a~1b~0c");
        assert_eq!(unescape("a~1b~0c"), "a/b~c");
        assert_eq!(unescape("~01"), "~1");
    }

    #[test]
    fn keyed_items_use_each_sides_position() {
        let segs = [
            f("spec"),
            f("containers"),
            Seg::Item {
                desired: Some(0),
                live: Some(1),
                key: Some(("name".into(), "app".into())),
            },
            f("image"),
        ];
        assert_eq!(pointer(&segs, Side::Desired), "/spec/containers/0/image");
        assert_eq!(pointer(&segs, Side::Live), "/spec/containers/1/image");
        assert_eq!(display(&segs), "spec.containers[name=app].image");
    }

    #[test]
    fn display_quotes_map_keys_that_are_not_plain_names() {
        let segs = [f("metadata"), f("labels"), f("app.kubernetes.io/name")];
        assert_eq!(
            display(&segs),
            "metadata.labels[\"app.kubernetes.io/name\"]"
        );
        let segs = [
            f("spec"),
            f("args"),
            Seg::Item {
                desired: Some(2),
                live: Some(2),
                key: None,
            },
        ];
        assert_eq!(display(&segs), "spec.args[2]");
    }
}
