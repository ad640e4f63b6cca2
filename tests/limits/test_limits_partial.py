"""Resource limits in partial mode (``@sandbox`` calls), end to end, under ``os-sandbox=subprocess``
and ``landlock``.

The project holds a ``tools.py`` of ``@sandbox`` bombs and a ``host.py`` that makes the calls
named on its command line (``name:arg,arg``) and writes one report line per call to
``report.txt`` (the host's stdout carries what the child prints). A call above a limit raises a
``SandBoxResourceError`` (``SandBoxMemoryError`` is also a ``MemoryError``,
``SandBoxCPUTimeError`` a ``TimeoutError``) with the exact message; the host goes on, and the
next call gets a fresh child (a different pid). Every program is bounded by itself and by the
run's timeout, and after each run no process of the test and no cgroup of the host is left.
Known product bugs are strict xfails whose reason starts with "bug:".
"""

from __future__ import annotations

import ast
import resource
from pathlib import Path

import pytest

from ..remote.conftest import Project as PartialProject
from .conftest import Project, Run

TOOLS = """
import os, sys, time
from pysandboxes import sandbox

CHILD = os.urandom(6).hex()  # one per child: pids repeat in a namespace provider's PID namespace

@sandbox
def pid():
    return f"{os.getpid()}-{CHILD}"

@sandbox
def memory(n):
    x = []
    for i in range(n):
        x.append(bytearray(10 << 20))
    return len(x) * 10

@sandbox
def spin(n):
    k = 0
    for i in range(n):
        k += 1
    return k

@sandbox
def forks(count, nap, wait):
    children = []
    for i in range(count):
        child = os.fork()
        if child == 0:
            time.sleep(nap)
            os._exit(0)
        children.append(child)
    if wait:
        for child in children:
            os.waitpid(child, 0)
    return len(children)

@sandbox
def files(n):
    opened = [open(__file__) for i in range(n)]
    return len(opened)

@sandbox
def big(n):
    with open("out/big.bin", "wb") as f:
        for i in range(n):
            f.write(b"x" * 65536)
    return os.path.getsize("out/big.bin")

@sandbox
def output(n):
    line = "y" * 999
    for i in range(n):
        print(line)
    return n

@sandbox
def slow(seconds):
    time.sleep(seconds)
    return seconds

@sandbox
def rlimits():
    import resource
    return [list(resource.getrlimit(r)) for r in (resource.RLIMIT_NOFILE, resource.RLIMIT_AS)]

@sandbox
def hold(seconds):
    # fills the address space, handles the MemoryError, keeps the memory a while
    x = []
    try:
        for i in range(400):
            x.append(bytearray(10 << 20))
    except MemoryError:
        pass
    time.sleep(seconds)
    x.clear()
    return "handled"
"""

HOST = """
import os, sys
from pysandboxes import sandboxes
from pysandboxes.errors import SandBoxError
import tools

def value(text):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text

report = open("report.txt", "w", buffering=1)
settings = dict(item.split("=", 1) for item in os.environ.get("CODE_RULES", "").split() if item)
with sandboxes(**settings):
    for spec in sys.argv[1:]:
        name, _, args = spec.partition(":")
        args = [value(a) for a in args.split(",")] if args else []
        try:
            result = getattr(tools, name)(*args)
        except SandBoxError as exc:
            twins = [t.__name__ for t in (MemoryError, TimeoutError) if isinstance(exc, t)]
            result = f"{type(exc).__name__} {getattr(exc, 'limit', '-')} {twins} {exc}"
        print(f"{name} -> {result}", file=report)
print(f"host -> {os.getpid()}", file=report)
"""


#: rule-file lines after ``os-sandbox=`` (line 1): the limits start at line 2
IMPORTS = ("python-import=os, sys, time, resource", "python-api=ALLOW:os.fork")


class Host:
    """The partial-mode project and a runner that checks nothing is left behind."""

    def __init__(self, root: Path) -> None:
        self.files = PartialProject(root)
        self.runner = Project(root, root)
        self.runner.environ = self.files.environ()

    def setup(self, provider: str, *limits: str) -> None:
        self.files.rules(provider, *limits, *IMPORTS)
        self.files.tools(TOOLS)
        self.files.host(HOST)
        (self.files.root / "out").mkdir(exist_ok=True)

    def calls(self, *specs: str, code: str = "") -> tuple[Run, dict[str, list[str]]]:
        """Run the host on ``specs``: the run, and the report's results by call name."""
        if code:
            self.runner.environ = {**self.files.environ(), "CODE_RULES": code}
        run = self.runner.python("host.py", *specs)
        report: dict[str, list[str]] = {}
        for line in (self.files.root / "report.txt").read_text().splitlines():
            name, _, result = line.partition(" -> ")
            report.setdefault(name, []).append(result)
        assert report["host"] == [str(run.pid)]  # the host went on to the end
        return run, report


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return Host(tmp_path)


