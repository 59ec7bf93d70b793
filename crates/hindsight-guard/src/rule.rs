use std::collections::BTreeMap;

use regex::{Regex, RegexBuilder};

use crate::error::GuardError;
use crate::pattern_rule::PatternRule;

// A careless override (a long bounded window over a Unicode class) can compile into a huge
// automaton; the cap turns that into a clear error instead of memory use.
const REGEX_SIZE_LIMIT: usize = 64 << 20;
const MAX_FRAGMENT_DEPTH: usize = 8;

/// A [`PatternRule`] with its regexes compiled.
#[derive(Debug, Clone)]
pub(crate) struct CompiledRule {
    pub name: String,
    pub pattern: Regex,
    pub context: Option<Regex>,
    pub unless: Option<Regex>,
    pub untrusted_only: bool,
}

/// Where `{{name}}` placeholders are looked up while compiling.
pub(crate) struct Fragments<'a> {
    pub configured: &'a BTreeMap<String, String>,
    pub builtin: &'a BTreeMap<String, String>,
    /// Topic name → alternation of its terms, already in regex form.
    pub topics: &'a BTreeMap<String, String>,
}

impl Fragments<'_> {
    fn lookup(&self, name: &str) -> Option<String> {
        if name == "topics" {
            let all: Vec<&str> = self.topics.values().map(String::as_str).collect();
            return Some(if all.is_empty() {
                // Matches nothing, so a rule that needs a topic simply never fires.
                r"[^\s\S]".to_string()
            } else {
                all.join("|")
            });
        }
        if let Some(topic) = name.strip_prefix("topic.") {
            return self.topics.get(topic).cloned();
        }
        self.configured
            .get(name)
            .or_else(|| self.builtin.get(name))
            .cloned()
    }
}

impl CompiledRule {
    pub fn compile(
        category: &str,
        rule: &PatternRule,
        fragments: &Fragments<'_>,
    ) -> Result<CompiledRule, GuardError> {
        if rule.name.trim().is_empty() {
            return Err(GuardError::UnnamedRule {
                category: category.to_string(),
                pattern: rule.pattern.clone(),
            });
        }
        let build = |pattern: &str| -> Result<Regex, GuardError> {
            let expanded = expand(pattern, fragments, 0).map_err(|e| match e {
                ExpandError::Unknown(fragment) => GuardError::UnknownFragment {
                    category: category.to_string(),
                    rule: rule.name.clone(),
                    fragment,
                },
                ExpandError::TooDeep => GuardError::FragmentCycle {
                    category: category.to_string(),
                    rule: rule.name.clone(),
                },
            })?;
            compile_regex(&expanded).map_err(|reason| GuardError::InvalidPattern {
                category: category.to_string(),
                rule: rule.name.clone(),
                pattern: pattern.to_string(),
                reason,
            })
        };
        Ok(CompiledRule {
            name: rule.name.clone(),
            pattern: build(&rule.pattern)?,
            context: rule.context.as_deref().map(build).transpose()?,
            unless: rule.unless.as_deref().map(build).transpose()?,
            untrusted_only: rule.untrusted_only,
        })
    }
}

