use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::pattern_rule::PatternRule;
use crate::trust::TrustTiers;

/// Every word list and pattern the guard uses. The defaults cover English and Chinese; any field
/// can be replaced from TOML (fields left out keep their defaults; a list given replaces the whole
/// default list).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GuardConfig {
    /// Reusable regex pieces, referenced from patterns as `{{name}}`. Names missing here fall back
    /// to the built-in fragments, so overriding one fragment does not break the rules that use
    /// the others. `{{topics}}` and `{{topic.NAME}}` expand to the sensitive-topic word lists.
    pub fragments: BTreeMap<String, String>,
    /// Instructions aimed at the agent or its policy, and instructions hidden in markup.
    pub injection: Vec<PatternRule>,
    /// Sending secrets to an address or URL.
    pub exfiltration: Vec<PatternRule>,
    /// Attempts to remove or loosen a confirmation, approval or verification requirement.
    pub policy_weakening: Vec<PatternRule>,
    /// Recognises a safety rule (an action that requires confirmation or approval) so the caller
    /// can mark it critical. Not a flag category.
    pub safety_rules: Vec<PatternRule>,
    /// Matched against the text just before a match (it should end in `$`); when it matches, the
    /// match is negated ("never ignore previous instructions") and skipped. Empty disables it.
    pub negation: String,
    /// Topic name → terms. Terms are plain words, not regexes: matched case-insensitively, on word
    /// boundaries for Latin script, anywhere for Chinese; a trailing `*` allows any word ending
    /// ("transfer*" covers "transfers", "transferred").
    pub sensitive_topics: BTreeMap<String, Vec<String>>,
    pub trust: TrustTiers,
    /// Longest excerpt kept in a flag, in characters.
    pub excerpt_chars: usize,
    /// How close (cosine of the embedder's vectors) a permission from a lesser voice must be to a
    /// standing rule of the principal to be held as weakening it. Unrelated texts of the default
    /// embedder sit around 0.1 to 0.2; a rule and a text granting leave against it, worded
    /// apart, mostly 0.3 to 0.6. Above 1 disables the check.
    pub rule_relaxing_similarity: f32,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            fragments: defaults::fragments(),
            injection: defaults::injection(),
            exfiltration: defaults::exfiltration(),
            policy_weakening: defaults::policy_weakening(),
            safety_rules: defaults::safety_rules(),
            negation: defaults::negation(),
            sensitive_topics: defaults::sensitive_topics(),
            trust: TrustTiers::default(),
            excerpt_chars: 80,
            rule_relaxing_similarity: 0.30,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_toml_keeps_the_other_defaults() {
        let config: GuardConfig = toml::from_str(
            r#"
            excerpt_chars = 40

            [sensitive_topics]
            medical = ["diagnosis", "prescription*", "病历"]

            [[injection]]
            name = "custom_marker"
            pattern = "\\bBEGIN OVERRIDE\\b"
            "#,
        )
        .unwrap();
        let defaults = GuardConfig::default();
        assert_eq!(config.excerpt_chars, 40);
        assert_eq!(config.injection.len(), 1);
        assert_eq!(config.injection[0].name, "custom_marker");
        assert!(!config.injection[0].untrusted_only);
        assert_eq!(config.exfiltration, defaults.exfiltration);
        assert_eq!(config.trust, defaults.trust);
        assert_eq!(config.sensitive_topics.len(), 1);
    }

    #[test]
    fn default_config_round_trips_through_toml() {
        let config = GuardConfig::default();
        let text = toml::to_string(&config).unwrap();
        let back: GuardConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, config);
    }

    #[test]
    fn default_lists_cover_every_category_and_topic() {
        let config = GuardConfig::default();
        assert!(!config.injection.is_empty());
        assert!(!config.exfiltration.is_empty());
        assert!(!config.policy_weakening.is_empty());
        assert!(!config.safety_rules.is_empty());
        for topic in ["payments", "credentials", "permissions", "deletion"] {
            assert!(config.sensitive_topics.contains_key(topic), "{topic}");
        }
    }
}
