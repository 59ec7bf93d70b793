//! Entity keys for the entity graph: names of people, places, organisations, products and
//! projects, code-like identifiers, e-mail addresses and hosts, and quoted names.
//!
//! Keys are normalised (lower-case, accents and width folded, possessives and designator words
//! such as "project" dropped), so "Project Falcon", "the Falcon project" and "Falcon项目" all
//! give `falcon` and link across languages.

use std::collections::HashSet;
use std::sync::OnceLock;

use crate::analyzer::{scan_runs, Analyzer, RunKind};
use crate::lexicon;
use crate::script::{fold_char, is_han, normalize};
use crate::stopwords::{is_chinese_stop_word, is_english_stop_word};

/// Words that are never an entity on their own, even capitalised mid-sentence: pronouns,
/// titles, calendar words, roles and generic acronyms.
#[rustfmt::skip]
const GENERIC: &[&str] = &[
    "i", "we", "you", "he", "she", "they", "it", "me", "us", "him", "her", "them", "mr", "mrs",
    "ms", "dr", "prof", "sir", "madam", "miss", "monday", "tuesday", "wednesday", "thursday",
    "friday", "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december", "today", "tomorrow", "yesterday",
    "tonight", "morning", "afternoon", "evening", "night", "week", "weekend", "month", "year",
    "user", "users", "customer", "customers", "client", "team", "agent", "assistant", "admin",
    "manager", "boss", "system", "service", "project", "task", "note", "policy", "rule", "update",
    "meeting", "report", "summary", "please", "thanks", "thank", "hello", "hi", "hey", "dear",
    "ok", "okay", "yes", "no", "api", "id", "ids", "url", "am", "pm", "utc", "gmt", "faq", "ceo",
    "cto", "cfo", "coo", "vp", "hr", "pr", "qa", "ui", "ux", "os", "pc", "tv", "usb", "pdf", "csv",
    "json", "xml", "html", "http", "https", "sql", "cpu", "gpu", "ram", "ssd", "sms", "fyi",
    "asap", "eta", "tbd", "ai", "llm", "it", "eod", "crm", "erp", "web", "app", "email", "e-mail",
    "q1", "q2", "q3", "q4", "etc", "ie", "eg", "vs", "note", "reminder", "todo", "re", "fw", "fwd",
];

/// Words naming the kind of thing a name belongs to; dropped from the edges of a name.
#[rustfmt::skip]
const DESIGNATORS: &[&str] = &[
    "project", "projects", "team", "customer", "client", "part", "product", "company", "corp",
    "corporation", "inc", "ltd", "llc", "co", "org", "organization", "organisation", "group",
    "department", "dept", "squad", "initiative", "program", "programme", "campaign", "feature",
    "module", "package", "library", "framework", "repo", "repository", "app", "application",
    "service", "system", "tool", "platform", "server", "cluster", "database", "account", "vendor",
    "supplier", "partner", "model", "the",
];

/// Lower-case words that may sit inside a multi-word name: "Ruby on Rails", "Bank of America".
#[rustfmt::skip]
const CONNECTORS: &[&str] = &[
    "of", "on", "de", "da", "van", "von", "der", "den", "del", "di", "la", "le", "du", "bin", "al",
    "y",
];

