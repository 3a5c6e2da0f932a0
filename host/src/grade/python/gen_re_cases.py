"""Writes host/tests/data/python-re-cases.json: what CPython's re returns for a set of patterns.

The Rust translation of Python regexes is checked against it. Run with CPython 3.11:

    python3.11 host/src/grade/python/gen_re_cases.py > host/tests/data/python-re-cases.json
"""

import json
import re
import sys

CASES = [
    (r"^yes$", 0, "yes\n"), (r"^yes$", 0, "yes\n\n"), (r"^yes$", 8, "no\nyes\nx"),
    (r"\Z", 0, ""), (r"a\Z", 0, "a\n"), (r"a$", 0, "a\nb"), (r"(?m)^b$", 0, "a\nb\n"),
    (r"(\w)\1", 0, "hello"), (r"foo(?!bar)", 0, "foobar foobaz"), (r"(?<=\$)\d+", 0, "cost $42"),
    (r"(?<!x)y", 0, "xy zy"), (r"\d+", 0, "a ٣٤ 5"), (r"\d", 256, "٣ 7"), (r"\w+", 0, "héllo_wörld!"),
    (r"\w+", 256, "héllo"), (r"\s+", 0, "a\x1c\x1db"), (r"\S+", 0, " ab\u3000cd "), (r"\W", 0, "ab-c"),
    (r"\bcat\b", 0, "a cat!"), (r"\Bat", 0, "cat at"), (r".+", 0, "a\nb"), (r".+", 16, "a\nb"),
    (r"(?s:.)x", 0, "\nx"), (r"(?i)straße", 0, "STRAßE"), (r"(?i:a)B", 0, "AB"), (r"(?i:a)B", 0, "Ab"),
    (r"[a-c]+", 2, "xABCx"), (r"a{2}", 0, "aaa"), (r"a{,2}", 0, "aaa"), (r"a{2,}", 0, "aaaa"),
    (r"a{1,2}?", 0, "aa"), (r'{"k": 1}', 0, 'x {"k": 1}'), (r"a{1, 2}", 0, "a{1, 2}"), (r"x{}", 0, "x{}"),
    (r"[]]", 0, "a]"), (r"[^]]+", 0, "ab]"), (r"[a-]+", 0, "-a-"), (r"[\d.]+", 0, "v1.2"),
    (r"[0-9--5]+", 0, "x-/5z"), (r"[a&&b]+", 0, "x&&ab"), (r"[[]", 0, "a["), (r"[\w-]+", 0, "a-b c"),
    (r"(?P<year>\d{4})-(?P<m>\d\d)", 0, "on 2024-05-01"), (r"(?P<q>['\"]).*?(?P=q)", 0, "say 'hi' \"x\""),
    (r"(a)|(b)", 0, "b"), (r"(a)?b", 0, "b"), (r"(\w+)=(\d+)", 0, "a=1 b=2"), (r"(\w)=\d", 0, "a=1 b=2"),
    (r"a*", 0, "baaab"), (r"x*", 0, "abc"), (r"", 0, "ab"), (r"\b", 0, "ab cd"),
    (r"(?x) a b # comment\n c", 0, "abc"), (r"a b", 64, "ab"), (r"a[ ]b", 64, "a b"), (r"a\ b", 64, "a b"),
    (r"(?#note)ab", 0, "ab"), (r"(<)?a(?(1)>|$)", 0, "<a>"), (r"(<)?a(?(1)>|$)", 0, "a"),
    (r"(?>a+)b", 0, "aab"), (r"a++a", 0, "aaa"), (r"\x41\u00e9\U0001F600", 0, "Aé😀"), (r"\101\0", 0, "A\0"),
    (r"[\101-\103]+", 0, "ABCD"), (r"\.\*\+", 0, "a.*+"), (r"\t\n", 0, "a\t\nb"), (r"\-\#\&\~", 0, "-#&~"),
    (r"Confirmation: [A-Z]{3}\d{3}", 0, "Booked. Confirmation: ABC123 thanks"), (r"price(?= USD)", 0, "price USD"),
    (r"(?i)ΟΔΟΣ", 0, "οδος"), (r"^\d+$", 0, "line\n42"), (r"^\d+$", 8, "line\n42"),
    (r"(a|b)*c", 0, "abac"), (r"(?:ab)+", 0, "ababa"), (r"((a)(b))", 0, "ab"),
    # non-ASCII text for the classes and boundaries; the engine's own word characters differ
    (r"\w+", 0, "naïve café"), (r"\w+", 0, "a\u0301b"), (r"\w", 0, "Ⓐ"), (r"\w", 0, "x²"),
    (r"\bcafé\b", 0, "un café."), (r"\bé", 0, "aé"), (r"e\b", 0, "e\u0301"), (r"x\b", 0, "x²"),
    (r"x\b", 0, "xⒶ"), (r"\b\w+\b", 0, "x\u0301y"), (r"x\B", 0, "x²"), (r"\B", 0, ""),
    (r"\B", 0, " "), (r"\b", 0, ""), (r"\B", 256, ""), (r"\B", 256, "aéb"), (r"x\b", 256, "xé"), (r"\d+", 0, "١٢٣"),
    (r"\d", 0, "²"), (r"\D+", 0, "١a٢"),
    # flags, anchors and the empty pattern on the plain engine
    (r"(?i)capital of .+ is paris\b", 0, "The Capital of France is PARIS."), (r"(?i)k", 0, "\u212a"),
    (r"(?i)ſ", 0, "S"), (r"a$", 0, "a\n"), (r"a$", 0, "a\n\n"), (r"a$|b", 0, "xb"), (r"^$", 0, "\n"),
    (r"a\n$", 0, "a\n\n"), (r"(?:a$)", 0, "a\n"), (r"(?s)a.b", 0, "a\nb"), (r"(?m)^b$", 0, "a\nb\nc"),
    (r"(?m)a$", 0, "a\nb"), (r"", 0, ""), (r"", 0, "x"), (r"(?<![\d-])12°C and \w+", 0, "it is 12°C and sunny"),
    (r"(?<![\d-])12°C", 0, "-12°C"), (r"Confirmation: [A-Z]{3}\d{3}", 0, "Confirmation: ABC12"),
    # lookbehinds, repeated ones too
    (r"(?<![\d-])12°C", 0, "12°C and sunny"), (r"(?<![\d-])12°C", 0, "x12°C"), (r"(?<=a)b", 0, "b"),
    (r"(?<=a)b", 0, "cab"), (r"(?<!a)b", 0, "ab ab"), (r"(?<!a)b", 0, "abb"), (r"(?<!\d)x|y", 0, "1x"),
    (r"(?<!\d)x|y", 0, "1xy"), (r"(?<!a|b)c", 0, "bc ac"), (r"(?<!a|b)c", 0, "bc dc"),
    (r"(?<!ab)c", 0, "abc xbc"), (r"(?<!ab)c", 0, "abc"), (r"(?<!\w)\d+", 0, "a1 2"), (r"(?<!\w)\d+", 0, "a1"),
    (r"(?i)(?<!a)b", 0, "Ab"), (r"(?i)(?<!a)b", 0, "xB"), (r"(?<!.)x", 0, "\nx"), (r"(?<!.)x", 0, "ax"),
    (r"(?s)(?<!.)x", 0, "\nx"), (r"(?<!é)x", 0, "éx ex"), (r"(?<!é)x", 0, "éx"), (r"(?<=[^a])b", 0, "b"),
    (r"(?<!a)*b", 0, "ab"), (r"(?<!a)?b", 0, "ab"), (r"(?<!\b)x", 0, "ax"), (r"(?<![a-z])\bcat", 0, "a cat"),
    (r"(?<!a)(?<!b)c", 0, "bc"), (r"(?<!a)(?<!b)c", 0, "bc xc"), (r"(?<=a)b$", 0, "ab\n"),
    (r"(?=(a))?a", 0, "a"), (r"(?=(a))??a", 0, "a"), (r"(?=(a))*?a", 0, "ba"), (r"(?=a)+a", 0, "ba"),
    (r"(?=a)+b", 0, "ab"), (r"(?=(a)){0}a", 0, "a"), (r"(?!a){2,3}b", 0, "b"), (r"(?=(x))*+x", 0, "x"),
    (r"(?a)(?<!\w)1", 0, "é1"), (r"(?<!\W)1", 0, "é1"), (r"(?<!\s)x", 0, "\u3000x"),
    # invalid in Python
    (r"[unclosed", 0, ""), (r"(abc", 0, ""), (r"abc)", 0, ""), (r"*a", 0, ""), (r"a**", 0, ""),
    (r"\q", 0, ""), (r"[z-a]", 0, ""), (r"(a)\2", 0, ""), (r"(a\1)", 0, ""), (r"a{3,2}", 0, ""),
    (r"a(?i)b", 0, ""), (r"(?P<1a>x)", 0, ""), (r"(?P=nope)", 0, ""), (r"\x4", 0, ""), (r"(?<x)", 0, ""),
    (r"^*", 0, ""), (r"\b+", 0, ""), (r"[\d-z]", 0, ""), (r"(?", 0, ""), (r"\z", 0, ""), (r"(?Lx)", 0, ""),
    (r"[bad", 0, ""), (r"(?P<1>x)", 0, ""), ("\\", 0, ""), (r"(?<=a+)b", 0, ""), (r"\p{L}", 0, ""),
    (r"(?z)", 0, ""), (r"x(?P=n)", 0, ""), (r"(?P<a>x)(?P<a>y)", 0, ""), (r"(?P<a", 0, ""),
    (r"(?P<>x)", 0, ""), (r"(a)(?(0)a)", 0, ""), (r"(?(x)a)", 0, ""), (r"(?(1a)a)", 0, ""), (r"(?P", 0, ""),
    (r"(?Px)", 0, ""), (r"a{2,1}", 0, ""),
]


def result(pattern, flags, text):
    try:
        compiled = re.compile(pattern, flags)
    except re.error as e:
        return {"pattern": pattern, "flags": flags, "text": text, "error": str(e)}
    m = compiled.search(text)
    found = compiled.findall(text)
    return {
        "pattern": pattern,
        "flags": flags,
        "text": text,
        "error": False,
        "match": None if m is None else m.group(0),
        "groups": None if m is None else list(m.groups()),
        "findall": [list(f) if isinstance(f, tuple) else f for f in found],
    }


json.dump([result(*case) for case in CASES], sys.stdout, ensure_ascii=False, indent=1)
sys.stdout.write("\n")
