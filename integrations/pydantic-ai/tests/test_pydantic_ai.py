"""What is particular to pydantic-ai: ``@sandboxed_tool_plain(agent)`` / ``@sandboxed_tool(agent)``
take ``agent.tool_plain`` / ``agent.tool``'s arguments and give the same tool definitions; the
``RunContext`` (and its deps) stays on the host; a refusal is a failed tool return that spends no
retry, while the body's ``ModelRetry`` crosses back as itself; ``SandboxedToolset`` opens the
sandbox for each run (failed and concurrent runs too) and takes ``@sandbox`` functions of other
modules; async tools; ``@sandboxed_tool(agent)`` under ``python-sb`` gets the real context."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pysandboxes import SandBoxError

from .conftest import returns, scripted, seen

HELPERS = '''
    """A module whose @sandbox function another module gives to a SandboxedToolset."""

    import os

    from pysandboxes import sandbox


    @sandbox
    def measure(text: str) -> str:
        """Measure a text."""
        return f"{len(text)} pid={os.getpid()}"
'''

TOOLS = '''
    """The tools of these tests, made by pysandboxes-pydantic-ai and, for comparison, by pydantic-ai."""

    import asyncio
    import os
    from dataclasses import dataclass

    from pydantic_ai import Agent, ModelRetry, RunContext
    from pysandboxes import sandbox
    from pysandboxes_pydantic_ai import SandboxedToolset, host_tool, sandboxed_tool, sandboxed_tool_plain

    from pydantic_ai_files_helpers import measure


    @dataclass
    class Deps:
        user: str


    agent = Agent(deps_type=Deps)  # the adapter's decorators
    plain = Agent(deps_type=Deps)  # pydantic-ai's own
    lifecycle = SandboxedToolset()  # opens the sandbox for the runs of `agent`


    @sandboxed_tool_plain(agent, name="first_line", description="The first line of a file.", retries=3)
    def head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @plain.tool_plain(name="first_line", description="The first line of a file.", retries=3)
    def plain_head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    @sandboxed_tool(agent)
    def whoami(ctx: RunContext[Deps], text: str) -> str:
        """Say what reached the body.

        Args:
            text: Any text.
        """
        got = "none" if ctx is None else f"{type(ctx).__name__}({ctx.deps.user})"
        return f"{text} ctx={got} pid={os.getpid()}"


    @plain.tool(name="whoami")
    def plain_whoami(ctx: RunContext[Deps], text: str) -> str:
        """Say what reached the body.

        Args:
            text: Any text.
        """
        got = "none" if ctx is None else f"{type(ctx).__name__}({ctx.deps.user})"
        return f"{text} ctx={got} pid={os.getpid()}"


    @sandboxed_tool(agent)
    async def async_whoami(ctx: RunContext[Deps], delay: float = 0.0) -> str:
        """The same, async."""
        await asyncio.sleep(delay)
        return f"ctx={'none' if ctx is None else type(ctx).__name__} pid={os.getpid()}"


    @sandbox
    def _greeting(user: str, text: str) -> str:
        return f"{text}, {user} (body={os.getpid()})"


    @host_tool(agent)
    def greet(ctx: RunContext[Deps], text: str) -> str:
        """Greet the run's user: the deps stay on the host."""
        return f"host={os.getpid()} " + _greeting(ctx.deps.user, text)


    @sandboxed_tool_plain(agent)
    def read_file(path: str) -> str:
        """Read a text file."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_tool_plain(agent, retries=2)
    def read_or_retry(path: str) -> str:
        """Read a text file; one that cannot be read asks the model for another."""
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError as exc:
            raise ModelRetry(f"cannot read {os.path.basename(path)}: try a file under data/") from exc


    @sandboxed_tool_plain(agent, retries=1)
    def at_least_two(n: int) -> int:
        """Return n, which must be at least 2."""
        if n < 2:
            raise ModelRetry("n must be at least 2")
        return n


    @plain.tool_plain(name="at_least_two", retries=1)
    def plain_at_least_two(n: int) -> int:
        """Return n, which must be at least 2."""
        if n < 2:
            raise ModelRetry("n must be at least 2")
        return n


    def body_pid() -> int:
        """The process the body runs in."""
        return os.getpid()


    async def async_body_pid(delay: float = 0.0) -> int:
        """The process the async body runs in."""
        await asyncio.sleep(delay)
        return os.getpid()


    def fail(message: str) -> str:
        """Raise ValueError(message)."""
        raise ValueError(message)


    def read_text(path: str) -> str:
        """Read a text file."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    box = SandboxedToolset([body_pid, async_body_pid, fail, read_text, measure])


    @box.tool
    def box_whoami(ctx: RunContext[Deps]) -> str:
        """What reached the body of a toolset's context tool."""
        return f"ctx={'none' if ctx is None else type(ctx).__name__} pid={os.getpid()}"
