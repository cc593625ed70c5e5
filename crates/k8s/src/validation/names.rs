//! String formats kube-apiserver checks, with its messages word for word, and which name
//! rule each kind's `metadata.name` follows.
//!
//! Formats: apimachinery `pkg/util/validation/validation.go` (`IsDNS1123Label`,
//! `IsDNS1123Subdomain`, `IsDNS1035Label`, `IsConfigMapKey`, `RegexError`, `MaxLenError`:
//! "characters") and `pkg/api/validate/content` (`IsLabelKey` alias `IsQualifiedName`,
//! `IsLabelValue`, `IsPathSegmentName`; its `MaxLenError` says "bytes"). Name rules:
//! apimachinery `pkg/api/validation/generic.go` (`NameIsDNSSubdomain` and friends,
//! `maskTrailingDash` for generateName) and each kind's `Validate<Kind>` in kube's
//! `pkg/apis/<group>/validation`.

use serde_json::Value;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";

pub const DNS1123_LABEL_MAX: usize = 63;
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;
pub const LABEL_VALUE_MAX: usize = 63;

/// apimachinery `RegexError`, quirks included (`'a',  or 'b'`).
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

/// `MaxLenError` of `pkg/util/validation`.
fn max_len_chars(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `MaxLenError` of `pkg/api/validate/content`.
fn max_len_bytes(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

fn alnum_lower(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && alnum_lower(b[0])
        && alnum_lower(b[b.len() - 1])
        && b.iter().all(|&c| alnum_lower(c) || c == b'-')
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `IsDNS1123Label`.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_chars(DNS1123_LABEL_MAX));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".into());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_chars(DNS1123_SUBDOMAIN_MAX));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_chars(DNS1123_LABEL_MAX));
    }
    let b = value.as_bytes();
    let ok = matches_dns1123_label(value) && b[0].is_ascii_lowercase();
    if !ok {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsPathSegmentName`: the floor for every name, since it becomes a URL path segment and a
/// storage key. No length limit and no emptiness check, as in kube.
pub fn is_path_segment_name(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|bad| name.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// `IsQualifiedName` (`content.IsLabelKey`): label keys, annotation keys, finalizers.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                let msgs = is_dns1123_subdomain(prefix);
                errs.extend(msgs.into_iter().map(|m| format!("prefix part {m}")));
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_MSG, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > DNS1123_LABEL_MAX {
        errs.push(format!("name part {}", max_len_bytes(DNS1123_LABEL_MAX)));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_MSG,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue` (`content.IsLabelValue`).
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errs.push(max_len_bytes(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !matches_label_key_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsConfigMapKey`: keys of a ConfigMap's `data`/`binaryData` and a Secret's `data`.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_chars(DNS1123_SUBDOMAIN_MAX));
    }
    let charset = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !charset {
        errs.push(regex_error(
            CONFIG_KEY_MSG,
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    match value {
        "." => errs.push("must not be '.'".into()),
        ".." => errs.push("must not be '..'".into()),
        v if v.starts_with("..") => errs.push("must not start with '..'".into()),
        _ => {}
    }
    errs
}

/// How kube-apiserver checks `metadata.name` (and `generateName`) of one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: most kinds, and every custom resource.
    Subdomain,
    /// `NameIsDNSLabel`: Namespace, StatefulSet.
    Label,
    /// `NameIsDNS1035Label`: Service.
    Dns1035Label,
    /// `IsPathSegmentName` only: the RBAC kinds (`ValidateRBACName`), so
    /// `system:aggregated-metrics-reader` is a valid ClusterRole name; also the kinds whose
    /// own rule is not ported (core/v1 Event's legacy validation checks no name format,
    /// IPAddress, ClusterTrustBundle, StorageVersion), which must still be path segments.
    PathSegment,
    /// CronJob: a subdomain of at most 52 characters, room for the Job controller's
    /// 11-character suffix (`ValidateCronJobCreate`).
    CronJob,
    /// CustomResourceDefinition: a subdomain equal to `spec.names.plural + "." + spec.group`.
    CustomResourceDefinition { required: String },
    /// APIService: a path segment equal to `spec.version + "." + spec.group`.
    ApiService { required: String },
}

impl NameRule {
    /// The rule for an object of `group`/`kind` (custom resources: [`NameRule::Subdomain`]).
    pub fn of(group: &str, kind: &str, object: &Value) -> NameRule {
        let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
        match (group, kind) {
            ("", "Namespace") | ("apps", "StatefulSet") => NameRule::Label,
            ("", "Service") => NameRule::Dns1035Label,
            ("batch", "CronJob") => NameRule::CronJob,
            ("rbac.authorization.k8s.io", _)
            | ("", "Event")
            | ("networking.k8s.io", "IPAddress")
            | ("certificates.k8s.io", "ClusterTrustBundle")
            | ("internal.apiserver.k8s.io", "StorageVersion") => NameRule::PathSegment,
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                NameRule::CustomResourceDefinition {
                    required: format!("{}.{}", text("/spec/names/plural"), text("/spec/group")),
                }
            }
            ("apiregistration.k8s.io", "APIService") => NameRule::ApiService {
                required: format!("{}.{}", text("/spec/version"), text("/spec/group")),
            },
            _ => NameRule::Subdomain,
        }
    }

    /// What is wrong with `name` (`prefix`: it is a `generateName`, to which a suffix will
    /// be appended); empty if nothing.
    pub fn check(&self, name: &str, prefix: bool) -> Vec<String> {
        let masked = if prefix {
            mask_trailing_dash(name)
        } else {
            name.to_string()
        };
        match self {
            NameRule::Subdomain => is_dns1123_subdomain(&masked),
            NameRule::Label => is_dns1123_label(&masked),
            NameRule::Dns1035Label => is_dns1035_label(&masked),
            NameRule::PathSegment => is_path_segment_name(name),
            NameRule::CronJob => {
                let mut errs = is_dns1123_subdomain(&masked);
                // Checked on the name only, after generation.
                if !prefix && name.len() > DNS1123_LABEL_MAX - 11 {
                    errs.push("must be no more than 52 characters".into());
                }
                errs
            }
            NameRule::CustomResourceDefinition { required } => {
                let mut errs = is_dns1123_subdomain(&masked);
                if name != required {
                    errs.push("must be spec.names.plural+\".\"+spec.group".into());
                }
                errs
            }
            NameRule::ApiService { required } => {
                let minimal = is_path_segment_name(name);
                if !minimal.is_empty() {
                    return minimal;
                }
                if name != required {
                    return vec![format!(
                        "must be `spec.version+\".\"+spec.group`: {}",
                        super::go::quote(required)
                    )];
                }
                Vec::new()
            }
        }
    }
}

