//! WordNet 3.0's synonyms, as nltk's `WordNetCorpusReader.synsets` finds them, for `meteor`.
//!
//! The database is read at run time from a folder of WordNet's dict files (`index.*`, `data.*`,
//! `*.exc`): `GAVEL_WORDNET`, else Debian's `/usr/share/wordnet` (package `wordnet-base`). It is
//! some 23 MB, too large to carry in the binary. It is loaded once per process, when the first
//! grader asking `meteor` is checked; the data files stay in memory and a synset's line is read
//! at its offset when asked, as nltk seeks it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::fsio;
use crate::grade::python;

/// The variable naming WordNet's folder.
pub const VARIABLE: &str = "GAVEL_WORDNET";

/// Where Debian's `wordnet-base` installs the dict files.
const DEBIAN: &str = "/usr/share/wordnet";

/// morphy's endings and what replaces each.
type Substitutions = &'static [(&'static str, &'static str)];

/// nltk's parts of speech in the order `synsets` asks them, with their files' suffix and
/// morphy's substitutions.
const PARTS: [(&str, &str, Substitutions); 4] = [
    (
        "n",
        "noun",
        &[
            ("s", ""),
            ("ses", "s"),
            ("ves", "f"),
            ("xes", "x"),
            ("zes", "z"),
            ("ches", "ch"),
            ("shes", "sh"),
            ("men", "man"),
            ("ies", "y"),
        ],
    ),
    (
        "v",
        "verb",
        &[
            ("s", ""),
            ("ies", "y"),
            ("es", "e"),
            ("es", ""),
            ("ed", "e"),
            ("ed", ""),
            ("ing", "e"),
            ("ing", ""),
        ],
    ),
    (
        "a",
        "adj",
        &[("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    ),
    ("r", "adv", &[]),
];

/// One part of speech's files.
struct Part {
    /// Each lemma's synset offsets in `data`.
    index: HashMap<String, Vec<usize>>,
    /// Inflected forms and their base forms.
    exceptions: HashMap<String, Vec<String>>,
    data: Vec<u8>,
}

/// The WordNet database.
pub struct WordNet {
    parts: Vec<Part>,
}

impl std::fmt::Debug for WordNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WordNet")
    }
}

/// The process's WordNet, loaded on first use; the error says what is missing and how to fix it.
pub fn get() -> Result<&'static WordNet, &'static Unavailable> {
    static LOADED: OnceLock<Result<WordNet, Unavailable>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let (folder, named) = match std::env::var_os(VARIABLE) {
                Some(folder) => (PathBuf::from(folder), true),
                None => (PathBuf::from(DEBIAN), false),
            };
            WordNet::load(&folder).map_err(|error| Unavailable { error, named })
        })
        .as_ref()
}

/// Why `meteor` has no WordNet, and how to give it one: set [`VARIABLE`] when it is `named`
/// (the folder was), else install WordNet or set it.
#[derive(Debug, thiserror::Error)]
#[error(
    "`meteor` needs WordNet, which cannot be read: {error}; {}",
    if *named {
        format!("set {VARIABLE} to a folder holding WordNet 3.0's dict files")
    } else {
        format!(
            "install WordNet 3.0 (Debian and Ubuntu: apt-get install wordnet-base) or set \
             {VARIABLE} to a folder holding its dict files"
        )
    }
)]
pub struct Unavailable {
    #[source]
    error: WordNetError,
    named: bool,
}

/// Why WordNet's dict files cannot be read: one cannot be opened, or an index line is not as
/// nltk reads it.
#[derive(Debug, thiserror::Error)]
pub enum WordNetError {
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: {error}", path.display())]
    Index {
        path: PathBuf,
        #[source]
        error: IndexError,
    },
}

/// A line of an index file that nltk would not read, numbered from 1.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("line {line}: field {field} is not a number")]
    NotNumber { line: usize, field: usize },
    #[error("line {line}: the part of speech is not `{pos}`")]
    OtherPart { line: usize, pos: &'static str },
}

