//! Python's Unicode categories in the plain dialects, written as stand-ins the parser reads at
//! once and replaced in the parsed tree by the categories' classes, parsed once.
//!
//! A category's class (`\w` is `str.isalnum()` or `_` at Unicode 14.0) is long text, and
//! parsing it again for every pattern that has `\w`, `\d` or `\s` cost more than the rest of
//! the pattern. A stand-in is a class of two noncharacters, `[\x{FDD0}\x{FDD1}]` for `\w`; the
//! translator writes user characters as themselves, never in this spelling. A pattern whose
//! parsed tree has a stand-in's class where its text has no stand-in (it names the same
//! noncharacters itself), or lost one (the parser merged it into a larger class), is parsed
//! again with the categories spelled out, so a stand-in never changes what a pattern means.

use std::sync::LazyLock;

use regex_syntax::hir::{
    Capture, Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Repetition,
};

use super::chars::{self, Category};

/// A category's class in the engine's syntax, its stand-in and the class the stand-in parses
/// to, and the category's parsed class.
struct StandIn {
    category: &'static str,
    text: String,
    placeholder: ClassUnicode,
    class: ClassUnicode,
}

/// The first of the noncharacters stand-ins are made of, two for each category.
const FIRST_MARK: u32 = 0xFDD0;

static STAND_INS: LazyLock<Vec<StandIn>> = LazyLock::new(|| {
    let categories: [&'static Category; 3] = [&chars::WORD, &chars::DIGIT, &chars::SPACE];
    let texts = categories
        .into_iter()
        .flat_map(|category| [category.class.as_str(), category.negated.as_str()]);
    texts
        .zip(0u32..)
        .filter_map(|(category, index)| {
            let mark = |offset| char::from_u32(FIRST_MARK + 2 * index + offset);
            let (lo, hi) = (mark(0)?, mark(1)?);
            Some(StandIn {
                category,
                text: format!("[\\x{{{:X}}}\\x{{{:X}}}]", u32::from(lo), u32::from(hi)),
                placeholder: ClassUnicode::new([
                    ClassUnicodeRange::new(lo, lo),
                    ClassUnicodeRange::new(hi, hi),
                ]),
                class: unicode_class(super::parse(category)?)?,
            })
        })
        .collect()
});

fn unicode_class(hir: Hir) -> Option<ClassUnicode> {
    match hir.into_kind() {
        HirKind::Class(Class::Unicode(class)) => Some(class),
        _ => None,
    }
}

/// The stand-in for `class`, a category's class text, or `None` when it is not one (an ASCII
/// category, or one cut down to a text's characters).
pub(super) fn of(class: &str) -> Option<&'static str> {
    STAND_INS
        .iter()
        .find(|stand_in| stand_in.category == class)
        .map(|stand_in| stand_in.text.as_str())
}

/// The plain dialect `pattern`, parsed, with its stand-ins replaced by their categories: the
/// tree parsing it with the categories spelled out gives.
pub(super) fn parse(pattern: &str) -> Option<Hir> {
    let written = written(pattern);
    if written == 0 {
        return super::parse(pattern);
    }
    replaced(pattern, written).or_else(|| super::parse(&spelled_out(pattern)))
}

/// The number of stand-ins in `pattern`'s text.
fn written(pattern: &str) -> usize {
    STAND_INS
        .iter()
        .map(|stand_in| pattern.matches(stand_in.text.as_str()).count())
        .sum()
}

/// The parsed `pattern` with its stand-ins replaced, or `None` when the tree does not have
/// the `written` stand-ins its text has, each a class of its own.
fn replaced(pattern: &str, written: usize) -> Option<Hir> {
    let mut replaced = 0;
    let hir = map_classes(&super::parse(pattern)?, &mut |class| {
        let stand_in = STAND_INS
            .iter()
            .find(|stand_in| stand_in.placeholder == *class)?;
        replaced += 1;
        Some(stand_in.class.clone())
    });
    (replaced == written).then_some(hir)
}

/// `pattern` with its stand-ins replaced by the categories' class text.
fn spelled_out(pattern: &str) -> String {
    STAND_INS
        .iter()
        .fold(pattern.to_owned(), |pattern, stand_in| {
            pattern.replace(stand_in.text.as_str(), stand_in.category)
        })
}

