//! Value slots: when a memory states the value of something ("I live in Berlin", "Project Vega's
//! lead is Maria Garcia", "我最近改喝拿铁了"), the normalised (subject, attribute) it fills and the
//! value. Two memories with the same subject and attribute but different values are candidates
//! for a conflict, found without an LLM.
//!
//! Rule-based and deliberately conservative: an explicit pattern, or a known value from the
//! lexicon in a clause that talks about it. Anything else gives `None`; a wrong slot would pair
//! memories that do not conflict.

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::cues::{has_change_cue, has_negation};
use crate::entities::{extract_entities, normalize_key, subject_key};
use crate::lexicon::{self, Category, PLACE_ATTRIBUTE};
use crate::script::{is_han, normalize};
use crate::time_expr::strip_time_expr;

/// The subject used for the user (and the speaker: "I", "we", "我", "用户").
pub const USER_SUBJECT: &str = "user";

/// A statement's value for a (subject, attribute) pair.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Slot {
    /// Whose attribute: `user`, or an entity key such as `vega`.
    pub subject: String,
    /// Which attribute, in English where known (`home`, `coffee`, `lead`, `contact channel`).
    pub attribute: String,
    /// The stated value, canonical where known (`latte` for 拿铁); prefixed `not ` when the
    /// statement denies it ("I'm not vegetarian" → `not vegetarian`).
    pub value: String,
}

impl Slot {
    /// `subject/attribute`: the key two memories must share to compete.
    pub fn key(&self) -> String {
        format!("{}/{}", self.subject, self.attribute)
    }

    /// Whether the value is a denial (`not …`).
    pub fn is_negated(&self) -> bool {
        self.value.starts_with("not ")
    }
}

/// The slot `text` fills, if it clearly states one value. Questions give `None`.
pub fn extract_slot(text: &str) -> Option<Slot> {
    let trimmed = text.trim();
    if trimmed.is_empty() || is_question(trimmed) {
        return None;
    }
    let folded = normalize(trimmed);
    for clause in clauses(&folded) {
        if let Some(slot) = explicit(clause) {
            return Some(slot);
        }
    }
    for (i, clause) in clauses(&folded).into_iter().enumerate() {
        if let Some(hit) = best_lexicon_value(clause, true) {
            // Only the first clause can be about a name that opens the text; finding it takes
            // the text's entities, so only once a clause has a value.
            let subject = (i == 0)
                .then(|| leading_subject(trimmed, &folded))
                .flatten()
                .unwrap_or_else(|| USER_SUBJECT.to_string());
            return Some(Slot {
                subject,
                attribute: hit.category.attribute.to_string(),
                value: hit.value(),
            });
        }
    }
    None
}

/// A name that opens the text and so is what the first sentence is about: "Maria prefers
/// tea", "Project Atlas uses Django", "玛丽亚喜欢喝茶". Known values ("Slack is the best way to
/// reach me") are not subjects.
fn leading_subject(text: &str, folded: &str) -> Option<String> {
    let first = extract_entities(text).into_iter().next()?;
    if lexicon::surface_index().contains_key(first.as_str()) {
        return None;
    }
    let head = first.split(' ').next()?;
    let pos = folded.find(head)?;
    let before = &folded[..pos];
    let only_designators = before
        .split(|c: char| c.is_whitespace() || c == ':' || c == '：')
        .filter(|w| !w.is_empty())
        .all(|w| {
            matches!(
                w,
                "project"
                    | "customer"
                    | "client"
                    | "team"
                    | "product"
                    | "service"
                    | "repo"
                    | "the"
                    | "客户"
                    | "项目"
                    | "零件"
                    | "团队"
            )
        });
    only_designators.then_some(first)
}

fn is_question(text: &str) -> bool {
    text.ends_with('?') || text.ends_with('？') || text.ends_with('吗') || text.ends_with('呢')
}

