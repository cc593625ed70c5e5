//! The hash key of Secret values kept in a Kubernetes Secret of driftd's namespace
//! (`secrets.hash_key_secret`), so that no database holds it: a copy of a database (a backup,
//! a volume snapshot) then reveals nothing about any Secret value, and every replica and shard
//! of an installation hashes with one key.
//!
//! `driftd serve` reads the Secret, and creates it at its first start if it is absent: with a
//! random 32-byte key, by a create that fails when the Secret exists (409 AlreadyExists), as
//! client-go's leader election creates its Lease. Replicas starting together thus agree on one
//! key: the one whose create loses reads the winner's. The CLI only reads it: a command run
//! against the wrong namespace should fail, not make a second key. [`moving`] then moves a
//! database that still keeps its own key to this one.

mod moving;

pub use moving::{log_move, move_database};

use driftd_config::Config;
use driftd_store::{Key, SecretKeys, StoreError};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use kube::api::{Api, PostParams};
use std::collections::BTreeMap;
use std::path::Path;

/// The data key holding the key: 32 bytes (or their hex or base64, as a key file may hold).
pub const DATA_KEY: &str = "hash.key";
/// The type of the Secret driftd creates. A Secret of another type made by hand (say
/// `kubectl create secret generic`) is read all the same.
pub const SECRET_TYPE: &str = "driftd.io/hash-key.v1";

/// How often a create lost to another replica is followed by a read before giving up (the
/// Secret would have to be deleted between the two each time).
const ATTEMPTS: usize = 3;

/// Why the hash key could not be had; each says what to do, none shows a byte of the key.
#[derive(Debug, thiserror::Error)]
pub enum HashKeyError {
    #[error(
        "Kubernetes refused to {verb} Secret {namespace}/{name}, which holds driftd's hash key \
         ({message}): driftd needs get and create on it (Role driftd-hash-key in \
         deploy/base/hash-key-role.yaml); a command run by someone else needs get"
    )]
    Forbidden {
        verb: &'static str,
        namespace: String,
        name: String,
        message: String,
    },
    #[error(
        "Secret {namespace}/{name}, which holds driftd's hash key, does not exist: `driftd \
         serve` creates it at its first start. Check driftd's namespace (`namespace`, \
         DRIFTD_NAMESPACE) and secrets.hash_key_secret"
    )]
    Absent { namespace: String, name: String },
    #[error(
        "Secret {namespace}/{name}, which held the hash key of database {database} (key id \
         {id}), does not exist: a new key would not open the hashes stored under the old one. \
         Restore the Secret from your backup, or start a new database"
    )]
    Lost {
        namespace: String,
        name: String,
        database: String,
        id: String,
    },
    #[error(
        "namespace {0} does not exist: driftd keeps its hash key in a Secret there; create it, \
         or set driftd's namespace (`namespace`, DRIFTD_NAMESPACE)"
    )]
    NoNamespace(String),
    #[error("Secret {namespace}/{name}: {reason}")]
    Malformed {
        namespace: String,
        name: String,
        reason: String,
    },
    #[error("Secret {namespace}/{name} (driftd's hash key): Kubernetes API: {message}")]
    Api {
        namespace: String,
        name: String,
        message: String,
    },
    /// A live Secret a move needed could not be read (not for lack of permission).
    #[error(
        "cannot read {secret} to recover its committed values while moving the hash key out \
         of the database ({message}); nothing was changed: try again"
    )]
    LiveRead { secret: String, message: String },
    #[error(
        "cannot connect to Kubernetes to read driftd's hash key ({0}); set KUBECONFIG or run \
         in a cluster"
    )]
    Connect(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// How a call on the key Secret failed, as far as the protocol cares.
#[derive(Debug)]
pub(crate) enum CallError {
    /// 409: someone created it first.
    AlreadyExists,
    Forbidden(String),
    /// 404 on a create: the namespace is missing.
    NotFound,
    Other(String),
}

/// The two calls the protocol makes on the key Secret: kube's in the daemon, a fake in tests.
pub(crate) trait KeySecretApi {
    async fn get(&self) -> Result<Option<Secret>, CallError>;
    async fn create(&self, secret: &Secret) -> Result<(), CallError>;
}

/// The Secret `name` in one namespace, through the Kubernetes API.
struct KubeKeySecret {
    api: Api<Secret>,
    name: String,
}

fn call_error(err: kube::Error) -> CallError {
    match err {
        kube::Error::Api(s) if s.is_already_exists() => CallError::AlreadyExists,
        kube::Error::Api(s) if s.code == 403 => CallError::Forbidden(s.message.clone()),
        kube::Error::Api(s) if s.is_not_found() => CallError::NotFound,
        other => CallError::Other(other.to_string()),
    }
}

impl KeySecretApi for KubeKeySecret {
    async fn get(&self) -> Result<Option<Secret>, CallError> {
        self.api.get_opt(&self.name).await.map_err(call_error)
    }

    async fn create(&self, secret: &Secret) -> Result<(), CallError> {
        self.api
            .create(&PostParams::default(), secret)
            .await
            .map(drop)
            .map_err(call_error)
    }
}

/// Whether the key was read or made by this process, for the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Obtained {
    Read,
    Created,
}