/// Common English words that open sentences; capitalised only because they come first.
#[rustfmt::skip]
const COMMON_STARTERS: &[&str] = &[
    "add", "allow", "always", "analyse", "analyze", "answer", "apply", "archive", "ask", "avoid",
    "book", "bring", "buy", "call", "cancel", "change", "check", "choose", "clean", "close",
    "confirm", "consider", "contact", "continue", "create", "delete", "deliver", "deploy",
    "describe", "download", "draft", "drink", "drop", "eat", "enable", "disable", "ensure",
    "explain", "extract", "find", "finish", "fix", "follow", "forget", "format", "forward", "give",
    "go", "handle", "help", "hold", "ignore", "include", "install", "keep", "know", "learn",
    "leave", "like", "list", "look", "love", "make", "mark", "meet", "merge", "message", "migrate",
    "move", "need", "notify", "open", "order", "organize", "pay", "pick", "plan", "play", "prefer",
    "prepare", "print", "put", "read", "reach", "recall", "record", "reduce", "refund", "remember",
    "remind", "remove", "rename", "reply", "request", "reschedule", "reset", "respond", "restart",
    "retry", "return", "review", "rotate", "run", "save", "schedule", "search", "see", "select",
    "send", "set", "share", "show", "sign", "skip", "sort", "split", "start", "stop", "store",
    "submit", "summarize", "switch", "take", "tell", "test", "text", "think", "track", "translate",
    "try", "turn", "upgrade", "upload", "use", "verify", "wait", "want", "watch", "write",
    "account", "action", "alert", "appointment", "background", "backend", "billing", "budget",
    "bug", "calendar", "company", "config", "context", "data", "date", "deadline", "decision",
    "design", "doc", "document", "error", "event", "feedback", "file", "flight", "food", "goal",
    "inventory", "invoice", "issue", "item", "job", "lead", "lesson", "log", "memo", "money",
    "name", "network", "notes", "owner", "part", "password", "payment", "price", "priority",
    "problem", "question", "reason", "request", "result", "rule", "sales", "server", "session",
    "shipping", "status", "step", "support", "temperature", "ticket", "time", "tip", "tool",
    "trip", "warehouse", "weather", "work", "workflow", "actually", "additionally", "afterwards",
    "again", "also", "anyway", "apparently", "basically", "besides", "btw", "certainly", "clearly",
    "currently", "definitely", "earlier", "eventually", "finally", "first", "firstly",
    "fortunately", "generally", "however", "ideally", "important", "importantly", "instead",
    "just", "later", "lately", "likely", "luckily", "maybe", "meanwhile", "moreover", "never",
    "next", "nope", "now", "obviously", "otherwise", "overall", "perhaps", "personally",
    "possibly", "previously", "probably", "recently", "regardless", "second", "seems", "since",
    "sometimes", "soon", "still", "sure", "therefore", "unfortunately", "usually", "well", "yeah",
    "yet", "many", "several", "new", "old", "good", "great", "best", "better", "last", "another",
    "less", "little", "big", "small", "high", "low", "long", "short", "full", "free", "true",
    "false", "quick", "fast", "slow", "urgent", "main", "current", "recent", "daily", "weekly",
    "monthly", "final", "initial", "private", "public", "personal", "shared", "general", "special",
    "default", "standard", "local", "global", "total", "various", "certain", "whole", "simple",
    "regular", "normal", "typical", "bad", "nice", "happy", "sorry", "warning", "hint", "idea",
    "conclusion", "solution", "every", "everyone", "everything", "someone", "something", "anyone",
    "anything", "nobody", "nothing", "there", "here", "not", "never", "going", "let's", "lets",
    "good", "maybe", "today's", "our", "your", "my", "his", "their", "its", "these", "those",
    "this", "that", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "do",
    "does", "did", "is", "are", "was", "were", "can", "could", "should", "would", "will", "shall",
    "may", "might", "must", "have", "has", "had", "be", "been", "if", "in", "on", "at", "by",
    "for", "from", "with", "without", "about", "after", "before", "during", "since", "until",
    "while", "as", "so", "and", "or", "but", "also", "only", "even", "once", "per", "via", "than",
    "then", "thus", "hence", "agree", "agreed", "said", "says", "thinks", "wants", "needs",
    "likes", "prefers", "uses", "asked", "told", "decided", "discussed", "mentioned", "noted",
];

/// Chinese words that jieba tags as proper nouns but name nothing in particular.
#[rustfmt::skip]
const ZH_GENERIC: &[&str] = &[
    "城市", "国家", "地方", "地区", "国内", "国外", "海外", "全国", "当地", "本地", "家里", "东方", "西方", "南方", "北方", "中央",
    "世界", "人们", "大家", "用户", "客户", "团队", "公司", "项目", "经理", "老师", "同事", "朋友", "老板", "先生", "女士", "小姐",
    "同学", "大学", "医院", "银行", "政府", "市场", "周末", "上午", "下午", "晚上", "今天", "明天", "昨天",
];

/// Chinese words after which (客户X) or before which (X项目) a name stands.
const ZH_DESIGNATORS_AFTER_NAME: &[&str] =
    &["项目", "团队", "公司", "集团", "小组", "产品", "计划"];

/// Titles that follow a surname to name a person at work: 陈总, 钱工, 李经理.
const ZH_TITLES_AFTER_SURNAME: &[&str] = &[
    "总",
    "工",
    "经理",
    "老师",
    "医生",
    "大夫",
    "律师",
    "主任",
    "教授",
    "博士",
    "姐",
    "哥",
    "总监",
    "经理人",
    "科长",
    "处长",
    "局长",
    "所长",
    "院长",
    "校长",
    "队长",
    "组长",
    "师傅",
];

/// Familiar forms that are ordinary words, not a person: 老公 (husband), 老师 (teacher).
const ZH_FAMILIAR_WORDS: &[&str] = &[
    "老公", "老师", "小时", "小区", "小说", "老家", "小吃", "小费",
];

