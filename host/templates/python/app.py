"""The {{name}} pack: a grader and an extractor, each a plain function registered with `pack`.

`./build.sh` tests them (test_app.py) and builds build/{{ident}}.wasm; `gavel run suite.yaml`
grades dataset.jsonl with them. README.md walks through adding a function.
"""

from gavel_pack import GradeError, PackBuilder, assistant_texts, failed, ground_truth, passed

pack = PackBuilder("{{name}}", "0.1.0")


# ---------------------------------------------------------------------------------------------
# contains_answer: the ground truth appears in the submission

def contains_answer_config(config: dict) -> bool:
    """The suite's `config:` for `contains_answer`: `case_sensitive` (default false)."""
    unknown = set(config) - {"case_sensitive"}
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}; expected case_sensitive")
    case_sensitive = config.get("case_sensitive", False)
    if not isinstance(case_sensitive, bool):
        raise ValueError(f"config.case_sensitive: {case_sensitive!r} is not true or false")
    return case_sensitive


@pack.grader(needs_ground_truth=True, config=contains_answer_config)
def contains_answer(sample, trajectory, submission, case_sensitive):
    """The submission contains the ground truth (case-insensitive unless configured)."""
    answer = ground_truth(sample)
    if answer is None:
        raise GradeError("the sample has no ground_truth")
    answer = answer.strip()
    text = submission.strip()
    found = answer in text if case_sensitive else answer.lower() in text.lower()
    if found:
        return passed(f"found '{answer}'")
    return failed(f"'{answer}' is not in the answer", expected=answer, actual=text)


# ---------------------------------------------------------------------------------------------
# final_answer: the text after the last marker

def final_answer_config(config: dict) -> str:
    """The suite's `extractor_config:` for `final_answer`: `marker` (default `FINAL ANSWER:`)."""
    unknown = set(config) - {"marker"}
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}; expected marker")
    marker = config.get("marker", "FINAL ANSWER:")
    if not isinstance(marker, str) or not marker:
        raise ValueError("config.marker: must be a non-empty string")
    return marker


@pack.extractor(config=final_answer_config)
def final_answer(sample, trajectory, marker):
    """The text after the last 'FINAL ANSWER:' in the agent's messages."""
    # Messages from the last to the first; in a message, the last marker, up to the line's end.
    for message in reversed(assistant_texts(trajectory)):
        at = message.rfind(marker)
        if at >= 0:
            return message[at + len(marker):].split("\n", 1)[0].strip()
    return None


# The class componentize-py exports as `gavel:grader/pack`.
Pack = pack.component()