/// Where the key lives, for messages.
struct Place<'a> {
    namespace: &'a str,
    name: &'a str,
}

impl Place<'_> {
    fn error(&self, verb: &'static str, err: CallError) -> HashKeyError {
        let (namespace, name) = (self.namespace.to_string(), self.name.to_string());
        match err {
            CallError::Forbidden(message) => HashKeyError::Forbidden {
                verb,
                namespace,
                name,
                message,
            },
            CallError::NotFound => HashKeyError::NoNamespace(namespace),
            CallError::AlreadyExists | CallError::Other(_) => HashKeyError::Api {
                namespace,
                name,
                message: match err {
                    CallError::Other(message) => message,
                    _ => "it kept being created and deleted".into(),
                },
            },
        }
    }

    /// The key a Secret holds; the error says how much it holds, never what.
    fn key_of(&self, secret: &Secret) -> Result<Key, HashKeyError> {
        let origin = format!("in Secret {}/{}", self.namespace, self.name);
        let bad = |reason: String| HashKeyError::Malformed {
            namespace: self.namespace.to_string(),
            name: self.name.to_string(),
            reason,
        };
        let data = secret
            .data
            .as_ref()
            .and_then(|d| d.get(DATA_KEY))
            .ok_or_else(|| bad(format!("it has no data key {DATA_KEY}")))?;
        Key::parse(&data.0, &origin).ok_or_else(|| {
            bad(format!(
                "its data key {DATA_KEY} holds {} bytes, which are not a 32-byte key (32 random \
                 bytes, or their hex or base64)",
                data.0.len()
            ))
        })
    }
}

/// A new key Secret with a random key, and the key.
fn new_secret(place: &Place) -> (Secret, Key) {
    let bytes: [u8; 32] = rand::random();
    let origin = format!("in Secret {}/{}", place.namespace, place.name);
    let key = Key::parse(&bytes, &origin).expect("32 bytes are a key");
    let labels = BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), "driftd".to_string()),
        (
            "app.kubernetes.io/component".to_string(),
            "hash-key".to_string(),
        ),
    ]);
    let annotations = BTreeMap::from([(
        "driftd.io/purpose".to_string(),
        "The key driftd hashes Secret values with (HMAC-SHA256), shared by every replica and \
         shard. Back it up with the database: without it the stored hashes cannot be compared."
            .to_string(),
    )]);
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some(place.name.to_string()),
            namespace: Some(place.namespace.to_string()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        type_: Some(SECRET_TYPE.to_string()),
        // A key that changed under a database would stop every Secret comparing: replacing it
        // takes a delete, which RBAC does not grant driftd.
        immutable: Some(true),
        data: Some(BTreeMap::from([(
            DATA_KEY.to_string(),
            ByteString(bytes.to_vec()),
        )])),
        ..Secret::default()
    };
    (secret, key)
}

