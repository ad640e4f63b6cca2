"""Helpers for the resource-limit tests (issue 8).

Every program run here is bounded twice: the test gives it a wall-clock timeout, and the
program itself only runs finite loops (fork at most 200 children that sleep a few seconds,
allocate at most a few GB of address space, print at most ~10 MB), so that nothing runs away
even if a limit failed. After each run the helpers check that no process of the test is left
(any process whose working directory is inside the test's temporary directory) and that the
sandbox removed the cgroups it created (``pysandboxes-<pid>-<n>`` below this process's own
cgroup in the v1 ``pids`` and ``memory`` hierarchies, and in v2).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from ..remote.conftest import PROVIDERS
from ..remote.conftest import Project as PartialProject

BIN = Path(sys.executable).parent
PYTHON_SB = str(BIN / "python-sb")
PYTHON = sys.executable
#: the longest any run of a test program may take (the limits stop them long before)
TIMEOUT = 30
RULES = ".py-sandboxes"


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"bug: {reason}")


# -- what a run leaves behind ------------------------------------------------------------------


def processes_in(root: Path) -> list[int]:
    """Live processes (not zombies) whose working directory is inside ``root``."""
    found = []
    prefix = str(root)
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cwd = os.readlink(f"/proc/{name}/cwd")
        except OSError:  # gone, or a zombie
            continue
        if cwd == prefix or cwd.startswith(prefix + os.sep):
            found.append(int(name))
    return found


def _cgroup_parents() -> list[str]:
    """Where a sandbox started by this process creates its cgroups."""
    parents = []
    with open("/proc/self/cgroup") as f:
        for line in f.read().splitlines():
            _id, controllers, path = line.split(":", 2)
            if controllers == "":
                for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                    if os.path.exists(os.path.join(root, "cgroup.controllers")):
                        parents.append(os.path.join(root, path.lstrip("/")))
                        break
            for controller in ("pids", "memory"):
                if controller in controllers.split(","):
                    parents.append(os.path.join("/sys/fs/cgroup", controller, path.lstrip("/")))
    return parents


def cgroups_of(pid: int) -> list[str]:
    """The cgroup directories a sandbox supervised by ``pid`` created and left."""
    left = []
    for parent in _cgroup_parents():
        with contextlib.suppress(OSError):
            left += [
                os.path.join(parent, n) for n in os.listdir(parent) if n.startswith(f"pysandboxes-{pid}-")
            ]
    return sorted(left)


def assert_nothing_left(root: Path, pid: int | None) -> None:
    """No process of the test (cwd inside ``root``) and no cgroup of ``pid`` left. What is
    found is this test's own: the processes are killed and the (then empty) cgroups removed
    before the test fails, so that nothing outlives the test."""
    deadline = time.monotonic() + 3.0  # SIGKILLed processes may still be on their way out
    left = processes_in(root)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = processes_in(root)
    groups = cgroups_of(pid) if pid is not None else []
    # a cgroup whose processes are still exiting is removed by a detached helper within 60 s
    group_deadline = time.monotonic() + 65.0
    while groups and time.monotonic() < group_deadline:
        time.sleep(0.1)
        groups = cgroups_of(pid) if pid is not None else []
    clean_up(root, pid)
    assert (left, groups) == ([], [])


def clean_up(root: Path, pid: int | None) -> None:
    """Kill the processes of this test that are left, remove the cgroups its run left."""
    for stray in processes_in(root):
        with contextlib.suppress(OSError):
            os.kill(stray, signal.SIGKILL)
    for group in cgroups_of(pid) if pid is not None else []:
        for _ in range(100):
            try:
                os.rmdir(group)
                break
            except FileNotFoundError:
                break
            except OSError:  # still busy: its processes are exiting
                time.sleep(0.02)


# -- complete mode -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str
    pid: int

    @property
    def last_error_line(self) -> str:
        lines = self.stderr.splitlines()
        return lines[-1] if lines else ""


class Project:
    """A temporary project (``root``), its own HOME, a fixed environment."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.environ = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}

    def write(self, name: str, text: str) -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def rules(self, *lines: str) -> Path:
        return self.write(RULES, "".join(f"{line}\n" for line in lines))

    def mkdir(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def run(self, command: Sequence[str], *, check_left: bool = True, timeout: float = TIMEOUT) -> Run:
        """Run ``command`` in the project with a timeout (the whole group is killed when it
        expires); then check that nothing of it is left. Its output goes to files, not pipes,
        so that a process it leaves behind cannot keep the run waiting."""
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            process = subprocess.Popen(
                list(command),
                cwd=self.root,
                env=self.environ,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                clean_up(self.root, process.pid)
                pytest.fail(f"{command} still ran after {timeout}s: a limit did not hold, or it hung")
            if check_left:
                assert_nothing_left(self.root, process.pid)
            out.seek(0)
            err.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            stderr = err.read().decode("utf-8", "replace")
        return Run(process.returncode, stdout, stderr, process.pid)

    def run_read_slowly(self, command: Sequence[str]) -> Run:
        """Like :meth:`run`, but stdout is a pipe that is first left full for a moment, so
        that a relay of the output (python-sb's supervisor) falls behind the program."""
        with tempfile.TemporaryFile() as err:
            process = subprocess.Popen(
                list(command),
                cwd=self.root,
                env=self.environ,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
            try:
                time.sleep(0.5)
                out, _ = process.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                clean_up(self.root, process.pid)
                pytest.fail(f"{command} still ran after {TIMEOUT}s: a limit did not hold, or it hung")
            assert_nothing_left(self.root, process.pid)
            err.seek(0)
            stderr = err.read().decode("utf-8", "replace")
        return Run(process.returncode, out.decode("utf-8", "replace"), stderr, process.pid)

    def sb(self, *args: str, check_left: bool = True) -> Run:
        return self.run([PYTHON_SB, *args], check_left=check_left)

    def python(self, *args: str) -> Run:
        return self.run([PYTHON, *args])


@pytest.fixture
def project(tmp_path: Path) -> Project:
    home = tmp_path / "home"
    root = tmp_path / "project"
    home.mkdir()
    root.mkdir()
    return Project(root, home)


@pytest.fixture
def partial(tmp_path: Path) -> PartialProject:
    return PartialProject(tmp_path)


@pytest.fixture(params=(*PROVIDERS, "bwrap", "unshare"))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)
