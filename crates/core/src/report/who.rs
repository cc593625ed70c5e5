//! Who made a change: the person an API server audit event names for a write, joined to the
//! managedFields entry a drift entry's changes cite (see `driftd_engine`'s audit part).

use crate::audit::AuditUser;
use serde::{Deserialize, Serialize};

/// How an audit event was joined to a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Matched {
    /// The event's response object has the live object's `resourceVersion`: the write that
    /// made the object as it is now (needs level `RequestResponse`).
    #[serde(rename = "resourceVersion")]
    ResourceVersion,
    /// Same object, a write verb, a field manager the request's `fieldManager` or
    /// User-Agent derives, and a request in flight during the managedFields entry's second
    /// (level `Metadata` suffices).
    #[serde(rename = "metadata")]
    Metadata,
}

impl Matched {
    pub fn as_str(&self) -> &'static str {
        match self {
            Matched::ResourceVersion => "resourceVersion",
            Matched::Metadata => "metadata",
        }
    }
}

/// The person behind the changes of one managedFields entry (`manager` at `changed_at`, as
/// those changes cite them), or behind a missing object's deletion (`manager` empty).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Who {
    /// The field manager the changes name (empty for a deletion).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manager: String,
    /// The managedFields entry's time the changes name (absent for a deletion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_at: Option<String>,
    pub user: AuditUser,
    /// The user the request acted as, when it impersonated one.
    #[serde(
        default,
        rename = "impersonatedUser",
        skip_serializing_if = "Option::is_none"
    )]
    pub impersonated_user: Option<AuditUser>,
    #[serde(default, rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(
        default,
        rename = "userAgent",
        skip_serializing_if = "String::is_empty"
    )]
    pub user_agent: String,
    /// The write's verb (`update`, `patch`, ...).
    pub verb: String,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub matched: Matched,
}

impl Who {
    /// `alice (as bob)`: the user, and who they acted as.
    pub fn person(&self) -> String {
        match &self.impersonated_user {
            Some(as_user) => format!("{} (as {})", self.user.username, as_user.username),
            None => self.user.username.clone(),
        }
    }

    /// One line for tables and Event notes: `alice via kubectl-edit (patch, metadata match)`.
    pub fn summary(&self) -> String {
        let tool = match self.manager.as_str() {
            "" => String::new(),
            m => format!(" via {m}"),
        };
        format!(
            "{}{tool} ({}, {} match)",
            self.person(),
            self.verb,
            self.matched.as_str()
        )
    }
}
