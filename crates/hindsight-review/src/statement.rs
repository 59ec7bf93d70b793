//! What the rules judge reads off one memory's text: the topic words it is about, which of its
//! clauses deny something, whether it announces a change or hedges, and the numbers it states.

use std::collections::{BTreeSet, HashSet};
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

use hindsight_text::{detect_lang, find_cues, strip_time_expr, Analyzer, Cue, CueKind, Lang};

use crate::lexicon::{
    AVERSIONS, CHANGE_CUES, CLAUSE_BREAKS, CORRECTIONS, FRAMING, HEDGES, OPPOSITES, PREDICATES,
};

/// Negations weaker than this ("without") qualify rather than deny.
const MIN_NEGATION_WEIGHT: f32 = 0.8;

/// A negator this close before an aversion ("not allergic", "不过敏") cancels it rather than
/// adding to it. Counted in words (English) plus characters (Chinese).
const MAX_GOVERNING_GAP: usize = 1;

/// Shortest term for which a shared prefix counts as the same word ("narrat" / "narrative"): the
/// stemmer does not always bring a noun and its adjective to one stem.
const MIN_FUZZY_PREFIX: usize = 5;

/// One clause of a statement: a sentence part between punctuation or a contrastive word.
#[derive(Clone, Debug)]
pub(crate) struct Clause {
    /// Lower-cased text (ASCII only).
    pub folded: String,
    /// The clause denies something: an un-cancelled negation or aversion.
    pub negative: bool,
    pub topic: BTreeSet<String>,
}

/// A memory's text, read for the rules judge.
#[derive(Clone, Debug)]
pub(crate) struct Statement {
    pub lang: Lang,
    /// Topic words of the whole statement: search terms without framing, cues and predicates.
    pub topic: BTreeSet<String>,
    pub clauses: Vec<Clause>,
    /// Every change cue found, with its weight.
    pub changes: Vec<(String, f32)>,
    pub hedge: Option<String>,
    pub numbers: BTreeSet<String>,
}

impl Statement {
    pub fn read(content: &str) -> Statement {
        let folded = content.to_ascii_lowercase();
        let cues = find_cues(content);
        let clauses: Vec<Clause> = split_clauses(content)
            .into_iter()
            .map(|text| {
                // A clause is a slice of the content: one as long is the content itself, whose
                // cues are already found.
                let found;
                let clause_cues = if text.len() == content.len() {
                    &cues
                } else {
                    found = find_cues(text);
                    &found
                };
                Clause {
                    folded: text.to_ascii_lowercase(),
                    negative: is_negative(text, clause_cues),
                    topic: topic_terms(text, clause_cues),
                }
            })
            .collect();
        let topic = clauses
            .iter()
            .flat_map(|c| c.topic.iter().cloned())
            .collect();
        Statement {
            lang: detect_lang(content),
            topic,
            clauses,
            changes: change_cues(&cues, &folded),
            // The content's first hedge, as `has_hedge` finds it.
            hedge: cues
                .iter()
                .find(|c| c.kind == CueKind::Hedge)
                .map(|c| c.text.clone())
                .or_else(|| find_listed(&folded, &hedges().occurring(&folded)).map(str::to_string)),
            numbers: numbers(content),
        }
    }

    /// Whether any clause denies something.
    pub fn is_negative(&self) -> bool {
        self.clauses.iter().any(|c| c.negative)
    }

    /// Topic words stated in a denying clause.
    pub fn denied_topic(&self) -> BTreeSet<&str> {
        self.clauses
            .iter()
            .filter(|c| c.negative)
            .flat_map(|c| c.topic.iter().map(String::as_str))
            .collect()
    }

    /// Topic words stated in an affirming clause.
    pub fn affirmed_topic(&self) -> BTreeSet<&str> {
        self.clauses
            .iter()
            .filter(|c| !c.negative)
            .flat_map(|c| c.topic.iter().map(String::as_str))
            .collect()
    }

    /// The strongest change cue, if at least `min_weight` strong.
    pub fn change_cue(&self, min_weight: f32) -> Option<&str> {
        strongest(self.changes.iter(), min_weight)
    }

    /// The strongest cue of a change over time (not a correction), if at least `min_weight`
    /// strong.
    pub fn change_over_time(&self, min_weight: f32) -> Option<&str> {
        let is_correction = |phrase: &str| CORRECTIONS.iter().any(|c| phrase.contains(c));
        strongest(
            self.changes.iter().filter(|(p, _)| !is_correction(p)),
            min_weight,
        )
    }

