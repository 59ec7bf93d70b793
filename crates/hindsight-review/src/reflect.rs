//! Reflection: what a finished task leaves worth remembering (ARCHITECTURE §6.4).
//!
//! A [`TaskTrace`] (the goal, the steps, the tool calls with their results or errors, the
//! outcome and the user's feedback) goes in; at most [`MAX_REFLECTIONS`] candidate
//! [`Reflection`]s come out, for the caller to write as semantic memories whose source is
//! `reflection`:
//!
//! - **facts**: preferences, constraints and facts the user stated in the feedback or the goal,
//!   in the user's own words turned to the third person ("I prefer tabs" → "The user prefers
//!   tabs", "不要用表情" → "用户要求不要用表情");
//! - **lessons**: each distinct error that a later call got past, with what worked, and why a
//!   task failed;
//! - **procedure**: the tool sequence of a task that succeeded.
//!
//! When more than five are found, facts come first, then lessons, then the procedure. Nothing
//! is invented: a trace that shows none of these yields an empty list. [`RulesReflector`]
//! decides from word cues in English and Chinese without a model; a model-backed reflector
//! implements the same [`Reflector`] trait.
//!
//! ```
//! use hindsight_review::reflect::{Outcome, Reflector, RulesReflector, TaskTrace, ToolCall};
//!
//! let trace = TaskTrace::new("Deploy the billing service", Outcome::Succeeded)
//!     .with_call(ToolCall::new("kubectl", "apply -f billing.yaml").failing("error: context \"prod\" not found"))
//!     .with_call(ToolCall::new("kubectl", "--context production apply -f billing.yaml").returning("configured"))
//!     .with_call(ToolCall::new("curl", "https://billing.internal/health").returning("ok"))
//!     .with_feedback("Thanks. Never deploy on Fridays.");
//! let reflections = RulesReflector.reflect(&trace).unwrap();
//! let contents: Vec<&str> = reflections.iter().map(|r| r.content.as_str()).collect();
//! assert_eq!(contents, [
//!     "The user asked never to deploy on Fridays.",
//!     "When trying to deploy the billing service, kubectl failed with 'error: context \"prod\" \
//!      not found'; kubectl worked with `--context production apply -f billing.yaml`.",
//!     "To deploy the billing service: kubectl → curl",
//! ]);
//! ```

use std::collections::HashSet;
use std::fmt;

use hindsight_core::{Kind, Subtype};
use hindsight_text::{detect_lang, extract_slot, Lang, USER_SUBJECT};
use serde::{Deserialize, Serialize};

/// Most reflections one task yields (ARCHITECTURE §6.4).
pub const MAX_REFLECTIONS: usize = 5;
/// Most steps a trace may carry.
pub const MAX_TRACE_STEPS: usize = 200;
/// Most tool calls a trace may carry.
pub const MAX_TRACE_TOOL_CALLS: usize = 200;
/// Longest text field of a trace (goal, step, arguments, result, error, feedback), in bytes.
pub const MAX_TRACE_TEXT_BYTES: usize = 16 * 1024;
/// Longest tool name, in bytes (the limit on a memory's provenance `tool`).
pub const MAX_TOOL_NAME_BYTES: usize = 256;
/// The name [`RulesReflector`] reports.
pub const REFLECT_RULES: &str = "rules";

/// Longest sentence of feedback taken as one statement; longer runs without punctuation are
/// not a single preference.
const MAX_STATEMENT_CHARS: usize = 500;
/// Characters of the goal quoted in a reflection.
const GOAL_CHARS: usize = 160;
/// Characters of an error line quoted in a lesson.
const ERROR_CHARS: usize = 200;
/// Characters of arguments quoted in a lesson.
const ARGUMENT_CHARS: usize = 200;
/// Tools named in one procedure; a longer sequence ends with a count of the rest.
const MAX_PROCEDURE_STEPS: usize = 15;
/// Bytes of one tag (the write path's limit).
const MAX_TAG_BYTES: usize = 64;

/// How a task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Succeeded,
    Failed,
    /// Some of the goal was reached.
    Partial,
}

impl Outcome {
    pub const ALL: [Outcome; 3] = [Outcome::Succeeded, Outcome::Failed, Outcome::Partial];

    /// The serialised name: `succeeded`, `failed` or `partial`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Partial => "partial",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One tool call of a task: what was called, with what, and what came back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool: String,
    /// The arguments as the agent sent them (often JSON), verbatim.
    #[serde(default)]
    pub arguments: String,
    #[serde(default)]
    pub result: Option<String>,
    /// Set when the call failed. A blank error counts as none.
    #[serde(default)]
    pub error: Option<String>,
}

impl ToolCall {
    pub fn new(tool: impl Into<String>, arguments: impl Into<String>) -> Self {
        ToolCall {
            tool: tool.into(),
            arguments: arguments.into(),
            result: None,
            error: None,
        }
    }

    pub fn returning(mut self, result: impl Into<String>) -> Self {
        self.result = Some(result.into());
        self
    }

    pub fn failing(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }

    /// Whether the call failed (it has a non-blank error).
    pub fn failed(&self) -> bool {
        self.error_line().is_some()
    }

    /// The first non-blank line of the error, trimmed.
    pub fn error_line(&self) -> Option<&str> {
        self.error.as_deref().and_then(first_line)
    }
}

/// A finished task as the agent reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTrace {
    /// What the task was for, as the user or the agent put it.
    pub goal: String,
    /// The agent's steps, in order (plans, observations, decisions).
    #[serde(default)]
    pub steps: Vec<String>,
    /// The tool calls, in the order they were made.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    pub outcome: Outcome,
    /// What the user said about the result, in their own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The language reflections are written in; detected from the goal when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lang: Option<Lang>,
}

impl TaskTrace {
    pub fn new(goal: impl Into<String>, outcome: Outcome) -> Self {
        TaskTrace {
            goal: goal.into(),
            steps: Vec::new(),
            tool_calls: Vec::new(),
            outcome,
            feedback: None,
            lang: None,
        }
    }

    pub fn with_step(mut self, step: impl Into<String>) -> Self {
        self.steps.push(step.into());
        self
    }

    pub fn with_call(mut self, call: ToolCall) -> Self {
        self.tool_calls.push(call);
        self
    }

    pub fn with_feedback(mut self, feedback: impl Into<String>) -> Self {
        self.feedback = Some(feedback.into());
        self
    }

    pub fn with_lang(mut self, lang: Lang) -> Self {
        self.lang = Some(lang);
        self
    }

    /// The language hint, or the language of the goal.
    pub fn language(&self) -> Lang {
        self.lang.unwrap_or_else(|| detect_lang(&self.goal))
    }

