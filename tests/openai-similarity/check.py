"""gavel's text_similarity metrics against the libraries that define them, on generated pairs.

Each pair is graded by the real `gavel run` (one `kind: openai` grader per metric, over rows in
OpenAI's eval shape) and by rapidfuzz (`fuzz.ratio`), nltk (`sentence_bleu`, `sentence_gleu`,
`meteor_score` over `str.split()` words, the last with nltk's WordNet reader over the same
WordNet folder gavel reads) and rouge-score (`RougeScorer`, no stemmer, F-measure); every score
must agree within TOLERANCE.

    python check.py PATH/TO/gavel WORDNET [PAIRS]
"""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from nltk.translate.bleu_score import sentence_bleu
import nltk
from nltk.corpus.reader.wordnet import WordNetCorpusReader
from nltk.translate.gleu_score import sentence_gleu
from nltk.translate.meteor_score import meteor_score
from rapidfuzz import fuzz
from rouge_score import rouge_scorer

TOLERANCE = 1e-9
SEED = 20261128
ROUGE = {f"rouge_{n}": f"rouge{n}" for n in range(1, 6)} | {"rouge_l": "rougeL"}
WORDS = (
    "the cat sat on mat a dog ran is was Paris capital of France Jupiter largest planet "
    "THE Cat café naïve 42 3.14 don't e-mail x y z over under quick brown fox jumps lazy "
    "big large huge Running runs ran fast car automobile cars glad happy happily geese goose "
    "children child relational generalization hopping studies studied sky skies dying "
    "dogs canine kid auto speedy"
).split()
# Words METEOR aligns by their stems or as WordNet synonyms: a mutation swaps one for another
# of its group.
KIN = [
    "big large huge",
    "car cars automobile auto",
    "happy glad happily",
    "fast quick speedy",
    "child children kid",
    "run runs running ran",
    "goose geese",
    "study studies studied",
    "dog dogs canine",
    "sky skies",
]
KIN_WORDS = " ".join(KIN).split()
GLUE = [" ", " ", " ", "  ", ", ", ". ", "\t", "\n", "!", "-", "'"]


def lexicon(folder):
    """Words of WordNet's index and inflections of them, for METEOR's stems and morphy's rules
    over a real vocabulary."""
    rng = random.Random(SEED)
    lemmas = sorted(
        line.split(" ", 1)[0]
        for part in ("noun", "verb", "adj", "adv")
        for line in (Path(folder) / f"index.{part}").read_text().splitlines()
        if line and not line.startswith(" ") and "_" not in line.split(" ", 1)[0]
    )
    chosen = rng.sample(lemmas, 1500)
    return chosen + [w + rng.choice(["s", "es", "ed", "ing", "er", "est", "ly", "ies", "ness"]) for w in chosen]


def text(rng, vocabulary):
    n = rng.choice([0, 1, 2, 3, 4, 6, 9, 14])
    pool = (WORDS, KIN_WORDS, vocabulary)[rng.randrange(3)]
    return "".join(rng.choice(pool) + rng.choice(GLUE) for _ in range(n)).strip(" ")


def mutated(rng, source, vocabulary):
    words = source.split(" ")
    for _ in range(rng.randint(0, 3)):
        action = rng.randrange(5)
        kin = [group.split() for group in KIN if any(w.lower() in group.split() for w in words)]
        if action == 4 and kin:
            group = rng.choice(kin)
            at = [i for i, w in enumerate(words) if w.lower() in group]
            words[rng.choice(at)] = rng.choice(group)
        elif action == 0 and words:
            del words[rng.randrange(len(words))]
        elif action == 1:
            words.insert(rng.randint(0, len(words)), rng.choice(WORDS + vocabulary))
        elif action == 2 and len(words) > 1:
            i, j = rng.randrange(len(words)), rng.randrange(len(words))
            words[i], words[j] = words[j], words[i]
        elif words:
            i = rng.randrange(len(words))
            words[i] = words[i].upper()
    return " ".join(words)