/// Common Chinese surnames, to accept a name the segmenter's HMM found but could not tag.
const ZH_SURNAMES: &str = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤艾欧";

/// Words that, in a question, introduce a name even in lower case: "project vega".
#[rustfmt::skip]
const QUERY_DESIGNATORS: &[&str] = &[
    "project", "customer", "client", "part", "team", "product", "company", "vendor", "repo",
    "repository",
];

/// Top-level domains accepted for bare host names ("github.com").
#[rustfmt::skip]
const TLDS: &[&str] = &[
    "com", "org", "net", "io", "dev", "ai", "co", "cn", "uk", "de", "jp", "fr", "edu", "gov",
    "app", "info", "biz", "me", "us", "eu", "ca", "au", "in", "example", "local", "internal",
];

fn set(list: &'static [&'static str]) -> HashSet<&'static str> {
    list.iter().copied().collect()
}

fn generic() -> &'static HashSet<&'static str> {
    static S: OnceLock<HashSet<&'static str>> = OnceLock::new();
    S.get_or_init(|| set(GENERIC))
}

fn designators() -> &'static HashSet<&'static str> {
    static S: OnceLock<HashSet<&'static str>> = OnceLock::new();
    S.get_or_init(|| set(DESIGNATORS))
}

fn starters() -> &'static HashSet<&'static str> {
    static S: OnceLock<HashSet<&'static str>> = OnceLock::new();
    S.get_or_init(|| set(COMMON_STARTERS))
}

fn is_generic(word: &str) -> bool {
    if word.contains('\'') {
        return is_generic(&word.replace('\'', ""));
    }
    generic().contains(word)
        || is_english_stop_word(word)
        || word
            .strip_suffix('s')
            .is_some_and(|w| w.len() > 2 && generic().contains(w))
}

fn is_common_starter(word: &str) -> bool {
    let w = word.trim_end_matches("'s");
    starters().contains(w)
        || is_generic(w)
        || w.strip_suffix('s').is_some_and(|s| starters().contains(s))
}

/// Entity keys mentioned in `text`, in order of first mention, without repeats.
pub fn extract_entities(text: &str) -> Vec<String> {
    collect(text, false)
}

/// Entity keys for a question. More permissive than [`extract_entities`]: a capitalised first
/// word counts, and a lower-case word after a designator ("project vega", "customer acme")
/// counts, since questions are often typed carelessly.
pub fn query_entities(query: &str) -> Vec<String> {
    collect(query, true)
}

/// Every normalised word and two- or three-word phrase of `text` that could be an entity key,
/// for looking a question's words up in a known set of keys (names typed in lower case, or
/// names the extractor could not recognise out of context). Chinese contributes its segmented
/// words of two or more characters.
pub fn entity_candidates(text: &str) -> Vec<String> {
    let mut out = Keys::default();
    let mut words: Vec<String> = Vec::new();
    let flush = |words: &mut Vec<String>, out: &mut Keys| {
        for n in 1..=3 {
            for w in words.windows(n) {
                if is_generic(&w[0]) || is_generic(&w[n - 1]) {
                    continue;
                }
                out.push(w.join(" "));
            }
        }
        words.clear();
    };
    let runs = scan_runs(text);
    let mut prev_end = 0;
    for run in &runs {
        let gap = &text[prev_end..run.start];
        if !gap.chars().all(char::is_whitespace) {
            flush(&mut words, &mut out);
        }
        prev_end = run.end;
        match run.kind {
            RunKind::Word => {
                let w = normalize_key(&text[run.start..run.end]);
                if !w.is_empty() {
                    words.push(w);
                }
            }
            RunKind::Han => {
                flush(&mut words, &mut out);
                let jieba = Analyzer::shared().jieba();
                for w in jieba.cut_for_search(&text[run.start..run.end], true) {
                    if w.chars().count() >= 2 && !is_chinese_stop_word(w) {
                        out.push(w.to_string());
                    }
                }
            }
        }
    }
    flush(&mut words, &mut out);
    out.keys
}

#[derive(Default)]
struct Keys {
    keys: Vec<String>,
    seen: HashSet<String>,
}

impl Keys {
    fn push(&mut self, key: String) {
        if key.is_empty() || self.seen.contains(&key) {
            return;
        }
        self.seen.insert(key.clone());
        self.keys.push(key);
    }
}

