//! nltk's `meteor_score([reference], hypothesis)` over whitespace tokens: words lowercased and
//! aligned by exact match, then by their Porter stems (nltk's `PorterStemmer`, its default
//! NLTK_EXTENSIONS mode), then by WordNet synonyms of the stems; the F-mean weighted 9 to 1
//! toward recall, less the fragmentation penalty `0.5 * (chunks / matches)^3`.

use std::collections::HashMap;

use super::wordnet::WordNet;
use crate::grade::python;

/// The METEOR score of `hypothesis` against `reference`, in [0, 1].
pub fn score(wordnet: &WordNet, hypothesis: &[&str], reference: &[&str]) -> f64 {
    let lower = |words: &[&str]| -> Vec<(usize, String)> {
        words.iter().map(|w| python::lower(w)).enumerate().collect()
    };
    let (hypothesis, reference) = (lower(hypothesis), lower(reference));
    let (translation, reference_length) = (hypothesis.len(), reference.len());
    let (mut matches, hypothesis, reference) = exact(hypothesis, reference);
    let stems = |words: Vec<(usize, String)>| -> Vec<(usize, String)> {
        words.into_iter().map(|(i, w)| (i, stem(&w))).collect()
    };
    let (stemmed, hypothesis, reference) = exact(stems(hypothesis), stems(reference));
    matches.extend(stemmed);
    matches.extend(synonyms(wordnet, &hypothesis, &reference));
    matches.sort_by_key(|m| m.0);
    let matched = matches.len() as f64;
    if matched == 0.0 || translation == 0 || reference_length == 0 {
        return 0.0;
    }
    let precision = matched / translation as f64;
    let recall = matched / reference_length as f64;
    let fmean = precision * recall / (0.9 * precision + (1.0 - 0.9) * recall);
    let penalty = 0.5 * (chunks(&matches) as f64 / matched).powf(3.0);
    (1.0 - penalty) * fmean
}

type Matches = Vec<(usize, usize)>;
type Words = Vec<(usize, String)>;

/// nltk's `_match_enums`: from the last hypothesis word back, each matched to the last
/// unmatched equal reference word; the matches and the words left on each side.
fn exact(hypothesis: Words, reference: Words) -> (Matches, Words, Words) {
    let mut positions: HashMap<&str, Vec<usize>> = HashMap::new();
    for (j, (_, word)) in reference.iter().enumerate() {
        positions.entry(word).or_default().push(j);
    }
    let mut matches = Vec::new();
    let (mut used_h, mut used_r) = (vec![false; hypothesis.len()], vec![false; reference.len()]);
    for (i, (at, word)) in hypothesis.iter().enumerate().rev() {
        if let Some(j) = positions.get_mut(word.as_str()).and_then(Vec::pop) {
            matches.push((*at, reference[j].0));
            used_h[i] = true;
            used_r[j] = true;
        }
    }
    let rest = |words: &Words, used: &[bool]| -> Words {
        (words.iter().zip(used))
            .filter(|(_, used)| !**used)
            .map(|(w, _)| w.clone())
            .collect()
    };
    let (h, r) = (rest(&hypothesis, &used_h), rest(&reference, &used_r));
    (matches, h, r)
}

/// nltk's `_enum_wordnetsyn_match`: from the last hypothesis word back, each matched to the
/// last unmatched reference word that is one of its synonyms.
fn synonyms(wordnet: &WordNet, hypothesis: &Words, reference: &Words) -> Matches {
    let mut positions: HashMap<&str, Vec<usize>> = HashMap::new();
    for (j, (_, word)) in reference.iter().enumerate() {
        positions.entry(word).or_default().push(j);
    }
    let mut matches = Vec::new();
    for (at, word) in hypothesis.iter().rev() {
        if matches.len() == reference.len() {
            break;
        }
        let names = wordnet.synonyms(word);
        let best = (names.iter())
            .filter_map(|name| Some((*positions.get(name.as_str())?.last()?, name)))
            .max_by_key(|(j, _)| *j);
        if let Some((j, name)) = best {
            positions.get_mut(name.as_str()).map(Vec::pop);
            matches.push((*at, reference[j].0));
        }
    }
    matches
}

/// The fewest runs of matches adjacent on both sides.
fn chunks(matches: &[(usize, usize)]) -> usize {
    1 + (matches.windows(2))
        .filter(|m| !(m[1].0 == m[0].0 + 1 && m[1].1 == m[0].1 + 1))
        .count()
}

