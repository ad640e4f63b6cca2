"""The OS providers (``landlock``, ``bwrap``, ``unshare``, ``firejail``, ``qemu``) against the kernel
floor and pysandboxes 0.7.0 (its ``qemu`` is not run: it downloads a cloud image first).

1. **Start-up**: ``python-sb empty.py`` under ``landlock``, ``bwrap`` and ``unshare``; the floors:
   ``python empty.py`` and bubblewrap alone starting the same interpreter
   (``bwrap --ro-bind / / --unshare-all python empty.py``). The reference runs the same file with
   its own ``bwrap`` and ``unshare`` providers (its ``bwrap`` needs bubblewrap >= 0.9: on Debian
   12's 0.8.0 it does not start, and the row says why).
2. **Partial mode**: ``sandboxes()`` enter + the first ``@sandbox`` call, median over processes.
3. **Peak RSS of the whole process tree** of ``python-sb sleep.py`` (0.5 s), sampled.

Run: ``.venv/bin/python bench/bench_providers.py``. Each figure is taken in a child process.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from _common import (
    OUR_PYTHON,
    WORK_DIR,
    CommandFailed,
    Row,
    Table,
    median,
    process_tool_note,
    reference,
    run_child,
    time_process,
    warm_bytecode,
)
from bench_complete import peak_rss_tree

SCRATCH = WORK_DIR / "providers"
OUR_SB = OUR_PYTHON.parent / "python-sb"
PROVIDERS = ("none", "subprocess", "landlock", "bwrap", "unshare", "firejail", "qemu")
#: providers with a partial-mode child (under none, calls are direct)
ENTERED = PROVIDERS[1:]
ENTER_PROCESSES = 7
#: a virtual machine takes seconds (minutes under TCG): fewer runs, timed by hand
QEMU_RUNS = 3
START_TARGET = 0.045
ENTER_TARGET = 0.100

TOOLS = """\
from pysandboxes import sandbox


@sandbox
def small(x):
    return x + 1
"""

HOST = """\
import json, sys, time

CALLS = 200

t0 = time.perf_counter()
from pysandboxes import sandboxes
import tools

with sandboxes():
    tools.small(1)
    t1 = time.perf_counter()
    for i in range(CALLS):
        tools.small(i)
    t2 = time.perf_counter()
print(json.dumps({"enter_first": t1 - t0, "call": (t2 - t1) / CALLS}))
"""


def write(side: str, provider: str) -> Path:
    d = SCRATCH / f"{side}-{provider}"
    d.mkdir(parents=True)
    (d / "empty.py").write_text("", encoding="utf-8")
    (d / "sleep.py").write_text("import time\ntime.sleep(0.5)\n", encoding="utf-8")
    (d / "tools.py").write_text(TOOLS, encoding="utf-8")
    (d / "host.py").write_text(HOST, encoding="utf-8")
    if side == "ours":
        rules = [f"os-sandbox={provider}", "python-import=time"]
    else:  # the profile of anchor-perf.md, its provider written out
        rules = [
            "py-sandbox=true",
            f"os-sandbox={provider}",
            "learn=false",
            "expose-ro=.",
            "python-import=time",
        ]
    (d / ".py-sandboxes").write_text("\n".join(["# bench/bench_providers.py", *rules, ""]), encoding="utf-8")
    return d


def start(python: str, sb: str, d: Path) -> float:
    cmd = [sb, "empty.py"]
    warm_bytecode(cmd, cwd=d)
    if d.name.endswith("-qemu"):
        return median([_wall(cmd, d) for _ in range(QEMU_RUNS)])
    return time_process(cmd, cwd=d).median


def _wall(cmd: list[str], d: Path) -> float:
    import time

    t0 = time.perf_counter()
    run_child(cmd, cwd=d)
    return time.perf_counter() - t0


def enter_first(python: str, d: Path) -> float:
    """Median over processes of sandboxes() entry + first call; the median of the same
    processes' per-call time (200 small calls after the first) is kept in CALL_TIMES."""
    cmd = [python, "host.py"]
    run_child(cmd, cwd=d)
    count = QEMU_RUNS if d.name.endswith("-qemu") else ENTER_PROCESSES
    runs = [json.loads(run_child(cmd, cwd=d)) for _ in range(count)]
    if all("call" in r for r in runs):
        CALL_TIMES[str(d)] = median([r["call"] for r in runs])
    return median([r["enter_first"] for r in runs])


#: per-call time of each directory's last enter_first() runs
CALL_TIMES: dict[str, float] = {}