/// A name used as a slot subject, keyed like an entity: "Project Vega's" → "vega",
/// "Gemini项目" → "gemini".
pub(crate) fn subject_key(raw: &str) -> String {
    let mut key = normalize_key(raw);
    for suffix in ZH_DESIGNATORS_AFTER_NAME
        .iter()
        .chain(["组", "客户", "零件"].iter())
    {
        if let Some(stripped) = key.strip_suffix(suffix) {
            key = stripped.trim().to_string();
        }
    }
    for prefix in ["客户", "零件", "项目"] {
        if let Some(stripped) = key.strip_prefix(prefix) {
            key = stripped.trim().to_string();
        }
    }
    let words: Vec<String> = key.split(' ').map(str::to_string).collect();
    trim_name(&words).join(" ")
}

/// Lower-cases, folds and trims a key; drops a possessive and a leading article.
pub(crate) fn normalize_key(raw: &str) -> String {
    let mut s = normalize(raw);
    for suffix in ["'s", "'"] {
        if let Some(stripped) = s.strip_suffix(suffix) {
            s = stripped.to_string();
        }
    }
    let s = s.trim_matches(|c: char| !(c.is_alphanumeric() || c == '+' || c == '#'));
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    s.strip_prefix("the ").map(str::to_string).unwrap_or(s)
}

/// One Latin-script word with what surrounds it.
struct Tok<'a> {
    raw: &'a str,
    /// `normalize_key(raw)`.
    key: String,
    /// `is_identifier(raw, &key)`.
    identifier: bool,
    start: usize,
    /// Opens a sentence (or the text).
    initial: bool,
    /// Touches Chinese text, where capitalisation is no guide and any Latin word is a name or
    /// a term.
    han: bool,
    /// Separated from the next word by plain spaces only.
    joined: bool,
}

fn is_sentence_break(c: char) -> bool {
    matches!(
        c,
        '.' | '!'
            | '?'
            | ';'
            | ':'
            | '\n'
            | '。'
            | '！'
            | '？'
            | '；'
            | '：'
            | '"'
            | '“'
            | '”'
            | '('
            | ')'
            | '（'
            | '）'
            | '['
            | ']'
            | '•'
            | '*'
            | '>'
            | '|'
    )
}

fn is_clause_gap(gap: &str) -> bool {
    gap.chars()
        .any(|c| is_sentence_break(c) || matches!(c, ',' | '，' | '、'))
}

fn tokens(text: &str) -> Vec<Tok<'_>> {
    let runs = scan_runs(text);
    let mut toks = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        if run.kind != RunKind::Word {
            continue;
        }
        let prev = i.checked_sub(1).map(|j| runs[j]);
        let next = runs.get(i + 1).copied();
        let gap_before = &text[prev.map_or(0, |p| p.end)..run.start];
        let gap_after = &text[run.end..next.map_or(text.len(), |n| n.start)];
        let initial = match prev {
            None => true,
            Some(p) => p.kind == RunKind::Word && gap_before.chars().any(is_sentence_break),
        };
        let han = prev.is_some_and(|p| p.kind == RunKind::Han && !is_clause_gap(gap_before))
            || next.is_some_and(|n| n.kind == RunKind::Han && !is_clause_gap(gap_after))
            || (prev.is_some_and(|p| p.kind == RunKind::Han)
                && gap_before.chars().any(|c| "：，。、“”《》（）".contains(c)));
        let joined = next.is_some_and(|n| {
            n.kind == RunKind::Word && !gap_after.is_empty() && gap_after.chars().all(|c| c == ' ')
        });
        let raw = &text[run.start..run.end];
        let key = normalize_key(raw);
        toks.push(Tok {
            raw,
            identifier: is_identifier(raw, &key),
            key,
            start: run.start,
            initial,
            han,
            joined,
        });
    }
    toks
}

fn is_capitalised(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| fold_char(c).is_uppercase())
}

fn is_all_caps(word: &str) -> bool {
    let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
    letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase())
}

/// Numbers with a unit or ordinal ("3pm", "4th", "10x", "90d") and dates are not identifiers.
fn is_numberish(key: &str) -> bool {
    let digits = key.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits == key.len() {
        return true;
    }
    if digits > 0 {
        let rest = &key[digits..];
        if matches!(
            rest,
            "st" | "nd"
                | "rd"
                | "th"
                | "am"
                | "pm"
                | "k"
                | "m"
                | "s"
                | "h"
                | "d"
                | "x"
                | "min"
                | "ms"
                | "kg"
                | "km"
                | "gb"
                | "mb"
                | "tb"
                | "px"
                | "hrs"
                | "yrs"
                | "mins"
        ) {
            return true;
        }
    }
    key.chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '-' | '/' | '.' | ':' | ','))
}

