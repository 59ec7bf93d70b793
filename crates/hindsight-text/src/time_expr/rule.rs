//! The shape of a rule: a pattern and the function that turns its match into a window.

use regex::{Captures, Regex};

use super::calendar::{Ctx, Span};
use crate::script::Folded;

pub(super) struct Hit<'a> {
    pub(super) caps: Captures<'a>,
    /// The folded text the rule ran on.
    pub(super) text: &'a str,
    pub(super) folded: &'a Folded<'a>,
    pub(super) original: &'a str,
    pub(super) ctx: &'a Ctx,
}

impl Hit<'_> {
    pub(super) fn get(&self, i: usize) -> Option<&str> {
        self.caps.get(i).map(|m| m.as_str())
    }

    pub(super) fn has(&self, i: usize) -> bool {
        self.caps.get(i).is_some()
    }

    /// The character just before the whole match, in the folded text.
    pub(super) fn char_before(&self) -> Option<char> {
        let start = self.caps.get(0)?.start();
        self.text[..start].chars().next_back()
    }

    pub(super) fn char_after(&self) -> Option<char> {
        let end = self.caps.get(0)?.end();
        self.text[end..].chars().next()
    }

    /// Whether group `i` starts with an upper-case letter in the original text.
    pub(super) fn capitalised(&self, i: usize) -> bool {
        self.caps.get(i).is_some_and(|m| {
            let at = self.folded.orig(m.start());
            self.original[at..]
                .chars()
                .next()
                .is_some_and(|c| c.is_uppercase())
        })
    }
}

type Resolver = fn(&Hit) -> Option<Span>;

pub(super) struct Rule {
    pub(super) re: Regex,
    /// English rules need word boundaries around the match.
    pub(super) english: bool,
    pub(super) resolve: Resolver,
}

pub(super) fn rule(pattern: &str, english: bool, resolve: Resolver) -> Rule {
    Rule {
        re: Regex::new(pattern).unwrap_or_else(|e| panic!("time pattern {pattern}: {e}")),
        english,
        resolve,
    }
}
