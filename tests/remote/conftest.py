"""Helpers for the end-to-end tests of partial mode.

Each test writes a small project into ``tmp_path`` — a ``.py-sandboxes``, a ``tools.py``
module holding ``@sandbox`` functions, a ``host.py`` program — and runs
``sys.executable host.py`` in it (cwd and HOME = the project), so the child can import the
program's modules exactly as a user's child would. Assertions are on what a user sees: the
exit code, stdout and stderr.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

#: the providers that must behave the same for partial mode
PROVIDERS = ("subprocess", "landlock")

#: the longest a host program may run
RUN_TIMEOUT = 60


@dataclasses.dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


class Project:
    """A temporary project directory holding the rule file, the modules and the host."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, name: str, text: str) -> Path:
        """Write ``text`` (dedented) to ``name`` in the project."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def rules(self, provider: str, *lines: str) -> Path:
        """The project's ``.py-sandboxes``: ``os-sandbox=provider`` and ``lines``."""
        return self.write(
            ".py-sandboxes", "".join(f"{line}\n" for line in (f"os-sandbox={provider}", *lines))
        )

    def tools(self, text: str) -> Path:
        return self.write("tools.py", text)

    def host(self, text: str, name: str = "host.py") -> Path:
        return self.write(name, text)

    def environ(self, **extra: str) -> dict[str, str]:
        return {
            "HOME": str(self.root),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            **extra,
        }

    def run(
        self, script: str = "host.py", *, env: dict[str, str] | None = None, options: Sequence[str] = ()
    ) -> Outcome:
        """Run ``python [options] script`` in the project; its exit code, stdout and stderr."""
        done = subprocess.run(
            [sys.executable, *options, script],
            cwd=self.root,
            env=self.environ(**(env or {})),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        return Outcome(done.returncode, done.stdout, done.stderr)

    def ok(
        self, script: str = "host.py", *, env: dict[str, str] | None = None, options: Sequence[str] = ()
    ) -> list[str]:
        """Run ``script``, which must succeed silently on stderr; its stdout lines."""
        outcome = self.run(script, env=env, options=options)
        assert (outcome.returncode, outcome.stderr) == (0, ""), outcome
        return outcome.lines


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)
