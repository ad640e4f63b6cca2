"""Partial mode (``@sandbox`` + ``with sandboxes():``): start, round trip, payload, threads, memory.

Each side runs the same host program with its own interpreter (``.venv/bin/python``,
``/tmp/pysandboxes-0.7.0-venv/bin/python``; both APIs are ``from pysandboxes import sandbox,
sandboxes``), in its own project directory under ``/tmp/pysandboxes-bench/partial/`` holding
``sbfuncs.py`` (the ``@sandbox`` functions, the same file on both sides), the host scripts and a
``.py-sandboxes``:

- **ours**: ``os-sandbox=landlock`` (and a second directory with ``subprocess``),
  ``python-import=time`` (``sleepy`` imports it). Our child imports the program's modules
  (``sbfuncs``) before the rules apply, as the host did, so nothing else is needed.
- **pysandboxes 0.7.0**: the profile of ``anchor-perf.md`` §2: ``py-sandbox=true``,
  ``os-sandbox=subprocess``, ``learn=false``, ``expose-ro=.``, ``python-import=time, sbfuncs``
  (its child imports ``sbfuncs`` under the rules). ``anchor-perf.md`` measured its landlock
  provider within 5 % of subprocess (1.55 vs 1.51 s to start, 2.30 vs 2.14 ms per call).

Measures:

1. ``host.py`` (``HOST`` below), run in 5 fresh processes per side: ``time.perf_counter`` around
   ``with sandboxes():`` entering and the first call; then, after warm-up calls, every round trip
   of ``small(i) -> i + 1`` (p50 and p90 of the pooled calls), of ``echo_bytes(100 kB)`` (100 kB
   in, the same 100 kB out), and 4 threads each calling ``sleepy(0.5)`` at once.
2. Whole processes (hyperfine): ``python start.py`` (import, ``with sandboxes(): small(1)``,
   leave) minus ``python floor.py`` (the same imports, no block): what a program pays for the
   block, its exit included.
3. Peak RSS of the whole tree (host + child + anything they start): the sum of ``VmRSS`` sampled
   every 2 ms while ``rss.py`` makes 100 calls then waits 0.3 s in the block (as
   ``anchor-perf.md`` §4 measured 100 MiB for the reference); ``floor.py`` sampled the same way.
4. The floor of a round trip on this machine: ``pipe_floor.py``, two processes answering
   pickles over a ``SOCK_SEQPACKET`` socket pair (our channel's transport, without a sandbox).

5. Latency under load: the round trips of 1. (``host.py N 0 calls-only``) idle, then again while a
   busy neighbour burns every CPU (one ``python -c "while True: pass"`` per CPU of the affinity
   mask, started by the bench and killed by pid after): p50 and p95 of each, and the ratio.
6. Enter time with a framework's tool module: ``enter_fw.py`` in the langchain environment
   (``.venv-int/langchain``, made by ``scripts/integration-envs.sh langchain``; skipped when it
   is absent), the host importing ``langchain_core`` either way: ``with sandboxes():`` entered
   and the first ``tool.invoke()`` when the ``@sandbox`` functions live in a module that imports
   langchain (the child imports it too) and when they live in a framework-free module that the
   host wraps with ``tool()`` (the child imports only that module).

``--only=load,frameworks`` runs only those parts (our side only: no reference venv).
``--profile`` adds where our round trip goes: cProfile of the host around 2000 calls, and loops
timing the codec and the raw socket (the child cannot be profiled from outside).
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as plain files: _common is found next to them
    BYTECODE_NOTE,
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
from bench_complete import sample_tree, target

SCRATCH = WORK_DIR / "partial"
HOST_PROCESSES = 5  # fresh host processes per side; their calls are pooled
RSS_RUNS = 5
PAYLOAD = 100_000  # bytes each way
WARMUP_CALLS = 50
# calls timed per process: (small, 100 kB). The reference takes ~2 ms and ~65 ms per call.
OUR_CALLS = (2000, 200)
REF_CALLS = (300, 20)
RSS_CALLS = 100

# The targets of DESIGN.md §7 for our figures.
START_TARGET = 80e-3
CALL_TARGET = 40e-6
PAYLOAD_TARGET = 1e-3
THREADS_TARGET = 0.7
RSS_TARGET = 50 * 2**20

SBFUNCS = '''\
"""The @sandbox functions of the partial-mode benchmark (written by bench/bench_partial.py)."""
from pysandboxes import sandbox


@sandbox
def small(x):
    """A small value: the round trip is what is measured."""
    return x + 1


@sandbox
def echo_bytes(b):
    """The argument back: 100 kB in, 100 kB out."""
    return b


@sandbox
def sleepy(t):
    """Blocks t seconds: do calls from several threads overlap in the child?"""
    import time

    time.sleep(t)
    return t
'''

HOST = f'''\
"""Times one sandboxes() session from the host (written by bench/bench_partial.py)."""
import json
import os
import sys
import threading
import time

clock = time.perf_counter
t0 = clock()
from pysandboxes import sandboxes  # noqa: E402

import sbfuncs  # noqa: E402

t1 = clock()
small_calls, payload_calls = int(sys.argv[1]), int(sys.argv[2])
one_cpu = len(sys.argv) > 3 and sys.argv[3] == "one-cpu"
calls_only = len(sys.argv) > 3 and sys.argv[3] == "calls-only"
if one_cpu:  # host and child (it inherits the affinity) on one CPU: no cross-CPU wake-ups
    os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
config = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".py-sandboxes")
out = {{"import": t1 - t0}}
t2 = clock()
with sandboxes(sandboxes_config=config):
    t3 = clock()
    assert sbfuncs.small(1) == 2
    t4 = clock()
    out["enter"], out["first_call"], out["enter_first"] = t3 - t2, t4 - t3, t4 - t2
    for i in range({WARMUP_CALLS}):
        sbfuncs.small(i)
    small = []
    for i in range(small_calls):
        a = clock()
        r = sbfuncs.small(i)
        small.append(clock() - a)
        assert r == i + 1
    data = b"x" * {PAYLOAD}
    for _ in range(3):
        sbfuncs.echo_bytes(data)
    payload = []
    for _ in range(payload_calls):
        a = clock()
        r = sbfuncs.echo_bytes(data)
        payload.append(clock() - a)
        assert r == data
    out["threads"] = None
    if not one_cpu and not calls_only:
        threads = [threading.Thread(target=sbfuncs.sleepy, args=(0.5,)) for _ in range(4)]
        a = clock()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["threads"] = clock() - a
    out["small"], out["payload"] = small, payload
    t5 = clock()
out["exit"] = clock() - t5
print(json.dumps(out))
'''

START = '''\
"""Import, enter the block, one call, leave (written by bench/bench_partial.py)."""
import os

from pysandboxes import sandboxes

import sbfuncs

with sandboxes(sandboxes_config=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".py-sandboxes")):
    assert sbfuncs.small(1) == 2
'''

FLOOR = '''\
"""start.py without the block: the same imports (written by bench/bench_partial.py)."""
import os  # noqa: F401
import sys
import time

from pysandboxes import sandboxes  # noqa: F401

import sbfuncs  # noqa: F401

if len(sys.argv) > 1:
    time.sleep(float(sys.argv[1]))
'''

RSS = f'''\
"""{RSS_CALLS} calls, then wait in the block while the tree is sampled (bench/bench_partial.py)."""
import os
import time

from pysandboxes import sandboxes

import sbfuncs

with sandboxes(sandboxes_config=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".py-sandboxes")):
    for i in range({RSS_CALLS}):
        assert sbfuncs.small(i) == i + 1
    time.sleep(0.3)
'''

PIPE_FLOOR = f'''\
"""The floor of a round trip: two processes, pickles over a SOCK_SEQPACKET socket pair.