/// Sentences and semicolon-separated parts; commas stay inside, since "I'm not vegetarian at
/// all, I eat chicken" is one statement.
fn clauses(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        // A period ends a clause only before a space or the end, so "jane@example.com" and
        // "v2.3" stay whole.
        let ends = match c {
            '.' => chars.peek().is_none_or(|(_, n)| n.is_whitespace()),
            ';' | '!' | '。' | '；' | '！' | '\n' => true,
            _ => false,
        };
        if ends {
            out.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Explicit patterns

struct Pattern {
    re: Regex,
    build: fn(&regex::Captures) -> Option<Slot>,
}

fn patterns() -> &'static [Pattern] {
    static P: OnceLock<Vec<Pattern>> = OnceLock::new();
    P.get_or_init(|| {
        let p = |re: &str, build: fn(&regex::Captures) -> Option<Slot>| Pattern {
            re: Regex::new(re).unwrap_or_else(|e| panic!("slot pattern {re}: {e}")),
            build,
        };
        vec![
            // Where the user lives.
            p(
                r"\b(?:i|we|the user|user)(?:'m|'re| am| are| is| have| has|'ve)?(?:\s+(?:just|recently|now|finally|already|since|also))*\s+(?:live|lives|living|moved|relocated|am based|are based|is based|based)\s+(?:to|in|at)\s+(.+)",
                |c| user_slot(PLACE_ATTRIBUTE, c.get(1)?.as_str()),
            ),
            p(
                r"\b(?:my|our|the user's|user's)\s+(?:home|home city|city|place)\s+is\s+(?:now\s+)?(?:in\s+)?(.+)",
                |c| user_slot(PLACE_ATTRIBUTE, c.get(1)?.as_str()),
            ),
            p(
                r"^(?:(?:but|and|so)\s+)?home\s+is\s+(?:now\s+)?(?:in\s+)?(.+)",
                |c| user_slot(PLACE_ATTRIBUTE, c.get(1)?.as_str()),
            ),
            p(
                r"(?:我们|我|用户)?(?:现在|目前|已经|刚刚|刚|也)*(?:住在|家在|搬到了|搬到|搬去了|搬去|定居在|常住在|生活在)\s*([^，,。；]+)",
                |c| user_slot(PLACE_ATTRIBUTE, c.get(1)?.as_str()),
            ),
            // Where the user works, and what they are called.
            p(
                r"\b(?:i|we|the user)(?:'m| am| is)?\s+(?:now\s+)?(?:work|works|working)\s+(?:at|for)\s+(.+)",
                |c| user_slot("employer", c.get(1)?.as_str()),
            ),
            p(
                r"\b(?:my name is|call me|the user's name is)\s+(.+)",
                |c| user_slot("name", c.get(1)?.as_str()),
            ),
            p(
                r"(?:我|用户)(?:现在|目前)?在(.{1,12}?)(?:工作|上班)",
                |c| user_slot("employer", c.get(1)?.as_str()),
            ),
            p(r"我(?:的名字)?叫(.+)", |c| user_slot("name", c.get(1)?.as_str())),
            // Plans and tiers: "customer Globex is on the Gold support tier", "客户X是金牌支持等级".
            p(
                r"(?:customer|client|account|company)?\s*([a-z0-9][a-z0-9 &.-]{0,30}?)\s+(?:is on|pays for|is subscribed to|has|is in|subscribes to)\s+(?:the|a|an)\s+([a-z]+)\s+((?:support\s+|service\s+|subscription\s+)?(?:tier|plan|level|package))\b",
                |c| tier_slot(c.get(1)?.as_str(), c.get(3)?.as_str(), c.get(2)?.as_str()),
            ),
            p(
                r"(?:客户|用户|公司)\s*([^，,。：:的]{1,20}?)(?:是|购买的是|买的是|开通的是|用的是|属于)([^，,。的]{1,6}?)((?:支持|服务|会员)?(?:等级|级别|套餐|版本))",
                |c| tier_slot(c.get(1)?.as_str(), c.get(3)?.as_str(), c.get(2)?.as_str()),
            ),
            // Stock levels: "40 units of part X in stock", "part X is out of stock", "零件X已经缺货".
            p(
                r"(\d[\d,]*)\s+(?:units?|pieces?|items?|pcs)\s+of\s+(?:part\s+|item\s+|product\s+|sku\s+)?(.+?)\s+(?:in stock|available|on hand|left)",
                |c| stock_slot(c.get(2)?.as_str(), c.get(1)?.as_str()),
            ),
            p(
                r"(?:part\s+|item\s+|product\s+|sku\s+)([a-z0-9][a-z0-9 &.-]{0,30}?)\s+(?:is|are)\s+(?:now\s+|currently\s+)?(?:out of stock|sold out|unavailable)",
                |c| stock_slot(c.get(1)?.as_str(), "0"),
            ),
            p(
                r"(?:零件|商品|产品|物料|货品)\s*([^，,。有已]{1,20}?)\s*(?:有|还有|剩|剩下|库存为|库存有)\s*(\d[\d,]*)\s*(?:件|个|台|套)",
                |c| stock_slot(c.get(1)?.as_str(), c.get(2)?.as_str()),
            ),
            p(
                r"(?:零件|商品|产品|物料|货品)\s*([^，,。有已]{1,20}?)\s*(?:已经|已|目前|现在)?(?:缺货|售罄|断货|没货)",
                |c| stock_slot(c.get(1)?.as_str(), "0"),
            ),
            // Who leads what.
            p(
                r"^(.+?)\s+is\s+(?:owned|led|run|managed|headed|maintained)\s+by\s+(.+)",
                |c| named_slot(c.get(1)?.as_str(), "lead", c.get(2)?.as_str()),
            ),
            p(
                r"^(.{1,24}?)(?:归|由)(?:[^，,。]{0,10}的)?([^，,。的]{1,12}?)(?:负责|牵头|主导|管理)",
                |c| named_slot(c.get(1)?.as_str(), "lead", c.get(2)?.as_str()),
            ),
            // "The deadline for X is Y", "the lead of project X is Y".
            p(
                r"^(?:the\s+)?([a-z][a-z -]{1,30}?)\s+(?:of|for)\s+(.+?)\s+(?:is|are|was)\s+(.+)",
                |c| attribute_of(c.get(2)?.as_str(), c.get(1)?.as_str(), c.get(3)?.as_str()),
            ),
            // "X's Y is Z", "my Y is Z".
            p(
                r"^(?:so\s+|and\s+|but\s+|also\s+)?(.+?)(?:'s|')\s+([a-z][a-z -]{1,30}?)\s+(?:is|are)\s+(?:now\s+)?(.+)",
                |c| attribute_of(c.get(1)?.as_str(), c.get(2)?.as_str(), c.get(3)?.as_str()),
            ),
            p(
                r"\b(my|our)\s+([a-z][a-z -]{1,30}?)\s+(?:is|are)\s+(?:now\s+)?(.+)",
                |c| attribute_of(c.get(1)?.as_str(), c.get(2)?.as_str(), c.get(3)?.as_str()),
            ),
            // "X的Y是Z".
            p(
                r"^(.{1,16}?)的([^，,。的]{1,10}?)(?:是|为|叫|改成了|改为)\s*([^，,。；]+)",
                |c| attribute_of(c.get(1)?.as_str(), c.get(2)?.as_str(), c.get(3)?.as_str()),
            ),
            // "For reports, use bullet points", "use Celsius for temperatures".
            p(
                r"^(?:from now on,?\s+|going forward,?\s+|actually,?\s+)?for\s+([a-z][a-z -]{1,30}?),\s*(?:please\s+)?(?:use|do|give me|send|write)\s+(.+)",
                |c| user_slot_for(c.get(1)?.as_str(), c.get(2)?.as_str()),
            ),
        ]
    })
}

fn explicit(clause: &str) -> Option<Slot> {
    patterns()
        .iter()
        .find_map(|p| p.re.captures(clause).and_then(|c| (p.build)(&c)))
}

/// Adjectives that say nothing about which attribute is meant ("favourite editor" = editor).
/// The first `PREFERENCE_FILLERS` also mark a preference.
#[rustfmt::skip]
const ATTRIBUTE_FILLERS: &[&str] = &[
    "favourite", "favorite", "preferred", "usual", "go-to", "default", "最常喝", "最喜欢", "最爱", "常用",
    "默认", "最常用", "主力", "main", "primary", "current", "new", "personal", "regular", "best", "top",
    "daily", "everyday", "own", "official", "平时", "现在", "目前",
];

const PREFERENCE_FILLERS: usize = 13;

fn raw_attribute_has(raw: &str, filler: &str) -> bool {
    if filler.chars().any(is_han) {
        raw.contains(filler)
    } else {
        raw.split_whitespace().any(|w| w == filler)
    }
}

/// Different names for one attribute.
const ATTRIBUTE_SYNONYMS: &[(&str, &[&str])] = &[
    (
        "lead",
        &[
            "owner",
            "lead",
            "leader",
            "head",
            "project lead",
            "team lead",
            "tech lead",
            "负责人",
            "领导",
            "负责的人",
            "牵头人",
            "组长",
        ],
    ),
    (
        "home",
        &[
            "home",
            "home city",
            "city",
            "residence",
            "hometown",
            "家",
            "城市",
            "常住城市",
        ],
    ),
    (
        "email",
        &[
            "email",
            "e-mail",
            "email address",
            "mail",
            "邮箱",
            "电子邮件",
            "邮件地址",
            "邮箱地址",
        ],
    ),
    (
        "phone",
        &[
            "phone",
            "phone number",
            "mobile",
            "cell",
            "电话",
            "手机",
            "手机号",
            "电话号码",
        ],
    ),
    ("birthday", &["birthday", "date of birth", "生日"]),
    (
        "deadline",
        &["deadline", "due date", "截止日期", "截止时间", "截止"],
    ),
    ("name", &["name", "名字", "姓名"]),
    ("timezone", &["timezone", "time zone", "时区"]),
];

fn canonical_attribute(raw: &str) -> Option<String> {
    let mut words: Vec<&str> = raw.split_whitespace().collect();
    while words.len() > 1 && ATTRIBUTE_FILLERS.contains(&words[0]) {
        words.remove(0);
    }
    let mut attr = words.join(" ");
    for filler in ATTRIBUTE_FILLERS {
        if attr.chars().any(is_han) {
            if let Some(rest) = attr.strip_prefix(filler) {
                let rest = rest.trim_start_matches('的');
                if !rest.is_empty() {
                    attr = rest.to_string();
                }
            }
        }
    }
    if attr.is_empty() || attr.split_whitespace().count() > 4 || attr.chars().count() > 30 {
        return None;
    }
    for (canon, names) in ATTRIBUTE_SYNONYMS {
        if names.contains(&attr.as_str()) {
            return Some(canon.to_string());
        }
    }
    // Plural attribute names ("temperatures") mean the same as singular ones.
    if !attr.chars().any(is_han) && attr.len() > 3 && attr.ends_with('s') && !attr.ends_with("ss") {
        attr.pop();
    }
    Some(attr)
}

fn is_user_word(raw: &str) -> bool {
    let w = raw.trim().trim_end_matches("'s").trim_end_matches('\'');
    matches!(
        w,
        "i" | "me"
            | "my"
            | "we"
            | "our"
            | "us"
            | "user"
            | "the user"
            | "我"
            | "我们"
            | "用户"
            | "咱们"
            | "本人"
    ) || w.starts_with('我')
        || w.starts_with("用户")
}

fn subject_of(raw: &str) -> Option<String> {
    if is_user_word(raw) {
        return Some(USER_SUBJECT.to_string());
    }
    let key = subject_key(raw);
    let words = key.split_whitespace().count();
    (!key.is_empty() && words <= 4 && key.chars().count() <= 40).then_some(key)
}

/// Words after which a value has ended: "Berlin now", "SMS for anything urgent".
#[rustfmt::skip]
const VALUE_STOPS: &[&str] = &[
    " now", " from now", " going forward", " moving forward", " instead", " please", " these days",
    " nowadays", " for ", " because", " since", " but ", " and ", " with ", " when ", " while ",
    " if ", " so ", " as of", " until ", " after ", " before ", " again", " too", " as well",
    " anymore", " any more", " at the moment", " right now", " currently", " lately", " recently",
    " from the ", " who ", " which ", " that ", " where ", ",", "，", "、", " 了",
];

const VALUE_PREFIXES: &[&str] = &["a ", "an ", "the ", "my ", "our ", "some ", "in ", "at "];

/// Trims a captured value to the value itself and canonicalises known values.
fn clean_value(raw: &str) -> Option<String> {
    // "Berlin last month" is Berlin; but a value that is only a date ("April 3") stays.
    let without_time = strip_time_expr(raw);
    let raw = if without_time.chars().any(char::is_alphanumeric) {
        without_time
    } else {
        raw.to_string()
    };
    let mut v = format!(" {}", raw.trim());
    let mut cut = v.len();
    for stop in VALUE_STOPS {
        if let Some(i) = v.find(stop) {
            cut = cut.min(i);
        }
    }
    v.truncate(cut);
    let mut v = v.trim().to_string();
    loop {
        let before = v.len();
        for p in VALUE_PREFIXES {
            if let Some(rest) = v.strip_prefix(p) {
                v = rest.to_string();
            }
        }
        if v.len() == before {
            break;
        }
    }
    let v = v
        .trim_end_matches(['了', '啦', '吧', '呀', '的'])
        .trim_matches(|c: char| !(c.is_alphanumeric() || "+#@.-_'".contains(c)))
        .trim_end_matches(['.', '\''])
        .to_string();
    if v.is_empty() || v.split_whitespace().count() > 6 || v.chars().count() > 40 {
        return None;
    }
    if let Some(entry) = lexicon::surface_index().get(v.as_str()) {
        return Some(entry.canonical.to_string());
    }
    Some(v)
}

/// Attribute names for tiers, in English whichever language the text is in.
fn tier_attribute(raw: &str) -> String {
    let raw = raw.trim();
    let zh = [
        ("支持等级", "support tier"),
        ("服务等级", "service tier"),
        ("会员等级", "membership tier"),
        ("等级", "tier"),
        ("级别", "tier"),
        ("套餐", "plan"),
        ("版本", "plan"),
    ];
    if let Some((_, en)) = zh.iter().find(|(z, _)| raw.ends_with(z)) {
        return en.to_string();
    }
    let words: Vec<&str> = raw.split_whitespace().collect();
    words
        .iter()
        .map(|w| match *w {
            "level" => "tier",
            "package" => "plan",
            other => other,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn tier_slot(subject: &str, attribute: &str, value: &str) -> Option<Slot> {
    let value = clean_value(value)?;
    Some(Slot {
        subject: subject_of(subject).filter(|s| s != USER_SUBJECT)?,
        attribute: tier_attribute(attribute),
        value,
    })
}

fn stock_slot(subject: &str, count: &str) -> Option<Slot> {
    let count: String = count.chars().filter(char::is_ascii_digit).collect();
    Some(Slot {
        subject: subject_of(subject).filter(|s| s != USER_SUBJECT)?,
        attribute: "stock".to_string(),
        value: match count.trim_start_matches('0') {
            "" => "0".to_string(),
            n => n.to_string(),
        },
    })
}

fn user_slot(attribute: &str, value: &str) -> Option<Slot> {
    Some(Slot {
        subject: USER_SUBJECT.to_string(),
        attribute: attribute.to_string(),
        value: clean_value(value)?,
    })
}

fn named_slot(subject: &str, attribute: &str, value: &str) -> Option<Slot> {
    let value = clean_value(value)?;
    Some(Slot {
        subject: subject_of(subject)?,
        attribute: attribute.to_string(),
        value: normalize_key(&value),
    })
}

/// (subject, attribute words, value) from a copula statement; a known value's category names
/// the attribute, so "my morning drink is a latte" and "我最常喝的咖啡是拿铁" agree.
fn attribute_of(subject: &str, attribute: &str, value: &str) -> Option<Slot> {
    let raw_attribute = attribute;
    let subject = subject_of(subject)?;
    let mut value = value.trim();
    let first = value.split_whitespace().next().unwrap_or("");
    // "Our backend is built with Flask" describes, it does not name a value for "backend".
    if PARTICIPLES.contains(&first) {
        return None;
    }
    if matches!(first, "called" | "named") {
        value = value[first.len()..].trim_start();
    }
    let value = clean_value(value)?;
    let known = lexicon::surface_index().get(value.as_str());
    let attribute = match known {
        Some(entry) if entry.category.attribute != PLACE_ATTRIBUTE && !entry.category.generic => {
            entry.category.attribute.to_string()
        }
        _ => canonical_attribute(attribute.trim())?,
    };
    // "My conclusion is X" or "我的结论是X" report an event, not a standing value; for the user
    // only attributes that hold one current value (or a preference) count.
    if subject == USER_SUBJECT && known.is_none() {
        let standing = ATTRIBUTE_SYNONYMS
            .iter()
            .any(|(canon, _)| *canon == attribute);
        let preference = ATTRIBUTE_FILLERS
            .iter()
            .take(PREFERENCE_FILLERS)
            .any(|f| raw_attribute_has(raw_attribute, f));
        if !standing && !preference {
            return None;
        }
    }
    Some(Slot {
        subject,
        attribute,
        value,
    })
}

/// Passive participles that turn "X is …" into a description rather than a value.
#[rustfmt::skip]
const PARTICIPLES: &[&str] = &[
    "built", "written", "based", "located", "hosted", "made", "run", "owned", "managed", "used",
    "done", "deployed", "developed", "maintained", "stored", "kept", "set", "configured",
    "scheduled", "planned", "going", "being", "not", "also", "still", "always", "usually",
];

fn user_slot_for(attribute: &str, value: &str) -> Option<Slot> {
    // The attribute is already named, so the value's category needs no trigger word.
    let hit = best_lexicon_value(value, false);
    let attribute = match &hit {
        Some(h) => h.category.attribute.to_string(),
        None => canonical_attribute(attribute)?,
    };
    let value = match hit {
        Some(h) => h.value(),
        None => clean_value(value)?,
    };
    Some(Slot {
        subject: USER_SUBJECT.to_string(),
        attribute,
        value,
    })
}

// ---------------------------------------------------------------------------------------------
// Lexicon fallback

struct LexHit {
    category: &'static Category,
    canonical: &'static str,
    start: usize,
    negated: bool,
}

impl LexHit {
    fn value(&self) -> String {
        if self.negated {
            format!("not {}", self.canonical)
        } else {
            self.canonical.to_string()
        }
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'#'
}

type Span = (usize, usize, lexicon::Entry);

/// Surface forms in one automaton, each with its entry and whether it is a Latin form (matched
/// as a whole word) or a Chinese one (matched as a substring).
struct SurfaceForms {
    automaton: AhoCorasick,
    forms: Vec<(lexicon::Entry, bool)>,
}

impl SurfaceForms {
    fn new<'a>(forms: impl IntoIterator<Item = (&'a str, lexicon::Entry)>) -> SurfaceForms {
        let (patterns, forms): (Vec<&str>, Vec<_>) = forms
            .into_iter()
            .map(|(form, entry)| (form, (entry, !form.chars().any(is_han))))
            .unzip();
        SurfaceForms {
            automaton: AhoCorasick::new(patterns)
                .expect("the lexicon's surface forms make a valid automaton"),
            forms,
        }
    }

    /// Every occurrence of a form in the clause, as (start, end, entry), longest first at each
    /// place and none overlapping another. One scan finds every form: each form's occurrences
    /// are taken left to right without overlapping each other (the next one starts after the
    /// previous ends, even when the previous was not a whole word), while occurrences of
    /// different forms may overlap until the longest is chosen.
    fn spans(&self, clause: &str) -> Vec<Span> {
        let bytes = clause.as_bytes();
        let mut hits: Vec<Span> = Vec::new();
        // Per form, where its next occurrence may start. Overlapping matches come in order of
        // their end, and one form's are all the same length, so in order of start too.
        let mut next_from: Vec<(usize, usize)> = Vec::new();
        for m in self.automaton.find_overlapping_iter(clause) {
            let form = m.pattern().as_usize();
            let (s, e) = (m.start(), m.end());
            match next_from.iter_mut().find(|(f, _)| *f == form) {
                Some((_, from)) if s < *from => continue,
                Some((_, from)) => *from = e,
                None => next_from.push((form, e)),
            }
            let (entry, latin) = self.forms[form];
            if !latin || whole_word(bytes, s, e) {
                hits.push((s, e, entry));
            }
        }
        keep_longest(hits)
    }
}

fn whole_word(bytes: &[u8], s: usize, e: usize) -> bool {
    (s == 0 || !is_word_byte(bytes[s - 1])) && (e == bytes.len() || !is_word_byte(bytes[e]))
}

/// Every lexicon value in the clause: see [`SurfaceForms::spans`].
fn lexicon_spans(clause: &str) -> Vec<Span> {
    static FORMS: OnceLock<SurfaceForms> = OnceLock::new();
    FORMS
        .get_or_init(|| {
            SurfaceForms::new(
                lexicon::surface_index()
                    .iter()
                    .map(|(form, entry)| (*form, *entry)),
            )
        })
        .spans(clause)
}

/// Sorted by start, longest first, and without the ones that overlap one kept before.
fn keep_longest(mut hits: Vec<Span>) -> Vec<Span> {
    hits.sort_by(|a, b| a.0.cmp(&b.0).then((b.1 - b.0).cmp(&(a.1 - a.0))));
    let mut kept: Vec<Span> = Vec::new();
    for h in hits {
        if kept.iter().any(|k| h.0 < k.1 && k.0 < h.1) {
            continue;
        }
        kept.push(h);
    }
    kept
}

/// Every lexicon value in the clause, longest match first at each place.
fn lexicon_hits(clause: &str) -> Vec<LexHit> {
    lexicon_spans(clause)
        .into_iter()
        .map(|(s, _, entry)| LexHit {
            category: entry.category,
            canonical: entry.canonical,
            start: s,
            negated: negated_before(clause, s),
        })
        .collect()
}

/// What [`SurfaceForms::spans`] finds, found one form at a time with `str::find`: the
/// reference it is tested against.
#[cfg(test)]
fn spans_form_by_form<'a>(
    forms: impl IntoIterator<Item = (&'a str, lexicon::Entry)>,
    clause: &str,
) -> Vec<Span> {
    let bytes = clause.as_bytes();
    let mut hits: Vec<Span> = Vec::new();
    for (form, entry) in forms {
        let latin = !form.chars().any(is_han);
        let mut from = 0;
        while let Some(i) = clause[from..].find(form) {
            let s = from + i;
            let e = s + form.len();
            if !latin || whole_word(bytes, s, e) {
                hits.push((s, e, entry));
            }
            from = s + form.len();
        }
    }
    keep_longest(hits)
}

/// A negation shortly before a value denies it ("not vegetarian", "没用 windows", "不是素食者").
fn negated_before(clause: &str, at: usize) -> bool {
    let window_start = clause[..at]
        .char_indices()
        .rev()
        .nth(24)
        .map_or(0, |(i, _)| i);
    let before = &clause[window_start..at];
    // A change in between ("not X, switched to Y") means the negation was about something else.
    if has_change_cue(before).is_some_and(|c| c.weight >= 0.8 && !c.phrase.starts_with("no")) {
        return false;
    }
    has_negation(before).is_some_and(|c| {
        let tail = &before[c.end..];
        // Close enough: a few words or characters between the negation and the value.
        tail.split_whitespace().count() <= 3 && tail.chars().count() <= 16
    })
}

fn triggered(category: &Category, clause: &str) -> bool {
    if category.triggers.is_empty() {
        return true;
    }
    category.triggers.iter().any(|t| {
        if t.chars().any(is_han) {
            clause.contains(t)
        } else {
            clause
                .split(|c: char| !(c.is_alphanumeric() || c == '-'))
                .any(|w| w == *t)
        }
    })
}

/// The one value a clause is about: not negated over negated, specific over generic, after a
/// change cue over before it ("switched from Flask to Django" → Django).
fn best_lexicon_value(clause: &str, need_trigger: bool) -> Option<LexHit> {
    let hits: Vec<LexHit> = lexicon_hits(clause)
        .into_iter()
        .filter(|h| !h.category.pattern_only && (!need_trigger || triggered(h.category, clause)))
        .collect();
    if hits.is_empty() {
        return None;
    }
    let change_at = has_change_cue(clause)
        .filter(|c| c.weight >= 0.7)
        .map(|c| c.end);
    let to_at = [" to ", "成", "为"]
        .iter()
        .filter_map(|m| clause.find(m))
        .min();
    hits.into_iter().min_by_key(|h| {
        let after_change =
            change_at.is_some_and(|c| h.start >= c) || to_at.is_some_and(|t| h.start > t);
        (h.negated, h.category.generic, !after_change, h.start)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(text: &str) -> Option<(String, String, String)> {
        extract_slot(text).map(|s| (s.subject, s.attribute, s.value))
    }

    fn is(text: &str, subject: &str, attribute: &str, value: &str) {
        assert_eq!(
            slot(text),
            Some((subject.into(), attribute.into(), value.into())),
            "{text}"
        );
    }

    /// Sentences of the tests above and of the benches, as memories are written.
    const SENTENCES: &[&str] = &[
        "I live in Austin.",
        "We relocated; home is Berlin now.",
        "My go-to coffee is a flat white.",
        "Project Vega's lead is Maria Garcia.",
        "The deadline for the Falcon launch is April 3.",
        "I work at Initech.",
        "The user prefers tea.",
        "I always order a cappuccino when I get coffee.",
        "These days I've switched to an americano instead.",
        "Actually, switch the temperature unit to Fahrenheit.",
        "I read weather in Celsius.",
        "Please reach me by SMS for anything urgent.",
        "From now on contact me via email, not the old way.",
        "We migrated the backend to Ruby on Rails last sprint.",
        "Our backend service is built with Flask.",
        "We moved from Flask to Django.",
        "For reports, please use short bullet points going forward.",
        "My laptop runs Ubuntu; I haven't used Windows in years.",
        "The user likely uses Windows as their main OS.",
        "I'm not vegetarian at all, I eat chicken almost every day.",
        "Project Atlas uses Django for its API.",
        "用户喜欢喝茶",
        "我们搬家了，现在住在柏林。",
        "我最常喝的咖啡是卡布奇诺。",
        "我现在不喝之前那个了，改成美式。",
        "温度请用摄氏度显示。",
        "把我的通知方式换成Slack。",
        "有急事请用短信联系我。",
        "项目的 Web 接口基于Flask开发。",
        "我根本不是素食者，几乎每天都吃鸡肉。",
        "我的笔记本装的是 Ubuntu，好几年没用 Windows 了。",
        "CRM 记录：客户Wayne是金牌支持等级。",
        "Maria prefers green tea.",
        "Slack is the best way to reach me.",
        "We discussed a recipe for dumplings while working on a spreadsheet.",
        "已设置提醒：供应商电话之后跟进Kubernetes 升级。",
        "Maria Garcia prefers two-week agile sprints with a demo on Fridays.",
        "The user prefers green tea on Monday (case alpha-bravo-charlie-delta)",
        "用户不再喜欢绿茶，改成了咖啡",
        "张伟上周安排了火车票，可能明天上午出发",
    ];

    type Found = (usize, usize, &'static str, &'static str);

    fn spans(found: Vec<Span>) -> Vec<Found> {
        found
            .into_iter()
            .map(|(s, e, entry)| (s, e, entry.category.attribute, entry.canonical))
            .collect()
    }

    #[test]
    fn one_scan_finds_what_searching_form_by_form_finds() {
        let mut forms: Vec<&str> = lexicon::surface_index().keys().copied().collect();
        forms.sort_unstable();
        let mut texts: Vec<String> = Vec::new();
        for text in SENTENCES {
            let folded = normalize(text);
            texts.extend(clauses(&folded).into_iter().map(str::to_string));
            texts.push(folded);
        }
        for (i, form) in forms.iter().enumerate() {
            let next = forms[(i + 1) % forms.len()];
            let last = forms[forms.len() - 1 - i];
            texts.extend([
                form.to_string(),
                format!("i always order {form} now."),
                format!("i'm not {form} at all, switched to {next}"),
                format!("{form}{form}{form} and {form}s, x{form} {form}-{form}"),
                format!("{form}{next} {last}{form}"),
                format!("我最近改喝{form}了，不喝{next}。"),
                format!("用户的主力是{form}{last}{form}"),
            ]);
        }
        // Forms that overlap themselves or one another: "钉钉钉", "多伦多伦多", "smsms".
        for form in &forms {
            for other in &forms {
                let overlap = (1..other.len())
                    .rev()
                    .filter(|&k| other.is_char_boundary(k))
                    .find(|&k| form.ends_with(&other[..k]));
                if let Some(k) = overlap {
                    let tail = &other[k..];
                    texts.push(format!("{form}{tail}"));
                    texts.push(format!("we use {form}{tail}{tail} now"));
                }
            }
        }
        texts.push(forms.join(" "));
        texts.push(forms.join(""));
        texts.push(forms.iter().rev().copied().collect::<Vec<_>>().join(""));
        let index = || lexicon::surface_index().iter().map(|(f, e)| (*f, *e));
        for text in &texts {
            assert_eq!(
                spans(lexicon_spans(text)),
                spans(spans_form_by_form(index(), text)),
                "{text}"
            );
        }
    }

    #[test]
    fn a_form_overlapping_itself_is_found_as_before() {
        // The first "多伦多" in "大多伦多伦多" loses to "大多伦", and the second overlaps the
        // first, so searching form by form never finds it; neither may the automaton. The
        // same for "ab ab" in "xab ab ab", whose first occurrence is not a whole word.
        let entry = |canonical| lexicon::Entry {
            category: &lexicon::CATEGORIES[0],
            canonical,
        };
        let forms = [
            ("多伦多", entry("toronto")),
            ("大多伦", entry("big")),
            ("ab ab", entry("abab")),
            ("b", entry("b")),
        ];
        let automaton = SurfaceForms::new(forms);
        for text in [
            "大多伦多伦多",
            "xab ab ab",
            "ab ab ab ab ab",
            "多伦多伦多伦多 b",
        ] {
            assert_eq!(
                spans(automaton.spans(text)),
                spans(spans_form_by_form(forms, text)),
                "{text}"
            );
        }
        assert_eq!(
            spans(automaton.spans("大多伦多伦多")),
            [(0, 9, "coffee", "big")]
        );
        assert_eq!(spans(automaton.spans("xab ab ab")), []);
    }

    #[test]
    fn english_explicit_patterns() {
        is("I live in Austin.", "user", "home", "austin");
        is("My home is in Beijing.", "user", "home", "beijing");
        is(
            "I just moved to Berlin last month.",
            "user",
            "home",
            "berlin",
        );
        is(
            "We relocated; home is Berlin now.",
            "user",
            "home",
            "berlin",
        );
        is("User's home city is Berlin", "user", "home", "berlin");
        is("My favourite editor is Vim", "user", "editor", "vim");
        is(
            "My go-to coffee is a flat white.",
            "user",
            "coffee",
            "flat white",
        );
        is(
            "Project Vega's lead is Maria Garcia.",
            "vega",
            "lead",
            "maria garcia",
        );
        is(
            "The lead of project Lyra is Tom Becker.",
            "lyra",
            "lead",
            "tom becker",
        );
        is(
            "Project Gemini is owned by Wang Fang from the platform team.",
            "gemini",
            "lead",
            "wang fang",
        );
        is(
            "The deadline for the Falcon launch is April 3.",
            "falcon launch",
            "deadline",
            "april 3",
        );
        is(
            "My email is jane@example.com",
            "user",
            "email",
            "jane@example.com",
        );
        is("I work at Initech.", "user", "employer", "initech");
    }

    #[test]
    fn english_lexicon_values() {
        is("The user prefers tea.", "user", "drink", "tea");
        is(
            "I always order a cappuccino when I get coffee.",
            "user",
            "coffee",
            "cappuccino",
        );
        is(
            "These days I've switched to an americano instead.",
            "user",
            "coffee",
            "americano",
        );
        is(
            "Actually, switch the temperature unit to Fahrenheit.",
            "user",
            "temperature unit",
            "fahrenheit",
        );
        is(
            "I read weather in Celsius.",
            "user",
            "temperature unit",
            "celsius",
        );
        is(
            "Please reach me by SMS for anything urgent.",
            "user",
            "contact channel",
            "sms",
        );
        is(
            "From now on contact me via email, not the old way.",
            "user",
            "contact channel",
            "email",
        );
        is(
            "We migrated the backend to Ruby on Rails last sprint.",
            "user",
            "web framework",
            "ruby on rails",
        );
        is(
            "Our backend service is built with Flask.",
            "user",
            "web framework",
            "flask",
        );
        is(
            "We moved from Flask to Django.",
            "user",
            "web framework",
            "django",
        );
        is(
            "For reports, please use short bullet points going forward.",
            "user",
            "report format",
            "bullet points",
        );
        is(
            "My laptop runs Ubuntu; I haven't used Windows in years.",
            "user",
            "os",
            "ubuntu",
        );
        is(
            "The user likely uses Windows as their main OS.",
            "user",
            "os",
            "windows",
        );
        is(
            "I'm not vegetarian at all, I eat chicken almost every day.",
            "user",
            "diet",
            "not vegetarian",
        );
        is(
            "The user is probably vegetarian; they only ordered salads so far.",
            "user",
            "diet",
            "vegetarian",
        );
        is(
            "Project Atlas uses Django for its API.",
            "atlas",
            "web framework",
            "django",
        );
    }

    #[test]
    fn chinese() {
        is("用户喜欢喝茶", "user", "drink", "tea");
        is(
            "我的邮箱是 jane@example.com",
            "user",
            "email",
            "jane@example.com",
        );
        is("我住在北京。", "user", "home", "beijing");
        is("我家在上海。", "user", "home", "shanghai");
        is("我上个月刚搬到深圳。", "user", "home", "shenzhen");
        is("我们搬家了，现在住在柏林。", "user", "home", "berlin");
        is("我最常喝的咖啡是卡布奇诺。", "user", "coffee", "cappuccino");
        is("我最近改喝拿铁了。", "user", "coffee", "latte");
        is(
            "我现在不喝之前那个了，改成美式。",
            "user",
            "coffee",
            "americano",
        );
        is(
            "温度请用摄氏度显示。",
            "user",
            "temperature unit",
            "celsius",
        );
        is(
            "把我的通知方式换成Slack。",
            "user",
            "contact channel",
            "slack",
        );
        is("有急事请用短信联系我。", "user", "contact channel", "sms");
        is(
            "项目的 Web 接口基于Flask开发。",
            "user",
            "web framework",
            "flask",
        );
        is("Gemini项目的负责人是玛丽亚。", "gemini", "lead", "玛丽亚");
        is("Vega项目归平台组的陈杰负责。", "vega", "lead", "陈杰");
        is(
            "我根本不是素食者，几乎每天都吃鸡肉。",
            "user",
            "diet",
            "not vegetarian",
        );
        is("用户的主力系统大概是 Windows。", "user", "os", "windows");
        is(
            "我的笔记本装的是 Ubuntu，好几年没用 Windows 了。",
            "user",
            "os",
            "ubuntu",
        );
    }

    #[test]
    fn tiers_and_stock() {
        is(
            "CRM record: customer Initech is on the Gold support tier.",
            "initech",
            "support tier",
            "gold",
        );
        is(
            "Billing system: customer Initech pays for the Silver support tier.",
            "initech",
            "support tier",
            "silver",
        );
        is(
            "CRM 记录：客户Wayne是金牌支持等级。",
            "wayne",
            "support tier",
            "gold",
        );
        is(
            "计费系统：客户Wayne购买的是银牌支持等级。",
            "wayne",
            "support tier",
            "silver",
        );
        is(
            "Inventory service reports 40 units of part ACME in stock.",
            "acme",
            "stock",
            "40",
        );
        is(
            "Warehouse scanner shows part ACME is out of stock.",
            "acme",
            "stock",
            "0",
        );
        is(
            "库存服务显示零件Wayne有 40 件库存。",
            "wayne",
            "stock",
            "40",
        );
        is("仓库扫描显示零件Wayne已经缺货。", "wayne", "stock", "0");
    }

    #[test]
    fn named_subjects() {
        is("Maria prefers green tea.", "maria", "drink", "green tea");
        is("玛丽亚喜欢喝茶。", "玛丽亚", "drink", "tea");
        is(
            "Slack is the best way to reach me.",
            "user",
            "contact channel",
            "slack",
        );
    }

    #[test]
    fn unsure_gives_none() {
        for text in [
            "We discussed a recipe for dumplings while working on a spreadsheet.",
            "Which city is the user based in?",
            "用户常住哪个城市？",
            "I'm on a business trip in Tokyo this week.",
            "Task T109: the flight search tool timed out.",
            "我们在预算削减会议上讨论了饺子的做法。",
            "I sent the email yesterday.",
            "The user mentioned train tickets in passing.",
            "The user asked me to analyse the churn report; my conclusion was steady growth.",
            "用户让我分析了供应链报告，我的结论是产能过剩。",
            "已设置提醒：供应商电话之后跟进Kubernetes 升级。",
            "Maria Garcia prefers two-week agile sprints with a demo on Fridays.",
            "",
        ] {
            assert_eq!(slot(text), None, "{text}");
        }
    }

    #[test]
    fn key_and_negation() {
        let s = extract_slot("I'm not vegetarian.").unwrap();
        assert!(s.is_negated());
        assert_eq!(s.key(), "user/diet");
        let a = extract_slot("I always order a cappuccino.").unwrap();
        let b = extract_slot("我最近改喝拿铁了。").unwrap();
        assert_eq!(a.key(), b.key());
        assert_ne!(a.value, b.value);
    }
}
