"""Shared helpers of the benchmarks: the reference venv, child processes, timing, the table.

Every figure is taken in a child process, for our side and for the reference alike, so that
both run the same interpreter (the one behind both venvs) with the same environment.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REFERENCE_VERSION = "0.7.0"
REFERENCE_LABEL = f"pysandboxes {REFERENCE_VERSION}"
REFERENCE_VENV = Path(f"/tmp/pysandboxes-{REFERENCE_VERSION}-venv")
#: Profiles and scratch directories of the benchmarks (outside the repository).
WORK_DIR = Path(tempfile.gettempdir()) / "pysandboxes-bench"
#: Bytecode of every child goes here, so warming the cache writes nothing into the repository.
PYCACHE_DIR = WORK_DIR / "pycache"
#: Our interpreter: the workspace venv when it exists (``make bench`` runs through it anyway).
OUR_PYTHON = (
    REPO / ".venv" / "bin" / "python"
    if (REPO / ".venv" / "bin" / "python").exists()
    else Path(sys.executable)
)

PROCESS_RUNS = 15  # whole-process timings: hyperfine --runs (the fallback loop uses as many)
PROCESS_WARMUP = 3

BYTECODE_NOTE = (
    "PYTHONDONTWRITEBYTECODE is removed from every child process and the bytecode cache "
    f"(PYTHONPYCACHEPREFIX={PYCACHE_DIR}) is warmed once per command before timing, on both sides."
)


@dataclass(frozen=True)
class Reference:
    """The reference interpreter, or why there is none."""

    python: Path | None
    reason: str  # what was done ("reused", "created") or why it is unavailable

    @property
    def available(self) -> bool:
        return self.python is not None


def _installed_version(python: Path) -> str | None:
    if not python.exists():
        return None
    probe = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m; print(m.version('pysandboxes'))"],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    return probe.stdout.strip() if probe.returncode == 0 else None


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


@functools.cache
def reference() -> Reference:
    """Create once (then reuse) a throw-away venv holding pysandboxes 0.7.0 from the package index.

    A failure is reported, not raised: the benchmarks then print our figures only.
    """
    python = REFERENCE_VENV / "bin" / "python"
    if _installed_version(python) == REFERENCE_VERSION:
        return Reference(python, f"reused {REFERENCE_VENV}")
    python3 = shutil.which("python3")
    if python3 is None:
        return Reference(None, "no python3 on PATH to create the reference venv")
    print(f"creating the reference venv {REFERENCE_VENV} (pip install pysandboxes=={REFERENCE_VERSION}) ...")
    steps = (
        [python3, "-m", "venv", "--clear", str(REFERENCE_VENV)],
        [str(python), "-m", "pip", "install", "--quiet", f"pysandboxes=={REFERENCE_VERSION}"],
    )
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=900, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return Reference(None, f"`{shlex.join(step)}` failed: {exc}")
        if done.returncode != 0:
            why = _last_line(done.stderr or done.stdout)
            return Reference(None, f"`{shlex.join(step)}` exited {done.returncode}: {why}")
    version = _installed_version(python)
    if version != REFERENCE_VERSION:
        return Reference(None, f"the new venv reports pysandboxes {version!r}, not {REFERENCE_VERSION}")
    return Reference(python, f"created {REFERENCE_VENV}")


def reference_site_packages(python: Path) -> Path:
    """Where the reference's sources are (for the reader of the bench, and for sanity checks)."""
    out = subprocess.run(
        [str(python), "-c", "import pysandboxes, os; print(os.path.dirname(pysandboxes.__file__))"],
        capture_output=True,
        text=True,
        env=child_env(),
        check=True,
    )
    return Path(out.stdout.strip())


