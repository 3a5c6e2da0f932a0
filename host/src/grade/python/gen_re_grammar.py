"""Writes host/tests/data/python-re-grammar.jsonl: random patterns from a grammar of Python's `re`
syntax, with texts, and what CPython's `re` makes of each.

Each line is one case: `{"pattern", "flags", "text"}` and either `"error": true` (re.compile
refused the pattern) or the first match of `re.search` as code-point spans: `"match": null` or
`[start, end]`, and `"groups": [[start, end] or null, ...]`. The grammar covers what graders
write and where a translation to another engine can go wrong: classes and their ranges,
categories, anchors, word boundaries, every group kind, look-arounds (repeated, and of
variable width), back-references, conditionals, lazy and possessive quantifiers, inline and
scoped flags (ASCII with IGNORECASE among them), named characters, and texts with characters
whose case or category differs between Unicode versions or between Python and other engines.

Run with CPython 3.11 from the repository root (the output is the same on every run):

    python3.11 host/src/grade/python/gen_re_grammar.py > host/tests/data/python-re-grammar.jsonl
"""

import json
import random
import re
import sys
import warnings

SEED = 20261126
PATTERNS = 3000
TEXTS_PER_PATTERN = 2

# Literal characters: ASCII, and ones whose case, category or width is special.
LITERALS = list("abcxyzABXZ019 _-.,:") + [
    "é", "É", "σ", "Σ", "ς", "ß", "ẞ", "k", "K", "\u212a", "s", "S", "\u017f", "i", "I",
    "\u0131", "\u0130", "٣", "²", "Ⓐ", "\u0301", "\u3000", "\x1c", "\n", "\t", "ǅ", "ǆ",
    "\U00010d50", "\U00010d70", "\U00011f04", "µ", "ΐ", "ﬀ", "\u1e9b", "Ω", "\u2126",
    "\U00010400", "\U00010428", "\u1c89", "\U0001e900", "\U0001e922",
]
META = set("\\.^$*+?{}[]()|#&~-")
NAMES = [
    "LATIN SMALL LETTER E WITH ACUTE", "latin small letter e with acute", "GREEK SMALL LETTER SIGMA",
    "DIGIT ONE", "SPACE", "LINE FEED", "NBSP", "KELVIN SIGN", "CJK UNIFIED IDEOGRAPH-4E00",
    "HANGUL SYLLABLE GA", "NO SUCH NAME", "LATIN CAPITAL LETTER A WITH MACRON AND GRAVE",
    "hangul syllable ga", "EM DASH", "cjk compatibility ideograph-f900",
]
CATEGORIES = ["\\d", "\\D", "\\w", "\\W", "\\s", "\\S"]
FLAG_LETTERS = ["i", "a", "m", "s", "x", "ai", "ia", "is", "im", "u", "L", "au"]
FLAG_VALUES = [0, 0, 0, re.I, re.I | re.A, re.A, re.M, re.S, re.X, re.I | re.M]


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.groups = 0
        self.names = []

    def pick(self, items):
        return self.rng.choice(items)

    def char(self):
        c = self.pick(LITERALS)
        return c, ("\\" + c if c in META else c)

    def literal(self):
        c, src = self.char()
        return src, lambda: c

    def class_(self):
        members, sample = [], []
        for _ in range(self.rng.randint(1, 3)):
            kind = self.rng.random()
            if kind < 0.5:
                c, src = self.char()
                members.append(src if c not in "]\\^-" else "\\" + c)
                sample.append(c)
            elif kind < 0.75:
                a, b = sorted([self.pick(LITERALS[:20]), self.pick(LITERALS)])
                if self.rng.random() < 0.1:
                    a, b = b, a
                esc = lambda c: "\\" + c if c in "]\\^-[" else c
                members.append(f"{esc(a)}-{esc(b)}")
                sample.append(a)
            elif kind < 0.95:
                members.append(self.pick(CATEGORIES))
            else:
                members.append(self.pick(["-", "[", "&&", "--", "~~", "\\b", "\\N{DIGIT ONE}"]))
        negate = self.rng.random() < 0.2
        src = "[" + ("^" if negate else "") + "".join(members) + "]"
        return src, lambda: self.pick(sample or ["a"]) if sample and not negate else self.pick(LITERALS)

    def atom(self, depth):
        r = self.rng.random()
        if r < 0.35 or depth > 2:
            return self.literal()
        if r < 0.42:
            return ".", lambda: self.pick(LITERALS)
        if r < 0.52:
            return self.class_()
        if r < 0.60:
            cat = self.pick(CATEGORIES)
            return cat, lambda: self.pick(LITERALS)
        if r < 0.66:
            return self.pick(["^", "$", "\\A", "\\Z", "\\b", "\\B"]), lambda: ""
        if r < 0.69:
            name = self.pick(NAMES)
            return "\\N{" + name + "}", lambda: self.pick(LITERALS)
        if r < 0.72 and self.groups:
            n = self.rng.randint(1, self.groups + 1)
            if self.names and self.rng.random() < 0.5:
                return "(?P=" + self.pick(self.names) + ")", lambda: ""
            return "\\" + str(n), lambda: ""
        if r < 0.74 and self.groups:
            yes, ys = self.alternation(depth + 1)
            no, ns = self.alternation(depth + 1)
            return f"(?({self.rng.randint(1, self.groups)}){yes}|{no})", ys
        body, sample = self.alternation(depth + 1)
        kind = self.pick(["(", "(", "(?:", "(?P<", "(?>", "(?=", "(?!", "(?<=", "(?<!", "flags"])
        if kind == "(":
            self.groups += 1
            return f"({body})", sample
        if kind == "(?P<":
            self.groups += 1
            name = f"g{self.groups}"
            self.names.append(name)
            return f"(?P<{name}>{body})", sample
        if kind == "flags":
            on = self.pick(["i", "a", "s", "m", "x", "ai", "", "-i", "i-s"])
            if on.startswith("-") or "-" in on or on == "":
                on = on or "-i"
            return f"(?{on}:{body})", sample
        if kind in ("(?=", "(?<="):
            return f"{kind}{body})", lambda: ""
        if kind in ("(?!", "(?<!"):
            return f"{kind}{body})", lambda: ""
        return f"{kind}{body})", sample

    def quantified(self, depth):
        src, sample = self.atom(depth)
        if self.rng.random() < 0.3:
            q, lo, hi = self.pick(
                [("*", 0, 3), ("+", 1, 3), ("?", 0, 1), ("{2}", 2, 2), ("{1,3}", 1, 3),
                 ("{,2}", 0, 2), ("{2,}", 2, 4), ("{0}", 0, 0), ("{1, 2}", 1, 1)]
            )
            q += self.pick(["", "", "?", "+"])
            n = self.rng.randint(lo, hi)
            return src + q, lambda: "".join(sample() for _ in range(n))
        return src, sample

    def sequence(self, depth):
        parts = [self.quantified(depth) for _ in range(self.rng.randint(1, 4 if depth == 0 else 2))]
        return "".join(p for p, _ in parts), lambda: "".join(s() for _, s in parts)

    def alternation(self, depth):
        branches = [self.sequence(depth) for _ in range(1 if self.rng.random() < 0.75 else 2)]
        src = "|".join(b for b, _ in branches)
        return src, lambda: self.pick(branches)[1]()

    def pattern(self):
        src, sample = self.alternation(0)
        if self.rng.random() < 0.15:
            src = "(?" + self.pick(FLAG_LETTERS) + ")" + src
        return src, sample


