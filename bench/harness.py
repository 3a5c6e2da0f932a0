"""Times gavel against its peers on one generated workload and writes the table.

Run by bench/run.sh, which builds the binaries, prepares the virtualenv and generates the
workloads first. Standard library only. Every measured command runs as its own child process;
its peak RSS and CPU time come from wait4's rusage of that child alone, its wall time from a
monotonic clock around it.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# Targets from the benchmark issue: (label, measured entry, baseline entry, minimum ratio).
TARGETS = [
    ("gavel vs letta-evals JSON-in/JSON-out (mode E)", "gavel-letta", "letta-inproc", 100.0),
    ("gavel vs evaldeck in-process graders (mode C)", "gavel-evaldeck", "evaldeck-inproc", 20.0),
    ("gavel vs parse-only floor (letta rows)", "gavel-letta", "floor-letta", 0.5),
    ("gavel vs parse-only floor (evaldeck rows)", "gavel-evaldeck", "floor-evaldeck", 0.5),
    # With --baseline: the current binary against another gavel, in the same run.
    ("gavel vs baseline (letta suite)", "gavel-letta", "baseline-letta", 0.95),
    ("gavel vs baseline (evaldeck suite)", "gavel-evaldeck", "baseline-evaldeck", 0.95),
]
INFORMATIONAL = [
    ("gavel vs letta-evals CLI re-grade (`run --cached`)", "gavel-letta", "letta-cli"),
]
MEMORY_RATIO_LIMIT = 1.2
# Entries whose first run takes less than this many seconds are quick (see QUICK_RUNS).
QUICK_SECONDS = 2.0
# Runs a round of each quick entry.
QUICK_RUNS = 5


@dataclass
class Measurement:
    name: str
    tool: str
    timed: str
    samples: int
    wall: float
    seconds: float
    cpu: float
    max_rss_kib: int
    report: dict = field(default_factory=dict)

    @property
    def rate(self):
        return self.samples / self.seconds if self.seconds > 0 else float("inf")


class CommandFailed(Exception):
    pass


def run(cmd, log_dir, name):
    """Runs cmd; returns (wall seconds, rusage, stdout text). Output goes to log files."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_path, err_path = log_dir / f"{name}.out", log_dir / f"{name}.err"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        start = time.perf_counter()
        child = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = err_path.read_text(errors="replace")[-2000:]
        raise CommandFailed(f"{name}: `{' '.join(map(str, cmd))}` exited {child.returncode}\n{tail}")
    return wall, usage, out_path.read_text()


def measure(name, tool, timed, cmd, samples, log_dir, inner_time=False):
    """inner_time: the command prints a JSON report whose `seconds` is the timed loop."""
    wall, usage, stdout = run(cmd, log_dir, name)
    report = {}
    seconds = wall
    if inner_time:
        report = json.loads(stdout.strip().splitlines()[-1])
        seconds = report["seconds"]
        if report.get("samples", report.get("rows")) != samples:
            raise CommandFailed(f"{name}: graded {report} but the workload has {samples} samples")
    m = Measurement(
        name=name,
        tool=tool,
        timed=timed,
        samples=samples,
        wall=wall,
        seconds=seconds,
        cpu=usage.ru_utime + usage.ru_stime,
        max_rss_kib=usage.ru_maxrss,
        report=report,
    )
    print(f"  {name:<16} {m.rate:>12,.0f} samples/s  {m.max_rss_kib / 1024:>8.1f} MiB", file=sys.stderr)
    return m


def repeat_count(args):
    return max(1, args.repeat)