    /// The first of `words` an affirming clause uses.
    fn affirms_any(&self, words: &[&'static str]) -> Option<&'static str> {
        self.uses_any(words, false)
    }

    /// The first of `words` a denying clause uses.
    fn denies_any(&self, words: &[&'static str]) -> Option<&'static str> {
        self.uses_any(words, true)
    }

    fn uses_any(&self, words: &[&'static str], negative: bool) -> Option<&'static str> {
        self.clauses
            .iter()
            .filter(|c| c.negative == negative)
            .find_map(|c| find_listed(&c.folded, words))
    }
}

/// Whether two statements are in a script that lets their words be compared.
pub(crate) fn comparable_languages(a: Lang, b: Lang) -> bool {
    a == b || a == Lang::Mixed || b == Lang::Mixed || a == Lang::Other || b == Lang::Other
}

/// Two topic terms that name the same thing: equal, or one a prefix of the other when the
/// shorter is long enough not to be a coincidence (a Chinese word inside a longer one counts).
pub(crate) fn same_term(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_ascii() {
        short.len() >= MIN_FUZZY_PREFIX && long.starts_with(short)
    } else {
        short.chars().count() >= 2 && long.contains(short)
    }
}

/// Terms of `a` that some term of `b` names too, sorted.
pub(crate) fn shared_terms<'a, I, J>(a: I, b: J) -> Vec<&'a str>
where
    I: IntoIterator<Item = &'a str>,
    J: IntoIterator<Item = &'a str> + Clone,
{
    a.into_iter()
        .filter(|x| b.clone().into_iter().any(|y| same_term(x, y)))
        .collect()
}

/// Share of the smaller topic that the other one covers, 0..1; `None` when either is empty.
pub(crate) fn topic_overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> Option<f32> {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if small.is_empty() {
        return None;
    }
    let covered = small
        .iter()
        .filter(|x| large.iter().any(|y| same_term(x, y)))
        .count();
    Some(covered as f32 / small.len() as f32)
}

/// How `a` says the opposite of `b`, as (what `a` says, what `b` says): a word of one group of
/// [`OPPOSITES`] against a word of the other ("morning" / "night"), or a denied word against an
/// affirmed near-synonym ("not 熬夜" / "深夜").
pub(crate) fn opposite_words(a: &Statement, b: &Statement) -> Option<(String, String)> {
    let against = |x: &Statement, y: &Statement, ours: &[&'static str], theirs: &[&'static str]| {
        let said = x.affirms_any(ours)?;
        let opposed = y.affirms_any(theirs)?;
        // "I work mornings and nights" takes no side.
        let x_takes_a_side = x.affirms_any(theirs).is_none();
        let y_takes_a_side = y.affirms_any(ours).is_none();
        (x_takes_a_side && y_takes_a_side).then(|| (said.to_string(), opposed.to_string()))
    };
    let denied = |x: &Statement, y: &Statement, group: &[&'static str]| {
        let not_said = x.denies_any(group)?;
        let said = y.affirms_any(group)?;
        (y.denies_any(group).is_none() && x.affirms_any(group).is_none())
            .then(|| (format!("not {not_said}"), said.to_string()))
    };
    OPPOSITES.iter().find_map(|&(first, second)| {
        against(a, b, first, second)
            .or_else(|| against(a, b, second, first))
            .or_else(|| denied(a, b, first))
            .or_else(|| denied(a, b, second))
            .or_else(|| denied(b, a, first).map(|(x, y)| (y, x)))
            .or_else(|| denied(b, a, second).map(|(x, y)| (y, x)))
    })
}

fn split_clauses(text: &str) -> Vec<&str> {
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (n, &(i, c)) in chars.iter().enumerate() {
        let next = chars.get(n + 1).map(|&(_, c)| c);
        let prev = n.checked_sub(1).map(|p| chars[p].1);
        let ends = match c {
            // "v2.3", "jane@example.com" and "1,000" stay whole.
            '.' => next.is_none_or(char::is_whitespace),
            ',' | ':' => {
                !(prev.is_some_and(|p| p.is_ascii_digit())
                    && next.is_some_and(|n| n.is_ascii_digit()))
            }
            ';' | '!' | '?' | '\n' | '，' | '；' | '：' | '。' | '！' | '？' => true,
            _ => false,
        };
        if ends {
            cuts.push((i, i + c.len_utf8()));
        }
    }
    let folded = text.to_ascii_lowercase();
    for word in CLAUSE_BREAKS {
        let mut from = 0;
        while let Some(pos) = folded[from..].find(word) {
            let start = from + pos;
            cuts.push((start, start + word.len()));
            from = start + word.len();
        }
    }
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for (cut_start, cut_end) in cuts {
        if cut_start >= start {
            out.push(&text[start..cut_start]);
            start = cut_end;
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

/// Whether a clause denies something: a negation or an aversion that the other does not cancel.
fn is_negative(clause: &str, cues: &[Cue]) -> bool {
    let folded = clause.to_ascii_lowercase();
    let negations: Vec<(usize, usize)> = cues
        .iter()
        .filter(|c| c.kind == CueKind::Negation && c.weight >= MIN_NEGATION_WEIGHT)
        .map(|c| (c.start, c.end))
        .collect();
    let aversions = find_all_listed(&folded, &aversions().occurring(&folded));
    let mut cancelled = vec![false; negations.len()];
    let mut open_aversion = false;
    for (start, _) in aversions {
        let governor = negations.iter().position(|&(_, neg_end)| {
            neg_end <= start && gap_words(&folded[neg_end..start]) <= MAX_GOVERNING_GAP
        });
        match governor {
            Some(i) => cancelled[i] = true,
            None => open_aversion = true,
        }
    }
    open_aversion || cancelled.iter().any(|c| !c)
}

fn gap_words(gap: &str) -> usize {
    let han = gap
        .chars()
        .filter(|c| !c.is_ascii() && c.is_alphabetic())
        .count();
    let words = gap
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .count();
    han + words
}

/// Words left out of topics, sorted by how they are matched.
struct Excluded {
    /// Multi-word or multi-character phrases, cut from the text before analysis, longest first.
    phrases: Vec<&'static str>,
    /// `phrases`, found in one scan of a text.
    phrase_finder: Listed,
    /// Stems of single English words, so that "likes" and "liked" go with "like".
    stems: HashSet<String>,
    /// English word beginnings ([`AVERSIONS`] are listed as stems such as "allerg").
    prefixes: Vec<&'static str>,
    /// Single Chinese characters, dropped only when jieba emits them as a word of their own, so
    /// "会" goes but "会议" stays.
    han_words: Vec<&'static str>,
}

fn excluded() -> &'static Excluded {
    static EXCLUDED: OnceLock<Excluded> = OnceLock::new();
    EXCLUDED.get_or_init(|| {
        let analyzer = Analyzer::shared();
        let mut ex = Excluded {
            phrases: Vec::new(),
            phrase_finder: Listed::new([]),
            stems: HashSet::new(),
            prefixes: Vec::new(),
            han_words: Vec::new(),
        };
        let listed = FRAMING
            .iter()
            .chain(PREDICATES)
            .chain(AVERSIONS)
            .chain(HEDGES)
            .chain(CHANGE_CUES.iter().map(|(p, _)| p));
        for &entry in listed {
            if entry.is_ascii() && !entry.contains([' ', '\'']) {
                if AVERSIONS.contains(&entry) {
                    ex.prefixes.push(entry);
                } else {
                    ex.stems.insert(analyzer.stem(entry));
                }
            } else if !entry.is_ascii() && entry.chars().count() == 1 {
                ex.han_words.push(entry);
            } else {
                ex.phrases.push(entry);
            }
        }
        ex.phrases.sort_by_key(|p| std::cmp::Reverse(p.len()));
        ex.phrase_finder = Listed::new(ex.phrases.iter().copied());
        ex
    })
}

/// The search terms of `clause` that say what it is about.
///
/// `clause_cues` are the clause's cues: they are the lower-cased text's too (cues are found
/// case-folded, and ASCII lower-casing keeps every offset), unless a time expression is cut out
/// first, when the text is searched again.
fn topic_terms(clause: &str, clause_cues: &[Cue]) -> BTreeSet<String> {
    let ex = excluded();
    // "last month" and "上周" date a statement; they are not what it is about.
    let stripped = strip_time_expr(clause);
    let unchanged = stripped == clause;
    let mut text = stripped.to_ascii_lowercase();
    let found_cues;
    let cues = if unchanged {
        clause_cues
    } else {
        found_cues = find_cues(&text);
        &found_cues
    };
    // Cue spans found by hindsight-text ("switched to", "probably", "不再") are not topics.
    // A cue with gaps ("不…了", "not … anymore") spans what lies between its parts; only the
    // parts are cue words.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for cue in cues {
        for part in cue.phrase.split('…') {
            let part = part.trim().trim_matches('*');
            if part.is_empty() {
                continue;
            }
            let within = &text[cue.start..cue.end];
            spans.extend(
                within
                    .match_indices(part)
                    .map(|(at, m)| (cue.start + at, cue.start + at + m.len())),
            );
        }
    }
    spans.sort_unstable();
    for (start, end) in spans.into_iter().rev() {
        let (start, end) = whole_words(&text, start, end);
        blank_range(&mut text, start, end);
    }
    // Longest first, so a phrase inside a longer one is cut with it. Blanking only replaces
    // characters with spaces, so it never makes a phrase that was absent before appear.
    for phrase in ex.phrase_finder.occurring(&text) {
        for (start, end) in find_all_listed(&text, &[phrase]).into_iter().rev() {
            blank_range(&mut text, start, end);
        }
    }
    Analyzer::shared()
        .terms(&text)
        .into_iter()
        .filter(|t| !ex.stems.contains(t))
        .filter(|t| !ex.prefixes.iter().any(|p| t.starts_with(p)))
        .filter(|t| !ex.han_words.contains(&t.as_str()))
        .filter(|t| {
            !t.chars()
                .all(|c| c.is_ascii_digit() || c == '.' || c == ',')
        })
        .collect()
}

/// Widens a span inside a word ("n't" of "can't") to the whole word.
fn whole_words(text: &str, start: usize, end: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'\'';
    let (mut start, mut end) = (start, end);
    while start > 0 && is_word(bytes[start - 1]) {
        start -= 1;
    }
    while end < bytes.len() && is_word(bytes[end]) {
        end += 1;
    }
    (start, end)
}

fn blank_range(text: &mut String, start: usize, end: usize) {
    text.replace_range(start..end, &" ".repeat(end - start));
}

fn strongest<'a>(
    cues: impl Iterator<Item = &'a (String, f32)>,
    min_weight: f32,
) -> Option<&'a str> {
    cues.filter(|(_, w)| *w >= min_weight)
        .reduce(|best, c| if c.1 > best.1 { c } else { best })
        .map(|(p, _)| p.as_str())
}

/// Change cues from hindsight-text and from [`CHANGE_CUES`], as matched in the text (lower-cased).
fn change_cues(cues: &[Cue], folded: &str) -> Vec<(String, f32)> {
    let from_text = cues
        .iter()
        .filter(|c| c.kind == CueKind::Change)
        .map(|c| (c.text.to_lowercase(), c.weight));
    let occurring = change_cue_phrases().occurring(folded);
    let listed = CHANGE_CUES
        .iter()
        .filter(|(phrase, _)| occurring.contains(phrase) && contains_listed(folded, phrase))
        .map(|&(phrase, weight)| (phrase.to_string(), weight));
    from_text.chain(listed).collect()
}

/// A word list with an automaton over it: a text is scanned once for every entry, and only the
/// entries that occur somewhere are then matched with their word boundaries. A judge reads
/// thousands of memories per review cycle against lists of hundreds of entries.
struct Listed {
    entries: Vec<&'static str>,
    automaton: AhoCorasick,
}

impl Listed {
    fn new(entries: impl IntoIterator<Item = &'static str>) -> Self {
        let entries: Vec<&'static str> = entries.into_iter().filter(|e| !e.is_empty()).collect();
        let automaton = AhoCorasick::new(&entries).expect("a word list makes a valid automaton");
        Listed { entries, automaton }
    }

    /// The entries that occur in `folded`, word boundaries aside, in list order.
    fn occurring(&self, folded: &str) -> Vec<&'static str> {
        let mut seen = vec![false; self.entries.len()];
        for found in self.automaton.find_overlapping_iter(folded) {
            seen[found.pattern().as_usize()] = true;
        }
        self.entries
            .iter()
            .zip(seen)
            .filter_map(|(entry, seen)| seen.then_some(*entry))
            .collect()
    }
}

fn hedges() -> &'static Listed {
    static LISTED: OnceLock<Listed> = OnceLock::new();
    LISTED.get_or_init(|| Listed::new(HEDGES.iter().copied()))
}

fn aversions() -> &'static Listed {
    static LISTED: OnceLock<Listed> = OnceLock::new();
    LISTED.get_or_init(|| Listed::new(AVERSIONS.iter().copied()))
}

fn change_cue_phrases() -> &'static Listed {
    static LISTED: OnceLock<Listed> = OnceLock::new();
    LISTED.get_or_init(|| Listed::new(CHANGE_CUES.iter().map(|(phrase, _)| *phrase)))
}

fn find_listed<'a>(folded: &str, list: &[&'a str]) -> Option<&'a str> {
    list.iter().copied().find(|w| contains_listed(folded, w))
}