    /// Checks that the trace can be reflected on: a goal, and every list and text within the
    /// limits ([`MAX_TRACE_STEPS`], [`MAX_TRACE_TOOL_CALLS`], [`MAX_TRACE_TEXT_BYTES`],
    /// [`MAX_TOOL_NAME_BYTES`]). Nothing over a limit is truncated.
    pub fn validate(&self) -> Result<(), ReflectError> {
        if self.goal.trim().is_empty() {
            return Err(ReflectError::Invalid(
                "the goal is empty; say what the task was for (e.g. \"deploy the billing \
                 service\"), since every reflection is about it"
                    .into(),
            ));
        }
        check_text("goal", &self.goal)?;
        if self.steps.len() > MAX_TRACE_STEPS {
            return Err(ReflectError::Invalid(format!(
                "the trace has {} steps; at most {MAX_TRACE_STEPS} are accepted",
                self.steps.len()
            )));
        }
        for (i, step) in self.steps.iter().enumerate() {
            check_text(&format!("steps[{i}]"), step)?;
        }
        if self.tool_calls.len() > MAX_TRACE_TOOL_CALLS {
            return Err(ReflectError::Invalid(format!(
                "the trace has {} tool calls; at most {MAX_TRACE_TOOL_CALLS} are accepted",
                self.tool_calls.len()
            )));
        }
        for (i, call) in self.tool_calls.iter().enumerate() {
            if call.tool.trim().is_empty() {
                return Err(ReflectError::Invalid(format!(
                    "tool_calls[{i}] has no tool name"
                )));
            }
            if call.tool.len() > MAX_TOOL_NAME_BYTES {
                return Err(ReflectError::Invalid(format!(
                    "tool_calls[{i}].tool is {} bytes; the limit is {MAX_TOOL_NAME_BYTES} bytes",
                    call.tool.len()
                )));
            }
            check_text(&format!("tool_calls[{i}].arguments"), &call.arguments)?;
            if let Some(result) = &call.result {
                check_text(&format!("tool_calls[{i}].result"), result)?;
            }
            if let Some(error) = &call.error {
                check_text(&format!("tool_calls[{i}].error"), error)?;
            }
        }
        if let Some(feedback) = &self.feedback {
            check_text("feedback", feedback)?;
        }
        Ok(())
    }
}

fn check_text(field: &str, text: &str) -> Result<(), ReflectError> {
    if text.len() > MAX_TRACE_TEXT_BYTES {
        return Err(ReflectError::Invalid(format!(
            "{field} is {} bytes; the limit is {MAX_TRACE_TEXT_BYTES} bytes (16 KiB)",
            text.len()
        )));
    }
    Ok(())
}

/// A candidate memory drawn from a trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reflection {
    /// Always [`Kind::Semantic`] for what reflection finds: facts, procedures and lessons are
    /// what is known, not events.
    pub kind: Kind,
    /// `preference` (also for constraints), `fact`, `procedure` or `lesson`.
    pub subtype: Option<Subtype>,
    pub content: String,
    /// Filterable labels: the subtype, `constraint`, `tool:<name>`, `outcome:<outcome>`.
    pub tags: Vec<String>,
    /// Which part of the trace it came from, for whoever reviews the memory later.
    pub why: String,
}

impl Reflection {
    /// A semantic memory of `subtype`.
    pub fn semantic(subtype: Subtype, content: impl Into<String>, why: impl Into<String>) -> Self {
        Reflection {
            kind: Kind::Semantic,
            subtype: Some(subtype),
            content: content.into(),
            tags: vec![subtype.as_str().to_string()],
            why: why.into(),
        }
    }

    fn tagged(mut self, tag: impl Into<String>) -> Self {
        let tag = clip_bytes(&tag.into(), MAX_TAG_BYTES);
        if !tag.trim().is_empty() && !self.tags.contains(&tag) {
            self.tags.push(tag);
        }
        self
    }
}

/// Why a reflection could not be made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReflectError {
    /// The trace is unusable as given; nothing was attempted.
    #[error("invalid task trace: {0}")]
    Invalid(String),
    /// The reflector's backend (a model endpoint) could not be used.
    #[error("the reflector is unavailable: {0}")]
    Unavailable(String),
    /// The backend answered, but never with an answer that passed validation.
    #[error("the reflector gave no valid answer: {0}")]
    Malformed(String),
}

/// Turns a finished task's trace into at most [`MAX_REFLECTIONS`] candidate memories.
/// Deterministic reflectors and model-backed ones implement the same trait; a model-backed one
/// calls its client blocking.
pub trait Reflector {
    fn reflect(&self, trace: &TaskTrace) -> Result<Vec<Reflection>, ReflectError>;
    /// Short name for history entries and metrics (`rules`, `llm:<model>` …).
    fn name(&self) -> &str;
}

/// Reflection from word cues and the shape of the trace, in English and Chinese, without a
/// model. See the module documentation for what it finds.
#[derive(Clone, Copy, Debug, Default)]
pub struct RulesReflector;

impl Reflector for RulesReflector {
    fn reflect(&self, trace: &TaskTrace) -> Result<Vec<Reflection>, ReflectError> {
        trace.validate()?;
        let zh = trace.language() == Lang::Zh;
        let goal = Goal::of(&trace.goal, zh);
        let mut found = stated(trace);
        found.extend(lessons(trace, &goal, zh));
        found.extend(procedure(trace, &goal, zh));
        let mut seen = HashSet::new();
        found.retain(|r| seen.insert(r.content.clone()));
        found.truncate(MAX_REFLECTIONS);
        Ok(found)
    }

    fn name(&self) -> &str {
        REFLECT_RULES
    }
}

// ---------------------------------------------------------------------------------------------
// Facts the user stated

/// What a sentence of the user's says about them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Statement {
    Preference,
    Constraint,
    Fact,
}

/// Preferences, constraints and facts in the feedback, then in the goal.
fn stated(trace: &TaskTrace) -> Vec<Reflection> {
    let mut out = Vec::new();
    let sources = [
        ("user feedback", trace.feedback.as_deref()),
        ("task goal", Some(&trace.goal)),
    ];
    for (source, text) in sources {
        let Some(text) = text else { continue };
        for sentence in sentences(text) {
            if sentence.question || sentence.text.chars().count() > MAX_STATEMENT_CHARS {
                continue;
            }
            let Some(kind) = classify(&sentence.text) else {
                continue;
            };
            let content = third_person(&sentence.text);
            let why = format!("{source}: \"{}\"", excerpt(&sentence.text, 200));
            let reflection = match kind {
                Statement::Preference => Reflection::semantic(Subtype::Preference, content, why),
                Statement::Constraint => {
                    Reflection::semantic(Subtype::Preference, content, why).tagged("constraint")
                }
                Statement::Fact => Reflection::semantic(Subtype::Fact, content, why),
            };
            out.push(reflection);
        }
    }
    out
}

struct Sentence {
    text: String,
    question: bool,
}

/// Sentences and semicolon-separated clauses. A period ends one only before a space or the
/// end and not after an abbreviation, so "v2.3", "app.yaml" and "e.g. tables" stay whole.
fn sentences(text: &str) -> Vec<Sentence> {
    let text = text.replace('’', "'");
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let ends = match c {
            '。' | '！' | '？' | '；' | '!' | '?' | ';' | '\n' => true,
            '.' => {
                chars.peek().is_none_or(|next| next.is_whitespace())
                    && !ends_in_abbreviation(&current)
            }
            _ => false,
        };
        if !ends {
            current.push(c);
            continue;
        }
        push_sentence(&mut out, &current, matches!(c, '?' | '？'));
        current.clear();
    }
    push_sentence(&mut out, &current, false);
    out
}

