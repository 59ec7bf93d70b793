//! Who may do what: API keys bound to a principal, with rights per bank or bank pattern
//! (docs/DESIGN.md, "Guard", on authentication and rights). Pure: the node hashes and compares
//! secrets; this module says what a key grants.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::bank::BankName;
use crate::error::ValidationError;
use crate::time::Timestamp;

/// What a grant allows on the banks it covers. `Admin` includes `Write`, which includes `Read`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Right {
    /// Recall, get, trace, list conflicts, read the retrieval log.
    Read,
    /// Write, forget, review, reflect, feedback, resolve conflicts.
    Write,
    /// Create, change and delete banks; manage API keys (on every bank: `**`).
    Admin,
}
string_enum!(Right, "right", { Read => "read", Write => "write", Admin => "admin" });

/// A bank name or a pattern of them: `*` stands for any run of characters within one segment,
/// and a final `/**` (or `**` alone) for any number of further segments.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankPattern(String);

impl BankPattern {
    /// Every bank.
    pub fn all() -> Self {
        BankPattern("**".into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn matches(&self, bank: &BankName) -> bool {
        let pattern: Vec<&str> = self.0.split('/').collect();
        let name: Vec<&str> = bank.as_str().split('/').collect();
        match pattern.split_last() {
            Some((&"**", head)) => {
                name.len() >= head.len()
                    && head.iter().zip(&name).all(|(p, n)| segment_matches(p, n))
            }
            _ => {
                pattern.len() == name.len()
                    && pattern
                        .iter()
                        .zip(&name)
                        .all(|(p, n)| segment_matches(p, n))
            }
        }
    }
}

/// Glob within one segment: `*` matches any run of characters, everything else itself.
fn segment_matches(pattern: &str, segment: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == segment;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !segment.starts_with(first) || !segment[first.len()..].ends_with(last) {
        return false;
    }
    let mut rest = &segment[first.len()..segment.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(at) => rest = &rest[at + middle.len()..],
            None => return false,
        }
    }
    true
}

impl FromStr for BankPattern {
    type Err = ValidationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let bad = |why: &str| ValidationError::Invalid(format!("bank pattern {s:?}: {why}"));
        if s.is_empty() || s.len() > 128 {
            return Err(bad("must be 1 to 128 bytes"));
        }
        let segments: Vec<&str> = s.split('/').collect();
        for (n, segment) in segments.iter().enumerate() {
            if *segment == "**" {
                if n + 1 != segments.len() {
                    return Err(bad("** may only end a pattern"));
                }
                continue;
            }
            let ok = !segment.is_empty()
                && segment.chars().all(|c| {
                    c.is_ascii_lowercase()
                        || c.is_ascii_digit()
                        || matches!(c, '-' | '_' | '.' | '*')
                });
            if !ok {
                return Err(bad(
                    "segments are lowercase letters, digits, '-', '_', '.' and '*'",
                ));
            }
        }
        Ok(BankPattern(s.to_string()))
    }
}

impl fmt::Display for BankPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One right on the banks a pattern covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub banks: BankPattern,
    pub right: Right,
}

impl FromStr for Grant {
    type Err = ValidationError;

    /// `PATTERN=RIGHT`, e.g. `acme/team-*=write`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (banks, right) = s.rsplit_once('=').ok_or_else(|| {
            ValidationError::Invalid(format!(
                "grant {s:?} is not PATTERN=RIGHT (e.g. acme/team-*=write)"
            ))
        })?;
        Ok(Grant {
            banks: banks.parse()?,
            right: right.parse()?,
        })
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.banks, self.right)
    }
}

/// An API key as stored: never the secret, only its SHA-256.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiKey {
    /// Public part of the key, shown in lists and logs.
    pub id: String,
    pub principal: String,
    /// Hex SHA-256 of the secret part.
    pub secret_sha256: String,
    pub grants: Vec<Grant>,
    pub created_at: Timestamp,
    pub revoked_at: Option<Timestamp>,
}

/// Who is calling, and what they may do.
#[derive(Clone, Debug, PartialEq)]
pub struct Principal {
    pub name: String,
    /// The key it authenticated with (none for the bootstrap admin key or an open node).
    pub key_id: Option<String>,
    pub grants: Vec<Grant>,
}

impl Principal {
    /// A principal with every right: the bootstrap admin, or anyone on a node without auth.
    pub fn superuser(name: &str) -> Self {
        Principal {
            name: name.to_string(),
            key_id: None,
            grants: vec![Grant {
                banks: BankPattern::all(),
                right: Right::Admin,
            }],
        }
    }

    pub fn may(&self, right: Right, bank: &BankName) -> bool {
        self.grants
            .iter()
            .any(|g| g.right >= right && g.banks.matches(bank))
    }

    /// Whether the principal holds `right` over every bank (`**`).
    pub fn may_everywhere(&self, right: Right) -> bool {
        self.grants
            .iter()
            .any(|g| g.right >= right && g.banks.as_str() == "**")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bank(s: &str) -> BankName {
        s.parse().unwrap()
    }

    #[test]
    fn patterns_match_segments_and_depth() {
        let p: BankPattern = "acme/team-*".parse().unwrap();
        assert!(p.matches(&bank("acme/team-a")));
        assert!(p.matches(&bank("acme/team-")));
        assert!(!p.matches(&bank("acme/other")));
        assert!(!p.matches(&bank("acme/team-a/sub")));
        assert!(!p.matches(&bank("other/team-a")));
        let deep: BankPattern = "acme/**".parse().unwrap();
        assert!(deep.matches(&bank("acme/x/y")) && deep.matches(&bank("acme")));
        assert!(BankPattern::all().matches(&bank("anything/at/all")));
        let exact: BankPattern = "a/b".parse().unwrap();
        assert!(exact.matches(&bank("a/b")) && !exact.matches(&bank("a/bc")));
        let mid: BankPattern = "x*y*z".parse().unwrap();
        assert!(mid.matches(&bank("x1y2z")) && !mid.matches(&bank("xz")));
        assert!("a/**/b".parse::<BankPattern>().is_err());
        assert!("A/b".parse::<BankPattern>().is_err());
    }

    #[test]
    fn rights_include_the_lesser_ones() {
        let p = Principal {
            name: "agent".into(),
            key_id: Some("k".into()),
            grants: vec!["acme/team-*=write".parse().unwrap()],
        };
        assert!(p.may(Right::Read, &bank("acme/team-a")));
        assert!(p.may(Right::Write, &bank("acme/team-a")));
        assert!(!p.may(Right::Admin, &bank("acme/team-a")));
        assert!(!p.may(Right::Read, &bank("acme/other")));
        assert!(!p.may_everywhere(Right::Read));
        assert!(Principal::superuser("root").may_everywhere(Right::Admin));
        assert!("acme=owner".parse::<Grant>().is_err());
        assert!("acme".parse::<Grant>().is_err());
    }
}