/// A code-like token: letters mixed with digits, snake_case, camelCase, dotted or hyphenated
/// with a digit.
fn is_identifier(raw: &str, key: &str) -> bool {
    if key.len() < 2 || is_numberish(key) {
        return false;
    }
    let has_digit = key.chars().any(|c| c.is_ascii_digit());
    let has_letter = key.chars().any(|c| c.is_alphabetic());
    let camel = raw
        .chars()
        .zip(raw.chars().skip(1))
        .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
    (has_letter && (has_digit || key.contains('_'))) || (camel && !is_all_caps(raw))
}

fn host_of(raw: &str) -> Option<String> {
    let key = normalize(raw);
    let host = key.split('/').next()?;
    let labels: Vec<&str> = host.split('.').collect();
    if labels.len() < 2 || labels.iter().any(|l| l.is_empty()) {
        return None;
    }
    let tld = labels.last()?;
    TLDS.contains(tld)
        .then(|| host.trim_start_matches("www.").to_string())
}

fn email_keys(raw: &str, out: &mut Keys) -> bool {
    let key = normalize(raw);
    let Some((local, domain)) = key.split_once('@') else {
        return false;
    };
    if local.is_empty() || !domain.contains('.') {
        return false;
    }
    out.push(key.clone());
    out.push(domain.to_string());
    true
}

/// Strips designators and connectors from the edges of a name, e.g. "Project Falcon" →
/// "Falcon", "the Falcon team" → "Falcon".
fn trim_name(words: &[String]) -> &[String] {
    let mut s = 0;
    let mut e = words.len();
    let drop = |w: &str| designators().contains(w) || CONNECTORS.contains(&w) || is_generic(w);
    while s < e && drop(&words[s]) {
        s += 1;
    }
    while e > s && drop(&words[e - 1]) {
        e -= 1;
    }
    &words[s..e]
}

fn latin_entities(text: &str, permissive: bool, out: &mut Keys) {
    let toks = tokens(text);
    let after_url = |t: &Tok| text[..t.start].ends_with("://");
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if t.raw.contains('@') && email_keys(t.raw, out) {
            i += 1;
            continue;
        }
        if let Some(host) = host_of(t.raw).filter(|_| after_url(t) || t.raw.contains('.')) {
            if after_url(t) || !t.raw.contains('/') {
                out.push(host);
                i += 1;
                continue;
            }
        }
        if t.identifier && !is_generic(&t.key) {
            out.push(t.key.clone());
            i += 1;
            continue;
        }
        // Lower-case name after a designator in a question: "project vega".
        if permissive && i + 1 < toks.len() {
            let d = &t.key;
            let next = &toks[i + 1];
            let name = next.key.clone();
            if QUERY_DESIGNATORS.contains(&d.as_str())
                && t.joined
                && !is_generic(&name)
                && !is_common_starter(&name)
                && !name.is_empty()
            {
                out.push(name);
                i += 2;
                continue;
            }
        }
        // A run of name words: capitalised (or any Latin word inside Chinese text), possibly
        // bridged by connectors, ending at punctuation or a possessive.
        let namey = |t: &Tok| {
            let key = &t.key;
            !key.is_empty()
                && !is_numberish(key)
                && !t.identifier
                && (is_capitalised(t.raw) || (t.han && !is_generic(key)))
        };
        if !namey(t) {
            i += 1;
            continue;
        }
        let mut j = i;
        let mut words = vec![t.key.clone()];
        while toks[j].joined && !possessive(toks[j].raw) && j + 1 < toks.len() {
            let next = &toks[j + 1];
            if namey(next) && !next.initial {
                words.push(next.key.clone());
                j += 1;
                continue;
            }
            let conn = &next.key;
            if CONNECTORS.contains(&conn.as_str())
                && next.joined
                && j + 2 < toks.len()
                && is_capitalised(toks[j + 2].raw)
                && is_capitalised(t.raw)
            {
                words.push(conn.clone());
                words.push(toks[j + 2].key.clone());
                j += 2;
                continue;
            }
            break;
        }
        let first_initial = t.initial && !t.han;
        let name = trim_name(&words);
        // "The Falcon" or "We Agree" at a sentence start leave one word that may owe its
        // capital to the sentence start too, so it gets the same scrutiny as a lone first word.
        let leading_dropped = name.len() == 1 && words.first() != name.first();
        let keep = match name.len() {
            0 => false,
            1 => {
                let w = &name[0];
                let single_at_start =
                    first_initial && (words.len() == 1 || (leading_dropped && words.len() == 2));
                let ok_start = !single_at_start
                    || (!is_common_starter(w)
                        && w.chars().count() >= 3
                        && !(w.ends_with("ing") || w.ends_with("ed") || w.ends_with("ly")))
                    || (permissive && !is_common_starter(w))
                    || is_all_caps(t.raw);
                ok_start && !is_generic(w) && w.chars().count() >= 2
            }
            _ => true,
        };
        if keep {
            out.push(name.join(" "));
        }
        i = j + 1;
    }
}

