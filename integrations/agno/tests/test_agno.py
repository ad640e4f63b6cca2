"""What is particular to agno: the run goes on after a refusal, ``on_denial="raise"`` stops it,
``tool()``'s arguments, the parameters agno injects, and ``SandboxToolkit`` (holding tools, in
an async run, closing the sandbox after a run that failed)."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agno.agent import Agent
from agno.run.base import RunStatus
from agno.tools.toolkit import Toolkit

from pysandboxes import SandBoxError, sandboxes
from pysandboxes_agno import STOPPED, SandboxToolkit

from .conftest import ScriptedModel, seen

TOOLS = '''
    """The tools of these tests, made by pysandboxes-agno and, for comparison, by agno."""

    import os

    from agno.agent import Agent
    from agno.run import RunContext
    from agno.tools import tool
    from pysandboxes import sandbox
    from pysandboxes_agno import SandboxToolkit, host_tool, sandboxed_tool


    @sandboxed_tool
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
    async def body_pid() -> int:
        """The process the body runs in."""
        return os.getpid()


    @sandbox
    def plain_pid() -> int:
        return os.getpid()


    @sandboxed_tool(
        name="first_lines",
        description="The first lines of a file.",
        show_result=True,
        stop_after_tool_call=True,
        cache_results=True,
        cache_ttl=60,
    )
    def head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @tool(
        name="first_lines",
        description="The first lines of a file.",
        show_result=True,
        stop_after_tool_call=True,
        cache_results=True,
        cache_ttl=60,
    )
    def plain_head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @sandboxed_tool(requires_confirmation=True)
    def confirmed(path: str) -> str:
        """Needs the user's confirmation."""
        return path


    @tool(requires_confirmation=True)
    def plain_confirmed(path: str) -> str:
        """Needs the user's confirmation."""
        return path


    @sandboxed_tool
    def injected(text: str, agent: Agent = None, ctx: RunContext = None, images=None, fc=None) -> str:
        """What of agno's injected parameters reached the body."""
        got = [name for name, value in (("agent", agent), ("ctx", ctx), ("images", images), ("fc", fc)) if value]
        return f"{text} got={got} pid={os.getpid()}"


    @tool
    def plain_injected(text: str, agent: Agent = None, ctx: RunContext = None, images=None, fc=None) -> str:
        """What of agno's injected parameters reached the body."""
        got = [name for name, value in (("agent", agent), ("ctx", ctx), ("images", images), ("fc", fc)) if value]
        return f"{text} got={got} pid={os.getpid()}"


    @sandbox
    def _count(text: str) -> int:
        return len(text)


    @host_tool
    def remember(text: str, run_context: RunContext) -> str:
        """Count on the host's session state what the sandboxed body measured."""
        run_context.session_state["length"] = _count(text)
        return f"stored {run_context.session_state['length']}"


    held = SandboxToolkit([read_file, head])
