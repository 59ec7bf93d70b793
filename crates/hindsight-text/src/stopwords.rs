//! Stop words for keyword search. Kept short: BM25's IDF already discounts frequent words, and a
//! long list starts dropping words that carry meaning in memory text (e.g. "before", "after").

use std::collections::HashSet;
use std::sync::OnceLock;

/// English function words, question words and contractions (apostrophes removed, as the analyzer
/// does).
#[rustfmt::skip]
const ENGLISH: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as",
    "at", "be", "because", "been", "being", "both", "but", "by", "can", "could", "did", "do",
    "does", "doing", "done", "down", "during", "each", "either", "else", "etc", "ever", "every",
    "few", "for", "from", "further", "get", "gets", "got", "had", "has", "have", "having", "he",
    "her", "here", "hers", "herself", "him", "himself", "his", "how", "i", "if", "in", "into",
    "is", "it", "its", "itself", "just", "let", "lets", "may", "me", "might", "mine", "more",
    "most", "much", "must", "my", "myself", "of", "off", "on", "once", "only", "or", "other",
    "ought", "our", "ours", "ourselves", "out", "over", "own", "please", "quite", "rather",
    "really", "same", "shall", "she", "should", "so", "some", "such", "than", "that", "the",
    "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those",
    "through", "thus", "to", "too", "under", "until", "up", "upon", "us", "very", "was", "we",
    "were", "what", "whatever", "when", "where", "whether", "which", "while", "who", "whom",
    "whose", "why", "will", "with", "would", "yet", "you", "your", "yours", "yourself",
    "yourselves", "im", "ive", "youre", "youve", "youd", "youll", "hes", "shes", "weve", "theyre",
    "theyve", "theyd", "theyll", "thats", "theres", "whats", "whos", "wheres", "hows", "isnt",
    "arent", "wasnt", "werent", "dont", "doesnt", "didnt", "hasnt", "havent", "hadnt", "cant",
    "couldnt", "wont", "wouldnt", "shouldnt", "mustnt", "lets",
];

/// Chinese particles, pronouns, question words and light verbs that jieba emits as words.
#[rustfmt::skip]
const CHINESE: &[&str] = &[
    "的", "了", "是", "在", "我", "你", "您", "他", "她", "它", "们", "我们", "你们", "他们", "她们", "它们", "咱们", "吗",
    "呢", "吧", "啊", "呀", "哦", "嗯", "哈", "啦", "嘛", "呗", "么", "和", "与", "及", "或", "或者", "也", "都", "就",
    "还", "又", "而", "但", "但是", "而且", "并且", "这", "那", "这个", "那个", "这些", "那些", "这样", "那样", "这么", "那么",
    "什么", "怎么", "怎样", "怎么样", "如何", "哪", "哪个", "哪些", "哪儿", "哪里", "谁", "为什么", "为何", "多少", "几", "一个",
    "一下", "有", "没", "很", "把", "被", "让", "给", "对", "从", "到", "于", "以", "为", "之", "其", "着", "过", "得",
    "地", "个", "些", "等", "等等", "自己", "要", "会", "能", "可以", "应该", "该", "请", "就是", "还是", "已经", "一些",
    "所以", "因为", "如果", "虽然", "然后", "以及", "关于", "对于", "里", "中",
];

fn english_set() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| ENGLISH.iter().copied().collect())
}

fn chinese_set() -> &'static HashSet<&'static str> {
    static SET: OnceLock<HashSet<&'static str>> = OnceLock::new();
    SET.get_or_init(|| CHINESE.iter().copied().collect())
}

/// True for an English stop word, given lower-case with apostrophes removed.
pub fn is_english_stop_word(word: &str) -> bool {
    english_set().contains(word)
}

/// True for a Chinese stop word as segmented by jieba.
pub fn is_chinese_stop_word(word: &str) -> bool {
    chinese_set().contains(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_answer() {
        assert!(is_english_stop_word("the"));
        assert!(is_english_stop_word("dont"));
        assert!(!is_english_stop_word("id"));
        assert!(!is_english_stop_word("tea"));
        assert!(is_chinese_stop_word("的"));
        assert!(is_chinese_stop_word("吗"));
        assert!(!is_chinese_stop_word("咖啡"));
    }
}
