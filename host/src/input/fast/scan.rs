//! A JSON scanner for the rows of the common shape, read straight from their bytes.
//!
//! serde's derived readers spend most of a row's time outside the bytes: matching each key
//! against the field names through a visitor, building and moving the values through
//! `MapAccess` and `SeqAccess`. The readers built on [`Scanner`] (`RawRow::scan` and the
//! trajectory's) read the same fields into the same types in one plain pass.
//!
//! It is a fast path and nothing more. A reader answers `None` for anything it does not handle
//! (a field of another shape, a field given twice, deep nesting) or that is not valid JSON, and
//! the caller then parses the row with serde, whose result and errors are the authoritative
//! ones. So a reader may refuse what serde accepts, never the reverse, and what it accepts it
//! reads as serde would: the tests check both on mutated rows.

use std::borrow::Cow;

use serde::Deserialize;

/// Nesting the scanner follows before it leaves the row to serde (whose own limit is 128).
const MAX_DEPTH: usize = 64;

/// A cursor over one JSON text.
pub struct Scanner<'a> {
    text: &'a str,
    at: usize,
    depth: usize,
    /// Where [`Scanner::specials`] was last taken: strings end at the first special byte after
    /// their quote, and one block of 64 bytes serves the several short strings it covers.
    block: usize,
    /// [`specials`] of the 64 bytes from `block`.
    specials: u64,
}

impl<'a> Scanner<'a> {
    pub fn new(text: &'a str) -> Scanner<'a> {
        Scanner {
            text,
            at: 0,
            depth: 0,
            block: 0,
            specials: specials(text.as_bytes()),
        }
    }

    /// `Some` when only whitespace is left, as `serde_json::from_str` requires.
    pub fn finish(mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The next byte past whitespace, not consumed.
    // Rows are mostly written without whitespace: one comparison settles the next byte.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        match self.bytes().get(self.at) {
            Some(&byte) if byte > b' ' => Some(byte),
            _ => self.peek_past_whitespace(),
        }
    }

    fn peek_past_whitespace(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = bytes.get(self.at) {
            self.at += 1;
        }
        bytes.get(self.at).copied()
    }

