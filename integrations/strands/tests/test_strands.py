"""What is particular to strands: the run goes on after a refusal (and hooks still see the
exception), ``on_denial="raise"`` ends the invocation, ``tool()``'s arguments, ``agent`` and a
renamed ``ToolContext`` on the host, direct tool calls, and ``SandboxHooks`` (async, failed and
concurrent invocations)."""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from strands import Agent
from strands.hooks import AfterToolCallEvent
from strands.types.exceptions import EventLoopException

from pysandboxes import SandBoxError, sandboxes
from pysandboxes_strands import STOPPED, SandboxHooks, SandboxRefusal

from .conftest import ScriptedModel, results, seen

TOOLS = '''
    """The tools of these tests, made by pysandboxes-strands and, for comparison, by strands."""

    import asyncio
    import os

    from strands import tool
    from strands.types.tools import ToolContext
    from pysandboxes import sandbox
    from pysandboxes_strands import host_tool, sandboxed_tool


    @sandboxed_tool
    def read_file(path: str) -> str:
        """Read a text file."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool(on_denial="raise")
    def read_or_stop(path: str) -> str:
        """Read a text file; a refusal ends the invocation."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool
    async def body_pid(delay: float = 0.0) -> int:
        """The process the body runs in."""
        await asyncio.sleep(delay)
        return os.getpid()


    @sandbox
    def plain_pid() -> int:
        return os.getpid()


    SCHEMA = {"json": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}


    @sandboxed_tool(name="first_line", description="The first line of a file.", inputSchema=SCHEMA)
    def head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @tool(name="first_line", description="The first line of a file.", inputSchema=SCHEMA)
    def plain_head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @sandboxed_tool(context="ctx")
    def injected(text: str, agent=None, ctx: ToolContext = None) -> str:
        """What of strands' injected parameters reached the body.

        Args:
            text: Any text.
        """
        got = [name for name, value in (("agent", agent), ("ctx", ctx)) if value is not None]
        return f"{text} got={got} pid={os.getpid()}"


    @tool(context="ctx")
    def plain_injected(text: str, agent=None, ctx: ToolContext = None) -> str:
        """What of strands' injected parameters reached the body.

        Args:
            text: Any text.
        """
        got = [name for name, value in (("agent", agent), ("ctx", ctx)) if value is not None]
        return f"{text} got={got} pid={os.getpid()}"


    @sandbox
    def _count(text: str) -> int:
        return len(text)


    @host_tool(context=True)
    def remember(text: str, tool_context: ToolContext) -> str:
        """Keep in the agent's state what the sandboxed body measured."""
        tool_context.agent.state.set("length", _count(text))
        return f"stored {tool_context.agent.state.get('length')}"
'''


