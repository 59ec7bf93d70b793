//! Language detection by script share.

use serde::{Deserialize, Serialize};

use crate::script::{is_han, is_latin_letter};

/// The dominant language of a text, as far as its script tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// Mostly Latin script (treated as English).
    En,
    /// Mostly Han script (treated as Chinese).
    Zh,
    /// A real mix of Han and Latin script.
    Mixed,
    /// Neither, or no letters at all.
    Other,
}

impl Lang {
    /// Short code: `en`, `zh`, `mixed` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
            Lang::Mixed => "mixed",
            Lang::Other => "other",
        }
    }
}

/// One Han character carries about as much as a short Latin word, so Latin letters are weighed
/// down; otherwise a Chinese sentence quoting "Kubernetes" would count as mostly English.
const LATIN_LETTERS_PER_HAN: f64 = 3.0;

/// Share a script needs to name the language alone.
const DOMINANT_SHARE: f64 = 0.7;

/// Detects the language of `text` from the weighted share of Han, Latin and other letters.
pub fn detect_lang(text: &str) -> Lang {
    let (mut han, mut latin, mut other) = (0usize, 0usize, 0usize);
    for c in text.chars() {
        if is_han(c) {
            han += 1;
        } else if is_latin_letter(c) {
            latin += 1;
        } else if c.is_alphabetic() {
            other += 1;
        }
    }
    let han_w = han as f64;
    let latin_w = latin as f64 / LATIN_LETTERS_PER_HAN;
    let other_w = other as f64 / LATIN_LETTERS_PER_HAN;
    let total = han_w + latin_w + other_w;
    if total == 0.0 {
        return Lang::Other;
    }
    if han_w / total >= DOMINANT_SHARE {
        Lang::Zh
    } else if latin_w / total >= DOMINANT_SHARE {
        Lang::En
    } else if other_w / total >= DOMINANT_SHARE || han + latin == 0 {
        Lang::Other
    } else if han > 0 && latin > 0 {
        Lang::Mixed
    } else if han > 0 {
        Lang::Zh
    } else if latin > 0 {
        Lang::En
    } else {
        Lang::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english() {
        assert_eq!(detect_lang("The user prefers tea."), Lang::En);
        assert_eq!(detect_lang("Deploy v2.3 to k8s"), Lang::En);
    }

    #[test]
    fn chinese_even_with_latin_names() {
        assert_eq!(detect_lang("用户喜欢喝茶。"), Lang::Zh);
        assert_eq!(
            detect_lang("已设置提醒：季度复盘之后跟进Kubernetes 升级。"),
            Lang::Zh
        );
        assert_eq!(detect_lang("Gemini项目的负责人是玛丽亚。"), Lang::Zh);
    }

    #[test]
    fn mixed_and_other() {
        assert_eq!(
            detect_lang("会议纪要 meeting notes 下周 review"),
            Lang::Mixed
        );
        assert_eq!(detect_lang("Привет, как дела?"), Lang::Other);
        assert_eq!(detect_lang("12345 !!"), Lang::Other);
        assert_eq!(detect_lang(""), Lang::Other);
        assert_eq!(Lang::Zh.as_str(), "zh");
    }
}
