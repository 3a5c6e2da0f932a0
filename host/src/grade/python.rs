//! Python semantics that graders must reproduce: `str.strip`, `str.lower`, `repr`, `re`.
//!
//! letta-evals and evaldeck are Python; their results depend on Python's definitions of
//! whitespace, lowercase, printable characters and regular expressions, which differ from
//! Rust's in small ways that change scores.

use serde_json::Value;

mod re;
mod unicode_tables;

pub use re::{ASCII, DOTALL, Findall, IGNORECASE, MULTILINE, Match, Regex, RegexError, VERBOSE};

/// Python's `str.isspace()` (CPython 3.11): `White_Space` plus the separators `\x1c`-`\x1f`.
pub fn is_space(c: char) -> bool {
    if c.is_ascii() {
        return matches!(c, '\t'..='\r' | '\x1c'..=' ');
    }
    in_ranges(&unicode_tables::SPACE, c)
}

/// Whether `c` is in one of `table`'s sorted, disjoint, inclusive ranges.
fn in_ranges(table: &[(u32, u32)], c: char) -> bool {
    let cp = u32::from(c);
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < cp {
                std::cmp::Ordering::Less
            } else if lo > cp {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Python's `str.strip()` without arguments.
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python's `str.split()` without arguments: runs of whitespace separate, ends are dropped.
pub fn split_whitespace(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_space).filter(|part| !part.is_empty())
}

/// Python's `str.lower()` at CPython 3.11's Unicode 14.0: full lowercase with the final-sigma
/// rule (not casefold). Rust's `to_lowercase` follows a newer Unicode, whose new capitals (Garay,
/// ...) Python leaves alone. ASCII runs, most of what graders lower, are lowered and copied as
/// bytes; the other characters go through CPython's table one by one.
pub fn lower(s: &str) -> String {
    let mut lowered = String::with_capacity(s.len());
    let mut at = 0;
    loop {
        let rest = &s[at..];
        let ascii = rest
            .bytes()
            .position(|b| !b.is_ascii())
            .unwrap_or(rest.len());
        let from = lowered.len();
        lowered.push_str(&rest[..ascii]);
        lowered[from..].make_ascii_lowercase();
        at += ascii;
        let Some(c) = s[at..].chars().next() else {
            return lowered;
        };
        let next = at + c.len_utf8();
        if c == 'Σ' {
            lowered.push(if final_sigma(&s[..at], &s[next..]) {
                'ς'
            } else {
                'σ'
            });
        } else {
            push_lower(&mut lowered, c);
        }
        at = next;
    }
}

/// Pushes CPython's `c.lower()` of one character other than the capital sigma.
fn push_lower(out: &mut String, c: char) {
    let cp = u32::from(c);
    if let Ok(i) = unicode_tables::LOWER.binary_search_by_key(&cp, |&(from, _)| from) {
        // The generator writes code points of characters only.
        out.push(char::from_u32(unicode_tables::LOWER[i].1).unwrap_or(c));
    } else if let Some((_, lowered)) = unicode_tables::LOWER_MULTI
        .iter()
        .find(|(from, _)| *from == cp)
    {
        out.push_str(lowered);
    } else {
        out.push(c);
    }
}

/// Unicode's Final_Sigma condition as CPython tests it: a cased character before the sigma and
/// none after it, case-ignorable characters skipped on both sides.
fn final_sigma(before: &str, after: &str) -> bool {
    let ignorable = |c: &char| in_ranges(&unicode_tables::CASE_IGNORABLE, *c);
    let cased = |c: char| in_ranges(&unicode_tables::CASED, c);
    before
        .chars()
        .rev()
        .find(|c| !ignorable(c))
        .is_some_and(cased)
        && !after.chars().find(|c| !ignorable(c)).is_some_and(cased)
}

/// A text searched as Python's `needle.lower() in text.lower()`. Lowering an ASCII text or
/// needle never makes or removes a non-ASCII character, so when both are ASCII the search
/// compares ASCII case-insensitively in place; otherwise the text is lowered once, on the
/// first search that needs it, and kept for the next.
pub struct Lowered<'a> {
    text: &'a str,
    lowered: std::cell::OnceCell<String>,
}

impl<'a> Lowered<'a> {
    pub fn new(text: &'a str) -> Lowered<'a> {
        Lowered {
            text,
            lowered: std::cell::OnceCell::new(),
        }
    }

    /// Whether `needle.lower()` occurs in the lowered text.
    pub fn contains(&self, needle: &str) -> bool {
        if self.text.is_ascii() && needle.is_ascii() {
            return ascii_contains_ignore_case(self.text.as_bytes(), needle.as_bytes());
        }
        self.lowered
            .get_or_init(|| lower(self.text))
            .contains(&lower(needle))
    }
}

/// Whether `needle` occurs in `haystack`, ASCII letters compared without case.
fn ascii_contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let mut from = 0;
    while let Some(found) = memchr::memchr2(lower, upper, &haystack[from..]) {
        let start = from + found + 1;
        match haystack.get(start..start + rest.len()) {
            Some(window) if window.eq_ignore_ascii_case(rest) => return true,
            Some(_) => from = start,
            None => return false,
        }
    }
    false
}