class Files:
    """A project: the rule file (``data/`` readable), ``data/notes.txt``, ``secret.txt``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".py-sandboxes").write_text("os-sandbox=landlock\nexpose-ro=./data\n", encoding="utf-8")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "strands_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")

    @property
    def config(self) -> str:
        return str(self.root / ".py-sandboxes")

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
    made = Files(tmp_path_factory.mktemp("strands-files"))
    sys.path.insert(0, str(made.root))
    return made, importlib.import_module("strands_files_tools")


def make(calls: list[tuple[str, dict[str, Any]]], tools: list[Any], **kwargs: Any) -> Agent:
    return Agent(model=ScriptedModel(calls), tools=tools, callback_handler=None, **kwargs)


def assert_closed(tools: ModuleType) -> None:
    with pytest.raises(SandBoxError, match="called outside any sandbox"):
        tools.plain_pid()


def test_a_refusal_is_an_error_result_and_the_run_goes_on(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    exceptions: list[BaseException | None] = []
    agent = make(
        [("read_file", {"path": made.secret}), ("read_file", {"path": made.notes})],
        [tools.read_file],
        hooks=[SandboxHooks(sandboxes_config=made.config)],
    )
    agent.hooks.add_callback(AfterToolCallEvent, lambda event: exceptions.append(event.exception))
    result = agent("go")
    assert [(r["status"], r["content"]) for r in results(agent)] == [
        ("error", [{"text": made.refused}]),
        ("success", [{"text": "one\ntwo\n"}]),
    ]
    assert (result.stop_reason, str(result).strip()) == ("end_turn", "done")  # the model answered last
    refusal, none = exceptions
    assert isinstance(refusal, SandboxRefusal) and str(refusal) == made.refused and none is None
    assert_closed(tools)


def test_on_denial_raise_ends_the_invocation_without_the_refusals_text(
    files: tuple[Files, ModuleType],
) -> None:
    made, tools = files
    agent = make(
        [("read_or_stop", {"path": made.secret}), ("read_file", {"path": made.notes})],
        [tools.read_or_stop, tools.read_file],
        hooks=[SandboxHooks(sandboxes_config=made.config)],
    )
    result = agent("go")
    assert [(r["status"], r["content"]) for r in results(agent)] == [("error", [{"text": STOPPED}])]
    assert (result.stop_reason, str(result).strip()) == (
        "cancelled",
        STOPPED,
    )  # the model was not asked again
    assert_closed(tools)


def test_the_decorators_arguments_are_strands(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    assert tools.head.tool_spec == tools.plain_head.tool_spec
    assert (tools.head.tool_name, tools.head.tool_spec["description"]) == (
        "first_line",
        "The first line of a file.",
    )
    assert tools.injected.tool_spec == {**tools.plain_injected.tool_spec, "name": "injected"}
    assert list(tools.injected.tool_spec["inputSchema"]["json"]["properties"]) == ["text"]


def test_agent_and_a_renamed_tool_context_stay_on_the_host(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    plain = make([("plain_injected", {"text": "hi"})], [tools.plain_injected])
    plain("go")
    assert seen(plain)[0].text == f"hi got=['agent', 'ctx'] pid={os.getpid()}"
    agent = make(
        [("injected", {"text": "hi"})], [tools.injected], hooks=[SandboxHooks(sandboxes_config=made.config)]
    )
    agent("go")
    (result,) = seen(agent)
    text, _, pid = result.text.rpartition(" pid=")
    assert (text, result.error) == ("hi got=[]", False)
    assert int(pid) != os.getpid()


def test_a_host_tool_uses_the_agents_state(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = make(
        [("remember", {"text": "four"})], [tools.remember], hooks=[SandboxHooks(sandboxes_config=made.config)]
    )
    agent("go")
    assert seen(agent)[0].text == "stored 4"
    assert agent.state.get("length") == 4


def test_a_direct_tool_call_is_sandboxed_too(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = make([], [tools.read_file])
    with sandboxes(sandboxes_config=made.config):
        refused = agent.tool.read_file(path=made.secret)
        with pytest.raises(SandboxRefusal, match="must be accepted by a rule"):
            tools.read_file(made.secret)  # the function call itself
    assert (refused["status"], refused["content"]) == ("error", [{"text": made.refused}])


def test_the_hooks_open_the_sandbox_for_an_async_invocation(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = make(
        [("body_pid", {}), ("body_pid", {})],
        [tools.body_pid],
        hooks=[SandboxHooks(sandboxes_config=made.config)],
    )
    asyncio.run(agent.invoke_async("go"))
    first, second = seen(agent)
    assert first == second and int(first.text) != os.getpid()
    assert_closed(tools)


class FailingModel(ScriptedModel):
    """Calls the tools, then fails: the invocation raises."""

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if sum(1 for m in messages if m["role"] == "assistant") >= len(self.calls):
            raise RuntimeError("the model's service is down")
        async for event in super().stream(messages, *args, **kwargs):
            yield event


def test_the_hooks_close_the_sandbox_after_a_failed_invocation(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = Agent(
        model=FailingModel([("read_file", {"path": made.notes})]),
        tools=[tools.read_file],
        hooks=[SandboxHooks(sandboxes_config=made.config)],
        callback_handler=None,
    )
    with pytest.raises(EventLoopException, match="the model's service is down"):
        agent("go")
    assert seen(agent)[0].text == "one\ntwo\n"
    assert_closed(tools)


def test_concurrent_invocations_share_one_child(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    hooks = SandboxHooks(sandboxes_config=made.config)
    agents = [make([("body_pid", {"delay": 0.2})], [tools.body_pid], hooks=[hooks]) for _ in range(2)]

    async def both() -> None:
        await asyncio.gather(*(agent.invoke_async("go") for agent in agents))

    asyncio.run(both())
    (first,), (second,) = (seen(agent) for agent in agents)
    assert first == second and int(first.text) != os.getpid()
    assert_closed(tools)


def test_the_public_names() -> None:
    import pysandboxes_strands

    assert pysandboxes_strands.__all__ == [
        "STOPPED",
        "SandboxHooks",
        "SandboxRefusal",
        "SandboxStop",
        "SandboxedFunctionTool",
        "host_tool",
        "sandboxed_tool",
    ]
