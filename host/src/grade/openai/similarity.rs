//! The `text_similarity` metrics, each computed as the library that defines it computes it:
//! rapidfuzz's `fuzz.ratio`, nltk's `sentence_bleu` and `sentence_gleu` over whitespace tokens,
//! and rouge-score's `RougeScorer` F-measure (no stemmer). `tests/openai_similarity.py` checks
//! them against those libraries.

use std::collections::HashMap;
use std::hash::Hash;

use super::wordnet::WordNet;

/// The most pairs of elements (characters for `fuzzy_match`, tokens for `rouge_l`) a longest
/// common subsequence is computed over: about a second of one core, as 64 pairs take one step.
const MAX_PAIRS: u64 = 1 << 36;

/// Two texts too long to compare within [`MAX_PAIRS`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the input ({input} {unit}) and the reference ({reference} {unit}) are too long for {metric} \
     to compare: at most {MAX_PAIRS} pairs of {unit}, {} here",
    *input as u64 * *reference as u64
)]
pub struct TooLong {
    metric: &'static str,
    unit: &'static str,
    input: usize,
    reference: usize,
}

/// A `text_similarity` metric that gavel computes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    FuzzyMatch,
    Bleu,
    Gleu,
    /// ROUGE-N for N in 1..=5.
    Rouge(usize),
    RougeL,
}

impl Metric {
    /// Every metric name OpenAI documents, with gavel's metric where gavel computes it here.
    pub const NAMES: &[(&str, Option<Metric>)] = &[
        ("fuzzy_match", Some(Metric::FuzzyMatch)),
        ("bleu", Some(Metric::Bleu)),
        ("gleu", Some(Metric::Gleu)),
        ("meteor", None),
        ("cosine", None),
        ("rouge_1", Some(Metric::Rouge(1))),
        ("rouge_2", Some(Metric::Rouge(2))),
        ("rouge_3", Some(Metric::Rouge(3))),
        ("rouge_4", Some(Metric::Rouge(4))),
        ("rouge_5", Some(Metric::Rouge(5))),
        ("rouge_l", Some(Metric::RougeL)),
    ];

    /// The score of `input` against `reference`, in [0, 1].
    pub fn score(self, input: &str, reference: &str) -> Result<f64, TooLong> {
        Ok(match self {
            // rapidfuzz's `fuzz.ratio` / 100: the normalized Indel similarity of the two texts'
            // characters, `1 - (insertions + deletions) / (len(a) + len(b))`, 1 for two empty
            // texts.
            Metric::FuzzyMatch => {
                let input: Vec<char> = input.chars().collect();
                let reference: Vec<char> = reference.chars().collect();
                let total = input.len() + reference.len();
                if total == 0 {
                    return Ok(1.0);
                }
                let common = common(&input, &reference, "fuzzy_match", "characters")?;
                2.0 * common as f64 / total as f64
            }
            Metric::Bleu => bleu(&words(reference), &words(input)),
            Metric::Gleu => gleu(&words(reference), &words(input)),
            Metric::Rouge(n) => {
                let (reference, input) = (rouge_tokens(reference), rouge_tokens(input));
                let (r, i) = (ngrams(&reference, n), ngrams(&input, n));
                f_measure(overlap(&r, &i), count(&i), count(&r))
            }
            Metric::RougeL => {
                let (reference, input) = (rouge_tokens(reference), rouge_tokens(input));
                let common = common(&input, &reference, "rouge_l", "tokens")?;
                f_measure(common, input.len(), reference.len())
            }
        })
    }
}

/// nltk's `meteor_score([reference], input)` over whitespace tokens.
pub fn meteor(wordnet: &WordNet, input: &str, reference: &str) -> f64 {
    super::meteor::score(wordnet, &words(input), &words(reference))
}

/// Python's `str.split()`: runs of whitespace separate, none at either end.
fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}

/// rouge-score's tokenizer without a stemmer: lowercase, every run of characters other than
/// ASCII letters and digits a separator.
fn rouge_tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// The n-grams of `tokens` with their counts.
fn ngrams<T: AsRef<str>>(tokens: &[T], n: usize) -> HashMap<Vec<&str>, usize> {
    let mut counts = HashMap::new();
    if n > 0 && tokens.len() >= n {
        for window in tokens.windows(n) {
            let gram: Vec<&str> = window.iter().map(AsRef::as_ref).collect();
            *counts.entry(gram).or_insert(0) += 1;
        }
    }
    counts
}

fn count(grams: &HashMap<Vec<&str>, usize>) -> usize {
    grams.values().sum()
}

