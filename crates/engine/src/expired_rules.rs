//! Ignore rules past their `expires`: each is logged once, when first found expired (the
//! engine looks every half minute; a warning each time would bury the rest of the log),
//! while `/metrics` counts every expired rule on every look.

use driftd_core::diff::rules::ExpiredRule;
use std::collections::BTreeSet;

/// The expired rules already logged, by label.
#[derive(Debug, Default)]
pub struct ExpiredRules {
    reported: BTreeSet<String>,
}

impl ExpiredRules {
    /// Logs those of `expired` (every rule expired now) not logged before.
    pub fn report(&mut self, expired: &[ExpiredRule]) {
        for rule in self.first_found(expired) {
            tracing::warn!(
                rule = %rule.label,
                expired = %rule.expires,
                "ignore rule expired and no longer applies; remove or renew it"
            );
        }
    }

    /// Those of `expired` not found expired before, which are then remembered.
    fn first_found<'a>(&mut self, expired: &'a [ExpiredRule]) -> Vec<&'a ExpiredRule> {
        expired
            .iter()
            .filter(|rule| self.reported.insert(rule.label.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(label: &str) -> ExpiredRule {
        ExpiredRule {
            label: label.into(),
            expires: "2026-11-30T10:00:00Z".parse().unwrap(),
        }
    }

    #[test]
    fn each_expired_rule_is_reported_once() {
        let mut rules = ExpiredRules::default();
        let labels = |found: Vec<&ExpiredRule>| -> Vec<String> {
            found.into_iter().map(|r| r.label.clone()).collect()
        };
        assert_eq!(labels(rules.first_found(&[rule("a")])), ["a"]);
        assert_eq!(
            labels(rules.first_found(&[rule("a"), rule("b")])),
            ["b"],
            "only the newly expired one"
        );
        assert!(rules.first_found(&[rule("a"), rule("b")]).is_empty());
        rules.report(&[rule("a"), rule("c")]);
        assert!(rules.first_found(&[rule("c")]).is_empty(), "reported");
    }
}
