//! The characters of Python's `re` at CPython 3.11's Unicode 14.0: the categories `\w`, `\d`,
//! `\s`, and the characters IGNORECASE matches for one another.
//!
//! The engine's Unicode tables are newer: its `\p{L}` has letters assigned since, and its case
//! folding pairs characters Python's lowercase-based matching does not (and misses the dotted
//! and dotless i). Categories are written as the engine's classes corrected by the differences,
//! which are few; case-insensitivity is spelled out as classes of CPython's case variants, so the
//! engine never folds case itself.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, HirKind};

use super::super::unicode_tables as tables;
use super::{parse, push_literal};

/// A category as a class in the engine's syntax, and its negation.
pub(super) struct Category {
    pub(super) class: String,
    pub(super) negated: String,
}

/// `\w`: `str.isalnum()` or `_`.
pub(super) static WORD: LazyLock<Category> =
    LazyLock::new(|| Category::new("\\p{L}\\p{N}_", &tables::WORD));
/// `\d`: `str.isdecimal()`.
pub(super) static DIGIT: LazyLock<Category> =
    LazyLock::new(|| Category::new("\\p{Nd}", &tables::DIGIT));
/// `\s`: `str.isspace()`.
pub(super) static SPACE: LazyLock<Category> =
    LazyLock::new(|| Category::new("\\s\\x1C-\\x1F", &tables::SPACE));

impl Category {
    /// The class of the characters of `table`, written as the engine's class of `members`
    /// (the inside of a `[...]`) with the characters it lacks added and those it has too many
    /// taken away.
    fn new(members: &str, table: &[(u32, u32)]) -> Category {
        let python = class_of(table);
        let engine = match parse(&format!("[{members}]")).map(|hir| hir.into_kind()) {
            Some(HirKind::Class(Class::Unicode(class))) => class,
            _ => ClassUnicode::empty(),
        };
        let mut extra = python.clone();
        extra.difference(&engine);
        let mut surplus = engine;
        surplus.difference(&python);
        let mut inside = format!("{members}{}", ranges_text(&extra));
        if !surplus.ranges().is_empty() {
            inside = format!("[{inside}]--[{}]", ranges_text(&surplus));
        }
        Category {
            class: format!("[{inside}]"),
            negated: format!("[^{inside}]"),
        }
    }
}

fn class_of(table: &[(u32, u32)]) -> ClassUnicode {
    ClassUnicode::new(table.iter().filter_map(|&(lo, hi)| {
        Some(ClassUnicodeRange::new(
            char::from_u32(lo)?,
            char::from_u32(hi)?,
        ))
    }))
}

fn ranges_text(class: &ClassUnicode) -> String {
    let mut out = String::new();
    for range in class.ranges() {
        out.push_str(&format!("\\x{{{:X}}}", u32::from(range.start())));
        if range.end() != range.start() {
            out.push_str(&format!("-\\x{{{:X}}}", u32::from(range.end())));
        }
    }
    out
}

/// For each character IGNORECASE pairs with others, its group in
/// [`tables::IGNORECASE_GROUPS`].
static GROUP_OF: LazyLock<HashMap<u32, usize>> = LazyLock::new(|| {
    let mut of = HashMap::new();
    for (index, group) in tables::IGNORECASE_GROUPS.iter().enumerate() {
        for &cp in *group {
            of.insert(cp, index);
        }
    }
    of
});

/// The characters IGNORECASE matches `c` with, `c` among them, or `None` when only `c` itself.
/// With ASCII, only ASCII letters have variants (`re.ASCII | re.IGNORECASE`).
pub(super) fn variants(c: char, ascii: bool) -> Option<Vec<char>> {
    if ascii {
        return c
            .is_ascii_alphabetic()
            .then(|| vec![c.to_ascii_uppercase(), c.to_ascii_lowercase()]);
    }
    let group = tables::IGNORECASE_GROUPS[*GROUP_OF.get(&u32::from(c))?];
    Some(group.iter().filter_map(|&cp| char::from_u32(cp)).collect())
}

/// The case variants a class of `ranges` matches under IGNORECASE beyond its own members:
/// CPython matches a character when its lowercase is a member's lowercase (or one of its extra
/// cases), which is the members' groups together.
pub(super) fn closure(ranges: &[(char, char)], ascii: bool) -> Vec<char> {
    let mut extra = Vec::new();
    if ascii {
        for &(lo, hi) in ranges {
            for c in ('A'..='Z').chain('a'..='z') {
                if (lo..=hi).contains(&c) {
                    extra.push(if c.is_ascii_uppercase() {
                        c.to_ascii_lowercase()
                    } else {
                        c.to_ascii_uppercase()
                    });
                }
            }
        }
        return extra;
    }
    /// A range wider than this is checked against every group rather than char by char.
    const NARROW: u32 = 256;
    for &(lo, hi) in ranges {
        if u32::from(hi) - u32::from(lo) < NARROW {
            for c in lo..=hi {
                extra.extend(variants(c, false).unwrap_or_default());
            }
        } else {
            for group in &tables::IGNORECASE_GROUPS {
                if group
                    .iter()
                    .any(|&cp| (u32::from(lo)..=u32::from(hi)).contains(&cp))
                {
                    extra.extend(group.iter().filter_map(|&cp| char::from_u32(cp)));
                }
            }
        }
    }
    extra
}

/// `c`, or under IGNORECASE the class of its variants, in the engine's syntax.
pub(super) fn literal(c: char, ignorecase: bool, ascii: bool) -> String {
    let mut out = String::new();
    match ignorecase.then(|| variants(c, ascii)).flatten() {
        Some(variants) => {
            out.push('[');
            for v in variants {
                push_literal(&mut out, v);
            }
            out.push(']');
        }
        None => push_literal(&mut out, c),
    }
    out
}