/// The n-grams of `candidate` also in `reference`, each counted at most as often as there.
fn overlap(reference: &HashMap<Vec<&str>, usize>, candidate: &HashMap<Vec<&str>, usize>) -> usize {
    candidate
        .iter()
        .map(|(gram, n)| (*n).min(reference.get(gram).copied().unwrap_or(0)))
        .sum()
}

/// rouge-score's F-measure of `matched` units out of `candidate` and `reference` units.
fn f_measure(matched: usize, candidate: usize, reference: usize) -> f64 {
    let precision = matched as f64 / candidate.max(1) as f64;
    let recall = matched as f64 / reference.max(1) as f64;
    if precision + recall > 0.0 {
        2.0 * precision * recall / (precision + recall)
    } else {
        0.0
    }
}

/// The length of the longest common subsequence of `metric`'s `input` and `reference`, whose
/// elements are `unit`; why not past [`MAX_PAIRS`].
fn common<T: Eq + Hash>(
    input: &[T],
    reference: &[T],
    metric: &'static str,
    unit: &'static str,
) -> Result<usize, TooLong> {
    lcs(input, reference).ok_or(TooLong {
        metric,
        unit,
        input: input.len(),
        reference: reference.len(),
    })
}

/// The length of the longest common subsequence of `a` and `b`; none past [`MAX_PAIRS`].
///
/// Hyyrö's bit-parallel form of Allison and Dix's recurrence: a bit a position of `a`, all
/// set at first; for each element of `b`, with `u` the set bits where `a` holds it,
/// `v = (v + u) | (v & !u)`, added across 64-bit words with carries. The length is the number
/// of bits cleared at the end. Each word of `a` costs a step an element of `b`, where the
/// table of lengths costs a step a pair.
fn lcs<T: Eq + Hash>(a: &[T], b: &[T]) -> Option<usize> {
    let words = a.len().div_ceil(64);
    if (words as u64 * 64).saturating_mul(b.len() as u64) > MAX_PAIRS {
        return None;
    }
    // The words where each element of `a` stands, with its bits in them, in order.
    let mut places: HashMap<&T, Vec<(usize, u64)>> = HashMap::new();
    for (i, x) in a.iter().enumerate() {
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        let list = places.entry(x).or_default();
        match list.last_mut() {
            Some((last, bits)) if *last == word => *bits |= bit,
            _ => list.push((word, bit)),
        }
    }
    let mut v = vec![u64::MAX; words];
    for y in b {
        // Where `a` does not hold `y`, `u` is empty and `v` stays.
        let Some(list) = places.get(y) else { continue };
        let mut bits = list.iter().peekable();
        let mut carry = false;
        for (word, v) in v.iter_mut().enumerate().skip(list[0].0) {
            let m = match bits.next_if(|(at, _)| *at == word) {
                Some(&(_, m)) => m,
                None if !carry && bits.peek().is_none() => break,
                None => 0,
            };
            let u = *v & m;
            let (sum, over) = v.overflowing_add(u);
            let (sum, over_carry) = sum.overflowing_add(u64::from(carry));
            carry = over || over_carry;
            *v = sum | (*v & !u);
        }
    }
    // Bits past `a`'s end, in its last word, are not positions.
    let cleared = |(word, v): (usize, &u64)| {
        let used = (a.len() - word * 64).min(64);
        let mask = if used == 64 {
            u64::MAX
        } else {
            (1 << used) - 1
        };
        (!v & mask).count_ones() as usize
    };
    Some(v.iter().enumerate().map(cleared).sum())
}

/// nltk's `sentence_bleu([reference], hypothesis)`: uniform weights over 1- to 4-grams, the
/// brevity penalty, no smoothing (a precision of 0 counts as the smallest float, as nltk's
/// default does; no unigram in common scores 0).
fn bleu(reference: &[&str], hypothesis: &[&str]) -> f64 {
    let mut log_sum = 0.0;
    for n in 1..=4 {
        let (r, h) = (ngrams(reference, n), ngrams(hypothesis, n));
        let matched = overlap(&r, &h);
        if n == 1 && matched == 0 {
            return 0.0;
        }
        let precision = if matched == 0 {
            f64::MIN_POSITIVE
        } else {
            matched as f64 / count(&h).max(1) as f64
        };
        log_sum += 0.25 * precision.ln();
    }
    let (c, r) = (hypothesis.len() as f64, reference.len() as f64);
    let brevity = if c > r {
        1.0
    } else if c == 0.0 {
        0.0
    } else {
        (1.0 - r / c).exp()
    };
    brevity * log_sum.exp()
}