fn contains_listed(folded: &str, entry: &str) -> bool {
    !find_all_listed(folded, &[entry]).is_empty()
}

/// Byte spans of every entry of `list` in `folded`: Han entries anywhere, English entries at a
/// word start, and (unless listed as a stem in [`AVERSIONS`]) ending at a word end too.
fn find_all_listed(folded: &str, list: &[&str]) -> Vec<(usize, usize)> {
    let bytes = folded.as_bytes();
    let mut spans = Vec::new();
    for entry in list {
        if entry.is_empty() {
            continue;
        }
        let is_stem = AVERSIONS.contains(entry);
        let mut from = 0;
        while let Some(pos) = folded[from..].find(entry) {
            let start = from + pos;
            let mut end = start + entry.len();
            from = end;
            if !entry.is_ascii() {
                spans.push((start, end));
                continue;
            }
            let left_ok = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
            if !left_ok {
                continue;
            }
            if is_stem {
                while end < bytes.len() && bytes[end].is_ascii_alphanumeric() {
                    end += 1;
                }
            } else if end < bytes.len() && bytes[end].is_ascii_alphanumeric() {
                continue;
            }
            spans.push((start, end));
        }
    }
    spans.sort_unstable();
    spans
}

fn numbers(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .map(|s| s.trim_matches(['.', ',']).replace(',', ""))
        .filter(|s| s.chars().any(|c| c.is_ascii_digit()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aversions_read_as_denials_unless_negated() {
        assert!(Statement::read("I'm allergic to peanuts.").is_negative());
        assert!(Statement::read("我对花生过敏。").is_negative());
        assert!(!Statement::read("I'm not allergic to peanuts.").is_negative());
        assert!(!Statement::read("我对花生不过敏。").is_negative());
        assert!(Statement::read("I can't eat peanuts because of my allergy.").is_negative());
        assert!(!Statement::read("I drink coffee every morning.").is_negative());
    }

    #[test]
    fn a_negation_stays_in_its_clause() {
        let s = Statement::read("I do my focused work in the early morning, never at night.");
        assert!(s.denied_topic().contains("night"));
        assert!(s.affirmed_topic().contains("work"));
        assert!(!s.denied_topic().contains("work"));
    }

    #[test]
    fn topics_leave_out_framing_and_predicates() {
        let a = Statement::read("Just a reminder, peanuts give me an allergic reaction.");
        let b = Statement::read("Please remember: no peanuts, I'm allergic.");
        assert_eq!(topic_overlap(&a.topic, &b.topic), Some(1.0), "{a:?} {b:?}");
        let tea = Statement::read("I like tea.");
        let coffee = Statement::read("I like coffee.");
        assert_eq!(topic_overlap(&tea.topic, &coffee.topic), Some(0.0));
    }

    #[test]
    fn change_cues_and_hedges() {
        let s = Statement::read("From now on contact me via email.");
        assert!(s.change_cue(0.5).is_some());
        assert!(Statement::read("我现在改用邮件。")
            .change_cue(0.5)
            .is_some());
        assert!(Statement::read("I live in Berlin.")
            .change_cue(0.5)
            .is_none());
        let correction = Statement::read("Actually, I'm not vegetarian.");
        assert!(correction.change_cue(0.5).is_some());
        assert!(correction.change_over_time(0.5).is_none());
        let switch = Statement::read("Actually, I switched to lattes.");
        assert_eq!(switch.change_over_time(0.5), Some("switched to"));
        assert!(Statement::read("用户应该是素食者。").hedge.is_some());
        assert!(Statement::read("The user seems to work late.")
            .hedge
            .is_some());
    }

    #[test]
    fn numbers_are_normalised() {
        let s = Statement::read("Inventory reports 1,200 units, version 2.5.");
        let expected: BTreeSet<String> = ["1200", "2.5"].iter().map(|s| s.to_string()).collect();
        assert_eq!(s.numbers, expected);
    }

    #[test]
    fn opposites_need_one_word_on_each_side() {
        let late = Statement::read("The user seems to prefer working late at night.");
        let early = Statement::read("I do my focused work in the early morning.");
        assert!(opposite_words(&late, &early).is_some());
        let both = Statement::read("I work in the morning and at night.");
        assert!(opposite_words(&both, &early).is_none());
        let never_late = Statement::read("我都是一大早工作，从不熬夜。");
        let late_zh = Statement::read("用户好像喜欢深夜工作。");
        assert_eq!(
            opposite_words(&never_late, &late_zh),
            Some(("一大早".to_string(), "深夜".to_string()))
        );
    }
}