def pairs(count, vocabulary):
    rng = random.Random(SEED)
    out = [("", ""), ("a", ""), ("", "a"), ("same words here", "same words here")]
    while len(out) < count:
        reference = text(rng, vocabulary)
        hypothesis = mutated(rng, reference, vocabulary) if rng.random() < 0.7 else text(rng, vocabulary)
        out.append((hypothesis, reference))
    return out


class WordNet(WordNetCorpusReader):
    """nltk's reader, without the map to nltk_data's own WordNet that its multilingual data
    needs (it would look for nltk_data; METEOR reads the English synsets alone)."""

    def map_wn(self, version="wordnet"):
        return None


def wordnet_reader(folder):
    """nltk's reader over WordNet's dict files; Debian's lack `lexnames`, whose names nltk reads
    but METEOR does not use, so the files are copied to a folder with one, which nltk is told
    it may read."""
    copy = Path(tempfile.mkdtemp())
    for file in Path(folder).iterdir():
        if file.is_file():
            shutil.copyfile(file, copy / file.name)
    if not (copy / "lexnames").exists():
        (copy / "lexnames").write_text("".join(f"{i:02d}\tlex.{i}\t0\n" for i in range(45)))
    nltk.data.path.append(str(copy))
    warnings.simplefilter("ignore")
    return WordNet(str(copy), None)


def references(hypothesis, reference, scorer, wordnet):
    warnings.simplefilter("ignore")
    h, r = hypothesis.split(), reference.split()
    rouge = scorer.score(reference, hypothesis)
    scores = {
        "fuzzy_match": fuzz.ratio(hypothesis, reference) / 100,
        "bleu": sentence_bleu([r], h),
        "gleu": sentence_gleu([r], h),
        "meteor": meteor_score([r], h, wordnet=wordnet),
    }
    scores.update({name: rouge[key].fmeasure for name, key in ROUGE.items()})
    return scores


def main():
    gavel = Path(sys.argv[1]).resolve()
    folder = Path(sys.argv[2]).resolve()
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 400
    cases = pairs(count, lexicon(folder))
    metrics = ["fuzzy_match", "bleu", "gleu", "meteor", *ROUGE]
    wordnet = wordnet_reader(folder)
    environment = {**os.environ, "GAVEL_WORDNET": str(folder)}
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        rows = [{"item": {"reference": r}, "sample": {"output_text": h}} for h, r in cases]
        (work / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        graders = "".join(
            f"  {m}:\n    kind: openai\n    grader:\n      type: text_similarity\n"
            f"      input: '{{{{sample.output_text}}}}'\n      reference: '{{{{item.reference}}}}'\n"
            f"      evaluation_metric: {m}\n      pass_threshold: 0.5\n"
            for m in metrics
        )
        (work / "suite.yaml").write_text(f"name: similarity\ndataset: data.jsonl\ngraders:\n{graders}")
        run = subprocess.run(
            [gavel, "run", "suite.yaml", "-o", "out", "-q"],
            cwd=work,
            capture_output=True,
            text=True,
            env=environment,
        )
        if run.returncode not in (0, 1):
            sys.exit(f"gavel run failed ({run.returncode}):\n{run.stderr}")
        results = [json.loads(line) for line in (work / "out/results.jsonl").read_text().splitlines()]
    scorer = rouge_scorer.RougeScorer(list(ROUGE.values()), use_stemmer=False)
    wrong = []
    for (hypothesis, reference), result in zip(cases, results, strict=True):
        expected = references(hypothesis, reference, scorer, wordnet)
        for metric in metrics:
            got = result["grades"][metric]["score"]
            if abs(got - expected[metric]) > TOLERANCE:
                wrong.append(f"{metric}: {hypothesis!r} vs {reference!r}: gavel {got}, reference {expected[metric]}")
    for line in wrong[:20]:
        print(line)
    print(f"{len(cases)} pairs x {len(metrics)} metrics: {len(cases) * len(metrics) - len(wrong)} agree within {TOLERANCE}, {len(wrong)} differ")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