/// Reads the key; when the Secret is absent and `may_create` allows, creates it with a random
/// key, and on losing that race (409) reads the key of whoever won.
pub(crate) async fn read_or_create(
    api: &impl KeySecretApi,
    namespace: &str,
    name: &str,
    may_create: impl FnOnce() -> Result<(), HashKeyError>,
) -> Result<(Key, Obtained), HashKeyError> {
    let place = Place { namespace, name };
    let mut may_create = Some(may_create);
    for _ in 0..ATTEMPTS {
        if let Some(secret) = api.get().await.map_err(|e| place.error("get", e))? {
            return Ok((place.key_of(&secret)?, Obtained::Read));
        }
        if let Some(check) = may_create.take() {
            check()?;
        }
        let (secret, key) = new_secret(&place);
        match api.create(&secret).await {
            Ok(()) => return Ok((key, Obtained::Created)),
            Err(CallError::AlreadyExists) => continue,
            Err(e) => return Err(place.error("create", e)),
        }
    }
    Err(place.error("create", CallError::AlreadyExists))
}

/// The keys `driftd serve` runs with: the key files of `[secrets]`, and, when
/// `secrets.hash_key_secret` names one, the hash key from that Secret, created if absent,
/// unless `database` records hashes under a key kept outside it: then the Secret held that
/// key and was lost, and a new one would silently stop every comparison.
pub async fn serve_keys(
    config: &Config,
    client: &kube::Client,
) -> Result<SecretKeys, HashKeyError> {
    let mut keys = config.secrets.load_keys()?;
    let Some(name) = &config.secrets.hash_key_secret else {
        return Ok(keys);
    };
    let api = KubeKeySecret {
        api: Api::namespaced(client.clone(), &config.namespace),
        name: name.clone(),
    };
    let database = &config.database;
    let (key, obtained) = read_or_create(&api, &config.namespace, name, || {
        lost_key(database).map_or(Ok(()), |id| {
            Err(HashKeyError::Lost {
                namespace: config.namespace.clone(),
                name: name.clone(),
                database: database.display().to_string(),
                id,
            })
        })
    })
    .await?;
    tracing::info!(
        secret = %format!("{}/{name}", config.namespace),
        key_id = %key.id(),
        "hash key {}: Secret {}/{name} (key id {})",
        match obtained {
            Obtained::Created => "created",
            Obtained::Read => "read",
        },
        config.namespace,
        key.id()
    );
    keys.hash = Some(key);
    Ok(keys)
}

/// The id of the outside key `database` already records hashes under, if any.
fn lost_key(database: &Path) -> Option<String> {
    driftd_store::Store::outside_key_of(database).ok().flatten()
}

/// The keys a CLI command runs with: as [`serve_keys`], but the key Secret is only read,
/// through the kubeconfig as kubectl finds it.
pub async fn cli_keys(config: &Config) -> Result<SecretKeys, HashKeyError> {
    let mut keys = config.secrets.load_keys()?;
    let Some(name) = &config.secrets.hash_key_secret else {
        return Ok(keys);
    };
    let client = kube::Client::try_default()
        .await
        .map_err(|e| HashKeyError::Connect(e.to_string()))?;
    let api = KubeKeySecret {
        api: Api::namespaced(client, &config.namespace),
        name: name.clone(),
    };
    let absent = || {
        Err(HashKeyError::Absent {
            namespace: config.namespace.clone(),
            name: name.clone(),
        })
    };
    keys.hash = Some(
        read_or_create(&api, &config.namespace, name, absent)
            .await?
            .0,
    );
    Ok(keys)
}

#[cfg(test)]
mod tests;
