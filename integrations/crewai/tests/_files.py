"""The project of the crewai-specific tests: a rule file, files, and a tools module made by
pysandboxes-crewai and, for comparison, by crewai alone."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from crewai.tools import BaseTool

from pysandboxes import SandBoxError

from .conftest import CrewaiHarness, crew, crewai_warnings, seen

TOOLS = '''
    """The tools of these tests, made by pysandboxes-crewai and, for comparison, by crewai."""

    import os

    from crewai.tools import tool
    from pysandboxes import sandbox
    from pysandboxes_crewai import host_tool, sandbox_kickoff, sandboxed_tool

    kickoff = sandbox_kickoff


    @sandboxed_tool("read_file")
    def read_file(path: str) -> str:
        """Read a text file."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool(on_denial="raise")
    def read_or_stop(path: str) -> str:
        """Read a text file; a refusal stops the run."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool
    def body_pid() -> int:
        """The process the body runs in."""
        return os.getpid()


    @sandboxed_tool("first lines", result_as_answer=True, max_usage_count=2)
    def head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file."""
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @tool("first lines", result_as_answer=True, max_usage_count=2)
    def plain_head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file."""
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @sandbox
    def _read(path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return f.read()


    @host_tool
    def read_on_host(path: str) -> str:
        """Read a file through a sandboxed body."""
        return f"host={os.getpid()} " + _read(path)


    @tool("plain_read")
    def plain_read(path: str) -> str:
        """A plain crewai tool calling a @sandbox function: crewai's own error text."""
        return _read(path)


    @sandbox
    def sandbox_pid() -> int:
        return os.getpid()
'''


class Files:
    """A project: the rule file (``data/`` readable, the child's home), ``data/notes.txt``,
    ``secret.txt``, and the tools module."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "home").mkdir()
        (root / ".py-sandboxes").write_text(
            "os-sandbox=landlock\nexpose-ro=./data\n"
            + CrewaiHarness.child_rules.replace("${HOME}/child", str(root / "home")),
            encoding="utf-8",
        )
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "crewai_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")

    @property
    def notes(self) -> str:
        return str(self.root / "data" / "notes.txt")

    @property
    def secret(self) -> str:
        return str(self.root / "secret.txt")

    @property
    def refused(self) -> str:
        return f"RuleFileNotFoundError: Access to '{self.secret}' must be accepted by a rule."


def make_files(root: Path) -> tuple[Files, ModuleType]:
    """The project, and its tools imported here (left on ``sys.path``: the sandbox's registry
    keeps them, and later sandbox children import them again)."""
    made = Files(root)
    sys.path.insert(0, str(made.root))
    return made, importlib.import_module("crewai_files_tools")


def kickoff(
    module: ModuleType,
    calls: list[tuple[str, dict[str, Any]]],
    tools: list[BaseTool],
    *,
    react: bool = False,
    lifecycle: bool = True,
) -> tuple[Any, Any]:
    """One crew run with the module's ``sandbox_kickoff``: (what the model saw, the output)."""
    made, llm = crew(module, calls, tools=tools, react=react, lifecycle=lifecycle)
    with crewai_warnings():
        output = made.kickoff()
    return seen(made, llm, output), output


def assert_closed(module: ModuleType) -> None:
    with pytest.raises(SandBoxError, match="called outside any sandbox"):
        module.sandbox_pid()