/// Python's `str.isprintable()` for one character, at CPython 3.11's Unicode 14.0.
pub fn is_printable(c: char) -> bool {
    !in_ranges(&unicode_tables::NON_PRINTABLE, c)
}

/// Python's `repr()` of a string: single quotes unless the text holds a `'` and no `"`.
pub fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        push_repr_char(&mut out, c, quote);
    }
    out.push(quote);
    out
}

/// Python's `repr()` of a one-character string.
pub fn repr_char(c: char) -> String {
    let mut buf = [0; 4];
    repr_str(c.encode_utf8(&mut buf))
}

/// Python's `repr()` of a list of strings: `['a', 'b']`.
pub fn repr_str_list(items: &[impl AsRef<str>]) -> String {
    let parts: Vec<String> = items.iter().map(|s| repr_str(s.as_ref())).collect();
    format!("[{}]", parts.join(", "))
}

fn push_repr_char(out: &mut String, c: char, quote: char) {
    use std::fmt::Write;
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if c == quote => {
            out.push('\\');
            out.push(c);
        }
        c if c == ' ' || is_printable(c) => out.push(c),
        c => {
            let cp = u32::from(c);
            // Writing to a String cannot fail.
            let _ = if cp < 0x100 {
                write!(out, "\\x{cp:02x}")
            } else if cp < 0x10000 {
                write!(out, "\\u{cp:04x}")
            } else {
                write!(out, "\\U{cp:08x}")
            };
        }
    }
}

/// Python's `str()` of a JSON value as `json.loads` would have produced it: strings verbatim,
/// everything else as its Python repr (`True`, `None`, `{'a': 1}`, `0.5`, `1e+20`).
pub fn python_str(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => out.push_str(s),
        other => python_repr(other, out),
    }
}

/// Python's `repr()` of a JSON value as `json.loads` would have produced it.
pub fn python_repr(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => out.push_str(&i.to_string()),
            (_, Some(u), _) => out.push_str(&u.to_string()),
            (_, _, Some(f)) => out.push_str(&python_float_repr(f)),
            _ => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(&repr_str(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_repr(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&repr_str(key));
                out.push_str(": ");
                python_repr(item, out);
            }
            out.push('}');
        }
    }
}

