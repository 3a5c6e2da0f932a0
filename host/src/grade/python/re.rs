//! Python `re` patterns on a Rust backtracking engine.
//!
//! Ground truths and grader configs hold patterns written for Python's `re`. A small tokenizer
//! reads the Python syntax and writes an equivalent `fancy-regex` pattern, spelling out every
//! construct whose meaning differs between the two (`$`, `\Z`, `\s`, `\w`, `{`, group names,
//! flag scopes, character-class set operators), so the engine sees no ambiguity. Patterns come
//! from data, so compiled size and backtracking are bounded and reported as errors.
//!
//! A pattern searched once ([`Regex::search_once`], a pattern per dataset row) needs only a
//! yes or no, and building the full engine (captures, reverse automata, prefilters) costs far
//! more than the search. When the pattern needs no backtracking, the tokenizer also writes it
//! for the lean engine, which answers on the parsed pattern itself for a short text and builds an
//! automaton for that one answer otherwise; when it does, the tokenizer writes it without
//! its assertions too, whose literal prefixes tell where in a text the backtracking search can
//! start, or that no match can.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::rc::Rc;
use std::sync::{Arc, LazyLock, OnceLock};

use super::repr_str;
use memchr::memmem;
use regex_automata::meta;
use regex_automata::nfa::thompson::{self, WhichCaptures, pikevm::PikeVM};
use regex_automata::util::syntax;
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, literal};

mod chars;
#[cfg(test)]
mod grammar;
mod names;
mod places;
mod stand_in;

/// `re.IGNORECASE`.
pub const IGNORECASE: u32 = 2;
const LOCALE: u32 = 4;
/// `re.MULTILINE`.
pub const MULTILINE: u32 = 8;
/// `re.DOTALL`.
pub const DOTALL: u32 = 16;
/// `re.UNICODE`: the default for text patterns, accepted and ignored.
const UNICODE: u32 = 32;
/// `re.VERBOSE`.
pub const VERBOSE: u32 = 64;
/// `re.ASCII`.
pub const ASCII: u32 = 256;
const KNOWN_FLAGS: u32 = IGNORECASE | MULTILINE | DOTALL | UNICODE | VERBOSE | ASCII;

/// Backtracking steps one search may take before it gives up (the engine's default).
const BACKTRACK_LIMIT: usize = 1_000_000;
/// Compiled-size limits, in bytes, for the automata and for the backtracking program.
const SIZE_LIMIT: usize = 2 << 20;
const PROGRAM_LIMIT: usize = 100_000;
/// Python has no nesting limit, but a deeper pattern is not a real grader's pattern and the
/// tokenizer recurses per level.
const MAX_NESTING: usize = 200;
const MAX_PATTERN_CHARS: usize = 100_000;
const CACHE_CAPACITY: usize = 256;

/// Why a pattern cannot be compiled or a search could not finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegexError {
    /// The pattern is not valid Python `re` syntax (or uses a construct gavel does not support).
    #[error("{message} at position {position}")]
    Syntax { message: String, position: usize },
    /// The engine refused the translated pattern.
    #[error("{0}")]
    Engine(String),
    #[error(
        "unsupported regex flags {0}: use a sum of IGNORECASE (2), MULTILINE (8), DOTALL (16), \
         VERBOSE (64), ASCII (256)"
    )]
    Flags(u32),
    #[error("pattern is too large to compile ({0})")]
    TooLarge(String),
    #[error(
        "pattern is too costly on this text: the search gave up after {BACKTRACK_LIMIT} \
         backtracking steps"
    )]
    TooCostly,
    /// Python's `IndexError: no such group`.
    #[error("no such group: {0}")]
    NoSuchGroup(String),
}

/// A compiled Python `re` pattern. Cloning is cheap.
#[derive(Clone)]
pub struct Regex(Arc<Compiled>);

struct Compiled {
    pattern: String,
    flags: u32,
    engine: fancy_regex::Regex,
    groups: usize,
    names: Vec<(String, usize)>,
}

impl fmt::Debug for Regex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Regex")
            .field("pattern", &self.0.pattern)
            .field("flags", &self.0.flags)
            .finish()
    }
}

/// Regexes compiled from the same pattern with the same flags match alike.
impl PartialEq for Regex {
    fn eq(&self, other: &Regex) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.pattern == other.0.pattern && self.0.flags == other.0.flags)
    }
}

/// A successful search: the whole match and its groups.
pub struct Match<'t> {
    captures: fancy_regex::Captures<'t, str>,
    regex: Regex,
}

/// `re.findall`'s result: with zero or one group, one text per match (the whole match or the
/// group); with two or more, one tuple of group texts per match. A group that did not take part
/// is `""`, as in Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Findall<'t> {
    Texts(Vec<&'t str>),
    Tuples(Vec<Vec<&'t str>>),
}

impl Findall<'_> {
    pub fn is_empty(&self) -> bool {
        match self {
            Findall::Texts(items) => items.is_empty(),
            Findall::Tuples(items) => items.is_empty(),
        }
    }
}

/// A pattern that matches one fixed text, optionally at the start (`^`) or end (`$`).
struct AnchoredLiteral {
    text: String,
    start: bool,
    end: bool,
}

impl AnchoredLiteral {
    const METACHARACTERS: &[char] = &[
        '.', '^', '$', '*', '+', '?', '{', '}', '[', ']', '\\', '|', '(', ')',
    ];

    fn parse(pattern: &str) -> Option<AnchoredLiteral> {
        let (start, rest) = match pattern.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        let mut text = String::with_capacity(rest.len());
        let mut end = false;
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                // An escaped ASCII punctuation character stands for itself; `\d`, `\n`, `\b`...
                // have meanings of their own.
                '\\' => match chars.next() {
                    Some(escaped) if escaped.is_ascii_punctuation() => text.push(escaped),
                    _ => return None,
                },
                '$' if chars.as_str().is_empty() => end = true,
                c if Self::METACHARACTERS.contains(&c) => return None,
                c => text.push(c),
            }
        }
        Some(AnchoredLiteral { text, start, end })
    }

    /// Python's `^` (start of the text) and `$` (end of the text, or before a final newline),
    /// without MULTILINE.
    fn is_match(&self, text: &str) -> bool {
        let ends_here = |t: &str| t.ends_with(&self.text);
        let is_it = |t: &str| t == self.text;
        match (self.start, self.end) {
            (false, false) => text.contains(&self.text),
            (true, false) => text.starts_with(&self.text),
            (true, true) => is_it(text) || text.strip_suffix('\n').is_some_and(is_it),
            (false, true) => ends_here(text) || text.strip_suffix('\n').is_some_and(ends_here),
        }
    }
}

/// A pattern that needs no backtracking, parsed for the automata engines. Searched once, it is
/// compiled for that one text: its character classes keep only the characters the text has,
/// which cannot change the answer and spares compiling large Unicode classes (`\w`, `\d`, `.`)
/// into automata, the bulk of the cost of a pattern used once.
struct Plain {
    hir: Hir,
    boundaries: Boundaries,
    /// The automaton for every text, built on the pattern's second search (`None`: over the
    /// size limit).
    compiled: OnceLock<Option<meta::Regex>>,
}

/// Characters that are word characters for Python or for the engine's `\b`, not both.
static WORD_MISMATCH: LazyLock<Option<ClassUnicode>> = LazyLock::new(|| {
    match syntax::parse(&format!(r"[\w~~{}]", chars::WORD.class))
        .ok()?
        .into_kind()
    {
        HirKind::Class(Class::Unicode(class)) => Some(class),
        _ => None,
    }
});

impl Plain {
    /// The parsed plain dialect of a translation, or `None` when the pattern needs fancy-regex
    /// or the parser refuses it (fancy-regex then decides, with its own errors).
    fn new(translated: &Translated) -> Option<Plain> {
        let hir = stand_in::parse(translated.plain.as_deref()?)?;
        Some(Plain {
            hir,
            boundaries: translated.boundaries,
            compiled: OnceLock::new(),
        })
    }

    /// Whether the pattern matches in `text`, or `None` when this engine cannot tell it
    /// exactly or refuses the compiled pattern (over the size limit): the full engine decides.
    /// A pattern searched for the first time is worked out on its tree ([`places::is_match`])
    /// or, where that would cost too much, compiled for this text alone; a `repeated` one is
    /// compiled for every text, once.
    fn is_match(&self, text: &str, repeated: bool) -> Option<bool> {
        if repeated {
            let agree = || self.boundaries_agree(text, || !Plain::words_agree_in(text));
            if !agree() {
                return None;
            }
            let engine = self.compiled.get_or_init(|| self.compile());
            return engine.as_ref().map(|engine| engine.is_match(text));
        }
        if !self.boundaries_agree(text, || !Plain::words_agree_in(text)) {
            return None;
        }
        if let Some(found) = places::is_match(&self.hir, text) {
            return Some(found);
        }
        let alphabet = alphabet(text);
        let config = thompson::Config::new()
            .which_captures(WhichCaptures::None)
            .nfa_size_limit(Some(SIZE_LIMIT));
        let nfa = thompson::Compiler::new()
            .configure(config)
            .build_from_hir(&restrict(&self.hir, &alphabet))
            .ok()?;
        let engine = PikeVM::new_from_nfa(nfa).ok()?;
        Some(engine.is_match(&mut engine.create_cache(), text))
    }

    /// The automaton for every text: the engine's own `\b`, which is Python's on the texts
    /// [`Plain::boundaries_agree`] accepts, costs a fraction of spelling Python's out with
    /// lookarounds for the backtracking engine.
    fn compile(&self) -> Option<meta::Regex> {
        let config = meta::Config::new()
            .which_captures(WhichCaptures::None)
            .nfa_size_limit(Some(SIZE_LIMIT));
        meta::Builder::new()
            .configure(config)
            .build_from_hir(&self.hir)
            .ok()
    }

    /// Whether the engine's `\b` and `\B` are Python's on `text`. The engine's word
    /// characters differ (marks and connector punctuation are, `²` is not), so they agree only
    /// on a text without the differing ones (`words_differ` tells); and Python's `\B`, unlike
    /// the engine's, never matches in an empty text.
    fn boundaries_agree(&self, text: &str, words_differ: impl FnOnce() -> bool) -> bool {
        match self.boundaries {
            Boundaries::None => true,
            Boundaries::Negated if text.is_empty() => false,
            Boundaries::Word | Boundaries::Negated => !words_differ(),
        }
    }

    /// Whether the engine's word characters are Python's among the characters of `text`. They
    /// differ on no ASCII character, and the others are looked up one by one: building the
    /// text's alphabet to intersect it cost more than the search it was for.
    fn words_agree_in(text: &str) -> bool {
        WORD_MISMATCH.as_ref().is_some_and(|mismatch| {
            !text
                .chars()
                .filter(|c| !c.is_ascii())
                .any(|c| contains(mismatch, c))
        })
    }
}

/// A pattern in the engine's syntax, as fancy-regex configures it for the parts it delegates.
fn parse(pattern: &str) -> Option<Hir> {
    let config = syntax::Config::new().utf8(true).unicode(true);
    syntax::parse_with(pattern, &config).ok()
}

/// The characters of `text`, as a class.
fn alphabet(text: &str) -> ClassUnicode {
    ClassUnicode::new(text.chars().map(|c| ClassUnicodeRange::new(c, c)))
}

/// `hir` with every character class cut down to the characters of `alphabet`.
fn restrict(hir: &Hir, alphabet: &ClassUnicode) -> Hir {
    stand_in::map_classes(hir, &mut |class| {
        let mut class = class.clone();
        class.intersect(alphabet);
        Some(class)
    })
}

