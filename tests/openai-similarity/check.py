"""gavel's text_similarity metrics against the libraries that define them, on generated pairs.

Each pair is graded by the real `gavel run` (one `kind: openai` grader per metric, over rows in
OpenAI's eval shape) and by rapidfuzz (`fuzz.ratio`), nltk (`sentence_bleu`, `sentence_gleu`
over `str.split()` words) and rouge-score (`RougeScorer`, no stemmer, F-measure); every score
must agree within TOLERANCE.

    python check.py PATH/TO/gavel [PAIRS]
"""

import json
import random
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from nltk.translate.bleu_score import sentence_bleu
from nltk.translate.gleu_score import sentence_gleu
from rapidfuzz import fuzz
from rouge_score import rouge_scorer

TOLERANCE = 1e-9
SEED = 20261128
ROUGE = {f"rouge_{n}": f"rouge{n}" for n in range(1, 6)} | {"rouge_l": "rougeL"}
WORDS = (
    "the cat sat on mat a dog ran is was Paris capital of France Jupiter largest planet "
    "THE Cat café naïve 42 3.14 don't e-mail x y z over under quick brown fox jumps lazy"
).split()
GLUE = [" ", " ", " ", "  ", ", ", ". ", "\t", "\n", "!", "-", "'"]


def text(rng):
    n = rng.choice([0, 1, 2, 3, 4, 6, 9, 14])
    return "".join(rng.choice(WORDS) + rng.choice(GLUE) for _ in range(n)).strip(" ")


def mutated(rng, source):
    words = source.split(" ")
    for _ in range(rng.randint(0, 3)):
        action = rng.randrange(4)
        if action == 0 and words:
            del words[rng.randrange(len(words))]
        elif action == 1:
            words.insert(rng.randint(0, len(words)), rng.choice(WORDS))
        elif action == 2 and len(words) > 1:
            i, j = rng.randrange(len(words)), rng.randrange(len(words))
            words[i], words[j] = words[j], words[i]
        elif words:
            i = rng.randrange(len(words))
            words[i] = words[i].upper()
    return " ".join(words)


def pairs(count):
    rng = random.Random(SEED)
    out = [("", ""), ("a", ""), ("", "a"), ("same words here", "same words here")]
    while len(out) < count:
        reference = text(rng)
        out.append((mutated(rng, reference) if rng.random() < 0.7 else text(rng), reference))
    return out


def references(hypothesis, reference, scorer):
    warnings.simplefilter("ignore")
    h, r = hypothesis.split(), reference.split()
    rouge = scorer.score(reference, hypothesis)
    scores = {
        "fuzzy_match": fuzz.ratio(hypothesis, reference) / 100,
        "bleu": sentence_bleu([r], h),
        "gleu": sentence_gleu([r], h),
    }
    scores.update({name: rouge[key].fmeasure for name, key in ROUGE.items()})
    return scores


def main():
    gavel = Path(sys.argv[1]).resolve()
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    cases = pairs(count)
    metrics = ["fuzzy_match", "bleu", "gleu", *ROUGE]
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        rows = [{"item": {"reference": r}, "sample": {"output_text": h}} for h, r in cases]
        (folder / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
        graders = "".join(
            f"  {m}:\n    kind: openai\n    grader:\n      type: text_similarity\n"
            f"      input: '{{{{sample.output_text}}}}'\n      reference: '{{{{item.reference}}}}'\n"
            f"      evaluation_metric: {m}\n      pass_threshold: 0.5\n"
            for m in metrics
        )
        (folder / "suite.yaml").write_text(f"name: similarity\ndataset: data.jsonl\ngraders:\n{graders}")
        run = subprocess.run(
            [gavel, "run", "suite.yaml", "-o", "out", "-q"], cwd=folder, capture_output=True, text=True
        )
        if run.returncode not in (0, 1):
            sys.exit(f"gavel run failed ({run.returncode}):\n{run.stderr}")
        results = [json.loads(line) for line in (folder / "out/results.jsonl").read_text().splitlines()]
    scorer = rouge_scorer.RougeScorer(list(ROUGE.values()), use_stemmer=False)
    wrong = []
    for (hypothesis, reference), result in zip(cases, results, strict=True):
        expected = references(hypothesis, reference, scorer)
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
