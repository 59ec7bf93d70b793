//! Keyword-search analysis: text → index terms, for English and Chinese alike.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::OnceLock;

use jieba_rs::Jieba;
use rust_stemmers::{Algorithm, Stemmer};

use crate::lexicon;
use crate::script::{fold_char, is_han, lower_char, normalize};
use crate::stopwords::{is_chinese_stop_word, is_english_stop_word};

/// What a run of text is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunKind {
    /// Consecutive Han characters.
    Han,
    /// A word of letters and digits (any non-Han script), possibly joined by `. - _ ' / @ + # &`
    /// as in "v2.3", "ORD-1234", "don't", "node.js", "c++".
    Word,
}

/// A run of text, as byte offsets into the scanned string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub kind: RunKind,
    pub start: usize,
    pub end: usize,
}

fn is_word_char(c: char) -> bool {
    let c = fold_char(c);
    c.is_alphanumeric() && !is_han(c)
}

fn is_joiner(c: char) -> bool {
    matches!(
        fold_char(c),
        '.' | '-' | '_' | '\'' | '/' | '@' | '+' | '#' | '&' | ','
    )
}

/// Splits text into Han runs and word runs; everything else (spaces, punctuation) separates.
/// A joiner only stays inside a word when a word character follows it, so a sentence-final period
/// is never part of a word. A comma joins only digits ("1,000").
pub(crate) fn scan_runs(text: &str) -> Vec<Run> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if is_han(c) {
            let mut j = i + 1;
            while j < chars.len() && is_han(chars[j].1) {
                j += 1;
            }
            let end = chars.get(j).map_or(text.len(), |x| x.0);
            runs.push(Run {
                kind: RunKind::Han,
                start,
                end,
            });
            i = j;
        } else if is_word_char(c) {
            let mut j = i + 1;
            loop {
                if j < chars.len() && is_word_char(chars[j].1) {
                    j += 1;
                    continue;
                }
                if j + 1 < chars.len() && is_joiner(chars[j].1) && is_word_char(chars[j + 1].1) {
                    let joiner = fold_char(chars[j].1);
                    let digits_around = fold_char(chars[j - 1].1).is_ascii_digit()
                        && fold_char(chars[j + 1].1).is_ascii_digit();
                    if joiner != ',' || digits_around {
                        j += 2;
                        continue;
                    }
                }
                // "c++", "c#", "f#": a short word followed by trailing plus or hash signs.
                if j < chars.len() && j - i <= 2 && matches!(chars[j].1, '+' | '#') {
                    let mut k = j;
                    while k < chars.len() && matches!(chars[k].1, '+' | '#') && k - j < 2 {
                        k += 1;
                    }
                    if k == chars.len() || !is_word_char(chars[k].1) {
                        j = k;
                    }
                }
                break;
            }
            let end = chars.get(j).map_or(text.len(), |x| x.0);
            runs.push(Run {
                kind: RunKind::Word,
                start,
                end,
            });
            i = j;
        } else {
            i += 1;
        }
    }
    runs
}

/// British spellings folded to American ones before stemming, so "analyse" finds "analyze" and
/// "favourite" finds "favorite". Matched as word prefixes; both the index and the query side go
/// through the same fold, so an over-eager match ("analysis") only has to be consistent.
const SPELLING_PREFIXES: &[(&str, &str)] = &[
    ("analys", "analyz"),
    ("paralys", "paralyz"),
    ("catalys", "catalyz"),
    ("colour", "color"),
    ("favour", "favor"),
    ("behaviour", "behavior"),
    ("flavour", "flavor"),
    ("honour", "honor"),
    ("humour", "humor"),
    ("labour", "labor"),
    ("neighbour", "neighbor"),
    ("rumour", "rumor"),
    ("organis", "organiz"),
    ("realis", "realiz"),
    ("recognis", "recogniz"),
    ("prioritis", "prioritiz"),
    ("customis", "customiz"),
    ("optimis", "optimiz"),
    ("summaris", "summariz"),
    ("apologis", "apologiz"),
    ("minimis", "minimiz"),
    ("maximis", "maximiz"),
    ("standardis", "standardiz"),
    ("categoris", "categoriz"),
    ("authoris", "authoriz"),
    ("utilis", "utiliz"),
    ("finalis", "finaliz"),
    ("visualis", "visualiz"),
    ("normalis", "normaliz"),
    ("synchronis", "synchroniz"),
    ("centre", "center"),
    ("metre", "meter"),
    ("litre", "liter"),
    ("theatre", "theater"),
    ("fibre", "fiber"),
    ("catalogue", "catalog"),
    ("dialogue", "dialog"),
    ("programme", "program"),
    ("grey", "gray"),
    ("travell", "travel"),
    ("cancell", "cancel"),
    ("modell", "model"),
    ("labell", "label"),
];

