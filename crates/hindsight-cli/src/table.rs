//! Plain-text tables for terminal output.

/// Columns padded to their widest cell. Widths count East Asian wide characters as two columns so
/// that Chinese content lines up.
#[derive(Debug, Default)]
pub struct Table {
    header: Option<Vec<String>>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn with_header<S: ToString>(header: impl IntoIterator<Item = S>) -> Self {
        Table {
            header: Some(header.into_iter().map(|h| h.to_string()).collect()),
            rows: Vec::new(),
        }
    }

    /// A header-less two-column table of fields and values.
    pub fn fields() -> Self {
        Table::default()
    }

    pub fn row<S: ToString>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        self.rows
            .push(cells.into_iter().map(|c| c.to_string()).collect());
        self
    }

    pub fn render(&self) -> String {
        let lines: Vec<&Vec<String>> = self.header.iter().chain(&self.rows).collect();
        let columns = lines.iter().map(|l| l.len()).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for line in &lines {
            for (i, cell) in line.iter().enumerate() {
                widths[i] = widths[i].max(display_width(cell));
            }
        }
        let mut out = String::new();
        for line in lines {
            let mut text = String::new();
            for (i, cell) in line.iter().enumerate() {
                if i > 0 {
                    text.push_str("  ");
                }
                text.push_str(cell);
                if i + 1 < line.len() {
                    text.extend(std::iter::repeat_n(' ', widths[i] - display_width(cell)));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Cuts `text` to at most `max` columns on one line, marking the cut with an ellipsis.
pub fn clip(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if display_width(&flat) <= max {
        return flat;
    }
    let mut out = String::new();
    let mut width = 0;
    for c in flat.chars() {
        let w = char_width(c);
        if width + w + 1 > max {
            break;
        }
        out.push(c);
        width += w;
    }
    out.push('…');
    out
}

fn display_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

fn char_width(c: char) -> usize {
    let wide = matches!(c as u32,
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x1F300..=0x1F64F
        | 0x1F900..=0x1F9FF
        | 0x20000..=0x3FFFD);
    if wide {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_with_wide_characters() {
        let mut t = Table::with_header(["ID", "CONTENT", "SCORE"]);
        t.row(["a", "用户喜欢茶", "0.9"]).row(["bb", "tea", "0.8"]);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "ID  CONTENT     SCORE");
        assert_eq!(lines[1], "a   用户喜欢茶  0.9");
        assert_eq!(lines[2], "bb  tea         0.8");
    }

    #[test]
    fn clip_cuts_long_text_on_one_line() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("a\nb", 10), "a b");
        assert_eq!(clip("abcdefghij", 5), "abcd…");
        assert_eq!(clip("用户喜欢茶", 5), "用户…");
    }
}