/// nltk's `PorterStemmer().stem(word)` in its NLTK_EXTENSIONS mode.
pub fn stem(word: &str) -> String {
    let lowered = python::lower(word);
    if let Some((_, base)) = IRREGULAR.iter().find(|(form, _)| *form == lowered) {
        return base.to_string();
    }
    if word.chars().count() <= 2 {
        return lowered;
    }
    let mut w: Vec<char> = lowered.chars().collect();
    for step in [step1a, step1b, step1c, step2, step3, step4, step5a, step5b] {
        w = step(w);
    }
    w.into_iter().collect()
}

/// NLTK_EXTENSIONS' irregular forms and their stems.
const IRREGULAR: &[(&str, &str)] = &[
    ("sky", "sky"),
    ("skies", "sky"),
    ("dying", "die"),
    ("lying", "lie"),
    ("tying", "tie"),
    ("news", "news"),
    ("innings", "inning"),
    ("inning", "inning"),
    ("outings", "outing"),
    ("outing", "outing"),
    ("cannings", "canning"),
    ("canning", "canning"),
    ("howe", "howe"),
    ("proceed", "proceed"),
    ("exceed", "exceed"),
    ("succeed", "succeed"),
];

type Word = Vec<char>;

fn is_vowel(c: char) -> bool {
    matches!(c, 'a' | 'e' | 'i' | 'o' | 'u')
}

/// Whether each letter is a consonant: `y` is one at the start or after a vowel.
fn consonants(word: &[char]) -> Vec<bool> {
    let mut flags: Vec<bool> = Vec::with_capacity(word.len());
    for (i, &c) in word.iter().enumerate() {
        let flag = if is_vowel(c) {
            false
        } else if c == 'y' {
            i == 0 || !flags[i - 1]
        } else {
            true
        };
        flags.push(flag);
    }
    flags
}

/// m, the number of vowel-consonant sequences.
fn measure(stem: &[char]) -> usize {
    let flags = consonants(stem);
    flags.windows(2).filter(|f| !f[0] && f[1]).count()
}

fn contains_vowel(stem: &[char]) -> bool {
    consonants(stem).iter().any(|c| !c)
}

fn ends_double_consonant(word: &[char]) -> bool {
    let n = word.len();
    n >= 2 && word[n - 1] == word[n - 2] && consonants(word)[n - 1]
}

/// *o: consonant-vowel-consonant, the last not w, x or y; or (NLTK_EXTENSIONS) a two-letter
/// vowel-consonant word.
fn ends_cvc(word: &[char]) -> bool {
    let n = word.len();
    let c = consonants(word);
    (n >= 3 && c[n - 3] && !c[n - 2] && c[n - 1] && !matches!(word[n - 1], 'w' | 'x' | 'y'))
        || (n == 2 && !c[0] && c[1])
}

fn ends_with(word: &[char], suffix: &str) -> bool {
    let suffix: Vec<char> = suffix.chars().collect();
    word.ends_with(&suffix)
}

fn replace(word: &[char], suffix: &str, replacement: &str) -> Word {
    let mut out = word[..word.len() - suffix.chars().count()].to_vec();
    out.extend(replacement.chars());
    out
}

/// A rule's condition on the stem left once its suffix is removed.
type Condition<'a> = &'a dyn Fn(&[char]) -> bool;

/// nltk's `_apply_rule_list`: the first rule whose suffix the word ends with decides.
fn apply(word: Word, rules: &[(&str, &str, Condition)]) -> Word {
    for &(suffix, replacement, condition) in rules {
        if ends_with(&word, suffix) {
            let stem = replace(&word, suffix, "");
            return if condition(&stem) {
                replace(&word, suffix, replacement)
            } else {
                word
            };
        }
    }
    word
}

fn positive(stem: &[char]) -> bool {
    measure(stem) > 0
}

fn above_one(stem: &[char]) -> bool {
    measure(stem) > 1
}

fn always(_: &[char]) -> bool {
    true
}

fn step1a(word: Word) -> Word {
    if ends_with(&word, "ies") && word.len() == 4 {
        return replace(&word, "ies", "ie");
    }
    apply(
        word,
        &[
            ("sses", "ss", &always),
            ("ies", "i", &always),
            ("ss", "ss", &always),
            ("s", "", &always),
        ],
    )
}

