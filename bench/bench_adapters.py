"""Framework adapters (``integrations/``): what a sandboxed tool costs over the plain framework tool.

For each adapter whose environment exists (``.venv-int/<name>``, made by
``scripts/integration-envs.sh``), a driver runs in that environment, in a project under
``/tmp/pysandboxes-bench/adapters/<name>/`` holding ``.py-sandboxes`` (``os-sandbox=landlock``),
``plain_tools.py`` (``add(a, b)`` made a tool by the framework alone) and ``sb_tools.py`` (the
same made by the adapter, plus a bare ``@sandbox`` function). It measures, in 5 fresh processes:

1. **import**: ``import sb_tools`` in the host, the framework included (what the child pays again);
2. **enter**: ``with sandboxes():`` entering and the first call of the sandboxed tool (the child
   starts, confines itself, imports ``sb_tools`` and the framework, answers);
3. **per call**, after warm-up, through the framework's own dispatch (MCP: ``MCPServer.call_tool``;
   LangChain: ``tool.invoke``; agno: ``FunctionCall.execute``; strands: ``DecoratedFunctionTool.stream``;
   crewai: ``Tool.run``; pydantic-ai: ``FunctionSchema.call``; smolagents: ``Tool.__call__``;
   openai-agents: ``FunctionTool.on_invoke_tool``; google-adk: ``FunctionTool.run_async``;
   autogen: ``FunctionTool.run_json``): the plain tool, the sandboxed tool, and the bare ``@sandbox``
   round trip; the adapter's own part is (sandboxed - plain) - round trip.

pysandboxes 0.7.0 has no adapters (its samples hand-write the wrapper and the error-to-text
glue), so its column is n/a.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # bench scripts run as plain files: _common is found next to them
    BYTECODE_NOTE,
    REPO,
    WORK_DIR,
    CommandFailed,
    Row,
    Table,
    format_seconds,
    run_child,
    warm_bytecode,
)

PROCESSES = 5
CALLS = 300
WARMUP = 30

#: per framework: the two tools modules, and the driver's timed call of a tool by name
FRAMEWORKS = {
    "mcp": {
        "plain": """
            from mcp.server.mcpserver import MCPServer

            server = MCPServer("bench")

            @server.tool()
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b
        """,
        "sandboxed": """
            from mcp.server.mcpserver import MCPServer
            from pysandboxes import sandbox
            from pysandboxes_mcp import sandboxed_tool

            server = MCPServer("bench")

            @sandboxed_tool(server)
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            import asyncio

            def caller(module):
                loop = asyncio.new_event_loop()
                server = module.server
                return lambda: loop.run_until_complete(server.call_tool("add", {"a": 1, "b": 2}))

            def function(module):  # what server.tool() registered: the function, or our wrapper
                return module.add
        """,
    },
    "langchain": {
        "plain": """
            from langchain_core.tools import tool

            @tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_langchain import sandboxed_tool

            @sandboxed_tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            def caller(module):
                tool = module.add
                return lambda: tool.invoke({"a": 1, "b": 2})

            def function(module):  # what the StructuredTool calls: the function, or our wrapper
                return module.add.func
        """,
    },
    "agno": {
        "plain": """
            from agno.tools import tool

            @tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_agno import sandboxed_tool

            @sandboxed_tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            import inspect

            from agno.tools.function import FunctionCall

            def caller(module):
                tool = module.add
                return lambda: FunctionCall(function=tool, arguments={"a": 1, "b": 2}).execute()

            def function(module):  # under agno's layers: the function, or our wrapper
                return inspect.unwrap(module.add.entrypoint)
        """,
    },
    "strands": {
        "plain": """
            from strands import tool

            @tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_strands import sandboxed_tool

            @sandboxed_tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            import asyncio

            def caller(module):
                loop = asyncio.new_event_loop()
                tool = module.add
                use = {"toolUseId": "bench", "name": "add", "input": {"a": 1, "b": 2}}

                async def once():
                    async for event in tool.stream(use, {}):
                        last = event
                    return last

                return lambda: loop.run_until_complete(once())

            def function(module):  # what the DecoratedFunctionTool calls: the function, or our wrapper
                return module.add._tool_func
        """,
    },
    "crewai": {
        "plain": """
            from crewai.tools import tool

            @tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_crewai import sandboxed_tool

            @sandboxed_tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            import os

            # imported before the tools: crewai writes under HOME when it is imported; the
            # child's rules below give it the same home
            here = os.path.dirname(os.path.abspath(__file__))
            os.environ.update(
                HOME=os.path.join(here, "home"),
                CREWAI_DISABLE_TELEMETRY="true",
                OTEL_SDK_DISABLED="true",
                CREWAI_TRACING_ENABLED="false",
            )

            def caller(module):  # what crewai's native tool calling calls: BaseTool.run
                tool = module.add
                return lambda: tool.run(a=1, b=2)

            def function(module):  # what the Tool calls: the function, or our wrapper
                return module.add.func
        """,
        # the child imports crewai under the rules: crewai writes under HOME (its settings,
        # storage and a key) and portalocker needs a temporary directory (docs/integrations.md)
        "rules": "env=HOME=${HOME}\nenv=TMPDIR=${HOME}\nexpose-rw=./home\n",
    },
    "pydantic-ai": {
        "plain": """
            from pydantic_ai import FunctionToolset

            toolset = FunctionToolset()

            @toolset.tool_plain
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_pydantic_ai import SandboxedToolset

            toolset = SandboxedToolset()

            @toolset.tool_plain
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        # FunctionToolset.call_tool awaits the tool's FunctionSchema.call (validated arguments;
        # a sync function runs on a worker thread); the RunContext is only read by context tools
        "call": """
            import asyncio

            def caller(module):
                loop = asyncio.new_event_loop()
                call = module.toolset.tools["add"].function_schema.call
                return lambda: loop.run_until_complete(call({"a": 1, "b": 2}, None))

            def function(module):  # what the Tool calls: the function, or our wrapper
                return module.toolset.tools["add"].function
        """,
    },
    "google-adk": {
        "plain": """
            from google.adk.tools import FunctionTool

            @FunctionTool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_google_adk import SandboxedFunctionTool

            @SandboxedFunctionTool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            import asyncio
            from unittest import mock

            from google.adk.tools import ToolContext

            def caller(module):
                loop = asyncio.new_event_loop()
                tool = module.add
                context = mock.create_autospec(ToolContext, instance=True)  # what ADK passes
                args = {"a": 1, "b": 2}
                return lambda: loop.run_until_complete(tool.run_async(args=args, tool_context=context))

            def function(module):  # what the FunctionTool calls: the function, or our wrapper
                return module.add.func
        """,
    },
    "autogen": {
        "plain": """
            from autogen_core.tools import FunctionTool

            def _add(a: int, b: int) -> int:
                return a + b

            add = FunctionTool(_add, description="Add two integers.", name="add")
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_autogen import sandboxed_tool

            @sandboxed_tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            import asyncio

            from autogen_core import CancellationToken

            def caller(module):
                loop = asyncio.new_event_loop()
                tool = module.add
                args = {"a": 1, "b": 2}
                return lambda: loop.run_until_complete(tool.run_json(args, CancellationToken()))

            def function(module):  # what the FunctionTool calls: the function, or our wrapper
                return module.add._func
        """,
    },
    "smolagents": {
        "plain": """
            from smolagents import tool

            @tool
            def add(a: int, b: int) -> int:
                '''Add two integers.

                Args:
                    a: The first.
                    b: The second.
                '''
                return a + b
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_smolagents import sandboxed_tool

            @sandboxed_tool
            def add(a: int, b: int) -> int:
                '''Add two integers.

                Args:
                    a: The first.
                    b: The second.
                '''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            def caller(module):  # as a ToolCallingAgent calls a tool (execute_tool_call)
                tool = module.add
                return lambda: tool(a=1, b=2, sanitize_inputs_outputs=True)

            def function(module):  # the tool's forward: smolagents' wrapper of the function, or ours
                return module.add.forward
        """,
    },
    "openai-agents": {
        "plain": """
            from agents import function_tool

            @function_tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b
        """,
        "sandboxed": """
            from pysandboxes import sandbox
            from pysandboxes_openai_agents import sandboxed_function_tool

            @sandboxed_function_tool
            def add(a: int, b: int) -> int:
                '''Add two integers.'''
                return a + b

            @sandbox
            def bare(a: int, b: int) -> int:
                return a + b
        """,
        "call": """
            import asyncio
            import os

            os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # before the tools module imports agents

            def caller(module):  # FunctionTool.on_invoke_tool: a sync tool runs on a worker thread
                from agents import set_tracing_disabled
                from agents.tool_context import ToolContext

                set_tracing_disabled(True)
                loop = asyncio.new_event_loop()
                tool = module.add
                arguments = '{"a": 1, "b": 2}'

                def once():
                    context = ToolContext(None, tool_name="add", tool_call_id="bench", tool_arguments=arguments)
                    return loop.run_until_complete(tool.on_invoke_tool(context, arguments))

                return once

            def function(module):  # what the FunctionTool calls: the function, or our wrapper
                return module.add.on_invoke_tool._get_wrapped_callable()
        """,
    },
}