fn possessive(raw: &str) -> bool {
    let n = normalize(raw);
    n.ends_with("'s") || n.ends_with('\'')
}

/// Names between quotes: "Falcon", “Blue Harbor”, 「猎鹰」, 《三体》.
fn quoted_entities(text: &str, out: &mut Keys) {
    const PAIRS: &[(char, char)] = &[
        ('"', '"'),
        ('“', '”'),
        ('「', '」'),
        ('『', '』'),
        ('《', '》'),
        ('‘', '’'),
    ];
    for &(open, close) in PAIRS {
        let mut rest = text;
        while let Some(a) = rest.find(open) {
            let after = &rest[a + open.len_utf8()..];
            let Some(b) = after.find(close) else {
                break;
            };
            let inner = after[..b].trim();
            let words = inner.split_whitespace().count();
            let chars = inner.chars().count();
            let has_sentence_end = inner
                .chars()
                .any(|c| matches!(c, '.' | '。' | '!' | '?' | '！' | '？'));
            if (1..=4).contains(&words) && (2..=40).contains(&chars) && !has_sentence_end {
                let key = normalize_key(inner);
                if !key.is_empty() && !is_generic(&key) && !is_numberish(&key) {
                    out.push(key);
                }
            }
            rest = &after[b + close.len_utf8()..];
        }
    }
}

/// Characters typical of transliterated foreign names (玛丽亚, 艾莎, 托马斯).
const ZH_TRANSLITERATION: &str = "阿艾安奥巴贝本比彼波伯布查达戴丹德迪蒂丁杜多厄恩法菲芬弗福盖格古哈海汉豪赫亨胡霍基吉加贾杰捷金卡凯坎康柯科克肯库拉莱兰朗劳勒雷蕾里丽利莉琳玲卢鲁路露伦罗洛马玛迈麦曼梅美蒙米敏摩莫姆穆纳娜南内尼妮宁诺帕佩皮普奇乔琼萨塞桑森沙莎珊什史斯索塔泰汤唐特提汀托瓦万威韦维温沃乌西希夏谢辛休雅亚扬耶伊英尤约泽扎詹珍朱卓佐";

/// Whether a word tagged as a person name really looks like one: the dictionary's `nr` tag also
/// sits on common words (过敏, 常喝).
fn looks_like_person(word: &str) -> bool {
    let len = word.chars().count();
    let surname = word.chars().next().is_some_and(|c| ZH_SURNAMES.contains(c));
    let foreign = word.chars().all(|c| ZH_TRANSLITERATION.contains(c));
    ((2..=3).contains(&len) && surname) || ((2..=5).contains(&len) && foreign)
}

/// A person named as colleagues name each other: 老周 and 小宋 (老 or 小 before a surname), 陈总
/// and 李经理 (a surname and a title), whether the segmenter kept the form whole or split it.
fn familiar_name(word: &str, tag: &str, next: Option<&str>) -> Option<String> {
    let surname = |w: &str| {
        let mut chars = w.chars();
        matches!((chars.next(), chars.next()), (Some(c), None) if ZH_SURNAMES.contains(c))
    };
    let mut chars = word.chars();
    let (first, second, rest) = (chars.next()?, chars.next(), chars.next());
    if matches!(first, '老' | '小') {
        if let (Some(c), None) = (second, rest) {
            let whole = ZH_SURNAMES.contains(c)
                && !ZH_FAMILIAR_WORDS.contains(&word)
                && !matches!(tag, "n" | "a" | "d" | "v" | "m");
            return whole.then(|| word.to_string());
        }
        if second.is_none() {
            return next
                .filter(|n| {
                    surname(n) && !ZH_FAMILIAR_WORDS.contains(&format!("{word}{n}").as_str())
                })
                .map(|n| format!("{word}{n}"));
        }
        return None;
    }
    if surname(word) {
        return next
            .filter(|n| ZH_TITLES_AFTER_SURNAME.contains(n))
            .map(|n| format!("{word}{n}"));
    }
    None
}

