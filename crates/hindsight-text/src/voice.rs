//! The user's voice: an agent asks about "the user", but what the user told it is stored in the
//! user's own words ("I live in Berlin", "我住在深圳"). Sentence encoders score a third-person
//! question against a first-person statement poorly (and favour the agent's own notes, which say
//! "the user" too), so recall also asks the question as the user would have said it and compares
//! that phrasing with memories whose source is the user.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// Words after which "the user" is the object of a verb or preposition, so it becomes "me".
const OBJECT_CONTEXT: &[&str] = &[
    "to", "for", "with", "about", "of", "by", "from", "at", "on", "in", "into", "remind", "tell",
    "notify", "contact", "reach", "email", "call", "text", "message", "ask", "help", "send",
    "show", "give", "let", "told", "asked", "ping", "alert", "inform",
];

static ENGLISH_USER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:(?P<prev>[a-z]+)\s+)?(?:the|this|our)\s+user(?P<poss>'s|s')?\b(?:\s+(?P<verb>is|was|has|does|doesn't|isn't|wasn't|hasn't)\b)?",
    )
    .expect("valid pattern")
});

static CHINESE_USER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:该|这位|这个)?用户").expect("valid pattern"));

/// The question with the person a bank belongs to, named by `names` (entity keys such as "lucy"
/// or "林晓"), called "the user" ("用户"), as an agent asks about its principal; `None` when it
/// names none of them. [`in_user_voice`] then rephrases it as the user would have said it.
///
/// ```
/// use hindsight_text::{in_user_voice, naming_as_user};
/// let asked = naming_as_user("Any dietary needs for Lucy's birthday?", &["lucy".into()]).unwrap();
/// assert_eq!(asked, "Any dietary needs for the user's birthday?");
/// assert_eq!(in_user_voice(&asked).unwrap(), "Any dietary needs for my birthday?");
/// assert_eq!(naming_as_user("给林晓约个会", &["林晓".into()]).unwrap(), "给用户约个会");
/// assert_eq!(naming_as_user("Book a room for Marta", &["lucy".into()]), None);
/// ```
pub fn naming_as_user(query: &str, names: &[String]) -> Option<String> {
    let mut text = query.to_string();
    let mut changed = false;
    for name in names.iter().filter(|n| !n.trim().is_empty()) {
        if name.is_ascii() {
            let words: Vec<String> = name.split_whitespace().map(regex::escape).collect();
            let pattern = format!(r"(?i)\b{}(?P<poss>'s|s')?\b", words.join(r"\s+"));
            let Ok(re) = Regex::new(&pattern) else {
                continue;
            };
            let replaced = re.replace_all(&text, |c: &Captures| {
                if c.name("poss").is_some() {
                    "the user's"
                } else {
                    "the user"
                }
            });
            if replaced != text {
                changed = true;
                text = replaced.into_owned();
            }
        } else if text.contains(name.as_str()) {
            changed = true;
            text = text.replace(name.as_str(), "用户");
        }
    }
    changed.then_some(text)
}

/// Whether a text said by the user introduces them as `name` (an entity key such as "lucy" or
/// "林晓"): "I'm Lucy", "my name is Lucy", "call me Lucy", "Lucy here", "我是财务林晓", "我叫林晓",
/// "叫我林晓就行". Built once per name, tried on many texts.
///
/// ```
/// use hindsight_text::SelfIntroduction;
/// assert!(SelfIntroduction::new("dana reyes").in_text("Hi, I'm Dana Reyes, I run the front desk"));
/// assert!(SelfIntroduction::new("marek").in_text("Marek here, night shift lead"));
/// assert!(SelfIntroduction::new("周宁").in_text("我是研发部的周宁，负责后端"));
/// assert!(!SelfIntroduction::new("dana").in_text("Please send the draft to Dana"));
/// assert!(!SelfIntroduction::new("周宁").in_text("周宁说下周要出差"));
/// assert!(!SelfIntroduction::new("周宁").in_text("我跟老板说了，周宁下周出差"));
/// ```
pub struct SelfIntroduction {
    name: String,
    /// For a name in Latin script.
    english: Option<Regex>,
}

impl SelfIntroduction {
    /// The introduction by `name`, an entity key.
    pub fn new(name: &str) -> Self {
        let name = name.trim().to_string();
        let english = (!name.is_empty() && name.is_ascii())
            .then(|| {
                let words: Vec<String> = name.split_whitespace().map(regex::escape).collect();
                let name = words.join(r"\s+");
                Regex::new(&format!(
                    r"(?i)\b(?:i'm|i am|im|my name is|my name's|name's|call me|this is)\s+{name}\b|(?:^|[.!?,;:]\s*){name}\s+here\b"
                ))
                .ok()
            })
            .flatten();
        SelfIntroduction { name, english }
    }

