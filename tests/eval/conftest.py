"""The eval-* layer: profiles loaded from rule files, and evaluations run in-process through
the engine (no guard is armed in the pytest process), plus ``python-sb`` runs end to end.

Helpers are reached through fixtures only (``--import-mode=importlib``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pysandboxes.evaluation.engine import evaluate
from pysandboxes.rules import load_policy
from pysandboxes.rules.evaluation import EvalProfile

PYTHON_SB = str(Path(sys.executable).with_name("python-sb"))

#: the calculator of the seeds
CALCULATOR = "eval-namespace=closed\neval-syntax=arith, compare\neval-timeout=2s"


class Profiles:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.count = 0

    def __call__(self, text: str, name: str = "") -> EvalProfile:
        """The ``name`` profile of a rule file holding ``text``."""
        self.count += 1
        folder = self.root / f"p{self.count}"
        folder.mkdir()
        path = folder / ".py-sandboxes"
        path.write_text(textwrap.dedent(text).strip() + "\n")
        policy = load_policy(path, environ={"HOME": str(self.root)}, cwd=str(folder))
        return policy.eval_profiles[name]


@pytest.fixture
def profile(tmp_path: Path) -> Profiles:
    return Profiles(tmp_path)


@pytest.fixture
def run() -> Callable[..., Any]:
    """``run(profile, source, namespace=None, mode="eval")``: the engine, in-process."""

    def go(
        profile: EvalProfile, source: str, namespace: dict[str, Any] | None = None, mode: str = "eval"
    ) -> Any:
        return evaluate(
            profile, textwrap.dedent(source).strip("\n") if mode != "eval" else source, namespace, mode
        )

    return go


class SbRun:
    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        self.returncode = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr

    def __repr__(self) -> str:
        return f"SbRun({self.returncode}, {self.stdout!r}, {self.stderr!r})"

    def lines(self) -> list[str]:
        assert (self.returncode, self.stderr) == (0, ""), self
        return self.stdout.splitlines()


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "home").mkdir()

    def run(self, program: str, rules: str, provider: str = "landlock", timeout: float = 60) -> SbRun:
        (self.root / ".py-sandboxes").write_text(
            textwrap.dedent(rules).strip() + f"\nos-sandbox={provider}\n"
        )
        (self.root / "prog.py").write_text(textwrap.dedent(program).lstrip("\n"))
        env = {"HOME": str(self.root / "home"), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        done = subprocess.run(
            [PYTHON_SB, "prog.py"], cwd=self.root, env=env, capture_output=True, text=True, timeout=timeout
        )
        return SbRun(done)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path.resolve() / "project"
    root.mkdir()
    return Project(root)


@pytest.fixture(params=("subprocess", "landlock"))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)
