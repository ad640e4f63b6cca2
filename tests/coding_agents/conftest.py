"""The coding-agents kit is not a package: its two scripts are loaded from their files, as the
agents run them, and also run as programs (the public surface: stdin in, stdout/exit out)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "coding-agents"
HOOK = KIT / "hooks" / "require_python_sb.py"
REVIEW = KIT / "skills" / "pysandboxes-review-rules" / "scripts" / "review_rules.py"
BIN = Path(sys.executable).parent


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _no_agent_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook takes the project root from these when an agent sets them: not from the agent
    that may be running these tests."""
    for name in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CURSOR_PROJECT_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def hook() -> ModuleType:
    return _load(HOOK, "require_python_sb")


@pytest.fixture(scope="session")
def review() -> ModuleType:
    return _load(REVIEW, "review_rules")


def run_script(
    argv: list[str], stdin: str = "", cwd: str | os.PathLike[str] | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """A script of the kit as an agent (or CI) starts it: a child process, a clean environment."""
    environ = {"PATH": f"{BIN}:/usr/bin:/bin", "LANG": "C.UTF-8", **env}
    return subprocess.run(
        argv, input=stdin, capture_output=True, text=True, cwd=cwd, env=environ, timeout=120, check=False
    )