fn step1b(word: Word) -> Word {
    if ends_with(&word, "ied") {
        return replace(&word, "ied", if word.len() == 4 { "ie" } else { "i" });
    }
    if ends_with(&word, "eed") {
        return if positive(&replace(&word, "eed", "")) {
            replace(&word, "eed", "ee")
        } else {
            word
        };
    }
    let Some(stem) = ["ed", "ing"]
        .iter()
        .filter(|s| ends_with(&word, s))
        .map(|s| replace(&word, s, ""))
        .find(|stem| contains_vowel(stem))
    else {
        return word;
    };
    for (suffix, replacement) in [("at", "ate"), ("bl", "ble"), ("iz", "ize")] {
        if ends_with(&stem, suffix) {
            return replace(&stem, suffix, replacement);
        }
    }
    if ends_double_consonant(&stem) {
        return if matches!(stem[stem.len() - 1], 'l' | 's' | 'z') {
            stem
        } else {
            stem[..stem.len() - 1].to_vec()
        };
    }
    if measure(&stem) == 1 && ends_cvc(&stem) {
        let mut stem = stem;
        stem.push('e');
        return stem;
    }
    stem
}

fn step1c(word: Word) -> Word {
    apply(
        word,
        &[("y", "i", &|stem: &[char]| {
            stem.len() > 1 && consonants(stem)[stem.len() - 1]
        })],
    )
}

fn step2(word: Word) -> Word {
    if ends_with(&word, "alli") && positive(&replace(&word, "alli", "")) {
        return step2(replace(&word, "alli", "al"));
    }
    let full = word.clone();
    let logi = move |_: &[char]| positive(&full[..full.len() - 3]);
    apply(
        word,
        &[
            ("ational", "ate", &positive),
            ("tional", "tion", &positive),
            ("enci", "ence", &positive),
            ("anci", "ance", &positive),
            ("izer", "ize", &positive),
            ("bli", "ble", &positive),
            ("alli", "al", &positive),
            ("entli", "ent", &positive),
            ("eli", "e", &positive),
            ("ousli", "ous", &positive),
            ("ization", "ize", &positive),
            ("ation", "ate", &positive),
            ("ator", "ate", &positive),
            ("alism", "al", &positive),
            ("iveness", "ive", &positive),
            ("fulness", "ful", &positive),
            ("ousness", "ous", &positive),
            ("aliti", "al", &positive),
            ("iviti", "ive", &positive),
            ("biliti", "ble", &positive),
            ("fulli", "ful", &positive),
            ("logi", "log", &logi),
        ],
    )
}

fn step3(word: Word) -> Word {
    apply(
        word,
        &[
            ("icate", "ic", &positive),
            ("ative", "", &positive),
            ("alize", "al", &positive),
            ("iciti", "ic", &positive),
            ("ical", "ic", &positive),
            ("ful", "", &positive),
            ("ness", "", &positive),
        ],
    )
}

fn step4(word: Word) -> Word {
    let ion = |stem: &[char]| above_one(stem) && matches!(stem.last(), Some('s' | 't'));
    apply(
        word,
        &[
            ("al", "", &above_one),
            ("ance", "", &above_one),
            ("ence", "", &above_one),
            ("er", "", &above_one),
            ("ic", "", &above_one),
            ("able", "", &above_one),
            ("ible", "", &above_one),
            ("ant", "", &above_one),
            ("ement", "", &above_one),
            ("ment", "", &above_one),
            ("ent", "", &above_one),
            ("ion", "", &ion),
            ("ou", "", &above_one),
            ("ism", "", &above_one),
            ("ate", "", &above_one),
            ("iti", "", &above_one),
            ("ous", "", &above_one),
            ("ive", "", &above_one),
            ("ize", "", &above_one),
        ],
    )
}

fn step5a(word: Word) -> Word {
    if ends_with(&word, "e") {
        let stem = replace(&word, "e", "");
        let m = measure(&stem);
        if m > 1 || (m == 1 && !ends_cvc(&stem)) {
            return stem;
        }
    }
    word
}

fn step5b(word: Word) -> Word {
    let full = word.clone();
    apply(
        word,
        &[("ll", "l", &move |_: &[char]| {
            above_one(&full[..full.len() - 1])
        })],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porter_stems_as_nltk_does() {
        // nltk 3.10's PorterStemmer().stem of each word.
        for (word, expected) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "tie"),
            ("cats", "cat"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("conflated", "conflat"),
            ("hopping", "hop"),
            ("falling", "fall"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("generalization", "gener"),
            ("electrical", "electr"),
            ("adjustment", "adjust"),
            ("controlling", "control"),
            ("rolled", "roll"),
            ("dying", "die"),
            ("Running", "run"),
            ("is", "is"),
            ("analogi", "analog"),
            ("jumps", "jump"),
        ] {
            assert_eq!(stem(word), expected, "{word}");
        }
    }

    #[test]
    fn chunks_count_runs_adjacent_on_both_sides() {
        assert_eq!(chunks(&[(0, 0), (1, 1), (2, 5), (3, 6)]), 2);
        assert_eq!(chunks(&[(0, 1), (1, 0)]), 2);
        assert_eq!(chunks(&[(0, 0)]), 1);
    }
}