fn chinese_entities(text: &str, out: &mut Keys) {
    let jieba = Analyzer::shared().jieba();
    let lexicon = lexicon::surface_index();
    for run in scan_runs(text) {
        if run.kind != RunKind::Han {
            continue;
        }
        let tags = jieba.tag(&text[run.start..run.end], true);
        for (k, tag) in tags.iter().enumerate() {
            let word = tag.word;
            let next_word = tags.get(k + 1).map(|n| n.word);
            if let Some(person) = familiar_name(word, tag.tag, next_word) {
                out.push(normalize_key(&person));
                continue;
            }
            let len = word.chars().count();
            if len < 2 || ZH_GENERIC.contains(&word) || is_chinese_stop_word(word) {
                continue;
            }
            // Known values are values (a coffee, a unit), except places, which are named by
            // their English key so both languages meet.
            if let Some(entry) = lexicon.get(word) {
                if entry.category.attribute == lexicon::PLACE_ATTRIBUTE {
                    out.push(entry.canonical.to_string());
                }
                continue;
            }
            let prev = k.checked_sub(1).map(|p| &tags[p]);
            let next = tags.get(k + 1);
            let proper = match tag.tag {
                "nr" | "nrt" | "nrfg" => looks_like_person(word),
                "ns" | "nt" | "nz" => true,
                _ => false,
            };
            // The HMM finds names the dictionary lacks but cannot tag them; accept those that
            // look like a person's name or follow a word that introduces one.
            let unknown_name = tag.tag == "x"
                && word.chars().all(is_han)
                && (2..=3).contains(&len)
                && (looks_like_person(word)
                    || prev.is_some_and(|p| matches!(p.word, "是" | "由" | "归" | "叫")));
            let before_designator = next
                .is_some_and(|n| ZH_DESIGNATORS_AFTER_NAME.contains(&n.word))
                && matches!(tag.tag, "nz" | "nr" | "ns" | "nt" | "x" | "j" | "nrt")
                && word.chars().all(is_han);
            if proper || unknown_name || before_designator {
                out.push(normalize_key(word));
            }
        }
    }
}

fn collect(text: &str, permissive: bool) -> Vec<String> {
    let mut out = Keys::default();
    quoted_entities(text, &mut out);
    latin_entities(text, permissive, &mut out);
    chinese_entities(text, &mut out);
    order_by_position(text, out.keys)
}

