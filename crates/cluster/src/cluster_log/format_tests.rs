use super::*;
use serde_json::json;

fn record(objects: usize, size: usize) -> RevisionRecord {
    RevisionRecord {
        id: 12,
        source: "shop".into(),
        author: "alice".into(),
        message: "web 1.4.2".into(),
        committed_at: "2026-01-02T03:04:05Z".parse().unwrap(),
        committed_by: "ci@runner".into(),
        intent: Some(11),
        objects: (0..objects)
            .map(|i| RecordObject {
                key: ObjectKey {
                    group: String::new(),
                    kind: "ConfigMap".into(),
                    namespace: Some("shop".into()),
                    name: format!("cm-{i}"),
                },
                api_version: "v1".into(),
                file: "k8s/cm.yaml".into(),
                document: i,
                // Pseudo-random text: compresses about as badly as real random data.
                object: json!({"data": {"blob": pseudo_random(size, i as u64)}}),
            })
            .collect(),
    }
}

fn pseudo_random(len: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALPHABET[(x % 64) as usize] as char
        })
        .collect()
}

#[test]
fn payloads_are_json_gzipped_and_base64_encoded_as_helm_encodes_releases() {
    let rec = record(2, 10);
    let encoded = encode(&rec);
    // By hand, as `kubectl get secret -o jsonpath='{.data.record}' | base64 -d | base64 -d |
    // gunzip` would.
    let zipped = base64::engine::general_purpose::STANDARD
        .decode(&encoded)
        .unwrap();
    assert_eq!(&zipped[..2], &[0x1f, 0x8b], "gzip magic");
    let mut json = String::new();
    GzDecoder::new(&zipped[..])
        .read_to_string(&mut json)
        .unwrap();
    let value: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["source"], "shop");
    assert_eq!(value["committedAt"], "2026-01-02T03:04:05Z");
    assert_eq!(value["objects"][1]["key"]["name"], "cm-1");
    assert_eq!(decode::<RevisionRecord>("x", &encoded).unwrap(), rec);
}

#[test]
fn undecodable_payloads_are_named_without_their_content() {
    for text in [
        "not base64!",
        "aGVsbG8=",
        &encode(&json!({"hello": "secret-value"})),
    ] {
        let err = decode::<RevisionRecord>("driftd.revision.3", text)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("driftd.revision.3: payload is not"),
            "{err}"
        );
        assert!(!err.contains("secret-value"), "{err}");
    }
}

#[test]
fn label_values_stay_as_they_are_when_valid_and_are_mapped_with_a_hash_when_not() {
    assert_eq!(label_value("shop"), "shop");
    assert_eq!(label_value("my_app.v2"), "my_app.v2");
    for text in [
        "pod:ci/deploy-7f9c",
        "alice@laptop (pid 4242)",
        "team/shop",
        "::::",
        &"x".repeat(64),
        "-leading",
    ] {
        let value = label_value(text);
        assert!(is_label_value(&value), "{text:?} -> {value:?}");
        assert!(!value.is_empty(), "{text:?}");
    }
    assert!(label_value("pod:ci/deploy-7f9c").starts_with("pod-ci-deploy-7f9c-"));
    assert_ne!(label_value("pod:ci/a"), label_value("pod-ci/a"));
    assert!(!is_label_value(&"x".repeat(64)));
}

#[test]
fn object_names_use_the_source_when_it_is_a_dns_name_and_a_hashed_form_when_not() {
    assert_eq!(head_name("shop"), "driftd-source-shop");
    let dns = |n: &str| {
        n.len() <= 253
            && n.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.chars().all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-'))
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    };
    let long = "A".repeat(128);
    for source in ["Shop", "team/shop", "a.b", "___", "-x", long.as_str()] {
        let name = head_name(source);
        assert!(dns(&name), "{source:?} -> {name:?}");
    }
    assert_ne!(head_name("team/shop"), head_name("team_shop"));
    assert_ne!(head_name("Shop"), head_name("shop"));
    assert_eq!(revision_name(7), "driftd.revision.7");
    assert_eq!(intent_name(7), "driftd.intent.7");
}

