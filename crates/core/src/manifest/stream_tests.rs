//! Reading a document (and a List item) at a time: the limits refuse as soon as reading
//! crosses them, and errors still name file, document and field.
//!
//! Expected values are hand-derived from the inputs written here; the 3 MiB default comes
//! from kube-apiserver's `MaxRequestBodyBytes` (see [`DEFAULT_MAX_OBJECT_BYTES`]).

use super::read::{read_source, Format};
use super::*;
use std::io::{BufReader, Read};

fn cm_json(name: &str) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"k":"{}"}}}}"#,
        "v".repeat(200)
    )
}

fn list_json(items: &[String]) -> String {
    format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}]}}"#,
        items.join(",")
    )
}

fn limits(max_object: usize, max_total: usize) -> LoadOptions {
    LoadOptions {
        max_object_bytes: max_object,
        max_total_bytes: max_total,
        ..LoadOptions::default()
    }
}

/// Serves `head`, then `fill` bytes for ever, and fails the test if more than `allowed`
/// bytes are taken: proof that a reader gave up early.
struct Tripwire {
    head: Vec<u8>,
    fill: u8,
    served: usize,
    allowed: usize,
}

impl Read for Tripwire {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        for b in buf.iter_mut() {
            *b = self.head.get(self.served).copied().unwrap_or(self.fill);
            self.served += 1;
        }
        assert!(
            self.served <= self.allowed,
            "read {} bytes, more than the limit and one buffer ({})",
            self.served,
            self.allowed
        );
        Ok(buf.len())
    }
}

/// Reads a never-ending input through a 4 KiB buffer with a per-object limit of `max`.
fn read_endless(head: &str, fill: u8, format: Format, max: usize) -> ManifestError {
    const BUFFER: usize = 4096;
    let tripwire = Tripwire {
        head: head.as_bytes().to_vec(),
        fill,
        served: 0,
        // The limit, the byte that crosses it, and what the buffer had already taken.
        allowed: max + 1 + BUFFER,
    };
    let mut reader = BufReader::with_capacity(BUFFER, tripwire);
    let options = limits(max, 1 << 30);
    let mut input = RawInput::default();
    read_source(
        &mut reader,
        "endless",
        format,
        &options,
        1 << 30,
        &mut input,
    )
    .unwrap_err()
}

#[test]
fn a_list_is_read_an_item_at_a_time() {
    // 200 items of about 280 bytes: the List is about 56 KiB, more than the per-object
    // limit of 1 KiB, which each item alone is under. Read as one document it would be
    // refused; read an item at a time it is taken whole, in order, each item with its
    // place in the List.
    let items: Vec<String> = (0..200).map(|i| cm_json(&format!("cm-{i}"))).collect();
    let text = list_json(&items);
    assert!(text.len() > 50 * 1024);
    let loaded = read_text(&text, "list.json", &limits(1024, 1 << 20)).unwrap();
    assert_eq!(loaded.objects.len(), 200);
    assert_eq!(loaded.objects[0].key.name, "cm-0");
    assert_eq!(loaded.objects[199].key.name, "cm-199");
    assert!(loaded.objects.iter().all(|o| o.origin.document == 0));
    // Sniffed (not a .json name) and from a second document of a stream, the same.
    let stream = format!("{}\n{text}", cm_json("first"));
    let loaded = read_text(&stream, "list.txt", &limits(1024, 1 << 20)).unwrap();
    assert_eq!(loaded.objects.len(), 201);
    assert_eq!(loaded.objects[200].origin.document, 1);
}

#[test]
fn an_oversize_list_item_is_refused_and_named() {
    let mut items: Vec<String> = (0..5).map(|i| cm_json(&format!("cm-{i}"))).collect();
    items[3] = cm_json(&"x".repeat(2000));
    let err = read_text(&list_json(&items), "list.json", &limits(1024, 1 << 20)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "list.json: document 0: field items[3] is larger than 1 KiB, the most one object may \
         be (kube-apiserver refuses a request body over 3 MiB); --max-object-size changes it"
    );
}

#[test]
fn a_list_whose_kind_comes_after_its_items_is_still_unwrapped() {
    let text = format!(
        r#"{{"items":[{},{}],"kind":"List","apiVersion":"v1"}}"#,
        cm_json("a"),
        cm_json("b")
    );
    let loaded = read_text(&text, "late.json", &LoadOptions::default()).unwrap();
    assert_eq!(loaded.objects.len(), 2);
    assert_eq!(loaded.objects[1].key.name, "b");
}

