"""Shared fixtures: rule files written into a temporary project, loaded without touching the
machine's environment (``environ=`` and ``cwd=`` are always given, HOME is a temporary dir)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from pysandboxes.errors import RuleProblem, RuleSyntaxError
from pysandboxes.rules import RULE_FILE_NAME, Policy, load_policy

# A run started in the background by a non-interactive shell (`make test &`, nohup in a
# subshell) inherits SIGINT ignored, and so does every program the tests start, which then
# cannot be interrupted (python itself keeps an inherited SIG_IGN): the Ctrl-C tests would
# fail for the way the suite was started. The programs start as from a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


class Rules:
    """A temporary project directory (``root``), a temporary home, and a fixed environment."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.environ: dict[str, str] = {"HOME": str(home)}

    # -- files ---------------------------------------------------------------------------

    def write(self, text: str | bytes, name: str = RULE_FILE_NAME) -> Path:
        """Write ``text`` to ``name`` (relative to the project, or absolute); return the path."""
        path = Path(name) if os.path.isabs(name) else self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    def mkdir(self, name: str) -> Path:
        path = Path(name) if os.path.isabs(name) else self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def user_profile(self, text: str) -> Path:
        return self.write(text, str(self.home / ".config/py-sandboxes/user-py-sandboxes.profile"))

    # -- loading -------------------------------------------------------------------------

    def load(
        self,
        text: str | None = None,
        name: str = RULE_FILE_NAME,
        *,
        environ: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        **kwargs: object,
    ) -> Policy:
        """Write ``text`` (when given) to ``name`` and load it."""
        path = self.write(text, name) if text is not None else self.path(name)
        env = self.environ if environ is None else {**self.environ, **environ}
        return load_policy(path, environ=env, cwd=str(cwd or self.root), **kwargs)  # type: ignore[arg-type]

    def error(self, text: str | None = None, name: str = RULE_FILE_NAME, **kwargs: object) -> RuleSyntaxError:
        """Load and return the RuleSyntaxError the load must raise."""
        with pytest.raises(RuleSyntaxError) as info:
            self.load(text, name, **kwargs)  # type: ignore[arg-type]
        return info.value

    def problem(self, text: str | None = None, name: str = RULE_FILE_NAME, **kwargs: object) -> RuleProblem:
        """The single problem of a load that must fail with exactly one problem."""
        exc = self.error(text, name, **kwargs)
        assert len(exc.problems) == 1, exc.errors
        return exc.problems[0]

    @staticmethod
    def messages(exc: RuleSyntaxError) -> list[str]:
        """The message part of every problem, in reported order."""
        return [p.message for p in exc.problems]

    @staticmethod
    def where(problem: RuleProblem) -> tuple[str | None, int]:
        """(absolute path or None, line) of a problem."""
        return problem.origin.path, problem.origin.line

    def path(self, name: str = RULE_FILE_NAME) -> Path:
        return Path(name) if os.path.isabs(name) else self.root / name


@pytest.fixture
def rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Rules:
    home = tmp_path / "home"
    root = tmp_path / "project"
    home.mkdir()
    root.mkdir()
    # os.path.expanduser reads os.environ, not the environ given to load_policy.
    monkeypatch.setenv("HOME", str(home))
    return Rules(root, home)


@pytest.fixture
def write_rules(rules: Rules) -> Callable[..., Path]:
    """``write_rules(text, name=".py-sandboxes")`` writes a rule file into the project."""
    return rules.write
