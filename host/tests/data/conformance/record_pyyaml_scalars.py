"""Records how PyYAML's `yaml.safe_load` (which evaldeck 0.1.5 reads case files with) reads a
scalar, into pyyaml-scalars.json.

Run with the peers' venv (bench/.venv, see bench/run.sh):
    bench/.venv/bin/python host/tests/data/conformance/record_pyyaml_scalars.py

Each scalar is written as the value of `v:` in a one-line document. Recorded: the scalar as
written, and the Python type name and `repr()` of what `safe_load` made of it, or the name of
the exception it raised.
"""
import json
import os

import yaml

here = os.path.dirname(os.path.abspath(__file__))

PLAIN = [
    # booleans: YAML 1.1's words in three case forms; single letters stay text
    "y", "Y", "n", "N", "yes", "Yes", "YES", "yEs", "no", "No", "NO", "on", "On", "ON", "oN",
    "off", "Off", "OFF", "true", "True", "TRUE", "tRUE", "false", "False", "FALSE",
    # nulls
    "~", "null", "Null", "NULL", "nULL", "", "None", "none",
    # integers
    "0", "-0", "+0", "7", "+7", "-7", "1_000", "1__0", "_1", "1_", "010", "0_10", "-010",
    "08", "09", "0o17", "0O17", "0x1F", "0x_1f", "-0x1F", "+0x1f", "0X1F", "0b101", "-0b1_01",
    "0B101", "0b2", "1:20", "-1:20", "1:20:30", "1:60", "1:5:7", "0:20", "01:20",
    "9223372036854775807", "9223372036854775808", "18446744073709551616", "-9223372036854775808",
    "-9223372036854775809",
    # floats
    "1.0", "1.", "-1.", "+1.5", ".5", "-.5", "+.5", "._5", "1e3", "1E3", "1e+3", "1.0e3",
    "1.0e+3", "1.0E-3", "1.e+3", "1_0.5_0", "0.1", "1.5e-7", "1e16", "1.0e+16", "12345678901234567.0",
    "1:20.5", "-1:20.5", "1:20:30.25", ".inf", "-.inf", "+.inf", ".Inf", ".INF", ".iNf",
    ".nan", ".NaN", ".NAN", "-.nan", "inf", "nan", "0.", "00.5", "-0.0",
    # timestamps
    "2024-01-01", "2024-1-1", "2024-01-01T10:20:30", "2024-01-01 10:20:30",
    "2024-01-01t10:20:30Z", "2024-01-01T10:20:30.5+02:00", "2024-13-01", "24-01-01",
    # other words
    "<<", "=", "hello", "Hello world", "1 2", "0.1.2", "1-2", "@", "`", "#x", "x#y", "-",
    "y n", "yes please", "True!", "'", "a: b", "[]", "{}",
]

QUOTED = [
    "'y'", "'yes'", "'on'", "'true'", "'~'", "'null'", "''", "'1'", "'1.0'", "'.inf'",
    "'2024-01-01'", "'0x1F'", "'<<'", "'='", '"y"', '"no"', '"7"', '"null"', '""', '"\\x41"',
    '"a\\tb"', "'it''s'",
]

TAGGED = [
    "!!str 1", "!!str yes", "!!str ~", "!!str", "!!int '7'", "!!int 0x1F", "!!int 0o17",
    "!!float '1'", "!!float 1e3", "!!bool 'yes'", "!!bool y", "!!null 'x'", "! 1", "! yes",
    "!foo bar", "!!int x", "!!binary aGk=", "!!timestamp 2024-01-01", "!!set {a}", "!!map {a: 1}",
    "!!seq [1]", "|\n  y", ">\n  on",
]

vectors = []
for text in PLAIN + QUOTED + TAGGED:
    entry = {"yaml": text}
    try:
        value = yaml.safe_load("v: " + text)["v"]
        entry["type"] = type(value).__name__
        entry["repr"] = repr(value)
    except Exception as e:
        entry["error"] = type(e).__name__
    vectors.append(entry)

with open(os.path.join(here, "pyyaml-scalars.json"), "w") as f:
    json.dump({"pyyaml": yaml.__version__, "vectors": vectors}, f, indent=1)
    f.write("\n")
