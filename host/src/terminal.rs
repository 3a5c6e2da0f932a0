//! Texts from suites, datasets, results and graders as they may be shown on a terminal.
//!
//! Any of these texts can come from someone else: a sample id, a grader's error, a Python
//! exception, a metric key. Printed raw, an escape sequence in one could clear the screen, set
//! the window's title or fake a line of output, and a bidi override could make text read other
//! than it is. So every such text is printed through [`printable`] (or [`printable_lines`]),
//! which shows those characters as escapes; files keep the texts as they are.

use std::fmt::Write as _;

/// Whether `c` could steer a terminal or hide what text says: a control character (C0, DEL,
/// C1: among them escape sequences, carriage returns and bells) or an invisible mark that
/// reorders text (bidi embeddings, overrides, isolates and marks).
pub fn steers(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every character that [`steers`] a terminal written as a `\u{..}` escape, so that
/// it is shown and never obeyed.
pub fn printable(text: &str) -> String {
    escaped(text, |_| false)
}

/// [`printable`], but newlines and tabs kept: for texts shown over several lines by design
/// (an error with its hint, a list of problems).
pub fn printable_lines(text: &str) -> String {
    escaped(text, |c| matches!(c, '\n' | '\t'))
}

fn escaped(text: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if steers(c) && !keep(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_marks_are_shown_as_escapes() {
        assert_eq!(
            printable("a\x1b[2Jb\r\u{9b}c\u{202e}d é\u{7f}\u{61c}\u{2066}\u{200f}"),
            "a\\u{1b}[2Jb\\u{d}\\u{9b}c\\u{202e}d é\\u{7f}\\u{61c}\\u{2066}\\u{200f}"
        );
        assert_eq!(printable("line\nnext\tcell"), "line\\u{a}next\\u{9}cell");
        assert_eq!(
            printable_lines("line\nnext\tcell\r"),
            "line\nnext\tcell\\u{d}"
        );
        let plain = "plain text, ünïcode, 😀, \\u{1b} as written";
        assert_eq!(printable(plain), plain);
        assert_eq!(printable(&printable("\x1b")), printable("\x1b"));
    }
}
