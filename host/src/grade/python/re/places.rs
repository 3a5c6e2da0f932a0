//! Whether a parsed pattern matches in one text, without building an automaton: for a pattern
//! searched once, compiling it (even to the lean engine's automaton, its classes first cut to the
//! text's characters) cost several times the search.
//!
//! The answer is worked out on the pattern's tree: for each part, the set of places in the text
//! where it can end, from the set of places where it can start. A literal or a class moves each
//! place on past what it matches, an assertion keeps the places where it holds, a concatenation
//! chains its parts, an alternation unites them, and a repetition repeats its part until no new
//! place turns up. The pattern matches when a place is left at the end, starting from every
//! place of the text. The work is bounded: a long text or a pattern that repeats much gives up,
//! and the automaton decides instead.

use regex_automata::util::look::{Look, LookMatcher};
use regex_syntax::hir::{Class, Hir, HirKind};

use super::contains;

/// The longest text searched this way; a longer one goes to the automaton, whose work grows
/// with the text alone.
const LONGEST_TEXT: usize = 4096;

/// The most work a search may do, in places moved and words of place sets touched: about what
/// building the automaton for a short pattern costs.
const MOST_WORK: usize = 1 << 15;

/// The most states a pattern may compile to for its text (see [`states`]): a pattern over the
/// automaton's size limit is an error, which the automaton, not this search, reports.
const MOST_STATES: usize = 1 << 15;

/// Whether `hir` matches somewhere in `text`, as the engine would say; `None` when the search
/// would cost more than [`MOST_WORK`], the text is longer than [`LONGEST_TEXT`] or the pattern
/// may be too large to compile.
pub(super) fn is_match(hir: &Hir, text: &str) -> Option<bool> {
    if text.len() > LONGEST_TEXT || states(hir, distinct_chars(text)) > MOST_STATES {
        return None;
    }
    let mut search = Search {
        text,
        looks: LookMatcher::new(),
        work_left: MOST_WORK,
    };
    let mut starts = Places::none(text.len());
    for (at, _) in text.char_indices() {
        starts.insert(at);
    }
    starts.insert(text.len());
    Some(!search.ends(hir, &starts)?.is_empty())
}

/// At least as many as the distinct characters of `text`: the ASCII ones counted once, the
/// others as often as they occur.
fn distinct_chars(text: &str) -> usize {
    let mut ascii = 0u128;
    let mut others = 0;
    for c in text.chars() {
        if c.is_ascii() {
            ascii |= 1 << u32::from(c);
        } else {
            others += 1;
        }
    }
    ascii.count_ones() as usize + others
}

/// At least as many states as the automaton of `hir` with its classes cut to a text of
/// `distinct` characters has: a cut class has at most one range a character, each a few
/// states of UTF-8, and a repetition is compiled once for each of its copies.
fn states(hir: &Hir, distinct: usize) -> usize {
    let sum = |items: &[Hir]| {
        items
            .iter()
            .fold(1, |n: usize, item| n.saturating_add(states(item, distinct)))
    };
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(literal) => literal.0.len() + 1,
        HirKind::Class(Class::Unicode(_)) => distinct.saturating_mul(16) + 1,
        HirKind::Class(Class::Bytes(class)) => class.ranges().len() + 1,
        HirKind::Capture(capture) => states(&capture.sub, distinct).saturating_add(2),
        HirKind::Concat(items) | HirKind::Alternation(items) => sum(items),
        HirKind::Repetition(repetition) => {
            let copies = repetition.max.unwrap_or(repetition.min + 1).max(1) as usize;
            states(&repetition.sub, distinct)
                .saturating_mul(copies)
                .saturating_add(1)
        }
    }
}

/// Byte offsets into a text, `0..=len`, as a set of bits.
#[derive(Clone)]
struct Places(Vec<u64>);

impl Places {
    fn none(len: usize) -> Places {
        Places(vec![0; len / 64 + 1])
    }

