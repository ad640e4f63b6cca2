"""Helpers for the end-to-end tests of learning mode.

Each test writes a small project into a temporary directory (the home directory is another
temporary directory, so the project is never "too broad to learn"), runs ``python-sb`` or
``python`` on it in a subprocess with a fixed environment and a timeout, and reads back the
learned rule file. Assertions are on what a user sees: the lines of the rule file, the exit
code, stdout and stderr.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
PYTHON_SB = str(BIN / "python-sb")
PYSANDBOXES = str(BIN / "pysandboxes")
PYTHON = sys.executable
TIMEOUT = 30
RULES = ".py-sandboxes"

#: the summary's second line, and the banner, for a target shown as ``shown``
BANNER = (
    "python-sb: LEARNING MODE: no OS boundary, nothing is refused that a rule could allow; "
    "the rules this run needs go to {target}. Run only trusted code."
)
REVIEW = "python-sb: review them before use: git diff {shown}  (or pysandboxes check {shown})"

#: template block of each family
BLOCKS = {
    "env": "learning_guard_envs",
    "files": "learning_guard_files",
    "network": "learning_guard_socket",
    "imports": "learning_guard_import",
    "api": "learning_guard_api",
    "eval": "learning_guard_eval",
    "result": "learning_remote_result",
}


def bug(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=f"bug: {reason}")


@dataclasses.dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    @property
    def errors(self) -> list[str]:
        return self.stderr.splitlines()


def block(text: str, family: str) -> list[str]:
    """The lines of a learning block, without the dated ``# Added by learning`` comments."""
    name = BLOCKS[family]
    lines = text.splitlines()
    start = lines.index(f"# <{name}>")
    end = lines.index(f"# </{name}>")
    return [line for line in lines[start + 1 : end] if not line.startswith("# Added by learning on ")]


class Learn:
    """A temporary project (``root``), a separate temporary home, a fixed environment."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
        }

    def write(self, name: str, text: str = "") -> Path:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def mkdir(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def rules(self, *lines: str, name: str = RULES) -> Path:
        """A hand-written rule file: ``os-sandbox=landlock`` and ``lines``."""
        return self.write(name, "".join(f"{line}\n" for line in ("os-sandbox=landlock", *lines)))

    def text(self, name: str = RULES) -> str:
        return (self.root / name).read_text(encoding="utf-8")

    def block(self, family: str, name: str = RULES) -> list[str]:
        return block(self.text(name), family)

    def files(self) -> list[str]:
        """Every entry of the project directory, sorted."""
        return sorted(p.name for p in self.root.iterdir())

    def env(self, **extra: str) -> dict[str, str]:
        return {**self.environ, **extra}

    def run(
        self, *args: str, env: dict[str, str] | None = None, prefix: Sequence[str] = (), tool: str = PYTHON_SB
    ) -> Outcome:
        done = subprocess.run(
            [*prefix, tool, *args],
            cwd=self.root,
            env=self.env(**(env or {})),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        return Outcome(done.returncode, done.stdout, done.stderr)

    def learn(self, *args: str, env: dict[str, str] | None = None, target: str = RULES) -> Outcome:
        """``python-sb --learn ARGS`` that must succeed and learn something."""
        outcome = self.run("--learn", *args, env=env)
        assert outcome.returncode == 0, outcome
        assert outcome.errors[0] == BANNER.format(target=self.root / target), outcome
        assert outcome.errors[1].startswith("python-sb: learned "), outcome
        return outcome

    def strict(self, *args: str, env: dict[str, str] | None = None) -> Outcome:
        """A strict run (no learning) that must succeed silently on stderr."""
        outcome = self.run(*args, env=env)
        assert (outcome.returncode, outcome.stderr) == (0, ""), outcome
        return outcome

    def python(self, *args: str, env: dict[str, str] | None = None) -> Outcome:
        return self.run(*args, env=env, tool=PYTHON)

    def check(self, name: str = RULES) -> Outcome:
        return self.run("check", name, tool=PYSANDBOXES)


@pytest.fixture
def learn(tmp_path: Path) -> Learn:
    home = tmp_path / "home"
    root = tmp_path / "project"
    home.mkdir()
    root.mkdir()
    return Learn(root, home)


class Server:
    """A TCP server on 127.0.0.1 that answers ``pong`` to each connection."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = int(self.sock.getsockname()[1])
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.recv(16)
                    conn.sendall(b"pong")
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def other_server() -> Iterator[Server]:
    s = Server()
    try:
        yield s
    finally:
        s.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
