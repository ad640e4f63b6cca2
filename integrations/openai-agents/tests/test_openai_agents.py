"""What is particular to openai-agents: the preset ``failure_error_function`` (a refusal is text,
other exceptions keep the application's handling), ``function_tool``'s arguments and forms, the
``RunContextWrapper`` / ``ToolContext`` first parameter on the host, sync and async tools in one
run, ``Runner.run`` / ``run_sync`` / ``run_streamed``, ``SandboxRunHooks`` (handoffs, concurrent
runs, a run that raises) and complete mode under ``python-sb``."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agents import (
    Agent,
    MaxTurnsExceeded,
    RunConfig,
    Runner,
    ToolErrorFormatterArgs,
    UserError,
    function_tool,
)
from agents.items import ToolCallOutputItem

import pysandboxes_conformance
from pysandboxes import SandBoxError, sandbox_denials, sandboxes
from pysandboxes_openai_agents import REFUSED, SandboxRefusal, SandboxRunHooks, sandboxed_function_tool

from .conftest import ENVIRONMENT, Recorded, ScriptedModel, output_text, run_async

TOOLS = '''
    """The tools of these tests, made by pysandboxes-openai-agents and, for comparison, by
    openai-agents alone."""

    import asyncio
    import os
    import time
    from typing import Any

    from agents import RunContextWrapper, function_tool
    from agents.tool_context import ToolContext
    from pysandboxes import sandbox
    from pysandboxes_openai_agents import SandboxRunHooks, host_function_tool, sandboxed_function_tool

    ERRORS = []


    def tell(ctx, error):
        """An application's failure_error_function."""
        ERRORS.append(error)
        return f"the application says: {type(error).__name__}"


    @sandboxed_function_tool
    def read_file(path: str) -> str:
        """Read a text file."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_function_tool(on_denial="raise")
    def read_or_raise(path: str) -> str:
        """Read a text file; a refusal is the framework's."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_function_tool(on_denial="raise", failure_error_function=None)
    def read_or_end(path: str) -> str:
        """Read a text file; any exception ends the run."""
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_function_tool(failure_error_function=tell)
    def read_or_tell(path: str) -> str:
        """Read a text file, or fail with ValueError for an empty path."""
        if not path:
            raise ValueError("no path")
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_function_tool(failure_error_function=None)
    def read_or_fail(path: str) -> str:
        """Read a text file, or fail with ValueError for an empty path."""
        if not path:
            raise ValueError("no path")
        with open(path, encoding="utf-8") as f:
            return f.read()


    @sandboxed_function_tool
    def fail(message: str) -> str:
        """Raise ValueError(message)."""
        raise ValueError(message)


    @function_tool(name_override="fail")
    def plain_fail(message: str) -> str:
        """Raise ValueError(message)."""
        raise ValueError(message)


    @sandboxed_function_tool
    def body_pid() -> int:
        """The process the sync body runs in."""
        return os.getpid()


    @sandboxed_function_tool
    async def async_pid(delay: float = 0.0) -> int:
        """The process the async body runs in."""
        await asyncio.sleep(delay)
        return os.getpid()


    @sandboxed_function_tool(sandbox_timeout=1)
    def slow() -> str:
        """Sleep longer than the sandbox allows."""
        time.sleep(60)
        return "woke up"


    @sandbox
    def plain_pid() -> int:
        return os.getpid()


    def head(path: str, lines: int = 1) -> str:
        """Read the first lines of a file.

        Args:
            path: The file to read.
            lines: How many lines.
        """
        with open(path, encoding="utf-8") as f:
            return "".join(f.readlines()[:lines])


    ARGUMENTS = {"name_override": "first_lines", "description_override": "The first lines.", "strict_mode": False}
    first_lines = sandboxed_function_tool(head, **ARGUMENTS)
    plain_first_lines = function_tool(head, **ARGUMENTS)


    @sandboxed_function_tool(use_docstring_info=False)
    def undocumented(path: str) -> str:
        """Not shown to the model."""
        return path


    @function_tool(name_override="undocumented", use_docstring_info=False)
    def plain_undocumented(path: str) -> str:
        """Not shown to the model."""
        return path


    @sandboxed_function_tool
    def who(ctx: RunContextWrapper[Any], text: str) -> str:
        """What reached the body in place of the run context.

        Args:
            text: Any text.
        """
        return f"{text} ctx={type(ctx).__name__} pid={os.getpid()}"


    @function_tool(name_override="who")
    def plain_who(ctx: RunContextWrapper[Any], text: str) -> str:
        """What reached the body in place of the run context.

        Args:
            text: Any text.
        """
        return f"{text} ctx={type(ctx).__name__} pid={os.getpid()}"


    @sandbox
    def _count(text: str) -> int:
        return len(text)


    @host_function_tool
    def remember(ctx: ToolContext[Any], text: str) -> str:
        """Keep in the application's context what the sandboxed body measured."""
        ctx.context["length"] = _count(text)
        return f"{ctx.tool_name} stored {ctx.context['length']} host={os.getpid()}"


    @host_function_tool
    def host_read(ctx: ToolContext[Any], path: str) -> str:
        """A host tool whose sandboxed body is refused."""
        return _read(path)


    @sandbox
    def _read(path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return f.read()
'''


class Files:
    """A project: the rule file (``data/`` readable), ``data/notes.txt``, ``secret.txt``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".py-sandboxes").write_text("os-sandbox=landlock\nexpose-ro=./data\n", encoding="utf-8")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("one\ntwo\n", encoding="utf-8")
        (root / "secret.txt").write_text("s3cret", encoding="utf-8")
        (root / "oa_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")

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
    made = Files(tmp_path_factory.mktemp("openai-agents-files"))
    sys.path.insert(0, str(made.root))
    return made, importlib.import_module("oa_files_tools")


def agent(calls: list[tuple[str, dict[str, Any]]], tools: list[Any], **kwargs: Any) -> Agent[Any]:
    return Agent(
        name="files", instructions="use the tools", tools=tools, model=ScriptedModel(calls), **kwargs
    )


def outputs(result: Any) -> list[str]:
    return [output_text(i) for i in result.new_items if isinstance(i, ToolCallOutputItem)]


def assert_closed(tools: ModuleType) -> None:
    with pytest.raises(SandBoxError, match="called outside any sandbox"):
        tools.plain_pid()


# -- refusals and other exceptions -------------------------------------------------------------


def test_a_refusal_is_text_for_the_model_and_the_run_goes_on(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    hooks = SandboxRunHooks(sandboxes_config=made.config)
    with Recorded([tools.read_file], []) as recorded:
        recorded.model.calls = [("read_file", {"path": made.secret}), ("read_file", {"path": made.notes})]
        result = Runner.run_sync(recorded.agent, "go", hooks=hooks)
    assert outputs(result) == [REFUSED + made.refused, "one\ntwo\n"]
    assert [s.error for s in recorded.seen(result)] == [True, False]  # the framework's error path
    assert result.final_output == "done"  # the model answered last
    assert_closed(tools)


def test_on_denial_raise_leaves_the_refusal_to_the_framework(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    hooks = SandboxRunHooks(sandboxes_config=made.config)
    result = Runner.run_sync(
        agent([("read_or_raise", {"path": made.secret})], [tools.read_or_raise]), "go", hooks=hooks
    )
    assert outputs(result) == ["An error occurred while running the tool. Please try again."]
    assert_closed(tools)
    with sandboxes(sandboxes_config=made.config), pytest.raises(UserError) as raised:
        Runner.run_sync(agent([("read_or_end", {"path": made.secret})], [tools.read_or_end]), "go")
    assert isinstance(raised.value, UserError)  # the framework's: "Error running tool read_or_end: ..."
    assert made.refused in sandbox_denials(raised.value)[0]
    assert not isinstance(raised.value.__cause__, SandboxRefusal)  # the refusal itself


def test_other_exceptions_go_to_the_applications_failure_error_function(
    files: tuple[Files, ModuleType],
) -> None:
    made, tools = files
    tools.ERRORS.clear()
    calls = [("read_or_tell", {"path": ""}), ("read_or_tell", {"path": made.secret})]
    with sandboxes(sandboxes_config=made.config):
        result = Runner.run_sync(agent(calls, [tools.read_or_tell]), "go")
    assert outputs(result) == ["the application says: ValueError", REFUSED + made.refused]
    assert [type(e).__name__ for e in tools.ERRORS] == ["ValueError"]  # refusals are the adapter's


def test_the_runs_tool_error_formatter_applies_as_to_a_plain_tool(files: tuple[Files, ModuleType]) -> None:
    made, tools = files

    def formatter(args: ToolErrorFormatterArgs[Any]) -> str:
        return f"{args.kind} in {args.tool_name}: {type(args.error).__name__}"

    config = RunConfig(tool_error_formatter=formatter)
    calls = [("fail", {"message": "no"}), ("read_file", {"path": made.secret})]
    with sandboxes(sandboxes_config=made.config):
        result = Runner.run_sync(agent(calls, [tools.fail, tools.read_file]), "go", run_config=config)
    plain = Runner.run_sync(agent(calls[:1], [tools.plain_fail]), "go", run_config=config)
    assert outputs(result) == ["tool_exception in fail: ValueError", REFUSED + made.refused]
    assert outputs(plain) == outputs(result)[:1]


def test_failure_error_function_none_raises_other_exceptions_only(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    with sandboxes(sandboxes_config=made.config):
        result = Runner.run_sync(agent([("read_or_fail", {"path": made.secret})], [tools.read_or_fail]), "go")
        assert outputs(result) == [REFUSED + made.refused]
        with pytest.raises(UserError, match="Error running tool read_or_fail: no path") as raised:
            Runner.run_sync(agent([("read_or_fail", {"path": ""})], [tools.read_or_fail]), "go")
    assert isinstance(raised.value.__cause__, ValueError)  # as function_tool(failure_error_function=None)


def test_the_sandbox_timeout_is_an_error_for_the_model(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    with sandboxes(sandboxes_config=made.config):
        result = Runner.run_sync(agent([("slow", {}), ("body_pid", {})], [tools.slow, tools.body_pid]), "go")
    timed_out, pid = outputs(result)
    assert timed_out == "An error occurred while running the tool. Please try again."
    assert int(pid) != os.getpid()  # the run went on, in a sandbox


# -- what the framework sees -------------------------------------------------------------------


def schema(tool: Any) -> dict[str, Any]:
    return {
        "description": tool.description,
        "parameters": tool.params_json_schema,
        "strict": tool.strict_json_schema,
    }


def test_the_decorators_arguments_and_forms_are_function_tools(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    assert tools.first_lines.name == "first_lines"
    assert schema(tools.first_lines) == schema(tools.plain_first_lines)
    assert (tools.first_lines.description, tools.first_lines.strict_json_schema) == (
        "The first lines.",
        False,
    )
    assert schema(tools.undocumented) == schema(tools.plain_undocumented)
    assert tools.undocumented.description == ""
    # the run context is not a parameter the model sees; the docstring's Args are
    assert schema(tools.who) == schema(tools.plain_who)
    assert list(tools.who.params_json_schema["properties"]) == ["text"]
    assert tools.who.params_json_schema["properties"]["text"]["description"] == "Any text."


def test_function_tools_own_keywords_are_checked(files: tuple[Files, ModuleType]) -> None:
    with pytest.raises(TypeError, match="no_such_argument"):
        sandboxed_function_tool(no_such_argument=True)
    with pytest.raises(ValueError, match="on_denial='stop'"):
        sandboxed_function_tool(on_denial="stop")


# -- the run context stays on the host ---------------------------------------------------------


class Unpicklable:
    """An application context holding a lock: it cannot cross to the sandbox."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


def test_the_run_context_stays_on_the_host(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    context = Unpicklable()
    plain = Runner.run_sync(agent([("who", {"text": "hi"})], [tools.plain_who]), "go", context=context)
    assert outputs(plain) == [f"hi ctx=ToolContext pid={os.getpid()}"]
    hooks = SandboxRunHooks(sandboxes_config=made.config)
    result = Runner.run_sync(
        agent([("who", {"text": "hi"})], [tools.who]), "go", context=context, hooks=hooks
    )
    (seen,) = outputs(result)
    text, _, pid = seen.rpartition(" pid=")
    assert text == "hi ctx=NoneType" and int(pid) != os.getpid()


def test_a_host_tool_uses_the_run_context(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    context: dict[str, Any] = {}
    hooks = SandboxRunHooks(sandboxes_config=made.config)
    calls = [("remember", {"text": "four"}), ("host_read", {"path": made.secret})]
    result = Runner.run_sync(
        agent(calls, [tools.remember, tools.host_read]), "go", context=context, hooks=hooks
    )
    assert outputs(result) == [f"remember stored 4 host={os.getpid()}", REFUSED + made.refused]
    assert context == {"length": 4}
    assert_closed(tools)


# -- sync and async tools, the Runner's entry points -------------------------------------------


def test_sync_and_async_tools_share_the_child_in_runner_run(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    hooks = SandboxRunHooks(sandboxes_config=made.config)
    calls = [("body_pid", {}), ("async_pid", {"delay": 0.01}), ("body_pid", {})]
    result = run_async(Runner.run(agent(calls, [tools.body_pid, tools.async_pid]), "go", hooks=hooks))
    first, second, third = outputs(result)
    assert first == second == third and int(first) != os.getpid()
    assert_closed(tools)


def test_parallel_tool_calls_of_one_response_share_the_child(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    hooks = SandboxRunHooks(sandboxes_config=made.config)
    step = [("body_pid", {}), ("async_pid", {"delay": 0.05}), ("body_pid", {}), ("async_pid", {})]
    result = Runner.run_sync(agent([step], [tools.body_pid, tools.async_pid]), "go", hooks=hooks)
    pids = outputs(result)
    assert len(pids) == 4 and len(set(pids)) == 1 and int(pids[0]) != os.getpid()
    assert_closed(tools)


def test_run_streamed_opens_and_closes_the_sandbox(files: tuple[Files, ModuleType]) -> None:
    made, tools = files

    class Streaming(ScriptedModel):
        """Streams each scripted response as one completed event."""

        async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            from openai.types.responses import Response, ResponseCompletedEvent

            response = await self.get_response(*args, **kwargs)
            yield ResponseCompletedEvent(
                type="response.completed",
                sequence_number=0,
                response=Response(
                    id="resp",
                    created_at=0,
                    model="scripted",
                    object="response",
                    output=response.output,
                    parallel_tool_calls=False,
                    tool_choice="auto",
                    tools=[],
                ),
            )

    made_agent = Agent(
        name="files", tools=[tools.body_pid], model=Streaming([("body_pid", {}), ("body_pid", {})])
    )

    async def streamed() -> Any:
        result = Runner.run_streamed(made_agent, "go", hooks=SandboxRunHooks(sandboxes_config=made.config))
        async for _ in result.stream_events():
            pass
        return result

    first, second = outputs(run_async(streamed()))
    assert first == second and int(first) != os.getpid()
    assert_closed(tools)


# -- SandboxRunHooks ---------------------------------------------------------------------------


def test_a_handoff_keeps_the_runs_sandbox(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    second = Agent(name="second", tools=[tools.body_pid], model=ScriptedModel([("body_pid", {})]))
    first = Agent(
        name="first",
        tools=[tools.body_pid],
        handoffs=[second],
        model=ScriptedModel([("body_pid", {}), ("transfer_to_second", {})]),
    )
    result = Runner.run_sync(first, "go", hooks=SandboxRunHooks(sandboxes_config=made.config))
    assert result.last_agent is second
    before, after = outputs(result)  # one tool call of each agent
    assert before == after and int(before) != os.getpid()
    assert_closed(tools)


def test_an_agent_as_tool_runs_its_tools_in_the_outer_runs_sandbox(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    inner = Agent(name="inner", tools=[tools.body_pid], model=ScriptedModel([("body_pid", {})]))
    nested = inner.as_tool(tool_name="ask_inner", tool_description="Ask the inner agent.")
    outer = agent([("ask_inner", {"input": "go"}), ("body_pid", {})], [nested, tools.body_pid])
    result = Runner.run_sync(outer, "go", hooks=SandboxRunHooks(sandboxes_config=made.config))
    answered, outer_pid = outputs(result)
    (inner_output,) = [
        i for i in inner.model.inputs[-1] if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert answered == "done" and inner_output["output"] == outer_pid and int(outer_pid) != os.getpid()
    assert_closed(tools)


def test_concurrent_runs_share_one_child(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    hooks = SandboxRunHooks(sandboxes_config=made.config)
    agents = [agent([("async_pid", {"delay": 0.2})], [tools.async_pid]) for _ in range(2)]

    async def both() -> list[Any]:
        return await asyncio.gather(*(Runner.run(a, "go", hooks=hooks) for a in agents))

    (first,), (second,) = (outputs(r) for r in run_async(both()))
    assert first == second and int(first) != os.getpid()
    assert_closed(tools)


def test_a_run_that_raises_leaves_the_sandbox_to_close(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    hooks = SandboxRunHooks(sandboxes_config=made.config)
    looping = agent([("body_pid", {})] * 5, [tools.body_pid])
    with pytest.raises(MaxTurnsExceeded):
        Runner.run_sync(looping, "go", hooks=hooks, max_turns=2)
    assert tools.plain_pid() != os.getpid()  # openai-agents has no hook for a run that raised
    hooks.close()
    assert_closed(tools)
    hooks.close()  # nothing left: a no-op


# -- complete mode -----------------------------------------------------------------------------

PROGRAM = """
    import json
    import os
    import sys

    from agents import Agent, Runner, set_tracing_disabled

    import oa_files_tools as tools
    from conftest import ScriptedModel, output_text
    from agents.items import ToolCallOutputItem

    set_tracing_disabled(True)
    calls = [
        ("read_file", {"path": sys.argv[1]}),
        ("read_file", {"path": sys.argv[2]}),
        ("body_pid", {}),
        ("async_pid", {}),
    ]
    made = [tools.read_file, tools.body_pid, tools.async_pid]
    agent = Agent(name="files", tools=made, model=ScriptedModel(calls))
    result = Runner.run_sync(agent, "go", hooks=tools.SandboxRunHooks())
    seen = [output_text(i) for i in result.new_items if isinstance(i, ToolCallOutputItem)]
    print(json.dumps({"pid": os.getpid(), "seen": seen}))
"""


@pytest.mark.parametrize("threads", [True, False], ids=["threads-allowed", "threads-refused"])
def test_under_python_sb_the_tools_run_in_the_program(files: tuple[Files, ModuleType], threads: bool) -> None:
    """openai-agents runs a sync tool on a worker thread: refused without the rule, as text."""
    made, _ = files
    app = made.root / f"complete-{threads}"  # the program and its tools; secret.txt stays outside
    app.mkdir()
    program = app / "program.py"
    program.write_text(textwrap.dedent(PROGRAM), encoding="utf-8")
    (app / "oa_files_tools.py").write_text(textwrap.dedent(TOOLS), encoding="utf-8")
    adapter = Path(__file__).resolve().parents[1] / "src"
    conformance = Path(pysandboxes_conformance.__file__).resolve().parents[1]
    tests = Path(__file__).resolve().parent
    rules = app / ".py-sandboxes"
    rules.write_text(
        "os-sandbox=landlock\n"
        + "".join(f"expose-ro={d}\n" for d in (app, made.root / "data", tests, adapter, conformance))
        + "python-import=*\n"
        + ("python-api=ALLOW:threads\n" if threads else ""),
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("python-sb")),
            f"--pysandboxes-config={rules}",
            str(program),
            made.secret,
            made.notes,
        ],
        cwd=app,
        env={
            "HOME": str(made.root),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": os.pathsep.join([str(app), str(tests)]),
            **ENVIRONMENT,
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    seen = report["seen"]
    assert int(seen[3]) == report["pid"]  # an async body runs in the program, no thread needed
    if not threads:
        assert seen == [
            f"{REFUSED}RuleApiPermissionError: threading.Thread.start() is denied by the API guard (category: threads).",
        ] * 3 + [seen[3]]
        return
    refused, notes, pid, _ = seen
    assert refused.startswith(REFUSED + "RuleFileNotFoundError: ") and made.secret in refused
    assert "Add `" not in refused
    assert notes == "one\ntwo\n" and int(pid) == report["pid"]  # the body runs in the program


def test_the_public_names() -> None:
    import pysandboxes_openai_agents

    assert pysandboxes_openai_agents.__all__ == [
        "FRAMEWORK",
        "REFUSED",
        "SandboxRefusal",
        "SandboxRunHooks",
        "host_function_tool",
        "sandboxed_function_tool",
    ]
    assert function_tool is not None