def main(argv: list[str]) -> int:
    shutil.rmtree(SCRATCH, ignore_errors=True)
    ref = reference()
    python = str(OUR_PYTHON)
    dirs = {p: write("ours", p) for p in PROVIDERS}
    ours: dict[str, float | None] = {}
    theirs: dict[str, float | None] = {}
    failures: dict[str, str] = {}
    bwrap = shutil.which("bwrap")
    ours["floor"] = time_process([python, "empty.py"], cwd=dirs["landlock"]).median
    if bwrap:
        cmd = [
            bwrap,
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-all",
            python,
            "empty.py",
        ]
        ours["bwrap floor"] = time_process(cmd, cwd=dirs["landlock"]).median
    for provider in PROVIDERS:
        ours[f"start {provider}"] = start(python, str(OUR_SB), dirs[provider])
        ours[f"rss {provider}"] = peak_rss_tree([str(OUR_SB), "sleep.py"], dirs[provider])
        if provider in ENTERED:
            ours[f"enter {provider}"] = enter_first(python, dirs[provider])
    if ref.python is not None:
        ref_sb = str(ref.python.parent / "python-sb")
        for provider in PROVIDERS:
            if provider == "qemu":  # it downloads a cloud image at its first start: not here
                failures["qemu"] = "not run: the reference fetches a Debian cloud image from the internet"
                continue
            d = write("ref", provider)
            for key, job in (
                (f"start {provider}", lambda d=d: start(str(ref.python), ref_sb, d)),
                (f"rss {provider}", lambda d=d: peak_rss_tree([ref_sb, "sleep.py"], d)),
                (f"enter {provider}", lambda d=d: enter_first(str(ref.python), d)),
            ):
                if key == "enter none":
                    continue
                try:
                    theirs[key] = job()
                except (CommandFailed, subprocess.SubprocessError, ValueError, KeyError) as exc:
                    theirs[key] = None
                    failures[key] = str(exc).splitlines()[-1][:160] if str(exc) else type(exc).__name__
    rows = [
        Row("start: python empty.py (floor)", ours["floor"], None, "$PY empty.py"),
        Row(
            "start: bwrap --unshare-all python empty.py (kernel floor)",
            ours.get("bwrap floor"),
            None,
            "bwrap …",
        ),
    ]
    for provider in PROVIDERS:
        s = ours[f"start {provider}"]
        rows.append(
            Row(
                f"start: python-sb empty.py, os-sandbox={provider}",
                s,
                theirs.get(f"start {provider}"),
                f"$SB empty.py in {provider}/",
                target=_start_target(provider, s),
            )
        )
    for provider in ENTERED:
        e = ours[f"enter {provider}"]
        rows.append(
            Row(
                f"partial: sandboxes() enter + first call, os-sandbox={provider} "
                f"(median of {QEMU_RUNS if provider == 'qemu' else ENTER_PROCESSES})",
                e,
                theirs.get(f"enter {provider}"),
                "$PY host.py",
                target=None
                if provider == "qemu"
                else f"≤ {ENTER_TARGET * 1e3:.0f} ms: {'met' if e and e <= ENTER_TARGET else 'missed'}",
            )
        )
    for provider in ENTERED:
        rows.append(
            Row(
                f"partial: one small call after the first, os-sandbox={provider}",
                CALL_TIMES.get(str(dirs[provider])),
                None,
                "$PY host.py (200 calls)",
            )
        )
    for provider in PROVIDERS:
        rows.append(
            Row(
                f"peak RSS, whole tree, python-sb sleep.py, os-sandbox={provider}",
                ours[f"rss {provider}"],
                theirs.get(f"rss {provider}"),
                "$SB sleep.py (0.5 s), sampled",
                unit="B",
            )
        )
    notes = [process_tool_note(), f"bubblewrap: {_bwrap_version()}", f"qemu: {_qemu_accel()}"]
    notes += [f"reference {key}: failed: {why}" for key, why in failures.items()]
    table = Table(
        "Namespace providers: start-up, partial-mode entry, memory",
        rows,
        notes,
        reference_missing=None if ref.available else ref.reason,
    )
    print(table.render())
    return 0


def _start_target(provider: str, s: float | None) -> str | None:
    if provider in ("none", "subprocess", "landlock", "firejail"):
        return None
    if provider == "qemu":
        from pysandboxes.providers.qemu import accelerator

        limit = 2.0 if accelerator()[0] == "kvm" else 10.0
        return f"≤ {limit:.0f} s: {'met' if s and s <= limit else 'missed'}"
    return f"≤ {START_TARGET * 1e3:.0f} ms: {'met' if s and s <= START_TARGET else 'missed'}"


def _qemu_accel() -> str:
    from pysandboxes.providers.qemu import accelerator

    accel, why = accelerator()
    return f"{accel.upper()} ({why}); QEMU_RUNS={QEMU_RUNS} runs per figure"


def _bwrap_version() -> str:
    binary = shutil.which("bwrap")
    if binary is None:
        return "not installed"
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr.strip()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
