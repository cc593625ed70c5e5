//! Ignore rules: differences a team has decided are not drift (a sidecar injector's
//! container, a field an operator owns), each with a reason and optionally an expiry so
//! exceptions do not outlive their purpose.

use super::pointer::{at, unescape, Seg};
use driftd_k8s::selector::Selector;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// One `[[ignore]]` table. Match fields narrow which objects it applies to (all set ones must
/// match); `pointers` and `managers` say which differences are ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IgnoreRule {
    pub source: Option<String>,
    /// API group; `""` for the core group.
    pub group: Option<String>,
    pub kind: Option<String>,
    /// Glob (`team-*`).
    pub namespace: Option<String>,
    /// Glob.
    pub name: Option<String>,
    /// Label selector: `app=web,tier!=db`, `env in (a,b)`, `canary`, `!canary`.
    pub labels: Option<String>,
    /// JSON pointers; `*` matches any list item or map key, `name=VALUE` a keyed item.
    #[serde(default)]
    pub pointers: Vec<String>,
    /// Field managers whose fields are ignored.
    #[serde(default)]
    pub managers: Vec<String>,
    pub reason: Option<String>,
    /// RFC 3339; the rule stops applying after it.
    pub expires: Option<String>,
}

/// An invalid rule, named by its index and reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule}: field `{field}`: {message}")]
pub struct RuleError {
    /// `ignore[2] ("istio sidecar")`.
    pub rule: String,
    pub field: String,
    pub message: String,
}

/// One step of an ignore pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternSeg {
    Any,
    Literal(String),
    Keyed { field: String, value: String },
}

/// A parsed ignore pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(pub Vec<PatternSeg>);

impl Pattern {
    /// Parses `/spec/template/spec/containers/name=istio-proxy/image`.
    pub fn parse(s: &str) -> Result<Pattern, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty pointer".into());
        }
        let Some(rest) = s.strip_prefix('/') else {
            return Err(format!("pointer {s:?} must start with `/`"));
        };
        let segs = rest
            .split('/')
            .map(|tok| {
                if tok == "*" {
                    return PatternSeg::Any;
                }
                let tok = unescape(tok);
                match tok.split_once('=') {
                    Some((f, v)) if !f.is_empty() => PatternSeg::Keyed {
                        field: f.to_string(),
                        value: v.to_string(),
                    },
                    _ => PatternSeg::Literal(tok),
                }
            })
            .collect();
        Ok(Pattern(segs))
    }

    /// Whether the difference at `segs` lies at or under this pointer.
    pub fn matches(&self, segs: &[Seg]) -> bool {
        if self.0.len() > segs.len() {
            return false;
        }
        self.0.iter().zip(segs).all(|(p, s)| match (p, s) {
            (PatternSeg::Any, _) => true,
            (PatternSeg::Literal(l), Seg::Field(f)) => l == f,
            (PatternSeg::Literal(l), Seg::Item { desired, live, .. }) => l
                .parse::<usize>()
                .is_ok_and(|i| *desired == Some(i) || (desired.is_none() && *live == Some(i))),
            (
                PatternSeg::Keyed { field, value },
                Seg::Item {
                    key: Some((kf, kv)),
                    ..
                },
            ) => field == kf && value == kv,
            _ => false,
        })
    }
}

/// What identifies an object to rule matching.
#[derive(Debug, Clone, Default)]
pub struct ObjectFacts<'a> {
    pub source: Option<&'a str>,
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub labels: BTreeMap<String, String>,
}

impl<'a> ObjectFacts<'a> {
    /// Facts of a desired object (labels from the desired object).
    pub fn of(object: &'a Value, source: Option<&'a str>) -> ObjectFacts<'a> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let labels = at(object, &["metadata", "labels"])
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        ObjectFacts {
            source,
            group: driftd_k8s::kinds::split_api_version(api_version).0,
            kind: object.get("kind").and_then(Value::as_str).unwrap_or(""),
            namespace: at(object, &["metadata", "namespace"]).and_then(Value::as_str),
            name: at(object, &["metadata", "name"])
                .and_then(Value::as_str)
                .unwrap_or(""),
            labels,
        }
    }
}

/// A validated rule, ready to match.
#[derive(Debug, Clone)]
pub struct CompiledRule {
    pub index: usize,
    pub rule: IgnoreRule,
    /// `ignore[2]`, or `ignore[2] ("reason")` — how counts and logs name the rule.
    pub label: String,
    namespace: Option<glob::Pattern>,
    name: Option<glob::Pattern>,
    labels: Option<Selector>,
    pub pointers: Vec<Pattern>,
    pub expires: Option<jiff::Timestamp>,
}

impl CompiledRule {
    /// Whether the rule applies to `obj` at time `now` (expired rules never apply).
    pub fn applies(&self, obj: &ObjectFacts, now: jiff::Timestamp) -> bool {
        if self.expires.is_some_and(|e| now > e) {
            return false;
        }
        let r = &self.rule;
        r.source.as_deref().is_none_or(|s| obj.source == Some(s))
            && r.group.as_deref().is_none_or(|g| g == obj.group)
            && r.kind.as_deref().is_none_or(|k| k == obj.kind)
            && self
                .namespace
                .as_ref()
                .is_none_or(|p| p.matches(obj.namespace.unwrap_or("")))
            && self.name.as_ref().is_none_or(|p| p.matches(obj.name))
            && self
                .labels
                .as_ref()
                .is_none_or(|s| s.matches_map(&obj.labels))
    }