def remove(path):
    """Removes a file or folder an entry writes, if it is there."""
    if path is None:
        return
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def median_run(runs):
    """The run whose timed seconds are the median of an entry's runs (the slower middle one of
    an even count), with how many runs there were and their spread."""
    ordered = sorted(runs, key=lambda m: m.seconds)
    m = ordered[len(ordered) // 2]
    m.report["runs"] = [r.seconds for r in runs]
    return m


def count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def machine():
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, Linux {platform.release()}"


def fmt_rate(rate):
    return f"{rate:,.0f}"


def render(args, ms, memory, versions):
    by = {m.name: m for m in ms}
    lines = [
        "# gavel peer benchmark: latest run",
        "",
        f"- Workload: {args.samples:,} samples (seed {args.seed}); letta-evals CLI on the first "
        f"{args.cli_samples:,} of them. Profile: `{args.profile}`"
        + (" (smoke run: numbers are not meaningful)" if args.smoke else "") + ".",
        f"- Machine: {machine()}.",
        f"- Versions: {versions}.",
        f"- Command: `bench/run.sh {'--smoke' if args.smoke else args.samples}"
        + (f" --baseline {args.baseline}" if args.baseline else "") + "`; "
        f"written {time.strftime('%Y-%m-%d %H:%M:%S %Z')}.",
        "",
        "| entry | what is timed | samples | seconds (median) | runs (s) | samples/s | CPU s | peak RSS MiB |",
        "|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for m in ms:
        spread = ", ".join(f"{s:.3f}" for s in m.report.get("runs", [m.seconds]))
        lines.append(
            f"| {m.tool} | {m.timed} | {m.samples:,} | {m.seconds:.3f} | {spread} | {fmt_rate(m.rate)} "
            f"| {m.cpu:.2f} | {m.max_rss_kib / 1024:.1f} |"
        )
    lines += ["", "| ratio (samples/s) | value | target | met |", "|---|---:|---:|---|"]
    failures = []
    for label, a, b, minimum in TARGETS:
        if a in by and b in by:
            ratio = by[a].rate / by[b].rate
            ok = ratio >= minimum
            if not ok:
                failures.append(label)
            lines.append(f"| {label} | {ratio:,.2f}x | >= {minimum:g}x | {'yes' if ok else 'NO'} |")
    for label, a, b in INFORMATIONAL:
        if a in by and b in by:
            lines.append(f"| {label} | {by[a].rate / by[b].rate:,.2f}x | | |")
    if memory:
        lines += [
            "",
            "| memory check: gavel run, letta suite | samples | peak RSS MiB |",
            "|---|---:|---:|",
        ]
        for m in memory:
            lines.append(f"| {m.name} (median of {repeat_count(args)}) | {m.samples:,} | {m.max_rss_kib / 1024:.1f} |")
        ratio = memory[-1].max_rss_kib / memory[0].max_rss_kib
        ok = ratio <= MEMORY_RATIO_LIMIT
        if not ok:
            failures.append("memory ratio")
        lines.append(
            f"| ratio largest / smallest | {ratio:.3f} | (must be <= {MEMORY_RATIO_LIMIT}: "
            f"{'yes' if ok else 'NO'}) |"
        )
    lines += ["", "Cross-checks (the tools graded the same thing):", ""]
    checks, mismatches = cross_checks(by, args.work / "out")
    lines += checks
    failures += [f"{m} differ" for m in mismatches]
    lines += ["", "Notes:", ""]
    lines += [
        "- Smoke run: each entry ran once." if args.smoke else
        f"- The entries ran in {repeat_count(args)} round(s), taking turns, so that a slow spell of the "
        f"machine falls on all of them alike; an entry whose first run took under {QUICK_SECONDS:g} s "
        f"ran {QUICK_RUNS} times a round, in turns with the other such entries, since a spell of a "
        "second or so covers a whole run of it while a peer's run of many seconds averages such "
        "spells out. The table shows each entry's median run (its CPU time and memory too) and "
        "every run's seconds.",
        "- `gavel run`, the letta-evals CLI and the floor are timed as whole processes (start-up, "
        "reading, writing included); the in-process peer modes time only their grading loop, as "
        "their own benchmarks do (imports and suite loading excluded).",
        "- CPU s is user+system time of that process alone; gavel may use more than one core, "
        "the Python peers use one.",
        "- The floor streams the file through gavel's own dataset reader and row parser on one "
        "thread (each row into a `Sample`, its trajectory converted to the canonical model) and "
        "does nothing else: no grading, no results written.",
    ]
    return "\n".join(lines) + "\n", failures


def gavel_tallies(out_dir):
    """Errored samples, per-metric means over the rest and per-status counts, from results.jsonl.

    A sample counts as errored as letta-evals counts it: an extraction or grading error."""
    sums, statuses, errored, attempted = {}, {}, 0, 0
    path = Path(out_dir) / "results.jsonl"
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            result = json.loads(line)
            for key, grade in result["grades"].items():
                statuses.setdefault(key, {}).setdefault(grade["status"], 0)
                statuses[key][grade["status"]] += 1
            if (result.get("error") or {}).get("category") in ("extraction", "grading"):
                errored += 1
                continue
            attempted += 1
            for key, grade in result["grades"].items():
                sums[key] = sums.get(key, 0.0) + grade["score"]
    means = {k: v / attempted for k, v in sums.items()} if attempted else {}
    return {"errored": errored, "mean_scores": means, "statuses": statuses}


def first_difference(current, baseline):
    """None when the two files hold the same bytes, else where they first differ, briefly."""
    if current.read_bytes() == baseline.read_bytes():
        return None
    ours, theirs = (f.read_text(errors="replace").splitlines() for f in (current, baseline))
    for number, (a, b) in enumerate(zip(ours, theirs), 1):
        if a != b:
            return f"line {number}: gavel `{a.strip()[:100]}`, baseline `{b.strip()[:100]}`"
    return f"the end: gavel {len(ours):,} lines, baseline {len(theirs):,}"


def baseline_checks(results):
    """Lines saying whether the baseline gavel wrote the same bytes as the current one."""
    out = []
    for suite in ("letta", "evaldeck"):
        current, baseline = results / f"gavel-{suite}", results / f"baseline-{suite}"
        if not (current.is_dir() and baseline.is_dir()):
            continue
        for name in ("results.jsonl", "summary.json"):
            if not ((current / name).exists() and (baseline / name).exists()):
                continue
            difference = first_difference(current / name, baseline / name)
            out.append(f"- gavel and baseline, {suite} suite, {name}: "
                       + ("byte-identical." if difference is None else f"differ, first at {difference}."))
    return out


def cross_checks(by, results):
    """Lines comparing what the tools decided, and whether any disagree."""
    out, mismatches = [], []
    letta, gavel_letta = by.get("letta-inproc"), by.get("gavel-letta")
    if letta:
        scores = ", ".join(f"{k} {v:.4f}" for k, v in letta.report["mean_scores"].items())
        out.append(f"- letta-evals mode E: {letta.report['errored']:,} errored; means over the rest: {scores}.")
    if gavel_letta and gavel_letta.report:
        t = gavel_letta.report
        scores = ", ".join(f"{k} {v:.4f}" for k, v in t["mean_scores"].items())
        out.append(f"- gavel, letta suite: {t['errored']:,} errored; means over the rest: {scores}.")
        if letta:
            same = t["errored"] == letta.report["errored"] and all(
                abs(t["mean_scores"].get(k, -1) - v) < 1e-9 for k, v in letta.report["mean_scores"].items()
            )
            if not same:
                mismatches.append("letta grades")
            out.append(f"- letta-evals and gavel agree: {'yes' if same else 'NO'}.")
    evaldeck, gavel_evaldeck = by.get("evaldeck-inproc"), by.get("gavel-evaldeck")
    if evaldeck:
        r = evaldeck.report
        out.append(f"- evaldeck mode C: {r['passed']:,} passed, {r['failed']:,} failed, {r['errored']:,} errored.")
    if gavel_evaldeck and gavel_evaldeck.report:
        counts = gavel_evaldeck.report["statuses"].get("expected", {})
        out.append(
            f"- gavel, evaldeck suite: {counts.get('pass', 0):,} passed, {counts.get('fail', 0):,} failed, "
            f"{counts.get('error', 0):,} errored."
        )
        if evaldeck:
            same = (counts.get("pass", 0), counts.get("fail", 0), counts.get("error", 0)) == (
                evaldeck.report["passed"], evaldeck.report["failed"], evaldeck.report["errored"])
            if not same:
                mismatches.append("evaldeck verdicts")
            out.append(f"- evaldeck and gavel agree: {'yes' if same else 'NO'}.")
    out += baseline_checks(results)
    return out or ["- (no peer ran)"], mismatches


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--work", type=Path, required=True, help="workload directory (bench-gen output)")
    p.add_argument("--cli-work", type=Path, required=True, help="smaller workload with letta/cached")
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--cli-samples", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--venv", type=Path, required=True)
    p.add_argument("--gavel", type=Path, required=True)
    p.add_argument("--floor", type=Path, required=True)
    p.add_argument("--baseline", type=Path, help="another gavel binary, run beside --gavel on both suites")
    p.add_argument("--memory", type=Path, nargs="*", default=[], help="letta workloads for the memory check, smallest first")
    p.add_argument("--profile", default="release")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--only", default="", help="comma-separated entry names to run (default all)")
    p.add_argument("--repeat", type=int, default=3,
                   help="rounds of runs, the entries taking turns; the median run is reported")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args()

    here = Path(__file__).resolve().parent
    py = args.venv / "bin" / "python"
    logs = args.work / "logs"
    results = args.work / "out"
    # The letta-evals CLI makes this folder itself; the in-process peer, run alone (--only),
    # writes into it.
    results.mkdir(parents=True, exist_ok=True)
    letta, evaldeck = args.work / "letta", args.work / "evaldeck"
    only = {s for s in args.only.split(",") if s}

    # `gavel run` on each suite, and with --baseline the other binary right after it, so that the
    # two sides of a ratio take turns.
    gavel_entries = []
    for suite, graders in ((letta, "4 letta-evals graders"), (evaldeck, "expectations grader")):
        for prefix, tool, binary in (("gavel", "gavel run", args.gavel),
                                     ("baseline", "gavel run (baseline)", args.baseline)):
            if binary:
                name = f"{prefix}-{suite.name}"
                gavel_entries.append(
                    (name, f"{tool}, {suite.name} suite", f"`gavel run` (whole process), {graders}",
                     [binary, "run", suite / "suite.yaml", "-o", results / name], args.samples, False,
                     results / name))

    # Each entry: name, tool, what is timed, command, samples, inner timing, what it writes.
    entries = [
        ("letta-cli", "letta-evals 0.26.0 CLI", "`letta-evals run --cached` (whole process)",
         [args.venv / "bin" / "letta-evals", "run", args.cli_work / "letta" / "suite.yaml",
          "--cached", args.cli_work / "letta" / "cached", "-o", results / "letta-cli", "--display", "none", "-q"],
         args.cli_samples, False, results / "letta-cli"),
        ("letta-inproc", "letta-evals 0.26.0 in-process", "mode E: JSON line -> 4 graders -> `model_dump_json`",
         [py, here / "peers" / "letta_inproc.py", letta / "suite.yaml", letta / "dataset.jsonl",
          results / "letta-inproc.jsonl"], args.samples, True, results / "letta-inproc.jsonl"),
        ("evaldeck-inproc", "evaldeck 0.1.5 in-process", "mode C: JSON line -> `Trace.from_dict` -> 4 graders",
         [py, here / "peers" / "evaldeck_inproc.py", evaldeck / "dataset.jsonl"], args.samples, True, None),
        *gavel_entries,
        ("floor-letta", "floor, letta rows", "parse rows + convert trajectories (whole process)",
         [args.floor, letta / "dataset.jsonl"], args.samples, False, None),
        ("floor-evaldeck", "floor, evaldeck rows", "parse rows + convert trajectories (whole process)",
         [args.floor, evaldeck / "dataset.jsonl"], args.samples, False, None),
    ]
    entries = [e for e in entries if not only or e[0] in only]
    failed = []
    runs = {e[0]: [] for e in entries}
    repeat = repeat_count(args)
    print(f"measuring {args.samples:,} samples, {repeat} round(s) of the entries in turns:", file=sys.stderr)

    def measure_entry(entry):
        name, tool, timed, cmd, samples, inner, output = entry
        # Every timed run starts without the previous run's output, as the first does.
        remove(output)
        try:
            runs[name].append(measure(name, tool, timed, cmd, samples, logs, inner_time=inner))
        except CommandFailed as e:
            print(f"  {name}: FAILED\n{e}", file=sys.stderr)
            failed.append(name)

    # In turns, so that a slow spell of the machine falls on every entry alike. A quick entry
    # (its first run under QUICK_SECONDS) runs QUICK_RUNS times a round, in turns with the other
    # quick ones: a spell of a second or so covers a whole run of it, where a peer's run of
    # many seconds averages such spells out.
    quick = set()
    for round_index in range(repeat):
        for entry in entries:
            if entry[0] not in failed and entry[0] not in quick:
                measure_entry(entry)
                if round_index == 0 and entry[0] not in failed \
                        and runs[entry[0]][-1].seconds < QUICK_SECONDS:
                    quick.add(entry[0])
        # A smoke run only shows that every entry runs.
        quick_runs = 1 if args.smoke else QUICK_RUNS
        for _ in range(quick_runs - 1 if round_index == 0 else quick_runs):
            for entry in entries:
                if entry[0] in quick and entry[0] not in failed:
                    measure_entry(entry)
    ms = []
    for name, *_ in entries:
        if name in failed or not runs[name]:
            continue
        m = median_run(runs[name])
        if name.startswith("gavel-"):
            m.report.update(gavel_tallies(results / name) or {})
        ms.append(m)

    memory = []
    for workload in args.memory:
        n = count_lines(workload / "letta" / "dataset.jsonl")
        peaks = []
        try:
            for _ in range(repeat):
                remove(workload / "out")
                peaks.append(measure(f"gavel run, {n:,} samples", "gavel", "memory check",
                                     [args.gavel, "run", workload / "letta" / "suite.yaml", "-o", workload / "out"],
                                     n, logs))
        except CommandFailed as e:
            print(f"  memory check at {n:,}: FAILED\n{e}", file=sys.stderr)
            failed.append(f"memory-{n}")
            continue
        # The median peak: a peak moves by a few MiB from run to run with when the allocator
        # hands freed pages back.
        peaks.sort(key=lambda m: m.max_rss_kib)
        memory.append(peaks[len(peaks) // 2])

    versions = run([py, "-c", "import importlib.metadata as m; print(', '.join(f'{p} {m.version(p)}' for p in "
                    "('letta-evals', 'evaldeck', 'pydantic')))"], logs, "versions")[2].strip()
    versions += f", CPython {run([py, '-c', 'import platform; print(platform.python_version())'], logs, 'python')[2].strip()}"
    table, missed = render(args, ms, memory if len(memory) > 1 else [], versions)
    if failed:
        table += "\nEntries that failed to run (see " + str(logs) + "): " + ", ".join(failed) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    print(table)
    if failed:
        sys.exit(2)
    if missed and not args.smoke:
        print("targets missed: " + "; ".join(missed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