#[test]
fn an_endless_json_string_is_refused_after_the_limit() {
    let err = read_endless(
        r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"k":""#,
        b'a',
        Format::Json,
        64 * 1024,
    );
    assert_eq!((err.document, err.field.as_deref()), (0, None));
    assert!(
        err.reason.starts_with("the document is larger than 64 KiB"),
        "{err}"
    );
}

#[test]
fn an_endless_list_item_is_refused_after_the_limit() {
    let head = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{},{},{{"data":{{"k":""#,
        cm_json("a"),
        cm_json("b")
    );
    let err = read_endless(&head, b'a', Format::Sniff, 64 * 1024);
    assert_eq!((err.document, err.field.as_deref()), (0, Some("items[2]")));
}

#[test]
fn an_endless_yaml_line_and_an_endless_yaml_document_are_refused_after_the_limit() {
    let err = read_endless(
        "apiVersion: v1\nkind: ConfigMap\ndata:\n  k: ",
        b'a',
        Format::Sniff,
        64 * 1024,
    );
    assert!(
        err.reason.starts_with("the document is larger than 64 KiB"),
        "{err}"
    );
    // Short lines, but one document that never ends, after a first that does.
    let err = read_endless(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\ndata:\n",
        b'\n',
        Format::Sniff,
        64 * 1024,
    );
    assert_eq!(err.document, 1, "{err}");
    assert!(
        err.reason.starts_with("the document is larger than 64 KiB"),
        "{err}"
    );
}

#[test]
fn the_total_limit_is_enforced_while_reading() {
    // What standard input or a growing file would do: more than the total, in objects
    // each under the per-object limit.
    let items: Vec<String> = (0..50).map(|i| cm_json(&format!("cm-{i}"))).collect();
    let text = list_json(&items);
    let mut input = RawInput::default();
    let err = read_source(
        &mut text.as_bytes(),
        "<stdin>",
        Format::Sniff,
        &limits(1024, 4096),
        4096,
        &mut input,
    )
    .unwrap_err();
    assert_eq!(err.reason, "input is larger than 4 KiB");
}

#[test]
fn errors_name_the_file_the_document_the_item_and_the_field() {
    let mut items: Vec<String> = (0..4).map(|i| cm_json(&format!("cm-{i}"))).collect();
    items[2] = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":5}"#.into();
    let err = read_text(&list_json(&items), "list.json", &LoadOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "list.json: document 0: field items[2].metadata must be an object, found a number"
    );
    // Malformed JSON in the third line of the file, in its second document: the line
    // counts from the start of the file, not of the document.
    let text = format!("{}\n{}\n{{\"kind\": }}\n", cm_json("a"), cm_json("b"));
    let err = read_text(&text, "s.json", &LoadOptions::default()).unwrap_err();
    assert_eq!(err.document, 2);
    assert_eq!(
        err.reason, "invalid JSON: expected value at line 3 column 10",
        "{err}"
    );
    // Malformed YAML in the third document, on line 8 of the file.
    let text =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n# b\n---\nkind: [\n  x: y: z\n";
    let err = read_text(text, "s.yaml", &LoadOptions::default()).unwrap_err();
    assert_eq!(err.document, 2, "{err}");
    assert!(err.reason.starts_with("invalid YAML at line 8 "), "{err}");
}

#[test]
fn a_yaml_flow_mapping_that_is_not_json_is_read_as_yaml() {
    let loaded = read_text(
        "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n",
        "flow.yaml",
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(loaded.objects[0].key.name, "a");
}

#[test]
fn directives_and_comments_stay_with_the_document_that_follows() {
    let text = "# head\n%YAML 1.2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: a, k: b}\n";
    let loaded = read_text(text, "d.yaml", &LoadOptions::default()).unwrap();
    let docs: Vec<usize> = loaded.objects.iter().map(|o| o.origin.document).collect();
    assert_eq!(docs, [0, 1]);
    // The repeated key is on line 11 of the file, the first on line 11 too (one mapping).
    assert_eq!(
        (loaded.warnings[0].document, loaded.warnings[0].line),
        (1, 11)
    );
}