pub(crate) fn compile_regex(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(&ascii_classes(pattern))
        .case_insensitive(true)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

/// Rewrites `\b`, `\B`, `\w`, `\W`, `\d` and `\D` as their ASCII forms. Unicode word boundaries
/// make the regex engine give up its fast automaton on any non-ASCII text (half of what is screened
/// is Chinese), and Unicode word classes inflate every bounded window many times over. Neither
/// helps: Chinese has no word boundaries, and with ASCII ones an English word written directly
/// against Chinese ("API key转发") still has a boundary.
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(class @ ('b' | 'B' | 'w' | 'W' | 'd' | 'D')) => {
                out.push_str("(?-u:\\");
                out.push(class);
                out.push(')');
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

enum ExpandError {
    Unknown(String),
    TooDeep,
}

fn expand(pattern: &str, fragments: &Fragments<'_>, depth: usize) -> Result<String, ExpandError> {
    if depth > MAX_FRAGMENT_DEPTH {
        return Err(ExpandError::TooDeep);
    }
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = &after[..end];
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            // Not a placeholder; keep the braces as written.
            out.push_str(&rest[..start + 2]);
            rest = after;
            continue;
        }
        let body = fragments
            .lookup(name)
            .ok_or_else(|| ExpandError::Unknown(name.to_string()))?;
        out.push_str(&rest[..start]);
        out.push_str("(?:");
        out.push_str(&expand(&body, fragments, depth + 1)?);
        out.push(')');
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A plain topic term as a regex: words joined by any whitespace, word boundaries where the term
/// starts or ends with a Latin letter or digit (Chinese has no spaces to anchor on), and a
/// trailing `*` for any word ending.
pub(crate) fn term_regex(term: &str) -> Option<String> {
    let term = term.trim();
    let (body, wildcard) = match term.strip_suffix('*') {
        Some(body) => (body.trim_end(), true),
        None => (term, false),
    };
    if body.is_empty() {
        return None;
    }
    let mut out = String::new();
    if body
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
    {
        out.push_str(r"\b");
    }
    let words: Vec<String> = body.split_whitespace().map(regex::escape).collect();
    out.push_str(&words.join(r"\s+"));
    if wildcard {
        out.push_str(r"\w*");
    } else if body
        .chars()
        .last()
        .is_some_and(|c| c.is_ascii_alphanumeric())
    {
        out.push_str(r"\b");
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin() -> BTreeMap<String, String> {
        BTreeMap::from([("verb".to_string(), "send|mail".to_string())])
    }

    fn topics() -> BTreeMap<String, String> {
        BTreeMap::from([("money".to_string(), r"\bpay\b|转账".to_string())])
    }

    #[test]
    fn fragments_expand_recursively_with_configured_ones_first() {
        let configured = BTreeMap::from([("obj".to_string(), "{{verb}} it".to_string())]);
        let (builtin, topics) = (builtin(), topics());
        let f = Fragments {
            configured: &configured,
            builtin: &builtin,
            topics: &topics,
        };
        let rule = PatternRule::new("r", r"^{{obj}} to {{topic.money}}$");
        let compiled = CompiledRule::compile("injection", &rule, &f).unwrap();
        assert!(compiled.pattern.is_match("MAIL it to 转账"));
        assert!(!compiled.pattern.is_match("keep it to pay"));
        // Regex repetitions in braces are left alone.
        let rule = PatternRule::new("r", "x{2} {{topics}}");
        let compiled = CompiledRule::compile("injection", &rule, &f).unwrap();
        assert!(compiled.pattern.is_match("xx pay"));
        assert!(!compiled.pattern.is_match("x pay"));
    }

    #[test]
    fn bad_rules_are_rejected_with_their_names() {
        let configured = BTreeMap::from([("loop".to_string(), "a{{loop}}".to_string())]);
        let (builtin, topics) = (builtin(), topics());
        let f = Fragments {
            configured: &configured,
            builtin: &builtin,
            topics: &topics,
        };
        let err =
            CompiledRule::compile("exfiltration", &PatternRule::new("broken", "(unclosed"), &f)
                .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("exfiltration rule \"broken\""), "{text}");
        assert!(text.contains("(unclosed"), "{text}");
        assert!(matches!(
            CompiledRule::compile("injection", &PatternRule::new("r", "{{nope}}"), &f),
            Err(GuardError::UnknownFragment { fragment, .. }) if fragment == "nope"
        ));
        assert!(matches!(
            CompiledRule::compile("injection", &PatternRule::new("r", "{{loop}}"), &f),
            Err(GuardError::FragmentCycle { .. })
        ));
        assert!(matches!(
            CompiledRule::compile("injection", &PatternRule::new(" ", "x"), &f),
            Err(GuardError::UnnamedRule { .. })
        ));
        let bad_context = PatternRule::new("ctx", "x").with_context("[");
        assert!(matches!(
            CompiledRule::compile("injection", &bad_context, &f),
            Err(GuardError::InvalidPattern { rule, .. }) if rule == "ctx"
        ));
    }

    #[test]
    fn word_classes_and_boundaries_are_ascii() {
        assert_eq!(
            ascii_classes(r"\bkey\w*\d"),
            r"(?-u:\b)key(?-u:\w)*(?-u:\d)"
        );
        assert_eq!(ascii_classes(r"a\\b\s"), r"a\\b\s");
        let re = compile_regex(r"\bkey\b").unwrap();
        assert!(re.is_match("API key转发"));
        assert!(!re.is_match("keyboard"));
    }

    #[test]
    fn topic_terms_respect_word_boundaries_and_wildcards() {
        let re = |t: &str| compile_regex(&term_regex(t).unwrap()).unwrap();
        assert!(re("wire").is_match("Wire the money"));
        assert!(!re("wire").is_match("wireless earbuds"));
        assert!(re("transfer*").is_match("two transfers"));
        assert!(re("api key").is_match("the API  key"));
        assert!(re("密码").is_match("修改密码"));
        assert!(re("drop table").is_match("DROP TABLE users"));
        assert_eq!(term_regex(" * "), None);
    }
}