    /// Whether `text` introduces its speaker by the name.
    pub fn in_text(&self, text: &str) -> bool {
        if self.name.is_empty() {
            return false;
        }
        if self.name.is_ascii() {
            return self.english.as_ref().is_some_and(|re| re.is_match(text));
        }
        let name = self.name.as_str();
        // The clause that names them says "I am" or "I am called" before the name.
        let clauses: Vec<&str> = text
            .split(|c: char| "，,。；;！!？?\n".contains(c))
            .collect();
        clauses.iter().enumerate().any(|(i, clause)| {
            let Some(at) = clause.find(name) else {
                return false;
            };
            let before = &clause[..at];
            let introduces =
                |s: &str| s.contains("我是") || s.contains("我叫") || s.contains("叫我");
            // "我带客服组，吴倩": the name alone, after a clause about the speaker.
            let alone =
                clause.trim() == name && i > 0 && clauses[i - 1].trim_start().starts_with('我');
            introduces(before) || alone
        })
    }
}

/// The question rephrased in the user's own voice, or `None` when it does not speak of the user.
///
/// ```
/// use hindsight_text::in_user_voice;
/// assert_eq!(in_user_voice("Which city is the user based in?").unwrap(), "Which city am I based in?");
/// assert_eq!(in_user_voice("How should alerts be delivered to the user?").unwrap(), "How should alerts be delivered to me?");
/// assert_eq!(in_user_voice("What is the user's favourite drink?").unwrap(), "What is my favourite drink?");
/// assert_eq!(in_user_voice("应该通过什么方式提醒用户？").unwrap(), "应该通过什么方式提醒我？");
/// assert_eq!(in_user_voice("What framework do we use?"), None);
/// ```
pub fn in_user_voice(query: &str) -> Option<String> {
    let mut changed = false;
    let english = ENGLISH_USER.replace_all(query, |c: &Captures| {
        changed = true;
        let prev = c.name("prev").map(|m| m.as_str());
        let verb = c.name("verb").map(|m| m.as_str().to_ascii_lowercase());
        let lead = prev.map(|p| format!("{p} ")).unwrap_or_default();
        if c.name("poss").is_some() {
            let tail = verb.map(|v| format!(" {v}")).unwrap_or_default();
            return format!("{lead}my{tail}");
        }
        let prev_lower = prev.map(str::to_ascii_lowercase);
        // "is the user" / "does the user": the question inverts subject and verb.
        let inverted = match prev_lower.as_deref() {
            Some("is") => Some("am I"),
            Some("was") => Some("was I"),
            Some("does") => Some("do I"),
            Some("did") => Some("did I"),
            Some("has") => Some("have I"),
            Some("can") | Some("should") | Some("would") | Some("will") | Some("could") => None,
            _ => None,
        };
        let rest = verb.map(|v| format!(" {}", first_person_verb(&v)));
        if let Some(inverted) = inverted {
            return format!("{inverted}{}", rest.unwrap_or_default());
        }
        let pronoun = match prev_lower.as_deref() {
            Some(p) if OBJECT_CONTEXT.contains(&p) && rest.is_none() => "me",
            _ => "I",
        };
        format!("{lead}{pronoun}{}", rest.unwrap_or_default())
    });
    let chinese = CHINESE_USER.replace_all(&english, |_: &Captures| {
        changed = true;
        "我"
    });
    changed.then(|| chinese.into_owned())
}

fn first_person_verb(verb: &str) -> &str {
    match verb {
        "is" => "am",
        "isn't" => "am not",
        "has" => "have",
        "hasn't" => "haven't",
        "does" => "do",
        "doesn't" => "don't",
        "wasn't" => "wasn't",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::in_user_voice;

    fn voice(q: &str) -> String {
        in_user_voice(q).unwrap_or_else(|| panic!("{q:?} speaks of the user"))
    }

    #[test]
    fn subject_becomes_i_and_its_verb_agrees() {
        assert_eq!(
            voice("Where is the user travelling at the moment?"),
            "Where am I travelling at the moment?"
        );
        assert_eq!(
            voice("The user is allergic to what?"),
            "I am allergic to what?"
        );
        assert_eq!(
            voice("What does the user drink in the morning?"),
            "What do I drink in the morning?"
        );
        assert_eq!(
            voice("Which editor should the user's team use?"),
            "Which editor should my team use?"
        );
    }

    #[test]
    fn object_becomes_me() {
        assert_eq!(
            voice("What should I remind the user about?"),
            "What should I remind me about?"
        );
        assert_eq!(voice("Send this user a summary"), "Send me a summary");
    }

    #[test]
    fn chinese_user_becomes_wo() {
        assert_eq!(voice("用户住在哪个城市？"), "我住在哪个城市？");
        assert_eq!(voice("该用户对什么过敏？"), "我对什么过敏？");
    }

    #[test]
    fn questions_that_do_not_speak_of_the_user_are_left_alone() {
        assert_eq!(in_user_voice("Who leads Project Falcon?"), None);
        assert_eq!(in_user_voice("How many users signed up?"), None);
        assert_eq!(in_user_voice("谁负责猎鹰项目？"), None);
    }
}
