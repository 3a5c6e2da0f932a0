"""The interpreter's own speed: the pieces of `speed_work.py` timed natively (the CPython running
this script, gavel's evaldeck stand-in on its path) and in gavel's interpreter (`gavel run`, each
piece an evaldeck `kind: code` function running it `REPEAT` times a call), in turns.

    python3 bench/python/interpreter_speed.py --gavel BIN --cache-dir DIR \\
        --dataset WORK/evaldeck/dataset.jsonl --work DIR [--rows 200] [--rounds 3]

A sandboxed piece's time is the CPU (user + system) of the `gavel run` grading it, less that of
the run whose function does nothing (`run_none`), over its iterations; fuel likewise, from each
grade's `metadata.sandbox`. Natively, CPU time by `time.process_time` after a warm-up pass. The
least of the rounds is kept. Prints a Markdown table.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RUNTIME = ROOT / "host" / "runtime" / "python"
PIECES = ["loop", "text", "json", "objects", "trace"]


def module_source(trajectory):
    """speed_work.py with `TRAJECTORY` set to one row's recording."""
    source = (HERE / "speed_work.py").read_text()
    return source.replace("TRAJECTORY = {}", f"TRAJECTORY = {trajectory!r}", 1)


def native(work, rounds, iterations):
    """{piece: least CPU µs an iteration}, timed in this process (`--native`)."""
    sys.path[:0] = [str(RUNTIME), str(RUNTIME / "stubs"), str(work)]
    import speed_work

    least = {}
    for name in PIECES:
        piece = speed_work.PIECES[name]
        for _ in range(speed_work.REPEAT):
            piece()
        passes = []
        for _ in range(rounds):
            start = time.process_time()
            for _ in range(iterations):
                piece()
            passes.append((time.process_time() - start) / iterations * 1e6)
        least[name] = min(passes)
    return least


def gavel_run(args, suite, out):
    """(CPU seconds, mean fuel a call, the calls' messages) of one `gavel run`."""
    for stale in ("results.jsonl", "summary.json"):
        (out / stale).unlink(missing_ok=True)
    cmd = [args.gavel, "run", suite, "-o", out, "--cache-dir", args.cache_dir, "--quiet"]
    child = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    error = child.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"`{' '.join(map(str, cmd))}` failed:\n{error[-2000:]}")
    fuel, messages = [], set()
    with open(out / "results.jsonl", encoding="utf-8") as lines:
        for line in lines:
            for grade in json.loads(line)["grades"].values():
                if grade.get("status") != "pass":
                    sys.exit(f"{suite}: a grade did not pass: {grade}")
                fuel.append(grade["metadata"]["sandbox"]["fuel_used"])
                messages.add(grade.get("rationale") or "")
    return usage.ru_utime + usage.ru_stime, sum(fuel) / len(fuel), messages


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gavel", type=Path)
    p.add_argument("--cache-dir", type=Path)
    p.add_argument("--dataset", type=Path)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--rows", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--native", action="store_true", help="time the pieces natively and print JSON (internal)")
    p.add_argument("--iterations", type=int, help="with --native: iterations a pass")
    args = p.parse_args()
    if args.native:
        print(json.dumps(native(args.work, args.rounds, args.iterations)))
        return
    if not (args.gavel and args.cache_dir and args.dataset):
        p.error("--gavel, --cache-dir and --dataset are needed")

    args.work.mkdir(parents=True, exist_ok=True)
    with open(args.dataset, encoding="utf-8") as f:
        rows = [line for _, line in zip(range(args.rows), f)]
    (args.work / "dataset.jsonl").write_text("".join(rows))
    (args.work / "speed_work.py").write_text(module_source(json.loads(rows[0])["trajectory"]))
    repeat = int(re.search(r"^REPEAT = (\d+)$", (HERE / "speed_work.py").read_text(), re.M).group(1))
    iterations = len(rows) * repeat
    suites = {}
    for name in ["none", *PIECES]:
        suites[name] = args.work / f"speed-{name}.yaml"
        suites[name].write_text(
            f"name: speed-{name}\ndataset: dataset.jsonl\ngraders:\n  piece:\n    kind: code\n"
            f"    module: speed_work\n    function: run_{name}\n"
        )

    # The first run may compile the interpreter into the cache; it is not timed.
    gavel_run(args, suites["none"], args.work / "out-none")
    cpu = {name: [] for name in suites}
    fuel, version = {}, ""
    native_runs = []
    for _ in range(args.rounds):
        for name, suite in suites.items():
            seconds, fuel[name], messages = gavel_run(args, suite, args.work / f"out-{name}")
            cpu[name].append(seconds)
            if name == "none":
                version = " ".join(messages).split(" (")[0]
        native_runs.append(json.loads(subprocess.run(
            [sys.executable, __file__, "--native", "--work", str(args.work), "--rounds", "1",
             "--iterations", str(iterations)],
            check=True, capture_output=True, text=True).stdout))

    floor = min(cpu["none"])
    print(f"{len(rows)} rows, {repeat} iterations a call, {args.rounds} rounds, least kept; "
          f"native: CPython {sys.version.split()[0]}, sandboxed: CPython {version}\n")
    print("| piece | native µs | sandboxed µs (CPU) | sandboxed / native | fuel an iteration |")
    print("|---|---:|---:|---:|---:|")
    for name in PIECES:
        mine = (min(cpu[name]) - floor) / iterations * 1e6
        theirs = min(run[name] for run in native_runs)
        per = (fuel[name] - fuel["none"]) / repeat
        print(f"| {name} | {theirs:.1f} | {mine:.1f} | {mine / theirs:.1f}x | {per / 1e3:.1f} k |")
    print(f"\n`run_none`'s run (the calls' own cost): {floor:.2f} CPU s, {fuel['none'] / 1e6:.3f} M fuel a call")


if __name__ == "__main__":
    main()
