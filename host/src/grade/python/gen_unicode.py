"""Writes unicode_tables.rs, unicode_names.txt and tests/data/python-unicode-digests.json: the
character data of CPython's str and re, and digests of CPython's answers for every code point.

letta-evals supports CPython 3.11, whose Unicode database is 14.0; Rust's own tables are newer,
and characters assigned since (Garay capitals lowering to Garay smalls, new letters counted
as word characters) would change verdicts. Run with CPython 3.11 from the repository root:

    python3.11 host/src/grade/python/gen_unicode.py [NAME_ALIASES]

NAME_ALIASES is a file of Unicode 14.0's character name aliases, which `unicodedata` resolves
but cannot list: NameAliases.txt (`code;alias;type` lines) or perl's unicore/Name.pl (default:
/usr/share/perl/5.36.0/unicore/Name.pl, perl 5.36's copy of Unicode 14.0). Every alias read
there is kept only when `unicodedata.lookup` resolves it to that character.
"""

import hashlib
import json
import os
import re
import sys
import unicodedata

import _sre
from re._casefix import _EXTRA_CASES

HERE = os.path.dirname(os.path.abspath(__file__))
DIGESTS = os.path.join(HERE, "..", "..", "..", "tests", "data", "python-unicode-digests.json")
BLOCK = 0x1000
DEFAULT_ALIASES = "/usr/share/perl/5.36.0/unicore/Name.pl"
MAX = 0x110000


def ranges(predicate):
    """Inclusive ranges of the code points for which `predicate` holds."""
    out = []
    start = None
    for cp in range(MAX):
        if predicate(cp):
            if start is None:
                start = cp
        elif start is not None:
            out.append((start, cp - 1))
            start = None
    if start is not None:
        out.append((start, MAX - 1))
    return out


def sigma_classes():
    """Each character's part in str.lower()'s final-sigma rule, read from str.lower() itself.

    ('A' + c + 'Σ') ends in 'ς' when c is case-ignorable or cased; (c + 'Σ') when c is cased and
    not case-ignorable. A case-ignorable character is skipped whether cased or not.
    """
    ignorable, cased = set(), set()
    for cp in range(MAX):
        c = chr(cp)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        either = ("A" + c + "Σ").lower().endswith("ς")
        cased_only = (c + "Σ").lower().endswith("ς")
        if cased_only:
            cased.add(cp)
        elif either:
            ignorable.add(cp)
    return ignorable, cased


def lower_table():
    single, multi = [], []
    for cp in range(MAX):
        if 0xD800 <= cp <= 0xDFFF or cp == 0x3A3:
            continue
        lowered = chr(cp).lower()
        if lowered == chr(cp):
            continue
        if len(lowered) == 1:
            single.append((cp, ord(lowered)))
        else:
            multi.append((cp, lowered))
    return single, multi


def ignorecase_groups():
    """The sets of characters that match one another under re.IGNORECASE (Unicode).

    A cased literal L matches c when tolower(c) is tolower(L) or one of its _EXTRA_CASES; the
    sets are checked to partition the characters, so that a class under IGNORECASE is its
    members' sets together.
    """
    by_lower = {}
    for cp in range(MAX):
        by_lower.setdefault(_sre.unicode_tolower(cp), []).append(cp)

    def matches(cp):
        if not _sre.unicode_iscased(cp):
            return frozenset([cp])
        lo = _sre.unicode_tolower(cp)
        out = set()
        for k in (lo,) + _EXTRA_CASES.get(lo, ()):
            out.update(by_lower.get(k, ()))
        return frozenset(out)

    groups = {}
    for cp in range(MAX):
        group = matches(cp)
        if len(group) > 1:
            groups.setdefault(group, cp)
    for group in groups:
        for cp in group:
            assert matches(cp) == group, f"not a partition at {cp:X}"
    # A category inside a class is tested on the lowered character: every category must
    # hold for a character exactly when it holds for its lowercase.
    for cp in range(MAX):
        lo = _sre.unicode_tolower(cp)
        for category in ("isalnum", "isdecimal", "isspace"):
            assert getattr(chr(cp), category)() == getattr(chr(lo), category)(), (cp, category)
    return sorted(sorted(group) for group in groups)


def aliases(path):
    """(code point, alias) pairs from NameAliases.txt or perl's Name.pl, kept when CPython
    resolves them."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith("Name.pl"):
        body = text.split("return <<'END';\n", 1)[1].split("\nEND\n", 1)[0]
        for entry in body.split("\n\n"):
            lines = entry.strip().split("\n")
            if len(lines) == 2 and " " not in lines[0]:
                pairs.append((int(lines[0], 16), lines[1]))
    else:
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                code, alias, _kind = line.split(";")
                pairs.append((int(code, 16), alias))
    kept = []
    for cp, alias in pairs:
        try:
            found = unicodedata.lookup(alias)
        except KeyError:
            continue
        if found == chr(cp) and unicodedata.name(found, None) != alias:
            kept.append((alias, cp))
    return kept


def names(alias_path):
    """Every name unicodedata.lookup resolves to one character, but the CJK unified ideographs'
    and the Hangul syllables' (spelled out by rule), with the aliases."""
    out = []
    for cp in range(MAX):
        name = unicodedata.name(chr(cp), None)
        if name is None or name.startswith(("CJK UNIFIED IDEOGRAPH-", "HANGUL SYLLABLE ")):
            continue
        assert unicodedata.lookup(name) == chr(cp), name
        out.append((name, cp))
    out.extend(aliases(alias_path))
    out.sort()
    return out