#[test]
fn a_large_payload_is_split_parts_first_and_reassembled_only_when_complete() {
    let encoded = encode(&record(3, 40_000));
    let secrets = record_secrets(
        "driftd.revision.12",
        TYPE_REVISION,
        labels(&[(LABEL_SOURCE, "shop".into())]),
        BTreeMap::new(),
        &encoded,
        50_000,
    );
    assert!(secrets.len() >= 3, "{} objects", secrets.len());
    let (record, parts) = secrets.split_last().unwrap();
    assert_eq!(
        name_of(record),
        "driftd.revision.12",
        "the record is written last"
    );
    assert_eq!(record.type_.as_deref(), Some(TYPE_REVISION));
    for (i, part) in parts.iter().enumerate() {
        assert_eq!(name_of(part), format!("driftd.revision.12-{}", i + 1));
        assert_eq!(part.type_.as_deref(), Some(TYPE_CHUNK));
        assert_eq!(label(part, LABEL_CHUNK), Some((i + 1).to_string().as_str()));
        assert_eq!(label(part, LABEL_CHUNK_OF), Some("driftd.revision.12"));
        assert_eq!(label(part, MANAGED_BY), Some("driftd"));
    }
    for s in &secrets {
        assert!(data_of(s).unwrap().len() <= 50_000);
    }
    let by_name = |n: &str| parts.iter().find(|p| name_of(p) == n);
    let whole = assemble(record, by_name).unwrap().unwrap();
    assert_eq!(whole, encoded);
    assert_eq!(decode::<RevisionRecord>("x", &whole).unwrap(), record_of(3));

    // A reader never takes a partial record: a missing part is "not yet", a wrong one an error.
    let missing = |n: &str| parts[1..].iter().find(|p| name_of(p) == n);
    assert!(assemble(record, missing).unwrap().is_none());
    let mut tampered = parts.to_vec();
    tampered[0].data = Some(BTreeMap::from([(
        DATA_KEY.to_string(),
        ByteString(b"AAAA".to_vec()),
    )]));
    let err = assemble(record, |n| tampered.iter().find(|p| name_of(p) == n)).unwrap_err();
    assert!(
        err.to_string().contains("do not match their digest"),
        "{err}"
    );

    fn record_of(n: usize) -> RevisionRecord {
        self::record(n, 40_000)
    }
}

#[test]
fn a_small_payload_is_one_object() {
    let encoded = encode(&record(1, 10));
    let secrets = record_secrets(
        "driftd.intent.3",
        TYPE_INTENT,
        labels(&[]),
        BTreeMap::new(),
        &encoded,
        MAX_PART,
    );
    assert_eq!(secrets.len(), 1);
    assert_eq!(annotation(&secrets[0], ANN_CHUNKS), Some("0"));
    assert_eq!(assemble(&secrets[0], |_| None).unwrap().unwrap(), encoded);
}

#[test]
fn an_intents_state_round_trips_through_its_labels_and_annotations() {
    let mut object = secret(
        "driftd.intent.3",
        TYPE_INTENT,
        labels(&[]),
        BTreeMap::new(),
        None,
    );
    let pending = IntentStatus {
        state: "pending".into(),
        ttl_seconds: 600,
        expires_at: "2026-01-02T03:14:05Z".parse().unwrap(),
        ended: None,
        lock_refused: false,
    };
    pending.write(&mut object);
    assert_eq!(IntentStatus::read(&object).unwrap(), pending);
    let committed = IntentStatus {
        state: "committed".into(),
        ended: Some(Ended {
            sequence: 9,
            at: "2026-01-02T03:05:05Z".parse().unwrap(),
            by: "pod:ci/deploy-1".into(),
            reason: "revision 9".into(),
            revision: Some(9),
            automatic: false,
        }),
        ..pending
    };
    committed.write(&mut object);
    assert_eq!(label(&object, LABEL_STATE), Some("committed"));
    assert_eq!(IntentStatus::read(&object).unwrap(), committed);
}