fn push_sentence(out: &mut Vec<Sentence>, raw: &str, question_mark: bool) {
    let text = raw
        .trim()
        .trim_start_matches(['-', '*', '•', '·', '>'])
        .trim();
    if text.chars().count() < 2 {
        return;
    }
    let question = question_mark || text.ends_with('吗') || text.ends_with('呢');
    out.push(Sentence {
        text: text.to_string(),
        question,
    });
}

fn ends_in_abbreviation(before: &str) -> bool {
    let last = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    [
        "e.g", "i.e", "etc", "vs", "eg", "ie", "approx", "incl", "cf",
    ]
    .contains(&last.as_str())
}

fn has_han(text: &str) -> bool {
    text.chars()
        .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c))
}

fn classify(sentence: &str) -> Option<Statement> {
    if has_han(sentence) {
        classify_zh(sentence)
    } else {
        classify_en(sentence)
    }
}

fn is_user_slot(sentence: &str) -> bool {
    extract_slot(sentence).is_some_and(|slot| slot.subject == USER_SUBJECT)
}

// --- English

/// Words that may stand between "I" and its verb.
#[rustfmt::skip]
const ADVERBS: &[&str] = &[
    "always", "never", "usually", "often", "sometimes", "really", "also", "only", "just",
    "mostly", "generally", "still", "normally", "typically", "rarely", "seldom", "definitely",
    "strongly", "actually", "much", "truly", "personally", "absolutely", "certainly", "ever",
    "even", "honestly", "totally",
];

/// Verbs after "I" that state a preference.
#[rustfmt::skip]
const PREFER_VERBS: &[&str] = &[
    "prefer", "like", "love", "enjoy", "dislike", "hate", "loathe", "favour", "favor",
];

/// Words that open a sentence without saying anything: left out before looking for a request.
#[rustfmt::skip]
const FILLERS: &[&str] = &[
    "please", "pls", "also", "and", "so", "ok", "okay", "oh", "btw", "but", "then", "thanks",
    "thank you", "kindly", "just", "remember", "note",
];

/// Openings that ask the agent for something lasting, with how the request is retold.
#[rustfmt::skip]
const REQUESTS: &[(&str, &str)] = &[
    ("don't", "not to"), ("do not", "not to"), ("dont", "not to"), ("never", "never to"),
    ("always", "to always"), ("avoid", "to avoid"), ("make sure", "to make sure"),
    ("stop", "to stop"),
];

/// Openings that look like requests but ask for nothing lasting.
#[rustfmt::skip]
const NOT_REQUESTS: &[&str] = &[
    "don't worry", "do not worry", "never mind", "don't mention it", "don't bother",
];

/// Phrases that make a request lasting.
const FROM_NOW_ON: &[&str] = &["from now on", "going forward", "in the future", "in future"];

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

fn classify_en(sentence: &str) -> Option<Statement> {
    let words = words(sentence);
    let text = words.join(" ");
    let has = |phrase: &str| {
        let padded = format!(" {text} ");
        padded.contains(&format!(" {phrase} "))
    };
    for (i, word) in words.iter().enumerate() {
        let after = &words[i + 1..];
        let verb = after.iter().find(|w| !ADVERBS.contains(&w.as_str()));
        match word.as_str() {
            "i" => {
                if let Some(verb) = verb {
                    if PREFER_VERBS.contains(&verb.as_str()) {
                        return Some(Statement::Preference);
                    }
                }
                // "I don't like …", "I do not want …"
                let negated = match after {
                    [n, v, ..] if n == "don't" => Some(v),
                    [d, n, v, ..] if d == "do" && n == "not" => Some(v),
                    _ => None,
                };
                if negated.is_some_and(|v| ["like", "want", "enjoy", "need"].contains(&v.as_str()))
                {
                    return Some(Statement::Preference);
                }
            }
            "i'd" | "would"
                if after
                    .first()
                    .is_some_and(|w| w == "prefer" || w == "rather") =>
            {
                return Some(Statement::Preference);
            }
            "my" if after
                .first()
                .is_some_and(|w| w == "favourite" || w == "favorite" || w == "preference") =>
            {
                return Some(Statement::Preference);
            }
            _ => {}
        }
    }
    let (request, _) = strip_request_lead(sentence);
    if NOT_REQUESTS
        .iter()
        .any(|p| strip_word(request, p).is_some())
    {
        return None;
    }
    let lasting = lasting_adverb(&words)
        || FROM_NOW_ON.iter().any(|p| has(p))
        || ["you must", "must not", "mustn't", "must never", "make sure"]
            .iter()
            .any(|p| has(p));
    if lasting || request_object(request).is_some() {
        return Some(Statement::Constraint);
    }
    if first_person_en(&words) && is_user_slot(sentence) {
        return Some(Statement::Fact);
    }
    None
}

/// "always"/"never" that make a standing rule: opening the sentence ("Never push to main"), or
/// after a speaker, a modal or "please" ("I always …", "you should never …", "please always
/// …"). Elsewhere they describe something ("the cache never expires").
fn lasting_adverb(words: &[String]) -> bool {
    #[rustfmt::skip]
    const BEFORE: &[&str] = &[
        "i", "you", "we", "please", "should", "must", "will", "shall", "to", "i'll", "we'll",
        "you'll", "let's", "and",
    ];
    let opening = words
        .iter()
        .position(|w| !FILLERS.contains(&w.as_str()))
        .unwrap_or(0);
    words.iter().enumerate().any(|(k, w)| {
        (w == "always" || w == "never")
            && (k == opening || k > 0 && BEFORE.contains(&words[k - 1].as_str()))
    })
}

/// A request opening (see [`REQUESTS`]) with how it is retold and what it asks for.
fn request_object(request: &str) -> Option<(&'static str, &str)> {
    REQUESTS.iter().find_map(|(open, retold)| {
        let object = strip_word(request, open)?.trim();
        (!trim_end_punct(object).is_empty()).then_some((*retold, object))
    })
}

fn first_person_en(words: &[String]) -> bool {
    words.iter().any(|w| {
        matches!(
            w.as_str(),
            "i" | "i'm" | "i've" | "i'd" | "i'll" | "my" | "me" | "mine"
        )
    })
}

/// The sentence without opening fillers ("please", "also, "), and whether a "from now on"
/// opened it.
fn strip_request_lead(sentence: &str) -> (&str, bool) {
    let mut rest = sentence.trim();
    let mut lasting = false;
    loop {
        let before = rest;
        rest = rest.trim_start_matches(|c: char| c == ',' || c == ':' || c.is_whitespace());
        if let Some(after) = FROM_NOW_ON.iter().find_map(|p| strip_word(rest, p)) {
            rest = after;
            lasting = true;
        }
        if let Some(after) = FILLERS.iter().find_map(|f| strip_word(rest, f)) {
            rest = after;
        }
        if rest == before {
            return (rest, lasting);
        }
    }
}

/// `text` after an opening `phrase` (ASCII, matched case-insensitively as whole words).
fn strip_word<'a>(text: &'a str, phrase: &str) -> Option<&'a str> {
    let head = text.get(..phrase.len())?;
    let rest = &text[phrase.len()..];
    let whole = rest
        .chars()
        .next()
        .is_none_or(|c| !(c.is_alphanumeric() || c == '\''));
    (head.eq_ignore_ascii_case(phrase) && whole).then_some(rest)
}

fn third_person(sentence: &str) -> String {
    if has_han(sentence) {
        third_person_zh(sentence)
    } else {
        third_person_en(sentence)
    }
}