DRIVER = """
import json, sys, time
sys.path.insert(0, ".")
from calls import caller, function

started = time.perf_counter()
import sb_tools
imported = time.perf_counter() - started
import plain_tools
from pysandboxes import sandboxes


def timed(call, n):
    for _ in range(WARMUP):
        call()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        call()
        out.append(time.perf_counter() - t)
    return out


sandboxed, wrapper, raw = caller(sb_tools), function(sb_tools), function(plain_tools)
started = time.perf_counter()
with sandboxes():
    sandboxed()
    entered = time.perf_counter() - started
    plain = timed(caller(plain_tools), CALLS)
    tool = timed(sandboxed, CALLS)
    bare = timed(lambda: sb_tools.bare(1, 2), CALLS)
    direct = timed(lambda: wrapper(a=1, b=2), CALLS)
    function = timed(lambda: raw(a=1, b=2), CALLS)
print(json.dumps({"import": imported, "enter": entered, "plain": plain, "tool": tool, "bare": bare,
                  "direct": direct, "function": function}))
"""


def project(name: str, provider: str) -> Path:
    root = WORK_DIR / "adapters" / f"{name}-{provider}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    sources = FRAMEWORKS[name]
    (root / ".py-sandboxes").write_text(f"os-sandbox={provider}\n" + sources.get("rules", ""))
    (root / "home").mkdir()  # the HOME of a framework that writes there (crewai)
    for file, key in (("plain_tools.py", "plain"), ("sb_tools.py", "sandboxed"), ("calls.py", "call")):
        (root / file).write_text(textwrap.dedent(sources[key]).lstrip())
    driver = DRIVER.replace("WARMUP", str(WARMUP)).replace("CALLS", str(CALLS))
    (root / "driver.py").write_text(driver)
    return root