/// The texts every match of a pattern begins with, read from its relaxed dialect (see
/// [`Output`]): the first of them in a text is where the backtracking engine's search of it can
/// start, which spares the engine the text before, and the whole search when none occurs.
struct Prefixes(Vec<memmem::Finder<'static>>);

impl Prefixes {
    /// More prefixes than this are searched for by the engine itself.
    const MOST: usize = 8;

    /// The prefixes of `relaxed`, a relaxed dialect; `None` when it has no such texts (a match
    /// may begin anywhere, with anything) or too many.
    fn new(relaxed: &str) -> Option<Prefixes> {
        let hir = stand_in::parse(relaxed)?;
        let prefixes = literal::Extractor::new()
            .kind(literal::ExtractKind::Prefix)
            .extract(&hir);
        let literals = prefixes.literals()?;
        if literals.is_empty()
            || literals.len() > Self::MOST
            || literals.iter().any(|literal| literal.is_empty())
        {
            return None;
        }
        Some(Prefixes(
            literals
                .iter()
                .map(|literal| memmem::Finder::new(literal.as_bytes()).into_owned())
                .collect(),
        ))
    }

    /// The first position at which a match of the pattern in `text` can start, or `None` when
    /// no match can.
    fn earliest(&self, text: &str) -> Option<usize> {
        self.0
            .iter()
            .filter_map(|prefix| prefix.find(text.as_bytes()))
            .min()
    }
}

/// A backtracking pattern's relaxed dialect, whose [`Prefixes`] are read on the pattern's
/// second search: a pattern searched once never needs them.
struct Relaxed {
    pattern: String,
    prefixes: OnceLock<Option<Prefixes>>,
}

impl Relaxed {
    fn prefixes(&self) -> Option<&Prefixes> {
        self.prefixes
            .get_or_init(|| Prefixes::new(&self.pattern))
            .as_ref()
    }
}

/// What [`Regex::search_once`] keeps of a pattern.
#[derive(Clone)]
enum Matcher {
    Plain(Arc<Plain>),
    /// A pattern only the backtracking engine runs: compiled for its first text alone, and in
    /// full (through [`Regex::cached`]) once it is searched again, from the first of its
    /// [`Prefixes`] if it has them.
    Full(Option<Arc<Relaxed>>),
}

impl Matcher {
    fn new(pattern: &str, flags: u32) -> Result<Matcher, RegexError> {
        let translated = Translator::run(pattern, flags)?;
        Ok(match Plain::new(&translated) {
            Some(plain) => Matcher::Plain(Arc::new(plain)),
            None => Matcher::Full(translated.relaxed.map(|pattern| {
                Arc::new(Relaxed {
                    pattern,
                    prefixes: OnceLock::new(),
                })
            })),
        })
    }
}

/// Compiled patterns, shared by every thread: a pattern takes a few million instructions to
/// compile and its program is large, so each is built once per process, not once per thread.
static REGEXES: LazyLock<Shared<Regex>> = LazyLock::new(Shared::new);

/// Patterns compiled for the texts of a few characters beyond ASCII ([`Regex::narrowed`]).
static NARROWED: LazyLock<Shared<Regex>> = LazyLock::new(Shared::new);

/// The most characters beyond ASCII a text may have for [`Regex::narrowed`].
const NARROWED_MOST: usize = 8;

thread_local! {
    /// How each pattern is searched: cheap to decide, so kept per thread without locking.
    static MATCHERS: RefCell<Cache<Matcher>> = RefCell::new(Cache::new());
}

/// A [`Cache`] the threads share.
struct Shared<T>(std::sync::Mutex<Cache<T>>);

impl<T: Clone> Shared<T> {
    fn new() -> Shared<T> {
        Shared(std::sync::Mutex::new(Cache::new()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache<T>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The cached result for the pattern, or `make`'s, cached. The lock is not held while
    /// `make` runs, so a slow compile holds up no other thread; two threads that miss the same
    /// pattern at once both compile it, and the first kept stays.
    fn get_or_make(
        &self,
        pattern: &str,
        flags: u32,
        make: impl FnOnce() -> Result<T, RegexError>,
    ) -> Result<T, RegexError> {
        if let Some(cached) = self.lock().get(pattern, flags) {
            return cached;
        }
        let made = make();
        let mut cache = self.lock();
        match cache.get(pattern, flags) {
            Some(first) => first,
            None => {
                cache.insert(pattern, flags, made.clone());
                made
            }
        }
    }
}

/// Compiled patterns by source text, evicted oldest first.
struct Cache<T> {
    entries: HashMap<String, (u32, Result<T, RegexError>)>,
    order: VecDeque<String>,
}

impl<T: Clone> Cache<T> {
    fn new() -> Cache<T> {
        Cache {
            entries: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    fn get(&self, pattern: &str, flags: u32) -> Option<Result<T, RegexError>> {
        self.entries
            .get(pattern)
            .filter(|(cached_flags, _)| *cached_flags == flags)
            .map(|(_, result)| result.clone())
    }

    fn insert(&mut self, pattern: &str, flags: u32, result: Result<T, RegexError>) {
        if self.entries.len() >= CACHE_CAPACITY
            && let Some(oldest) = self.order.pop_front()
        {
            self.entries.remove(&oldest);
        }
        if self
            .entries
            .insert(pattern.to_string(), (flags, result))
            .is_none()
        {
            self.order.push_back(pattern.to_string());
        }
    }
}

impl Regex {
    /// Compiles a Python `re` pattern with Python flag bits (`re.compile(pattern, flags)`).
    pub fn new(pattern: &str, flags: u32) -> Result<Regex, RegexError> {
        Regex::from_translation(pattern, flags, Translator::run(pattern, flags)?)
    }

    fn from_translation(
        pattern: &str,
        flags: u32,
        translated: Translated,
    ) -> Result<Regex, RegexError> {
        let engine = fancy_regex::RegexBuilder::new(&translated.pattern)
            .backtrack_limit(BACKTRACK_LIMIT)
            .delegate_size_limit(SIZE_LIMIT)
            .delegate_dfa_size_limit(SIZE_LIMIT)
            .max_prog_size(PROGRAM_LIMIT)
            .build()
            .map_err(engine_error)?;
        Ok(Regex(Arc::new(Compiled {
            pattern: pattern.to_string(),
            flags,
            engine,
            groups: translated.groups,
            names: translated.names,
        })))
    }

    /// Whether `re.search(pattern, text, flags)` finds a match, for a pattern used once: a
    /// pattern that is plain text (most ground truths), possibly with escaped punctuation and
    /// `^`/`$` anchors, is tested as text without compiling anything; a pattern that needs no
    /// backtracking runs on a lean automaton; the rest on the full engine, whose character
    /// classes are cut to the text's characters the first time. Compiled patterns are kept as
    /// in [`Regex::cached`].
    pub fn search_once(pattern: &str, flags: u32, text: &str) -> Result<bool, RegexError> {
        // UNICODE is Python's default for str patterns; other flags change literal matching
        // (IGNORECASE), the anchors (MULTILINE) or the pattern's reading (VERBOSE), so they take
        // the compiled path.
        if flags & !UNICODE == 0
            && let Some(anchored) = AnchoredLiteral::parse(pattern)
        {
            return Ok(anchored.is_match(text));
        }
        let (matcher, repeated) = match MATCHERS.with(|cache| cache.borrow().get(pattern, flags)) {
            Some(cached) => (cached?, true),
            None => {
                let matcher = Matcher::new(pattern, flags);
                MATCHERS.with(|cache| cache.borrow_mut().insert(pattern, flags, matcher.clone()));
                (matcher?, false)
            }
        };
        match matcher {
            Matcher::Plain(plain) => match plain.is_match(text, repeated) {
                Some(found) => Ok(found),
                None => Regex::cached(pattern, flags)?.is_match(text),
            },
            Matcher::Full(relaxed) if repeated => {
                let from = match relaxed.as_deref().and_then(Relaxed::prefixes) {
                    Some(prefixes) => match prefixes.earliest(text) {
                        Some(from) => from,
                        None => return Ok(false),
                    },
                    None => 0,
                };
                match Regex::narrowed(pattern, flags, text) {
                    Some(narrowed) => narrowed,
                    None => Regex::cached(pattern, flags),
                }?
                .is_match_from(text, from)
            }
            Matcher::Full(_) => {
                let translated = Translator::for_text(pattern, flags, text)?;
                Regex::from_translation(pattern, flags, translated)?.is_match(text)
            }
        }
    }

    /// The pattern compiled for the texts whose characters are ASCII or those of `text` that
    /// are not, when `text` has few of those: its categories (`\w`, `\d`, ...) cut to those
    /// characters, as [`Translator::for_text`] cuts them to one text's, give the same answer on
    /// every such text. A Unicode `\w` compiled in full took ten times the instructions of the
    /// rest of a pattern, and most texts searched again share their non-ASCII characters
    /// (none, or a `°` or an accent). `None` for a text with more of them than
    /// [`NARROWED_MOST`]: few other texts would share such a set, and the caller compiles the
    /// pattern once for every text instead.
    fn narrowed(pattern: &str, flags: u32, text: &str) -> Option<Result<Regex, RegexError>> {
        // Collected as they come, and given up at one too many: a long text of many characters
        // beyond ASCII costs no more than its first few of them.
        let mut beyond: Vec<char> = Vec::new();
        if !text.is_ascii() {
            for c in text.chars().filter(|c| !c.is_ascii()) {
                if !beyond.contains(&c) {
                    if beyond.len() == NARROWED_MOST {
                        return None;
                    }
                    beyond.push(c);
                }
            }
            beyond.sort_unstable();
        }
        // The key: the characters beyond ASCII, then NUL (which is ASCII, so never one of them),
        // then the pattern.
        let mut key: String = beyond.iter().collect();
        key.push('\0');
        key.push_str(pattern);
        Some(NARROWED.get_or_make(&key, flags, || {
            let alphabet = (0..=0x7f).map(char::from).chain(beyond).collect();
            let translated = Translator::translate(pattern, flags, Some(alphabet))?;
            Regex::from_translation(pattern, flags, translated)
        }))
    }

    /// [`Regex::new`] through a small cache the threads share, for patterns that repeat across
    /// samples (a ground-truth pattern is compiled once, not once per sample).
    pub fn cached(pattern: &str, flags: u32) -> Result<Regex, RegexError> {
        REGEXES.get_or_make(pattern, flags, || Regex::new(pattern, flags))
    }

    /// The Python source of the pattern.
    pub fn as_str(&self) -> &str {
        &self.0.pattern
    }

    /// Number of capture groups (Python's `Pattern.groups`).
    pub fn groups(&self) -> usize {
        self.0.groups
    }

    /// Whether `re.search` finds a match.
    pub fn is_match(&self, text: &str) -> Result<bool, RegexError> {
        self.is_match_from(text, 0)
    }

    /// Whether `re.search` finds a match that starts at byte `from` or later; lookbehinds
    /// still see the text before it.
    fn is_match_from(&self, text: &str, from: usize) -> Result<bool, RegexError> {
        let input = fancy_regex::RegexInput::new(text).from_pos(from);
        self.0.engine.is_match_input(input).map_err(engine_error)
    }

    /// `re.search`: the leftmost match anywhere in `text`.
    pub fn search<'t>(&self, text: &'t str) -> Result<Option<Match<'t>>, RegexError> {
        self.search_from(text, 0)
    }

    fn search_from<'t>(&self, text: &'t str, pos: usize) -> Result<Option<Match<'t>>, RegexError> {
        Ok(self
            .0
            .engine
            .captures_from_pos(text, pos)
            .map_err(engine_error)?
            .map(|captures| Match {
                captures,
                regex: self.clone(),
            }))
    }

    /// `re.findall`: every non-overlapping match, left to right. As in Python 3.7+, an empty
    /// match may directly follow a non-empty one; after an empty match the next one must not be
    /// empty at the same position (Python would then try a non-empty match at that position
    /// first; this moves on one character instead, which differs only for patterns whose
    /// alternatives match both empty and non-empty text at one place).
    pub fn findall<'t>(&self, text: &'t str) -> Result<Findall<'t>, RegexError> {
        let groups = self.groups();
        let mut texts = Vec::new();
        let mut tuples = Vec::new();
        let mut pos = 0;
        let mut after_empty = false;
        while pos <= text.len() {
            let Some(found) = self.search_from(text, pos)? else {
                break;
            };
            let (start, end) = found.span();
            if after_empty && start == pos && end == pos {
                match text[pos..].chars().next() {
                    Some(c) => {
                        pos += c.len_utf8();
                        after_empty = false;
                        continue;
                    }
                    None => break,
                }
            }
            let group = |i| found.captures.get(i).map_or("", |m| m.as_str());
            match groups {
                0 => texts.push(group(0)),
                1 => texts.push(group(1)),
                n => tuples.push((1..=n).map(group).collect()),
            }
            after_empty = start == end;
            pos = end;
        }
        Ok(if groups > 1 {
            Findall::Tuples(tuples)
        } else {
            Findall::Texts(texts)
        })
    }
}