    /// Whether the difference at `segs`, last written by `manager`, is ignored by this rule.
    pub fn ignores(&self, segs: &[Seg], manager: Option<&str>) -> bool {
        self.pointers.iter().any(|p| p.matches(segs))
            || manager.is_some_and(|m| self.rule.managers.iter().any(|x| x == m))
    }
}

/// A rule past its `expires`, reported so the daemon can log and count it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredRule {
    pub label: String,
    pub expires: jiff::Timestamp,
}

/// The validated `[[ignore]]` rules of a configuration.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub rules: Vec<CompiledRule>,
}

impl RuleSet {
    /// Validates rules; the error names the first bad rule by index and reason.
    pub fn new(rules: Vec<IgnoreRule>) -> Result<RuleSet, RuleError> {
        let compiled = rules
            .into_iter()
            .enumerate()
            .map(|(i, r)| compile(i, r))
            .collect::<Result<_, _>>()?;
        Ok(RuleSet { rules: compiled })
    }

    /// Parses a TOML document with `[[ignore]]` tables (what `driftd check --rules` reads).
    pub fn from_toml(text: &str) -> Result<RuleSet, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            ignore: Vec<IgnoreRule>,
        }
        let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
        RuleSet::new(file.ignore).map_err(|e| e.to_string())
    }

    /// Rules whose `expires` is before `now`.
    pub fn expired(&self, now: jiff::Timestamp) -> Vec<ExpiredRule> {
        self.rules
            .iter()
            .filter_map(|r| {
                r.expires.filter(|e| now > *e).map(|e| ExpiredRule {
                    label: r.label.clone(),
                    expires: e,
                })
            })
            .collect()
    }
}

fn compile(index: usize, rule: IgnoreRule) -> Result<CompiledRule, RuleError> {
    let label = match rule.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        Some(reason) => format!("ignore[{index}] ({reason:?})"),
        None => format!("ignore[{index}]"),
    };
    let err = |field: &str, message: String| RuleError {
        rule: label.clone(),
        field: field.to_string(),
        message,
    };
    let glob_of = |field: &str, v: &Option<String>| {
        v.as_deref()
            .map(glob::Pattern::new)
            .transpose()
            .map_err(|e| err(field, format!("invalid glob: {e}")))
    };
    let namespace = glob_of("namespace", &rule.namespace)?;
    let name = glob_of("name", &rule.name)?;
    let labels = rule
        .labels
        .as_deref()
        .map(Selector::parse_labels)
        .transpose()
        .map_err(|m| err("labels", m))?;
    if rule.pointers.is_empty() && rule.managers.is_empty() {
        return Err(err(
            "pointers",
            "a rule must ignore something: set `pointers` or `managers`".into(),
        ));
    }
    let pointers = rule
        .pointers
        .iter()
        .enumerate()
        .map(|(i, p)| Pattern::parse(p).map_err(|m| err(&format!("pointers[{i}]"), m)))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(i) = rule.managers.iter().position(|m| m.trim().is_empty()) {
        return Err(err(&format!("managers[{i}]"), "empty manager name".into()));
    }
    let expires = rule
        .expires
        .as_deref()
        .map(|e| {
            e.parse::<jiff::Timestamp>()
                .map_err(|x| err("expires", format!("not an RFC 3339 time: {x}")))
        })
        .transpose()?;
    Ok(CompiledRule {
        index,
        label,
        namespace,
        name,
        labels,
        pointers,
        expires,
        rule,
    })
}

/// Parses the `driftd.io/ignore` annotation value: comma-separated pointers.
pub fn annotation_patterns(value: &str) -> Result<Vec<Pattern>, String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(Pattern::parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_selectors_follow_kubectl_syntax() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("canary", "")]);
        let yes = [
            "app=web",
            "app==web",
            "tier!=db",
            "app in (web, api)",
            "tier notin (db)",
            "canary",
            "!legacy",
            "app=web,tier in (front),!legacy",
            "",
        ];
        for s in yes {
            assert!(Selector::parse_labels(s).unwrap().matches_map(&l), "{s}");
        }
        let no = [
            "app=api",
            "tier!=front",
            "app in (api)",
            "app notin (web)",
            "legacy",
            "!canary",
        ];
        for s in no {
            assert!(!Selector::parse_labels(s).unwrap().matches_map(&l), "{s}");
        }
        assert!(Selector::parse_labels("app in web").is_err());
        assert!(Selector::parse_labels("=web").is_err());
        assert!(Selector::parse_labels("a,,b").is_err());
    }

    #[test]
    fn pointers_match_fields_wildcards_positions_and_keys() {
        let segs = vec![
            Seg::Field("spec".into()),
            Seg::Field("containers".into()),
            Seg::Item {
                desired: Some(1),
                live: Some(0),
                key: Some(("name".into(), "istio-proxy".into())),
            },
            Seg::Field("image".into()),
        ];
        for p in [
            "/spec",
            "/spec/containers/name=istio-proxy",
            "/spec/containers/*/image",
            "/spec/containers/1/image",
            "/*/*/*/*",
        ] {
            assert!(Pattern::parse(p).unwrap().matches(&segs), "{p}");
        }
        for p in [
            "/spec/containers/name=app",
            "/spec/containers/0",
            "/spec/containers/*/image/x",
            "/metadata",
        ] {
            assert!(!Pattern::parse(p).unwrap().matches(&segs), "{p}");
        }
        let labels = [
            Seg::Field("metadata".into()),
            Seg::Field("labels".into()),
            Seg::Field("a/b".into()),
        ];
        assert!(Pattern::parse("/metadata/labels/a~1b")
            .unwrap()
            .matches(&labels));
        assert!(Pattern::parse("spec").is_err());
    }
}
