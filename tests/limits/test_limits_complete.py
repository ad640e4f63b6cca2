"""Resource limits in complete mode (``python-sb``), end to end, under ``os-sandbox=subprocess``
and ``landlock``.

Each bomb (memory, fork, CPU, output, open files, file size, wall clock) is run once above its
limit — stopped with the exact message line on stderr and exit status 125 (124 for
``timeout=``) — and once below it, where it behaves exactly as with ``python`` (same output,
same exit status). Every program is bounded by itself (finite loops) and by the run's timeout;
after every run no process of the test and no cgroup of the run is left (see conftest.py).
Known product bugs are strict xfails whose reason starts with "bug:".
"""

from __future__ import annotations

import re
import signal

import pytest

from .conftest import PYTHON_SB, Project

#: the message's tail: the limits are written on line 2 of the rule file (line 1: os-sandbox)
IN_FILE = "raise it in .py-sandboxes line 2"

MEMORY_BOMB = """
import sys
x = []
for i in range(int(sys.argv[1])):
    x.append(bytearray(10 << 20))  # 10 MB of address space each, never touched
print("allocated", len(x) * 10, "MB")
"""

TOUCHING_MEMORY_BOMB = """
import sys
x = []
for i in range(int(sys.argv[1])):
    x.append(b"m" * (10 << 20))  # 10 MB written each: resident memory
print("filled", len(x) * 10, "MB")
"""

FORK_BOMB = """
import os, sys, time
count, nap, wait = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "wait"
children = []
for i in range(count):
    pid = os.fork()
    if pid == 0:
        time.sleep(nap)
        os._exit(0)
    children.append(pid)
if wait:
    for pid in children:
        os.waitpid(pid, 0)
print("forked", len(children))
"""

CPU_SPIN = """
import sys
n = 0
for i in range(int(sys.argv[1])):
    n += 1
print("counted", n)
"""

CPU_SPIN_IGNORING_SIGXCPU = """
import signal, sys
signal.signal(signal.SIGXCPU, signal.SIG_IGN)
n = 0
for i in range(int(sys.argv[1])):
    n += 1
print("counted", n)
"""

OUTPUT_BOMB = """
import sys
stream = getattr(sys, sys.argv[2])
line = sys.argv[2][3] * 999 + "\\n"
for i in range(int(sys.argv[1])):
    stream.write(line)
"""

FILE_BOMB = """
import sys
files = []
for i in range(int(sys.argv[1])):
    files.append(open(__file__))
print("opened", len(files))
"""

HUGE_FILE = """
import os, sys
with open("out/big.bin", "wb") as f:
    for i in range(int(sys.argv[1])):
        f.write(b"x" * 65536)
print("wrote", os.path.getsize("out/big.bin"))
"""

SLOW = """
import signal, sys, time
if sys.argv[2] == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(float(sys.argv[1]))
print("woke up")
"""

#: ~12 s of CPU if nothing stopped it; far less than the runs' timeout
SPIN_COUNT = "200000000"


def _message(key_value: str, what: str, where: str = IN_FILE) -> str:
    return f"python-sb: stopped: {key_value} exceeded ({what}); {where}"