impl<'t> Match<'t> {
    fn span(&self) -> (usize, usize) {
        self.captures
            .get(0)
            .map_or((0, 0), |m| (m.start(), m.end()))
    }

    /// The whole match.
    pub fn as_str(&self) -> &'t str {
        self.captures.get(0).map_or("", |m| m.as_str())
    }

    /// `Match.group(index)`: `Ok(None)` for a group that did not take part in the match.
    pub fn group(&self, index: usize) -> Result<Option<&'t str>, RegexError> {
        if index > self.regex.groups() {
            return Err(RegexError::NoSuchGroup(index.to_string()));
        }
        Ok(self.captures.get(index).map(|m| m.as_str()))
    }

    /// `Match.group(name)` for a `(?P<name>...)` group.
    pub fn named_group(&self, name: &str) -> Result<Option<&'t str>, RegexError> {
        let index = self
            .regex
            .0
            .names
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, i)| i)
            .ok_or_else(|| RegexError::NoSuchGroup(format!("{name:?}")))?;
        self.group(index)
    }
}

fn engine_error(error: fancy_regex::Error) -> RegexError {
    use fancy_regex::{CompileError, Error, RuntimeError};
    match error {
        Error::RuntimeError(RuntimeError::BacktrackLimitExceeded | RuntimeError::StackOverflow) => {
            RegexError::TooCostly
        }
        Error::CompileError(inner) => match *inner {
            CompileError::LookBehindNotConst | CompileError::VariableLookBehindRequiresFeature => {
                RegexError::Engine("look-behind requires a fixed-width pattern".to_string())
            }
            CompileError::InnerError(e) => RegexError::TooLarge(e.to_string()),
            CompileError::PatternTooComplex => {
                RegexError::TooLarge(format!("over {PROGRAM_LIMIT} instructions"))
            }
            other => RegexError::Engine(other.to_string()),
        },
        other => RegexError::Engine(other.to_string()),
    }
}

/// The Python flags in force at one point of the pattern.
#[derive(Debug, Clone, Copy)]
struct Flags {
    ignorecase: bool,
    multiline: bool,
    dotall: bool,
    verbose: bool,
    ascii: bool,
}

impl Flags {
    fn from_bits(bits: u32) -> Flags {
        Flags {
            ignorecase: bits & IGNORECASE != 0,
            multiline: bits & MULTILINE != 0,
            dotall: bits & DOTALL != 0,
            verbose: bits & VERBOSE != 0,
            ascii: bits & ASCII != 0,
        }
    }

    fn set(&mut self, flag: char, on: bool) {
        match flag {
            'i' => self.ignorecase = on,
            'm' => self.multiline = on,
            's' => self.dotall = on,
            'x' => self.verbose = on,
            'a' => self.ascii = on,
            _ => {}
        }
    }
}

/// What the last item of a sequence is, for Python's quantifier rules.
#[derive(Debug, Clone, Copy)]
enum Last {
    /// Nothing yet: a quantifier here has nothing to repeat.
    Nothing,
    /// An anchor or boundary: Python refuses to repeat it.
    Anchor,
    /// A repeatable item whose translation starts here.
    Item(Mark),
    /// A lookaround, whose translation starts here.
    Lookaround(Mark),
    /// A quantified item: another quantifier is a "multiple repeat".
    Repeat,
}

/// A class escape or category inside or outside `[...]`.
enum ClassItem {
    Char(char),
    /// A translated category (`\d`, `\w`, ...), written as a class or a class escape.
    Category(Cow<'static, str>),
}

/// The word boundaries a pattern has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Boundaries {
    None,
    /// `\b` only.
    Word,
    /// `\B`, and perhaps `\b`.
    Negated,
}

struct Translated {
    pattern: String,
    /// The pattern for the plain automata engines, valid for `is_match` only.
    plain: Option<String>,
    /// The pattern for the plain automata engines with every assertion the backtracking engine
    /// alone can test left out (see [`Output`]).
    relaxed: Option<String>,
    /// The word boundaries of the pattern, whose plain spelling follows the engine's notion of
    /// a word character (see [`Plain::boundaries_agree`]).
    boundaries: Boundaries,
    groups: usize,
    names: Vec<(String, usize)>,
}

struct Translator {
    src: Vec<char>,
    pos: usize,
    out: Output,
    flags: Flags,
    boundaries: Boundaries,
    groups: usize,
    open: Vec<usize>,
    names: Vec<(String, usize)>,
    /// Conditional group references to check once every group is known.
    conditions: Vec<(usize, usize)>,
    /// The characters of the one text the translation is for (see [`Translator::for_text`]).
    alphabet: Option<Vec<char>>,
    /// The width of each closed group, for the width of a back-reference to it.
    widths: HashMap<usize, Width>,
    /// Inside a look-behind: the number of groups opened before the outermost one.
    lookbehind_groups: Option<usize>,
    /// Whether a look-behind is of variable width: CPython refuses it once the whole pattern
    /// has parsed.
    variable_lookbehind: bool,
    /// Whether UNICODE is given for the whole pattern, which ASCII cannot be with.
    unicode: bool,
}

type Parse<T> = Result<T, RegexError>;

/// `_sre.MAXREPEAT`: an unbounded repeat's count, and the cap on widths.
const MAXREPEAT: u64 = u32::MAX as u64;

/// The least and most characters a part of a pattern matches, as CPython's `getwidth` counts
/// them (a look-behind must have one width).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Width {
    lo: u64,
    hi: u64,
}

impl Width {
    const ZERO: Width = Width { lo: 0, hi: 0 };
    const ONE: Width = Width { lo: 1, hi: 1 };

    fn capped(lo: u64, hi: u64) -> Width {
        Width {
            lo: lo.min(MAXREPEAT - 1),
            hi: hi.min(MAXREPEAT),
        }
    }

    /// This part followed by `next`.
    fn then(self, next: Width) -> Width {
        Width::capped(
            self.lo.saturating_add(next.lo),
            self.hi.saturating_add(next.hi),
        )
    }

    /// This part or `other`.
    fn or(self, other: Width) -> Width {
        Width::capped(self.lo.min(other.lo), self.hi.max(other.hi))
    }

    /// This part repeated `min` to `max` times.
    fn times(self, (min, max): (u64, u64)) -> Width {
        Width::capped(self.lo.saturating_mul(min), self.hi.saturating_mul(max))
    }
}

/// The counts of a quantifier as [`Translator::brace_quantifier`] or the parser wrote it.
fn bounds(quantifier: &str) -> (u64, u64) {
    match quantifier {
        "*" => (0, MAXREPEAT),
        "+" => (1, MAXREPEAT),
        "?" => (0, 1),
        braces => {
            let inside = braces.trim_start_matches('{').trim_end_matches('}');
            let number = |text: &str| text.parse().unwrap_or(MAXREPEAT);
            match inside.split_once(',') {
                None => (number(inside), number(inside)),
                Some((lo, "")) => (number(lo), MAXREPEAT),
                Some((lo, hi)) => (number(lo), number(hi)),
            }
        }
    }
}

fn syntax(message: impl Into<String>, position: usize) -> RegexError {
    RegexError::Syntax {
        message: message.into(),
        position,
    }
}

const VERBOSE_SPACE: &[char] = &[' ', '\t', '\n', '\r', '\x0b', '\x0c'];
/// A class no character is in.
const NO_CHARACTER: &str = "[^\\x00-\\x{10FFFF}]";
const ASCII_WORD: &str = "[0-9A-Za-z_]";
const REGEX_META: &[char] = &[
    '\\', '.', '+', '*', '?', '(', ')', '|', '[', ']', '{', '}', '^', '$', '#', '&', '-', '~',
];

fn push_literal(out: &mut String, c: char) {
    if REGEX_META.contains(&c) {
        out.push('\\');
    }
    out.push(c);
}

/// Where an item starts in the dialects of an [`Output`].
#[derive(Debug, Clone, Copy)]
struct Mark {
    fancy: usize,
    plain: usize,
    relaxed: usize,
}

/// The translation of one item in the dialects of an [`Output`], cut off to be quantified.
struct Piece {
    fancy: String,
    plain: Option<String>,
    relaxed: Option<String>,
}

/// The translation in three dialects: one for `fancy-regex`; one for the plain automata
/// engines, kept while the pattern needs nothing they lack; and a relaxed one for them, which
/// leaves out the assertions they cannot test as Python does (lookarounds, `$`, `\b`, `\B`)
/// and makes atomic groups plain ones. The plain dialect only has to answer whether a match
/// exists, which lets it spell a final `$` as text it consumes. The relaxed dialect matches
/// wherever the pattern does, and perhaps elsewhere: where it finds nothing, nor does the
/// pattern, and no match of the pattern starts before its first match.
struct Output {
    fancy: String,
    /// `None` once the pattern uses lookaround, a backreference, an atomic group or a
    /// conditional.
    plain: Option<String>,
    /// `None` once the pattern uses a backreference or a conditional.
    relaxed: Option<String>,
}

impl Output {
    fn new(capacity: usize) -> Output {
        Output {
            fancy: String::with_capacity(capacity),
            plain: Some(String::with_capacity(capacity)),
            relaxed: Some(String::with_capacity(capacity)),
        }
    }

    fn plain_dialects(&mut self) -> impl Iterator<Item = &mut String> {
        self.plain.iter_mut().chain(self.relaxed.iter_mut())
    }

    fn push_str(&mut self, text: &str) {
        self.push_split(text, text);
    }

    fn push(&mut self, c: char) {
        self.fancy.push(c);
        self.plain_dialects().for_each(|out| out.push(c));
    }

    /// Text that differs between the backtracking dialect and the plain ones.
    fn push_split(&mut self, fancy: &str, plain: &str) {
        self.fancy.push_str(fancy);
        self.plain_dialects().for_each(|out| out.push_str(plain));
    }

    /// A category's class, written in the plain dialects as its stand-in (see [`stand_in`]).
    fn push_category(&mut self, class: &str) {
        self.push_split(class, stand_in::of(class).unwrap_or(class));
    }

    /// A construct only the backtracking engine has, which the relaxed dialect cannot leave
    /// out either.
    fn push_fancy(&mut self, fancy: &str) {
        self.fancy.push_str(fancy);
        self.plain = None;
        self.relaxed = None;
    }

    /// An assertion (it matches no text), spelled `plain` for the plain automata or `None`
    /// when they lack it; the relaxed dialect leaves it out.
    fn push_assertion(&mut self, fancy: &str, plain: Option<&str>) {
        self.fancy.push_str(fancy);
        match (&mut self.plain, plain) {
            (Some(out), Some(plain)) => out.push_str(plain),
            (out, _) => *out = None,
        }
    }

    /// The opening of an atomic group, a plain group in the relaxed dialect.
    fn push_atomic(&mut self) {
        self.fancy.push_str("(?>");
        self.plain = None;
        if let Some(relaxed) = &mut self.relaxed {
            relaxed.push_str("(?:");
        }
    }

    /// Leaves out of the relaxed dialect what was written since `at`: a lookaround's body.
    fn unwrite_relaxed(&mut self, at: Mark) {
        if let Some(relaxed) = &mut self.relaxed {
            relaxed.truncate(at.relaxed);
        }
    }

    fn mark(&self) -> Mark {
        Mark {
            fancy: self.fancy.len(),
            plain: self.plain.as_ref().map_or(0, String::len),
            relaxed: self.relaxed.as_ref().map_or(0, String::len),
        }
    }

    fn split_off(&mut self, at: Mark) -> Piece {
        Piece {
            fancy: self.fancy.split_off(at.fancy),
            plain: self.plain.as_mut().map(|p| p.split_off(at.plain)),
            relaxed: self.relaxed.as_mut().map(|r| r.split_off(at.relaxed)),
        }
    }

