use serde::{Deserialize, Serialize};

/// One named screening pattern. Patterns are case-insensitive regular expressions (use `(?-i:…)`
/// for a case-sensitive part) and may use `{{fragment}}` placeholders (see
/// [`GuardConfig::fragments`](crate::GuardConfig::fragments)). `\b`, `\w` and `\d` are
/// ASCII-only, for speed and because Chinese has no word boundaries: write Chinese as literal
/// characters or `\p{Han}`.
///
/// A match only counts when it is not directly preceded by a negation ("never skip the
/// confirmation"), when `context` (if any) matches somewhere in the text and when `unless` (if
/// any) does not match inside the matched span. `context` and `unless` exist because precision
/// matters more than recall here: a false positive hides a user's real memory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PatternRule {
    /// Shown in flags and logs; unique within a category by convention.
    pub name: String,
    pub pattern: String,
    /// Must also match somewhere in the (normalised) text for the rule to fire.
    pub context: Option<String>,
    /// A match whose text matches this is ignored.
    pub unless: Option<String>,
    /// Apply only to content from an untrusted tier (web pages, fetched documents): phrasing such
    /// as "note to the assistant:" is ordinary from a user but a classic hidden instruction in a page.
    pub untrusted_only: bool,
}

impl PatternRule {
    pub fn new(name: impl Into<String>, pattern: impl Into<String>) -> Self {
        PatternRule {
            name: name.into(),
            pattern: pattern.into(),
            ..PatternRule::default()
        }
    }

    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    pub fn with_unless(mut self, unless: impl Into<String>) -> Self {
        self.unless = Some(unless.into());
        self
    }

    pub fn untrusted_only(mut self) -> Self {
        self.untrusted_only = true;
        self
    }
}