fn american_spelling(word: &str) -> std::borrow::Cow<'_, str> {
    for (british, american) in SPELLING_PREFIXES {
        if let Some(rest) = word.strip_prefix(british) {
            return format!("{american}{rest}").into();
        }
    }
    word.into()
}

/// Turns text into search terms: Chinese segmented with jieba in search mode (words and their
/// dictionary sub-words), English lower-cased, spelling-folded and Snowball-stemmed, stop words
/// dropped, numbers and identifiers ("v2.3", "ord-1234", "k8s") kept whole and also split into
/// their parts. Index and query text must go through the same analyzer.
pub struct Analyzer {
    jieba: Jieba,
    stemmer: Stemmer,
    han_unigrams: bool,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Analyzer")
            .field("han_unigrams", &self.han_unigrams)
            .finish_non_exhaustive()
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::new()
    }
}

impl Analyzer {
    /// Builds an analyzer with jieba's embedded dictionary plus the value lexicon. This takes
    /// roughly 150–250 ms, so prefer [`Analyzer::shared`].
    pub fn new() -> Self {
        let mut jieba = Jieba::new();
        for (word, tag) in lexicon::chinese_words() {
            if !jieba.has_word(word) {
                jieba.add_word(word, None, Some(tag));
            }
        }
        Analyzer {
            jieba,
            stemmer: Stemmer::create(Algorithm::English),
            han_unigrams: false,
        }
    }

    /// The process-wide analyzer, built on first use.
    pub fn shared() -> &'static Analyzer {
        static SHARED: OnceLock<Analyzer> = OnceLock::new();
        SHARED.get_or_init(Analyzer::new)
    }

    /// Also index every Han character on its own (besides the words), trading index size for
    /// recall when queries and documents segment differently.
    pub fn with_han_unigrams(mut self, on: bool) -> Self {
        self.han_unigrams = on;
        self
    }

    pub(crate) fn jieba(&self) -> &Jieba {
        &self.jieba
    }

    /// Search terms for `text`, in text order, repeats kept (term frequency matters to BM25).
    pub fn terms(&self, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for run in scan_runs(text) {
            let raw = &text[run.start..run.end];
            match run.kind {
                RunKind::Han => self.han_terms(raw, &mut out),
                RunKind::Word => self.word_terms(raw, &mut out),
            }
        }
        out
    }

    /// Stems one English word the way [`Analyzer::terms`] does (lower-cased, spelling-folded);
    /// non-Latin words come back lower-cased only.
    pub fn stem(&self, word: &str) -> String {
        let lower = normalize(word);
        if is_ascii_letters(&lower) {
            self.stem_ascii(&lower)
        } else {
            lower
        }
    }

    /// The stem of a lower-case ASCII word, spelling-folded. Agents' memories repeat the same
    /// few thousand words, and every replica analyses every memory, so stems are remembered
    /// per thread (the stemmer and the fold are the same for every analyzer).
    fn stem_ascii(&self, word: &str) -> String {
        let stem_now = || self.stemmer.stem(&american_spelling(word)).into_owned();
        if word.len() > STEM_CACHE_MAX_WORD {
            return stem_now();
        }
        STEMS.with_borrow_mut(|stems| {
            if let Some(stem) = stems.get(word) {
                return stem.to_string();
            }
            let stem = stem_now();
            if stems.len() >= STEM_CACHE_WORDS {
                stems.clear();
            }
            stems.insert(word.into(), stem.as_str().into());
            stem
        })
    }

    fn han_terms(&self, run: &str, out: &mut Vec<String>) {
        for word in self.jieba.cut_for_search(run, true) {
            if is_chinese_stop_word(word) {
                continue;
            }
            out.push(word.to_string());
            let multi_char = word.chars().nth(1).is_some();
            // Words the HMM invented (names, rare terms) segment differently from one context
            // to the next, so their characters are indexed too, to still meet half-way.
            if multi_char && (self.han_unigrams || !self.jieba.has_word(word)) {
                for c in word.chars() {
                    let mut buf = [0u8; 4];
                    let s = c.encode_utf8(&mut buf);
                    if !is_chinese_stop_word(s) {
                        out.push(s.to_string());
                    }
                }
            }
        }
    }

    fn word_terms(&self, raw: &str, out: &mut Vec<String>) {
        let mut token: String = raw.chars().map(|c| lower_char(fold_char(c))).collect();
        // Possessive "'s" carries no meaning of its own; other apostrophes are dropped so that
        // "don't" meets the stop list as "dont". Commas only ever join digits ("1,000").
        if token.ends_with("'s") {
            token.truncate(token.len() - 2);
        }
        token.retain(|c| c != '\'' && c != ',');
        if token.is_empty() {
            return;
        }
        let has_joiner = token.chars().any(|c| !c.is_alphanumeric());
        if !has_joiner {
            self.push_plain(&token, out);
            return;
        }
        let parts = split_parts(&token);
        if parts.len() <= 1 {
            out.push(token);
            return;
        }
        if !parts.iter().all(|p| is_english_stop_word(p)) {
            out.push(token.clone());
        }
        for part in parts {
            self.push_plain(part, out);
        }
    }

    fn push_plain(&self, word: &str, out: &mut Vec<String>) {
        if word.is_empty() || is_english_stop_word(word) {
            return;
        }
        if is_ascii_letters(word) {
            out.push(self.stem_ascii(word));
        } else {
            // Numbers, identifiers and other scripts are kept as written.
            out.push(word.to_string());
        }
    }
}

