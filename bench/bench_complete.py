"""Complete mode (``python-sb``): start-up, guarded hot paths, peak memory — ours vs pysandboxes 0.7.0.

Three groups of rows, each side running its own ``python-sb`` console script on the same files:

1. **Start-up**: ``python-sb empty.py`` with ``os-sandbox=landlock`` (then ``subprocess``), timed as
   a whole process, next to ``python empty.py`` (the floor). Ours reads a rule file holding only
   ``os-sandbox=...`` (the script file itself is always readable); the reference reads the profile
   ``anchor-perf.md`` used (``py-sandbox=true``, ``os-sandbox=...``, ``learn=false``,
   ``expose-ro=.``; the reference resolves ``.`` against the current directory, so every command
   runs in the script's directory). Our ``subprocess`` profile adds
   ``env=PYTHONPYCACHEPREFIX=...``: the fresh interpreter gets only the ``env=`` result, and without
   it would read and write bytecode in the repository instead of the bench cache (the reference's
   child reads the bytecode pip compiled in its site-packages).
2. **Guarded hot paths**: ``hot.py`` (``HOT`` below) times, with ``time.perf_counter_ns``, open+read
   of a small allowed file, ``os.stat`` of it, and the first import of tiny modules, inside the
   sandboxed program; plain python runs the same file as the floor. Both profiles say
   ``expose-ro=.`` and ``python-import=importlib, os, sys, time, tinymods``.
3. **Peak RSS**: the largest process of ``python-sb empty.py`` (GNU ``time -f %M``: ``ru_maxrss``,
   the maximum over the process and every descendant it reaped, not their sum; without GNU time,
   ``VmHWM`` sampled over the tree, see :func:`peak_rss_largest`), and the whole tree: the sum of ``VmRSS`` over the process and all its descendants,
   sampled every 2 ms while ``python-sb sleep.py`` sleeps 0.5 s (how ``anchor-perf.md`` measured
   78 MiB for the reference: a launcher and a child alive at the same time).

``--importtime`` also prints the imports that dominate our start-up (``python -X importtime``).
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as plain files: _common is found next to them
    BYTECODE_NOTE,
    OUR_PYTHON,
    PYCACHE_DIR,
    WORK_DIR,
    CommandFailed,
    Row,
    Table,
    child_env,
    format_mib,
    format_seconds,
    median,
    process_tool_note,
    reference,
    run_child,
    time_process,
    warm_bytecode,
)

SCRATCH = WORK_DIR / "complete"
OUR_SB = OUR_PYTHON.parent / "python-sb"

HOT_PROCESSES = 5  # fresh sandboxed processes per side; their batches are pooled
FILE_BATCHES, FILE_BATCH = 20, 500  # open+read and os.stat: 20 batches of 500 calls
TINY_MODULES, IMPORT_BATCH = 200, 20  # first imports: 10 batches of 20 modules
RSS_RUNS = 5
SAMPLE_EVERY = 0.002  # seconds between two samples of the process tree

# The targets of DESIGN.md §7 for our figures.
START_TARGET, START_RATIO = 35e-3, 30.0
OPEN_TARGET, STAT_TARGET, IMPORT_TARGET = 12e-6, 4e-6, 140e-6
RSS_TARGET = 25 * 2**20

HOT_IMPORTS = "importlib, os, sys, time, tinymods"

HOT = f'''\
"""Guarded hot paths, timed inside the sandboxed program (written by bench/bench_complete.py)."""
import importlib
import os
import sys
import time

# The tiny modules' bytecode was compiled next to them (tinymods/__pycache__): every side reads
# it from there, whatever PYTHONPYCACHEPREFIX its interpreter started with.
sys.pycache_prefix = None
clock = time.perf_counter_ns
small = os.path.join(os.path.dirname(os.path.abspath(__file__)), "small.txt")


def open_read(batches, size):
    out = []
    for _ in range(batches):
        t0 = clock()
        for _ in range(size):
            with open(small, "rb") as f:
                f.read()
        out.append((clock() - t0) / size)
    return out


def stat(batches, size):
    out = []
    for _ in range(batches):
        t0 = clock()
        for _ in range(size):
            os.stat(small)
        out.append((clock() - t0) / size)
    return out


open_read(1, {FILE_BATCH})  # warm-up
stat(1, {FILE_BATCH})
result = {{"open_read": open_read({FILE_BATCHES}, {FILE_BATCH}), "stat": stat({FILE_BATCHES}, {FILE_BATCH})}}
import tinymods  # noqa: E402

importlib.import_module("tinymods.warm")  # the directory listing of the package, not timed
names = [f"tinymods.m{{i}}" for i in range({TINY_MODULES})]
assert not any(name in sys.modules for name in names)
imports = []
for first in range(0, len(names), {IMPORT_BATCH}):
    t0 = clock()
    for name in names[first : first + {IMPORT_BATCH}]:
        importlib.import_module(name)
    imports.append((clock() - t0) / {IMPORT_BATCH})
result["first_import"] = imports
print(repr(result))  # not json: the rules need not depend on which of its imports are loaded
'''

SLEEP = "import time\n\ntime.sleep(0.5)\n"


class Side:
    """One implementation's commands: its interpreter, its python-sb, its rule files."""

    def __init__(self, name: str, python: Path, sb: Path) -> None:
        self.name = name  # "ours" | "ref"
        self.python = str(python)
        self.sb = str(sb)

    def dir(self, what: str) -> Path:
        return SCRATCH / f"{self.name}-{what}"

    def profile(self, provider: str, *extra: str) -> str:
        if self.name == "ours":
            lines = [f"os-sandbox={provider}"]
            if provider == "subprocess":
                lines.append(f"env=PYTHONPYCACHEPREFIX={PYCACHE_DIR}")
        else:  # the profile of anchor-perf.md, its provider written out
            lines = ["py-sandbox=true", f"os-sandbox={provider}", "learn=false", "expose-ro=."]
        return "\n".join(["# written by bench/bench_complete.py", *lines, *extra, ""])

    def write(self) -> None:
        for provider in ("landlock", "subprocess"):
            d = self.dir(provider)
            d.mkdir(parents=True)
            (d / "empty.py").write_text("", encoding="utf-8")
            (d / ".py-sandboxes").write_text(self.profile(provider), encoding="utf-8")
        hot = self.dir("hot")
        (hot / "tinymods").mkdir(parents=True)
        (hot / "hot.py").write_text(HOT, encoding="utf-8")
        (hot / "small.txt").write_text("small allowed file\n" * 10, encoding="utf-8")
        (hot / "tinymods" / "__init__.py").write_text(
            '"""Tiny modules nobody imported."""\n', encoding="utf-8"
        )
        for name in ("warm", *(f"m{i}" for i in range(TINY_MODULES))):
            (hot / "tinymods" / f"{name}.py").write_text(f"X = {name!r}\n", encoding="utf-8")
        expose = ["expose-ro=."] if self.name == "ours" else []
        rules = self.profile("landlock", *expose, f"python-import={HOT_IMPORTS}")
        (hot / ".py-sandboxes").write_text(rules, encoding="utf-8")
        compile_next_to_sources = (
            "import compileall, sys; sys.pycache_prefix = None; "
            f"sys.exit(not compileall.compile_dir({str(hot / 'tinymods')!r}, quiet=1))"
        )
        run_child([self.python, "-c", compile_next_to_sources])
        rss = self.dir("rss")
        rss.mkdir(parents=True)
        (rss / "sleep.py").write_text(SLEEP, encoding="utf-8")
        (rss / ".py-sandboxes").write_text(self.profile("landlock", "python-import=time"), encoding="utf-8")

    # -- 1. start-up ---------------------------------------------------------------------------

    def startup(self) -> dict[str, float]:
        timed = {
            "floor": ([self.python, "empty.py"], self.dir("landlock")),
            "landlock": ([self.sb, "empty.py"], self.dir("landlock")),
            "subprocess": ([self.sb, "empty.py"], self.dir("subprocess")),
        }
        out = {}
        for key, (cmd, cwd) in timed.items():
            warm_bytecode(cmd, cwd=cwd)
            out[key] = time_process(cmd, cwd=cwd).median
        return out

    # -- 2. guarded hot paths --------------------------------------------------------------------

    def hot_paths(self, interpreter: str) -> dict[str, float]:
        """Medians (seconds per operation) of every batch of every process."""
        cmd = [interpreter, "hot.py"]
        warm_bytecode(cmd, cwd=self.dir("hot"))
        pooled: dict[str, list[float]] = {}
        for _ in range(HOT_PROCESSES):
            result = ast.literal_eval(run_child(cmd, cwd=self.dir("hot")))
            for key, values in result.items():
                pooled.setdefault(key, []).extend(values)
        return {key: median(values) / 1e9 for key, values in pooled.items()}

    # -- 3. peak RSS ---------------------------------------------------------------------------

    def rss(self) -> dict[str, float]:
        out = {}
        for key, cmd, cwd in (
            ("floor largest", [self.python, "empty.py"], self.dir("landlock")),
            ("largest", [self.sb, "empty.py"], self.dir("landlock")),
            ("floor tree", [self.python, "sleep.py"], self.dir("rss")),
            ("tree", [self.sb, "sleep.py"], self.dir("rss")),
        ):
            measure = peak_rss_largest if key.endswith("largest") else peak_rss_tree
            warm_bytecode(cmd, cwd=cwd)
            out[key] = median([measure(cmd, cwd) for _ in range(RSS_RUNS)])
        return out


