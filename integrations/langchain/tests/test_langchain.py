"""What is particular to LangChain: the run goes on after a refusal, the application's own
``ToolException``, ``tool()``'s arguments, LangGraph's ``ToolNode`` and ``SandboxMiddleware``
in an async run."""

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
from langchain.agents import create_agent
from langchain.tools import ToolException
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from pysandboxes import SandBoxError, sandboxes

from .conftest import script, tools_of

TOOLS = '''
    """The tools of these tests, made by pysandboxes-langchain and, for comparison, by LangChain."""

    import os

    from langchain.tools import ToolException, tool
    from pysandboxes import sandbox
    from pysandboxes_langchain import SandboxMiddleware, sandboxed_tool

    middleware = [SandboxMiddleware()]


    @sandboxed_tool
    def read_file(path: str) -> str:
        """Read a text file."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool
    async def body_pid() -> int:
        """The process the body runs in."""
        return os.getpid()


    @sandbox
    def plain_pid() -> int:
        return os.getpid()


    @sandboxed_tool
    def complain(text: str) -> str:
        """Raise the application's own ToolException."""
        raise ToolException(text)


    @tool
    def plain_complain(text: str) -> str:
        """Raise the application's own ToolException."""
        raise ToolException(text)


    @sandboxed_tool("first_lines", parse_docstring=True, return_direct=True)
    def head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @tool("first_lines", parse_docstring=True, return_direct=True)
    def plain_head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])
'''


class Files:
    """A project: the rule file (``data/`` readable), ``data/notes.txt``, ``secret.txt``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".py-sandboxes").write_text("os-sandbox=landlock\nexpose-ro=./data\n", encoding="utf-8")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "langchain_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")

    @property
    def notes(self) -> str:
        return str(self.root / "data" / "notes.txt")

    @property
    def secret(self) -> str:
        return str(self.root / "secret.txt")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Files, ModuleType]:
    """The project, and its tools imported here (left on ``sys.path``: the sandbox's registry
    keeps them, and later sandbox children import them again)."""
    made = Files(tmp_path_factory.mktemp("langchain-files"))
    sys.path.insert(0, str(made.root))
    return made, importlib.import_module("langchain_files_tools")


def invoke(agent: Any) -> list[Any]:
    return list(agent.invoke({"messages": [{"role": "user", "content": "go"}]})["messages"])


def test_a_refusal_is_an_error_tool_message_and_the_run_goes_on(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    calls = [("read_file", {"path": made.secret}), ("read_file", {"path": made.notes})]
    messages = invoke(create_agent(script(calls), tools=tools_of(tools), middleware=tools.middleware))
    refused, read = (m for m in messages if isinstance(m, ToolMessage))
    assert (refused.status, refused.content) == (
        "error",
        f"RuleFileNotFoundError: Access to '{made.secret}' must be accepted by a rule.",
    )
    assert (read.status, read.content) == ("success", "one\ntwo\n")
    assert messages[-1] == AIMessage(content="done", id=messages[-1].id)  # the model answered last


@pytest.mark.parametrize("tool", ["complain", "plain_complain"])
def test_the_applications_own_tool_exception_keeps_langchains_handling(
    files: tuple[Files, ModuleType], tool: str
) -> None:
    _, tools = files
    agent = create_agent(script([(tool, {"text": "no such page"})]), tools=tools_of(tools))
    with (
        sandboxes(sandboxes_config=str(files[0].root / ".py-sandboxes")),
        pytest.raises(ToolException) as raised,
    ):
        invoke(agent)
    assert str(raised.value) == "no such page"


def test_the_decorators_arguments_are_tools(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    assert (tools.head.name, tools.head.return_direct) == ("first_lines", True)
    assert convert_to_openai_tool(tools.head) == convert_to_openai_tool(tools.plain_head)
    assert convert_to_openai_tool(tools.head)["function"]["parameters"]["properties"]["lines"] == {
        "default": 1,
        "description": "How many lines.",
        "type": "integer",
    }


def test_a_langgraph_tool_node_runs_the_sandboxed_tool(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    model = script([("first_lines", {"path": made.notes, "lines": 1}), ("read_file", {"path": made.secret})])
    node = ToolNode([tools.head, tools.read_file])

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", node)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    graph.add_edge("model", END)
    with sandboxes(sandboxes_config=str(made.root / ".py-sandboxes")):
        messages = invoke(graph.compile())
    results = [(m.status, m.content) for m in messages if isinstance(m, ToolMessage)]
    assert results == [
        ("success", "one\n"),
        ("error", f"RuleFileNotFoundError: Access to '{made.secret}' must be accepted by a rule."),
    ]


def test_the_middleware_opens_the_sandbox_for_an_async_run(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    agent = create_agent(
        script([("body_pid", {}), ("body_pid", {})]), tools=tools_of(tools), middleware=tools.middleware
    )
    result = asyncio.run(agent.ainvoke({"messages": [{"role": "user", "content": "go"}]}))
    first, second = (m.content for m in result["messages"] if isinstance(m, ToolMessage))
    assert first == second != str(os.getpid())
    with pytest.raises(SandBoxError, match="called outside any sandbox"):  # closed when the run ended
        tools.plain_pid()