    fn push_piece(&mut self, piece: &Piece) {
        self.fancy.push_str(&piece.fancy);
        for (out, part) in [
            (&mut self.plain, &piece.plain),
            (&mut self.relaxed, &piece.relaxed),
        ] {
            if let Some(out) = out {
                out.push_str(part.as_deref().unwrap_or_default());
            }
        }
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

impl Translator {
    fn run(pattern: &str, flags: u32) -> Parse<Translated> {
        Translator::translate(pattern, flags, None)
    }

    /// The translation for a search of `text` alone: each category (`\d`, `\w`, ..., and the
    /// word characters of `\b`) is written as the characters of `text` it holds. The answer on
    /// `text` is the same, and the engine compiles a few characters instead of Unicode tables,
    /// most of the cost of compiling a pattern that is used once.
    fn for_text(pattern: &str, flags: u32, text: &str) -> Parse<Translated> {
        let mut alphabet: Vec<char> = text.chars().collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        Translator::translate(pattern, flags, Some(alphabet))
    }

    fn translate(pattern: &str, flags: u32, alphabet: Option<Vec<char>>) -> Parse<Translated> {
        if flags & !KNOWN_FLAGS != 0 || flags & LOCALE != 0 {
            return Err(RegexError::Flags(flags));
        }
        let src: Vec<char> = pattern.chars().collect();
        if src.len() > MAX_PATTERN_CHARS {
            return Err(RegexError::TooLarge(format!(
                "{} characters, limit {MAX_PATTERN_CHARS}",
                src.len()
            )));
        }
        let mut t = Translator {
            src,
            pos: 0,
            out: Output::new(pattern.len() + 16),
            flags: Flags::from_bits(flags),
            boundaries: Boundaries::None,
            groups: 0,
            open: Vec::new(),
            names: Vec::new(),
            conditions: Vec::new(),
            alphabet,
            widths: HashMap::new(),
            lookbehind_groups: None,
            variable_lookbehind: false,
            unicode: flags & UNICODE != 0,
        };
        t.alternation(0)?;
        if t.pos < t.src.len() {
            // Only a `)` stops the top level early.
            return Err(syntax("unbalanced parenthesis", t.pos));
        }
        if let Some(&(group, position)) = t.conditions.iter().find(|(g, _)| *g > t.groups) {
            return Err(syntax(format!("invalid group reference {group}"), position));
        }
        if t.variable_lookbehind {
            // CPython's compiler, not its parser, refuses it: the message has no position.
            return Err(RegexError::Engine(
                "look-behind requires fixed-width pattern".to_string(),
            ));
        }
        if t.flags.ascii && t.unicode {
            return Err(syntax("ASCII and UNICODE flags are incompatible", 0));
        }
        Ok(Translated {
            pattern: t.out.fancy,
            plain: t.out.plain,
            relaxed: t.out.relaxed,
            boundaries: t.boundaries,
            groups: t.groups,
            names: t.names,
        })
    }

    fn peek(&self) -> Option<char> {
        self.src.get(self.pos).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }

    fn skip_verbose(&mut self) {
        if !self.flags.verbose {
            return;
        }
        while let Some(c) = self.peek() {
            if VERBOSE_SPACE.contains(&c) {
                self.pos += 1;
            } else if c == '#' {
                while let Some(c) = self.next() {
                    if c == '\n' {
                        break;
                    }
                }
            } else {
                break;
            }
        }
    }

    /// Branches separated by `|`, up to a `)` or the end.
    fn alternation(&mut self, depth: usize) -> Parse<Width> {
        let mut first = depth == 0;
        let mut width = self.sequence(depth, first)?;
        loop {
            first = false;
            if self.eat('|') {
                self.out.push('|');
                width = width.or(self.sequence(depth, first)?);
            } else {
                return Ok(width);
            }
        }
    }

    /// Items up to a `|`, a `)` or the end.
    fn sequence(&mut self, depth: usize, first_branch: bool) -> Parse<Width> {
        if depth > MAX_NESTING {
            return Err(RegexError::TooLarge(format!(
                "groups nested deeper than {MAX_NESTING}"
            )));
        }
        let mut last = Last::Nothing;
        // The width of the items so far, and of the last one, which a quantifier multiplies.
        let (mut width, mut before_last, mut last_width) = (Width::ZERO, Width::ZERO, Width::ZERO);
        // The plain dialect spells `$` as text it consumes, which is right only when nothing
        // follows in the whole pattern: the `$` ends a top-level branch.
        let mut after_dollar = false;
        loop {
            self.skip_verbose();
            let Some(c) = self.peek() else {
                return Ok(width);
            };
            if after_dollar && c != '|' {
                self.out.plain = None;
            }
            let start = self.pos;
            let mut item = |w: Width| {
                before_last = width;
                last_width = w;
                width = width.then(w);
            };
            match c {
                '|' | ')' => return Ok(width),
                '*' | '+' | '?' => {
                    self.pos += 1;
                    let quantifier = c.to_string();
                    last = self.quantify(last, &quantifier, start)?;
                    width = before_last.then(last_width.times(bounds(&quantifier)));
                }
                '{' => match self.brace_quantifier()? {
                    Some(quantifier) => {
                        last = self.quantify(last, &quantifier, start)?;
                        width = before_last.then(last_width.times(bounds(&quantifier)));
                    }
                    None => {
                        self.pos += 1;
                        last = Last::Item(self.out.mark());
                        item(Width::ONE);
                        self.out.push_str("\\{");
                    }
                },
                '(' => {
                    let at = self.out.mark();
                    let top_level_start =
                        depth == 0 && first_branch && matches!(last, Last::Nothing);
                    if let Some((group, group_width)) = self.group(at, depth, top_level_start)? {
                        // Python repeats a group that matches no text as it repeats a
                        // look-around, which the engine may refuse to repeat.
                        last = match group {
                            Last::Item(at) if group_width == Width::ZERO => Last::Lookaround(at),
                            other => other,
                        };
                        item(group_width);
                    }
                }
                '[' => {
                    last = Last::Item(self.out.mark());
                    item(Width::ONE);
                    self.class()?;
                }
                '\\' => {
                    let at = self.out.mark();
                    last = match self.escape()? {
                        Some(escaped) => {
                            item(escaped);
                            Last::Item(at)
                        }
                        None => {
                            item(Width::ZERO);
                            Last::Anchor
                        }
                    };
                }
                '.' => {
                    self.pos += 1;
                    last = Last::Item(self.out.mark());
                    item(Width::ONE);
                    self.out.push_str(if self.flags.dotall {
                        "(?s:.)"
                    } else {
                        "[^\\n]"
                    });
                }
                '^' => {
                    self.pos += 1;
                    last = Last::Anchor;
                    item(Width::ZERO);
                    self.out.push_str(if self.flags.multiline {
                        "(?m:^)"
                    } else {
                        "\\A"
                    });
                }
                '$' => {
                    self.pos += 1;
                    last = Last::Anchor;
                    item(Width::ZERO);
                    if self.flags.multiline {
                        self.out.push_str("(?m:$)");
                    } else {
                        // Without MULTILINE, Python's `$` also matches before a final newline.
                        self.out.push_assertion("(?=\\n?\\z)", Some("(?:\\n?\\z)"));
                        if depth > 0 {
                            self.out.plain = None;
                        }
                        after_dollar = true;
                    }
                }
                _ => {
                    self.pos += 1;
                    last = Last::Item(self.out.mark());
                    item(Width::ONE);
                    self.push_char(c);
                }
            }
        }
    }

    /// A literal character, under IGNORECASE the class of its case variants.
    fn push_char(&mut self, c: char) {
        let written = chars::literal(c, self.flags.ignorecase, self.flags.ascii);
        self.out.push_str(&written);
    }

    /// Applies a quantifier (already consumed) to the last item, with a lazy `?` or
    /// possessive `+` suffix if one follows.
    fn quantify(&mut self, last: Last, quantifier: &str, position: usize) -> Parse<Last> {
        let at = match last {
            Last::Nothing | Last::Anchor => return Err(syntax("nothing to repeat", position)),
            Last::Repeat => return Err(syntax("multiple repeat", position)),
            Last::Item(at) => at,
            Last::Lookaround(at) => return Ok(self.repeat_lookaround(at, quantifier)),
        };
        let piece = self.out.split_off(at);
        let lazy = self.eat('?');
        let (min, max) = bounds(quantifier);
        // CPython commits to each repetition of a possessive quantifier as it matches it, and
        // to their number: `(?:a|ab)++$` does not match `ab`.
        let possessive = !lazy && self.eat('+') && max > 0;
        let whole = possessive && min != max;
        if whole {
            self.out.push_atomic();
        }
        self.out.push_str("(?:");
        if possessive {
            self.out.push_atomic();
        }
        self.out.push_piece(&piece);
        if possessive {
            self.out.push(')');
        }
        self.out.push(')');
        self.out.push_str(quantifier);
        if lazy {
            self.out.push('?');
        }
        if whole {
            self.out.push(')');
        }
        Ok(Last::Repeat)
    }

    /// Python repeats a lookaround; the engine refuses to. Matching no text, it is the same as
    /// the lookaround tried once, or, when the quantifier allows no repetition, tried once or
    /// skipped (lazily: skipped first), or always skipped when it allows none at all.
    fn repeat_lookaround(&mut self, at: Mark, quantifier: &str) -> Last {
        let lookaround = self.out.split_off(at).fancy;
        let lazy = self.eat('?');
        let possessive = !lazy && self.eat('+');
        let optional = matches!(quantifier, "*" | "?") || quantifier.starts_with("{0");
        let repeated = if matches!(quantifier, "{0}" | "{0,0}") {
            // Never tried, but its groups keep their numbers.
            format!("(?:|(?!){lookaround})")
        } else if !optional {
            lookaround
        } else if lazy {
            format!("(?:|{lookaround})")
        } else if possessive {
            format!("(?>{lookaround}|)")
        } else {
            format!("(?:{lookaround}|)")
        };
        self.out.push_assertion(&repeated, None);
        Last::Repeat
    }

    /// `{m}`, `{m,}`, `{,n}`, `{m,n}` as the engine's quantifier, or `None` when the `{` is
    /// a literal (Python reads any other `{` literally, e.g. JSON in a pattern).
    fn brace_quantifier(&mut self) -> Parse<Option<String>> {
        let start = self.pos;
        let mut i = start + 1;
        let digits = |i: &mut usize, src: &[char]| {
            let from = *i;
            while src.get(*i).is_some_and(char::is_ascii_digit) {
                *i += 1;
            }
            src[from..*i].iter().collect::<String>()
        };
        if self.src.get(i) == Some(&'}') {
            return Ok(None);
        }
        let lo = digits(&mut i, &self.src);
        let hi = if self.src.get(i) == Some(&',') {
            i += 1;
            Some(digits(&mut i, &self.src))
        } else {
            None
        };
        if self.src.get(i) != Some(&'}') {
            return Ok(None);
        }
        self.pos = i + 1;
        let number = |text: &str| -> Parse<Option<u64>> {
            if text.is_empty() {
                return Ok(None);
            }
            match text.parse::<u64>() {
                Ok(n) if n < u64::from(u32::MAX) => Ok(Some(n)),
                _ => Err(syntax("the repetition number is too large", start)),
            }
        };
        let min = number(&lo)?.unwrap_or(0);
        Ok(Some(match hi {
            None => format!("{{{min}}}"),
            Some(hi) => match number(&hi)? {
                None => format!("{{{min},}}"),
                Some(max) if max < min => {
                    return Err(syntax("min repeat greater than max repeat", start + 1));
                }
                Some(max) => format!("{{{min},{max}}}"),
            },
        }))
    }

    /// A group at `(`, its translation starting at `at`. Returns the item it is and its width,
    /// or `None` for a comment or global flags, which are not items.
    fn group(
        &mut self,
        at: Mark,
        depth: usize,
        top_level_start: bool,
    ) -> Parse<Option<(Last, Width)>> {
        let start = self.pos;
        self.pos += 1;
        if !self.eat('?') {
            self.groups += 1;
            let number = self.groups;
            self.open.push(number);
            self.out.push('(');
            let width = self.group_body(depth, start)?;
            self.open.pop();
            self.widths.insert(number, width);
            return Ok(Some((Last::Item(at), width)));
        }
        let Some(kind) = self.next() else {
            return Err(syntax("unexpected end of pattern", self.pos));
        };
        match kind {
            'P' => {
                if self.eat('<') {
                    let (name, name_at) = self.name_until('>')?;
                    if let Some(&(_, was)) = self.names.iter().find(|(n, _)| *n == name) {
                        return Err(syntax(
                            format!(
                                "redefinition of group name {} as group {}; was group {was}",
                                repr_str(&name),
                                self.groups + 1
                            ),
                            name_at,
                        ));
                    }
                    self.groups += 1;
                    let number = self.groups;
                    self.names.push((name, number));
                    self.open.push(number);
                    self.out.push('(');
                    let width = self.group_body(depth, start)?;
                    self.open.pop();
                    self.widths.insert(number, width);
                    Ok(Some((Last::Item(at), width)))
                } else if self.eat('=') {
                    let (name, name_at) = self.name_until(')')?;
                    let number = self.named_number(&name, name_at)?;
                    let width = self.backref(number, start)?;
                    Ok(Some((Last::Item(at), width)))
                } else {
                    match self.peek() {
                        Some(next) => Err(syntax(format!("unknown extension ?P{next}"), start + 1)),
                        None => Err(syntax("unexpected end of pattern", self.pos)),
                    }
                }
            }
            ':' => {
                self.out.push_str("(?:");
                let width = self.group_body(depth, start)?;
                Ok(Some((Last::Item(at), width)))
            }
            '>' => {
                self.out.push_atomic();
                let width = self.group_body(depth, start)?;
                Ok(Some((Last::Item(at), width)))
            }
            '#' => {
                while let Some(c) = self.next() {
                    if c == ')' {
                        return Ok(None);
                    }
                }
                Err(syntax("missing ), unterminated comment", start))
            }
            '=' | '!' => {
                self.out
                    .push_assertion(if kind == '=' { "(?=" } else { "(?!" }, None);
                self.group_body(depth, start)?;
                self.out.unwrite_relaxed(at);
                Ok(Some((Last::Lookaround(at), Width::ZERO)))
            }
            '<' => match self.next() {
                Some(dir @ ('=' | '!')) => {
                    self.out
                        .push_assertion(if dir == '=' { "(?<=" } else { "(?<!" }, None);
                    let outer = self.lookbehind_groups;
                    self.lookbehind_groups = outer.or(Some(self.groups));
                    let width = self.group_body(depth, start)?;
                    self.lookbehind_groups = outer;
                    if width.lo != width.hi {
                        self.variable_lookbehind = true;
                    }
                    self.out.unwrite_relaxed(at);
                    Ok(Some((Last::Lookaround(at), Width::ZERO)))
                }
                Some(other) => Err(syntax(format!("unknown extension ?<{other}"), start + 1)),
                None => Err(syntax("unexpected end of pattern", self.pos)),
            },
            '(' => {
                let width = self.conditional(depth, start)?;
                Ok(Some((Last::Item(at), width)))
            }
            c if "aiLmsux-".contains(c) => Ok(self
                .flag_group(c, depth, start, top_level_start)?
                .map(|width| (Last::Item(at), width))),
            other => Err(syntax(format!("unknown extension ?{other}"), start + 1)),
        }
    }

    /// The pattern inside a group whose opening has been written, then its `)`.
    fn group_body(&mut self, depth: usize, start: usize) -> Parse<Width> {
        let width = self.alternation(depth + 1)?;
        if !self.eat(')') {
            return Err(syntax("missing ), unterminated subpattern", start));
        }
        self.out.push(')');
        Ok(width)
    }

    /// A group name up to `end`, checked as CPython checks it, and where it starts.
    fn name_until(&mut self, end: char) -> Parse<(String, usize)> {
        let (name, at) = self.text_until(end)?;
        if !is_identifier(&name) {
            return Err(syntax(
                format!("bad character in group name {}", repr_str(&name)),
                at,
            ));
        }
        Ok((name, at))
    }

    /// The non-empty text up to `end` (consumed), and where it starts: CPython's `getuntil`.
    fn text_until(&mut self, end: char) -> Parse<(String, usize)> {
        let at = self.pos;
        let mut text = String::new();
        loop {
            match self.next() {
                None => {
                    return Err(syntax(format!("missing {end}, unterminated name"), at));
                }
                Some(c) if c == end => break,
                Some(c) => text.push(c),
            }
        }
        if text.is_empty() {
            return Err(syntax("missing group name", at));
        }
        Ok((text, at))
    }

    fn named_number(&self, name: &str, position: usize) -> Parse<usize> {
        self.names
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, i)| i)
            .ok_or_else(|| syntax(format!("unknown group name {}", repr_str(name)), position))
    }