/// The user's sentence about the user: a request retold ("Please don't use emojis" → "The user
/// asked not to use emojis."), a first-person statement in the third person ("I always use
/// tabs" → "The user always uses tabs."), or else quoted.
fn third_person_en(sentence: &str) -> String {
    let (rest, lasting) = strip_request_lead(sentence);
    if let Some((retold, object)) = request_object(rest) {
        let object = swap_person_en(object, true);
        let tail = if lasting { " from now on" } else { "" };
        return finish_en(&format!(
            "The user asked {retold} {}{tail}",
            trim_end_punct(&object)
        ));
    }
    let words = words(sentence);
    let speaks_as_user = words
        .iter()
        .any(|w| matches!(w.as_str(), "i" | "i'm" | "i've" | "i'd" | "i'll"))
        || words.first().is_some_and(|w| w == "my");
    if speaks_as_user {
        return finish_en(&capitalize(&swap_person_en(sentence, false)));
    }
    if lasting && !rest.is_empty() {
        let object = swap_person_en(rest, true);
        return finish_en(&format!(
            "The user asked to {} from now on",
            trim_end_punct(&lowercase_first(&object))
        ));
    }
    format!("The user said: \"{}\"", sentence.trim())
}

/// First-person words turned to the third person; the verb after "I" agrees. `mentioned` says
/// whether "the user" was already named, so that later mentions can be "their"/"them".
fn swap_person_en(text: &str, mut mentioned: bool) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut verb_next = false;
    for (token, is_word) in tokens(text) {
        if !is_word {
            if !token.chars().all(char::is_whitespace) {
                verb_next = false;
            }
            out.push_str(token);
            continue;
        }
        let lower = token.to_lowercase();
        if verb_next {
            if ADVERBS.contains(&lower.as_str()) {
                out.push_str(token);
                continue;
            }
            verb_next = false;
            match third_person_verb(&lower) {
                Some(verb) => out.push_str(&verb),
                None => out.push_str(token),
            }
            continue;
        }
        let user = |mentioned: bool, named: &'static str, pronoun: &'static str| {
            if mentioned {
                pronoun
            } else {
                named
            }
        };
        let replacement = match lower.as_str() {
            "i" => {
                verb_next = true;
                "the user"
            }
            "i'm" => "the user is",
            "i've" => "the user has",
            "i'd" => "the user would",
            "i'll" => "the user will",
            "me" => user(mentioned, "the user", "them"),
            "my" => user(mentioned, "the user's", "their"),
            "mine" => user(mentioned, "the user's", "theirs"),
            "myself" => "themselves",
            _ => {
                out.push_str(token);
                continue;
            }
        };
        mentioned = true;
        out.push_str(replacement);
    }
    out
}

/// Runs of word characters (letters, digits, apostrophes) and of everything else.
fn tokens(text: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_word = None;
    for (i, c) in text.char_indices() {
        let word = c.is_alphanumeric() || c == '\'';
        match in_word {
            Some(w) if w == word => {}
            Some(w) => {
                out.push((&text[start..i], w));
                start = i;
                in_word = Some(word);
            }
            None => in_word = Some(word),
        }
    }
    if let Some(w) = in_word {
        out.push((&text[start..], w));
    }
    out
}

/// The third-person singular of the verb that followed "I", or `None` when the word does not
/// look like a verb and is left alone.
fn third_person_verb(verb: &str) -> Option<String> {
    #[rustfmt::skip]
    const UNCHANGED: &[&str] = &[
        "can", "could", "will", "would", "shall", "should", "may", "might", "must", "can't",
        "cannot", "couldn't", "won't", "wouldn't", "shouldn't", "mustn't", "didn't", "did",
        "was", "wasn't", "had", "hadn't", "said", "told", "went", "got", "made", "thought",
        "found", "knew", "saw", "gave", "took", "came", "left", "felt", "kept", "meant", "sent",
        "spent", "wrote", "bought", "brought", "ran", "began", "chose", "forgot", "lost", "paid",
        "put", "set", "let", "hit", "cut", "quit", "read", "heard", "understood", "became",
    ];
    #[rustfmt::skip]
    const NOT_VERBS: &[&str] = &[
        "and", "or", "but", "too", "the", "a", "an", "to", "for", "of", "in", "on", "at", "with",
        "as", "if", "so", "myself", "who", "that", "which", "not", "no",
    ];
    let same = Some(verb.to_string());
    let swapped = match verb {
        "am" | "are" | "be" => "is",
        "were" => "was",
        "have" => "has",
        "do" => "does",
        "go" => "goes",
        "don't" | "dont" => "doesn't",
        "haven't" => "hasn't",
        "aren't" | "ain't" => "isn't",
        "weren't" => "wasn't",
        _ => {
            if UNCHANGED.contains(&verb) {
                return same;
            }
            if NOT_VERBS.contains(&verb) || !verb.chars().all(|c| c.is_ascii_lowercase()) {
                return None;
            }
            if verb.len() > 3 && verb.ends_with("ed") && !verb.ends_with("eed") {
                return same;
            }
            let bytes = verb.as_bytes();
            let last = bytes[bytes.len() - 1];
            let before_last = bytes.len().checked_sub(2).map(|i| bytes[i]);
            if ["s", "sh", "ch", "x", "z", "o"]
                .iter()
                .any(|e| verb.ends_with(e))
            {
                return Some(format!("{verb}es"));
            }
            if last == b'y' && before_last.is_some_and(|b| !b"aeiou".contains(&b)) {
                return Some(format!("{}ies", &verb[..verb.len() - 1]));
            }
            return Some(format!("{verb}s"));
        }
    };
    Some(swapped.to_string())
}

fn trim_end_punct(text: &str) -> &str {
    text.trim_end_matches(|c: char| ".!;,:。！；，".contains(c) || c.is_whitespace())
}

fn finish_en(text: &str) -> String {
    format!("{}.", trim_end_punct(text))
}

fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Lower-cases the first letter unless the word is an acronym or a name in capitals ("API").
fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), second)
            if first.is_uppercase() && !second.is_some_and(char::is_uppercase) =>
        {
            let mut chars = text.chars();
            chars.next();
            first.to_lowercase().chain(chars).collect()
        }
        _ => text.to_string(),
    }
}

// --- Chinese

/// Verbs after 我 that state a preference.
#[rustfmt::skip]
const PREFER_VERBS_ZH: &[&str] = &[
    "喜欢", "偏好", "偏爱", "讨厌", "习惯", "倾向", "更愿意", "宁愿", "爱用", "爱喝", "爱吃",
];

/// Words that make a sentence a lasting request.
#[rustfmt::skip]
const CONSTRAINTS_ZH: &[&str] = &[
    "不要", "今后", "往后", "总是", "永远", "始终", "一律", "从不", "绝不", "不许", "不准", "请勿",
    "禁止", "每次都", "别再", "请别", "你别", "千万别", "可别",
];

/// What before 以后 makes it a point in time ("3天以后", "下班以后") rather than "from now on".
const BEFORE_LATER_ZH: &str =
    "0123456789零一二三四五六七八九十百两几半天日周月年时点分秒钟号班课会饭完后";

