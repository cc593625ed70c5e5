//! The key Secret's protocol against a fake API: created once when absent, read thereafter, a
//! lost create race settled by reading the winner's key, and errors that say what to do
//! without showing the key.

use super::*;
use std::sync::Mutex;

/// An API server holding at most the one Secret. `rival`: a Secret another replica creates
/// between this one's read and its create (the race).
#[derive(Default)]
struct Fake {
    stored: Mutex<Option<Secret>>,
    rival: Mutex<Option<Secret>>,
    forbid_create: bool,
    creates: Mutex<usize>,
}

impl KeySecretApi for Fake {
    async fn get(&self) -> Result<Option<Secret>, CallError> {
        Ok(self.stored.lock().unwrap().clone())
    }

    async fn create(&self, secret: &Secret) -> Result<(), CallError> {
        *self.creates.lock().unwrap() += 1;
        if self.forbid_create {
            return Err(CallError::Forbidden(
                "secrets is forbidden: User \"system:serviceaccount:driftd:driftd\" cannot \
                 create resource \"secrets\""
                    .into(),
            ));
        }
        let mut stored = self.stored.lock().unwrap();
        if let Some(rival) = self.rival.lock().unwrap().take() {
            *stored = Some(rival);
        }
        if stored.is_some() {
            return Err(CallError::AlreadyExists);
        }
        *stored = Some(secret.clone());
        Ok(())
    }
}

fn key_secret(bytes: &[u8]) -> Secret {
    Secret {
        data: Some(BTreeMap::from([(
            DATA_KEY.to_string(),
            ByteString(bytes.to_vec()),
        )])),
        ..Secret::default()
    }
}

fn allowed() -> Result<(), HashKeyError> {
    Ok(())
}

#[tokio::test]
async fn an_absent_key_secret_is_created_once_and_read_thereafter() {
    let fake = Fake::default();
    let (key, obtained) = read_or_create(&fake, "driftd", "driftd-hash-key", allowed)
        .await
        .unwrap();
    assert_eq!(obtained, Obtained::Created);
    let created = fake.stored.lock().unwrap().clone().unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some("driftd-hash-key"));
    assert_eq!(created.metadata.namespace.as_deref(), Some("driftd"));
    assert_eq!(created.type_.as_deref(), Some(SECRET_TYPE));
    assert_eq!(created.immutable, Some(true));
    let bytes = &created.data.as_ref().unwrap()[DATA_KEY].0;
    assert_eq!(bytes.len(), 32);
    assert_eq!(
        Key::from_bytes(bytes[..].try_into().unwrap(), "x").id(),
        key.id()
    );
    assert!(
        !created
            .metadata
            .labels
            .as_ref()
            .unwrap()
            .contains_key("app.kubernetes.io/managed-by"),
        "not a record of the cluster log, whose importer lists that label"
    );

    let (again, obtained) = read_or_create(&fake, "driftd", "driftd-hash-key", allowed)
        .await
        .unwrap();
    assert_eq!(obtained, Obtained::Read);
    assert_eq!(again.id(), key.id());
    assert_eq!(*fake.creates.lock().unwrap(), 1);
    assert_ne!(
        read_or_create(&Fake::default(), "driftd", "driftd-hash-key", allowed)
            .await
            .unwrap()
            .0
            .id(),
        key.id(),
        "random"
    );
}

#[tokio::test]
async fn a_replica_that_loses_the_create_race_reads_the_winners_key() {
    let winner = Key::from_bytes([7; 32], "winner");
    let fake = Fake {
        rival: Mutex::new(Some(key_secret(&[7; 32]))),
        ..Fake::default()
    };
    let (key, obtained) = read_or_create(&fake, "driftd", "k", allowed).await.unwrap();
    assert_eq!(obtained, Obtained::Read);
    assert_eq!(key.id(), winner.id());
    assert_eq!(*fake.creates.lock().unwrap(), 1);
}

#[tokio::test]
async fn errors_say_what_to_do_and_never_show_the_key() {
    let forbidden = Fake {
        forbid_create: true,
        ..Fake::default()
    };
    let err = read_or_create(&forbidden, "driftd", "k", allowed)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("refused to create Secret driftd/k") && err.contains("Role driftd-hash-key"),
        "{err}"
    );

    // 16 bytes: not a key, and not shown.
    let short = Fake {
        stored: Mutex::new(Some(key_secret(b"hunter2-hunter2!"))),
        ..Fake::default()
    };
    let err = read_or_create(&short, "driftd", "k", allowed)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("holds 16 bytes"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");

    // A database that needs the lost key: no new one is made.
    let fake = Fake::default();
    let err = read_or_create(&fake, "driftd", "k", || {
        Err(HashKeyError::Lost {
            namespace: "driftd".into(),
            name: "k".into(),
            database: "/data/driftd.db".into(),
            id: "0011223344556677".into(),
        })
    })
    .await
    .unwrap_err()
    .to_string();
    assert!(err.contains("Restore the Secret"), "{err}");
    assert_eq!(*fake.creates.lock().unwrap(), 0);
    assert!(fake.stored.lock().unwrap().is_none());
}
