"""Times users' own Python graders: gavel running them in its sandbox, a fresh WebAssembly
instance per call, against the peers calling the same functions natively in CPython, and against
gavel's floor (functions of the same forms that read nothing and return a constant), on the same
rows, in one run. Run by bench/python-graders.sh, which builds gavel, prepares the virtualenv and
generates the workload first. Standard library only; the timing helpers are the peer benchmark's
(harness.py).
"""

import argparse
import json
import sys
import time
from pathlib import Path

from harness import CommandFailed, gavel_tallies, machine, measure, median_run, remove

# The seed's evaldeck functions, and the suite keys gavel grades them under.
EVALDECK_FUNCTIONS = {"booking": "check_booking_format", "search": "validate_search_args"}
LETTA_GRADER = "answer"
# The floors' modules (in bench/python) and their one function, which returns a constant.
EVALDECK_FLOOR = "evaldeck_floor"
LETTA_FLOOR = "letta_floor"
FLOOR_FUNCTION = "constant"


def evaldeck_suite(work, name, module, functions):
    """A suite grading the evaldeck workload with `functions` (suite key -> function) of the
    Python module `module` beside it."""
    graders = "".join(
        f"  {key}:\n    kind: code\n    module: {module}\n    function: {function}\n"
        for key, function in functions.items()
    )
    path = work / f"{name}.yaml"
    path.write_text(f"name: {name}\ndataset: evaldeck/dataset.jsonl\ngraders:\n{graders}")
    return path


def letta_suite(work, name, function):
    """The workload's letta suite with its graders replaced by the @grader `function`
    (`FILE.py:NAME`)."""
    base = (work / "letta" / "suite.yaml").read_text()
    head = base.split("graders:\n", 1)[0].replace("name: ", f"name: {name}-", 1)
    path = work / "letta" / f"{name}-suite.yaml"
    path.write_text(
        f"{head}graders:\n  {LETTA_GRADER}:\n    kind: tool\n"
        f"    function: {function}\n    extractor: last_assistant\n"
        f"reward:\n  kind: metric\n  metric_key: {LETTA_GRADER}\n"
    )
    return path


def sandbox_calls(out_dir):
    """(calls, mean fuel per call) from the `sandbox` metadata of every grade in results.jsonl."""
    calls, fuel = 0, 0
    with open(Path(out_dir) / "results.jsonl", encoding="utf-8") as lines:
        for line in lines:
            for grade in json.loads(line)["grades"].values():
                used = (grade.get("metadata") or {}).get("sandbox", {}).get("fuel_used")
                if used is not None:
                    calls += 1
                    fuel += used
    return calls, (fuel / calls if calls else 0.0)