def write_names(rows):
    """Sorted names, each line `<length of the prefix shared with the previous name>:<rest>;<hex
    code point>`: names share long prefixes (LATIN SMALL LETTER ...), which this leaves out."""
    previous = ""
    lines = []
    for name, cp in rows:
        shared = 0
        while shared < min(len(name), len(previous)) and name[shared] == previous[shared]:
            shared += 1
        lines.append(f"{shared}:{name[shared:]};{cp:X}\n")
        previous = name
    with open(os.path.join(HERE, "unicode_names.txt"), "w", encoding="ascii") as f:
        f.writelines(lines)


def write_ranges(out, name, rows, doc):
    out.write(f"/// {doc}\n")
    out.write(f"pub(super) static {name}: [(u32, u32); {len(rows)}] = [\n")
    for lo, hi in rows:
        out.write(f"    (0x{lo:04X}, 0x{hi:04X}),\n")
    out.write("];\n\n")


def digests():
    """For each block of 0x1000 code points (surrogates left out), the SHA-256 of what CPython
    says of each character, so that a test can check gavel's functions over every code point
    without the data: `lower` is `c.lower()` NUL-separated; `sigma` the same of `'A' + c + 'Σ'`,
    `c + 'Σ'` and `'AΣ' + c`; `space`, `printable`, `word`, `digit` and `re_space` one byte
    `1` or `0` for `c.isspace()`, `c.isprintable()` and whether re's `\\w`, `\\d`, `\\s`
    match c."""
    word, digit, space = re.compile(r"\w"), re.compile(r"\d"), re.compile(r"\s")
    kinds = {
        "lower": lambda c: c.lower() + "\0",
        "sigma": lambda c: ("A" + c + "Σ").lower() + (c + "Σ").lower() + ("AΣ" + c).lower() + "\0",
        "space": lambda c: "1" if c.isspace() else "0",
        "printable": lambda c: "1" if c.isprintable() else "0",
        "word": lambda c: "1" if word.match(c) else "0",
        "digit": lambda c: "1" if digit.match(c) else "0",
        "re_space": lambda c: "1" if space.match(c) else "0",
    }
    out = {}
    for kind, describe in kinds.items():
        blocks = []
        for start in range(0, MAX, BLOCK):
            h = hashlib.sha256()
            for cp in range(start, start + BLOCK):
                if not 0xD800 <= cp <= 0xDFFF:
                    h.update(describe(chr(cp)).encode("utf-8"))
            blocks.append(h.hexdigest())
        out[kind] = blocks
    with open(DIGESTS, "w", encoding="ascii") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def main():
    digests()
    alias_path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_ALIASES
    write_names(names(alias_path))
    ignorable, cased = sigma_classes()
    single, multi = lower_table()
    groups = ignorecase_groups()
    path = os.path.join(HERE, "unicode_tables.rs")
    with open(path, "w", encoding="utf-8") as out:
        out.write("// @generated by host/src/grade/python/gen_unicode.py; do not edit.\n")
        out.write(
            f"// CPython {sys.version.split()[0]}, Unicode {unicodedata.unidata_version}.\n\n"
        )
        write_ranges(out, "SPACE", ranges(lambda cp: chr(cp).isspace()), "`str.isspace()`.")
        write_ranges(
            out,
            "NON_PRINTABLE",
            ranges(lambda cp: not chr(cp).isprintable()),
            "Where `str.isprintable()` is false.",
        )
        write_ranges(
            out,
            "WORD",
            ranges(lambda cp: chr(cp).isalnum() or cp == 0x5F),
            "`re`'s `\\w`: `str.isalnum()` or `_`.",
        )
        write_ranges(
            out, "DIGIT", ranges(lambda cp: chr(cp).isdecimal()), "`re`'s `\\d`: `str.isdecimal()`."
        )
        write_ranges(
            out,
            "CASED",
            ranges(lambda cp: cp in cased),
            "Cased and not case-ignorable, for `str.lower()`'s final sigma.",
        )
        write_ranges(
            out,
            "CASE_IGNORABLE",
            ranges(lambda cp: cp in ignorable),
            "Case-ignorable, for `str.lower()`'s final sigma.",
        )
        out.write("/// `str.lower()` of the characters it maps to one other character.\n")
        out.write(f"pub(super) static LOWER: [(u32, u32); {len(single)}] = [\n")
        for cp, lo in single:
            out.write(f"    (0x{cp:04X}, 0x{lo:04X}),\n")
        out.write("];\n\n")
        out.write("/// `str.lower()` of the characters it maps to several.\n")
        # One line, as rustfmt writes the one entry CPython 3.11 has.
        entries = []
        for cp, lo in multi:
            escaped = "".join("\\u{%04x}" % ord(c) for c in lo)
            entries.append(f'(0x{cp:04X}, "{escaped}")')
        out.write(
            f"pub(super) static LOWER_MULTI: [(u32, &str); {len(multi)}] = [{', '.join(entries)}];\n\n"
        )
        write_ranges(
            out,
            "CJK_UNIFIED",
            ranges(
                lambda cp: (unicodedata.name(chr(cp), "")).startswith("CJK UNIFIED IDEOGRAPH-")
            ),
            "The CJK unified ideographs, named `CJK UNIFIED IDEOGRAPH-<hex>`.",
        )
        out.write(
            "/// The sets of characters `re.IGNORECASE` (without ASCII) matches for one another:\n"
            "/// a cased character matches the characters whose lowercase is its lowercase or one\n"
            "/// of `re._casefix`'s extra cases.\n"
        )
        out.write(f"pub(super) static IGNORECASE_GROUPS: [&[u32]; {len(groups)}] = [\n")
        for group in groups:
            members = ", ".join(f"0x{cp:04X}" for cp in group)
            out.write(f"    &[{members}],\n")
        out.write("];\n")


if __name__ == "__main__":
    main()
