//! The importer without a cluster: a file backend laid out as Pulumi lays it out (the
//! fixture's `interrupted/state`, see tests/fixtures/pulumi/README.md), scanned as `serve`
//! scans it, and what the store then holds.

use super::*;
use driftd_store::IntentState;
use flate2::{write::GzEncoder, Compression};
use std::io::Write;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pulumi")
}

/// A copy of the fixture backend, its checkpoint gzipped as `dev.json.gz`.
fn backend() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let stacks = dir.path().join(".pulumi/stacks/shop");
    std::fs::create_dir_all(&stacks).unwrap();
    let text =
        std::fs::read(fixtures().join("interrupted/state/.pulumi/stacks/shop/dev.json")).unwrap();
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&text).unwrap();
    std::fs::write(stacks.join("dev.json.gz"), gz.finish().unwrap()).unwrap();
    let root = dir.path().to_path_buf();
    (dir, root)
}

fn checkpoint() -> serde_json::Value {
    let text =
        std::fs::read_to_string(fixtures().join("interrupted/state/.pulumi/stacks/shop/dev.json"))
            .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Writes `path` with a modification time after every file written before.
fn write_later(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
    let later = SystemTime::now() + std::time::Duration::from_secs(5);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(later)
        .unwrap();
}

#[test]
fn states_decode_by_content_and_a_bomb_is_refused() {
    let text = "{\"version\": 3}";
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(text.as_bytes(), 3).unwrap();
    for bytes in [text.as_bytes(), &gz, &zst] {
        assert_eq!(decode_state(bytes, "dev.json").unwrap(), text);
    }
    let mut bomb = GzEncoder::new(Vec::new(), Compression::best());
    bomb.write_all(&vec![b' '; 4096]).unwrap();
    let err = decode_within(&bomb.finish().unwrap(), "dev.json.gz", 1024).unwrap_err();
    assert_eq!(err, "dev.json.gz: larger than 1024 bytes once decompressed");
    let err = decode_state(&[0x1f, 0x8b, 0, 0], "x.json.gz").unwrap_err();
    assert!(err.starts_with("x.json.gz: cannot decompress"), "{err}");
}

#[test]
fn a_scan_finds_each_stack_once_as_pulumi_would_read_it() {
    let (_dir, root) = backend();
    let stacks = root.join(".pulumi/stacks");
    // A backup, a legacy stack, a project folder without stacks.
    std::fs::write(stacks.join("shop/dev.json.gz.bak"), b"old").unwrap();
    std::fs::write(stacks.join("legacy.json"), b"{}").unwrap();
    std::fs::create_dir_all(stacks.join("empty")).unwrap();
    let scan = scan_stacks(&[root.clone(), root.join("missing")]);
    assert!(scan.complete, "a root without stacks is no error");
    let found: Vec<(Option<&str>, &str, &str)> = scan
        .files
        .iter()
        .map(|f| {
            (
                f.project.as_deref(),
                f.stack.as_str(),
                f.path.file_name().unwrap().to_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (None, "legacy", "legacy.json"),
            (Some("shop"), "dev", "dev.json.gz")
        ]
    );
    assert_eq!(scan.files[1].qualified(), "organization/shop/dev");
    assert_eq!(scan.files[0].qualified(), "legacy");
    // Both forms during a change of compression: the newer is the state.
    write_later(&stacks.join("shop/dev.json"), b"{}");
    let scan = scan_stacks(&[root]);
    assert!(
        scan.files[1].path.ends_with("shop/dev.json"),
        "{:?}",
        scan.files
    );
}

#[test]
fn a_state_with_a_pending_create_is_a_revision_and_an_interrupted_intent() {
    let (_dir, root) = backend();
    let mut importer = Importer::new(Store::open_in_memory().unwrap(), vec![root.clone()]);
    importer.scan();
    let store = &importer.store;
    let source = "pulumi:shop/dev";
    let history = store.history(source).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].author, "pulumi");
    assert_eq!(
        history[0].message,
        "pulumi: state of organization/shop/dev at 2026-11-30T10:40:03.88412Z"
    );
    let mut keys: Vec<String> = store
        .desired_state()
        .unwrap()
        .objects
        .iter()
        .map(|o| o.key.to_string())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "Deployment.apps shop/web",
            "Namespace shop",
            "Secret shop/web-api",
            "Service shop/web"
        ]
    );
    let open = store.open_intents().unwrap();
    let [open] = &open[..] else {
        panic!("{open:?}")
    };
    assert_eq!(open.intent.state, IntentState::Interrupted);
    assert_eq!(
        open.intent.holder,
        "pulumi update of organization/shop/dev at 2026-11-30T10:40:03Z"
    );
    assert_eq!(
        open.objects[0].key.to_string(),
        "ConfigMap shop/web-flags-5d1e9c2a"
    );
    let backend = format!("PULUMI_BACKEND_URL=file://{} ", root.display());
    assert_eq!(
        open.intent.commit_command(),
        format!(
            "{backend}pulumi refresh --yes --stack organization/shop/dev \
             --import-pending-creates urn:pulumi:dev::shop::kubernetes:core/v1:ConfigMap::web-flags \
             shop/web-flags-5d1e9c2a"
        )
    );

    // Nothing changed: nothing read again.
    importer.scan();
    assert_eq!(importer.store.history(source).unwrap().len(), 1);

    // `pulumi up` again, to the end: the ConfigMap is a resource, nothing is pending. Written
    // plainly and newer, as after a change of compression.
    let mut state = checkpoint();
    let latest = &mut state["checkpoint"]["latest"];
    let pending = latest["pending_operations"][0]["resource"].clone();
    latest["resources"].as_array_mut().unwrap().push(pending);
    latest.as_object_mut().unwrap().remove("pending_operations");
    latest["manifest"]["time"] = "2026-11-30T11:52:40.5+01:00".into();
    write_later(
        &root.join(".pulumi/stacks/shop/dev.json"),
        state.to_string().as_bytes(),
    );
    importer.scan();
    let store = &importer.store;
    assert!(store.open_intents().unwrap().is_empty());
    let ended = store.intents(Some(source), true).unwrap();
    assert_eq!(ended[0].state, IntentState::Superseded);
    assert_eq!(store.desired_state().unwrap().objects.len(), 5);

    // `pulumi stack rm`: the source desires nothing and leaves the list.
    std::fs::remove_file(root.join(".pulumi/stacks/shop/dev.json")).unwrap();
    std::fs::remove_file(root.join(".pulumi/stacks/shop/dev.json.gz")).unwrap();
    importer.scan();
    assert!(importer.store.sources().unwrap().is_empty());
    assert!(importer.store.desired_state().unwrap().objects.is_empty());
}

#[test]
fn an_unreadable_state_is_said_and_its_source_kept() {
    let (_dir, root) = backend();
    let mut importer = Importer::new(Store::open_in_memory().unwrap(), vec![root.clone()]);
    importer.scan();
    write_later(&root.join(".pulumi/stacks/shop/dev.json"), b"{not json");
    importer.scan();
    assert_eq!(
        importer.store.desired_state().unwrap().objects.len(),
        4,
        "a state that cannot be read is no removed stack"
    );
    assert!(importer
        .warned
        .iter()
        .any(|w| w.contains("dev.json: not a Pulumi stack export")));
}