impl WordNet {
    /// Reads the dict files of `folder`.
    pub fn load(folder: &Path) -> Result<WordNet, WordNetError> {
        let read = |name: String| {
            let path = folder.join(name);
            fsio::read_regular(&path, fsio::cap::DOCUMENT)
                .map(|bytes| (String::from_utf8_lossy(&bytes).into_owned(), bytes))
                .map_err(|error| WordNetError::Read { path, error })
        };
        let mut parts = Vec::new();
        for (pos, suffix, _) in PARTS {
            let (index_text, _) = read(format!("index.{suffix}"))?;
            let (exceptions_text, _) = read(format!("{suffix}.exc"))?;
            let (_, data) = read(format!("data.{suffix}"))?;
            let index = parse_index(&index_text, pos).map_err(|error| WordNetError::Index {
                path: folder.join(format!("index.{suffix}")),
                error,
            })?;
            let exceptions = (exceptions_text.lines())
                .filter_map(|line| {
                    let mut terms = python::split_whitespace(line);
                    let first = terms.next()?;
                    Some((first.to_string(), terms.map(str::to_string).collect()))
                })
                .collect();
            parts.push(Part {
                index,
                exceptions,
                data,
            });
        }
        Ok(WordNet { parts })
    }

    /// nltk's set of synonyms of `word` for `meteor`: the names without `_` of the lemmas of
    /// every synset of every part of speech that `word` or a base form of it (morphy) has, and
    /// `word` itself.
    pub fn synonyms(&self, word: &str) -> HashSet<String> {
        let lowered = python::lower(word);
        let mut names = HashSet::from([word.to_string()]);
        for (part, (_, _, substitutions)) in self.parts.iter().zip(PARTS) {
            for form in part.morphy(&lowered, substitutions) {
                for &offset in &part.index[form.as_str()] {
                    names.extend(
                        part.lemma_names(offset)
                            .filter(|name| !name.contains('_'))
                            .map(str::to_string),
                    );
                }
            }
        }
        names
    }
}

impl Part {
    /// nltk's `_morphy`: the word's base forms in this part's index, the exception list's
    /// when it lists the word, else those the substitutions make, the word itself first.
    fn morphy(&self, form: &str, substitutions: Substitutions) -> Vec<String> {
        let mut forms = vec![form.to_string()];
        match self.exceptions.get(form) {
            Some(bases) => forms.extend(bases.iter().cloned()),
            None => forms.extend((substitutions.iter()).filter_map(|(old, new)| {
                form.strip_suffix(old).map(|stem| stem.to_string() + new)
            })),
        }
        let mut seen = HashSet::new();
        forms.retain(|f| self.index.contains_key(f) && seen.insert(f.clone()));
        forms
    }

    /// The lemma names of the synset at `offset` of the data file, their syntactic markers
    /// (`(a)`, `(p)`, `(ip)`) removed; none when no synset starts there.
    fn lemma_names(&self, offset: usize) -> impl Iterator<Item = &str> {
        let line = (self.data.get(offset..))
            .and_then(|rest| rest.split(|&b| b == b'\n').next())
            .and_then(|line| std::str::from_utf8(line).ok())
            .filter(|line| line.get(..8).and_then(|o| o.parse::<usize>().ok()) == Some(offset))
            .unwrap_or_default();
        let mut fields = line.split(' ');
        let count = fields
            .nth(3)
            .and_then(|n| usize::from_str_radix(n, 16).ok())
            .unwrap_or(0);
        fields
            .step_by(2)
            .take(count)
            .map(|name| match name.rfind('(') {
                Some(at) if name.ends_with(')') && !name[at..name.len() - 1].contains(')') => {
                    &name[..at]
                }
                _ => name,
            })
    }
}

/// An index file's lemmas and their synset offsets, as nltk reads them; `pos` is the part its
/// lines must name.
fn parse_index(text: &str, pos: &'static str) -> Result<HashMap<String, Vec<usize>>, IndexError> {
    let mut index = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        if line.starts_with(' ') || line.is_empty() {
            continue;
        }
        let line_number = number + 1;
        let fields: Vec<&str> = python::split_whitespace(line).collect();
        let number_at = |i: usize| -> Result<usize, IndexError> {
            (fields.get(i))
                .and_then(|n| n.parse().ok())
                .ok_or(IndexError::NotNumber {
                    line: line_number,
                    field: i + 1,
                })
        };
        if fields.get(1) != Some(&pos) {
            return Err(IndexError::OtherPart {
                line: line_number,
                pos,
            });
        }
        let synsets = number_at(2)?;
        let pointers = number_at(3)?;
        let first = 4 + pointers + 2;
        let offsets = (first..first + synsets)
            .map(number_at)
            .collect::<Result<Vec<_>, _>>()?;
        index.insert(fields[0].to_string(), offsets);
    }
    Ok(index)
}