def gavel_entry(name, tool, args, suite, out, log_dir):
    remove(out)
    cmd = [args.gavel, "run", suite, "-o", out, "--cache-dir", args.cache_dir, "--quiet"]
    m = measure(name, tool, "`gavel run` (whole process)", cmd, args.samples, log_dir)
    m.report = gavel_tallies(out)
    m.report["calls"], m.report["fuel"] = sandbox_calls(out)
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--venv", type=Path, required=True)
    p.add_argument("--gavel", type=Path, required=True)
    p.add_argument("--cache-dir", type=Path, required=True)
    p.add_argument("--graders", type=Path, required=True, help="the seed's my_graders.py")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--profile", default="release")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()
    work, python, here = args.work, args.venv / "bin" / "python", Path(__file__).parent
    (work / "my_graders.py").write_text(args.graders.read_text())
    (work / f"{EVALDECK_FLOOR}.py").write_text((here / "python" / f"{EVALDECK_FLOOR}.py").read_text())
    for module in ("letta_graders", LETTA_FLOOR):
        (work / "letta" / f"{module}.py").write_text((here / "python" / f"{module}.py").read_text())
    # The floors grade the same rows as the entries, with as many graders, each calling a
    # function that reads nothing of its row.
    suites = {
        "evaldeck": evaldeck_suite(work, "evaldeck-python", "my_graders", EVALDECK_FUNCTIONS),
        "evaldeck-floor": evaldeck_suite(
            work, "evaldeck-floor", EVALDECK_FLOOR, dict.fromkeys(EVALDECK_FUNCTIONS, FLOOR_FUNCTION)),
        "letta": letta_suite(work, "python", "letta_graders.py:mentions_answer"),
        "letta-floor": letta_suite(work, "floor", f"{LETTA_FLOOR}.py:{FLOOR_FUNCTION}"),
    }
    log_dir = work / "logs"

    # The first run builds the interpreter component (when the cache has none) and compiles it
    # to native code; later runs load both from the cache. It is timed apart.
    first = time.perf_counter()
    gavel_entry("gavel-first", "first", args, suites["evaldeck"], work / "out-first", log_dir)
    first = time.perf_counter() - first

    entries = {
        "evaldeck-custom": lambda: measure(
            "evaldeck-custom", "evaldeck 0.1.5 in-process, `CustomGrader`", "JSON line -> `Trace` -> 2 functions",
            [python, here / "peers" / "evaldeck_custom.py", work / "evaldeck" / "dataset.jsonl", work,
             "my_graders", *EVALDECK_FUNCTIONS.values()],
            args.samples, log_dir, inner_time=True),
        "gavel-evaldeck": lambda: gavel_entry(
            "gavel-evaldeck", "gavel run, 2 evaldeck `kind: code` functions", args, suites["evaldeck"],
            work / "out-evaldeck", log_dir),
        "gavel-evaldeck-floor": lambda: gavel_entry(
            "gavel-evaldeck-floor", "gavel run, 2 evaldeck `kind: code` functions returning a constant (floor)",
            args, suites["evaldeck-floor"], work / "out-evaldeck-floor", log_dir),
        "letta-custom": lambda: measure(
            "letta-custom", "letta-evals 0.26.0 in-process (mode E)", "JSON line -> `@grader` -> `model_dump_json`",
            [python, here / "peers" / "letta_inproc.py", suites["letta"], work / "letta" / "dataset.jsonl",
             work / "letta-out.jsonl"],
            args.samples, log_dir, inner_time=True),
        "gavel-letta": lambda: gavel_entry(
            "gavel-letta", "gavel run, 1 letta-evals `@grader`", args, suites["letta"], work / "out-letta", log_dir),
        "gavel-letta-floor": lambda: gavel_entry(
            "gavel-letta-floor", "gavel run, 1 letta-evals `@grader` returning a constant (floor)", args,
            suites["letta-floor"], work / "out-letta-floor", log_dir),
    }
    runs = {name: [] for name in entries}
    for _ in range(max(1, args.repeat)):
        for name, entry in entries.items():
            runs[name].append(entry())
    by = {name: median_run(ms) for name, ms in runs.items()}
    text, failures = render(args, by, first)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    if failures:
        print("missed: " + "; ".join(failures), file=sys.stderr)
        sys.exit(1)