def noise(rng, text):
    """The text, sometimes with a character changed, its case swapped, or others around it."""
    r = rng.random()
    if r < 0.2 and text:
        i = rng.randrange(len(text))
        text = text[:i] + rng.choice(LITERALS) + text[i + 1:]
    elif r < 0.35:
        text = text.swapcase()
    if rng.random() < 0.5:
        text = "".join(rng.choice(LITERALS) for _ in range(rng.randint(0, 3))) + text
    if rng.random() < 0.3:
        text += "".join(rng.choice(LITERALS) for _ in range(rng.randint(0, 2)))
    return text


def verdict(pattern, flags, text):
    case = {"pattern": pattern, "flags": flags, "text": text}
    try:
        compiled = re.compile(pattern, flags)
    except (re.error, OverflowError, ValueError):
        case["error"] = True
        return case
    m = compiled.search(text)
    case["match"] = None if m is None else list(m.span())
    case["groups"] = None if m is None else [
        None if m.span(i) == (-1, -1) else list(m.span(i)) for i in range(1, compiled.groups + 1)
    ]
    return case


def main():
    # CPython warns of classes that a future version may read as set operations; this one
    # reads them literally, as recorded.
    warnings.simplefilter("ignore", FutureWarning)
    rng = random.Random(SEED)
    seen = set()
    out = sys.stdout
    while len(seen) < PATTERNS:
        gen = Gen(rng)
        pattern, sample = gen.pattern()
        flags = rng.choice(FLAG_VALUES)
        if (pattern, flags) in seen:
            continue
        seen.add((pattern, flags))
        texts = []
        for _ in range(TEXTS_PER_PATTERN):
            text = noise(rng, sample())
            if text not in texts:
                texts.append(text)
        for text in texts:
            out.write(json.dumps(verdict(pattern, flags, text), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