/// Python's `repr(float)`: the shortest round-tripping digits, in positional notation for
/// decimal exponents from -4 to 15 and in scientific notation (`1e+16`, `1.5e-07`) beyond.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Rust's `{:e}` gives the same shortest digits as Python, as `d.ddde<exp>`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1;
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            let (int, frac) = digits.split_at(point as usize);
            format!("{int}.{frac}")
        };
        format!("{sign}{body}")
    } else {
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exp_sign}{:02}", exp.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_uses_python_whitespace() {
        assert_eq!(strip("\x1fhello\x1c"), "hello");
        assert_eq!(strip("\u{a0}\u{3000} x \t\n"), "x");
        assert_eq!(strip("\u{200b}x"), "\u{200b}x");
        assert_eq!(strip(""), "");
        assert_eq!(strip(" \x1d "), "");
    }

    #[test]
    fn split_whitespace_matches_python_split() {
        let parts: Vec<&str> = split_whitespace(" a \x1e b\u{2003}\nc ").collect();
        assert_eq!(parts, ["a", "b", "c"]);
        assert_eq!(split_whitespace("   ").count(), 0);
    }

    #[test]
    fn lower_applies_final_sigma_and_no_casefold() {
        assert_eq!(lower("ΟΔΟΣ"), "οδος");
        assert_eq!(lower("STRASSE"), "strasse");
        assert_eq!(lower("Straße"), "straße");
        assert_eq!(lower("İ"), "i\u{307}");
        for text in [
            "",
            "ABC",
            "-1°C AND Rainy",
            "São Tomé REYKJAVÍK",
            "ΣΑΣ ΟΔΟΣ. Σ",
            "\u{212a}elvin İstanbul",
            "ǅ ǈ ǋ Ⅻ Ⓐ 𐐀 ᾈ",
            "日本語 ABC",
            "MiXeD é É ß ẞ",
        ] {
            assert_eq!(lower(text), text.to_lowercase(), "{text:?}");
        }
    }

    #[test]
    fn lowered_contains_is_pythons_lower_in_lower() {
        let texts = [
            "",
            "a",
            "Hello World",
            "HELLO",
            "xhellx",
            "ΟΔΟΣ ok",
            "İstanbul",
            "\u{212a}elvin",
            "STRASSE",
            "Straße",
            "-1°C and rainy",
            "aaab",
        ];
        let needles = [
            "",
            "a",
            "hello",
            "WORLD",
            "lo w",
            "οδος",
            "i",
            "i\u{307}",
            "kelvin",
            "straße",
            "°c",
            "AAB",
            "ab",
            "hello world!",
            "x",
        ];
        for text in texts {
            let lowered = Lowered::new(text);
            for needle in needles {
                let python = lower(text).contains(&lower(needle));
                assert_eq!(lowered.contains(needle), python, "{needle:?} in {text:?}");
            }
        }
    }

    /// Every code point against CPython 3.11, through the digests `gen_unicode.py` recorded
    /// of each block of 0x1000 code points.
    #[test]
    fn every_code_point_follows_cpython() {
        use sha2::{Digest, Sha256};
        let digests: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/data/python-unicode-digests.json"))
                .unwrap();
        let regex = |pattern| Regex::new(pattern, 0).unwrap();
        let (word, digit, space) = (regex(r"\w"), regex(r"\d"), regex(r"\s"));
        let bit = |yes: bool| if yes { "1" } else { "0" }.to_string();
        let starts = |regex: &Regex, c: char| {
            let mut buf = [0; 4];
            let text = c.encode_utf8(&mut buf);
            bit(regex
                .search(text)
                .unwrap()
                .is_some_and(|m| m.as_str() == text))
        };
        let kinds: [(&str, &dyn Fn(char) -> String); 7] = [
            ("lower", &|c| lower(&c.to_string()) + "\0"),
            ("sigma", &|c| {
                lower(&format!("A{c}Σ"))
                    + &lower(&format!("{c}Σ"))
                    + &lower(&format!("AΣ{c}"))
                    + "\0"
            }),
            ("space", &|c| bit(is_space(c))),
            ("printable", &|c| bit(is_printable(c))),
            ("word", &|c| starts(&word, c)),
            ("digit", &|c| starts(&digit, c)),
            ("re_space", &|c| starts(&space, c)),
        ];
        for (kind, describe) in kinds {
            let recorded = digests[kind].as_array().unwrap();
            assert_eq!(recorded.len(), 0x110);
            for (block, want) in recorded.iter().enumerate() {
                let mut hash = Sha256::new();
                let start = block as u32 * 0x1000;
                for c in (start..start + 0x1000).filter_map(char::from_u32) {
                    hash.update(describe(c).as_bytes());
                }
                let got = format!("{:x}", hash.finalize());
                assert_eq!(
                    Some(got.as_str()),
                    want.as_str(),
                    "{kind} differs from CPython between U+{start:04X} and U+{:04X}",
                    start + 0xFFF
                );
            }
        }
    }

    #[test]
    fn unicode_15_and_later_characters_are_unassigned() {
        // Garay (Unicode 16): the capital lowers to the small letter in Rust, not in CPython 3.11.
        assert_eq!(lower("\u{10D50}"), "\u{10D50}");
        assert!(!Lowered::new("\u{10D70}").contains("\u{10D50}"));
        assert_eq!(lower("ΑΣ \u{10D50}Σ"), "ας \u{10D50}σ");
        assert!(!is_printable('\u{10D50}'));
    }

    #[test]
    fn printable_follows_unicode_14() {
        for c in ['a', ' ', 'é', '☕', '😀', '\u{10000}'] {
            assert!(is_printable(c), "{c:?}");
        }
        for c in [
            '\0',
            '\t',
            '\x7f',
            '\u{a0}',
            '\u{200b}',
            '\u{2028}',
            '\u{e0001}',
            '\u{e000}',
        ] {
            assert!(!is_printable(c), "{c:?}");
        }
        // Shaking face: assigned in Unicode 15, so unassigned (not printable) for CPython 3.11.
        assert!(!is_printable('\u{1FAE8}'));
    }

    #[test]
    fn repr_char_matches_python() {
        assert_eq!(repr_char('é'), "'é'");
        assert_eq!(repr_char('\0'), "'\\x00'");
        assert_eq!(repr_char('\x7f'), "'\\x7f'");
        assert_eq!(repr_char('\u{a0}'), "'\\xa0'");
        assert_eq!(repr_char('\u{200b}'), "'\\u200b'");
        assert_eq!(repr_char('\u{e0001}'), "'\\U000e0001'");
        assert_eq!(repr_char('\t'), "'\\t'");
        assert_eq!(repr_char('\''), "\"'\"");
        assert_eq!(repr_char('\\'), "'\\\\'");
    }

    #[test]
    fn repr_str_chooses_quotes_like_python() {
        assert_eq!(repr_str("it's"), "\"it's\"");
        assert_eq!(repr_str("a'b\"c"), "'a\\'b\"c'");
        assert_eq!(repr_str("line\nnext"), "'line\\nnext'");
        assert_eq!(repr_str_list(&["a", "b"]), "['a', 'b']");
        let empty: [&str; 0] = [];
        assert_eq!(repr_str_list(&empty), "[]");
    }
}
