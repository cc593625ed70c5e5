//! Which sources a `driftd serve` instance owns when several share the work (sharding):
//! each shard imports, loads and judges only the sources whose names match its patterns, so
//! every desired object is evaluated by exactly one shard while the cluster log and Helm's
//! release Secrets stay shared. Patterns rather than a list, because Helm sources appear on
//! their own (`helm:team-a/*`) and teams name sources by convention (`team-a/*`).

/// Source-name patterns; `*` matches any run of characters (`/` and `:` included), every
/// other character itself. No patterns: every source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceScope {
    patterns: Vec<String>,
}

impl SourceScope {
    /// Every source: an unsharded instance.
    pub fn all() -> SourceScope {
        SourceScope::default()
    }

    /// The sources matching any of `patterns`; an empty pattern is refused, with its
    /// position, because it would match nothing and silently own no source.
    pub fn new(patterns: &[String]) -> Result<SourceScope, (usize, String)> {
        if let Some(i) = patterns.iter().position(|p| p.is_empty()) {
            return Err((i, "an empty pattern matches no source".into()));
        }
        Ok(SourceScope {
            patterns: patterns.to_vec(),
        })
    }

    /// Whether every source is in scope.
    pub fn is_all(&self) -> bool {
        self.patterns.is_empty()
    }

    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    pub fn contains(&self, source: &str) -> bool {
        self.is_all() || self.patterns.iter().any(|p| glob(p, source))
    }
}

/// `*`-only glob, iterative with one backtrack point: linear in practice, no recursion.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(patterns: &[&str]) -> SourceScope {
        SourceScope::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn no_patterns_own_every_source() {
        let all = SourceScope::all();
        assert!(all.is_all());
        assert!(all.contains("shop") && all.contains("helm:web/api"));
    }

    #[test]
    fn stars_match_any_run_including_separators() {
        let s = scope(&["team-a/*", "helm:team-a/*", "exact"]);
        for yes in [
            "team-a/web",
            "team-a/",
            "team-a/x/y",
            "helm:team-a/api",
            "exact",
        ] {
            assert!(s.contains(yes), "{yes}");
        }
        for no in [
            "team-b/web",
            "team-a",
            "helm:team-b/api",
            "exactly",
            "xexact",
            "",
        ] {
            assert!(!s.contains(no), "{no}");
        }
        let mid = scope(&["*-prod", "a*b*c"]);
        assert!(mid.contains("web-prod") && mid.contains("-prod"));
        assert!(!mid.contains("web-prod2"));
        assert!(mid.contains("abc") && mid.contains("aXbYbZc") && mid.contains("abcbc"));
        assert!(!mid.contains("acb"));
    }

    #[test]
    fn an_empty_pattern_is_refused_with_its_position() {
        let err = SourceScope::new(&["a".into(), String::new()]).unwrap_err();
        assert_eq!(err.0, 1);
    }
}