def gnu_time() -> str | None:
    """GNU time (apt package ``time``), which reports the child's ``ru_maxrss`` with ``-f %M``."""
    path = "/usr/bin/time"
    return path if os.access(path, os.X_OK) else None


def peak_rss_largest(cmd: list[str], cwd: Path) -> float:
    """Bytes: the peak RSS of the command's largest process (itself or a descendant).

    GNU time reports ``ru_maxrss`` of the command it forks from its own small process. Without it,
    ``os.wait4`` on a child of this bench would not do: a child forked (or vforked) from this
    process keeps this process's high-water mark across ``exec``, so the floor would read as this
    process's size. The fallback samples ``VmHWM`` (the high-water mark of each process since its
    ``exec``) over the tree instead, which misses at most the last sampling interval.
    """
    tool = gnu_time()
    if tool is not None:
        with tempfile.NamedTemporaryFile("r", suffix=".txt", dir=WORK_DIR) as report:
            run_child([tool, "-f", "%M", "-o", report.name, *cmd], cwd=cwd)
            return int(report.read().split()[-1]) * 1024
    return sample_tree(cmd, cwd)[1]


def peak_rss_tree(cmd: list[str], cwd: Path) -> float:
    """Bytes: the peak of the summed VmRSS of the command and all its descendants, sampled."""
    return sample_tree(cmd, cwd)[0]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    stat = f.read()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            tree.setdefault(ppid, []).append(int(entry))
    return tree