/// 以后 meaning "from now on": not after a number, a time unit or an event ("3天以后", "开完会以后").
fn from_now_on_zh(sentence: &str) -> bool {
    sentence.match_indices("以后").any(|(at, _)| {
        sentence[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !BEFORE_LATER_ZH.contains(c))
    })
}

/// Openings that only frame a request ("请", "另外，").
#[rustfmt::skip]
const FILLERS_ZH: &[&str] = &[
    "请记住", "请记得", "记住", "记得", "请", "麻烦", "另外", "还有", "并且", "而且", "对了", "谢谢",
    "你",
];

/// Positions of 我 that mean the speaker alone (not 我们).
fn first_person_zh(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    chars
        .iter()
        .enumerate()
        .any(|(i, &c)| c == '我' && chars.get(i + 1) != Some(&'们'))
}

fn classify_zh(sentence: &str) -> Option<Statement> {
    let chars: Vec<char> = sentence.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c != '我' || chars.get(i + 1) == Some(&'们') {
            continue;
        }
        // 我喜欢, 我最喜欢, 我一直比较喜欢: the verb within a few characters of 我.
        let window: String = chars[i + 1..chars.len().min(i + 7)].iter().collect();
        if PREFER_VERBS_ZH.iter().any(|v| window.contains(v)) {
            return Some(Statement::Preference);
        }
    }
    let body = strip_fillers_zh(sentence);
    if CONSTRAINTS_ZH.iter().any(|w| sentence.contains(w))
        || from_now_on_zh(sentence)
        || body.starts_with('别')
    {
        return Some(Statement::Constraint);
    }
    if first_person_zh(sentence) && is_user_slot(sentence) {
        return Some(Statement::Fact);
    }
    None
}

fn strip_fillers_zh(sentence: &str) -> &str {
    let mut rest = sentence.trim();
    loop {
        let before = rest;
        rest = rest.trim_start_matches(|c: char| "，,、：:".contains(c) || c.is_whitespace());
        if let Some(filler) = FILLERS_ZH.iter().find(|f| rest.starts_with(*f)) {
            rest = &rest[filler.len()..];
        }
        if rest == before {
            return rest;
        }
    }
}

/// 我 → 用户 ("我喜欢简洁的回答" → "用户喜欢简洁的回答。"); a request without 我 is retold as the
/// user's ("不要用表情" → "用户要求不要用表情。"); what "we" do is quoted.
fn third_person_zh(sentence: &str) -> String {
    let body = strip_fillers_zh(sentence);
    if !first_person_zh(body) && body.contains("我们") {
        return format!("用户说：“{}。”", trim_end_punct(body));
    }
    let text = if first_person_zh(body) {
        let chars: Vec<char> = body.chars().collect();
        let mut out = String::with_capacity(body.len() + 8);
        for (i, &c) in chars.iter().enumerate() {
            if c == '我' && chars.get(i + 1) != Some(&'们') {
                out.push_str("用户");
            } else {
                out.push(c);
            }
        }
        out
    } else {
        format!("用户要求{body}")
    };
    format!("{}。", trim_end_punct(&text))
}

// ---------------------------------------------------------------------------------------------
// Lessons and the procedure

/// The goal as reflections quote it: its first line, without closing punctuation, clipped.
struct Goal {
    /// As written: `Task "Deploy the billing service" failed`.
    quoted: String,
    /// Inside a sentence: `To deploy the billing service: …`.
    clause: String,
}

impl Goal {
    fn of(goal: &str, zh: bool) -> Goal {
        let first = sentences(goal).into_iter().next().map(|s| s.text);
        let line = first.as_deref().or_else(|| first_line(goal)).unwrap_or("");
        let quoted = excerpt(trim_end_punct(line), GOAL_CHARS);
        let clause = if zh {
            quoted.clone()
        } else {
            lowercase_first(&quoted)
        };
        Goal { quoted, clause }
    }
}