def _message(key_value: str, what: str, line: int = 2) -> str:
    return f"pysandboxes: stopped: {key_value} exceeded ({what}); raise it in .py-sandboxes line {line}"


def _fresh(report: dict[str, list[str]]) -> bool:
    """The pid before the breach differs from the pid after it."""
    before, after = report["pid"]
    return before != after


# -- memory --------------------------------------------------------------------------------


def test_memory_bomb_raises_sandbox_memory_error(host: Host, provider: str) -> None:
    # 1G, not less: the child's own threads and malloc arenas reserve ~250M of address space
    host.setup(provider, "limit-memory=1G")
    run, report = host.calls("pid", "memory:400", "pid", "memory:5")  # 4 GB untouched at most
    assert run.returncode == 0
    assert report["memory"] == [
        "SandBoxMemoryError limit-memory ['MemoryError'] " + _message("limit-memory=1G", "MemoryError"),
        "50",
    ]
    assert _fresh(report)


def test_memory_limit_from_the_code_is_named_in_the_message(host: Host, provider: str) -> None:
    host.setup(provider)
    run, report = host.calls("memory:400", code="limit_memory=1G")
    assert run.returncode == 0
    assert report["memory"] == [
        "SandBoxMemoryError limit-memory ['MemoryError'] pysandboxes: stopped: limit-memory=1G exceeded "
        "(MemoryError); raise it in the sandboxes() call (limit_memory=)"
    ]


# -- CPU -----------------------------------------------------------------------------------


def test_cpu_spin_raises_sandbox_cpu_time_error(host: Host, provider: str) -> None:
    host.setup(provider, "limit-cpu=1s")
    run, report = host.calls("pid", "spin:200000000", "pid", "spin:1000")
    assert run.returncode == 0
    assert report["spin"] == [
        "SandBoxCPUTimeError limit-cpu ['TimeoutError'] " + _message("limit-cpu=1s", "killed by SIGXCPU"),
        "1000",
    ]
    assert _fresh(report)


# -- processes -----------------------------------------------------------------------------

FORK_MESSAGE = "SandBoxResourceError limit-processes [] " + _message(
    "limit-processes=20", "a new process was refused"
)


def test_fork_bomb_raises_sandbox_resource_error(host: Host, provider: str) -> None:
    host.setup(provider, "limit-processes=20")
    run, report = host.calls("forks:200,5,0", "pid")  # 200 children sleeping 5 s at most
    assert run.returncode == 0
    assert report["forks"] == [FORK_MESSAGE]
    assert len(report["pid"]) == 1 and report["pid"][0].split("-")[0].isdigit()


def test_forks_below_the_limit_work(host: Host, provider: str) -> None:
    host.setup(provider, "limit-processes=20")
    run, report = host.calls("forks:3,0,1")
    assert (run.returncode, report["forks"]) == (0, ["3"])


def test_fork_bomb_next_call_gets_a_fresh_child(host: Host, provider: str) -> None:
    host.setup(provider, "limit-processes=20")
    run, report = host.calls("pid", "forks:200,5,0", "pid", "forks:3,0,1")
    assert run.returncode == 0
    assert report["forks"] == [FORK_MESSAGE, "3"]
    assert _fresh(report)


# -- open files ----------------------------------------------------------------------------

FILES_MESSAGE = "SandBoxResourceError limit-open-files [] " + _message(
    "limit-open-files=64", "Too many open files"
)


def test_open_file_exhaustion_raises_sandbox_resource_error(host: Host, provider: str) -> None:
    host.setup(provider, "limit-open-files=64")
    run, report = host.calls("files:1000", "files:10")
    assert run.returncode == 0
    assert report["files"] == [FILES_MESSAGE, "10"]


def test_open_file_exhaustion_next_call_gets_a_fresh_child(host: Host, provider: str) -> None:
    host.setup(provider, "limit-open-files=64")
    run, report = host.calls("pid", "files:1000", "pid")
    assert (run.returncode, report["files"]) == (0, [FILES_MESSAGE])
    assert _fresh(report)


# -- file size -----------------------------------------------------------------------------