No sandbox, no guard, no threads: one sendmsg and one recv_into a buffer allocated once, on
each side (written by bench/bench_partial.py). "two-cpus": the host on one CPU, the child on
another, so that every wake-up crosses CPUs (as it may when the scheduler places them);
"one-cpu": both on one CPU, where none does. Prints the round trips, in seconds, as JSON.
"""
import json
import os
import pickle
import socket
import subprocess
import sys
import time

CHILD = """
import os, pickle, socket
os.sched_setaffinity(0, {{int(os.environ["FLOOR_CPU"])}})
s = socket.socket(fileno=int(os.environ["FLOOR_FD"]))
buf = bytearray(1 << 18)
while True:
    n = s.recv_into(buf)
    if not n:
        break
    fn, args = pickle.loads(memoryview(buf)[:n])
    value = args[0] + 1 if fn == "small" else args[0]
    s.sendmsg([pickle.dumps(value, 5)])
"""
clock = time.perf_counter
out = {{}}
cpus = sorted(os.sched_getaffinity(0))
for where, host_cpu, child_cpu in (("two-cpus", cpus[0], cpus[-1]), ("one-cpu", cpus[0], cpus[0])):
    os.sched_setaffinity(0, {{host_cpu}})
    host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    for s in (host, child):  # room for a 100 kB message in one datagram
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    env = dict(os.environ, FLOOR_FD=str(child.fileno()), FLOOR_CPU=str(child_cpu))
    proc = subprocess.Popen([sys.executable, "-c", CHILD], pass_fds=[child.fileno()], env=env)
    child.close()
    buf = bytearray(1 << 18)

    def call(fn, arg):
        host.sendmsg([pickle.dumps((fn, (arg,)), 5)])
        n = host.recv_into(buf)
        return pickle.loads(memoryview(buf)[:n])

    for fn, arg, n in (("small", 1, 5000), ("echo", b"x" * {PAYLOAD}, 500)):
        for _ in range(200):
            call(fn, arg)
        lat = []
        for i in range(n):
            a = clock()
            call(fn, arg if fn == "echo" else i)
            lat.append(clock() - a)
        out[f"{{where}} {{fn}}"] = lat
    host.close()
    proc.wait()
print(json.dumps(out))
'''


FW_TOOLS = '''\
"""@sandbox functions in a module that imports langchain (written by bench/bench_partial.py)."""
from langchain_core.tools import tool

from pysandboxes import sandbox


@tool
@sandbox
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''

PLAIN_TOOLS = '''\
"""@sandbox functions in a framework-free module (written by bench/bench_partial.py)."""
from pysandboxes import sandbox


@sandbox
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''

ENTER_FW = '''\
"""sandboxes() enter + first tool call, the tools in fw_tools or plain_tools (bench/bench_partial.py)."""
import json
import os
import sys
import time

from langchain_core.tools import tool

from pysandboxes import sandboxes

clock = time.perf_counter
if sys.argv[1] == "framework":
    import fw_tools

    add = fw_tools.add
else:
    import plain_tools

    add = tool(plain_tools.add)
config = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".py-sandboxes")
t0 = clock()
with sandboxes(sandboxes_config=config):
    t1 = clock()
    assert add.invoke({"a": 1, "b": 2}) == 3
    t2 = clock()
print(json.dumps({"enter": t1 - t0, "enter_first": t2 - t0}))
'''

#: the environment of the framework whose tool module is measured (6.)
FW_PYTHON = Path(__file__).resolve().parent.parent / ".venv-int" / "langchain" / "bin" / "python"
FW_RUNS = 5
LOAD_PROCESSES = 3  # host processes per condition (idle, loaded); their calls are pooled
LOAD_CALLS = 2000
#: p50 under load may be at most this many times the idle p50 (issue 18 §3)
LOAD_TARGET = 3.0


class BusyNeighbours:
    """One CPU-burning process per CPU of our affinity mask, killed by pid on exit."""

    def __enter__(self) -> BusyNeighbours:
        import os
        import subprocess

        count = len(os.sched_getaffinity(0))
        self.processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
        import time

        time.sleep(0.5)  # they are running
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait()


class Side:
    """One implementation: its interpreter and its project directories."""

    def __init__(self, name: str, python: Path, providers: tuple[str, ...], calls: tuple[int, int]) -> None:
        self.name = name  # "ours" | "ref"
        self.python = str(python)
        self.providers = providers
        self.calls = calls

    def dir(self, provider: str) -> Path:
        return SCRATCH / f"{self.name}-{provider}"

    def profile(self, provider: str) -> str:
        if self.name == "ours":
            lines = [f"os-sandbox={provider}", "python-import=time"]
        else:  # anchor-perf.md: learn=false, expose-ro=., the python-import= lines the script needs
            lines = [
                "py-sandbox=true",
                f"os-sandbox={provider}",
                "learn=false",
                "expose-ro=.",
                "python-import=time, sbfuncs",
            ]
        return "\n".join(["# written by bench/bench_partial.py", *lines, ""])

    def write(self) -> None:
        for provider in self.providers:
            d = self.dir(provider)
            d.mkdir(parents=True)
            for name, text in (
                ("sbfuncs.py", SBFUNCS),
                ("host.py", HOST),
                ("start.py", START),
                ("floor.py", FLOOR),
                ("rss.py", RSS),
                ("pipe_floor.py", PIPE_FLOOR),
                (".py-sandboxes", self.profile(provider)),
            ):
                (d / name).write_text(text, encoding="utf-8")

    # -- 1. in the host ------------------------------------------------------------------------

    def session(self, provider: str, *, one_cpu: bool = False) -> dict[str, float]:
        """Medians over HOST_PROCESSES processes; round trips pooled (p50, p90)."""
        cwd = self.dir(provider)
        calls = (self.calls[0], 0) if one_cpu else self.calls
        cmd = [self.python, "host.py", *(str(n) for n in calls), *(["one-cpu"] if one_cpu else [])]
        warm_bytecode([self.python, "host.py", "10", "2", *cmd[4:]], cwd=cwd)
        runs = [json.loads(run_child(cmd, cwd=cwd)) for _ in range(HOST_PROCESSES)]
        small = [x for run in runs for x in run["small"]]
        payload = [x for run in runs for x in run["payload"]]
        out = {key: median([run[key] for run in runs]) for key in ("import", "enter_first", "exit")}
        out.update(
            small_p50=percentile(small, 50), small_p90=percentile(small, 90), small_p95=percentile(small, 95)
        )
        if not one_cpu:
            out.update(payload_p50=percentile(payload, 50), threads=median([run["threads"] for run in runs]))
        return out

    # -- 5. under load ---------------------------------------------------------------------------

    def loaded(self, provider: str) -> dict[str, float]:
        """p50 and p95 of small(i) idle, then with a busy neighbour on every CPU."""
        cwd = self.dir(provider)
        calls = LOAD_CALLS if self.name == "ours" else self.calls[0]
        cmd = [self.python, "host.py", str(calls), "0", "calls-only"]
        warm_bytecode([self.python, "host.py", "10", "0", "calls-only"], cwd=cwd)
        out: dict[str, float] = {}
        for condition in ("idle", "loaded"):
            if condition == "loaded":
                with BusyNeighbours():
                    runs = [json.loads(run_child(cmd, cwd=cwd)) for _ in range(LOAD_PROCESSES)]
            else:
                runs = [json.loads(run_child(cmd, cwd=cwd)) for _ in range(LOAD_PROCESSES)]
            small = [x for run in runs for x in run["small"]]
            out[f"{condition}_p50"] = percentile(small, 50)
            out[f"{condition}_p95"] = percentile(small, 95)
        out["ratio"] = out["loaded_p50"] / out["idle_p50"]
        return out

    # -- 6. a framework's tool module -------------------------------------------------------

    def framework_enter(self) -> dict[str, float] | None:
        """Medians of FW_RUNS processes: enter, and enter + first call, for both tool modules."""
        if self.name != "ours" or not FW_PYTHON.exists():
            return None
        cwd = SCRATCH / "ours-framework"
        cwd.mkdir(parents=True, exist_ok=True)
        for name, text in (
            ("fw_tools.py", FW_TOOLS),
            ("plain_tools.py", PLAIN_TOOLS),
            ("enter_fw.py", ENTER_FW),
        ):
            (cwd / name).write_text(text, encoding="utf-8")
        (cwd / ".py-sandboxes").write_text("# written by bench/bench_partial.py\nos-sandbox=landlock\n")
        out: dict[str, float] = {}
        for which in ("framework", "plain"):
            cmd = [str(FW_PYTHON), "enter_fw.py", which]
            warm_bytecode(cmd, cwd=cwd)
            runs = [json.loads(run_child(cmd, cwd=cwd)) for _ in range(FW_RUNS)]
            out[f"{which}_enter"] = median([run["enter"] for run in runs])
            out[f"{which}_enter_first"] = median([run["enter_first"] for run in runs])
        return out

    # -- 2. whole processes --------------------------------------------------------------------

    def processes(self, provider: str) -> dict[str, float]:
        cwd = self.dir(provider)
        out = {}
        for key, script in (("floor", "floor.py"), ("start", "start.py")):
            cmd = [self.python, script]
            warm_bytecode(cmd, cwd=cwd)
            out[key] = time_process(cmd, cwd=cwd, runs=10 if self.name == "ref" else 15).median
        return out

    # -- 3. memory ------------------------------------------------------------------------------

    def rss(self, provider: str) -> dict[str, float]:
        cwd = self.dir(provider)
        out = {}
        for key, cmd in (("floor", [self.python, "floor.py", "0.3"]), ("tree", [self.python, "rss.py"])):
            warm_bytecode(cmd, cwd=cwd)
            out[key] = median([sample_tree(cmd, cwd)[0] for _ in range(RSS_RUNS)])
        return out

    # -- 4. the transport's floor -----------------------------------------------------------

    def pipe_floor(self, provider: str) -> dict[str, float]:
        cwd = self.dir(provider)
        runs = json.loads(run_child([self.python, "pipe_floor.py"], cwd=cwd))
        return {key: percentile(values, 50) for key, values in runs.items()}


def percentile(values: list[float], p: int) -> float:
    """The p-th percentile (the ``statistics`` "inclusive" method: p50 is the median)."""
    if p == 50:
        return median(values)
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def load_rows(load: dict[str, float], ref_load: dict[str, float], command: str) -> list[Row]:
    per = f"{LOAD_PROCESSES} processes × {LOAD_CALLS} calls pooled"
    burn = "one `python -c 'while True: pass'` per CPU, killed by pid after"
    return [
        Row(
            f"round trip small(i), p50, landlock, idle ({per})",
            load["idle_p50"],
            ref_load.get("idle_p50"),
            command,
        ),
        Row("round trip small(i), p95, landlock, idle", load["idle_p95"], ref_load.get("idle_p95"), command),
        Row(
            f"round trip small(i), p50, landlock, busy neighbours ({burn})",
            load["loaded_p50"],
            ref_load.get("loaded_p50"),
            command,
        ),
        Row(
            "round trip small(i), p95, landlock, busy neighbours",
            load["loaded_p95"],
            ref_load.get("loaded_p95"),
            command,
        ),
        Row(
            "p50 busy / p50 idle (a ratio, not seconds)",
            load["ratio"],
            ref_load.get("ratio"),
            "ratio of the rows above",
            unit="x",
            target=f"≤ {LOAD_TARGET:g}× {'✓' if load['ratio'] <= LOAD_TARGET else '✗'}",
        ),
    ]


def framework_rows(fw: dict[str, float] | None) -> list[Row]:
    if fw is None:
        return []
    command = f"{FW_PYTHON} enter_fw.py framework|plain in {SCRATCH}/ours-framework"
    return [
        Row(
            f"`with sandboxes():` enter, tools in a module importing langchain (median of {FW_RUNS})",
            fw["framework_enter"],
            None,
            command,
        ),
        Row("… enter + first tool.invoke()", fw["framework_enter_first"], None, command),
        Row(
            "`with sandboxes():` enter, tools in a framework-free module, tool() applied by the host",
            fw["plain_enter"],
            None,
            command,
        ),
        Row("… enter + first tool.invoke()", fw["plain_enter_first"], None, command),
    ]


def main_only(parts: set[str]) -> int:
    """``--only=load,frameworks``: those parts, our side only."""
    shutil.rmtree(SCRATCH, ignore_errors=True)
    ours = Side("ours", OUR_PYTHON, ("landlock",), OUR_CALLS)
    ours.write()
    rows: list[Row] = []
    if "load" in parts:
        rows += load_rows(ours.loaded("landlock"), {}, f"$PY host.py {LOAD_CALLS} 0 calls-only")
    if "frameworks" in parts:
        rows += framework_rows(ours.framework_enter())
    notes = [
        f"$PY={OUR_PYTHON}, in {SCRATCH}/ours-landlock (`os-sandbox=landlock`, `python-import=time`)",
        "the reference is not measured with --only",
        f"busy neighbours: one CPU-burning process per CPU of the affinity mask "
        f"({len(__import__('os').sched_getaffinity(0))} here), started 0.5 s before the timed processes",
        "enter with a framework: the host imports langchain_core in both cases; only where the @sandbox "
        "functions live differs (the child imports their module, and what it imports)",
    ]
    print(
        Table("Partial mode: latency under load, enter time with a framework", rows, notes, "--only").render()
    )
    return 0


def main(argv: list[str]) -> int:
    only = next((a.partition("=")[2] for a in argv if a.startswith("--only=")), None)
    if only is not None:
        return main_only(set(only.split(",")))
    ref = reference()
    shutil.rmtree(SCRATCH, ignore_errors=True)
    ours = Side("ours", OUR_PYTHON, ("landlock", "subprocess"), OUR_CALLS)
    ours.write()
    theirs = Side("ref", ref.python, ("subprocess",), REF_CALLS) if ref.python is not None else None
    missing = None if ref.available else ref.reason

    land = ours.session("landlock")
    land_one = ours.session("landlock", one_cpu=True)
    sub = ours.session("subprocess")
    our_proc = ours.processes("landlock")
    our_rss = ours.rss("landlock")
    our_floor = ours.pipe_floor("landlock")
    our_load = ours.loaded("landlock")
    our_fw = ours.framework_enter()
    ref_load: dict[str, float] = {}
    ref_s: dict[str, float] = {}
    ref_one: dict[str, float] = {}
    ref_proc: dict[str, float] = {}
    ref_rss: dict[str, float] = {}
    ref_floor: dict[str, float] = {}
    if theirs is not None:
        try:
            theirs.write()
            ref_s = theirs.session("subprocess")
            ref_one = theirs.session("subprocess", one_cpu=True)
            ref_proc = theirs.processes("subprocess")
            ref_rss = theirs.rss("subprocess")
            ref_floor = theirs.pipe_floor("subprocess")
            ref_load = theirs.loaded("subprocess")
        except CommandFailed as exc:
            missing = f"its partial mode failed: {exc}"
            ref_s, ref_one, ref_proc, ref_rss, ref_floor, ref_load = {}, {}, {}, {}, {}, {}

    def both(script: str, ours_dir: str = "landlock") -> str:
        return f"$PY {script} in $OURS-{ours_dir}" + (
            f" ; $REF_PY {script} in $REF-subprocess" if theirs is not None else ""
        )

    def diff(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else a - b

    o_calls, r_calls = OUR_CALLS, REF_CALLS
    per_small = f"{HOST_PROCESSES} processes × {o_calls[0]} calls pooled (reference: × {r_calls[0]})"
    per_payload = f"{HOST_PROCESSES} processes × {o_calls[1]} calls pooled (reference: × {r_calls[1]})"
    host = f"host.py {o_calls[0]} {o_calls[1]}"
    rows = [
        Row(
            "import pysandboxes + sbfuncs, in the host (median of 5 processes)",
            land["import"],
            ref_s.get("import"),
            both(host),
        ),
        Row(
            "`with sandboxes():` enter + first call, landlock (median of 5 processes)",
            land["enter_first"],
            ref_s.get("enter_first"),
            both(host),
            target=target(land["enter_first"], START_TARGET, "s"),
        ),
        Row(
            "`with sandboxes():` enter + first call, subprocess",
            sub["enter_first"],
            ref_s.get("enter_first"),
            both(host, "subprocess"),
        ),
        Row(
            "whole process: python floor.py (imports, no block)",
            our_proc["floor"],
            ref_proc.get("floor"),
            both("floor.py"),
        ),
        Row(
            "whole process: python start.py (imports, block, 1 call, exit), landlock",
            our_proc["start"],
            ref_proc.get("start"),
            both("start.py"),
        ),
        Row(
            "… minus the floor: what the block costs a program, its exit included",
            diff(our_proc["start"], our_proc["floor"]),
            diff(ref_proc.get("start"), ref_proc.get("floor")),
            "difference of the rows above",
        ),
        Row(
            f"round trip small(i), p50, landlock ({per_small})",
            land["small_p50"],
            ref_s.get("small_p50"),
            both(host),
            target=target(land["small_p50"], CALL_TARGET, "s"),
        ),
        Row("round trip small(i), p90, landlock", land["small_p90"], ref_s.get("small_p90"), both(host)),
        Row(
            "round trip small(i), p50, subprocess",
            sub["small_p50"],
            ref_s.get("small_p50"),
            both(host, "subprocess"),
        ),
        Row(
            f"round trip small(i), p50, landlock, host and child on one CPU ({per_small})",
            land_one["small_p50"],
            ref_one.get("small_p50"),
            both(f"host.py {o_calls[0]} 0 one-cpu"),
        ),
        *load_rows(our_load, ref_load, both(f"host.py {LOAD_CALLS} 0 calls-only")),
        Row(
            "round trip floor: pickle over a SEQPACKET socket pair, no sandbox, 2 CPUs, p50 of 5000",
            our_floor["two-cpus small"],
            ref_floor.get("two-cpus small"),
            both("pipe_floor.py"),
        ),
        Row(
            "round trip floor, both processes on one CPU",
            our_floor["one-cpu small"],
            ref_floor.get("one-cpu small"),
            both("pipe_floor.py"),
        ),
        Row(
            f"echo_bytes(100 kB): 100 kB in + 100 kB out, p50, landlock ({per_payload})",
            land["payload_p50"],
            ref_s.get("payload_p50"),
            both(host),
            target=target(land["payload_p50"], PAYLOAD_TARGET, "s"),
        ),
        Row(
            "100 kB in + out floor: pickle over a SEQPACKET socket pair, 2 CPUs, p50 of 500",
            our_floor["two-cpus echo"],
            ref_floor.get("two-cpus echo"),
            both("pipe_floor.py"),
        ),
        Row(
            "4 threads × sleepy(0.5) at once, landlock (median of 5 processes)",
            land["threads"],
            ref_s.get("threads"),
            both(host),
            target=target(land["threads"], THREADS_TARGET, "s"),
        ),
        Row(
            "leaving the block (`__exit__`, after the calls above)",
            land["exit"],
            ref_s.get("exit"),
            both(host),
        ),
        *framework_rows(our_fw),
        Row(
            "peak RSS, whole tree: python floor.py 0.3 (imports, no block)",
            our_rss["floor"],
            ref_rss.get("floor"),
            both("floor.py 0.3"),
            unit="B",
        ),
        Row(
            f"peak RSS, whole tree: host + child, {RSS_CALLS} calls, landlock (median of {RSS_RUNS})",
            our_rss["tree"],
            ref_rss.get("tree"),
            both("rss.py"),
            unit="B",
            target=target(our_rss["tree"], RSS_TARGET, "B"),
        ),
    ]
    ref_py = theirs.python if theirs is not None else "n/a"
    notes = [
        f"$PY={OUR_PYTHON}; $REF_PY={ref_py} (venvs of the same CPython {sys.version.split()[0]})",
        f"$OURS-x = {SCRATCH}/ours-x, $REF-x = {SCRATCH}/ref-x: each command runs in that directory, next to "
        "sbfuncs.py (the same @sandbox functions on both sides) and its .py-sandboxes; ours: "
        "`os-sandbox=PROVIDER`, `python-import=time`; reference (anchor-perf.md §2): `py-sandbox=true`, "
        "`os-sandbox=subprocess`, `learn=false`, `expose-ro=.`, `python-import=time, sbfuncs` (its child "
        "imports sbfuncs under the rules; ours imports it before). anchor-perf.md measured the reference's "
        "landlock provider within 5 % of its subprocess one, so its subprocess figures stand in the "
        "landlock rows",
        "processes: ours starts one child interpreter (`python -E -s -c <boot>`) over an inherited "
        "SOCK_SEQPACKET socket pair; the reference starts a child running an HTTP server (fastapi, "
        "uvicorn) that the host reaches over TCP (aiohttp, server-sent events)",
        f"host.py times with time.perf_counter inside the host: the `with` statement up to the end of the "
        f"first call; then {WARMUP_CALLS} warm-up calls and the timed ones; p50 / p90 of the calls of "
        f"all {HOST_PROCESSES} processes pooled; then 4 threads each calling sleepy(0.5), joined",
        "whole processes: start.py minus floor.py (the same imports and interpreter): the block's entry, "
        "first call and exit as a program pays them",
        f"peak RSS: the sum of VmRSS over the process and all its descendants, sampled every 2 ms while "
        f"rss.py makes {RSS_CALLS} calls and waits 0.3 s in the block (how anchor-perf.md §4 measured the "
        "reference), median of 5",
        "pipe_floor.py: what a round trip costs on this machine without any sandbox (our transport: "
        "sendmsg, recv_into a buffer allocated once, pickle), measured with each side's interpreter. On a "
        "VM, a process blocked on a socket is woken on another CPU at a cost of tens of µs each way: "
        "`2 CPUs` pins the host to one CPU and the child to another (every wake-up crosses CPUs), "
        "`one CPU` pins both to one CPU (os.sched_setaffinity, inherited by the child) to show the part "
        "of a round trip that is work, not wake-ups. Unpinned, the scheduler does either, so the "
        "unpinned rows fall between the two",
        process_tool_note(),
        BYTECODE_NOTE + " Our child starts with -E (it ignores PYTHON* variables) and reads the bytecode "
        "cached next to our sources",
        f"reference venv: {ref.reason}",
    ]
    print(
        Table(
            "Partial mode: sandboxes() start, call round trip, payload, threads, memory", rows, notes, missing
        ).render()
    )
    if "--profile" in argv:
        print()
        print(profile_report(ours))
    return 0


# -- where our round trip goes (--profile) -----------------------------------------------------

PROFILE_HOST = '''\
"""cProfile of the host around 2000 round trips (written by bench/bench_partial.py)."""
import cProfile
import os
import pstats
import sys

from pysandboxes import sandboxes

import sbfuncs

with sandboxes(sandboxes_config=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".py-sandboxes")):
    for i in range(200):
        sbfuncs.small(i)
    profile = cProfile.Profile()
    profile.enable()
    for i in range(2000):
        sbfuncs.small(i)
    profile.disable()
stats = pstats.Stats(profile, stream=sys.stdout)
stats.sort_stats("tottime").print_stats(14)
'''

PROFILE_PARTS = '''\
\"\"\"The parts of a round trip, timed in loops (written by bench/bench_partial.py).

The child cannot be profiled from outside, so its work is rebuilt around our host's real
``Child.call``: fake children that answer at once (raw), or from a worker thread with our
``Channel`` and codec, as ``remote/child.py``'s worker that keeps the socket across quick calls. "fast" variants receive into a buffer
allocated once per thread (``recvmsg_into``) instead of ``recvmsg(128 KiB)``, which allocates
and frees a 128 KiB bytes object per message. Prints [label, seconds] pairs as JSON.
\"\"\"
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import types

from pysandboxes.remote import codec
from pysandboxes.remote.channel import Channel
from pysandboxes.remote.host import Child

clock = time.perf_counter_ns
EVERY_CPU = os.sched_getaffinity(0)
ONE_CPU = (min(EVERY_CPU), min(EVERY_CPU))  # (host, child): no wake-up crosses CPUs
TWO_CPUS = (min(EVERY_CPU), max(EVERY_CPU))  # every wake-up crosses CPUs (if there are two)
rows = []


def loop(fn, n=20000):
    for _ in range(n // 10):
        fn()
    t0 = clock()
    for _ in range(n):
        fn()
    return (clock() - t0) / n / 1e9


def round_trip(fn, n=5000):
    for _ in range(500):
        fn()
    lat = []
    for _ in range(n):
        t0 = clock()
        fn()
        lat.append(clock() - t0)
    return statistics.median(lat) / 1e9


def spawn(code, *args, cpus):
    """A child running ``code``; ``cpus``: (host CPU, child CPU)."""
    host_cpu, child_cpu = cpus
    os.sched_setaffinity(0, {child_cpu})  # the child inherits it
    host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = dict(os.environ, FD=str(child.fileno()))
    proc = subprocess.Popen([sys.executable, "-c", code, *args], pass_fds=[child.fileno()], env=env)
    os.sched_setaffinity(0, {host_cpu})
    child.close()
    return host, proc


def done(host, proc):
    host.close()
    proc.wait()
    os.sched_setaffinity(0, EVERY_CPU)


# -- 1. the codec ----------------------------------------------------------------------------
key = ("sbfuncs", "small")
call_payload, _ = codec.dumps((key, (7,), {}), max_size=1 << 30)
result_payload, _ = codec.dumps(8, max_size=1 << 30)
rows.append(("host: codec.dumps((key, args, kwargs))", loop(lambda: codec.dumps((key, (7,), {}), max_size=1 << 30))))
rows.append(("child: pickle.loads(call)", loop(lambda: codec._loads(call_payload))))
rows.append(("child: codec.dumps(result)", loop(lambda: codec.dumps(8, max_size=1 << 30))))
rows.append(("host: codec.loads_result(result), data-only", loop(
    lambda: codec.loads_result(result_payload, [], mode="data-only", guard=True))))

# -- 2. the raw socket -------------------------------------------------------------------------
ECHO = \"\"\"
import os, socket, sys
s = socket.socket(fileno=int(os.environ["FD"]))
buf = bytearray(131072)
while True:
    data = s.recv(131072) if sys.argv[1] == "alloc" else memoryview(buf)[: s.recv_into(buf)]
    if not data:
        break
    s.sendmsg([data])
\"\"\"
message, buf = b"x" * 80, bytearray(131072)
for cpus, where in ((TWO_CPUS, "two CPUs"), (ONE_CPU, "one CPU")):
    for how in ("alloc", "into"):
        host, proc = spawn(ECHO, how, cpus=cpus)
        if how == "alloc":
            label = "recv(128 KiB) on each side, as Channel.recv does"
            rows.append((f"raw round trip, {where}: {label}", round_trip(
                lambda: (host.sendmsg([message]), host.recv(131072)))))
        else:
            label = "recv_into a buffer allocated once"
            rows.append((f"raw round trip, {where}: {label}", round_trip(
                lambda: (host.sendmsg([message]), host.recv_into(buf)))))
        done(host, proc)
host, proc = spawn(ECHO, "into", cpus=TWO_CPUS)


def spin():
    host.sendmsg([message])
    while True:
        try:
            return host.recv_into(buf, 0, socket.MSG_DONTWAIT)
        except BlockingIOError:
            pass


rows.append(("raw round trip, two CPUs: recv_into, the host polling (MSG_DONTWAIT) instead of blocking", round_trip(spin)))
done(host, proc)

# -- 3. our host's Child.call against fake children ----------------------------------------------
FAKE = \"\"\"
import os, socket, struct, sys, threading, _thread, _pickle
from pysandboxes.remote import codec
from pysandboxes.remote.channel import Channel, ChannelClosed, RESULT

mode, fast = sys.argv[1], sys.argv[2] == "fast"
s = socket.socket(fileno=int(os.environ["FD"]))
local = threading.local()


class Fast:
    # recvmsg into a buffer allocated once per thread, the bytes copied out
    def __init__(self, sock):
        self.sock = sock
        self.sendmsg, self.fileno, self.close = sock.sendmsg, sock.fileno, sock.close

    def recvmsg(self, size, ancsize):
        buf = getattr(local, "buf", None)
        if buf is None:
            buf = local.buf = bytearray(size)
        n, anc, flags, addr = self.sock.recvmsg_into([buf], ancsize)
        return bytes(memoryview(buf)[:n]), anc, flags, addr


if mode == "raw":
    header = struct.Struct("<QBBHQ")
    result = _pickle.dumps(8, 5)
    buf = bytearray(131072)
    while True:
        n = s.recv_into(buf)
        if not n:
            os._exit(0)
        s.sendmsg([header.pack(header.unpack_from(buf)[0], RESULT, 0, 0, len(result)), result])
channel = Channel(Fast(s) if fast else s)


def small(x):
    return x + 1


def work():  # in a thread, as remote/child.py's workers (glibc gives threads their own arenas)
    while True:
        try:
            frame = channel.recv()
        except ChannelClosed:
            os._exit(0)
        key, args, kwargs = _pickle.loads(frame.payload, buffers=frame.buffers)
        payload, buffers = codec.dumps(small(*args, **kwargs), max_size=1 << 30)
        channel.send(frame.call_id, RESULT, payload, [b.raw() for b in buffers])


_thread.start_new_thread(work, ())
threading.Event().wait()
\"\"\"


class Fast:
    """The host's socket: recvmsg_into a buffer allocated once; ``poll``: first try without
    blocking for up to 100 µs (the answer often comes before a blocked thread would wake)."""

    def __init__(self, sock, poll=False):
        self.sock, self.buf, self.poll = sock, None, poll
        self.sendmsg, self.fileno, self.close = sock.sendmsg, sock.fileno, sock.close

    def recvmsg(self, size, ancsize):
        if self.buf is None:
            self.buf = bytearray(size)
        if self.poll:
            deadline = clock() + 100_000
            while clock() < deadline:
                try:
                    n, anc, flags, addr = self.sock.recvmsg_into([self.buf], ancsize, socket.MSG_DONTWAIT)
                    return bytes(memoryview(self.buf)[:n]), anc, flags, addr
                except BlockingIOError:
                    pass
        n, anc, flags, addr = self.sock.recvmsg_into([self.buf], ancsize)
        return bytes(memoryview(self.buf)[:n]), anc, flags, addr


value = types.SimpleNamespace
policy = value(
    remote_result_mode=value(value="data-only"),
    remote_result_guard=value(value=True),
    remote_max_payload=value(value=1 << 30),
)
for cpus, where, mode, fast, what in (
    (ONE_CPU, "one CPU", "raw", "slow", "a raw child answering at once: our host side alone"),
    (ONE_CPU, "one CPU", "raw", "fast", "the same, the host with recvmsg_into a buffer allocated once"),
    (ONE_CPU, "one CPU", "1", "slow", "a worker thread with our Channel and codec (recvmsg(128 KiB))"),
    (ONE_CPU, "one CPU", "1", "fast", "the same, recvmsg_into a buffer allocated once, both sides"),
    (TWO_CPUS, "two CPUs", "1", "slow", "a worker thread with our Channel and codec (recvmsg(128 KiB))"),
    (TWO_CPUS, "two CPUs", "1", "fast", "the same, recvmsg_into a buffer allocated once, both sides"),
    (TWO_CPUS, "two CPUs", "1", "fast", "the same, and the host polling up to 100 µs before it blocks"),
):
    host, proc = spawn(FAKE, mode, fast, cpus=cpus)
    child = Child({}, policy, "subprocess")
    child.process = proc
    host_socket = Fast(host, poll="polling" in what) if fast == "fast" else host
    child.channel = Channel(host_socket)
    counter = iter(range(10**9))
    rows.append(
        (
            f"Child.call round trip, {where}: {what}",
            round_trip(lambda: child.call(key, (next(counter),), {}, None)),
        )
    )
    done(host, proc)
print(json.dumps(rows))
'''


def profile_report(ours: Side) -> str:
    from _common import format_seconds

    cwd = ours.dir("landlock")
    (cwd / "profile_host.py").write_text(PROFILE_HOST, encoding="utf-8")
    (cwd / "profile_parts.py").write_text(PROFILE_PARTS, encoding="utf-8")
    profile = run_child([ours.python, "profile_host.py"], cwd=cwd)
    parts = json.loads(run_child([ours.python, "profile_parts.py"], cwd=cwd))
    lines = [
        "## Where our round trip goes (medians; host and child pinned to `one CPU` or to `two CPUs`)",
        "",
        "| part | time |",
        "|---|---|",
        *(f"| {name} | {format_seconds(value)} |" for name, value in parts),
        "",
        "cProfile of the host around 2000 calls of small(i) (tottime order; cProfile slows every "
        "Python call, read the shares, not the totals):",
        "",
        "```",
        *[line for line in profile.strip().splitlines() if line.strip()][:30],
        "```",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
