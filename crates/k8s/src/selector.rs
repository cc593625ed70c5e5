//! Label and field selectors as `k8s.io/apimachinery/pkg/labels` and `pkg/fields` parse them:
//! the simulator filters lists and watches with them (a field selector once
//! [`crate::field_labels`] has converted it for the kind), and ignore rules select objects
//! with the same syntax `kubectl get -l` accepts.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(String),
    NotEq(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
}

/// A parsed selector: every requirement must hold (comma means AND).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selector {
    reqs: Vec<(String, Op)>,
}

/// Splits on top-level commas, leaving those inside `( )` alone.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn set_values(rest: &str, whole: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("unable to parse requirement: found '{whole}', expected: '('"))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

impl Selector {
    /// Parses a label selector (`a=b,c!=d,e in (f,g),h notin (i),j,!k`).
    pub fn parse_labels(s: &str) -> Result<Selector, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(Selector { reqs });
        }
        for part in split_top(s) {
            let part = part.trim();
            if part.is_empty() {
                // labels.Parse: "found ',', expected: identifier"
                return Err(format!("invalid label selector {s:?}: empty requirement"));
            }
            if let Some(key) = part.strip_prefix('!') {
                reqs.push((key.trim().to_string(), Op::NotExists));
            } else if let Some((k, v)) = part.split_once("!=") {
                reqs.push((k.trim().to_string(), Op::NotEq(v.trim().to_string())));
            } else if let Some((k, v)) = part.split_once("==") {
                reqs.push((k.trim().to_string(), Op::Eq(v.trim().to_string())));
            } else if let Some((k, v)) = part.split_once('=') {
                reqs.push((k.trim().to_string(), Op::Eq(v.trim().to_string())));
            } else if let Some((k, rest)) = part.split_once(" notin ") {
                reqs.push((k.trim().to_string(), Op::NotIn(set_values(rest, part)?)));
            } else if let Some((k, rest)) = part.split_once(" in ") {
                reqs.push((k.trim().to_string(), Op::In(set_values(rest, part)?)));
            } else if part.contains(' ') || part.contains('(') {
                return Err(format!("unable to parse requirement: {part:?}"));
            } else {
                reqs.push((part.to_string(), Op::Exists));
            }
        }
        for (k, _) in &reqs {
            if k.is_empty() {
                return Err(format!("invalid label selector {s:?}: empty key"));
            }
        }
        Ok(Selector { reqs })
    }

    /// Parses a field selector: only `=`, `==` and `!=` exist for fields.
    pub fn parse_fields(s: &str) -> Result<Selector, String> {
        let sel = Selector::parse_labels(s)?;
        for (k, op) in &sel.reqs {
            if !matches!(op, Op::Eq(_) | Op::NotEq(_)) {
                return Err(format!("invalid field selector: {k:?} needs = or !="));
            }
        }
        Ok(sel)
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// The same requirements with every key replaced by `rename(key)`, as
    /// `fields.Selector.Transform` does with a kind's field label conversion; the first
    /// refused key is the error.
    pub fn rename_keys(
        &self,
        mut rename: impl FnMut(&str) -> Result<String, String>,
    ) -> Result<Selector, String> {
        let reqs = self
            .reqs
            .iter()
            .map(|(k, op)| Ok((rename(k)?, op.clone())))
            .collect::<Result<_, String>>()?;
        Ok(Selector { reqs })
    }

    /// Whether the fields a kind's `GetAttrs` exposes satisfy every requirement, `value`
    /// giving each field's text: how kube-apiserver matches a field selector against a
    /// `fields.Set` (where a field it lacks reads as "").
    pub fn matches_field_values(&self, value: impl Fn(&str) -> String) -> bool {
        self.reqs.iter().all(|(k, op)| match op {
            Op::Eq(want) => value(k) == *want,
            Op::NotEq(want) => value(k) != *want,
            // `parse_fields` admits no other operator.
            _ => false,
        })
    }

    /// Whether `labels` (a JSON object or null) satisfies every requirement.
    pub fn matches_labels(&self, labels: Option<&Value>) -> bool {
        self.matches_with(|k| {
            labels
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
    }

    /// Whether a label map satisfies every requirement.
    pub fn matches_map(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).cloned())
    }

    fn matches_with(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.reqs.iter().all(|(k, op)| {
            let v = get(k);
            match op {
                Op::Eq(want) => {
                    v.as_deref().unwrap_or("") == want && (v.is_some() || want.is_empty())
                }
                Op::NotEq(want) => v.as_deref() != Some(want.as_str()),
                Op::In(set) => v.is_some_and(|v| set.contains(&v)),
                Op::NotIn(set) => !v.is_some_and(|v| set.contains(&v)),
                Op::Exists => v.is_some(),
                Op::NotExists => v.is_none(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_operators() {
        let l = json!({"app": "web", "tier": "front"});
        let ok = |s: &str| Selector::parse_labels(s).unwrap().matches_labels(Some(&l));
        assert!(ok("app=web"));
        assert!(ok("app==web,tier"));
        assert!(!ok("app!=web"));
        assert!(ok("app in (web, api)"));
        assert!(!ok("app notin (web,api)"));
        assert!(ok("tier,!missing"));
        assert!(!ok("missing"));
        assert!(ok("missing!=x"));
        assert!(!ok("missing=x"));
        assert!(Selector::parse_labels("app in web").is_err());
    }

    #[test]
    fn field_selectors() {
        let sel =
            Selector::parse_fields("metadata.name=a,metadata.namespace!=kube-system").unwrap();
        let fields = |f: &str| match f {
            "metadata.name" => "a".to_string(),
            _ => String::new(),
        };
        assert!(sel.matches_field_values(fields));
        assert!(!Selector::parse_fields("metadata.name=b")
            .unwrap()
            .matches_field_values(fields));
        assert!(Selector::parse_fields("metadata.name").is_err());
    }
}