BIG_MESSAGE = "SandBoxResourceError limit-file-size [] " + _message(
    "limit-file-size=1M", "a write beyond it failed: File too large", line=2
)


def test_huge_file_write_raises_sandbox_resource_error(host: Host, provider: str) -> None:
    host.setup(provider, "limit-file-size=1M", "expose-rw=out")
    run, report = host.calls("big:100")  # 6.4 MB at most
    assert (run.returncode, report["big"]) == (0, [BIG_MESSAGE])
    assert (host.files.root / "out" / "big.bin").stat().st_size == 1 << 20
    run, report = host.calls("big:2")
    assert (run.returncode, report["big"]) == (0, ["131072"])


def test_huge_file_write_next_call_gets_a_fresh_child(host: Host, provider: str) -> None:
    host.setup(provider, "limit-file-size=1M", "expose-rw=out")
    run, report = host.calls("pid", "big:100", "pid")
    assert (run.returncode, report["big"]) == (0, [BIG_MESSAGE])
    assert _fresh(report)


# -- output --------------------------------------------------------------------------------


def test_endless_output_raises_sandbox_resource_error(host: Host, provider: str) -> None:
    host.setup(provider, "limit-output=1M")
    run, report = host.calls("pid", "output:10000", "pid", "output:3")  # 10 MB at most
    assert run.returncode == 0
    assert report["output"] == [
        "SandBoxResourceError limit-output [] "
        + _message("limit-output=1M", "more than 1048576 bytes written"),
        "3",
    ]
    assert _fresh(report)
    line = "y" * 999 + "\n"
    # the call's output stops at the limit; the next call prints its own
    assert run.stdout == (line * 1100)[: 1 << 20] + line * 3
    assert run.stderr == ""


# -- timeout -------------------------------------------------------------------------------


def test_timeout_raises_sandbox_timeout_error(host: Host, provider: str) -> None:
    host.setup(provider, "timeout=1s")
    run, report = host.calls("slow:20", "slow:0.1")
    assert run.returncode == 0
    assert report["slow"] == [
        "SandBoxTimeoutError timeout ['TimeoutError'] tools.slow() did not finish within 1 s and was cancelled "
        "(timeout= in the rule file, or @sandbox(timeout=...))",
        "0.1",
    ]


# -- defaults ------------------------------------------------------------------------------


def _expected_rlimit(which: int, value: int) -> list[int]:
    _soft, hard = resource.getrlimit(which)
    hard = value if hard == resource.RLIM_INFINITY else min(hard, value)
    return [min(value, hard), hard]


def test_default_partial_limits_apply_without_any_limit_key(host: Host, provider: str) -> None:
    host.setup(provider)
    run, report = host.calls("rlimits")
    nofile = _expected_rlimit(resource.RLIMIT_NOFILE, 4096)
    (rlimits,) = report["rlimits"]
    got_nofile, (soft_as, hard_as) = ast.literal_eval(rlimits)
    assert (run.returncode, got_nofile) == (0, nofile)
    # the address space: the limit on top of what the child had mapped when it was set
    assert soft_as == hard_as and (8 << 30) <= soft_as < (8 << 30) + (1 << 30)


def test_rule_file_limits_replace_the_partial_defaults(host: Host, provider: str) -> None:
    host.setup(provider, "limit-open-files=100", "limit-memory=1G")
    run, report = host.calls("rlimits")
    (rlimits,) = report["rlimits"]
    got_nofile, (soft_as, hard_as) = ast.literal_eval(rlimits)
    assert (run.returncode, got_nofile) == (0, [100, 100])
    assert soft_as == hard_as and (1 << 30) <= soft_as < (1 << 30) + (1 << 30)


def test_calls_below_every_limit_work(host: Host, provider: str) -> None:
    host.setup(
        provider,
        "limit-memory=1G",
        "limit-cpu=5s",
        "limit-processes=20",
        "limit-open-files=64",
        "limit-file-size=1M",
        "limit-output=1M",
        "timeout=20s",
        "expose-rw=out",
    )
    run, report = host.calls(
        "memory:5", "spin:1000", "forks:3,0,1", "files:10", "big:2", "output:3", "slow:0.1"
    )
    assert (run.returncode, run.stdout, run.stderr) == (0, ("y" * 999 + "\n") * 3, "")
    assert report == {
        "memory": ["50"],
        "spin": ["1000"],
        "forks": ["3"],
        "files": ["10"],
        "big": ["131072"],
        "output": ["3"],
        "slow": ["0.1"],
        "host": [str(run.pid)],
    }
