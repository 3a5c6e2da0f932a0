//! Texts from suites, datasets, results and graders as they may be shown on a terminal.
//!
//! Any of these texts can come from someone else: a sample id, a grader's error, a Python
//! exception, a metric key. Printed raw, an escape sequence in one could clear the screen, set
//! the window's title or fake a line of output, and a bidi override could make text read other
//! than it is. So every such text is printed through [`printable`] (or [`printable_lines`]),
//! which shows those characters as escapes; files keep the texts as they are.

use std::fmt::Write as _;

/// Whether `c` could steer a terminal or hide what text says: a control character (C0, DEL,
/// C1: among them escape sequences, carriage returns and bells), a line or paragraph separator
/// (which some terminals break a line at, faking one of output), or an invisible mark that
/// reorders text (bidi embeddings, overrides, isolates and marks).
pub fn steers(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every character that [`steers`] a terminal written as a `\u{..}` escape, so that
/// it is shown and never obeyed.
pub fn printable(text: &str) -> String {
    escaped(text, |_| false, shown)
}

/// [`printable`], but newlines and tabs kept: for texts shown over several lines by design
/// (an error with its hint, a list of problems).
pub fn printable_lines(text: &str) -> String {
    escaped(text, |c| matches!(c, '\n' | '\t'), shown)
}

/// A JSON document (as serde_json writes it, compact or pretty) with every character that
/// [`steers`] a terminal written as a JSON `\uXXXX` escape, which reads back as the same
/// character: serde_json escapes C0 controls in strings, but not DEL, C1 or bidi marks. Raw
/// newlines in such a document are its own layout, and kept.
pub fn printable_json(json: &str) -> String {
    escaped(
        json,
        |c| c == '\n',
        |out, c| {
            let _ = write!(out, "\\u{:04x}", c as u32);
        },
    )
}

/// `c` as `\u{1b}`.
fn shown(out: &mut String, c: char) {
    let _ = write!(out, "\\u{{{:x}}}", c as u32);
}

fn escaped(text: &str, keep: impl Fn(char) -> bool, escape: impl Fn(&mut String, char)) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if steers(c) && !keep(c) {
            escape(&mut out, c);
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
        assert_eq!(printable("a\u{2028}b\u{2029}c"), "a\\u{2028}b\\u{2029}c");
        assert_eq!(
            printable_lines("line\nnext\tcell\r"),
            "line\nnext\tcell\\u{d}"
        );
        let plain = "plain text, ünïcode, 😀, \\u{1b} as written";
        assert_eq!(printable(plain), plain);
        assert_eq!(printable(&printable("\x1b")), printable("\x1b"));
    }

    #[test]
    fn json_keeps_its_meaning_and_layout() {
        let value = serde_json::json!({"id": "a\u{1b}[2J\u{9b}b\u{202e}c\nd"});
        let json = serde_json::to_string_pretty(&value).unwrap();
        let shown = printable_json(&json);
        assert_eq!(shown, "{\n  \"id\": \"a\\u001b[2J\\u009bb\\u202ec\\nd\"\n}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            value
        );
    }
}