/// What got past a failed call.
enum Fix<'a> {
    /// A later call of the same tool succeeded (its index and the call).
    SameTool(usize, &'a ToolCall),
    /// Another tool's call succeeded next.
    Other(usize, &'a ToolCall),
    /// Nothing later succeeded, yet the task did.
    TaskSucceeded,
}

fn lessons(trace: &TaskTrace, goal: &Goal, zh: bool) -> Vec<Reflection> {
    let calls = &trace.tool_calls;
    let next_success = |after: usize, same_tool: bool| {
        let tool = calls[after].tool.trim();
        calls
            .iter()
            .enumerate()
            .skip(after + 1)
            .find(|(_, c)| !c.failed() && (!same_tool || c.tool.trim() == tool))
    };
    let mut out = Vec::new();
    if trace.outcome != Outcome::Succeeded {
        let cause = (0..calls.len())
            .rev()
            .find(|&i| calls[i].failed() && next_success(i, true).is_none());
        if let Some(i) = cause {
            out.push(failure(trace.outcome, goal, i, &calls[i], zh));
        }
    }
    let mut seen = HashSet::new();
    for (i, call) in calls.iter().enumerate() {
        let Some(error) = call.error_line() else {
            continue;
        };
        let tool = call.tool.trim();
        let error = excerpt(error, ERROR_CHARS);
        if !seen.insert((tool.to_string(), error.clone())) {
            continue;
        }
        let fix = match next_success(i, true) {
            Some((j, next)) => Fix::SameTool(j, next),
            None if trace.outcome == Outcome::Succeeded => {
                next_success(i, false).map_or(Fix::TaskSucceeded, |(j, next)| Fix::Other(j, next))
            }
            None => continue,
        };
        let content = if zh {
            format!(
                "在“{}”时，{tool} 报错“{error}”；{}。",
                goal.clause,
                fix_text(call, &fix, zh)
            )
        } else {
            format!(
                "When trying to {}, {tool} failed with '{error}'; {}.",
                goal.clause,
                fix_text(call, &fix, zh)
            )
        };
        let fixed = match &fix {
            Fix::SameTool(j, _) | Fix::Other(j, _) => format!("call #{} succeeded", j + 1),
            Fix::TaskSucceeded => "the task succeeded".to_string(),
        };
        let mut lesson = Reflection::semantic(
            Subtype::Lesson,
            content,
            format!("tool call #{} ({tool}) failed; {fixed}", i + 1),
        )
        .tagged(format!("tool:{tool}"));
        if let Fix::Other(_, next) = fix {
            lesson = lesson.tagged(format!("tool:{}", next.tool.trim()));
        }
        out.push(lesson);
    }
    out
}

fn fix_text(failed: &ToolCall, fix: &Fix<'_>, zh: bool) -> String {
    match fix {
        Fix::SameTool(_, next) => {
            let tool = next.tool.trim();
            let args = one_line(&next.arguments, ARGUMENT_CHARS);
            match (
                zh,
                args.is_empty(),
                next.arguments.trim() == failed.arguments.trim(),
            ) {
                (false, _, true) => "retrying the same call worked".into(),
                (false, true, false) => format!("calling {tool} again worked"),
                (false, false, false) => format!("{tool} worked with `{args}`"),
                (true, _, true) => "原样重试后成功".into(),
                (true, true, false) => format!("再次调用 {tool} 后成功"),
                (true, false, false) => format!("改用参数 `{args}` 后 {tool} 成功"),
            }
        }
        Fix::Other(_, next) => {
            let tool = next.tool.trim();
            let args = one_line(&next.arguments, ARGUMENT_CHARS);
            match (zh, args.is_empty()) {
                (false, true) => format!("{tool} worked next"),
                (false, false) => format!("{tool} `{args}` worked next"),
                (true, true) => format!("随后 {tool} 成功"),
                (true, false) => format!("随后 {tool} `{args}` 成功"),
            }
        }
        Fix::TaskSucceeded if zh => "任务仍然完成了".into(),
        Fix::TaskSucceeded => "the task succeeded without it".into(),
    }
}

/// Why a task failed or only partly succeeded: its last error that nothing got past.
fn failure(outcome: Outcome, goal: &Goal, index: usize, call: &ToolCall, zh: bool) -> Reflection {
    let tool = call.tool.trim();
    let error = excerpt(call.error_line().unwrap_or_default(), ERROR_CHARS);
    let partial = outcome == Outcome::Partial;
    let content = match (zh, partial) {
        (false, false) => format!(
            "Task \"{}\" failed: {tool} reported '{error}'.",
            goal.quoted
        ),
        (false, true) => format!(
            "Task \"{}\" only partly succeeded: {tool} reported '{error}'.",
            goal.quoted
        ),
        (true, false) => format!("任务“{}”失败：{tool} 报错“{error}”。", goal.quoted),
        (true, true) => format!(
            "任务“{}”只完成了一部分：{tool} 报错“{error}”。",
            goal.quoted
        ),
    };
    Reflection::semantic(
        Subtype::Lesson,
        content,
        format!(
            "task outcome {outcome}; tool call #{} ({tool}) failed and was not retried successfully",
            index + 1
        ),
    )
    .tagged(format!("outcome:{outcome}"))
    .tagged(format!("tool:{tool}"))
}

/// The tools of a successful task in order, failed calls left out and repeats merged.
fn procedure(trace: &TaskTrace, goal: &Goal, zh: bool) -> Option<Reflection> {
    if trace.outcome != Outcome::Succeeded {
        return None;
    }
    let worked: Vec<(usize, &str)> = trace
        .tool_calls
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.failed())
        .map(|(i, c)| (i, c.tool.trim()))
        .collect();
    if worked.len() < 2 {
        return None;
    }
    let mut sequence: Vec<&str> = Vec::new();
    for (_, tool) in &worked {
        if sequence.last() != Some(tool) {
            sequence.push(tool);
        }
    }
    if sequence.len() < 2 {
        return None;
    }
    let shown = sequence.len().min(MAX_PROCEDURE_STEPS);
    let mut steps = sequence[..shown].join(" → ");
    if sequence.len() > shown {
        let more = sequence.len() - shown;
        steps.push_str(&if zh {
            format!(" → …（另有 {more} 步）")
        } else {
            format!(" → … (+{more} more)")
        });
    }
    let content = if zh {
        format!("完成“{}”的做法：{steps}", goal.clause)
    } else {
        format!("To {}: {steps}", goal.clause)
    };
    let numbers: Vec<String> = worked.iter().map(|(i, _)| format!("#{}", i + 1)).collect();
    let why = if numbers.len() <= 10 {
        format!(
            "tool calls {} succeeded in a task that succeeded; failed calls left out",
            numbers.join(", ")
        )
    } else {
        format!(
            "{} tool calls succeeded in a task that succeeded; failed calls left out",
            numbers.len()
        )
    };
    let mut reflection = Reflection::semantic(Subtype::Procedure, content, why);
    for tool in &sequence[..shown] {
        reflection = reflection.tagged(format!("tool:{tool}"));
    }
    Some(reflection)
}

// ---------------------------------------------------------------------------------------------
// Text helpers

fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

/// At most `max` characters, with "…" when cut.
fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
        None => text.to_string(),
    }
}

/// Whitespace runs (newlines included) as single spaces, clipped to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    excerpt(&text.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

