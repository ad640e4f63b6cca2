"""What is particular to autogen: the refusal is an error ``FunctionExecutionResult`` and the
run goes on, ``on_denial="raise"`` gives the model no detail, ``FunctionTool``'s arguments, the
``CancellationToken`` on the host, a direct ``run_json``, one child for several runs inside
``sandboxes()``, and no serialization of a sandboxed tool."""

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
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken
from autogen_core.tools import FunctionTool

from pysandboxes import SandBoxError, sandbox_denials, sandboxes
from pysandboxes_autogen import REFUSED, SandboxRefusal

from .conftest import client, run, seen

TOOLS = '''
    """The tools of these tests, made by pysandboxes-autogen and, for comparison, by autogen."""

    import asyncio
    import os

    from autogen_core import CancellationToken
    from autogen_core.tools import FunctionTool
    from pysandboxes import sandbox
    from pysandboxes_autogen import HostFunctionTool, SandboxedFunctionTool, host_tool, sandboxed_tool


    def read_file(path: str) -> str:
        return _read(path)


    def plain_read_file(path: str) -> str:
        return _read(path)


    def _read(path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return f.read()


    read_tool = SandboxedFunctionTool(read_file, description="Read a text file.", name="read")
    plain_read_tool = FunctionTool(plain_read_file, description="Read a text file.", name="read")


    @sandboxed_tool(on_denial="raise")
    def read_quietly(path: str) -> str:
        """Read a text file; the model is not told what was refused."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool(description="The process the body runs in.", strict=True)
    async def body_pid() -> int:
        await asyncio.sleep(0)
        return os.getpid()


    @sandbox
    def plain_pid() -> int:
        return os.getpid()


    @sandbox
    def _count(text: str) -> int:
        return len(text)


    def measure(text: str, cancellation_token: CancellationToken) -> str:
        """Measure the text in the sandbox, unless the run was cancelled."""
        if cancellation_token.is_cancelled():
            return "cancelled"
        return f"{type(cancellation_token).__name__} host={os.getpid()} length={_count(text)}"


    measure_tool = HostFunctionTool(measure, description="Measure a text.")
'''


class Files:
    """A project: the rule file (``data/`` readable), ``data/notes.txt``, ``secret.txt``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".py-sandboxes").write_text("os-sandbox=landlock\nexpose-ro=./data\n", encoding="utf-8")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "autogen_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")

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
    made = Files(tmp_path_factory.mktemp("autogen-files"))
    sys.path.insert(0, str(made.root))
    return made, importlib.import_module("autogen_files_tools")


def make(calls: list[tuple[str, dict[str, Any]]], tools: list[Any]) -> AssistantAgent:
    return AssistantAgent(
        "agent", model_client=client(calls), tools=tools, max_tool_iterations=len(calls) + 1
    )


def assert_closed(tools: ModuleType) -> None:
    with pytest.raises(SandBoxError, match="called outside any sandbox"):
        tools.plain_pid()


def test_a_refusal_is_an_error_result_and_the_run_goes_on(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = make([("read", {"path": made.secret}), ("read", {"path": made.notes})], [tools.read_tool])
    with sandboxes(sandboxes_config=made.config):
        result = run(agent)
    assert [(s.text, s.error) for s in seen(result)] == [(made.refused, True), ("one\ntwo\n", False)]
    last = result.messages[-1]
    assert isinstance(last, TextMessage) and last.content == "done"  # the model answered last
    assert_closed(tools)


def test_on_denial_raise_tells_the_model_nothing_of_the_refusal(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = make([("read_quietly", {"path": made.secret})], [tools.read_quietly])
    with sandboxes(sandboxes_config=made.config):
        result = run(agent)
    assert [(s.text, s.error) for s in seen(result)] == [(REFUSED, True)]


def test_the_arguments_are_function_tools(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    assert tools.read_tool.schema == tools.plain_read_tool.schema
    assert (tools.read_tool.name, tools.read_tool.description) == ("read", "Read a text file.")
    assert (
        tools.body_pid.schema
        == FunctionTool(tools.body_pid._func, description="The process the body runs in.", strict=True).schema
    )
    assert tools.measure_tool.schema["parameters"]["properties"].keys() == {"text"}


def test_a_host_tool_gets_the_cancellation_token_and_sandboxes_its_body(
    files: tuple[Files, ModuleType],
) -> None:
    made, tools = files
    agent = make([("measure", {"text": "four"})], [tools.measure_tool])
    with sandboxes(sandboxes_config=made.config):
        (result,) = seen(run(agent))
    assert (result.text, result.error) == (f"CancellationToken host={os.getpid()} length=4", False)


def test_a_direct_run_raises_the_refusal(files: tuple[Files, ModuleType]) -> None:
    made, tools = files

    async def go() -> Any:
        return await tools.read_tool.run_json({"path": made.secret}, CancellationToken())

    with sandboxes(sandboxes_config=made.config), pytest.raises(SandboxRefusal) as raised:
        asyncio.run(go())
    assert str(raised.value) == made.refused and sandbox_denials(raised.value.__cause__)


def test_runs_inside_one_sandboxes_block_share_one_child(files: tuple[Files, ModuleType]) -> None:
    made, tools = files

    async def two_runs() -> list[Any]:
        async with sandboxes(sandboxes_config=made.config):
            first = await make([("body_pid", {})], [tools.body_pid]).run(task="go")
            second = await make([("body_pid", {})], [tools.body_pid]).run(task="go")
        return [*seen(first), *seen(second)]

    first, second = asyncio.run(two_runs())
    assert first == second and not first.error and int(first.text) != os.getpid()
    assert_closed(tools)


def test_a_sandboxed_tool_is_not_serialized(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    with pytest.raises(
        TypeError, match="cannot be serialized: a component config carries the function's source"
    ):
        tools.read_tool.dump_component()
    assert tools.plain_read_tool.dump_component().config["name"] == "read"


def test_the_public_names() -> None:
    import pysandboxes_autogen

    assert pysandboxes_autogen.__all__ == [
        "REFUSED",
        "HostFunctionTool",
        "SandboxRefusal",
        "SandboxedFunctionTool",
        "host_tool",
        "sandboxed_tool",
    ]