'''


class Files:
    """A project: the rule file (``data/`` readable), ``data/notes.txt``, ``secret.txt``, the
    tools module and the helpers module."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".py-sandboxes").write_text("os-sandbox=landlock\nexpose-ro=./data\n", encoding="utf-8")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "pydantic_ai_files_helpers.py").write_text(textwrap.dedent(HELPERS), encoding="utf-8")
        (root / "pydantic_ai_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")

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
    made = Files(tmp_path_factory.mktemp("pydantic-ai-files"))
    sys.path.insert(0, str(made.root))
    return made, importlib.import_module("pydantic_ai_files_tools")


def drive(coroutine: Any) -> Any:
    """Run a coroutine on a loop of its own. Not ``asyncio.run``: it unsets the thread's event
    loop, and the loop pydantic-ai's ``run_sync`` keeps there would be dropped unclosed."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


def run(agent: Agent, calls: list[tuple[str, dict[str, Any]]], **kwargs: Any) -> list[ModelMessage]:
    return agent.run_sync("go", model=scripted(calls), **kwargs).all_messages()


def definitions(agent: Agent, **kwargs: Any) -> dict[str, Any]:
    """The tool definitions the model is given, by name (less ``toolset_id``, never sent)."""
    given: dict[str, Any] = {}

    def look(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        given.update({t.name: dataclasses.replace(t, toolset_id=None) for t in info.function_tools})
        return ModelResponse(parts=[TextPart("done")])

    agent.run_sync("go", model=FunctionModel(look), **kwargs)
    return given


def assert_closed(tools: ModuleType) -> None:
    with pytest.raises(SandBoxError, match="called outside any sandbox"):
        tools._greeting("closed", "?")


# -- the decorators ------------------------------------------------------------------------------


def test_the_decorators_take_pydantic_ais_arguments_and_give_its_definitions(
    files: tuple[Files, ModuleType],
) -> None:
    _, tools = files
    sandboxed, plain = definitions(tools.agent), definitions(tools.plain)
    for name in ("first_line", "whoami", "at_least_two"):
        assert sandboxed[name] == plain[name]
    assert (
        sandboxed["first_line"].description,
        list(sandboxed["whoami"].parameters_json_schema["properties"]),
    ) == (
        "The first line of a file.",
        ["text"],  # the RunContext is not a parameter the model sees
    )
    head = tools.agent._function_toolset.tools["first_line"]
    assert head.max_retries == 3


def test_the_run_context_stays_on_the_host(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    (plain,) = seen(run(tools.plain, [("whoami", {"text": "hi"})], deps=tools.Deps("ada")))
    assert plain.text == f"hi ctx=RunContext(ada) pid={os.getpid()}"
    (sandboxed,) = seen(
        run(tools.agent, [("whoami", {"text": "hi"})], deps=tools.Deps("ada"), toolsets=[tools.lifecycle])
    )
    text, _, pid = sandboxed.text.rpartition(" pid=")
    assert (text, sandboxed.error) == ("hi ctx=none", False)
    assert int(pid) != os.getpid()


def test_a_host_tool_reads_the_deps_and_sandboxes_its_body(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    (greeting,) = seen(
        run(tools.agent, [("greet", {"text": "hello"})], deps=tools.Deps("ada"), toolsets=[tools.lifecycle])
    )
    head, _, body = greeting.text.rpartition(" (body=")
    assert (head, greeting.error) == (f"host={os.getpid()} hello, ada", False)
    assert int(body.rstrip(")")) != os.getpid()
    assert_closed(tools)


def test_an_async_context_tool_runs_in_the_child(files: tuple[Files, ModuleType]) -> None:
    _, tools = files

    async def go() -> list[ModelMessage]:
        result = await tools.agent.run(
            "go",
            model=scripted([("async_whoami", {"delay": 0.01}), ("whoami", {"text": "x"})]),
            deps=tools.Deps("ada"),
            toolsets=[tools.lifecycle],
        )
        return result.all_messages()

    first, second = seen(drive(go()))
    assert first.text.startswith("ctx=none pid=") and not first.error
    assert first.text.rpartition("=")[2] == second.text.rpartition("=")[2] != str(os.getpid())
    assert_closed(tools)


# -- refusals and ModelRetry ---------------------------------------------------------------------


def test_a_refusal_is_a_failed_return_that_spends_no_retry(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    calls = [("read_file", {"path": made.secret})] * 3 + [("read_file", {"path": made.notes})]
    messages = run(tools.agent, calls, deps=tools.Deps("ada"), toolsets=[tools.lifecycle])
    parts = returns(messages)
    assert [(p.outcome, p.content) for p in parts] == [("failed", made.refused)] * 3 + [
        ("success", "one\ntwo\n")
    ]
    assert "Add `" not in str(messages)  # the hint is for the developer
    assert messages[-1].parts == [TextPart("done")]  # the model answered last: the run went on


def test_the_bodys_model_retry_keeps_its_meaning(files: tuple[Files, ModuleType]) -> None:
    """The retry prompt, then the corrected call; past the tool's retries, pydantic-ai ends the run
    (with and without the adapter)."""
    _, tools = files
    for agent, toolsets in ((tools.agent, [tools.lifecycle]), (tools.plain, [])):
        messages = run(
            agent,
            [("at_least_two", {"n": 1}), ("at_least_two", {"n": 2})],
            deps=tools.Deps("a"),
            toolsets=toolsets,
        )
        retry, answer = returns(messages)
        assert (retry.outcome, answer.outcome, answer.content) == ("retried", "success", 2)
        assert "n must be at least 2" in retry.model_response_str()
        with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries count of 1"):
            run(agent, [("at_least_two", {"n": 1})] * 3, deps=tools.Deps("a"), toolsets=toolsets)
    assert_closed(tools)


def test_a_model_retry_caused_by_a_refusal_stays_a_retry(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    calls = [("read_or_retry", {"path": made.secret}), ("read_or_retry", {"path": made.notes})]
    retry, answer = returns(run(tools.agent, calls, deps=tools.Deps("a"), toolsets=[tools.lifecycle]))
    assert (
        retry.outcome == "retried"
        and "cannot read secret.txt: try a file under data/" in retry.model_response_str()
    )
    assert (answer.outcome, answer.content) == ("success", "one\ntwo\n")


def test_the_plain_tool_reads_the_refused_file(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    (read,) = seen(run(tools.plain, [("first_line", {"path": made.secret})], deps=tools.Deps("a")))
    assert read.text == "s3cret"


# -- SandboxedToolset ----------------------------------------------------------------------------


def test_the_toolset_opens_the_sandbox_for_the_run_and_closes_it(
    files: tuple[Files, ModuleType], caplog: pytest.LogCaptureFixture
) -> None:
    made, tools = files
    agent = Agent(toolsets=[tools.box], deps_type=tools.Deps)
    calls = [("body_pid", {}), ("async_body_pid", {"delay": 0.01}), ("read_text", {"path": made.secret})]
    with caplog.at_level(logging.INFO, logger="Pysandboxes"):
        sync, async_, refused = seen(run(agent, calls, deps=tools.Deps("a")))
    assert sync == async_ and not sync.error and int(sync.text) != os.getpid()
    assert (refused.text, refused.error) == (made.refused, True)
    assert "no sandbox was open" not in caplog.text
    assert_closed(tools)


def test_the_toolset_closes_the_sandbox_after_a_failed_run(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    agent = Agent(toolsets=[tools.box], deps_type=tools.Deps)
    with pytest.raises(ValueError, match="no such page"):
        run(agent, [("body_pid", {}), ("fail", {"message": "no such page"})], deps=tools.Deps("a"))
    assert_closed(tools)


def test_concurrent_runs_share_one_child(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    agent = Agent(toolsets=[tools.box], deps_type=tools.Deps)

    async def both() -> list[Any]:
        return await asyncio.gather(
            *(
                agent.run("go", model=scripted([("async_body_pid", {"delay": 0.2})]), deps=tools.Deps("a"))
                for _ in range(2)
            )
        )

    (first,), (second,) = (seen(result.all_messages()) for result in drive(both()))
    assert first == second and int(first.text) != os.getpid()
    assert_closed(tools)


def test_parallel_tool_calls_of_one_response_share_the_child(files: tuple[Files, ModuleType]) -> None:
    """pydantic-ai runs the calls of one model response concurrently (sync ones on worker
    threads): each reaches the same child."""
    made, tools = files
    calls = [
        ToolCallPart("body_pid", {}, tool_call_id="a"),
        ToolCallPart("async_body_pid", {"delay": 0.05}, tool_call_id="b"),
        ToolCallPart("read_text", {"path": made.notes}, tool_call_id="c"),
        ToolCallPart("read_text", {"path": made.secret}, tool_call_id="d"),
    ]

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=calls)

    agent = Agent(toolsets=[tools.box], deps_type=tools.Deps)
    result = agent.run_sync("go", model=FunctionModel(respond), deps=tools.Deps("a"))
    by_id = {part.tool_call_id: part for part in returns(result.all_messages())}
    assert by_id["a"].content == by_id["b"].content != os.getpid()
    assert (by_id["c"].outcome, by_id["c"].content) == ("success", "one\ntwo\n")
    assert (by_id["d"].outcome, by_id["d"].content) == ("failed", made.refused)
    assert_closed(tools)


def test_async_with_agent_keeps_one_child_for_its_runs(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    agent = Agent(toolsets=[tools.box], deps_type=tools.Deps)

    async def twice() -> list[Any]:
        async with agent:
            results = [
                await agent.run("go", model=scripted([("body_pid", {})]), deps=tools.Deps("a"))
                for _ in range(2)
            ]
            assert tools._greeting("a", "still open").startswith("still open, a")  # between the runs too
        return results

    (first,), (second,) = (seen(result.all_messages()) for result in drive(twice()))
    assert first == second and int(first.text) != os.getpid()
    assert_closed(tools)


def test_a_sandbox_function_of_an_imported_module_is_a_toolset_tool(files: tuple[Files, ModuleType]) -> None:
    """``measure`` is a @sandbox function of the helpers module, imported before the tools module
    gave it to its SandboxedToolset: the child finds it (the helpers' import registers it)."""
    _, tools = files
    agent = Agent(toolsets=[tools.box], deps_type=tools.Deps)
    (measured,) = seen(run(agent, [("measure", {"text": "four"})], deps=tools.Deps("a")))
    length, _, pid = measured.text.partition(" pid=")
    assert (length, measured.error) == ("4", False) and int(pid) != os.getpid()
    assert definitions(agent, deps=tools.Deps("a"))["measure"].description == "Measure a text."


def test_a_toolsets_context_tool_gets_none_in_the_child(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    agent = Agent(toolsets=[tools.box], deps_type=tools.Deps)
    (whoami,) = seen(run(agent, [("box_whoami", {})], deps=tools.Deps("a")))
    assert whoami.text.startswith("ctx=none pid=") and whoami.text != f"ctx=none pid={os.getpid()}"


def test_the_toolset_splits_its_keywords(files: tuple[Files, ModuleType]) -> None:
    from pysandboxes_pydantic_ai import SandboxedToolset

    made, _ = files
    toolset = SandboxedToolset(
        max_retries=4, id="files", sandboxes_config=str(made.root / ".py-sandboxes"), expose_ro="./data"
    )
    assert (toolset.max_retries, toolset.id, toolset._settings) == (4, "files", {"expose_ro": "./data"})
    with pytest.raises(ValueError, match="on_denial='stop'"):
        SandboxedToolset(on_denial="stop")


# -- complete mode -------------------------------------------------------------------------------

PROGRAM = """
    import os

    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    import pydantic_ai_files_tools as tools


    def respond(messages, info):
        if len(messages) > 1:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("whoami", {"text": "hi"})])


    result = tools.agent.run_sync("go", model=FunctionModel(respond), deps=tools.Deps("ada"))
    (part,) = [p for m in result.all_messages() for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)]
    print(part.content, "program=" + str(os.getpid()))
"""


def test_under_python_sb_a_context_tool_gets_the_run_context(files: tuple[Files, ModuleType]) -> None:
    """Under python-sb the whole program is confined and the body runs in it, its RunContext
    included; its own refusals are still failed returns."""
    import pysandboxes_pydantic_ai

    made, _ = files
    adapter = Path(pysandboxes_pydantic_ai.__file__).parent.parent
    complete = made.root / ".py-sandboxes-complete"
    complete.write_text(
        "os-sandbox=landlock\n"
        + "".join(f"expose-ro={d}\n" for d in (made.root, adapter))
        + "python-import=*\npython-api=ALLOW:threads\n",
        encoding="utf-8",
    )
    (made.root / "complete_program.py").write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("python-sb")),
            f"--pysandboxes-config={complete}",
            "complete_program.py",
        ],
        cwd=made.root,
        env={
            "HOME": str(made.root),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(made.root),
            "OTEL_SDK_DISABLED": "true",
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text, _, program = done.stdout.strip().splitlines()[-1].rpartition(" program=")
    assert text == f"hi ctx=RunContext(ada) pid={program}"


def test_the_public_names() -> None:
    import pysandboxes_pydantic_ai

    assert pysandboxes_pydantic_ai.__all__ == [
        "FRAMEWORK",
        "SandboxedToolset",
        "host_tool",
        "sandboxed_tool",
        "sandboxed_tool_plain",
    ]