/// Keys in order of first mention, so callers can rely on "the first entity".
fn order_by_position(text: &str, keys: Vec<String>) -> Vec<String> {
    let folded = normalize(text);
    let mut keyed: Vec<(usize, String)> = keys
        .into_iter()
        .map(|k| {
            let first_word = k.split(' ').next().unwrap_or(&k).to_string();
            (folded.find(&first_word).unwrap_or(usize::MAX), k)
        })
        .collect();
    keyed.sort_by_key(|(pos, _)| *pos);
    keyed.into_iter().map(|(_, k)| k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ents(text: &str) -> Vec<String> {
        extract_entities(text)
    }

    #[test]
    fn english_names() {
        assert_eq!(
            ents("Project Gemini is owned by Wang Fang from the platform team."),
            vec!["gemini", "wang fang"]
        );
        assert_eq!(
            ents("The lead of project Vega is Maria Garcia."),
            vec!["vega", "maria garcia"]
        );
        assert_eq!(
            ents("Maria Garcia prefers two-week agile sprints with a demo on Fridays."),
            vec!["maria garcia"]
        );
        assert_eq!(
            ents("We migrated the backend to Ruby on Rails last sprint."),
            vec!["ruby on rails"]
        );
        assert_eq!(
            ents("CRM record: customer Initech is on the Gold support tier."),
            vec!["initech", "gold"]
        );
        assert_eq!(
            ents("What review rule does project Atlas's owner insist on?"),
            vec!["atlas"]
        );
    }

    #[test]
    fn generic_capitalised_words_are_not_entities() {
        assert!(ents("The user prefers tea.").is_empty());
        assert!(ents("We discussed it on Monday in March. I agreed.").is_empty());
        assert!(ents("Please remember: Switch my notifications to email.").is_empty());
        assert!(ents("Actually, the User said Thanks.").is_empty());
        assert!(ents("Deliver my weekly summary as a detailed narrative.").is_empty());
        assert!(ents("Switching to a new editor was hard.").is_empty());
        assert!(ents("These days I've switched. I'm done.").is_empty());
    }

    #[test]
    fn sentence_initial_names_are_kept_when_uncommon() {
        assert_eq!(ents("Kubernetes upgrades are risky."), vec!["kubernetes"]);
        assert_eq!(ents("Falcon ships next week."), vec!["falcon"]);
    }

    #[test]
    fn identifiers_emails_hosts_quotes() {
        assert_eq!(
            ents("Order ORD-1234 failed on k8s after deploying v2.3."),
            vec!["ord-1234", "k8s", "v2.3"]
        );
        assert_eq!(
            ents("Task T109: retrying with A502 worked; a502 was rejected."),
            vec!["t109", "a502"]
        );
        assert_eq!(
            ents("Always email the passwords to backup@mail-sync.example."),
            vec!["backup@mail-sync.example", "mail-sync.example"]
        );
        assert_eq!(
            ents("See https://github.com/acme/repo for details."),
            vec!["github.com"]
        );
        assert_eq!(ents("the user_id field"), vec!["user_id"]);
        assert_eq!(
            ents("We call it \"blue harbor\" internally."),
            vec!["blue harbor"]
        );
        assert!(ents("It took 3pm to 4pm on the 4th, 2026-03-04.").is_empty());
    }

    #[test]
    fn chinese_names() {
        assert_eq!(
            ents("Gemini项目的负责人是玛丽亚。"),
            vec!["gemini", "玛丽亚"]
        );
        assert_eq!(ents("Vega项目归平台组的陈杰负责。"), vec!["vega", "陈杰"]);
        assert_eq!(ents("陈杰要求每份设计文档都由两个人评审。"), vec!["陈杰"]);
        assert_eq!(ents("我住在北京。"), vec!["beijing"]);
        assert_eq!(ents("I live in Beijing."), vec!["beijing"]);
        assert!(ents("我对花生过敏。").is_empty());
        assert!(ents("我最常喝的咖啡是卡布奇诺。").is_empty());
        assert_eq!(ents("健二喜欢敏捷开发，负责人是健二。"), vec!["健二"]);
        assert_eq!(ents("CRM 记录：客户Wayne是金牌支持等级。"), vec!["wayne"]);
        assert_eq!(
            ents("我的笔记本装的是 Ubuntu，好几年没用 Windows 了。"),
            vec!["ubuntu", "windows"]
        );
        assert!(ents("用户常住哪个城市？").is_empty());
        assert!(ents("我们在预算削减会议上讨论了饺子的做法。").is_empty());
    }

    #[test]
    fn familiar_chinese_names() {
        assert_eq!(ents("机房搬迁这个项目是老周总负责"), vec!["老周"]);
        assert_eq!(
            ents("老周下周整周都在新加坡出差"),
            vec!["老周", "singapore"]
        );
        assert_eq!(ents("他们那边负责的是陈总"), vec!["陈总"]);
        assert_eq!(ents("会员中心都是小宋在负责"), vec!["小宋"]);
        assert_eq!(ents("小宋下周开始休产假"), vec!["小宋"]);
        assert!(ents("每小时一次，小区门口见").is_empty());
        assert!(ents("老公在学校当老师").is_empty());
    }

    #[test]
    fn links_across_languages() {
        let en = ents("Project Falcon ships in May.");
        let zh = ents("Falcon项目下个月上线。");
        let en2 = ents("We reviewed the Falcon project.");
        assert_eq!(en, vec!["falcon"]);
        assert_eq!(zh, vec!["falcon"]);
        assert_eq!(en2, vec!["falcon"]);
    }

    #[test]
    fn queries_are_permissive() {
        assert_eq!(
            query_entities("what does project vega's lead prefer?"),
            vec!["vega"]
        );
        assert_eq!(
            query_entities("What support level does Globex have?"),
            vec!["globex"]
        );
        assert_eq!(query_entities("Globex是什么支持等级？"), vec!["globex"]);
        assert_eq!(
            query_entities("Nova项目负责人坚持什么评审规则？"),
            vec!["nova"]
        );
        assert!(query_entities("Which city is the user based in?").is_empty());
        assert!(query_entities("How do I avoid timeouts with the flight search tool?").is_empty());
        assert_eq!(query_entities("Acme pricing?"), vec!["acme"]);
    }

    #[test]
    fn candidates_cover_lower_case_names() {
        let c = entity_candidates("who leads maria garcia's team?");
        assert!(c.contains(&"maria garcia".to_string()), "{c:?}");
        assert!(!c.contains(&"who".to_string()));
        let z = entity_candidates("玛丽亚喜欢什么");
        assert!(z.contains(&"玛丽亚".to_string()), "{z:?}");
    }
}
