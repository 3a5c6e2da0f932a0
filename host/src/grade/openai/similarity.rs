//! The `text_similarity` metrics, each computed as the library that defines it computes it:
//! rapidfuzz's `fuzz.ratio`, nltk's `sentence_bleu` and `sentence_gleu` over whitespace tokens,
//! and rouge-score's `RougeScorer` F-measure (no stemmer). `tests/openai_similarity.py` checks
//! them against those libraries.

use std::collections::HashMap;

use super::wordnet::WordNet;

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
    pub fn score(self, input: &str, reference: &str) -> f64 {
        match self {
            Metric::FuzzyMatch => fuzzy_ratio(input, reference),
            Metric::Bleu => bleu(&words(reference), &words(input)),
            Metric::Gleu => gleu(&words(reference), &words(input)),
            Metric::Rouge(n) => {
                let (reference, input) = (rouge_tokens(reference), rouge_tokens(input));
                let (r, i) = (ngrams(&reference, n), ngrams(&input, n));
                f_measure(overlap(&r, &i), count(&i), count(&r))
            }
            Metric::RougeL => {
                let (reference, input) = (rouge_tokens(reference), rouge_tokens(input));
                f_measure(lcs(&reference, &input), input.len(), reference.len())
            }
        }
    }
}

/// nltk's `meteor_score([reference], input)` over whitespace tokens.
pub fn meteor(wordnet: &WordNet, input: &str, reference: &str) -> f64 {
    super::meteor::score(wordnet, &words(input), &words(reference))
}

/// rapidfuzz's `fuzz.ratio` / 100: the normalized Indel similarity of the two texts' characters,
/// `1 - (insertions + deletions) / (len(a) + len(b))`, 1 for two empty texts.
fn fuzzy_ratio(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    2.0 * lcs(&a, &b) as f64 / total as f64
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

/// The length of the longest common subsequence.
fn lcs<T: PartialEq>(a: &[T], b: &[T]) -> usize {
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
            Metric::FuzzyMatch.score("kitten", "sitting"),
            8.0 / 13.0
        ));
        assert!(close(Metric::FuzzyMatch.score("", ""), 1.0));
        let hyp = "the cat sat on the mat";
        let reference = "the cat is on the mat";
        assert!(close(Metric::Rouge(1).score(hyp, reference), 5.0 / 6.0));
        assert!(close(Metric::Rouge(2).score(hyp, reference), 3.0 / 5.0));
        assert!(close(Metric::RougeL.score(hyp, reference), 5.0 / 6.0));
        assert!(close(Metric::Gleu.score(hyp, reference), 9.0 / 18.0));
        assert!(Metric::Bleu.score(hyp, reference) < 1e-60);
        assert!(close(Metric::Bleu.score(hyp, hyp), 1.0));
        assert_eq!(Metric::Bleu.score("a b", "c d"), 0.0);
        assert!(close(
            Metric::Rouge(1).score("Café au lait!", "cafe AU lait"),
            2.0 / 3.0
        ));
    }
}