def child_env() -> dict[str, str]:
    """The environment of every measured process, identical for both sides.

    PYTHONDONTWRITEBYTECODE is set in this development environment: with it every start would
    recompile our (editable, never byte-compiled) modules while the reference, byte-compiled by
    pip at install, would not. OS_SANDBOX is removed so the profiles' ``${OS_SANDBOX:-landlock}``
    takes its default on both sides.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "OS_SANDBOX")}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE_DIR)
    return env


class CommandFailed(RuntimeError):
    """A measured command did not exit 0: its figure would be meaningless."""


def run_child(cmd: Sequence[str], *, cwd: Path | None = None, timeout: float = 300) -> str:
    """Run ``cmd`` with :func:`child_env`; return its stdout, raise :class:`CommandFailed` otherwise."""
    done = subprocess.run(
        list(cmd), capture_output=True, text=True, env=child_env(), cwd=cwd, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise CommandFailed(f"`{shlex.join(cmd)}` exited {done.returncode}: {_last_line(done.stderr)}")
    return done.stdout


def warm_bytecode(cmd: Sequence[str], *, cwd: Path | None = None) -> None:
    """Run ``cmd`` once so that every module it imports has its bytecode cached (and it works)."""
    run_child(cmd, cwd=cwd)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


@dataclass(frozen=True)
class ProcessTiming:
    median: float  # seconds
    runs: int
    tool: str


def hyperfine() -> str | None:
    return shutil.which("hyperfine")


def time_process(
    cmd: Sequence[str], *, runs: int = PROCESS_RUNS, warmup: int = PROCESS_WARMUP, cwd: Path | None = None
) -> ProcessTiming:
    """Median wall time of the whole process ``cmd``: hyperfine when installed, else a loop."""
    runs = max(runs, 10)
    tool = hyperfine()
    if tool is not None:
        WORK_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(suffix=".json", dir=WORK_DIR) as export:
            hf = [
                tool,
                "-N",  # no intermediate shell: the figure is the command's own
                "--style",
                "none",
                "--warmup",
                str(warmup),
                "--runs",
                str(runs),
                "--export-json",
                export.name,
                shlex.join(cmd),
            ]
            done = subprocess.run(hf, capture_output=True, text=True, env=child_env(), cwd=cwd, check=False)
            if done.returncode != 0:
                raise CommandFailed(f"hyperfine on `{shlex.join(cmd)}`: {_last_line(done.stderr)}")
            result = json.loads(Path(export.name).read_text())["results"][0]
        return ProcessTiming(result["median"], len(result["times"]), "hyperfine")
    for _ in range(warmup):
        run_child(cmd, cwd=cwd)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(list(cmd), env=child_env(), cwd=cwd, stdout=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise CommandFailed(f"`{shlex.join(cmd)}` exited {done.returncode}")
    return ProcessTiming(median(times), runs, "perf_counter loop")


def process_tool_note() -> str:
    if hyperfine() is not None:
        return f"whole processes: hyperfine -N, {PROCESS_WARMUP} warm-ups, median of {PROCESS_RUNS} runs"
    return (
        f"whole processes: hyperfine not installed, subprocess loop timed with time.perf_counter, "
        f"{PROCESS_WARMUP} warm-ups, median of {max(PROCESS_RUNS, 10)} runs"
    )


# -- the table ----------------------------------------------------------------------------------


def format_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    if seconds >= 1e-5:
        return f"{seconds * 1e6:.0f} µs"
    return f"{seconds * 1e6:.1f} µs"


def format_mib(size: float) -> str:
    return f"{size / 2**20:.1f} MiB"


def format_value(value: float, unit: str) -> str:
    """``unit`` "s": a duration in seconds; "B": a size in bytes; "x": a ratio."""
    if unit == "x":
        return f"{value:.1f}×"
    return format_mib(value) if unit == "B" else format_seconds(value)


def format_ratio(ours: float | None, theirs: float | None) -> str:
    if ours is None or theirs is None or ours <= 0:
        return "n/a"
    return f"{theirs / ours:.1f}×"


@dataclass(frozen=True)
class Row:
    measure: str
    ours: float | None  # seconds (bytes when unit == "B"); None: not measured
    theirs: float | None  # same unit; None: the reference is unavailable (see Table.reference_missing)
    command: str
    unit: str = "s"  # "s" seconds, "B" bytes, "x" a ratio
    target: str | None = None  # the goal for our figure and whether it is met; adds a "target" column


@dataclass
class Table:
    title: str
    rows: list[Row]
    notes: list[str]
    reference_missing: str | None = None  # why the reference column says n/a

    def render(self) -> str:
        with_target = any(row.target is not None for row in self.rows)
        header: tuple[str, ...] = ("measure", "ours", REFERENCE_LABEL, "ratio (reference / ours)")
        header += ("target", "command") if with_target else ("command",)
        cells = [header]
        for row in self.rows:
            if row.theirs is not None:
                theirs = format_value(row.theirs, row.unit)
            else:
                theirs = "n/a (see the first note)" if self.reference_missing else "n/a"
            cell: tuple[str, ...] = (
                row.measure,
                format_value(row.ours, row.unit) if row.ours is not None else "n/a",
                theirs,
                format_ratio(row.ours, row.theirs),
            )
            cell += (row.target or "", row.command) if with_target else (row.command,)
            cells.append(cell)
        widths = [max(len(line[i]) for line in cells) for i in range(len(header))]

        def line(values: Sequence[str]) -> str:
            return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

        out = [f"## {self.title}", "", line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        out += [line(c) for c in cells[1:]]
        notes = list(self.notes)
        if self.reference_missing is not None:
            notes.insert(0, f"{REFERENCE_LABEL}: n/a because {self.reference_missing}")
        out.append("")
        out += [f"- {note}" for note in notes]
        return "\n".join(out)


def legend(names: Mapping[str, str]) -> str:
    return "where " + ", ".join(f"{k}={v}" for k, v in names.items())