/// `hir` with each Unicode class `change` gives a new one for replaced by it, built again
/// with the parser's own constructors.
pub(super) fn map_classes(
    hir: &Hir,
    change: &mut impl FnMut(&ClassUnicode) -> Option<ClassUnicode>,
) -> Hir {
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => match change(class) {
            Some(class) => Hir::class(Class::Unicode(class)),
            None => hir.clone(),
        },
        HirKind::Repetition(repetition) => Hir::repetition(Repetition {
            min: repetition.min,
            max: repetition.max,
            greedy: repetition.greedy,
            sub: Box::new(map_classes(&repetition.sub, change)),
        }),
        HirKind::Capture(capture) => Hir::capture(Capture {
            index: capture.index,
            name: capture.name.clone(),
            sub: Box::new(map_classes(&capture.sub, change)),
        }),
        HirKind::Concat(items) => {
            Hir::concat(items.iter().map(|h| map_classes(h, change)).collect())
        }
        HirKind::Alternation(items) => {
            Hir::alternation(items.iter().map(|h| map_classes(h, change)).collect())
        }
        HirKind::Empty
        | HirKind::Literal(_)
        | HirKind::Class(Class::Bytes(_))
        | HirKind::Look(_) => hir.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::{Regex, Translator};
    use super::*;

    /// Every recorded pattern's plain and relaxed dialects, translated with the flags it was
    /// recorded under.
    fn recorded_plain_dialects() -> Vec<String> {
        let cases: Vec<Value> =
            serde_json::from_str(include_str!("../../../../tests/data/python-re-cases.json"))
                .unwrap();
        let grammar = include_str!("../../../../tests/data/python-re-grammar.jsonl")
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap());
        cases
            .into_iter()
            .chain(grammar)
            .filter_map(|case| {
                let pattern = case["pattern"].as_str()?;
                let flags = case["flags"].as_u64().unwrap_or(0) as u32;
                let translated = Translator::run(pattern, flags).ok()?;
                Some([translated.plain, translated.relaxed])
            })
            .flatten()
            .flatten()
            .collect()
    }

    #[test]
    fn a_parsed_stand_in_is_the_tree_of_the_category_spelled_out() {
        let dialects = recorded_plain_dialects();
        let mut with_stand_ins = 0;
        let mut replaced_in_place = 0;
        for plain in &dialects {
            let spelled = spelled_out(plain);
            if written(plain) > 0 {
                with_stand_ins += 1;
                replaced_in_place += replaced(plain, written(plain)).is_some() as usize;
            }
            assert_eq!(parse(plain), super::super::parse(&spelled), "{plain}");
        }
        // Most recorded patterns with a category take the stand-in's path, not the fallback.
        assert!(
            with_stand_ins > 400,
            "{with_stand_ins} of {}",
            dialects.len()
        );
        assert!(
            replaced_in_place > 400,
            "{replaced_in_place} of {with_stand_ins}"
        );
    }

    #[test]
    fn a_pattern_naming_the_noncharacters_keeps_its_meaning() {
        // The pattern's own class of U+FDD0 and U+FDD1 is the stand-in's class; it must stay
        // those two characters, and the categories beside it must still be found.
        let pattern = "[\u{FDD0}\u{FDD1}]\\w|\\d|\\s";
        let plain = Translator::run(pattern, 0).unwrap().plain.unwrap();
        assert_eq!(parse(&plain), super::super::parse(&spelled_out(&plain)));
        let full = Regex::new(pattern, 0).unwrap();
        for (text, found) in [
            ("\u{FDD1}é", true),
            ("aé", false),
            ("x٣", true),
            ("\u{1F}", true),
            ("\u{FDD0}\u{FDD2}", false),
        ] {
            assert_eq!(full.search(text).unwrap().is_some(), found, "{text:?}");
            for _ in 0..2 {
                assert_eq!(
                    Regex::search_once(pattern, 0, text).unwrap(),
                    found,
                    "{text:?}"
                );
            }
        }
    }
}