def _memory(pid: int) -> tuple[int, int]:
    """``VmRSS`` and ``VmHWM`` of a process, in bytes (0 once it is gone)."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, hwm


def sample_tree(cmd: list[str], cwd: Path) -> tuple[int, int]:
    """Run ``cmd``, sampling its process tree: (peak of the summed VmRSS, largest VmHWM), bytes."""
    with tempfile.TemporaryFile(dir=WORK_DIR) as errors:
        proc = subprocess.Popen(cmd, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=errors)
        peak_sum = peak_process = 0
        while proc.poll() is None:
            children, pids, total = _children(), [proc.pid], 0
            while pids:
                pid = pids.pop()
                rss, hwm = _memory(pid)
                total += rss
                peak_process = max(peak_process, hwm)
                pids.extend(children.get(pid, ()))
            peak_sum = max(peak_sum, total)
            time.sleep(SAMPLE_EVERY)
        if proc.returncode != 0:
            errors.seek(0)
            why = errors.read().decode(errors="replace").strip()[-200:]
            raise CommandFailed(f"`{shlex.join(cmd)}` exited {proc.returncode}: {why}")
    return peak_sum, peak_process


# -- the table ---------------------------------------------------------------------------------


def target(ours: float | None, limit: float, unit: str, theirs: float | None = None, ratio: float = 0) -> str:
    shown = format_mib(limit) if unit == "B" else format_seconds(limit)
    text = f"≤ {shown}" + (f" and ≥ {ratio:.0f}× faster" if ratio else "")
    if ours is None:
        return text
    met = ours <= limit
    if ratio:
        if theirs is None:
            return f"{text}: {'met' if met else 'MISSED'} (ratio not checked, no reference)"
        met = met and theirs / ours >= ratio
    return f"{text}: {'met' if met else 'MISSED'}"


def main(argv: list[str]) -> int:
    ref = reference()
    shutil.rmtree(SCRATCH, ignore_errors=True)
    ours = Side("ours", OUR_PYTHON, OUR_SB)
    ours.write()
    theirs = None
    missing = None if ref.available else ref.reason
    if ref.python is not None:
        ref_sb = ref.python.parent / "python-sb"
        if ref_sb.exists():
            theirs = Side("ref", ref.python, ref_sb)
        else:
            missing = f"{ref_sb} does not exist"

    our_start = ours.startup()
    our_hot = ours.hot_paths(ours.sb)
    our_floor = ours.hot_paths(ours.python)
    our_rss = ours.rss()
    ref_start: dict[str, float] = {}
    ref_hot: dict[str, float] = {}
    ref_floor: dict[str, float] = {}
    ref_rss: dict[str, float] = {}
    if theirs is not None:
        try:
            theirs.write()
            ref_start = theirs.startup()
            ref_hot = theirs.hot_paths(theirs.sb)
            ref_floor = theirs.hot_paths(theirs.python)
            ref_rss = theirs.rss()
        except CommandFailed as exc:
            missing = f"its python-sb failed: {exc}"
            ref_start, ref_hot, ref_floor, ref_rss = {}, {}, {}, {}

    def both(cmd: str, what: str) -> str:
        return f"{cmd.format(SB='$SB', PY='$PY')} in $OURS-{what}" + (
            f" ; {cmd.format(SB='$REF_SB', PY='$REF_PY')} in $REF-{what}" if theirs is not None else ""
        )

    def diff(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    hot_per = f"median of {HOT_PROCESSES} processes × {FILE_BATCHES} batches of {FILE_BATCH} calls"
    import_per = (
        f"median of {HOT_PROCESSES} processes × {TINY_MODULES // IMPORT_BATCH} batches of {IMPORT_BATCH}"
    )
    s_land, r_land = our_start["landlock"], ref_start.get("landlock")
    rows = [
        Row(
            "start: python empty.py (floor)",
            our_start["floor"],
            ref_start.get("floor"),
            both("{PY} empty.py", "landlock"),
        ),
        Row(
            "start: python-sb empty.py, os-sandbox=landlock",
            s_land,
            r_land,
            both("{SB} empty.py", "landlock"),
            target=target(s_land, START_TARGET, "s", r_land, START_RATIO),
        ),
        Row(
            "start: python-sb empty.py, os-sandbox=landlock, minus the floor",
            diff(s_land, our_start["floor"]),
            diff(r_land, ref_start.get("floor")),
            "difference of the rows above",
        ),
        Row(
            "start: python-sb empty.py, os-sandbox=subprocess",
            our_start["subprocess"],
            ref_start.get("subprocess"),
            both("{SB} empty.py", "subprocess"),
        ),
    ]
    for key, label, limit, per in (
        ("open_read", "open+read a small allowed file", OPEN_TARGET, hot_per),
        ("stat", "os.stat of an allowed path", STAT_TARGET, hot_per),
        (
            "first_import",
            f"first import of a tiny module ({TINY_MODULES} modules)",
            IMPORT_TARGET,
            import_per,
        ),
    ):
        rows.append(
            Row(
                f"{label}: plain python (floor)",
                our_floor[key],
                ref_floor.get(key),
                both("{PY} hot.py", "hot"),
            )
        )
        rows.append(
            Row(
                f"{label}: python-sb landlock ({per})",
                our_hot[key],
                ref_hot.get(key),
                both("{SB} hot.py", "hot"),
                target=target(our_hot[key], limit, "s"),
            )
        )
    largest = "GNU time -f %M" if gnu_time() else "VmHWM sampled every 2 ms"
    rows += [
        Row(
            f"peak RSS, largest process: python empty.py (floor; {largest}, median of {RSS_RUNS})",
            our_rss["floor largest"],
            ref_rss.get("floor largest"),
            both("{PY} empty.py", "landlock"),
            unit="B",
        ),
        Row(
            f"peak RSS, largest process: python-sb empty.py, landlock ({largest})",
            our_rss["largest"],
            ref_rss.get("largest"),
            both("{SB} empty.py", "landlock"),
            unit="B",
            target=target(our_rss["largest"], RSS_TARGET, "B"),
        ),
        Row(
            "peak RSS, whole tree: python sleep.py (floor; sum of VmRSS over the tree, sampled every 2 ms)",
            our_rss["floor tree"],
            ref_rss.get("floor tree"),
            both("{PY} sleep.py", "rss"),
            unit="B",
        ),
        Row(
            "peak RSS, whole tree: python-sb sleep.py, landlock",
            our_rss["tree"],
            ref_rss.get("tree"),
            both("{SB} sleep.py", "rss"),
            unit="B",
            target=target(our_rss["tree"], RSS_TARGET, "B"),
        ),
    ]
    notes = [
        f"$SB={OUR_SB}, $PY={OUR_PYTHON}; $REF_SB={theirs.sb if theirs else 'n/a'}, "
        f"$REF_PY={theirs.python if theirs else 'n/a'} (venvs of the same CPython {sys.version.split()[0]})",
        f"$OURS-x = {SCRATCH}/ours-x, $REF-x = {SCRATCH}/ref-x: each command runs in that directory, next to "
        "its .py-sandboxes; ours: `os-sandbox=PROVIDER` only (+ `env=PYTHONPYCACHEPREFIX=` for subprocess); "
        "reference: `py-sandbox=true`, `os-sandbox=PROVIDER`, `learn=false`, `expose-ro=.` (anchor-perf.md)",
        "processes: ours with landlock is one process (confined in place); ours with subprocess replaces "
        "itself (exec) with a fresh interpreter; the reference runs a launcher and a child interpreter",
        f"hot paths: hot.py times loops with time.perf_counter_ns inside the sandboxed program; rules on both "
        f"sides `expose-ro=.` and `python-import={HOT_IMPORTS}`; the tiny modules' bytecode is compiled "
        "next to them and read from there on every side (hot.py sets sys.pycache_prefix = None first)",
        "peak RSS, largest process: ru_maxrss (GNU time; else VmHWM sampled over the tree), the maximum over "
        "the process and its descendants, not their sum; whole tree: the sum of VmRSS of the process and all its descendants, sampled "
        "while sleep.py sleeps 0.5 s (how anchor-perf.md measured the reference)",
        process_tool_note(),
        BYTECODE_NOTE,
        f"reference venv: {ref.reason}",
    ]
    print(
        Table(
            "Complete mode: python-sb start-up, guarded hot paths, peak memory", rows, notes, missing
        ).render()
    )
    if "--importtime" in argv:
        print()
        print(importtime_report(ours))
    return 0


# -- where our start-up goes (--importtime) ----------------------------------------------------

_IMPORT_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def importtime_report(ours: Side, runs: int = 5, top: int = 15) -> str:
    """The modules with the largest self import time in ``python -X importtime $SB empty.py``."""
    cmd = [ours.python, "-X", "importtime", ours.sb, "empty.py"]
    samples: dict[str, list[int]] = {}
    cumulative: dict[str, list[int]] = {}
    for _ in range(runs):
        done = subprocess.run(
            cmd, capture_output=True, text=True, env=child_env(), cwd=ours.dir("landlock"), check=False
        )
        if done.returncode != 0:
            raise CommandFailed(f"`{shlex.join(cmd)}` exited {done.returncode}")
        for line in done.stderr.splitlines():
            m = _IMPORT_LINE.match(line)
            if m:
                samples.setdefault(m.group(4), []).append(int(m.group(1)))
                if len(m.group(3)) == 1:  # not indented: imported by no tracked module
                    cumulative.setdefault(m.group(4), []).append(int(m.group(2)))
    total = sum(median(v) for v in samples.values()) / 1e6
    worst = sorted(samples.items(), key=lambda kv: -median(kv[1]))[:top]
    roots = sorted(cumulative.items(), key=lambda kv: -median(kv[1]))[:top]
    out = [
        f"## Where our start-up goes: `python -X importtime $SB empty.py` (median of {runs} runs)",
        "",
        f"Sum of every import's self time: {format_seconds(total)}.",
        "",
        "| top-level import (with what it pulls in) | cumulative |",
        "|---|---|",
        *(f"| {name} | {format_seconds(median(v) / 1e6)} |" for name, v in roots),
        "",
        "| module | self |",
        "|---|---|",
        *(f"| {name} | {format_seconds(median(v) / 1e6)} |" for name, v in worst),
    ]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
