use std::fmt;

use serde::{Deserialize, Serialize};

/// What a flagged text tries to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Injection,
    Exfiltration,
    PolicyWeakening,
}

impl Category {
    pub const ALL: [Category; 3] = [
        Category::Injection,
        Category::Exfiltration,
        Category::PolicyWeakening,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Injection => "injection",
            Category::Exfiltration => "exfiltration",
            Category::PolicyWeakening => "policy_weakening",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule that fired.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flag {
    pub category: Category,
    /// The rule's name from the configuration.
    pub rule: String,
    /// The matched text, one line and bounded in length.
    pub excerpt: String,
    /// Where the matched text was found when not in the text as written: "base64-decoded text",
    /// "an HTML comment", "two consecutive writes of one source joined".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_in: Option<String>,
}

/// The verdict on one text. Flags mean "quarantine"; sensitive topics alone do not (the caller
/// recalls such memories with `requires_confirmation` instead).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Screening {
    /// In category order (injection, exfiltration, policy weakening), then rule order.
    pub flags: Vec<Flag>,
    /// Names of the sensitive topics the text mentions, sorted.
    pub sensitive_topics: Vec<String>,
}

impl Screening {
    pub fn is_flagged(&self) -> bool {
        !self.flags.is_empty()
    }

    pub fn has(&self, category: Category) -> bool {
        self.flags.iter().any(|f| f.category == category)
    }

    pub fn is_sensitive(&self) -> bool {
        !self.sensitive_topics.is_empty()
    }

    /// A one-line reason for `Status::Quarantined`, e.g. `injection: "ignore previous
    /// instructions"` or `injection: "ignore previous instructions" (in base64-decoded text)`,
    /// naming the first flag and counting the rest.
    pub fn quarantine_reason(&self) -> Option<String> {
        let first = self.flags.first()?;
        let mut reason = format!("{}: \"{}\"", first.category, first.excerpt);
        if let Some(found_in) = &first.found_in {
            reason.push_str(&format!(" (in {found_in})"));
        }
        if self.flags.len() > 1 {
            reason.push_str(&format!(" (+{} more)", self.flags.len() - 1));
        }
        Some(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(category: Category, excerpt: &str) -> Flag {
        Flag {
            category,
            rule: "r".into(),
            excerpt: excerpt.into(),
            found_in: None,
        }
    }

    #[test]
    fn quarantine_reason_names_the_first_flag_and_counts_the_rest() {
        let mut s = Screening::default();
        assert_eq!(s.quarantine_reason(), None);
        s.flags
            .push(flag(Category::Injection, "disregard prior rules"));
        assert_eq!(
            s.quarantine_reason().unwrap(),
            "injection: \"disregard prior rules\""
        );
        s.flags
            .push(flag(Category::PolicyWeakening, "no longer need approval"));
        assert_eq!(
            s.quarantine_reason().unwrap(),
            "injection: \"disregard prior rules\" (+1 more)"
        );
        assert!(s.has(Category::PolicyWeakening));
        assert!(!s.has(Category::Exfiltration));
        s.flags[0].found_in = Some("an HTML comment".into());
        assert_eq!(
            s.quarantine_reason().unwrap(),
            "injection: \"disregard prior rules\" (in an HTML comment) (+1 more)"
        );
    }

    #[test]
    fn categories_serialise_in_snake_case() {
        assert_eq!(
            serde_json::to_string(&Category::PolicyWeakening).unwrap(),
            "\"policy_weakening\""
        );
        assert_eq!(Category::Exfiltration.to_string(), "exfiltration");
    }
}
