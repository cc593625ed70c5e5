//! Bearer tokens: the ones the simulator issues (`kubectl create token`, the TokenRequest
//! subresource `serviceaccounts/token`), its own kubeconfig user's, and the TokenReview
//! that tells who holds one.
//!
//! kube-apiserver's shapes, from `pkg/registry/core/serviceaccount/storage/token.go`
//! (TokenRequest: audiences default to the API server's, the answer is the request with
//! `status.token` and `status.expirationTimestamp`), `pkg/registry/authentication/tokenreview`
//! (TokenReview: a token is required; `status.authenticated`, `status.user`,
//! `status.audiences`, `status.error`) and `k8s.io/apiserver/pkg/authentication/serviceaccount`
//! (a ServiceAccount's user `system:serviceaccount:NS:NAME` in the groups
//! `system:serviceaccounts` and `system:serviceaccounts:NS`; every authenticated user is
//! also in `system:authenticated`).
//!
//! Simplified: tokens are opaque random strings, not signed JWTs (a TokenReview is the only
//! way to read them, as for a client of the API); a token bound to a Pod or Secret
//! (`boundObjectRef`) is refused as not modelled; `status.error` says "invalid bearer
//! token" for every token that does not authenticate, with the audience mismatch spelled
//! out as the JWT authenticator does.

use crate::status::ApiError;
use crate::store::Store;
use base64::Engine;
use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// The API server's own audience (`--api-audiences`), as kubeadm and kind set it.
pub const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

/// The group every authenticated user is in (`user.AllAuthenticated`).
const AUTHENTICATED: &str = "system:authenticated";

/// TokenRequest's `expirationSeconds` default (`SetDefaults_TokenRequestSpec`) and minimum
/// (`ValidateTokenRequest`: "may not specify a duration less than 10 minutes").
const DEFAULT_EXPIRATION: i64 = 3600;
const MIN_EXPIRATION: i64 = 600;

/// The user a TokenReview names (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct UserInfo {
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    pub groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// `serviceaccount.MakeUsername`.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

#[derive(Debug, Clone)]
struct Credential {
    user: UserInfo,
    /// `None` for the kubeconfig's static token, valid for any audience (kube-apiserver
    /// wraps static tokens as audience-agnostic).
    audiences: Option<Vec<String>>,
    expires: Option<jiff::Timestamp>,
    /// The ServiceAccount's (namespace, name, uid): the token dies with the account.
    account: Option<(String, String, String)>,
}

/// The tokens the simulator knows, by SHA-256 (the tokens themselves are not kept).
pub struct Tokens {
    known: Mutex<HashMap<[u8; 32], Credential>>,
    admin: String,
}

impl Default for Tokens {
    fn default() -> Self {
        Tokens::new()
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn random_token() -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// The name of the kubeconfig's user, and the user its token authenticates as: a cluster
/// administrator (in `system:masters`, as kubeadm's `super-admin.conf` is).
pub const ADMIN_USER: &str = "driftd-sim";

impl Tokens {
    pub fn new() -> Tokens {
        let admin = random_token();
        let tokens = Tokens {
            known: Mutex::new(HashMap::new()),
            admin: admin.clone(),
        };
        tokens.add(
            &admin,
            UserInfo {
                username: ADMIN_USER.into(),
                groups: vec!["system:masters".into(), AUTHENTICATED.into()],
                ..UserInfo::default()
            },
        );
        tokens
    }

    /// A new static token for `username` in `groups` (and `system:authenticated`), as a
    /// line of kube-apiserver's `--token-auth-file` makes one: a second person to act as.
    pub fn add_user(&self, username: &str, mut groups: Vec<String>) -> String {
        let token = random_token();
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.into());
        }
        self.add(
            &token,
            UserInfo {
                username: username.into(),
                groups,
                ..UserInfo::default()
            },
        );
        token
    }

    /// The user a request's bearer `token` authenticates as (for the API server's own
    /// audience), if any.
    pub fn user_of(&self, store: &Store, token: &str) -> Option<UserInfo> {
        self.authenticate(store, token, &[API_AUDIENCE.to_string()])
            .ok()
            .map(|(user, _)| user)
    }

    /// The kubeconfig user's token.
    pub fn admin_token(&self) -> &str {
        &self.admin
    }