fn is_ascii_letters(word: &str) -> bool {
    word.bytes().all(|b| b.is_ascii_alphabetic())
}

/// Words kept per thread in the stem cache before it starts over, and the longest word kept:
/// about a megabyte per thread at most.
const STEM_CACHE_WORDS: usize = 8192;
const STEM_CACHE_MAX_WORD: usize = 32;

thread_local! {
    static STEMS: RefCell<HashMap<Box<str>, Box<str>>> = RefCell::new(HashMap::new());
}

/// Splits an identifier at its joiners, except a dot between digits ("v2.3" stays whole) and the
/// trailing signs of "c++"/"c#".
fn split_parts(token: &str) -> Vec<&str> {
    let bytes = token.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, c) in token.char_indices() {
        let split = match c {
            '-' | '_' | '/' | '@' | '&' => true,
            '.' => {
                let before = i.checked_sub(1).map(|b| bytes[b].is_ascii_digit());
                let after = bytes.get(i + 1).map(|b| b.is_ascii_digit());
                !(before == Some(true) && after == Some(true))
            }
            _ => false,
        };
        if split {
            if i > start {
                parts.push(&token[start..i]);
            }
            start = i + c.len_utf8();
        }
    }
    if start < token.len() {
        parts.push(&token[start..]);
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(text: &str) -> Vec<String> {
        Analyzer::shared().terms(text)
    }

    #[test]
    fn scans_runs() {
        let text = "用户Kubernetes 升级, v2.3 ok.";
        let runs: Vec<(&str, RunKind)> = scan_runs(text)
            .into_iter()
            .map(|r| (&text[r.start..r.end], r.kind))
            .collect();
        assert_eq!(
            runs,
            vec![
                ("用户", RunKind::Han),
                ("Kubernetes", RunKind::Word),
                ("升级", RunKind::Han),
                ("v2.3", RunKind::Word),
                ("ok", RunKind::Word),
            ]
        );
    }

    #[test]
    fn english_is_stemmed_and_stopped() {
        assert_eq!(
            terms("The user prefers tea."),
            vec!["user", "prefer", "tea"]
        );
        assert_eq!(
            terms("What did the user have me analyse last week?"),
            vec!["user", "analyz", "last", "week"]
        );
        assert_eq!(terms("analyzing"), terms("analysing"));
        assert_eq!(terms("favourite colours"), terms("favorite colors"));
        assert_eq!(terms("Don't"), Vec::<String>::new());
        assert_eq!(terms("the user's café"), vec!["user", "cafe"]);
    }

    #[test]
    fn identifiers_and_numbers_kept() {
        assert_eq!(terms("v2.3"), vec!["v2.3"]);
        assert_eq!(terms("k8s"), vec!["k8s"]);
        assert_eq!(terms("ORD-1234"), vec!["ord-1234", "ord", "1234"]);
        assert_eq!(terms("over 1,000 dollars"), vec!["1000", "dollar"]);
        assert_eq!(terms("A502"), terms("a502"));
        assert_eq!(terms("C++ and c#"), vec!["c++", "c#"]);
        let t = terms("mail backup@mail-sync.example now");
        assert!(t.contains(&"backup@mail-sync.example".to_string()), "{t:?}");
        assert!(t.contains(&"sync".to_string()));
    }

    #[test]
    fn full_width_is_folded() {
        assert_eq!(terms("ＡＰＩ　Ｖ２"), terms("API V2"));
    }

    #[test]
    fn chinese_is_segmented_for_search() {
        let t = terms("Gemini项目的负责人是玛丽亚。");
        for w in ["gemini", "项目", "负责", "负责人", "玛丽亚"] {
            assert!(t.contains(&w.to_string()), "{w} missing from {t:?}");
        }
        assert!(!t.contains(&"的".to_string()));
        assert!(!t.contains(&"是".to_string()));
        let q = terms("用户三天前让我分析了什么？");
        assert!(q.contains(&"分析".to_string()));
        assert!(!q.iter().any(|w| w == "什么" || w == "了" || w == "我"));
    }

    #[test]
    fn lexicon_words_stay_whole() {
        let t = terms("我最近改喝馥芮白了。");
        assert!(t.contains(&"馥芮白".to_string()), "{t:?}");
    }

    #[test]
    fn unknown_han_words_also_yield_characters() {
        let t = terms("Vega项目归平台组的陈杰负责。");
        assert!(
            t.contains(&"陈".to_string()) && t.contains(&"杰".to_string()),
            "{t:?}"
        );
    }

    #[test]
    fn han_unigrams_option() {
        let a = Analyzer::new().with_han_unigrams(true);
        let t = a.terms("常住城市");
        assert!(t.contains(&"住".to_string()), "{t:?}");
        assert!(!Analyzer::shared()
            .terms("常住城市")
            .contains(&"住".to_string()));
    }

    #[test]
    fn stem_helper() {
        let a = Analyzer::shared();
        assert_eq!(a.stem("Preferences"), a.terms("preferences")[0]);
        assert_eq!(a.stem("北京"), "北京");
    }

    #[test]
    fn remembered_stems_are_the_stemmer_s_own() {
        let stemmer = Stemmer::create(Algorithm::English);
        let a = Analyzer::shared();
        let suffixes = ["", "s", "ing", "ed", "ation", "ly", "ness"];
        let roots = [
            "analys", "colour", "organis", "run", "connect", "generous", "happi",
        ];
        // More distinct words than the cache keeps, twice over, so that words are read back
        // from it, and again after it started over; plus words too long to be kept.
        let mut words: Vec<String> = vec![];
        for n in 0..(STEM_CACHE_WORDS / (roots.len() * suffixes.len()) + 2) {
            // `n` written in letters, so that every `n` makes new words.
            let mut filler = String::new();
            let mut rest = n;
            loop {
                filler.push((b'a' + (rest % 26) as u8) as char);
                rest /= 26;
                if rest == 0 {
                    break;
                }
            }
            for root in roots {
                for suffix in suffixes {
                    words.push(format!("{root}{filler}{suffix}"));
                }
            }
        }
        words.push("pneumonoultramicroscopicsilicovolcanoconiosis".into());
        let distinct: std::collections::HashSet<&String> = words.iter().collect();
        assert!(distinct.len() > STEM_CACHE_WORDS, "{}", distinct.len());
        for _ in 0..2 {
            for word in &words {
                let expected = stemmer.stem(&american_spelling(word)).into_owned();
                assert_eq!(a.stem(word), expected, "{word}");
                if !is_english_stop_word(word) {
                    assert_eq!(a.terms(word), vec![expected], "{word}");
                }
            }
        }
    }

    #[test]
    fn is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Analyzer>();
    }
}
