"""Writes host/tests/data/python-format-cases.json: what letta-evals' rubric formatting
(`string.Formatter().vformat(rubric, (), substitutions)`, every value a `str`) gives for a set of
templates under CPython. gavel's template rendering is checked against it. Run with CPython 3.11:

    python3.11 host/src/grade/judge/gen_format_cases.py > host/tests/data/python-format-cases.json
"""

import json
import string
import sys

VARS = {
    "input": "What's 2+2?",
    "submission": "héllo wörld",
    "ground_truth": "",
    "n": "5",
    "w": "10",
    "a": ">",
    "q": "it's \"q\"\n\t\x07é😀\u200b",
}

TEMPLATES = [
    "plain text", "", "{input}", "{{input}}", "{{{input}}}", "}}{{", "a {submission} b {input} c",
    "{input!r}", "{input!s}", "{input!a}", "{q!r}", "{q!a}", "{submission!a}", "{ground_truth!r}",
    "{n:>5}", "{n:<5}|", "{n:^5}|", "{n:^6}|", "{submission:*^15}", "{submission:é>14}", "{n:05}",
    "{n:<05}", "{n:>05}", "{input:.4}", "{input:10.4}|", "{submission:.0}|", "{n:s}", "{n:5s}|",
    "{n:}", "{n!r:>7}", "{n!s:_<4}", "{input:{w}}|", "{input:{a}{w}}|", "{input:{a}{w}.{n}}|",
    "{n:{n}{{}}", "{n:>{w}}", "{input[0]}", "{input[3]}", "{submission[1]}", "{input[0][0]}",
    "{input[99]}", "{n:<1}", "{submission:😀^13}", "{input:}}", "{q:.3!r}", "{n:x<3}{n:y>3}",
    # errors
    "}", "a } b", "{", "x {", "{input", "{input!r", "{input!}", "{input!rr}", "{input!x}",
    "{input:{w}", "{}", "{0}", "{1}", "{!r}", "{:>3}", "{input.upper}", "{input.nope}", "{input.}",
    "{input[}", "{input[0}", "{input[x]}", "{input[-1]}", "{input[0]x}", "{[0]}", "{.x}",
    "{n:d}", "{n:+}", "{n:-}", "{n: }", "{n:#}", "{n:=5}", "{n:z}", "{n:,}", "{n:_}", "{n:,s}",
    "{n:_s}", "{n:,_}", "{n:.}", "{n:.x}", "{n:5x}", "{n:xx}", "{n:5.2.1}", "{n:ss}", "{n:é}",
    "{n:99999999999999999999}", "{n:.99999999999999999999}", "{n:{a}{a}}", "{n:{nope}}",
    "{input:{w:{n}}}", "{input:{w:>{n}}}", "{nope}", "{nope!r}", "{nope:{w}}", "{in put}",
    "{a{b}", "{n!}", "{n!r:}", "{n!r:^9}", "{n!\u00e9}", "{n\x00}", "{n:\x01}", "{n:\x7f<3}",
    "{input:{n}d}", "{input:{w}{w}}", "{{}", "{}}", "{ }", "{n[0]:>3}", "{ground_truth:>3}|",
]


def record(template):
    try:
        return {"template": template, "result": string.Formatter().vformat(template, (), VARS)}
    except Exception as e:  # noqa: BLE001: every exception is recorded
        message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        return {"template": template, "error": {"type": type(e).__name__, "message": message}}


json.dump({"vars": VARS, "cases": [record(t) for t in TEMPLATES]}, sys.stdout, ensure_ascii=False, indent=1)
sys.stdout.write("\n")