def runs(name: str, python: Path, provider: str) -> tuple[list[dict[str, object]], str]:
    """The driver's reports from PROCESSES fresh processes, and the command."""
    root = project(name, provider)
    command = [str(python), "driver.py"]
    warm_bytecode(command, cwd=root)
    reports = [json.loads(run_child(command, cwd=root).strip().splitlines()[-1]) for _ in range(PROCESSES)]
    return reports, f"{python.parent.parent.relative_to(REPO)}/bin/python driver.py in {root}"


def pooled(reports: list[dict[str, object]], key: str) -> float:
    values = [report[key] for report in reports]
    if isinstance(values[0], list):
        return statistics.median([value for run in values for value in run])  # type: ignore[attr-defined]
    return statistics.median(values)  # type: ignore[type-var]


def measure(name: str, python: Path) -> Table:
    confined, where = runs(name, python, "landlock")
    unconfined, where_none = runs(name, python, "none")
    imported, entered = pooled(confined, "import"), pooled(confined, "enter")
    plain, tool, bare = pooled(confined, "plain"), pooled(confined, "tool"), pooled(confined, "bare")
    direct, bare_direct = pooled(confined, "direct"), pooled(confined, "bare")
    layers = pooled(unconfined, "direct") - pooled(unconfined, "function")
    rows = [
        Row("import of the tools module (framework included)", imported, None, where),
        Row(
            "`with sandboxes():` enter + first sandboxed call",
            entered,
            None,
            where,
            target=f"≤ import + 50 ms = {format_seconds(imported + 0.05)}: "
            + ("met" if entered <= imported + 0.05 else "not met"),
        ),
        Row("plain framework tool call, p50", plain, None, where),
        Row("sandboxed tool call, p50", tool, None, where),
        Row("sandboxed - plain, per call", tool - plain, None, where),
        Row("bare @sandbox call, back to back, p50", bare, None, where),
        Row("the adapter's wrapper called alone, back to back, p50", direct, None, where),
        Row(
            "the wrapper's own cost: wrapper - function, os-sandbox=none (no child)",
            layers,
            None,
            where_none,
            target="≤ 0.3 ms: " + ("met" if layers <= 3e-4 else "not met"),
        ),
    ]
    notes = [
        f"medians of {PROCESSES} processes ({CALLS} calls each after {WARMUP} warm-ups, pooled)",
        f"wrapper alone - bare @sandbox call = {format_seconds(direct - bare_direct)}; the rest of "
        "sandboxed - plain is the round trip to the child, which costs more between the framework's "
        "own steps (the child's worker has stopped polling) than back to back",
        BYTECODE_NOTE,
    ]
    return Table(
        f"Adapter pysandboxes-{name}",
        rows,
        notes,
        reference_missing="pysandboxes 0.7.0 has no adapters (its samples hand-write the glue)",
    )


def main() -> int:
    failed = False
    for name in FRAMEWORKS:
        python = REPO / ".venv-int" / name / "bin" / "python"
        if not python.exists():
            print(
                f"## Adapter pysandboxes-{name}\n\n- not measured: run scripts/integration-envs.sh {name}\n"
            )
            continue
        try:
            print(measure(name, python).render(), end="\n\n", flush=True)
        except CommandFailed as exc:
            print(f"## Adapter pysandboxes-{name}\n\n- failed: {exc}\n")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
