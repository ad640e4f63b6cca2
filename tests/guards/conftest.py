"""Running programs under the guards: every test here starts ``python-sb`` in a child process.

Arming the guards is irreversible, so no guard test arms them in the pytest process. A test
writes a project (``.py-sandboxes`` + ``prog.py``) with :class:`Project`, runs it with
:meth:`Project.run`, and asserts what the program printed. Programs get a tiny prelude (no
import) with ``attempt(label, fn, *args)``, which prints one line per try::

    label -> OK                  # fn returned None
    label -> OK 'value'          # fn returned something else (its repr)
    label -> ExcName: first line of the message

Helpers are reached through fixtures only (``--import-mode=importlib``: test modules cannot
import this file). Paths are written as tokens and replaced in both the rules and the program: ``@DATA@`` (a
directory holding ``data.txt`` and ``.env``), ``@SECRET@`` (a directory holding
``secret.txt``, never exposed unless a test says so), ``@PROJECT@`` (rule file and program),
``@TMP@`` (their common parent) and ``@HOME@`` (``$HOME`` of the run).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

#: the console script of this environment (``.venv/bin/python-sb``)
PYTHON_SB = str(Path(sys.executable).with_name("python-sb"))
if not os.path.exists(PYTHON_SB):  # pragma: no cover - an unusual layout
    PYTHON_SB = shutil.which("python-sb") or PYTHON_SB

#: the providers every guard test runs under (the Python layer must hold under both)
PROVIDERS = ("subprocess", "landlock")

SECRET = "TOPSECRET"

PRELUDE = """\
def attempt(label, fn, *args, **kwargs):
    try:
        value = fn(*args, **kwargs)
    except BaseException as e:
        print(label, "->", type(e).__name__ + ":", str(e).partition("\\n")[0], flush=True)
        return None
    print(label, "-> OK" if value is None else "-> OK " + repr(value), flush=True)
    return value


"""


class Run:
    """What a ``python-sb`` run left: exit status, output, and the ``attempt`` outcomes."""

    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self) -> str:
        return f"Run(returncode={self.returncode}, stdout={self.stdout!r}, stderr={self.stderr!r})"

    def outcomes(self) -> dict[str, str]:
        """``label -> outcome`` for every ``attempt`` line; the run must have ended cleanly."""
        assert (self.returncode, self.stderr) == (0, ""), self
        found: dict[str, str] = {}
        for line in self.stdout.splitlines():
            label, sep, outcome = line.partition(" -> ")
            if sep:
                assert label not in found, f"label {label!r} printed twice: {self}"
                found[label] = outcome
        return found

    def outcome(self, label: str) -> str:
        return self.outcomes()[label]


class Project:
    """A temporary project: rule file, program, and directories to expose or keep secret."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / "project"
        self.data = tmp / "data"
        self.secret = tmp / "secret"
        self.home = tmp / "home"
        for d in (self.root, self.data, self.secret, self.home):
            d.mkdir()
        (self.data / "data.txt").write_text("DATA\n")
        (self.data / ".env").write_text("TOKEN=1\n")
        (self.secret / "secret.txt").write_text(SECRET + "\n")
        self.rule_file = self.root / ".py-sandboxes"
        self.program = self.root / "prog.py"

    def fill(self, text: str) -> str:
        for token, path in (
            ("@DATA@", self.data),
            ("@SECRET@", self.secret),
            ("@PROJECT@", self.root),
            ("@HOME@", self.home),
            ("@TMP@", self.tmp),
        ):
            text = text.replace(token, str(path))
        return text

    def user_profile(self, text: str) -> Path:
        """Write ``~/.config/py-sandboxes/user-py-sandboxes.profile`` (HOME of the runs)."""
        path = self.home / ".config/py-sandboxes/user-py-sandboxes.profile"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.fill(textwrap.dedent(text).lstrip("\n")))
        return path

    def run(
        self,
        program: str,
        rules: str = "",
        *,
        provider: str = "subprocess",
        netns: bool = False,
        prelude: bool = True,
        env: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> Run:
        """Run ``program`` under ``rules`` (line 1 of the rule file is the first line of
        ``rules``; ``os-sandbox=<provider>`` is appended after them)."""
        body = self.fill(textwrap.dedent(rules).lstrip("\n"))
        if body and not body.endswith("\n"):
            body += "\n"
        self.rule_file.write_text(f"{body}os-sandbox={provider}\n")
        code = self.fill(textwrap.dedent(program).lstrip("\n"))
        self.program.write_text((PRELUDE if prelude else "") + code)
        command = [PYTHON_SB, str(self.program.name)]
        if netns:
            command = [*netns_prefix(), *command]
        environ = {"HOME": str(self.home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})}
        done = subprocess.run(
            command, cwd=self.root, env=environ, capture_output=True, text=True, timeout=timeout
        )
        return Run(done.returncode, done.stdout, done.stderr)


def netns_prefix() -> list[str]:
    """A fresh user + network namespace: no route anywhere, loopback down."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "util-linux `unshare` is needed for tests that name non-loopback addresses"
    return [unshare, "--user", "--map-root-user", "--net"]


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path.resolve())


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def listening() -> Iterator[Callable[..., int]]:
    """``listening(kind=SOCK_STREAM) -> port``: a socket bound on 127.0.0.1 (TCP ones listen).

    Connections complete in the kernel's backlog, so nothing needs to accept them.
    """
    made: list[socket.socket] = []

    def listen(kind: int = socket.SOCK_STREAM) -> int:
        s = socket.socket(socket.AF_INET, kind)
        s.bind(("127.0.0.1", 0))
        if kind == socket.SOCK_STREAM:
            s.listen(16)
        made.append(s)
        return int(s.getsockname()[1])

    yield listen
    for s in made:
        s.close()