    /// A back-reference to a closed group; its width is the group's.
    fn backref(&mut self, number: usize, position: usize) -> Parse<Width> {
        if self.open.contains(&number) {
            return Err(syntax("cannot refer to an open group", position));
        }
        self.check_lookbehind_group(number, position)?;
        // Under IGNORECASE the engine compares the group's text without case.
        self.out.push_fancy(&if self.flags.ignorecase {
            format!("(?i:\\k<{number}>)")
        } else {
            format!("\\k<{number}>")
        });
        Ok(self.widths.get(&number).copied().unwrap_or(Width::ZERO))
    }

    /// Python refuses, inside a look-behind, a reference to a group opened in it.
    fn check_lookbehind_group(&self, number: usize, position: usize) -> Parse<()> {
        match self.lookbehind_groups {
            Some(before) if number > before => Err(syntax(
                "cannot refer to group defined in the same lookbehind subpattern",
                position,
            )),
            _ => Ok(()),
        }
    }

    /// `(?(id)yes|no)`.
    fn conditional(&mut self, depth: usize, start: usize) -> Parse<Width> {
        let (id, id_at) = self.text_until(')')?;
        let number = if is_identifier(&id) {
            self.named_number(&id, id_at)?
        } else if id.chars().all(|c| c.is_ascii_digit()) {
            match id.parse::<usize>() {
                Ok(0) | Err(_) => return Err(syntax("bad group number", id_at)),
                Ok(n) => n,
            }
        } else {
            return Err(syntax(
                format!("bad character in group name {}", repr_str(&id)),
                id_at,
            ));
        };
        self.check_lookbehind_group(number, start)?;
        self.conditions.push((number, start));
        self.out.push_fancy(&format!("(?({number})"));
        let yes = self.sequence(depth + 1, false)?;
        self.out.push('|');
        // Without a no-branch, CPython counts the shortest width as none.
        let mut width = Width { lo: 0, hi: yes.hi };
        if self.eat('|') {
            width = yes.or(self.sequence(depth + 1, false)?);
            if self.peek() == Some('|') {
                return Err(syntax(
                    "conditional backref with more than two branches",
                    self.pos,
                ));
            }
        }
        if !self.eat(')') {
            return Err(syntax("missing ), unterminated subpattern", start));
        }
        self.out.push(')');
        Ok(width)
    }

    /// `(?flags)` (global, only at the very start: `None`) or `(?flags-flags:...)` (scoped: its
    /// width).
    fn flag_group(
        &mut self,
        first: char,
        depth: usize,
        start: usize,
        top_level_start: bool,
    ) -> Parse<Option<Width>> {
        let mut on = String::new();
        let mut off = String::new();
        let mut c = first;
        if c != '-' {
            loop {
                if c == 'L' {
                    return Err(syntax(
                        "bad inline flags: cannot use 'L' flag with a str pattern",
                        self.pos,
                    ));
                }
                on.push(c);
                c = self
                    .next()
                    .ok_or_else(|| syntax("missing -, : or )", self.pos))?;
                if ")-:".contains(c) {
                    break;
                }
                if !"aimsux".contains(c) {
                    let message = if c.is_alphabetic() {
                        "unknown flag"
                    } else {
                        "missing -, : or )"
                    };
                    return Err(syntax(message, self.pos - 1));
                }
            }
        }
        if on.contains('a') && on.contains('u') {
            return Err(syntax(
                "bad inline flag: flags 'a', 'u' and 'L' are incompatible",
                start,
            ));
        }
        if c == ')' {
            if !top_level_start {
                return Err(syntax(
                    "global flags not at the start of the expression",
                    start,
                ));
            }
            for flag in on.chars() {
                self.flags.set(flag, true);
            }
            self.unicode |= on.contains('u');
            return Ok(None);
        }
        if c == '-' {
            loop {
                c = self.next().ok_or_else(|| syntax("missing :", self.pos))?;
                if c == ':' {
                    break;
                }
                if "au".contains(c) {
                    return Err(syntax(
                        "bad inline flag: cannot turn off flags 'a', 'u' and 'L'",
                        self.pos - 1,
                    ));
                }
                if !"imsx".contains(c) {
                    let message = if c.is_alphabetic() {
                        "unknown flag"
                    } else {
                        "missing :"
                    };
                    return Err(syntax(message, self.pos - 1));
                }
                off.push(c);
            }
            if off.is_empty() {
                return Err(syntax("missing flag", start));
            }
        }
        if on.chars().any(|f| off.contains(f)) {
            return Err(syntax("bad inline flag: flag turned on and off", start));
        }
        let saved = self.flags;
        for flag in on.chars() {
            self.flags.set(flag, true);
        }
        for flag in off.chars() {
            self.flags.set(flag, false);
        }
        // The flags change the translation; none reaches the engine.
        self.out.push_str("(?:");
        let result = self.group_body(depth, start);
        self.flags = saved;
        result.map(Some)
    }

    /// An escape outside a class: its width, or `None` for an anchor (not repeatable).
    fn escape(&mut self) -> Parse<Option<Width>> {
        let start = self.pos;
        self.pos += 1;
        let Some(c) = self.next() else {
            return Err(syntax("bad escape (end of pattern)", start));
        };
        match c {
            'A' => {
                self.out.push_str("\\A");
                return Ok(None);
            }
            'Z' => {
                self.out.push_str("\\z");
                return Ok(None);
            }
            'b' | 'B' => {
                let word = self.cut(if self.flags.ascii {
                    ASCII_WORD
                } else {
                    &chars::WORD.class
                });
                let fancy = word_boundary(&word, c == 'B');
                match (self.flags.ascii, c) {
                    (true, 'b') => self.out.push_assertion(&fancy, Some("(?-u:\\b)")),
                    // The engine's ASCII `\B` also matches inside a multi-byte character.
                    (true, _) => self.out.push_assertion(&fancy, None),
                    (false, 'b') => self.out.push_assertion(&fancy, Some("\\b")),
                    (false, _) => self.out.push_assertion(&fancy, Some("\\B")),
                }
                self.boundaries = self.boundaries.max(if c == 'B' {
                    Boundaries::Negated
                } else {
                    Boundaries::Word
                });
                return Ok(None);
            }
            _ => {}
        }
        if c.is_ascii_digit() && c != '0' {
            // Python: an octal escape when three octal digits follow the backslash, else a
            // group reference of one or two digits.
            let mut digits = c.to_string();
            if let Some(d) = self.peek().filter(char::is_ascii_digit) {
                self.pos += 1;
                digits.push(d);
                if c <= '7'
                    && d <= '7'
                    && let Some(e) = self.peek().filter(|e| ('0'..='7').contains(e))
                {
                    self.pos += 1;
                    digits.push(e);
                    let value = u32::from_str_radix(&digits, 8).unwrap_or(u32::MAX);
                    return self
                        .octal_literal(value, &digits, start)
                        .map(|()| Some(Width::ONE));
                }
            }
            let number: usize = digits.parse().unwrap_or(usize::MAX);
            if number > self.groups {
                return Err(syntax(
                    format!("invalid group reference {number}"),
                    start + 1,
                ));
            }
            return self.backref(number, start).map(Some);
        }
        match self.class_escape(c, start, false)? {
            ClassItem::Char(ch) => self.push_char(ch),
            ClassItem::Category(class) => self.out.push_category(&class),
        }
        Ok(Some(Width::ONE))
    }

    fn octal_literal(&mut self, value: u32, digits: &str, start: usize) -> Parse<()> {
        if value > 0o377 {
            return Err(syntax(
                format!("octal escape value \\{digits} outside of range 0-0o377"),
                start,
            ));
        }
        let c = char::from_u32(value).ok_or_else(|| syntax("bad octal escape", start))?;
        self.push_char(c);
        Ok(())
    }

    /// The escapes shared by classes and the pattern body, after `\` and `c` were read.
    fn class_escape(&mut self, c: char, start: usize, in_class: bool) -> Parse<ClassItem> {
        Ok(match self.escaped_item(c, start, in_class)? {
            ClassItem::Category(Cow::Borrowed(class)) => ClassItem::Category(self.cut(class)),
            item => item,
        })
    }

