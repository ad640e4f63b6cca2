"""The eval-* layer: ``eval("1 + 2 * 3")`` under ``eval-syntax=arith``, in a sandboxed program.

What is measured, on each side:

- plain python: ``eval("1 + 2 * 3")`` with no sandbox (the floor: CPython compiles the string
  at every call).
- ours: ``python-sb evalbench.py`` (landlock) with ``eval-syntax=arith``: the program's ``eval``
  goes through the eval guard (parse, check, rewrite and compile cached per source and profile,
  then a fresh budget list and globals per call, run in the calling thread).
- pysandboxes 0.7.0: its ``python-sb evalbench.py`` with the profile ``anchor-perf.md`` measured
  (``py-sandbox=true``, ``os-sandbox=landlock``, ``learn=false``, ``expose-ro=.``) plus
  ``eval-syntax=arith``: its guard parses, validates, rewrites and runs every call in a new
  worker thread.

``evalbench.py`` times, with ``time.perf_counter_ns``, the first call, then 20 batches of 200
calls of the same source, then 20 batches of 50 calls of a new source each time
(``1 + 2 * N``: the cache never hits). Five processes per side; the batch means are pooled and
the median kept. Both sides need ``python-import=time`` (the reference also ``collections``).
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as plain files: _common is found next to them
    BYTECODE_NOTE,
    OUR_PYTHON,
    REFERENCE_LABEL,
    WORK_DIR,
    CommandFailed,
    Row,
    Table,
    median,
    reference,
    run_child,
    warm_bytecode,
)

SCRATCH = WORK_DIR / "eval"
OUR_SB = OUR_PYTHON.parent / "python-sb"
PROCESSES = 5
TARGET = 40e-6  # DESIGN.md §7

EVALBENCH = """\
import time

def batches(count, size, source_of):
    out = []
    for b in range(count):
        sources = [source_of(b * size + i) for i in range(size)]
        start = time.perf_counter_ns()
        for s in sources:
            eval(s)
        out.append((time.perf_counter_ns() - start) / size)
    return out

start = time.perf_counter_ns()
assert eval("1 + 2 * 3") == 7
first = time.perf_counter_ns() - start
for _ in range(30):
    eval("1 + 2 * 3")
same = batches(20, 200, lambda i: "1 + 2 * 3")
fresh = batches(20, 50, lambda i: f"1 + 2 * {i + 10}")
print(repr({"first": [first], "same": same, "fresh": fresh}))
"""


def profile(side: str) -> str:
    lines = ["# written by bench/bench_eval.py"]
    if side == "ref":
        lines += ["py-sandbox=true", "os-sandbox=landlock", "learn=false", "expose-ro=."]
    else:
        lines += ["os-sandbox=landlock"]
    # the reference's eval guard imports collections under the program's import rules
    lines += [
        "python-import=time, collections" if side == "ref" else "python-import=time",
        "eval-syntax=arith",
        "",
    ]
    return "\n".join(lines)


def measure(cmd: list[str], cwd: Path) -> dict[str, float]:
    warm_bytecode(cmd, cwd=cwd)
    python = Path(cmd[0]).with_name("python")
    if python.parent == Path(OUR_PYTHON).parent:
        # The eval layer is imported after the sandbox is in place, where the bytecode cache is
        # not writable: compile it once outside, as an installed (byte-compiled) package would be.
        run_child([str(python), "-c", "import pysandboxes.evaluation.engine"], cwd=cwd)
    pooled: dict[str, list[float]] = {}
    for _ in range(PROCESSES):
        result = ast.literal_eval(run_child(cmd, cwd=cwd))
        for key, values in result.items():
            pooled.setdefault(key, []).extend(values)
    return {key: median(values) / 1e9 for key, values in pooled.items()}


def main() -> int:
    ref = reference()
    shutil.rmtree(SCRATCH, ignore_errors=True)
    dirs = {}
    for side in ("ours", "ref"):
        d = SCRATCH / side
        d.mkdir(parents=True)
        (d / "evalbench.py").write_text(EVALBENCH, encoding="utf-8")
        (d / ".py-sandboxes").write_text(profile(side), encoding="utf-8")
        dirs[side] = d
    floor = measure([str(OUR_PYTHON), "evalbench.py"], dirs["ours"])
    ours = measure([str(OUR_SB), "evalbench.py"], dirs["ours"])
    theirs: dict[str, float] = {}
    ref_floor: dict[str, float] = {}
    missing = None if ref.available else ref.reason
    if ref.python is not None:
        ref_sb = ref.python.parent / "python-sb"
        try:
            ref_floor = measure([str(ref.python), "evalbench.py"], dirs["ref"])
            theirs = measure([str(ref_sb), "evalbench.py"], dirs["ref"])
        except CommandFailed as exc:
            missing = f"its python-sb failed: {exc}"
    met = "met" if ours["same"] <= TARGET else "NOT met"
    rows = [
        Row(
            "eval('1 + 2 * 3'): plain python (floor)",
            floor["same"],
            ref_floor.get("same"),
            "{PY} evalbench.py",
        ),
        Row(
            "eval('1 + 2 * 3'): python-sb, eval-syntax=arith (same source again)",
            ours["same"],
            theirs.get("same"),
            "{SB} evalbench.py",
            target=f"≤ 40 µs: {met}",
        ),
        Row(
            "eval('1 + 2 * N'): python-sb, a new source each call (no cache hit)",
            ours["fresh"],
            theirs.get("fresh"),
            "{SB} evalbench.py",
        ),
        Row(
            "first eval of the process (imports the eval layer)",
            ours["first"],
            theirs.get("first"),
            "{SB} evalbench.py",
        ),
        Row(
            "plain python, a new source each call (floor)",
            floor["fresh"],
            ref_floor.get("fresh"),
            "{PY} evalbench.py",
        ),
    ]
    notes = [
        f"$SB={OUR_SB}, $PY={OUR_PYTHON} (ours: cwd {dirs['ours']}); reference: $REF_SB, $REF_PY in {dirs['ref']}",
        f"medians of {PROCESSES} processes × 20 batches (200 calls of the same source; 50 calls of new sources)",
        "ours: `os-sandbox=landlock`, `python-import=time`, `eval-syntax=arith`; reference: "
        "`py-sandbox=true`, `os-sandbox=landlock`, `learn=false`, `expose-ro=.`, the same two lines, and "
        "`collections` in `python-import=` (its eval guard imports it on the program's account)",
        BYTECODE_NOTE,
        f"reference venv: {ref.reason}",
    ]
    table = Table(f"eval-* layer ({REFERENCE_LABEL} side by side)", rows, notes, missing)
    print(table.render())
    return 0


if __name__ == "__main__":
    sys.exit(main())