@pytest.fixture(params=["subprocess", "landlock"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# -- memory --------------------------------------------------------------------------------


def test_memory_bomb_is_stopped(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-memory=200M")
    script = project.write("bomb.py", MEMORY_BOMB)
    run = project.sb(str(script), "400")
    assert run.returncode == 125
    assert run.stdout == ""
    assert run.stderr.splitlines()[-2:] == ["MemoryError", _message("limit-memory=200M", "MemoryError")]


def test_touching_memory_bomb_is_stopped(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-memory=200M")
    script = project.write("bomb.py", TOUCHING_MEMORY_BOMB)
    run = project.sb(str(script), "100")  # at most 1 GB written if the limit failed
    assert (run.returncode, run.stdout) == (125, "")
    assert run.stderr.splitlines()[-2:] == ["MemoryError", _message("limit-memory=200M", "MemoryError")]


def test_memory_below_the_limit_runs_as_with_python(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-memory=200M")
    script = project.write("bomb.py", MEMORY_BOMB)
    run = project.sb(str(script), "5")
    assert (run.returncode, run.stdout, run.stderr) == (0, "allocated 50 MB\n", "")
    plain = project.python(str(script), "5")
    assert (run.returncode, run.stdout, run.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_memory_error_caught_by_the_program_is_not_a_breach(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-memory=200M")
    script = project.write(
        "caught.py",
        """
        x = []
        try:
            for i in range(400):
                x.append(bytearray(10 << 20))
        except MemoryError:
            x.clear()
            print("recovered")
        """,
    )
    run = project.sb(str(script))
    assert (run.returncode, run.stdout, run.stderr) == (0, "recovered\n", "")


def test_the_program_runs_in_its_own_cgroups(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-memory=200M", "limit-processes=50", "expose-ro=/proc")
    script = project.write("where.py", "print(open('/proc/self/cgroup').read(), end='')\n")
    run = project.sb(str(script))  # the check that the cgroups are removed runs here
    assert (run.returncode, run.stderr) == (0, "")
    groups = {line.split(":")[1]: line.split(":")[2] for line in run.stdout.splitlines()}
    assert groups["pids"].endswith(f"/pysandboxes-{run.pid}-1")
    assert groups["memory"].endswith(f"/pysandboxes-{run.pid}-1")


# -- processes -----------------------------------------------------------------------------


def _fork_rules(project: Project, provider: str, limit: str = "limit-processes=20") -> None:
    project.rules(f"os-sandbox={provider}", limit, "python-import=os, time", "python-api=ALLOW:os.fork")


def test_fork_bomb_is_stopped(project: Project, provider: str) -> None:
    _fork_rules(project, provider)
    script = project.write("forks.py", FORK_BOMB)
    run = project.sb(str(script), "200", "5", "nowait")  # 200 children sleeping 5 s at most
    assert (run.returncode, run.stdout) == (125, "")
    assert run.stderr.splitlines()[-2:] == [
        "BlockingIOError: [Errno 11] Resource temporarily unavailable",
        _message("limit-processes=20", "a new process was refused"),
    ]


def test_forks_below_the_limit_run_as_with_python(project: Project, provider: str) -> None:
    _fork_rules(project, provider)
    script = project.write("forks.py", FORK_BOMB)
    run = project.sb(str(script), "3", "0", "wait")
    assert (run.returncode, run.stdout, run.stderr) == (0, "forked 3\n", "")
    plain = project.python(str(script), "3", "0", "wait")
    assert (run.returncode, run.stdout, run.stderr) == (plain.returncode, plain.stdout, plain.stderr)


# -- CPU -----------------------------------------------------------------------------------

_CPU = re.compile(
    r"python-sb: stopped: limit-cpu=1s exceeded \(\d+\.\ds of CPU, killed by (SIGXCPU|SIGKILL)\); "
    + re.escape(IN_FILE)
)


def test_cpu_spin_is_stopped(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-cpu=1s")
    script = project.write("spin.py", CPU_SPIN)
    run = project.sb(str(script), SPIN_COUNT)
    assert (run.returncode, run.stdout) == (125, "")
    match = _CPU.fullmatch(run.stderr.rstrip("\n"))
    assert match is not None, run.stderr
    assert match.group(1) == "SIGXCPU"


def test_cpu_spin_ignoring_sigxcpu_is_killed_at_the_hard_limit(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-cpu=1s", "python-import=signal")
    script = project.write("spin.py", CPU_SPIN_IGNORING_SIGXCPU)
    run = project.sb(str(script), SPIN_COUNT)
    assert (run.returncode, run.stdout) == (125, "")
    match = _CPU.fullmatch(run.stderr.rstrip("\n"))
    assert match is not None, run.stderr
    assert match.group(1) == "SIGKILL"


def test_cpu_below_the_limit_runs_as_with_python(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-cpu=5s")
    script = project.write("spin.py", CPU_SPIN)
    run = project.sb(str(script), "1000")
    assert (run.returncode, run.stdout, run.stderr) == (0, "counted 1000\n", "")


# -- output --------------------------------------------------------------------------------

OUTPUT_MESSAGE = _message("limit-output=1M", "more than 1048576 bytes written")


def test_endless_output_is_stopped(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-output=1M")
    script = project.write("out.py", OUTPUT_BOMB)
    run = project.sb(str(script), "10000", "stdout")  # 10 MB at most
    assert run.returncode == 125
    assert run.stderr == OUTPUT_MESSAGE + "\n"
    assert len(run.stdout) >= 1 << 20
    assert set(run.stdout) <= {"o", "\n"}


def test_endless_error_output_is_stopped(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-output=1M")
    script = project.write("out.py", OUTPUT_BOMB)
    run = project.sb(str(script), "10000", "stderr")
    assert (run.returncode, run.stdout) == (125, "")
    assert run.stderr.endswith(OUTPUT_MESSAGE + "\n")
    assert set(run.stderr[: 1 << 20]) <= {"e", "\n"}


def test_output_report_is_a_line_of_its_own(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-output=1M")
    script = project.write(
        "noline.py",
        """
        import sys
        for i in range(100):  # 6.4 MB at most, no line break
            sys.stderr.write("e" * 65536)
            sys.stderr.flush()
        """,
    )
    run = project.sb(str(script))
    assert (run.returncode, run.stdout, run.last_error_line) == (125, "", OUTPUT_MESSAGE)


BOTH_STREAMS = """
import sys
chunk = b"b" * 65535 + b"\\n"
for i in range(100):  # 12.8 MB at most, the two pipes kept full
    for stream in (sys.stdout.buffer, sys.stderr.buffer):
        stream.write(chunk)
        stream.flush()
"""


def test_output_stops_at_the_limit(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-output=1M")
    script = project.write("both.py", BOTH_STREAMS)
    for _ in range(2):
        # python-sb's own stdout is left full a moment: the relay falls behind the program
        run = project.run_read_slowly([PYTHON_SB, str(script)])
        assert (run.returncode, run.last_error_line) == (125, OUTPUT_MESSAGE)
        written = run.stdout + run.stderr.removesuffix(OUTPUT_MESSAGE + "\n")
        assert len(written) == 1 << 20


def test_output_below_the_limit_runs_as_with_python(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-output=1M")
    script = project.write("out.py", OUTPUT_BOMB)
    run = project.sb(str(script), "3", "stdout")
    assert (run.returncode, run.stdout, run.stderr) == (0, ("o" * 999 + "\n") * 3, "")
    plain = project.python(str(script), "3", "stdout")
    assert (run.returncode, run.stdout, run.stderr) == (plain.returncode, plain.stdout, plain.stderr)


# -- open files ----------------------------------------------------------------------------


def test_open_file_exhaustion_is_stopped(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-open-files=64")
    script = project.write("files.py", FILE_BOMB)
    run = project.sb(str(script), "1000")
    assert (run.returncode, run.stdout) == (125, "")
    assert run.stderr.splitlines()[-2:] == [
        f"OSError: [Errno 24] Too many open files: '{script}'",
        _message("limit-open-files=64", "Too many open files"),
    ]


def test_open_files_below_the_limit_run_as_with_python(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-open-files=64")
    script = project.write("files.py", FILE_BOMB)
    run = project.sb(str(script), "10")
    assert (run.returncode, run.stdout, run.stderr) == (0, "opened 10\n", "")


# -- file size -----------------------------------------------------------------------------


def test_huge_file_write_is_stopped_at_the_limit(project: Project, provider: str) -> None:
    project.mkdir("out")
    project.rules(f"os-sandbox={provider}", "limit-file-size=1M", "expose-rw=out", "python-import=os")
    script = project.write("big.py", HUGE_FILE)
    run = project.sb(str(script), "100")  # 6.4 MB at most
    assert (run.returncode, run.stdout) == (125, "")
    assert run.stderr.splitlines()[-2:] == [
        "OSError: [Errno 27] File too large",
        _message("limit-file-size=1M", "a write beyond it failed: File too large"),
    ]
    assert (project.root / "out" / "big.bin").stat().st_size == 1 << 20


def test_file_below_the_limit_runs_as_with_python(project: Project, provider: str) -> None:
    project.mkdir("out")
    project.rules(f"os-sandbox={provider}", "limit-file-size=1M", "expose-rw=out", "python-import=os")
    script = project.write("big.py", HUGE_FILE)
    run = project.sb(str(script), "2")
    assert (run.returncode, run.stdout, run.stderr) == (0, "wrote 131072\n", "")


# -- timeout -------------------------------------------------------------------------------

TIMED_OUT = "python-sb: timed out: timeout=1s exceeded (still running after 1s); " + IN_FILE


def test_timeout_stops_a_sleeping_program(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "timeout=1s", "python-import=signal, time")
    script = project.write("slow.py", SLOW)
    run = project.sb(str(script), "20", "-")
    assert (run.returncode, run.stdout, run.stderr) == (124, "", TIMED_OUT + "\n")


def test_timeout_kills_a_program_that_ignores_sigterm(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "timeout=1s", "python-import=signal, time")
    script = project.write("slow.py", SLOW)
    run = project.sb(str(script), "20", "ignore-term")
    assert (run.returncode, run.stdout, run.stderr) == (124, "", TIMED_OUT + "\n")


def test_program_within_its_timeout_runs_as_with_python(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "timeout=20s", "python-import=signal, time")
    script = project.write("slow.py", SLOW)
    run = project.sb(str(script), "0.1", "-")
    assert (run.returncode, run.stdout, run.stderr) == (0, "woke up\n", "")


ORPHAN = """
import os, time
if os.fork() == 0:
    time.sleep(10)
    os._exit(0)
time.sleep(20)
"""


def test_timeout_leaves_no_process_of_the_program(project: Project, provider: str) -> None:
    project.rules(
        f"os-sandbox={provider}", "timeout=1s", "python-import=os, time", "python-api=ALLOW:os.fork"
    )
    script = project.write("orphan.py", ORPHAN)
    run = project.sb(str(script))  # fails in the check that no process is left
    assert run.returncode == 124


# -- the supervisor passes the program's own outcome through ----------------------------------


def test_exit_status_passes_through_the_supervisor(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "timeout=20s")
    script = project.write("three.py", "import sys\nprint('bye')\nsys.exit(3)\n")
    run = project.sb(str(script))
    plain = project.python(str(script))
    assert (run.returncode, run.stdout, run.stderr) == (3, "bye\n", "")
    assert (run.returncode, run.stdout, run.stderr) == (plain.returncode, plain.stdout, plain.stderr)


def test_uncaught_error_is_not_a_breach(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-memory=200M", "limit-open-files=64")
    script = project.write("boom.py", "raise ValueError('boom')\n")
    run = project.sb(str(script))
    assert (run.returncode, run.stdout, run.last_error_line) == (1, "", "ValueError: boom")


def test_death_by_signal_passes_through_the_supervisor(project: Project, provider: str) -> None:
    project.rules(
        f"os-sandbox={provider}", "timeout=20s", "python-import=os, signal, time", "python-api=ALLOW:os.kill"
    )
    script = project.write(
        "term.py", "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(5)\n"
    )
    run = project.sb(str(script))
    plain = project.python(str(script))
    assert (run.returncode, run.stdout, run.stderr) == (-signal.SIGTERM, "", "")
    assert run.returncode == plain.returncode


# -- the command line ------------------------------------------------------------------------


def test_limit_given_on_the_command_line_is_named_in_the_message(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "limit-memory=1G")
    script = project.write("bomb.py", MEMORY_BOMB)
    run = project.sb("--limit-memory=200M", str(script), "400")
    assert run.returncode == 125
    assert run.last_error_line == _message(
        "limit-memory=200M", "MemoryError", "raise it on the command line (--limit-memory=)"
    )


def test_timeout_given_on_the_command_line(project: Project, provider: str) -> None:
    project.rules(f"os-sandbox={provider}", "python-import=signal, time")
    script = project.write("slow.py", SLOW)
    run = project.sb("--timeout=1s", str(script), "20", "-")
    assert (run.returncode, run.stderr) == (
        124,
        "python-sb: timed out: timeout=1s exceeded (still running after 1s); "
        "raise it on the command line (--timeout=)\n",
    )
