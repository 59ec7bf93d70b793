//! Character classification and cheap normalisation shared by the other modules.

/// Han ideographs, including the extension blocks and compatibility ideographs.
pub(crate) fn is_han(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2EBEF
        | 0x30000..=0x3134F)
        || c == '〇'
}

/// Latin letters (ASCII and the accented Latin blocks).
pub(crate) fn is_latin_letter(c: char) -> bool {
    c.is_ascii_alphabetic()
        || (matches!(c as u32, 0x00C0..=0x024F | 0x1E00..=0x1EFF) && c.is_alphabetic())
}

/// Folds full-width ASCII forms and the ideographic space to their plain forms, and typographic
/// quotes and dashes to ASCII, so "ＡＰＩ", "API" and "don’t"/"don't" are treated alike.
pub(crate) fn fold_width(c: char) -> char {
    match c {
        '\u{3000}' => ' ',
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        '\u{2018}' | '\u{2019}' | '\u{201B}' | '\u{2032}' => '\'',
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2212}' => '-',
        _ => c,
    }
}

/// Strips the accent from common accented Latin letters ("café" → "cafe"). A full Unicode
/// decomposition would need another dependency; these blocks cover the European names and loan
/// words that show up in practice.
pub(crate) fn strip_accent(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => 'a',
        'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' | 'Ā' | 'Ă' | 'Ą' => 'A',
        'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => 'c',
        'Ç' | 'Ć' | 'Ĉ' | 'Ċ' | 'Č' => 'C',
        'ď' | 'đ' => 'd',
        'Ď' | 'Đ' => 'D',
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => 'e',
        'È' | 'É' | 'Ê' | 'Ë' | 'Ē' | 'Ĕ' | 'Ė' | 'Ę' | 'Ě' => 'E',
        'ĝ' | 'ğ' | 'ġ' | 'ģ' => 'g',
        'Ĝ' | 'Ğ' | 'Ġ' | 'Ģ' => 'G',
        'ĥ' | 'ħ' => 'h',
        'Ĥ' | 'Ħ' => 'H',
        'ì' | 'í' | 'î' | 'ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' | 'ı' => 'i',
        'Ì' | 'Í' | 'Î' | 'Ï' | 'Ĩ' | 'Ī' | 'Ĭ' | 'Į' | 'İ' => 'I',
        'ĵ' => 'j',
        'Ĵ' => 'J',
        'ķ' => 'k',
        'Ķ' => 'K',
        'ĺ' | 'ļ' | 'ľ' | 'ŀ' | 'ł' => 'l',
        'Ĺ' | 'Ļ' | 'Ľ' | 'Ŀ' | 'Ł' => 'L',
        'ñ' | 'ń' | 'ņ' | 'ň' => 'n',
        'Ñ' | 'Ń' | 'Ņ' | 'Ň' => 'N',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ŏ' | 'ő' => 'o',
        'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' | 'Ō' | 'Ŏ' | 'Ő' => 'O',
        'ŕ' | 'ŗ' | 'ř' => 'r',
        'Ŕ' | 'Ŗ' | 'Ř' => 'R',
        'ś' | 'ŝ' | 'ş' | 'š' => 's',
        'Ś' | 'Ŝ' | 'Ş' | 'Š' => 'S',
        'ţ' | 'ť' | 'ŧ' => 't',
        'Ţ' | 'Ť' | 'Ŧ' => 'T',
        'ù' | 'ú' | 'û' | 'ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' => 'u',
        'Ù' | 'Ú' | 'Û' | 'Ü' | 'Ũ' | 'Ū' | 'Ŭ' | 'Ů' | 'Ű' | 'Ų' => 'U',
        'ý' | 'ÿ' | 'ŷ' => 'y',
        'Ý' | 'Ÿ' | 'Ŷ' => 'Y',
        'ź' | 'ż' | 'ž' => 'z',
        'Ź' | 'Ż' | 'Ž' => 'Z',
        _ => c,
    }
}

/// Width-folds and accent-strips one character, keeping its case.
pub(crate) fn fold_char(c: char) -> char {
    strip_accent(fold_width(c))
}

/// Lower-cases one character to a single character. Multi-character lower-case forms are rare
/// outside Turkish dotted I, which `strip_accent` already handles, so the first one is enough and
/// keeps byte offsets easy to map back.
pub(crate) fn lower_char(c: char) -> char {
    if c.is_ascii() {
        c.to_ascii_lowercase()
    } else {
        c.to_lowercase().next().unwrap_or(c)
    }
}

/// Folds and lower-cases a whole string.
pub(crate) fn normalize(text: &str) -> String {
    text.chars().map(|c| lower_char(fold_char(c))).collect()
}

/// A string folded character by character, remembering where each folded character came from in
/// the original, so matches on the folded text can be mapped back to the original text.
pub(crate) struct Folded<'a> {
    pub text: String,
    /// For each byte of `text`, the byte offset in the original where its character starts.
    map: Vec<usize>,
    original: &'a str,
}

impl<'a> Folded<'a> {
    /// Folds width, accents and case.
    pub fn new(original: &'a str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut map = Vec::with_capacity(original.len() + 1);
        for (i, c) in original.char_indices() {
            let f = lower_char(fold_char(c));
            for _ in 0..f.len_utf8() {
                map.push(i);
            }
            text.push(f);
        }
        map.push(original.len());
        Folded {
            text,
            map,
            original,
        }
    }

    /// The text before folding.
    pub fn original(&self) -> &'a str {
        self.original
    }

    /// Maps a byte offset in the folded text to the byte offset in the original.
    pub fn orig(&self, folded_offset: usize) -> usize {
        self.map
            .get(folded_offset)
            .copied()
            .unwrap_or(self.original.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_scripts() {
        assert!(is_han('中'));
        assert!(is_han('〇'));
        assert!(!is_han('a'));
        assert!(!is_han('。'));
        assert!(is_latin_letter('é'));
        assert!(!is_latin_letter('я'));
    }

    #[test]
    fn folds_width_accents_and_case() {
        assert_eq!(normalize("ＡＰＩ　Café"), "api cafe");
        assert_eq!(normalize("don’t"), "don't");
        let f = Folded::new("Ａb中");
        assert_eq!(f.text, "ab中");
        assert_eq!(f.orig(1), 3);
        assert_eq!(f.orig(2), 4);
        assert_eq!(f.orig(f.text.len()), "Ａb中".len());
    }
}