def render(args, by, first):
    lines = [
        "# gavel benchmark: users' Python graders",
        "",
        f"- Workload: {args.samples:,} samples of the peer benchmark's workload (seed 1234). Profile: `{args.profile}`.",
        f"- Machine: {machine()}.",
        f"- Command: `bench/python-graders.sh {args.samples}`; written {time.strftime('%Y-%m-%d %H:%M:%S %Z')}.",
        f"- gavel's first run (the interpreter component built when not cached, and compiled to native code): {first:.1f} s.",
        "",
        "| entry | what is timed | samples | grader calls | seconds (median) | runs (s) | µs per call | fuel per call | CPU s | peak RSS MiB |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for m in by.values():
        calls = m.report.get("calls") or m.samples * (len(EVALDECK_FUNCTIONS) if "evaldeck" in m.name else 1)
        fuel = f"{m.report['fuel'] / 1e6:.2f} M" if "fuel" in m.report else "(native)"
        spread = ", ".join(f"{s:.2f}" for s in m.report["runs"])
        lines.append(
            f"| {m.tool} | {m.timed} | {m.samples:,} | {calls:,} | {m.seconds:.2f} | {spread} "
            f"| {m.seconds / calls * 1e6:,.0f} | {fuel} | {m.cpu:.2f} | {m.max_rss_kib / 1024:.1f} |"
        )
    lines += ["", "| ratio (samples/s, 2 cores) | value | goal | met |", "|---|---:|---:|---|"]
    failures = []
    for label, a, b in [
        ("gavel sandboxed vs evaldeck native", "gavel-evaldeck", "evaldeck-custom"),
        ("gavel sandboxed vs letta-evals native", "gavel-letta", "letta-custom"),
    ]:
        ratio = by[a].rate / by[b].rate
        if ratio < 1.0:
            failures.append(label)
        lines.append(f"| {label} | {ratio:.2f}x | >= 1x | {'yes' if ratio >= 1.0 else 'NO'} |")
    # Against its floor, an entry has no goal: the ratio says how much of its time the user's
    # function itself takes, the rest being gavel's cost of any call.
    for label, a, b in [
        ("gavel's evaldeck functions vs their floor", "gavel-evaldeck", "gavel-evaldeck-floor"),
        ("gavel's letta-evals `@grader` vs its floor", "gavel-letta", "gavel-letta-floor"),
    ]:
        lines.append(f"| {label} | {by[a].rate / by[b].rate:.2f}x | (none) | |")
    lines += ["", "Cross-checks (the tools graded the same thing):", ""]
    peer = by["evaldeck-custom"].report["statuses"]
    ours = by["gavel-evaldeck"].report["statuses"]
    for key, function in EVALDECK_FUNCTIONS.items():
        theirs = {s: peer[function].get(s, 0) for s in ("pass", "fail", "error")}
        mine = {s: ours.get(key, {}).get(s, 0) for s in ("pass", "fail", "error")}
        same = theirs == mine
        if not same:
            failures.append(f"{function} verdicts differ")
        lines.append(f"- `{function}`: evaldeck {theirs}, gavel {mine}: {'agree' if same else 'DIFFER'}.")
    letta, gavel = by["letta-custom"].report, by["gavel-letta"].report
    same = letta["errored"] == gavel["errored"] and all(
        abs(gavel["mean_scores"].get(k, -1) - v) < 1e-9 for k, v in letta["mean_scores"].items()
    )
    if not same:
        failures.append("letta grades differ")
    lines.append(
        f"- `mentions_answer`: letta-evals {letta['errored']:,} errored, means {letta['mean_scores']}; "
        f"gavel {gavel['errored']:,} errored, means {gavel['mean_scores']}: {'agree' if same else 'DIFFER'}."
    )
    floors = {name: by[f"gavel-{name}"].report["statuses"] for name in ("evaldeck-floor", "letta-floor")}
    lines.append(f"- The floors' grades by status (their calls return a constant): {floors}.")
    lines += [
        "",
        "Notes:",
        "",
        "- gavel runs the calls in its Python interpreter component, by default one warm instance "
        "per grader and batch of 256 rows (`isolation: batch`), with the sandbox's fuel and deadline "
        "per call and memory per instance; the peers call the functions in the same "
        "CPython process, unsandboxed. `gavel run` is timed as a whole process with the "
        "component cached; the peers' loops only, as their own benchmarks time them.",
        "- µs per call is the entry's seconds over its grader calls (gavel uses both cores).",
        "- Fuel per call is the mean `fuel_used` the sandbox reports in each grade's metadata.",
        "- The floors (`python/evaldeck_floor.py`, `python/letta_floor.py`) are functions of the same "
        "forms, as many graders over the same rows, that read nothing and return a constant: "
        "what gavel costs whatever the function does. An entry's ratio to its floor is the share "
        "of its time that is gavel's alone.",
    ]
    return "\n".join(lines) + "\n", failures


if __name__ == "__main__":
    try:
        main()
    except CommandFailed as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
