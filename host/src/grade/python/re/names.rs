//! `\N{...}`: a character by its Unicode name, found as CPython 3.11's `unicodedata.lookup`
//! finds it (Unicode 14.0).

use super::super::unicode_tables::CJK_UNIFIED;

/// Every name and alias of a character (but the two kinds spelled out by rule), sorted, each
/// line `<length of the prefix shared with the previous name>:<rest of the name>;<hex code>`.
const NAMES: &str = include_str!("../unicode_names.txt");

/// The Hangul jamo's short names, by which a syllable's name is spelled: leading consonants,
/// vowels, trailing consonants.
const LEADING: [&str; 19] = [
    "G", "GG", "N", "D", "DD", "R", "M", "B", "BB", "S", "SS", "", "J", "JJ", "C", "K", "T", "P",
    "H",
];
const VOWELS: [&str; 21] = [
    "A", "AE", "YA", "YAE", "EO", "E", "YEO", "YE", "O", "WA", "WAE", "OE", "YO", "U", "WEO", "WE",
    "WI", "YU", "EU", "YI", "I",
];
const TRAILING: [&str; 28] = [
    "", "G", "GG", "GS", "N", "NJ", "NH", "D", "L", "LG", "LM", "LB", "LS", "LT", "LP", "LH", "M",
    "B", "BS", "S", "SS", "NG", "J", "C", "K", "T", "P", "H",
];

/// The character named `name`, or `None` when there is none (a named sequence of several
/// characters is none either, as in Python's `re`). Names match without regard to ASCII case,
/// but for the CJK unified ideographs and the Hangul syllables, which CPython reads only as
/// written in capitals.
pub(super) fn lookup(name: &str) -> Option<char> {
    if let Some(hex) = name.strip_prefix("CJK UNIFIED IDEOGRAPH-") {
        return ideograph(hex);
    }
    if let Some(syllable) = name.strip_prefix("HANGUL SYLLABLE ") {
        return hangul(syllable);
    }
    if !name.is_ascii() {
        return None;
    }
    let wanted = name.to_ascii_uppercase();
    let mut current = String::new();
    for line in NAMES.lines() {
        let (shared, rest) = line.split_once(':')?;
        let (suffix, code) = rest.split_once(';')?;
        current.truncate(shared.parse().ok()?);
        current.push_str(suffix);
        match current.as_str().cmp(&wanted) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => {
                return char::from_u32(u32::from_str_radix(code, 16).ok()?);
            }
            std::cmp::Ordering::Greater => return None,
        }
    }
    None
}

/// `CJK UNIFIED IDEOGRAPH-<hex>`: four or five capital hex digits naming an ideograph.
fn ideograph(hex: &str) -> Option<char> {
    if !matches!(hex.len(), 4 | 5) || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F')) {
        return None;
    }
    let cp = u32::from_str_radix(hex, 16).ok()?;
    CJK_UNIFIED
        .iter()
        .any(|&(lo, hi)| (lo..=hi).contains(&cp))
        .then(|| char::from_u32(cp))
        .flatten()
}

/// A Hangul syllable by its jamo: each part is the longest short name its column has at that
/// point, as CPython reads it, and the three must spell the whole name.
fn hangul(name: &str) -> Option<char> {
    let longest = |rest: &str, column: &[&str]| {
        column
            .iter()
            .enumerate()
            .filter(|(_, jamo)| rest.starts_with(**jamo))
            .max_by_key(|(_, jamo)| jamo.len())
            .map(|(index, jamo)| (index as u32, jamo.len()))
    };
    let (leading, used) = longest(name, &LEADING)?;
    let rest = &name[used..];
    let (vowel, used) = longest(rest, &VOWELS)?;
    let rest = &rest[used..];
    let (trailing, used) = longest(rest, &TRAILING)?;
    if used != rest.len() {
        return None;
    }
    let index = (leading * VOWELS.len() as u32 + vowel) * TRAILING.len() as u32 + trailing;
    char::from_u32(0xAC00 + index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_is_found() {
        let mut current = String::new();
        let mut count = 0;
        let mut last = (String::new(), None);
        for line in NAMES.lines() {
            let (shared, rest) = line.split_once(':').unwrap();
            let (suffix, code) = rest.split_once(';').unwrap();
            current.truncate(shared.parse().unwrap());
            current.push_str(suffix);
            let want = char::from_u32(u32::from_str_radix(code, 16).unwrap());
            // Every 97th name and the last, in any case: a full pass would be quadratic.
            if count % 97 == 0 {
                assert_eq!(lookup(&current), want, "{current}");
                assert_eq!(lookup(&current.to_lowercase()), want, "{current}");
            }
            count += 1;
            last = (current.clone(), want);
        }
        assert_eq!(lookup(&last.0), last.1);
        assert!(count > 34_000, "{count} names");
    }

    #[test]
    fn names_by_rule_and_aliases_follow_cpython() {
        assert_eq!(lookup("LATIN SMALL LETTER E WITH ACUTE"), Some('é'));
        assert_eq!(lookup("latin small letter e with acute"), Some('é'));
        assert_eq!(lookup("LINE FEED"), Some('\n'));
        assert_eq!(lookup("nbsp"), Some('\u{a0}'));
        assert_eq!(lookup("BYTE ORDER MARK"), Some('\u{feff}'));
        assert_eq!(lookup("CJK UNIFIED IDEOGRAPH-4E00"), Some('一'));
        assert_eq!(lookup("CJK UNIFIED IDEOGRAPH-04E00"), Some('一'));
        assert_eq!(lookup("CJK UNIFIED IDEOGRAPH-4e00"), None);
        assert_eq!(lookup("cjk unified ideograph-4E00"), None);
        assert_eq!(lookup("CJK UNIFIED IDEOGRAPH-0041"), None);
        assert_eq!(lookup("cjk compatibility ideograph-f900"), Some('\u{f900}'));
        assert_eq!(lookup("HANGUL SYLLABLE GA"), Some('\u{ac00}'));
        assert_eq!(lookup("HANGUL SYLLABLE GAG"), Some('\u{ac01}'));
        assert_eq!(lookup("HANGUL SYLLABLE A"), Some('\u{c544}'));
        assert_eq!(lookup("HANGUL SYLLABLE HIH"), Some('\u{d7a3}'));
        assert_eq!(lookup("HANGUL SYLLABLE"), None);
        assert_eq!(lookup("hangul syllable ga"), None);
        // A named sequence is several characters; Unicode 15's characters are unnamed in 14.0.
        assert_eq!(lookup("LATIN CAPITAL LETTER A WITH MACRON AND GRAVE"), None);
        assert_eq!(lookup("GARAY CAPITAL LETTER A"), None);
        assert_eq!(lookup("TANGUT IDEOGRAPH-17000"), None);
        assert_eq!(lookup(" LATIN SMALL LETTER E WITH ACUTE"), None);
        assert_eq!(lookup("ÉCLAIR"), None);
        assert_eq!(lookup(""), None);
    }
}