'''


class Files:
    """A project: the rule file (``data/`` readable), ``data/notes.txt``, ``secret.txt``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".py-sandboxes").write_text("os-sandbox=landlock\nexpose-ro=./data\n", encoding="utf-8")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "agno_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")

    @property
    def notes(self) -> str:
        return str(self.root / "data" / "notes.txt")

    @property
    def secret(self) -> str:
        return str(self.root / "secret.txt")

    @property
    def refused(self) -> str:
        return f"RuleFileNotFoundError: Access to '{self.secret}' must be accepted by a rule."


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Files, ModuleType]:
    """The project, and its tools imported here (left on ``sys.path``: the sandbox's registry
    keeps them, and later sandbox children import them again)."""
    made = Files(tmp_path_factory.mktemp("agno-files"))
    sys.path.insert(0, str(made.root))
    return made, importlib.import_module("agno_files_tools")


def run(calls: list[tuple[str, dict[str, Any]]], tools: list[Any]) -> Any:
    return Agent(model=ScriptedModel(calls=calls), tools=tools, telemetry=False).run("go")


def test_a_refusal_is_the_tools_error_and_the_run_goes_on(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    calls = [("read_file", {"path": made.secret}), ("read_file", {"path": made.notes})]
    output = run(calls, [tools.read_file, SandboxToolkit(sandboxes_config=str(made.root / ".py-sandboxes"))])
    assert [(t.result, t.tool_call_error) for t in output.tools] == [
        (made.refused, True),
        ("one\ntwo\n", False),
    ]
    assert (output.status, output.content) == (RunStatus.completed, "done")  # the model answered last
    tool_messages = [m for m in output.messages if m.role == "tool"]
    assert tool_messages[0].content == made.refused


def test_on_denial_raise_stops_the_run_without_the_refusals_text(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    calls = [("read_or_stop", {"path": made.secret}), ("read_file", {"path": made.notes})]
    with sandboxes(sandboxes_config=str(made.root / ".py-sandboxes")):
        output = run(calls, [tools.read_or_stop, tools.read_file])
    assert [(t.result, t.tool_call_error) for t in output.tools] == [(STOPPED, True)]
    assert output.content != "done"  # the model was not asked again


def test_the_plain_tool_gets_agnos_injected_objects(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    output = run([("plain_injected", {"text": "hi"})], [tools.plain_injected])
    assert seen(output)[0].text == f"hi got=['agent', 'ctx', 'fc'] pid={os.getpid()}"


def test_the_parameters_agno_injects_stay_on_the_host(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    with sandboxes(sandboxes_config=str(made.root / ".py-sandboxes")):
        output = run([("injected", {"text": "hi"})], [tools.injected])
    (result,) = seen(output)
    text, _, pid = result.text.rpartition(" pid=")
    assert (text, result.error) == ("hi got=[]", False)
    assert int(pid) != os.getpid()
    assert tools.injected.to_dict() == {**tools.plain_injected.to_dict(), "name": "injected"}


def test_a_host_tool_uses_the_session_state(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = Agent(
        model=ScriptedModel(calls=[("remember", {"text": "four"})]),
        tools=[tools.remember, SandboxToolkit(sandboxes_config=str(made.root / ".py-sandboxes"))],
        session_state={},
        telemetry=False,
    )
    output = agent.run("go")
    assert seen(output)[0].text == "stored 4"
    assert output.session_state["length"] == 4


def test_the_decorators_arguments_are_agnos(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    assert tools.head.to_dict() == tools.plain_head.to_dict()
    assert tools.head.to_dict()["parameters"]["properties"]["lines"] == {
        "type": "integer",
        "description": "How many lines.",
    }
    for attribute in ("name", "show_result", "stop_after_tool_call", "cache_results", "cache_ttl"):
        assert getattr(tools.head, attribute) == getattr(tools.plain_head, attribute), attribute
    assert (tools.head.name, tools.head.stop_after_tool_call, tools.head.cache_results) == (
        "first_lines",
        True,
        True,
    )
    assert tools.confirmed.requires_confirmation is tools.plain_confirmed.requires_confirmation is True


def test_a_toolkit_holding_the_tools_runs_them_in_the_sandbox(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    calls = [("read_file", {"path": made.notes}), ("read_file", {"path": made.secret})]
    output = run(calls, [tools.held])
    assert seen(output)[1].text == made.refused and seen(output)[0].text == "one\ntwo\n"
    assert [f["name"] for f in (fn.to_dict() for fn in tools.held.functions.values())] == [
        "read_file",
        "first_lines",
    ]
    plain = Toolkit(tools=[tools.plain_head]).functions["first_lines"]  # a toolkit adds its own fields
    assert tools.held.functions["first_lines"].to_dict() == plain.to_dict()
    with pytest.raises(SandBoxError, match="called outside any sandbox"):  # closed when the run ended
        tools.plain_pid()


def test_the_toolkit_opens_the_sandbox_for_an_async_run(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = Agent(
        model=ScriptedModel(calls=[("body_pid", {}), ("body_pid", {})]),
        tools=[tools.body_pid, SandboxToolkit(sandboxes_config=str(made.root / ".py-sandboxes"))],
        telemetry=False,
    )
    first, second = seen(asyncio.run(agent.arun("go")))
    assert first == second and int(first.text) != os.getpid()
    with pytest.raises(SandBoxError, match="called outside any sandbox"):
        tools.plain_pid()


@dataclass
class FailingModel(ScriptedModel):
    """Calls the tools, then fails: the run ends in an error. Keeps the tool results it read."""

    read: list[str] = field(default_factory=list)

    def _next(self, messages: list[Any]) -> Any:
        if sum(1 for m in messages if m.role == "assistant") >= len(self.calls):
            self.read.extend(m.content for m in messages if m.role == "tool")
            raise RuntimeError("the model's service is down")
        return super()._next(messages)


def test_the_toolkit_closes_the_sandbox_after_a_failed_run(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    model = FailingModel(calls=[("read_file", {"path": made.notes})])
    agent = Agent(
        model=model,
        tools=[tools.read_file, SandboxToolkit(sandboxes_config=str(made.root / ".py-sandboxes"))],
        telemetry=False,
    )
    output = agent.run("go")
    assert (output.status, output.content) == (RunStatus.error, "the model's service is down")
    assert model.read == ["one\ntwo\n"]
    with pytest.raises(SandBoxError, match="called outside any sandbox"):
        tools.plain_pid()


def test_the_public_names() -> None:
    import pysandboxes_agno

    assert pysandboxes_agno.__all__ == [
        "FRAMEWORK",
        "STOPPED",
        "SandboxRefusal",
        "SandboxToolkit",
        "host_tool",
        "sandboxed_tool",
    ]