/// At most `max` bytes, cut at a character boundary.
fn clip_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reflect(trace: &TaskTrace) -> Vec<Reflection> {
        RulesReflector.reflect(trace).expect("a valid trace")
    }

    fn contents(reflections: &[Reflection]) -> Vec<&str> {
        reflections.iter().map(|r| r.content.as_str()).collect()
    }

    fn ok(tool: &str, arguments: &str) -> ToolCall {
        ToolCall::new(tool, arguments).returning("ok")
    }

    fn err(tool: &str, arguments: &str, error: &str) -> ToolCall {
        ToolCall::new(tool, arguments).failing(error)
    }

    #[test]
    fn english_feedback_becomes_preferences_and_constraints_about_the_user() {
        let trace = TaskTrace::new("Summarise the incident report", Outcome::Succeeded)
            .with_call(ok("read_file", "report.md"))
            .with_feedback(
                "Thanks, that works! I prefer short answers with bullet points. Please don't \
                 use emojis. Always run the tests before pushing; never push to main directly. \
                 Can you also send it to Maria?",
            );
        let found = reflect(&trace);
        assert_eq!(
            contents(&found),
            [
                "The user prefers short answers with bullet points.",
                "The user asked not to use emojis.",
                "The user asked to always run the tests before pushing.",
                "The user asked never to push to main directly.",
            ]
        );
        assert!(found.iter().all(|r| r.kind == Kind::Semantic));
        assert!(found.iter().all(|r| r.subtype == Some(Subtype::Preference)));
        assert_eq!(found[0].tags, ["preference"]);
        assert_eq!(found[1].tags, ["preference", "constraint"]);
        assert_eq!(found[1].why, "user feedback: \"Please don't use emojis\"");
    }

    #[test]
    fn first_person_statements_are_retold_in_the_third_person() {
        let said = |text: &str| third_person(text);
        assert_eq!(said("I always use tabs"), "The user always uses tabs.");
        assert_eq!(
            said("I never want emojis in commit messages."),
            "The user never wants emojis in commit messages."
        );
        assert_eq!(
            said("I'm vegetarian, so never book steak houses"),
            "The user is vegetarian, so never book steak houses."
        );
        assert_eq!(
            said("I don't like long emails; keep them short."),
            "The user doesn't like long emails; keep them short."
        );
        assert_eq!(
            said("My favourite editor is Helix."),
            "The user's favourite editor is Helix."
        );
        assert_eq!(
            said("I prefer my coffee black"),
            "The user prefers their coffee black."
        );
        assert_eq!(
            said("Please don't email me after 6pm."),
            "The user asked not to email them after 6pm."
        );
        assert_eq!(
            said("From now on, use pnpm instead of npm."),
            "The user asked to use pnpm instead of npm from now on."
        );
        assert_eq!(
            said("Going forward, I'd rather get one summary a day"),
            "Going forward, the user would rather get one summary a day."
        );
        assert_eq!(
            said("We always deploy on Tuesdays."),
            "The user said: \"We always deploy on Tuesdays.\""
        );
        assert_eq!(
            said("I try to reply within a day"),
            "The user tries to reply within a day."
        );
        assert_eq!(
            said("I watch the logs while it runs"),
            "The user watches the logs while it runs."
        );
    }

    #[test]
    fn stated_facts_about_the_user_are_kept_but_one_off_requests_and_questions_are_not() {
        let trace = TaskTrace::new("Find a hotel near the office", Outcome::Succeeded)
            .with_call(ok("search_hotels", "{\"near\":\"office\"}"))
            .with_feedback(
                "I live in Berlin. Please fix the typo in the title. Could you always book \
                 refundable rooms? Great job.",
            );
        let found = reflect(&trace);
        assert_eq!(contents(&found), ["The user lives in Berlin."]);
        assert_eq!(found[0].subtype, Some(Subtype::Fact));
        assert_eq!(found[0].tags, ["fact"]);
    }

    #[test]
    fn chinese_feedback_becomes_statements_about_the_user() {
        let trace = TaskTrace::new("整理本周的会议纪要", Outcome::Succeeded)
            .with_call(ok("read_notes", "week=12"))
            .with_feedback(
                "谢谢！我喜欢简洁的回答。请不要用表情符号！以后都用中文回复。我住在深圳。能再发一份给张伟吗？",
            );
        let found = reflect(&trace);
        assert_eq!(
            contents(&found),
            [
                "用户喜欢简洁的回答。",
                "用户要求不要用表情符号。",
                "用户要求以后都用中文回复。",
                "用户住在深圳。",
            ]
        );
        assert_eq!(found[0].subtype, Some(Subtype::Preference));
        assert_eq!(found[1].tags, ["preference", "constraint"]);
        assert_eq!(found[3].subtype, Some(Subtype::Fact));
    }

    #[test]
    fn descriptions_and_one_off_remarks_are_not_taken_for_rules() {
        let trace = TaskTrace::new(
            "Fix the bug where the cache never expires",
            Outcome::Succeeded,
        )
        .with_call(ok("edit", "cache.rs"))
        .with_feedback(
            "Never mind the warning. Don't worry about the old branch. It always takes a \
             minute. Stop. 3天以后提醒我一下。开完会以后再说。",
        );
        assert!(
            reflect(&trace).is_empty(),
            "{:?}",
            contents(&reflect(&trace))
        );
        let trace = TaskTrace::new("整理文档", Outcome::Succeeded)
            .with_call(ok("edit", "doc.md"))
            .with_feedback("你以后别用英文回复。我们总是周二发布。");
        assert_eq!(
            contents(&reflect(&trace)),
            ["用户要求以后别用英文回复。", "用户说：“我们总是周二发布。”"]
        );
    }

    #[test]
    fn preferences_in_the_goal_count_too() {
        let trace = TaskTrace::new(
            "Draft the weekly status report. I prefer tables over prose.",
            Outcome::Succeeded,
        )
        .with_call(ok("write_doc", "status.md"));
        let found = reflect(&trace);
        assert_eq!(contents(&found), ["The user prefers tables over prose."]);
        assert_eq!(found[0].why, "task goal: \"I prefer tables over prose\"");
    }

    #[test]
    fn a_plain_successful_one_tool_task_leaves_nothing_worth_keeping() {
        let trace = TaskTrace::new("What time is it in Tokyo?", Outcome::Succeeded)
            .with_step("Look up the time zone")
            .with_call(ok("clock", "Asia/Tokyo"));
        assert!(reflect(&trace).is_empty());
        // Two calls of one tool are not a sequence either.
        let trace = TaskTrace::new("Fetch both pages", Outcome::Succeeded)
            .with_call(ok("fetch", "a"))
            .with_call(ok("fetch", "b"));
        assert!(reflect(&trace).is_empty());
    }

    #[test]
    fn a_successful_task_yields_its_lessons_and_its_procedure() {
        let trace = TaskTrace::new("Summarise the latest release notes", Outcome::Succeeded)
            .with_call(ok("search", "release notes v2.3"))
            .with_call(err(
                "fetch",
                "https://example.com/notes",
                "timeout after 30s\nat fetch.rs:12",
            ))
            .with_call(err(
                "fetch",
                "https://example.com/notes",
                "  timeout after 30s  ",
            ))
            .with_call(ok("fetch", "https://example.com/notes --timeout 90"))
            .with_call(ok("fetch", "https://example.com/notes/page2"))
            .with_call(err("lint", "summary.md", "lint: command not found"))
            .with_call(ok("summarize", "notes.txt"));
        let found = reflect(&trace);
        assert_eq!(
            contents(&found),
            [
                "When trying to summarise the latest release notes, fetch failed with 'timeout \
                 after 30s'; fetch worked with `https://example.com/notes --timeout 90`.",
                "When trying to summarise the latest release notes, lint failed with 'lint: \
                 command not found'; summarize `notes.txt` worked next.",
                "To summarise the latest release notes: search → fetch → summarize",
            ]
        );
        assert_eq!(found[0].subtype, Some(Subtype::Lesson));
        assert_eq!(found[0].tags, ["lesson", "tool:fetch"]);
        assert_eq!(
            found[0].why,
            "tool call #2 (fetch) failed; call #4 succeeded"
        );
        assert_eq!(found[1].tags, ["lesson", "tool:lint", "tool:summarize"]);
        assert_eq!(found[2].subtype, Some(Subtype::Procedure));
        assert_eq!(
            found[2].tags,
            ["procedure", "tool:search", "tool:fetch", "tool:summarize"]
        );
        assert_eq!(
            found[2].why,
            "tool calls #1, #4, #5, #7 succeeded in a task that succeeded; failed calls left out"
        );
    }

    #[test]
    fn a_retry_with_the_same_arguments_is_named_as_such() {
        let trace = TaskTrace::new("Sync the calendar", Outcome::Succeeded)
            .with_call(err("caldav", "PUT /cal", "503 Service Unavailable"))
            .with_call(ok("caldav", "PUT /cal"));
        assert_eq!(
            contents(&reflect(&trace)),
            [
                "When trying to sync the calendar, caldav failed with '503 Service Unavailable'; \
              retrying the same call worked."
            ]
        );
    }

    #[test]
    fn a_failed_task_says_why_and_has_no_procedure() {
        let trace = TaskTrace::new("Deploy the billing service.", Outcome::Failed)
            .with_call(ok("git", "pull"))
            .with_call(err("docker", "build .", "no space left on device"))
            .with_call(ok("docker", "system prune -f && docker build ."))
            .with_call(err(
                "kubectl",
                "apply -f billing.yaml",
                "error: You must be logged in to the server (Unauthorized)",
            ))
            .with_feedback("It still isn't deployed.");
        let found = reflect(&trace);
        assert_eq!(
            contents(&found),
            [
                "Task \"Deploy the billing service\" failed: kubectl reported 'error: You must be \
                 logged in to the server (Unauthorized)'.",
                "When trying to deploy the billing service, docker failed with 'no space left on \
                 device'; docker worked with `system prune -f && docker build .`.",
            ]
        );
        assert_eq!(found[0].tags, ["lesson", "outcome:failed", "tool:kubectl"]);
        assert_eq!(
            found[0].why,
            "task outcome failed; tool call #4 (kubectl) failed and was not retried successfully"
        );
    }

    #[test]
    fn a_partial_task_names_what_stopped_it() {
        let trace = TaskTrace::new("Migrate all three databases", Outcome::Partial)
            .with_call(ok("migrate", "db1"))
            .with_call(ok("migrate", "db2"))
            .with_call(err("backup", "db3", "permission denied: /backups"));
        assert_eq!(
            contents(&reflect(&trace)),
            [
                "Task \"Migrate all three databases\" only partly succeeded: backup reported \
              'permission denied: /backups'."
            ]
        );
    }

    #[test]
    fn chinese_traces_get_chinese_lessons_and_procedures() {
        let trace = TaskTrace::new("生成上个月的销售报表", Outcome::Succeeded)
            .with_call(ok("sql_query", "select * from sales where month = 5"))
            .with_call(err("excel_export", "report.xlsx", "磁盘已满"))
            .with_call(ok("excel_export", "/tmp/report.xlsx"))
            .with_call(ok("send_mail", "to=boss"))
            .with_feedback("以后报表都用 PDF 格式。");
        let found = reflect(&trace);
        assert_eq!(
            contents(&found),
            [
                "用户要求以后报表都用 PDF 格式。",
                "在“生成上个月的销售报表”时，excel_export 报错“磁盘已满”；改用参数 `/tmp/report.xlsx` 后 excel_export 成功。",
                "完成“生成上个月的销售报表”的做法：sql_query → excel_export → send_mail",
            ]
        );
        let failed = TaskTrace::new("部署计费服务", Outcome::Failed).with_call(err(
            "kubectl",
            "apply",
            "连接被拒绝",
        ));
        assert_eq!(
            contents(&reflect(&failed)),
            ["任务“部署计费服务”失败：kubectl 报错“连接被拒绝”。"]
        );
    }

    #[test]
    fn the_language_hint_chooses_the_templates() {
        let trace = TaskTrace::new("Deploy billing", Outcome::Failed)
            .with_call(err("kubectl", "apply", "connection refused"))
            .with_lang(Lang::Zh);
        assert_eq!(
            contents(&reflect(&trace)),
            ["任务“Deploy billing”失败：kubectl 报错“connection refused”。"]
        );
    }

    #[test]
    fn at_most_five_with_facts_first_then_lessons_then_the_procedure() {
        let trace = TaskTrace::new("Book the team offsite", Outcome::Succeeded)
            .with_call(err("calendar", "find_slot", "quota exceeded"))
            .with_call(ok("calendar", "find_slot --week 23"))
            .with_call(err("booking", "venue=A", "venue A is full"))
            .with_call(ok("booking", "venue=B"))
            .with_call(ok("email", "team"))
            .with_feedback(
                "I prefer venues near a train station. Never book Fridays. Always CC my \
                 manager. I like vegetarian catering.",
            );
        let found = reflect(&trace);
        assert_eq!(found.len(), MAX_REFLECTIONS);
        assert_eq!(
            contents(&found),
            [
                "The user prefers venues near a train station.",
                "The user asked never to book Fridays.",
                "The user asked to always CC their manager.",
                "The user likes vegetarian catering.",
                "When trying to book the team offsite, calendar failed with 'quota exceeded'; \
                 calendar worked with `find_slot --week 23`.",
            ]
        );
    }

    #[test]
    fn invalid_traces_are_refused_with_a_clear_reason() {
        let error = |trace: TaskTrace| match RulesReflector.reflect(&trace) {
            Err(ReflectError::Invalid(reason)) => reason,
            other => panic!("expected Invalid, got {other:?}"),
        };
        assert!(error(TaskTrace::new("  \n", Outcome::Succeeded)).contains("the goal is empty"));
        let mut many = TaskTrace::new("x", Outcome::Succeeded);
        many.tool_calls = vec![ok("t", ""); MAX_TRACE_TOOL_CALLS + 1];
        assert_eq!(
            error(many),
            "the trace has 201 tool calls; at most 200 are accepted"
        );
        let big = TaskTrace::new("x", Outcome::Succeeded)
            .with_call(ok("t", ""))
            .with_call(ToolCall::new("t", "").returning("y".repeat(MAX_TRACE_TEXT_BYTES + 1)));
        assert_eq!(
            error(big),
            "tool_calls[1].result is 16385 bytes; the limit is 16384 bytes (16 KiB)"
        );
        let nameless = TaskTrace::new("x", Outcome::Succeeded).with_call(ok(" ", ""));
        assert_eq!(error(nameless), "tool_calls[0] has no tool name");
        let mut steps = TaskTrace::new("x", Outcome::Succeeded);
        steps.steps = vec!["s".into(); MAX_TRACE_STEPS + 1];
        assert!(error(steps).contains("201 steps"));
        let feedback = TaskTrace::new("x", Outcome::Failed)
            .with_feedback("字".repeat(MAX_TRACE_TEXT_BYTES / 3 + 1));
        assert!(error(feedback).starts_with("feedback is 16386 bytes"));
        let message = RulesReflector
            .reflect(&TaskTrace::new("", Outcome::Failed))
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("invalid task trace: the goal is empty"),
            "{message}"
        );
    }

    #[test]
    fn traces_read_from_json_with_lowercase_outcomes_and_defaults() {
        let trace: TaskTrace =
            serde_json::from_str(r#"{"goal":"Rename the branch","outcome":"partial"}"#).unwrap();
        assert_eq!(trace.outcome, Outcome::Partial);
        assert!(trace.steps.is_empty() && trace.tool_calls.is_empty());
        assert_eq!((trace.feedback, trace.lang), (None, None));
        let full: TaskTrace = serde_json::from_value(serde_json::json!({
            "goal": "g", "outcome": "failed", "lang": "zh", "feedback": "f",
            "steps": ["s"],
            "tool_calls": [{"tool": "t", "arguments": "{}", "error": "boom"}]
        }))
        .unwrap();
        assert_eq!(full.lang, Some(Lang::Zh));
        assert_eq!(full.tool_calls[0].error_line(), Some("boom"));
        assert_eq!(full.tool_calls[0].result, None);
        let back: TaskTrace = serde_json::from_value(serde_json::to_value(&full).unwrap()).unwrap();
        assert_eq!(back, full);
        for outcome in Outcome::ALL {
            assert_eq!(
                serde_json::to_value(outcome).unwrap(),
                serde_json::json!(outcome.as_str())
            );
        }
        assert!(serde_json::from_str::<Outcome>("\"Succeeded\"").is_err());
        let reflection = Reflection::semantic(Subtype::Lesson, "c", "w");
        let json = serde_json::to_string(&reflection).unwrap();
        assert_eq!(
            serde_json::from_str::<Reflection>(&json).unwrap(),
            reflection
        );
    }

    #[test]
    fn blank_errors_do_not_count_as_failures() {
        let call = ToolCall::new("t", "").failing("  \n ");
        assert!(!call.failed());
        assert_eq!(call.error_line(), None);
    }

    #[test]
    fn long_procedures_are_clipped_and_tags_stay_short() {
        let long = "t".repeat(100);
        let mut trace =
            TaskTrace::new("Walk the whole tree", Outcome::Succeeded).with_call(ok(&long, ""));
        for i in 0..20 {
            trace = trace.with_call(ok(&format!("step_{i}"), ""));
        }
        let found = reflect(&trace);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].content.ends_with("step_13 → … (+6 more)"),
            "{}",
            found[0].content
        );
        assert_eq!(found[0].tags[1].len(), MAX_TAG_BYTES);
        assert!(found[0].tags.iter().all(|t| t.len() <= MAX_TAG_BYTES));
        assert_eq!(
            found[0].why,
            "21 tool calls succeeded in a task that succeeded; failed calls left out"
        );
    }
}