    fn insert(&mut self, at: usize) {
        self.0[at / 64] |= 1 << (at % 64);
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|word| *word == 0)
    }

    fn len(&self) -> usize {
        self.0.iter().map(|word| word.count_ones() as usize).sum()
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(index, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    index * 64 + bit
                })
            })
        })
    }

    fn add(&mut self, other: &Places) {
        for (word, more) in self.0.iter_mut().zip(&other.0) {
            *word |= more;
        }
    }

    /// The places of `self` that are not in `other`.
    fn without(&self, other: &Places) -> Places {
        Places(self.0.iter().zip(&other.0).map(|(a, b)| a & !b).collect())
    }
}

struct Search<'t> {
    text: &'t str,
    looks: LookMatcher,
    work_left: usize,
}

impl Search<'_> {
    /// Takes `work` from what is left; `None` once it runs out.
    fn spend(&mut self, work: usize) -> Option<()> {
        self.work_left = self.work_left.checked_sub(work)?;
        Some(())
    }

    /// Where `hir` can end when it starts at any of `from`.
    fn ends(&mut self, hir: &Hir, from: &Places) -> Option<Places> {
        self.spend(from.0.len() + from.len())?;
        let bytes = self.text.as_bytes();
        Some(match hir.kind() {
            HirKind::Empty => from.clone(),
            HirKind::Literal(literal) => self.moved(from, |at| {
                bytes[at..]
                    .starts_with(&literal.0)
                    .then(|| at + literal.0.len())
            }),
            HirKind::Class(Class::Unicode(class)) => self.moved(from, |at| {
                let c = self.text.get(at..)?.chars().next()?;
                contains(class, c).then(|| at + c.len_utf8())
            }),
            HirKind::Class(Class::Bytes(class)) => self.moved(from, |at| {
                let b = *bytes.get(at)?;
                let mut ranges = class.ranges().iter();
                ranges
                    .any(|range| (range.start()..=range.end()).contains(&b))
                    .then_some(at + 1)
            }),
            HirKind::Look(look) => {
                // The two crates spell the same assertions with the same bits.
                let look = Look::from_repr(look.as_repr())?;
                self.moved(from, |at| self.looks.matches(look, bytes, at).then_some(at))
            }
            HirKind::Capture(capture) => self.ends(&capture.sub, from)?,
            HirKind::Concat(items) => {
                let mut reached = from.clone();
                for item in items {
                    if reached.is_empty() {
                        break;
                    }
                    reached = self.ends(item, &reached)?;
                }
                reached
            }
            HirKind::Alternation(items) => {
                let mut ends = Places::none(self.text.len());
                for item in items {
                    ends.add(&self.ends(item, from)?);
                }
                ends
            }
            HirKind::Repetition(repetition) => {
                let mut reached = from.clone();
                for _ in 0..repetition.min {
                    if reached.is_empty() {
                        return Some(reached);
                    }
                    reached = self.ends(&repetition.sub, &reached)?;
                }
                // Past the minimum, each round goes on from the places the round before found
                // first: a place found again was gone on from already, with more rounds left.
                let mut rounds_left = repetition.max.map(|max| max - repetition.min);
                let mut found = reached.clone();
                let mut ends = reached;
                while rounds_left != Some(0) && !found.is_empty() {
                    let next = self.ends(&repetition.sub, &found)?;
                    found = next.without(&ends);
                    ends.add(&found);
                    rounds_left = rounds_left.map(|n| n - 1);
                }
                ends
            }
        })
    }

    /// The places `step` takes each of `from` to, where it takes one (a literal, a class or an
    /// assertion that holds there).
    fn moved(&self, from: &Places, step: impl Fn(usize) -> Option<usize>) -> Places {
        let mut ends = Places::none(self.text.len());
        for end in from.iter().filter_map(step) {
            ends.insert(end);
        }
        ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::nfa::thompson::{self, WhichCaptures, pikevm::PikeVM};
    use regex_automata::util::syntax;

    fn hir(pattern: &str) -> Hir {
        let config = syntax::Config::new().utf8(true).unicode(true);
        syntax::parse_with(pattern, &config).unwrap()
    }

    fn automaton(hir: &Hir, text: &str) -> bool {
        let config = thompson::Config::new().which_captures(WhichCaptures::None);
        let nfa = thompson::Compiler::new()
            .configure(config)
            .build_from_hir(hir)
            .unwrap();
        let engine = PikeVM::new_from_nfa(nfa).unwrap();
        engine.is_match(&mut engine.create_cache(), text)
    }

    /// Every pattern on every text: the places give the automaton's answer.
    #[test]
    fn places_agree_with_the_automaton() {
        let patterns = [
            "",
            "a",
            "abc",
            "(?i)paris",
            r"(?i)\bcapital of (?:[^\n])+ is Paris\b|zq12",
            r"(?i)\bcapital of (?:[^\n])+ is São Tomé\b",
            "^a",
            "a$",
            "^$",
            "(?m)^b$",
            "(?m)a$",
            r"\bb",
            r"\Bb",
            r"a\b",
            r"\b",
            r"\B",
            r"(?-u:\b)x",
            "a*",
            "a+b",
            "(a|ab)(c|bcd)(d*)",
            "(?:a|b)*c",
            "x{2,3}",
            "x{2}y",
            "x{0,2}?y",
            "(?:a*)*b",
            "(?:a?){3}a{3}",
            r"[\p{L}\p{N}_]+",
            r"\d{3} \* \d+ = \d+$",
            "°C",
            r"-?\d+°C and [\p{L}\p{N}_]+",
            "é",
            "[^a]",
            r"(?s).",
            "(?:)",
            "(?:a|)b",
            r"[^\n]+$",
            r"(?-u:[\x00-\x7f])+z",
        ];
        let texts = [
            "",
            "a",
            "b",
            "abc",
            "ab",
            "abcd",
            "xxy",
            "xxxy",
            "xy",
            "aaab",
            "aaaaaa",
            "PARIS",
            "The capital of France is Paris.",
            "the CAPITAL of São Tomé and Príncipe is São Tomé",
            "zq12",
            "a\nb\n",
            "b\na",
            "420 * 261 = 109620",
            "420 * 261 = 109620\n",
            "It is -1°C and rainy in Quito.",
            "é",
            "ée",
            "\n",
            "éz",
            "abz",
            "_٣",
        ];
        let mut failures = Vec::new();
        for pattern in patterns {
            let hir = hir(pattern);
            for text in texts {
                let want = automaton(&hir, text);
                let got = is_match(&hir, text);
                if got != Some(want) {
                    failures.push(format!("{pattern:?} on {text:?}: {got:?}, want {want}"));
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_pattern_that_may_be_too_large_to_compile_is_left_to_the_automaton() {
        // The automaton refuses it, and that error is the answer.
        assert_eq!(is_match(&hir(r"x(\w{1000}){1000}"), "x"), None);
        assert_eq!(is_match(&hir(r"x(?:a{1000}){100}"), "x"), None);
        let small = hir(r"x(?:a{10}){10}");
        assert_eq!(is_match(&small, "x"), Some(false));
        assert_eq!(
            is_match(&small, &format!("x{}", "a".repeat(100))),
            Some(true)
        );
    }

    #[test]
    fn a_search_that_would_cost_too_much_is_left_to_the_automaton() {
        let long = "a".repeat(LONGEST_TEXT + 1);
        assert_eq!(is_match(&hir("a"), &long), None);
        // Each alternative starts from every place of the text.
        let alternatives = hir("aa|bb|cc|dd|ee|ff|gg|hh|ii|jj|kk|ll|mm|nn|oo|pp|qq|rr|ss|tt");
        let text = "ab".repeat(1000);
        assert_eq!(is_match(&alternatives, &text), None);
        assert_eq!(is_match(&alternatives, "xxtt"), Some(true));
    }
}