    /// Consumes `byte` if it is next.
    #[inline(always)]
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.at += usize::from(next);
        next
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.bytes()[self.at..]
            .starts_with(word.as_bytes())
            .then(|| {
                self.at += word.len();
            })
    }

    /// `null` (an `Option` field's `None`), or what `read` reads.
    pub fn nullable<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.peek()? == b'n' {
            self.literal("null").map(|()| None)
        } else {
            read(self).map(Some)
        }
    }

    /// A string, borrowed from the text when it has no escapes.
    // Inlined, as `string_end` is into it: a row has about ninety strings, and the calls'
    // register saves and restores were a tenth of the instructions of a run.
    #[inline(always)]
    pub fn text(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let (inside, escapes) = self.string_inside()?;
        if escapes == Escapes::None {
            Some(Cow::Borrowed(inside))
        } else {
            unescape(inside).map(Cow::Owned)
        }
    }

    /// A string's text, or, when all its escapes are short ones (`\"`, `\\`, `\n`, ...), which
    /// always decode, its inside as written, to be decoded if it is ever read. One with a `\u`
    /// escape is decoded now: serde refuses a lone surrogate as it reads the row.
    #[inline(always)]
    pub fn text_or_escaped(&mut self) -> Option<Scanned<'a>> {
        if self.peek()? != b'"' {
            return None;
        }
        let (inside, escapes) = self.string_inside()?;
        Some(match escapes {
            Escapes::None => Scanned::Text(Cow::Borrowed(inside)),
            Escapes::Short => Scanned::Escaped(inside),
            Escapes::Unicode => Scanned::Text(Cow::Owned(unescape(inside)?)),
        })
    }

    /// The text between the quotes of the string that opens at `self.at`, as written, and the
    /// escapes it has; the scanner moves past it.
    #[inline(always)]
    fn string_inside(&mut self) -> Option<(&'a str, Escapes)> {
        let start = self.at;
        let (end, escapes) = self.string_end()?;
        self.at = end + 1;
        // SAFETY: `start` and `end` are the places of the string's quotes, ASCII bytes of the
        // text and so character boundaries in it, with `start < end`. Slicing with the checks
        // looked at both bytes again, for every key and string of a row.
        #[allow(unsafe_code)]
        let inside = unsafe { self.text.get_unchecked(start + 1..end) };
        Some((inside, escapes))
    }

    /// A string, owned.
    pub fn string(&mut self) -> Option<String> {
        self.text().map(Cow::into_owned)
    }

    /// The closing quote of the string that opens at `self.at`, and whether it has escapes;
    /// `None` for a string serde refuses even unread: an unknown escape, a short `\u`, a raw
    /// control character, no closing quote.
    #[inline(always)]
    fn string_end(&mut self) -> Option<(usize, Escapes)> {
        let bytes = self.bytes();
        let mut at = self.at + 1;
        let mut escapes = Escapes::None;
        loop {
            at = self.special(at)?;
            match bytes[at] {
                b'"' => return Some((at, escapes)),
                b'\\' => {
                    escapes = escapes.max(Escapes::Short);
                    at = match *bytes.get(at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at + 2,
                        b'u' => {
                            escapes = Escapes::Unicode;
                            let hex = bytes.get(at + 2..at + 6)?;
                            hex.iter().all(u8::is_ascii_hexdigit).then_some(at + 6)?
                        }
                        _ => return None,
                    };
                }
                _ => return None,
            }
        }
    }

    /// The first special byte (a quote, a backslash or a control character) from `at` on.
    #[inline(always)]
    fn special(&mut self, mut at: usize) -> Option<usize> {
        loop {
            let offset = at.wrapping_sub(self.block);
            if offset < 64 {
                let ahead = self.specials >> offset;
                if ahead != 0 {
                    return Some(at + ahead.trailing_zeros() as usize);
                }
                at = self.block + 64;
            }
            let rest = self.bytes().get(at..).filter(|rest| !rest.is_empty())?;
            self.block = at;
            self.specials = specials(rest);
        }
    }

    /// Skips one value, checking that it is valid JSON; the text it spans.
    pub fn raw(&mut self) -> Option<&'a str> {
        self.spanned(Scanner::skip)
    }

    /// The text of the value `read` reads, from its first byte past whitespace.
    fn spanned(&mut self, read: impl FnOnce(&mut Self) -> Option<()>) -> Option<&'a str> {
        self.peek()?;
        let start = self.at;
        read(self)?;
        Some(&self.text[start..self.at])
    }

    /// One value read by serde from the text it spans: for fields too rare to scan.
    pub fn serde<T: Deserialize<'a>>(&mut self) -> Option<T> {
        serde_json::from_str(self.raw()?).ok()
    }

    /// Skips one value, checking that it is valid JSON.
    // Most values skipped are strings (ids, dates, timestamps), skipped where they are met;
    // the call to skip the rest costs less than it did for them.
    #[inline(always)]
    pub fn skip(&mut self) -> Option<()> {
        if self.peek()? == b'"' {
            self.at = self.string_end()?.0 + 1;
            Some(())
        } else {
            self.skip_other()
        }
    }

    /// [`Scanner::skip`] for a value that is not a string.
    fn skip_other(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip(),
            b'{' => self.object(|scanner, _| scanner.skip()),
            b'[' => self.list(Scanner::skip),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => self.number(),
        }
    }

    /// `true` or `false`.
    pub fn boolean(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal("true").map(|()| true),
            b'f' => self.literal("false").map(|()| false),
            _ => None,
        }
    }

    /// A number read as serde reads a `u64`: a whole number that is not negative and fits.
    /// Read digit by digit; a sign, a fraction, an exponent or a leading zero before a digit is
    /// left to serde.
    pub fn unsigned(&mut self) -> Option<u64> {
        self.peek()?;
        let bytes = self.bytes();
        let mut at = self.at;
        let mut value = 0u64;
        match bytes[at] {
            b'0' => at += 1,
            b'1'..=b'9' => {
                while let Some(&digit @ b'0'..=b'9') = bytes.get(at) {
                    value = value
                        .checked_mul(10)?
                        .checked_add(u64::from(digit - b'0'))?;
                    at += 1;
                }
            }
            _ => return None,
        }
        if let Some(b'.' | b'e' | b'E' | b'0'..=b'9') = bytes.get(at) {
            return None;
        }
        self.at = at;
        Some(value)
    }

    /// A number read as serde reads an `f64` (correctly rounded, as serde_json's
    /// `float_roundtrip` reads it); `None` past the range of `f64`, which serde refuses.
    pub fn float(&mut self) -> Option<f64> {
        let value: f64 = self.number_text()?.parse().ok()?;
        value.is_finite().then_some(value)
    }

    /// A number's text, checked against JSON's grammar.
    fn number_text(&mut self) -> Option<&'a str> {
        self.spanned(Scanner::number)
    }

    /// Skips a number, checking it against JSON's grammar.
    fn number(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let mut at = self.at + usize::from(bytes[self.at] == b'-');
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at = digits(bytes, at),
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at = some_digits(bytes, at + 1)?;
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            at += usize::from(matches!(bytes.get(at), Some(b'+' | b'-')));
            at = some_digits(bytes, at)?;
        }
        self.at = at;
        Some(())
    }

    /// Reads an object, handing each key to `field`, which reads or skips its value.
    #[inline(always)]
    pub fn object(&mut self, mut field: impl FnMut(&mut Self, &str) -> Option<()>) -> Option<()> {
        self.elements(b'{', b'}', |scanner| {
            let key = scanner.text()?;
            scanner.eat(b':').then_some(())?;
            field(scanner, &key)
        })
    }

    /// Reads a list, calling `item` at each element, which reads or skips it.
    #[inline(always)]
    pub fn list(&mut self, item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.elements(b'[', b']', item)
    }

    /// Reads the comma-separated elements between `open` and `close`, calling `element` at
    /// each.
    #[inline(always)]
    fn elements(
        &mut self,
        open: u8,
        close: u8,
        mut element: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(open) || self.depth == MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        if !self.eat(close) {
            loop {
                element(self)?;
                if !self.eat(b',') {
                    self.eat(close).then_some(())?;
                    break;
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// A list, each element read by `read`.
    pub fn items<T>(&mut self, mut read: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let mut items = Vec::new();
        self.list(|scanner| {
            items.push(read(scanner)?);
            Some(())
        })?;
        Some(items)
    }
}

/// The escapes a string has.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Escapes {
    None,
    /// Only short ones: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`.
    Short,
    /// A `\u` escape, maybe others.
    Unicode,
}

/// A string as [`Scanner::text_or_escaped`] reads it.
#[derive(Clone, Debug)]
pub enum Scanned<'a> {
    Text(Cow<'a, str>),
    /// The inside of a string as written, whose escapes are all short ones; [`decode_short`]
    /// gives its text.
    Escaped(&'a str),
}

/// The text of the inside of a string whose escapes are all short ones (see [`Scanned`]).
pub fn decode_short(inside: &str) -> String {
    // Short escapes always decode (only `\u` ones can be refused); the fallback never runs.
    unescape(inside).unwrap_or_else(|| inside.to_string())
}

/// The text of a string whose escapes [`Scanner::string_end`] checked, decoded; `None` for a
/// lone surrogate, which serde refuses in every string it decodes.
fn unescape(escaped: &str) -> Option<String> {
    // Escaped strings are short (a tool call's arguments, a tool's JSON reply) and dense with
    // escapes. Eight bytes are copied at a time whatever they hold, and the write position moves
    // past the plain ones: no call to copy a run, no test of each byte. The decoded text is never
    // longer than the escaped one, so eight bytes of room past it take the last copy.
    let bytes = escaped.as_bytes();
    let mut text = vec![0; bytes.len() + 8];
    let (mut read, mut written) = (0, 0);
    while read < bytes.len() {
        if let Some(chunk) = bytes.get(read..read + 8) {
            text[written..written + 8].copy_from_slice(chunk);
            let plain = backslash_flags(u64::from_le_bytes(chunk.try_into().unwrap_or_default()))
                .trailing_zeros() as usize
                / 8;
            read += plain;
            written += plain;
            if plain == 8 {
                continue;
            }
        } else if bytes[read] != b'\\' {
            text[written] = bytes[read];
            read += 1;
            written += 1;
            continue;
        }
        read += 2;
        let decoded = match *bytes.get(read - 1)? {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = |from: usize| u32::from_str_radix(escaped.get(from..from + 4)?, 16).ok();
                let decoded = match unit(read)? {
                    high @ 0xD800..=0xDBFF => {
                        let low = escaped[read + 4..]
                            .starts_with("\\u")
                            .then(|| unit(read + 6))??;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return None;
                        }
                        read += 10;
                        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    code => {
                        read += 4;
                        char::from_u32(code)?
                    }
                };
                written += decoded.encode_utf8(&mut text[written..]).len();
                continue;
            }
            // `"`, `\\` and `/` stand for themselves.
            other => other,
        };
        text[written] = decoded;
        written += 1;
    }
    text.truncate(written);
    // SAFETY: the text is the valid UTF-8 of `escaped` with each escape (ASCII, so never inside a
    // character) replaced by the UTF-8 of the character it stands for, lone surrogates refused.
    #[allow(unsafe_code)]
    Some(unsafe { String::from_utf8_unchecked(text) })
}

/// The high bit of each byte of `word` that may be a backslash: only the lowest is sure, a borrow
/// can flag bytes past it.
fn backslash_flags(word: u64) -> u64 {
    const ONES: u64 = u64::MAX / 255;
    let other = word ^ (ONES * u64::from(b'\\'));
    other.wrapping_sub(ONES) & !other & (ONES << 7)
}

/// The end of the run of digits starting at `at`.
fn digits(bytes: &[u8], at: usize) -> usize {
    at + bytes[at..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
}

/// The end of the run of digits starting at `at`, which must not be empty.
fn some_digits(bytes: &[u8], at: usize) -> Option<usize> {
    let end = digits(bytes, at);
    (end > at).then_some(end)
}

/// Whether a byte ends a run of plain string bytes: a quote, a backslash or a control character.
/// In JSON text these are the bytes a string cannot hold as they are, which a writer escapes.
pub(crate) fn is_special(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// The special bytes among the first 64 of `bytes`, bit `i` for byte `i`.
fn specials(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<64>() {
        Some(block) => specials_of(block),
        None => {
            // Padding that is not special leaves no bit past the end.
            let mut block = [b' '; 64];
            block[..bytes.len()].copy_from_slice(bytes);
            specials_of(&block)
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
fn specials_of(block: &[u8; 64]) -> u64 {
    // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 processor has it.
    unsafe { specials_sse2(block) }
}

/// [`specials_of`] sixteen bytes at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
fn specials_sse2(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128, _mm_set_epi64x,
        _mm_set1_epi8,
    };
    let quote = _mm_set1_epi8(b'"' as i8);
    let backslash = _mm_set1_epi8(b'\\' as i8);
    let last_control = _mm_set1_epi8(0x1f);
    let mut mask = 0;
    for (i, chunk) in block.as_chunks::<16>().0.iter().enumerate() {
        let [low, high] = [&chunk[..8], &chunk[8..]]
            .map(|half| i64::from_le_bytes(half.try_into().unwrap_or_default()));
        // The compiler makes this one unaligned load.
        let bytes = _mm_set_epi64x(high, low);
        let found = _mm_or_si128(
            _mm_or_si128(
                _mm_cmpeq_epi8(bytes, quote),
                _mm_cmpeq_epi8(bytes, backslash),
            ),
            // A byte is a control character where the larger of it and 0x1f is 0x1f.
            _mm_cmpeq_epi8(_mm_max_epu8(bytes, last_control), last_control),
        );
        mask |= u64::from(_mm_movemask_epi8(found) as u16) << (16 * i);
    }
    mask
}

#[cfg(not(target_arch = "x86_64"))]
fn specials_of(block: &[u8; 64]) -> u64 {
    block.iter().enumerate().fold(0, |mask, (i, &byte)| {
        mask | u64::from(is_special(byte)) << i
    })
}

/// The object fields met so far: serde's derived readers refuse a field given twice.
#[derive(Default)]
pub struct Seen(u32);

impl Seen {
    /// Stores field number `n`'s value in `slot`; `None` when the field was met before or its
    /// value did not read.
    pub fn set<T>(&mut self, n: u32, slot: &mut T, value: Option<T>) -> Option<()> {
        let bit = 1 << n;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        *slot = value?;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use serde::de::IgnoredAny;

    use super::*;

    /// What the scanner makes of `text` as one skipped value, against serde.
    fn skips(text: &str) -> bool {
        let mut scanner = Scanner::new(text);
        let scanned = scanner.skip().and_then(|()| scanner.finish()).is_some();
        if scanned {
            assert!(
                serde_json::from_str::<IgnoredAny>(text).is_ok(),
                "scanned what serde refuses: {text:?}"
            );
        }
        scanned
    }

    #[test]
    fn valid_values_are_skipped_and_invalid_ones_refused() {
        for valid in [
            "0",
            "-0",
            "12.5e-3",
            "1E+9",
            "-7.25",
            "true",
            "false",
            " null ",
            r#""""#,
            r#""a\"b\\c\/\b\f\n\r\t\u00e9\uD83D""#,
            "\"é 😀\"",
            "[]",
            "[1, [2, {}], {\"a\": [null]}]",
            "{\"k\": \"v\", \"n\": {\"m\": [true, false]}}",
            " \t\r\n{ } \n",
        ] {
            assert!(skips(valid), "{valid:?}");
        }
        for invalid in [
            "",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "1e+",
            "+1",
            "NaN",
            "tru",
            "nul",
            "truex",
            r#""open"#,
            r#""\x""#,
            r#""\u12G4""#,
            r#""\u12""#,
            "\"tab\there\"",
            "\"nul\u{0}\"",
            "[1,]",
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\": 1,}",
            "{1: 2}",
            "{\"a\": 1",
            "[",
            "1 2",
        ] {
            assert!(!skips(invalid), "{invalid:?}");
        }
    }

    #[test]
    fn strings_are_borrowed_unless_escaped_and_decoded_as_serde_decodes_them() {
        fn read(text: &str) -> Option<Cow<'_, str>> {
            Scanner::new(text).text()
        }
        assert!(matches!(
            read(r#""plain é""#),
            Some(Cow::Borrowed("plain é"))
        ));
        assert_eq!(
            read(r#""a\"b\\c\n\u00e9\ud83d\ude00""#).as_deref(),
            Some("a\"b\\c\né😀")
        );
        assert_eq!(read("5"), None);
        // Decoded exactly when serde decodes, to the same text: serde decodes no lone surrogate.
        for quoted in [
            r#""\"\\\/\b\f\n\r\t""#,
            r#""x\u0041\u00e9\u4e2d\uD83D\uDE00y""#,
            r#""\ud83d""#,
            r#""\udc00""#,
            r#""\ud83d\u0041""#,
            r#""\ud83dx""#,
            r#""\u0000""#,
        ] {
            let serde = serde_json::from_str::<String>(quoted).ok();
            assert_eq!(read(quoted).map(Cow::into_owned), serde, "{quoted}");
        }
    }

    #[test]
    fn escapes_are_decoded_at_every_offset_of_a_word() {
        let escapes = [
            r#"\""#,
            r"\\",
            r"\/",
            r"\b",
            r"\f",
            r"\n",
            r"\r",
            r"\t",
            r"\u00e9",
            r"\u4e2d",
            r"\ud83d\ude00",
            r"\u0000",
            r"\ud83d",
            r"\ude00",
            r"\ud83dx",
        ];
        for before in 0..18 {
            for filler in ["a", "é"] {
                for escape in escapes {
                    for after in [0, 1, 7, 8, 9] {
                        let quoted = format!(
                            "\"{}{escape}{}{escape}{}\"",
                            filler.repeat(before),
                            filler.repeat(before % 5),
                            "z".repeat(after)
                        );
                        let serde = serde_json::from_str::<String>(&quoted).ok();
                        let scanned = Scanner::new(&quoted).text().map(Cow::into_owned);
                        assert_eq!(scanned, serde, "{quoted}");
                    }
                }
            }
        }
    }

    #[test]
    fn special_bytes_are_found_in_every_position_of_a_block() {
        let mut block = [b'a'; 64];
        assert_eq!(specials(&block), 0);
        for (i, special) in [b'"', b'\\', 0, b'\n', 0x1f]
            .into_iter()
            .cycle()
            .take(64)
            .enumerate()
        {
            block[i] = special;
            assert_eq!(specials(&block), 1 << i, "byte {special:#x} at {i}");
            block[i] = b'a';
        }
        // Neither the bytes next to the special ones nor non-ASCII bytes are special.
        for byte in [b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xe9, 0xff] {
            assert!(!is_special(byte));
            assert_eq!(specials(&[byte; 64]), 0, "{byte:#x}");
        }
        let all: Vec<u8> = (0..=255).collect();
        for start in 0..all.len() {
            let bytes = &all[start..];
            let expected = bytes
                .iter()
                .take(64)
                .enumerate()
                .fold(0u64, |mask, (i, &b)| mask | u64::from(is_special(b)) << i);
            assert_eq!(specials(bytes), expected, "from byte {start}");
        }
    }

    #[test]
    fn strings_end_where_they_end_across_blocks() {
        for len in [0, 1, 62, 63, 64, 65, 127, 128, 200] {
            for pad in [0, 1, 30, 63] {
                let body = "é".repeat(len / 2) + &"x".repeat(len % 2);
                let text = format!("{}\"{body}\\n{body}\" \"z\"", " ".repeat(pad));
                let mut scanner = Scanner::new(&text);
                assert_eq!(
                    scanner.text().as_deref(),
                    Some(format!("{body}\n{body}").as_str()),
                    "{len} {pad}"
                );
                assert_eq!(scanner.text().as_deref(), Some("z"));
                assert!(scanner.finish().is_some());
            }
        }
    }

    /// What `read` reads of `text`, when that is the whole text.
    fn whole<'a, T>(text: &'a str, read: impl FnOnce(&mut Scanner<'a>) -> Option<T>) -> Option<T> {
        let mut scanner = Scanner::new(text);
        let value = read(&mut scanner)?;
        scanner.finish().map(|()| value)
    }

    #[test]
    fn numbers_and_booleans_are_read_as_serde_reads_them() {
        for text in [
            "0",
            "-0",
            "7",
            "-7",
            "12.5",
            "-0.0",
            "1e3",
            "1E+2",
            "-12.5e-3",
            "0.1",
            "0.30000000000000004",
            "9007199254740993",
            "18446744073709551615",
            "18446744073709551616",
            "123456789012345678901234567890",
            "2.2250738585072011e-308",
            "4.9e-324",
            "1e-400",
            "1.7976931348623157e308",
            "1e309",
            "-1e400",
            "01",
            "1.",
            "true",
            "\"5\"",
        ] {
            let float = whole(text, Scanner::float);
            if let Some(value) = float {
                let serde: f64 = serde_json::from_str(text).unwrap();
                assert_eq!(value.to_bits(), serde.to_bits(), "{text}");
            }
            let serde_float = serde_json::from_str::<f64>(text).ok();
            assert_eq!(float.is_some(), serde_float.is_some(), "{text}");
            assert_eq!(
                whole(text, Scanner::unsigned),
                serde_json::from_str::<u64>(text).ok(),
                "{text}"
            );
        }
        for text in ["true", "false", "null", "tru", "truex", "1", "\"true\""] {
            assert_eq!(
                whole(text, Scanner::boolean),
                serde_json::from_str::<bool>(text).ok(),
                "{text}"
            );
        }
    }

    #[test]
    fn nesting_past_the_limit_is_left_to_serde() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(skips(&nested(MAX_DEPTH)));
        assert!(!skips(&nested(MAX_DEPTH + 1)));
    }

    #[test]
    fn objects_hand_over_each_key_and_fields_are_seen_once() {
        let mut keys = Vec::new();
        let mut scanner = Scanner::new(r#"{"a": 1, "b\u0063": [2], "a": 3}"#);
        scanner
            .object(|scanner, key| {
                keys.push(key.to_string());
                scanner.skip()
            })
            .unwrap();
        assert_eq!(keys, ["a", "bc", "a"]);

        let mut seen = Seen::default();
        let (mut a, mut b) = (0, 0);
        assert_eq!(seen.set(0, &mut a, Some(1)), Some(()));
        assert_eq!(seen.set(3, &mut b, None), None);
        assert_eq!(seen.set(0, &mut a, Some(2)), None);
        assert_eq!(seen.set(3, &mut b, Some(4)), None);
        assert_eq!((a, b), (1, 0));
    }
}