    /// `class`, or where the translation is for one text, the characters of the text in it.
    /// Python's categories hold a character exactly when they hold its case variants, so
    /// IGNORECASE changes nothing here.
    fn cut(&self, class: &'static str) -> Cow<'static, str> {
        let Some(alphabet) = &self.alphabet else {
            return Cow::Borrowed(class);
        };
        let Some(members) = category_members(class) else {
            return Cow::Borrowed(class);
        };
        let mut out = String::from("[");
        for &c in alphabet.iter().filter(|&&c| contains(&members, c)) {
            push_literal(&mut out, c);
        }
        if out.len() == 1 {
            return Cow::Borrowed(NO_CHARACTER);
        }
        out.push(']');
        Cow::Owned(out)
    }

    fn escaped_item(&mut self, c: char, start: usize, in_class: bool) -> Parse<ClassItem> {
        let ascii = self.flags.ascii;
        let category = |unicode: &'static str, ascii_class: &'static str| {
            ClassItem::Category(Cow::Borrowed(if ascii { ascii_class } else { unicode }))
        };
        Ok(match c {
            'd' => category(&chars::DIGIT.class, "[0-9]"),
            'D' => category(&chars::DIGIT.negated, "[^0-9]"),
            's' => category(&chars::SPACE.class, "[\\t\\n\\x0B\\x0C\\r ]"),
            'S' => category(&chars::SPACE.negated, "[^\\t\\n\\x0B\\x0C\\r ]"),
            'w' => category(&chars::WORD.class, ASCII_WORD),
            'W' => category(&chars::WORD.negated, "[^0-9A-Za-z_]"),
            'a' => ClassItem::Char('\x07'),
            'b' if in_class => ClassItem::Char('\x08'),
            'f' => ClassItem::Char('\x0c'),
            'n' => ClassItem::Char('\n'),
            'r' => ClassItem::Char('\r'),
            't' => ClassItem::Char('\t'),
            'v' => ClassItem::Char('\x0b'),
            'x' => ClassItem::Char(self.hex_escape('x', 2, start)?),
            'u' => ClassItem::Char(self.hex_escape('u', 4, start)?),
            'U' => ClassItem::Char(self.hex_escape('U', 8, start)?),
            'N' => ClassItem::Char(self.named_char(start)?),
            '0'..='7' if in_class || c == '0' => {
                let mut digits = c.to_string();
                for _ in 0..2 {
                    match self.peek() {
                        Some(d @ '0'..='7') => {
                            self.pos += 1;
                            digits.push(d);
                        }
                        _ => break,
                    }
                }
                let value = u32::from_str_radix(&digits, 8).unwrap_or(u32::MAX);
                if value > 0o377 {
                    return Err(syntax(
                        format!("octal escape value \\{digits} outside of range 0-0o377"),
                        start,
                    ));
                }
                ClassItem::Char(char::from_u32(value).unwrap_or('\0'))
            }
            c if c.is_ascii_alphanumeric() => {
                return Err(syntax(format!("bad escape \\{c}"), start));
            }
            c => ClassItem::Char(c),
        })
    }

    /// `\N{name}`, after the `N`.
    fn named_char(&mut self, start: usize) -> Parse<char> {
        if !self.eat('{') {
            return Err(syntax("missing {", self.pos));
        }
        let from = self.pos;
        let Some(len) = self.src[from..].iter().position(|&c| c == '}') else {
            return Err(syntax("missing }, unterminated name", from));
        };
        if len == 0 {
            return Err(syntax("missing character name", from));
        }
        let name: String = self.src[from..from + len].iter().collect();
        self.pos = from + len + 1;
        names::lookup(&name).ok_or_else(|| {
            syntax(
                format!("undefined character name {}", super::repr_str(&name)),
                start,
            )
        })
    }

    fn hex_escape(&mut self, kind: char, len: usize, start: usize) -> Parse<char> {
        let digits: String = self.src[self.pos..]
            .iter()
            .take(len)
            .take_while(|c| c.is_ascii_hexdigit())
            .collect();
        if digits.len() < len {
            return Err(syntax(format!("incomplete escape \\{kind}{digits}"), start));
        }
        self.pos += len;
        u32::from_str_radix(&digits, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(|| syntax(format!("bad escape \\{kind}{digits}"), start))
    }

    /// A character class at `[`, written with every member escaped so that the engine's set
    /// operators (`&&`, `--`, `~~`, nested `[`) never apply: Python reads them literally.
    fn class(&mut self) -> Parse<()> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::from("[");
        if self.eat('^') {
            out.push('^');
        }
        let mut empty = true;
        // The characters and ranges written, whose case variants IGNORECASE adds.
        let mut members: Vec<(char, char)> = Vec::new();
        loop {
            let Some(c) = self.next() else {
                return Err(syntax("unterminated character set", start));
            };
            if c == ']' && !empty {
                break;
            }
            empty = false;
            let item_start = self.pos - 1;
            let low = if c == '\\' {
                let Some(e) = self.next() else {
                    return Err(syntax("unterminated character set", start));
                };
                self.class_escape(e, item_start, true)?
            } else {
                ClassItem::Char(c)
            };
            if self.peek() == Some('-') {
                self.pos += 1;
                let Some(next) = self.next() else {
                    return Err(syntax("unterminated character set", start));
                };
                if next == ']' {
                    push_class_item(&mut out, &low);
                    push_literal(&mut out, '-');
                    if let ClassItem::Char(c) = low {
                        members.push((c, c));
                    }
                    break;
                }
                let high = if next == '\\' {
                    let Some(e) = self.next() else {
                        return Err(syntax("unterminated character set", start));
                    };
                    self.class_escape(e, self.pos - 2, true)?
                } else {
                    ClassItem::Char(next)
                };
                let range: String = self.src[item_start..self.pos].iter().collect();
                match (low, high) {
                    (ClassItem::Char(lo), ClassItem::Char(hi)) if lo <= hi => {
                        push_literal(&mut out, lo);
                        out.push('-');
                        push_literal(&mut out, hi);
                        members.push((lo, hi));
                    }
                    _ => {
                        return Err(syntax(format!("bad character range {range}"), item_start));
                    }
                }
            } else {
                push_class_item(&mut out, &low);
                if let ClassItem::Char(c) = low {
                    members.push((c, c));
                }
            }
        }
        if self.flags.ignorecase {
            for c in chars::closure(&members, self.flags.ascii) {
                push_literal(&mut out, c);
            }
        }
        out.push(']');
        self.out.push_str(&out);
        Ok(())
    }
}

type Members = Option<Rc<ClassUnicode>>;

/// The characters of a category as the engine reads it (`None`: the engine's parser refuses
/// it, which the full translation reports). Categories are static texts, so they are known by
/// their address and length, cheaper to hash than their text.
fn category_members(class: &'static str) -> Members {
    thread_local! {
        static MEMBERS: RefCell<HashMap<(usize, usize), Members>> = RefCell::new(HashMap::new());
    }
    MEMBERS.with(|members| {
        let mut members = members.borrow_mut();
        let entry = members
            .entry((class.as_ptr() as usize, class.len()))
            .or_insert_with(|| match parse(class)?.into_kind() {
                HirKind::Class(Class::Unicode(class)) => Some(Rc::new(class)),
                _ => None,
            });
        entry.clone()
    })
}

fn contains(class: &ClassUnicode, c: char) -> bool {
    class
        .ranges()
        .binary_search_by(|range| {
            if range.end() < c {
                std::cmp::Ordering::Less
            } else if range.start() > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Python's `\b` (`negated`: `\B`) for a word-character class: unlike the engine's own, it
/// follows Python's word characters, and `\B` never matches in an empty text.
fn word_boundary(word: &str, negated: bool) -> String {
    if negated {
        format!("(?:(?<={word})(?={word})|(?<!{word})(?!{word})(?:(?<=(?s:.))|(?=(?s:.))))")
    } else {
        format!("(?:(?<={word})(?!{word})|(?<!{word})(?={word}))")
    }
}

fn push_class_item(out: &mut String, item: &ClassItem) {
    match item {
        ClassItem::Char(c) => push_literal(out, *c),
        ClassItem::Category(class) => out.push_str(class),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(pattern: &str, flags: u32, text: &str) -> bool {
        Regex::new(pattern, flags)
            .unwrap_or_else(|e| panic!("{pattern:?}: {e}"))
            .is_match(text)
            .unwrap()
    }

    fn error(pattern: &str) -> String {
        Regex::new(pattern, 0).unwrap_err().to_string()
    }

    #[test]
    fn word_characters_are_compared_character_by_character_as_by_alphabet() {
        let mismatch = WORD_MISMATCH.as_ref().unwrap();
        assert!(mismatch.ranges().iter().all(|r| !r.start().is_ascii()));
        for text in [
            "",
            "plain ascii_words 123",
            "São Tomé, Reykjavík",
            "-1°C and rainy",
            "x²",
            "e\u{301}",
            "a\u{203f}b",
            "日本語",
            "٣ and ³",
        ] {
            let mut common = alphabet(text);
            common.intersect(mismatch);
            assert_eq!(
                Plain::words_agree_in(text),
                common.ranges().is_empty(),
                "{text:?}"
            );
        }
        assert!(!Plain::words_agree_in("x²"));
        assert!(Plain::words_agree_in("São Tomé"));
    }

    #[test]
    fn dollar_matches_before_a_final_newline_only() {
        assert!(search("^yes$", 0, "yes\n"));
        assert!(!search("^yes$", 0, "yes\n\n"));
        assert!(!search("^yes$", 0, "ok\nyes"));
        assert!(search("^yes$", MULTILINE, "ok\nyes\nno"));
        assert!(search(r"\Z", 0, ""));
        assert!(!search(r"yes\Z", 0, "yes\n"));
        assert!(search(r"\Ayes", 0, "yes"));
    }

    #[test]
    fn lookaround_and_backreferences() {
        assert!(search("foo(?!bar)", 0, "foobar foobaz"));
        assert!(!search("foo(?!bar)", 0, "foobar"));
        assert!(search(r"(?<=\$)\d+", 0, "cost $42"));
        assert!(search(r"(\w)\1", 0, "hello"));
        assert!(!search(r"(\w)\1", 0, "helo"));
        assert!(search(r"(?P<q>['x])a(?P=q)", 0, "'a'"));
        assert!(search(r"(?i)(a)\1", 0, "aA"));
        assert!(search("price(?= USD)", 0, "price USD 10"));
    }

    #[test]
    fn unicode_classes_follow_python() {
        assert!(search(r"\d", 0, "٣"));
        assert!(!search(r"\d", ASCII, "٣"));
        assert!(search(r"^\s$", 0, "\x1c"));
        assert!(search(r"^\w+$", 0, "héllo_٣"));
        // A combining mark is not a word character for Python.
        assert!(!search(r"^\w$", 0, "\u{301}"));
        assert!(!search(".", 0, "\n"));
        assert!(search(".", DOTALL, "\n"));
        assert!(search("(?s).", 0, "\n"));
        assert!(search("(?s:a.)b", 0, "a\nb"));
        assert!(!search("(?s:a.)b.", 0, "a\nb\n"));
    }

    #[test]
    fn flags_map_to_python_bits() {
        assert!(search("booked", IGNORECASE, "BOOKED"));
        assert!(!search("booked", 0, "BOOKED"));
        assert!(search("(?i:b)OOKED", 0, "bOOKED"));
        assert!(!search("(?i:b)ooked", 0, "bOOKED"));
        assert!(search("a b # comment\n c", VERBOSE, "abc"));
        assert!(search("(?x) a [ ] b", 0, "a b"));
        assert!(search("a *", VERBOSE, "aaa"));
        assert!(matches!(Regex::new("a", 4), Err(RegexError::Flags(4))));
        assert!(matches!(
            Regex::new("a", 1 << 12),
            Err(RegexError::Flags(_))
        ));
    }

    #[test]
    fn braces_that_are_not_quantifiers_are_literal() {
        assert!(search(r#"\{"a": 1\}"#, 0, r#"{"a": 1}"#));
        assert!(search(r#"{"a": 1}"#, 0, r#"x {"a": 1} y"#));
        assert!(search("a{}", 0, "a{}"));
        assert!(search("a{1, 2}", 0, "a{1, 2}"));
        assert!(search("^a{2}$", 0, "aa"));
        assert!(search("^a{,2}$", 0, "aa"));
        assert!(!search("^a{,2}$", 0, "aaa"));
        assert!(search("^a{2,}$", 0, "aaaa"));
        assert!(search("x}", 0, "x}"));
    }

    #[test]
    fn classes_read_set_operators_literally() {
        assert!(search("[a&&b]", 0, "&"));
        // Python: 0-9, then the range `-`..`5`; the engine alone would read `--` as difference.
        assert!(search("[0-9--5]", 0, "5"));
        assert!(search("[0-9--5]", 0, "/"));
        assert_eq!(error("[a--b]"), "bad character range a-- at position 1");
        assert!(search("[[]", 0, "["));
        assert!(search("[]a]", 0, "]"));
        assert!(search("[^]a]", 0, "b"));
        assert!(!search("[^]a]", 0, "]"));
        assert!(search("[a-]", 0, "-"));
        assert!(search(r"[\d.]", 0, "."));
        assert!(search(r"[\b]", 0, "\x08"));
        assert!(search(r"[\x41-\x43]", 0, "B"));
        assert!(search("[~~]", 0, "~"));
    }

    #[test]
    fn quantifier_variants() {
        assert!(search("^a*?b", 0, "aab"));
        assert!(!search("^a*+a", 0, "aaa"));
        assert!(search("^(?>a+)b", 0, "aab"));
        assert!(search("^(?:ab)+$", 0, "abab"));
        assert!(search("^a(?#note)+$", 0, "aaa"));
    }

    #[test]
    fn conditionals_and_octal() {
        assert!(search(r"^(<)?a(?(1)>|)$", 0, "<a>"));
        assert!(search(r"^(?P<o><)?a(?(o)>|)$", 0, "a"));
        assert!(!search(r"^(<)?a(?(1)>)$", 0, "<a"));
        assert!(search(r"\101", 0, "A"));
        assert!(search(r"\0", 0, "\0"));
        assert!(search(r"[\101]", 0, "A"));
    }

    #[test]
    fn invalid_patterns_are_reported_with_a_position() {
        assert_eq!(
            error("[unclosed"),
            "unterminated character set at position 0"
        );
        assert_eq!(
            error("(abc"),
            "missing ), unterminated subpattern at position 0"
        );
        assert_eq!(error("abc)"), "unbalanced parenthesis at position 3");
        assert_eq!(error("*a"), "nothing to repeat at position 0");
        assert_eq!(error("a**"), "multiple repeat at position 2");
        assert_eq!(error("^*"), "nothing to repeat at position 1");
        assert_eq!(error(r"\q"), "bad escape \\q at position 0");
        assert_eq!(error("[z-a]"), "bad character range z-a at position 1");
        assert_eq!(error(r"(a)\2"), "invalid group reference 2 at position 4");
        assert_eq!(
            error(r"(a\1)"),
            "cannot refer to an open group at position 2"
        );
        assert_eq!(
            error("a{3,2}"),
            "min repeat greater than max repeat at position 2"
        );
        assert_eq!(
            error("a(?i)"),
            "global flags not at the start of the expression at position 1"
        );
        assert_eq!(
            error("(?P<1a>x)"),
            "bad character in group name '1a' at position 4"
        );
        assert_eq!(
            error("(?P=nope)"),
            "unknown group name 'nope' at position 4"
        );
        assert_eq!(error(r"\x4"), "incomplete escape \\x4 at position 0");
        assert_eq!(error("(?<x)"), "unknown extension ?<x at position 1");
    }

    #[test]
    fn catastrophic_backtracking_is_an_error_not_a_hang() {
        // The backreference keeps the whole pattern on the backtracking engine.
        let re = Regex::new(r"^(a|aa)+\1$", 0).unwrap();
        let text = format!("{}b", "a".repeat(40));
        assert_eq!(re.is_match(&text), Err(RegexError::TooCostly));
    }

    #[test]
    fn huge_patterns_are_refused() {
        assert!(matches!(
            Regex::new(r"(\w{1000}){1000}", 0),
            Err(RegexError::TooLarge(_))
        ));
        let deep = format!("{}a{}", "(".repeat(500), ")".repeat(500));
        assert!(matches!(Regex::new(&deep, 0), Err(RegexError::TooLarge(_))));
    }

    #[test]
    fn groups_follow_python_numbering() {
        let re = Regex::new(r"(?P<k>\w+)=(\d+)|(x)", 0).unwrap();
        assert_eq!(re.groups(), 3);
        let m = re.search("a=1").unwrap().unwrap();
        assert_eq!(m.as_str(), "a=1");
        assert_eq!(m.group(0), Ok(Some("a=1")));
        assert_eq!(m.named_group("k"), Ok(Some("a")));
        assert_eq!(m.group(2), Ok(Some("1")));
        assert_eq!(m.group(3), Ok(None));
        assert_eq!(m.group(4), Err(RegexError::NoSuchGroup("4".into())));
        assert!(m.named_group("v").is_err());
    }

    #[test]
    fn findall_follows_python_group_and_empty_match_rules() {
        let texts = |p: &str, t: &'static str| Regex::new(p, 0).unwrap().findall(t).unwrap();
        assert_eq!(texts(r"\d+", "a1b22"), Findall::Texts(vec!["1", "22"]));
        assert_eq!(texts(r"(\w)=\d", "a=1 b=2"), Findall::Texts(vec!["a", "b"]));
        assert_eq!(
            texts(r"(\w)=(\d)", "a=1 b=2"),
            Findall::Tuples(vec![vec!["a", "1"], vec!["b", "2"]])
        );
        assert_eq!(texts("(a)|b", "ab"), Findall::Texts(vec!["a", ""]));
        assert_eq!(
            texts("a*", "baaab"),
            Findall::Texts(vec!["", "aaa", "", ""])
        );
        assert!(texts("z", "abc").is_empty());
    }

    fn plain(pattern: &str) -> Option<String> {
        Translator::run(pattern, 0).unwrap().plain
    }

    #[test]
    fn only_a_final_dollar_has_a_plain_spelling() {
        assert_eq!(plain("a$").as_deref(), Some("a(?:\\n?\\z)"));
        assert_eq!(plain("a$|b$").as_deref(), Some("a(?:\\n?\\z)|b(?:\\n?\\z)"));
        assert_eq!(plain("(?m)a$b").as_deref(), Some("a(?m:$)b"));
        assert!(plain("(?x)a$ # note").is_some());
        assert_eq!(plain("a$b"), None);
        assert_eq!(plain("a$(?#x)"), None);
        assert_eq!(plain("(?:a$)"), None);
        assert_eq!(plain("(?:a$)+"), None);
    }

    #[test]
    fn backtracking_constructs_have_no_plain_spelling() {
        for pattern in [
            r"(?<!x)y",
            r"(?<!x)*y",
            r"a(?=b)",
            r"(a)\1",
            r"(?>a)",
            r"a++",
            r"(a)?(?(1)b)",
        ] {
            assert_eq!(plain(pattern), None, "{pattern}");
        }
        // IGNORECASE is spelled out as CPython's case variants, the dotted and dotless i too.
        assert_eq!(
            plain(r"(?i)\bcapital of .+ is Paris\b").as_deref(),
            Some(concat!(
                r"\b[Cc][Aa][Pp][Iiİı][Tt][Aa][Ll] [Oo][Ff] (?:[^\n])+ [Iiİı][Ssſ] ",
                r"[Pp][Aa][Rr][Iiİı][Ssſ]\b"
            ))
        );
        assert_eq!(
            plain(r"Confirmation: [A-Z]{3}\d{3}"),
            Some(format!(
                r"Confirmation: (?:[A-Z]){{3}}(?:{}){{3}}",
                stand_in::of(&chars::DIGIT.class).unwrap()
            ))
        );
    }

    #[test]
    fn search_once_uses_the_lean_engine_only_where_it_is_exact() {
        let matcher = |pattern: &str, flags| Matcher::new(pattern, flags).unwrap();
        assert!(matches!(
            matcher(r"Confirmation: [A-Z]{3}\d{3}", 0),
            Matcher::Plain(_)
        ));
        assert!(matches!(
            matcher(r"(?<![\d-])12°C and \w+", 0),
            Matcher::Full(Some(_))
        ));
        assert!(matches!(matcher(r"x\B", ASCII), Matcher::Full(Some(_))));
        assert!(matches!(matcher(r"(x)\1", 0), Matcher::Full(None)));
        assert!(matches!(matcher(r"x\b", ASCII), Matcher::Plain(_)));
        let Matcher::Plain(boundary) = matcher(r"x\b", 0) else {
            panic!("\\b has a plain spelling");
        };
        for repeated in [false, true] {
            let found = |text| boundary.is_match(text, repeated);
            assert_eq!(found("x y"), Some(true));
            assert_eq!(found("naïve xy"), Some(false));
            // `²` is a word character for Python only; a combining mark for the engine only.
            assert_eq!(found("x²"), None);
            assert_eq!(found("e\u{301}"), None);
            // Neither `\b` matches in an empty text.
            assert_eq!(found(""), Some(false));
        }
        let Matcher::Plain(negated) = matcher(r"\B", 0) else {
            panic!("\\B has a plain spelling");
        };
        for repeated in [false, true] {
            assert_eq!(negated.is_match("ab", repeated), Some(true));
            assert_eq!(negated.is_match("a", repeated), Some(false));
            // The engine's `\B` matches in an empty text; Python's does not.
            assert_eq!(negated.is_match("", repeated), None);
        }
        assert_eq!(Regex::search_once(r"x\b", 0, "x²"), Ok(false));
        assert_eq!(Regex::search_once(r"e\b", 0, "e\u{301}"), Ok(true));
        assert_eq!(Regex::search_once(r"\B", 0, ""), Ok(false));
    }

    #[test]
    fn categories_cut_to_one_text_keep_their_answer_on_the_backtracking_engine() {
        let patterns = [
            r"(?<![\d-])-1°C and \w+",
            r"(?<=\d)x",
            r"(?i)(?<!\W)straße\b",
            r"(?=\S)\D+\b(?!\w)",
            r"[\w-]+(?=@)",
            r"[^\w\s]+(?=\d)",
            r"(?i)(?<=ǅ)\w",
            r"(?i)(?<=k)\W",
            r"(?<=\s)\d\B",
            r"(?a)(?<=\w)é",
            r"(\w)\1",
        ];
        let texts = [
            "It is -1°C and rainy",
            "It is --1°C and rainy",
            "ax",
            "1x",
            "STRASSE straße",
            "",
            "١٢3é_\u{3000}b",
            "a-b@c",
            "ǆx",
            "K\u{212A}!",
            "\u{345} x",
            "a 12",
            "éé",
        ];
        for pattern in patterns {
            let full = Regex::new(pattern, 0).unwrap();
            for text in texts {
                let cut = Translator::for_text(pattern, 0, text).unwrap();
                assert_ne!(cut.pattern, Translator::run(pattern, 0).unwrap().pattern);
                let cut = Regex::from_translation(pattern, 0, cut).unwrap();
                assert_eq!(
                    cut.is_match(text),
                    full.is_match(text),
                    "{pattern:?} on {text:?}"
                );
            }
        }
    }

    #[test]
    fn classes_cut_to_the_text_keep_their_answer() {
        let plain = |pattern: &str| Plain::new(&Translator::run(pattern, 0).unwrap()).unwrap();
        let digits = plain(r"^\d{3}\w+\s[^a]$");
        assert_eq!(digits.is_match("١٢3é_\u{3000}b", false), Some(true));
        assert_eq!(digits.is_match("١٢3é_\u{3000}a", false), Some(false));
        assert_eq!(digits.is_match("x", false), Some(false));
        assert_eq!(digits.is_match("", false), Some(false));
        assert_eq!(
            plain("(?i)straße").is_match("STRASSE STRAẞE", false),
            Some(true)
        );
    }

    #[test]
    fn a_repeated_pattern_is_compiled_once_for_every_text() {
        let pattern = r"repeated \b\d+";
        let compiled = || {
            MATCHERS.with(|cache| match cache.borrow().get(pattern, 0) {
                Some(Ok(Matcher::Plain(plain))) => plain.compiled.get().is_some(),
                _ => panic!("{pattern} has a plain spelling"),
            })
        };
        assert_eq!(Regex::search_once(pattern, 0, "repeated 1"), Ok(true));
        assert!(!compiled());
        assert_eq!(Regex::search_once(pattern, 0, "repeated x"), Ok(false));
        assert!(compiled());
        assert_eq!(Regex::search_once(pattern, 0, "repeated ٣"), Ok(true));
        // A text on which the engine's `\b` is not Python's goes to the full engine.
        assert_eq!(
            Regex::search_once(pattern, 0, "repeated \u{301}1"),
            Ok(false)
        );
        assert!(REGEXES.lock().get(pattern, 0).is_some());
    }

    #[test]
    fn a_repeated_backtracking_pattern_is_compiled_for_the_characters_its_texts_have() {
        // A lookbehind needs the backtracking engine; `\w` and `\b` are categories.
        let pattern = r"(?<![\d-])\b1°C and \w+";
        let full = Regex::new(pattern, 0).unwrap();
        let texts = [
            "It is 1°C and rainy",
            "It is 1°C and windy",
            "It is -1°C and rainy",
            "It is 1°C and ñandú",
            "It is 1°C and _",
            "It is 1°C and ²",
            "It is 1°C and \u{301}x",
            "It is 21°C and sunny",
            // More characters beyond ASCII than a narrowed pattern keeps.
            "1°C and ΑΒΓΔΕΖΗΘΙ",
            "1°C and ¡¿",
        ];
        for text in texts {
            let want = full.is_match(text).unwrap();
            for _ in 0..2 {
                assert_eq!(Regex::search_once(pattern, 0, text), Ok(want), "{text}");
            }
        }
        // Texts of the same characters beyond ASCII share one compiled pattern, and the
        // full pattern is compiled only for the text with too many of them.
        let narrowed = |beyond: &str| NARROWED.lock().get(&format!("{beyond}\0{pattern}"), 0);
        assert!(narrowed("°").is_some());
        assert!(narrowed("°ñú").is_some());
        assert!(narrowed("¡°¿").is_some());
        assert!(narrowed("°ΑΒΓΔΕΖΗΘΙ").is_none());
        assert!(REGEXES.lock().get(pattern, 0).is_some());
        // Case-insensitive: the case variants of the text's characters stay in the class.
        let pattern = r"(?i)(?<!x)é\w";
        let full = Regex::new(pattern, 0).unwrap();
        for text in ["ÉÉ", "Éa", "éK", "é\u{212a}", "É-", "yÉÉ"] {
            let want = full.is_match(text).unwrap();
            for _ in 0..2 {
                assert_eq!(Regex::search_once(pattern, 0, text), Ok(want), "{text}");
            }
        }
    }

    #[test]
    fn lean_engine_refuses_huge_patterns_like_the_full_engine() {
        assert!(matches!(
            Regex::search_once(r"x(\w{1000}){1000}", 0, "x"),
            Err(RegexError::TooLarge(_))
        ));
        assert!(matches!(
            Regex::search_once(r"x\b(\w{1000}){1000}", 0, "x"),
            Err(RegexError::TooLarge(_))
        ));
    }

    #[test]
    fn cache_returns_equivalent_patterns_and_errors() {
        let a = Regex::cached(r"^\d+$", 0).unwrap();
        let b = Regex::cached(r"^\d+$", 0).unwrap();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        let c = Regex::cached(r"^\d+$", IGNORECASE).unwrap();
        assert_eq!(c.0.flags, IGNORECASE);
        assert!(Regex::cached("[x", 0).is_err());
        // A cache of its own, so that filling it evicts nothing another test relies on.
        let shared = Shared::new();
        for i in 0..(CACHE_CAPACITY + 10) {
            let pattern = format!("p{i}");
            shared
                .get_or_make(&pattern, 0, || Regex::new(&pattern, 0))
                .unwrap();
        }
        let cache = shared.lock();
        assert!(cache.entries.len() <= CACHE_CAPACITY);
        assert_eq!(cache.entries.len(), cache.order.len());
        assert!(cache.get("p0", 0).is_none());
        assert!(cache.get(&format!("p{}", CACHE_CAPACITY + 9), 0).is_some());
    }

    #[test]
    fn threads_share_one_compiled_pattern() {
        let pattern = r"^shared (\d+) across threads$";
        let compiled: Vec<Regex> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| Regex::cached(pattern, 0).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for regex in &compiled[1..] {
            assert!(Arc::ptr_eq(&compiled[0].0, &regex.0));
        }
    }
}

/// Every case of `tests/data/python-re-cases.json`, recorded from CPython 3.11's `re` by
/// `gen_re_cases.py`: compile errors (CPython's message, word for word), the first match with its groups, and `findall`.
#[cfg(test)]
mod python_differential {
    use super::*;
    use serde_json::{Value, json};

    const CASES: &str = include_str!("../../../tests/data/python-re-cases.json");

    fn findall_json(found: Findall<'_>) -> Value {
        match found {
            Findall::Texts(texts) => json!(texts),
            Findall::Tuples(tuples) => json!(tuples),
        }
    }

    fn run(case: &Value) -> Value {
        let pattern = case["pattern"].as_str().unwrap();
        let flags = case["flags"].as_u64().unwrap() as u32;
        let text = case["text"].as_str().unwrap();
        let regex = match Regex::new(pattern, flags) {
            Ok(regex) => regex,
            Err(e) => return json!({ "error": e.to_string() }),
        };
        let found = regex.search(text).unwrap();
        let groups = found.as_ref().map(|m| {
            (1..=regex.groups())
                .map(|i| m.group(i).unwrap())
                .collect::<Vec<_>>()
        });
        json!({
            "error": false,
            "match": found.as_ref().map(Match::as_str),
            "groups": groups,
            "findall": findall_json(regex.findall(text).unwrap()),
        })
    }

    #[test]
    fn matches_cpython() {
        let cases: Vec<Value> = serde_json::from_str(CASES).unwrap();
        assert!(cases.len() > 90);
        let failures: Vec<String> = cases
            .iter()
            .filter_map(|case| {
                let mut want = case.clone();
                let want = want.as_object_mut().unwrap();
                for key in ["pattern", "flags", "text"] {
                    want.remove(key);
                }
                let want = Value::Object(want.clone());
                let got = run(case);
                (got != want).then(|| {
                    format!(
                        "{} {:?}: got {got}, want {want}",
                        case["pattern"], case["text"]
                    )
                })
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    /// Every recorded case through the lean automata for one text and for every text (where
    /// they can tell), the full engine, the full engine with its categories cut to the text,
    /// and [`Regex::search_once`]: each must find a match exactly when Python does.
    #[test]
    fn lean_and_full_engines_agree_with_cpython() {
        let cases: Vec<Value> = serde_json::from_str(CASES).unwrap();
        let (mut lean_cases, mut prefix_cases) = (0, 0);
        let failures: Vec<String> = cases
            .iter()
            .filter_map(|case| {
                let pattern = case["pattern"].as_str().unwrap();
                let flags = case["flags"].as_u64().unwrap() as u32;
                let text = case["text"].as_str().unwrap();
                let once = Regex::search_once(pattern, flags, text);
                let describe = |got: String| format!("{pattern:?} ({flags}) on {text:?}: {got}");
                if case["error"].is_string() {
                    return once
                        .is_ok()
                        .then(|| describe("search_once accepted it".into()));
                }
                let want = !case["match"].is_null();
                let translated = Translator::run(pattern, flags).unwrap();
                let plain = Plain::new(&translated);
                let lean = plain.as_ref().and_then(|plain| plain.is_match(text, false));
                let compiled = plain.as_ref().and_then(|plain| plain.is_match(text, true));
                let prefixes = translated.relaxed.as_deref().and_then(Prefixes::new);
                let regex = Regex::from_translation(pattern, flags, translated).unwrap();
                let full = regex.is_match(text).unwrap();
                // The full engine from where the first of the pattern's prefixes is.
                let from_prefix = prefixes.map(|prefixes| {
                    prefixes
                        .earliest(text)
                        .is_some_and(|from| regex.is_match_from(text, from).unwrap())
                });
                let cut = Translator::for_text(pattern, flags, text).unwrap();
                let cut = Regex::from_translation(pattern, flags, cut)
                    .unwrap()
                    .is_match(text)
                    .unwrap();
                lean_cases += usize::from(lean.is_some());
                prefix_cases += usize::from(plain.is_none() && from_prefix.is_some());
                let wrong = |engine: Option<bool>| engine.is_some_and(|m| m != want);
                let failed = wrong(lean)
                    || wrong(compiled)
                    || wrong(from_prefix)
                    || full != want
                    || cut != want;
                (failed || once != Ok(want)).then(|| {
                    describe(format!(
                        "lean {lean:?}, compiled {compiled:?}, full from a prefix \
                         {from_prefix:?}, full {full}, cut to the text {cut}, search_once \
                         {once:?}, Python {want}"
                    ))
                })
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(
            lean_cases > 60,
            "only {lean_cases} cases ran on the lean engine"
        );
        assert!(
            prefix_cases > 40,
            "only {prefix_cases} cases ran from a prefix"
        );
    }

    fn relaxed(pattern: &str) -> Option<String> {
        Translator::run(pattern, 0).unwrap().relaxed
    }

    #[test]
    fn the_relaxed_dialect_leaves_out_assertions_only() {
        assert_eq!(
            relaxed(r"(?<![\d-])-1°C and \w+"),
            Some(format!(
                r"\-1°C and (?:{})+",
                stand_in::of(&chars::WORD.class).unwrap()
            ))
        );
        assert_eq!(relaxed(r"a(?=b(c))d$").as_deref(), Some("ad"));
        assert_eq!(relaxed(r"\bx\B(?!y)*z").as_deref(), Some("xz"));
        assert_eq!(relaxed(r"(?>ab|a)c").as_deref(), Some("(?:ab|a)c"));
        assert_eq!(relaxed(r"a++b").as_deref(), Some("(?:(?:(?:a))+)b"));
        assert_eq!(relaxed(r"^x\Z").as_deref(), Some(r"\Ax\z"));
        // A backreference or a conditional has no relaxed spelling.
        assert_eq!(relaxed(r"(a)\1"), None);
        assert_eq!(relaxed(r"(a)?(?(1)b|c)"), None);
        assert_eq!(relaxed(r"(?=(a))\1"), None);
    }

    #[test]
    fn a_full_search_from_a_prefix_sees_the_text_before_it() {
        for (pattern, text, want) in [
            (r"(?<=a)b", "ab", true),
            (r"(?<!a)b", "ab", false),
            (r"(?<!a)b", "ab b", true),
            (r"(?<![\d-])-1°C", "was -1°C, now 4-1°C", true),
            (r"(?<![\d-])-1°C", "now 4-1°C", false),
            (r"\bcat\b", "concat cat", true),
            (r"\bcat\b", "concat", false),
            (r"(?=\d{3})\d+x", "12x 123x", true),
        ] {
            // The second search takes the path of a repeated pattern.
            Regex::search_once(pattern, 0, "").unwrap();
            assert_eq!(
                Regex::search_once(pattern, 0, text),
                Ok(want),
                "{pattern:?} on {text:?}"
            );
        }
    }

    #[test]
    fn search_once_agrees_with_a_compiled_search() {
        let texts = [
            "",
            "\n",
            "Paris",
            "Paris\n",
            "Paris\n\n",
            "It is -3°C in Oslo.",
            "a.b",
            "axb",
            "x\ny",
            "PARIS",
            "420 * 261 = 109620",
            "420 * 261 = 109620\n",
            "$5",
            "^x",
            "in Oslo.\n",
        ];
        let patterns = [
            "",
            "Paris",
            "-3°C",
            "a.b",
            "a",
            "°",
            "x\ny",
            "Oslo.",
            r"P\w+",
            "(?i)paris",
            "São Tomé",
            "^Paris",
            "Paris$",
            "^Paris$",
            "^$",
            "^",
            "$",
            r"^420 \* 261 = 109620$",
            r"a\.b",
            r"^a\.b$",
            r"\$5",
            r"^\^x",
            "y$",
            "^x",
            r"Oslo\.$",
            r"\d",
            r"\n",
            "a$b",
            "$$",
            r"(?<![\d-])-3°C",
            r"(?<![\d-])3°C",
            r"(?<=\s)Oslo\.",
            r"(?<!\$)5",
            r"(?<=\$)5",
            r"(?<!\n)y",
            r"(?<=^)x",
            r"(?<!p)aris",
            r"(?<!x)*a",
        ];
        for pattern in patterns {
            for flags in [0, UNICODE, IGNORECASE] {
                let compiled = Regex::new(pattern, flags).unwrap();
                for text in texts {
                    assert_eq!(
                        Regex::search_once(pattern, flags, text).unwrap(),
                        compiled.is_match(text).unwrap(),
                        "{pattern:?} ({flags}) on {text:?}"
                    );
                }
            }
        }
        assert!(matches!(
            Regex::search_once("(", 0, "x"),
            Err(RegexError::Syntax { .. })
        ));
    }
}
