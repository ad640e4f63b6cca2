"""What is particular to google-adk: the refusal is the function response ``{"error": ...}``
and the run goes on, ``on_denial="raise"`` ends the run, the plain-function form ADK wraps
itself, a renamed ``ToolContext`` on the host, ``HostFunctionTool`` with the session state,
``require_confirmation``, and ``SandboxPlugin`` (async, failed and concurrent runs)."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import InMemoryRunner
from google.adk.tools import FunctionTool
from google.genai import types

from pysandboxes import SandBoxError, sandbox_denials, sandboxes
from pysandboxes_google_adk import SandboxPlugin

from .conftest import ScriptedLlm, responses, run, seen

TOOLS = '''
    """The tools of these tests, made by pysandboxes-google-adk and, for comparison, by ADK."""

    import asyncio
    import os

    from google.adk.tools import FunctionTool, ToolContext
    from pysandboxes import sandbox
    from pysandboxes_google_adk import (
        HostFunctionTool,
        SandboxedFunctionTool,
        host_function,
        sandboxed_function,
    )


    def read_file(path: str) -> str:
        """Read a text file.

        Args:
            path: The file to read.
        """
        with open(path, encoding="utf-8") as f:
            return f.read()


    def read_file_plain(path: str) -> str:
        """Read a text file.

        Args:
            path: The file to read.
        """
        with open(path, encoding="utf-8") as f:
            return f.read()


    read_file_tool = SandboxedFunctionTool(read_file)
    # a twin: the same function in a FunctionTool too is refused when the sandbox opens
    plain_read_file_tool = FunctionTool(read_file_plain)
    read_or_raise = SandboxedFunctionTool(read_file, on_denial="raise")
    confirmed_read = SandboxedFunctionTool(read_file, require_confirmation=True)


    @sandboxed_function
    def read_function(path: str) -> str:
        """Read a text file, as a plain function ADK wraps itself.

        Args:
            path: The file to read.
        """
        with open(path, encoding="utf-8") as f:
            return f.read()


    def plain_read_function(path: str) -> str:
        """Read a text file, as a plain function ADK wraps itself.

        Args:
            path: The file to read.
        """
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_function
    async def body_pid(delay: float = 0.0) -> int:
        """The process the body runs in."""
        await asyncio.sleep(delay)
        return os.getpid()


    @sandbox
    def plain_pid() -> int:
        return os.getpid()


    @SandboxedFunctionTool
    def injected(text: str, ctx: ToolContext = None) -> str:
        """Whether ADK's context reached the body (under another name).

        Args:
            text: Any text.
        """
        return f"{text} ctx={type(ctx).__name__} pid={os.getpid()}"


    @FunctionTool
    def plain_injected(text: str, ctx: ToolContext = None) -> str:
        """Whether ADK's context reached the body (under another name).

        Args:
            text: Any text.
        """
        return f"{text} ctx={type(ctx).__name__} pid={os.getpid()}"


    @sandbox
    def _count(text: str) -> int:
        return len(text)


    @HostFunctionTool
    def remember(text: str, tool_context: ToolContext) -> str:
        """Keep in the session state what the sandboxed body measured."""
        tool_context.state["length"] = _count(text)
        return f"stored {tool_context.state['length']}"


    @host_function
    async def remember_async(text: str, tool_context: ToolContext) -> str:
        """The same, as a plain async function ADK wraps itself."""
        tool_context.state["length"] = await asyncio.to_thread(_count, text)
        return f"stored {tool_context.state['length']}"
'''


class Files:
    """A project: the rule file (``data/`` readable), ``data/notes.txt``, ``secret.txt``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".py-sandboxes").write_text("os-sandbox=landlock\nexpose-ro=./data\n", encoding="utf-8")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "adk_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")

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
    made = Files(tmp_path_factory.mktemp("adk-files"))
    sys.path.insert(0, str(made.root))
    return made, importlib.import_module("adk_files_tools")


def app(
    calls: list[tuple[str, dict[str, Any]]], tools: list[Any], *, plugin: Any = None, **agent: Any
) -> App:
    made = LlmAgent(name="agent", model=ScriptedLlm(calls=calls), tools=tools, **agent)
    return App(name="files", root_agent=made, plugins=[] if plugin is None else [plugin])


