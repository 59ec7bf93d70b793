//! Word tables the rules judge reads, in English and Chinese, kept together so that extending
//! the judge to a new phrasing is a one-line change here.
//!
//! English entries are matched as word prefixes on lower-cased text ("allerg" covers "allergic",
//! "allergy", "allergies"); entries containing Han characters are matched as substrings, since
//! Chinese has no spaces to anchor a word on. The negation, change and hedge cues themselves come
//! from `hindsight_text` (`find_cues`, `has_hedge`); the tables below only add what the judge needs
//! beyond them.

/// Change cues the judge accepts in addition to those `hindsight_text::find_cues` reports, with the
/// weight they carry. `hindsight_text` covers most of them already; listing the phrases the review
/// relies on here keeps the judge's behaviour stable if that list is tuned for other uses.
#[rustfmt::skip]
pub const CHANGE_CUES: &[(&str, f32)] = &[
    ("switch to", 0.9), ("switched", 1.0), ("changed my mind", 1.0), ("from now on", 0.9),
    ("no longer", 1.0), ("instead", 0.8), ("actually", 0.7), ("going forward", 0.9),
    ("改成", 1.0), ("改用", 1.0), ("换成", 1.0), ("不再", 1.0), ("以后", 0.6), ("其实不是", 1.0),
    ("现在改", 1.0), ("现在", 0.3),
];

/// Change cues that correct a mistake rather than report a change over time: after "actually, I'm
/// not vegetarian" the old statement was never true, while after "I switched to lattes" it was
/// true until then. Matched inside the change cues found.
#[rustfmt::skip]
pub const CORRECTIONS: &[&str] = &[
    "actually", "correction", "i meant", "turns out", "in fact", "to be clear",
    "其实", "实际上", "更正", "纠正", "说错", "搞错",
];

/// Hedges that mark a statement as a guess, in addition to `hindsight_text::has_hedge`.
#[rustfmt::skip]
pub const HEDGES: &[&str] = &[
    "probably", "seems", "seem to", "likely", "apparently", "maybe", "perhaps", "presumably",
    "可能", "似乎", "应该是", "好像", "大概", "也许", "估计", "看起来",
];

/// Predicates that deny their object without a negator: "I'm allergic to peanuts" says "no
/// peanuts" as firmly as "I can't eat peanuts" does, so both read as negative statements and a
/// rewording that swaps one for the other is not a contradiction.
#[rustfmt::skip]
pub const AVERSIONS: &[&str] = &[
    "allerg", "avoid", "hate", "dislike", "detest", "intoleran", "can't stand", "cannot stand",
    "过敏", "讨厌", "忌口", "避免", "受不了", "反感",
];

/// Opposing groups of words: saying a word of one group about a topic the other statement
/// describes with a word of the other group is saying the opposite ("working late at night" vs
/// "focused work in the early morning"). Words within a group are near-synonyms, so denying one
/// ("从不熬夜") contradicts affirming another ("喜欢深夜工作").
#[rustfmt::skip]
pub const OPPOSITES: &[(&[&str], &[&str])] = &[
    (
        &["morning", "early", "dawn", "daytime", "早上", "早晨", "清晨", "上午", "一大早", "白天", "早起"],
        &["night", "evening", "late", "midnight", "晚上", "夜里", "深夜", "半夜", "夜间", "熬夜", "夜猫子"],
    ),
    (&["like", "love", "enjoy", "喜欢", "喜爱"], &["dislike", "hate", "detest", "讨厌", "厌恶"]),
    (
        &["short", "brief", "concise", "简短", "简洁", "简要"],
        &["long", "detailed", "lengthy", "in-depth", "详细", "长篇", "详尽"],
    ),
    (&["always", "总是"], &["never", "从不", "从来不"]),
    (&["hot", "warm", "热"], &["cold", "iced", "冷"]),
    (&["enable", "turn on", "开启", "打开"], &["disable", "turn off", "关闭"]),
    (&["allow", "permit", "允许"], &["forbid", "prohibit", "禁止"]),
    (&["more", "increase", "增加"], &["less", "fewer", "decrease", "减少"]),
    (&["public", "公开"], &["private", "私有", "私密"]),
];

/// Words that frame a memory rather than state it ("Note that …", "Just a reminder, …", "记一
/// 下，…") and words that only name who is speaking. Two rewordings differ mostly in these, so they
/// are left out when comparing what two statements are about.
#[rustfmt::skip]
pub const FRAMING: &[&str] = &[
    "note", "remind", "remember", "please", "just", "fyi", "keep in mind", "record", "user",
    "the user", "they", "agent", "also", "again", "really", "so far", "every", "almost",
    "记住", "记一下", "记得", "提醒", "一下", "请", "注意", "备注", "用户", "我们", "我", "他", "她",
    "他们", "还是", "一直", "也",
];

/// Verbs of liking, using and having: they say how someone relates to a topic, not which topic,
/// so sharing one ("I like tea" / "I like coffee") does not make two statements about the same
/// thing.
#[rustfmt::skip]
pub const PREDICATES: &[&str] = &[
    "like", "love", "prefer", "enjoy", "want", "need", "use", "have", "get", "do", "make", "take",
    "give", "keep", "go", "be", "is", "are", "am", "was", "were", "eat", "drink", "usual", "tend",
    "喜欢", "爱", "想", "要", "需要", "用", "使用", "是", "有", "会", "能", "可以", "吃", "喝", "平时",
    "习惯", "觉得",
];

/// Words that end one clause and start another inside a sentence: a negation before "but"
/// does not reach past it.
#[rustfmt::skip]
pub const CLAUSE_BREAKS: &[&str] = &[
    " but ", " however ", " though ", " whereas ", " while ",
    "但是", "可是", "不过", "而是", "然而", "但",
];