/// nltk's `sentence_gleu([reference], hypothesis)`: matched 1- to 4-grams over the larger of the
/// hypothesis's and the reference's counts of them.
fn gleu(reference: &[&str], hypothesis: &[&str]) -> f64 {
    let (mut matched, mut in_hypothesis, mut in_reference) = (0, 0, 0);
    for n in 1..=4 {
        let (r, h) = (ngrams(reference, n), ngrams(hypothesis, n));
        matched += overlap(&r, &h);
        in_hypothesis += count(&h);
        in_reference += count(&r);
    }
    let total = in_hypothesis.max(in_reference);
    if total == 0 {
        0.0
    } else {
        matched as f64 / total as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn each_metric_scores_known_pairs_as_its_library_does() {
        // Worked by hand from the definitions; tests/openai_similarity.py compares with the libraries.
        assert!(close(
            Metric::FuzzyMatch.score_ok("kitten", "sitting"),
            8.0 / 13.0
        ));
        assert!(close(Metric::FuzzyMatch.score_ok("", ""), 1.0));
        let hyp = "the cat sat on the mat";
        let reference = "the cat is on the mat";
        assert!(close(Metric::Rouge(1).score_ok(hyp, reference), 5.0 / 6.0));
        assert!(close(Metric::Rouge(2).score_ok(hyp, reference), 3.0 / 5.0));
        assert!(close(Metric::RougeL.score_ok(hyp, reference), 5.0 / 6.0));
        assert!(close(Metric::Gleu.score_ok(hyp, reference), 9.0 / 18.0));
        assert!(Metric::Bleu.score_ok(hyp, reference) < 1e-60);
        assert!(close(Metric::Bleu.score_ok(hyp, hyp), 1.0));
        assert_eq!(Metric::Bleu.score_ok("a b", "c d"), 0.0);
        assert!(close(
            Metric::Rouge(1).score_ok("Café au lait!", "cafe AU lait"),
            2.0 / 3.0
        ));
    }

    impl Metric {
        fn score_ok(self, input: &str, reference: &str) -> f64 {
            self.score(input, reference).expect("within the bound")
        }
    }

    /// The table of lengths, a pair at a time: what the bit-parallel form must agree with.
    fn lcs_by_table<T: PartialEq>(a: &[T], b: &[T]) -> usize {
        let mut row = vec![0usize; b.len() + 1];
        for x in a {
            let mut diagonal = 0;
            for (j, y) in b.iter().enumerate() {
                let above = row[j + 1];
                row[j + 1] = if x == y {
                    diagonal + 1
                } else {
                    above.max(row[j])
                };
                diagonal = above;
            }
        }
        row[b.len()]
    }

    #[test]
    fn the_bit_parallel_subsequence_agrees_with_the_table() {
        // A small generator: the same sequences every run.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for round in 0..400 {
            let alphabet = [2, 4, 26, 300][round % 4];
            let (la, lb) = (next(200) as usize, next(200) as usize);
            let a: Vec<u64> = (0..la).map(|_| next(alphabet)).collect();
            let b: Vec<u64> = (0..lb).map(|_| next(alphabet)).collect();
            assert_eq!(lcs(&a, &b), Some(lcs_by_table(&a, &b)), "{a:?} {b:?}");
        }
        // Lengths at and around the words' edges.
        for n in [63, 64, 65, 127, 128, 129] {
            let a: Vec<u8> = (0..n).map(|i| (i % 3) as u8).collect();
            let b: Vec<u8> = (0..n).rev().map(|i| (i % 5) as u8).collect();
            assert_eq!(lcs(&a, &b), Some(lcs_by_table(&a, &b)), "{n}");
            assert_eq!(lcs(&a, &a), Some(n));
        }
    }

    #[test]
    fn texts_past_the_bound_are_refused_not_compared() {
        let long = "ab".repeat(200_000);
        let error = Metric::FuzzyMatch.score(&long, &long).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the input (400000 characters) and the reference (400000 characters) are too long \
             for fuzzy_match to compare: at most 68719476736 pairs of characters, \
             160000000000 here"
        );
        let words = "ab ".repeat(300_000);
        assert!(Metric::RougeL.score(&words, &words).is_err());
        assert!(
            Metric::Rouge(1).score(&words, &words).is_ok(),
            "n-grams are linear"
        );
        // Long texts within it are compared.
        let within = "ab".repeat(10_000);
        assert!(close(Metric::FuzzyMatch.score_ok(&within, &within), 1.0));
    }
}