/// `maskTrailingDash`: a generateName may end in `-`, since a suffix follows it.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        // Go slices bytes: name[:len-2] + "a"; the byte before the dash is replaced too.
        let cut = name.len() - 2;
        if name.is_char_boundary(cut) {
            return format!("{}a", &name[..cut]);
        }
    }
    name.to_string()
}

/// The name kube-apiserver generates from `generate_name` (`names.SimpleNameGenerator`: the
/// base cut to 58 bytes plus 5 random characters), with a fixed suffix of the generator's
/// alphabet, so the validation of generated names can run without a random name.
pub fn generated_name(generate_name: &str) -> String {
    let mut cut = generate_name.len().min(DNS1123_LABEL_MAX - 5);
    while !generate_name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}bbbbb", &generate_name[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subdomain_messages_are_kubes() {
        assert!(is_dns1123_subdomain("my-app.example.com").is_empty());
        assert_eq!(
            is_dns1123_subdomain("MyApp"),
            ["a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
        );
        let long = "a".repeat(254);
        assert_eq!(
            is_dns1123_subdomain(&long),
            ["must be no more than 253 characters"]
        );
        assert_eq!(is_dns1123_subdomain("a..b").len(), 1);
        assert_eq!(is_dns1123_subdomain("a/b").len(), 1);
        assert_eq!(is_dns1123_subdomain("").len(), 1);
    }

    #[test]
    fn label_and_1035_label() {
        assert_eq!(is_dns1123_label("a.b"), ["must not contain dots"]);
        assert_eq!(
            is_dns1123_label("A"),
            ["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]
        );
        assert!(is_dns1123_label("123-abc").is_empty());
        assert_eq!(is_dns1035_label("123-abc").len(), 1);
        assert!(is_dns1035_label("abc-123").is_empty());
    }

    #[test]
    fn qualified_names_and_label_values() {
        assert!(is_qualified_name("app.kubernetes.io/name").is_empty());
        assert!(is_qualified_name("MyName").is_empty());
        assert_eq!(is_qualified_name("/x"), ["prefix part must be non-empty"]);
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert!(is_qualified_name("Example.com/x")[0].starts_with("prefix part a lowercase"));
        assert_eq!(
            is_qualified_name(&"k".repeat(64)),
            ["name part must be no more than 63 bytes"]
        );
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("v1.2_x-Y").is_empty());
        assert_eq!(is_valid_label_value("-x").len(), 1);
        assert_eq!(
            is_valid_label_value(&"v".repeat(64)),
            ["must be no more than 63 bytes"]
        );
    }

    #[test]
    fn path_segments_allow_colons() {
        assert!(is_path_segment_name("system:aggregated-metrics-reader").is_empty());
        assert_eq!(is_path_segment_name(".."), ["may not be '..'"]);
        assert_eq!(
            is_path_segment_name("a/b%c"),
            ["may not contain '/'", "may not contain '%'"]
        );
    }

    #[test]
    fn name_rules_per_kind() {
        let none = json!({});
        let rule = |g: &str, k: &str| NameRule::of(g, k, &none);
        assert!(rule("rbac.authorization.k8s.io", "ClusterRole")
            .check("system:aggregated-metrics-reader", false)
            .is_empty());
        assert!(!rule("", "ConfigMap").check("system:x", false).is_empty());
        assert!(!rule("", "Service").check("1st", false).is_empty());
        assert!(rule("", "Pod").check("1st", false).is_empty());
        assert_eq!(
            rule("", "Namespace").check("a.b", false),
            ["must not contain dots"]
        );
        assert!(!rule("apps", "StatefulSet").check("a.b", false).is_empty());
        assert!(rule("apps", "Deployment").check("a.b", false).is_empty());
        assert_eq!(
            rule("batch", "CronJob").check(&"c".repeat(53), false),
            ["must be no more than 52 characters"]
        );
        assert!(rule("example.com", "Widget").check("w.x", false).is_empty());
        // generateName may end in a dash.
        assert!(rule("", "Pod").check("web-", true).is_empty());
        assert!(!rule("", "Pod").check("web-", false).is_empty());
        let crd = json!({"spec": {"group": "example.com", "names": {"plural": "widgets"}}});
        let r = NameRule::of("apiextensions.k8s.io", "CustomResourceDefinition", &crd);
        assert!(r.check("widgets.example.com", false).is_empty());
        assert_eq!(
            r.check("widget.example.com", false),
            ["must be spec.names.plural+\".\"+spec.group"]
        );
        let api = json!({"spec": {"group": "metrics.k8s.io", "version": "v1beta1"}});
        let r = NameRule::of("apiregistration.k8s.io", "APIService", &api);
        assert!(r.check("v1beta1.metrics.k8s.io", false).is_empty());
        assert_eq!(
            r.check("metrics", false),
            ["must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\""]
        );
    }

    #[test]
    fn config_keys_and_generated_names() {
        assert!(is_config_map_key("tls.crt").is_empty());
        assert_eq!(is_config_map_key("..data"), ["must not start with '..'"]);
        assert_eq!(is_config_map_key("a b").len(), 1);
        assert_eq!(generated_name("web-"), "web-bbbbb");
        assert_eq!(generated_name(&"x".repeat(70)).len(), 63);
    }
}