    /// Recognises `token` as `user` from now on, for any audience (as kube-apiserver's
    /// `--token-auth-file`).
    pub fn add(&self, token: &str, user: UserInfo) {
        self.lock().insert(
            digest(token),
            Credential {
                user,
                audiences: None,
                expires: None,
                account: None,
            },
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Credential>> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `POST .../serviceaccounts/NAME/token`: a token for the stored ServiceAccount.
    pub fn request(
        &self,
        store: &Store,
        namespace: &str,
        name: &str,
        body: &Value,
    ) -> Result<Value, ApiError> {
        let info = store
            .resolve("", "v1", "serviceaccounts")
            .expect("serviceaccounts are built in");
        let account = store.get(&info, Some(namespace), name)?;
        let spec = &body["spec"];
        if !spec["boundObjectRef"].is_null() {
            return Err(ApiError::bad_request(
                "the simulator does not model tokens bound to an object (spec.boundObjectRef)",
            ));
        }
        let expiration = spec["expirationSeconds"]
            .as_i64()
            .unwrap_or(DEFAULT_EXPIRATION);
        if expiration < MIN_EXPIRATION {
            return Err(ApiError::invalid(
                "authentication.k8s.io",
                "TokenRequest",
                name,
                "spec.expirationSeconds",
                &format!(
                    "Invalid value: {expiration}: may not specify a duration less than 10 minutes"
                ),
            ));
        }
        let mut audiences: Vec<String> = spec["audiences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        if audiences.is_empty() {
            audiences.push(API_AUDIENCE.into());
        }
        let uid = account["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let expires = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_secs(expiration))
            .map_err(|e| ApiError::bad_request(format!("spec.expirationSeconds: {e}")))?;
        let token = random_token();
        let user = UserInfo {
            username: service_account_user(namespace, name),
            uid: uid.clone(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                AUTHENTICATED.into(),
            ],
            extra: BTreeMap::from([(
                "authentication.kubernetes.io/credential-id".to_string(),
                vec![format!(
                    "JTI={}",
                    crate::server_defaults::uuid_v4(rand::random())
                )],
            )]),
        };
        self.lock().insert(
            digest(&token),
            Credential {
                user,
                audiences: Some(audiences.clone()),
                expires: Some(expires),
                account: Some((namespace.to_string(), name.to_string(), uid)),
            },
        );
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace, "creationTimestamp": null},
            "spec": {"audiences": audiences, "expirationSeconds": expiration, "boundObjectRef": null},
            "status": {
                "token": token,
                "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            },
        }))
    }

    /// `POST /apis/authentication.k8s.io/v1/tokenreviews`.
    pub fn review(&self, store: &Store, body: &Value) -> Result<Value, ApiError> {
        let spec = &body["spec"];
        let token = spec["token"].as_str().unwrap_or("");
        if token.is_empty() {
            return Err(ApiError::bad_request(
                "token is required for TokenReview in authentication",
            ));
        }
        let mut wanted: Vec<String> = spec["audiences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        if wanted.is_empty() {
            wanted.push(API_AUDIENCE.into());
        }
        let status = match self.authenticate(store, token, &wanted) {
            Ok((user, audiences)) => json!({
                "authenticated": true,
                "user": user,
                "audiences": audiences,
            }),
            Err(error) => json!({"user": {}, "error": error}),
        };
        Ok(json!({
            "kind": "TokenReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": status,
        }))
    }

    /// The user and the audiences the token is good for among `wanted`, or why not.
    fn authenticate(
        &self,
        store: &Store,
        token: &str,
        wanted: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        const INVALID: &str = "invalid bearer token";
        let credential = self.lock().get(&digest(token)).cloned().ok_or(INVALID)?;
        if credential
            .expires
            .is_some_and(|at| at <= jiff::Timestamp::now())
        {
            return Err(format!("[{INVALID}, service account token has expired]"));
        }
        if let Some((ns, name, uid)) = &credential.account {
            let info = store
                .resolve("", "v1", "serviceaccounts")
                .expect("serviceaccounts are built in");
            let live = store.get(&info, Some(ns), name).ok();
            let live_uid = live.as_ref().and_then(|a| a["metadata"]["uid"].as_str());
            if live_uid != Some(uid.as_str()) {
                return Err(INVALID.to_string());
            }
        }
        let audiences = match &credential.audiences {
            None => wanted.to_vec(),
            Some(own) => {
                let both: Vec<String> =
                    wanted.iter().filter(|a| own.contains(a)).cloned().collect();
                if both.is_empty() {
                    return Err(format!(
                        "[{INVALID}, token audiences {own:?} is invalid for the target audiences {wanted:?}]"
                    ));
                }
                both
            }
        };
        Ok((credential.user, audiences))
    }
}