def declared(tool: FunctionTool, name: str = "", as_name: str = "") -> Any:
    """What the model is given for ``tool``, the tool's name ``name`` read as ``as_name`` (a
    twin's declaration names it, in the schema's title too)."""
    text = json.dumps(tool._get_declaration().model_dump(exclude_none=True))
    return json.loads(text.replace(name, as_name) if name else text)


def assert_closed(tools: ModuleType) -> None:
    with pytest.raises(SandBoxError, match="called outside any sandbox"):
        tools.plain_pid()


def final_text(events: list[Any]) -> str:
    return "".join(p.text or "" for e in events if e.content for p in e.content.parts or () if p.text)


def test_a_refusal_is_the_error_response_and_the_run_goes_on(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    plugin = SandboxPlugin(sandboxes_config=made.config)
    events = run(
        InMemoryRunner(
            app=app(
                [("read_file", {"path": made.secret}), ("read_file", {"path": made.notes})],
                [tools.read_file_tool],
                plugin=plugin,
            )
        )
    )
    assert responses(events) == [{"error": made.refused}, {"result": "one\ntwo\n"}]
    assert final_text(events) == "done"  # the model answered last
    assert_closed(tools)


def test_on_denial_raise_ends_the_run_with_the_refusal_and_closes_the_sandbox(
    files: tuple[Files, ModuleType],
) -> None:
    made, tools = files
    errors: list[BaseException] = []

    def on_tool_error(tool: Any, args: Any, tool_context: Any, error: BaseException) -> None:
        errors.append(error)  # ADK's error callbacks see it first; None: not handled

    runner = InMemoryRunner(
        app=app(
            [("read_file", {"path": made.secret}), ("read_file", {"path": made.notes})],
            [tools.read_or_raise],
            plugin=SandboxPlugin(sandboxes_config=made.config),
            on_tool_error_callback=on_tool_error,
        )
    )
    with pytest.raises(Exception) as raised:
        run(runner)
    assert sandbox_denials(raised.value) and errors == [raised.value]
    assert_closed(tools)  # closed by on_run_error_callback


def test_a_plain_function_is_wrapped_by_adk_itself(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    assert declared(FunctionTool(tools.read_function)) == declared(
        FunctionTool(tools.plain_read_function), "plain_read_function", "read_function"
    )
    events = run(
        InMemoryRunner(
            app=app(
                [("read_function", {"path": made.secret}), ("body_pid", {}), ("body_pid", {})],
                [tools.read_function, tools.body_pid],
                plugin=SandboxPlugin(sandboxes_config=made.config),
            )
        )
    )
    refused, first, second = seen(events)
    assert (refused.text, refused.error) == (made.refused, True)
    assert first == second and int(first.text) != os.getpid()
    assert_closed(tools)


def test_the_declaration_is_the_plain_tools(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    sandboxed = declared(tools.read_file_tool)
    assert sandboxed == declared(tools.plain_read_file_tool, "read_file_plain", "read_file")
    assert sandboxed["description"].startswith("Read a text file.")
    assert declared(tools.injected) == declared(tools.plain_injected, "plain_injected", "injected")
    assert list(declared(tools.injected)["parameters_json_schema"]["properties"]) == ["text"]


def test_a_renamed_tool_context_stays_on_the_host(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    (plain,) = seen(
        run(InMemoryRunner(app=app([("plain_injected", {"text": "hi"})], [tools.plain_injected])))
    )
    assert plain.text == f"hi ctx=Context pid={os.getpid()}"
    plugin = SandboxPlugin(sandboxes_config=made.config)
    (result,) = seen(
        run(InMemoryRunner(app=app([("injected", {"text": "hi"})], [tools.injected], plugin=plugin)))
    )
    text, _, pid = result.text.rpartition(" pid=")
    assert (text, result.error) == ("hi ctx=NoneType", False)
    assert int(pid) != os.getpid()


@pytest.mark.parametrize("tool", ["remember", "remember_async"])
def test_a_host_tool_uses_the_session_state(files: tuple[Files, ModuleType], tool: str) -> None:
    made, tools = files
    runner = InMemoryRunner(
        app=app(
            [(tool, {"text": "four"})],
            [getattr(tools, tool)],
            plugin=SandboxPlugin(sandboxes_config=made.config),
        )
    )
    events = run(runner)
    assert seen(events) == [seen(events)[0]] and seen(events)[0].text == "stored 4"
    (session,) = asyncio.run(runner.session_service.list_sessions(app_name="files", user_id="user")).sessions
    stored = asyncio.run(
        runner.session_service.get_session(app_name="files", user_id="user", session_id=session.id)
    )
    assert stored is not None and stored.state["length"] == 4


def test_require_confirmation_is_adks(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    events = run(InMemoryRunner(app=app([("read_file", {"path": made.notes})], [tools.confirmed_read])))
    assert responses(events)[0] == {
        "error": "This tool call requires confirmation, please approve or reject."
    }


def test_a_direct_call_returns_the_error_response(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    with sandboxes(sandboxes_config=made.config):
        assert tools.read_function(made.secret) == {"error": made.refused}
        assert tools.read_function(made.notes) == "one\ntwo\n"


def test_the_plugin_opens_the_sandbox_for_an_async_run(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    runner = InMemoryRunner(
        app=app(
            [("body_pid", {}), ("body_pid", {})],
            [tools.body_pid],
            plugin=SandboxPlugin(sandboxes_config=made.config),
        )
    )

    async def go() -> list[Any]:
        session = await runner.session_service.create_session(app_name="files", user_id="user")
        message = types.Content(role="user", parts=[types.Part(text="go")])
        return [e async for e in runner.run_async(user_id="user", session_id=session.id, new_message=message)]

    first, second = seen(asyncio.run(go()))
    assert first == second and int(first.text) != os.getpid()
    assert_closed(tools)


class FailingLlm(ScriptedLlm):
    """Calls the tools, then fails: the run raises."""

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> Any:
        done = sum(1 for c in llm_request.contents for p in c.parts or () if p.function_response is not None)
        if done >= len(self.calls):
            raise RuntimeError("the model's service is down")
        async for response in super().generate_content_async(llm_request, stream):
            yield response


def test_the_plugin_closes_the_sandbox_after_a_failed_run(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    agent = LlmAgent(
        name="agent",
        model=FailingLlm(calls=[("read_file", {"path": made.notes})]),
        tools=[tools.read_file_tool],
    )
    runner = InMemoryRunner(
        app=App(name="files", root_agent=agent, plugins=[SandboxPlugin(sandboxes_config=made.config)])
    )
    events: list[Any] = []
    with pytest.raises(RuntimeError, match="the model's service is down"):
        events.extend(run(runner))
    assert_closed(tools)


def test_concurrent_runs_share_one_child(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    runner = InMemoryRunner(
        app=app(
            [("body_pid", {"delay": 0.2})],
            [tools.body_pid],
            plugin=SandboxPlugin(sandboxes_config=made.config),
        )
    )
    message = types.Content(role="user", parts=[types.Part(text="go")])

    async def one() -> list[Any]:
        session = await runner.session_service.create_session(app_name="files", user_id="user")
        return [e async for e in runner.run_async(user_id="user", session_id=session.id, new_message=message)]

    async def both() -> list[list[Any]]:
        return list(await asyncio.gather(one(), one()))

    (first,), (second,) = (seen(events) for events in asyncio.run(both()))
    assert first == second and int(first.text) != os.getpid()
    assert_closed(tools)


def test_closing_the_runner_closes_a_sandbox_left_open(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    plugin = SandboxPlugin(sandboxes_config=made.config)
    runner = InMemoryRunner(app=app([("body_pid", {})], [tools.body_pid], plugin=plugin))

    async def go() -> None:
        session = await runner.session_service.create_session(app_name="files", user_id="user")
        message = types.Content(role="user", parts=[types.Part(text="go")])
        events = runner.run_async(user_id="user", session_id=session.id, new_message=message)
        await anext(events)  # the run is under way: the sandbox is open
        assert int(tools.plain_pid()) != os.getpid()
        await runner.close()  # closes the plugins (the run generator is left unfinished)
        await events.aclose()

    asyncio.run(go())
    assert_closed(tools)


def test_the_public_names() -> None:
    import pysandboxes_google_adk

    assert pysandboxes_google_adk.__all__ == [
        "HostFunctionTool",
        "SandboxPlugin",
        "SandboxedFunctionTool",
        "host_function",
        "sandboxed_function",
    ]
