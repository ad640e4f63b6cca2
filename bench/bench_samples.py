"""The samples (``samples/``, docs/samples.md): what a sample's sandboxed tool costs, measured in
the sample itself.

For each sample whose environment exists (``.venv-samples/<name>``, made by
``scripts/sample-envs.sh``) and whose tools run in the sandbox's child (partial mode), a driver
runs in that environment, in the sample's directory, under the sample's shipped ``.py-sandboxes``,
with the page host pointed at 127.0.0.1 (the profiles' ``PAGE_HOST``/``PAGE_PORT``: no name is
resolved, nothing leaves the machine). It measures, in 3 fresh processes:

1. **import**: the sample's tools module in the host, the framework included;
2. **enter**: ``with sandboxes(sandboxes_config=PROFILE):`` entering and the first call of
   ``evaluate_expression("2*(3+4)")`` through the framework's own dispatch (the child starts,
   confines itself, imports the tools module and the framework, answers);
3. **per call**: after 5 warm-ups, the median of 30 calls of the same tool through the
   framework's dispatch (LangChain, LangGraph: ``tool.invoke``; agno: ``FunctionCall.execute``;
   strands: ``DecoratedFunctionTool.stream``; google-adk: ``FunctionTool.run_async``; autogen:
   ``FunctionTool.run_json``; pydantic-ai: the ``SandboxedToolset``'s ``FunctionSchema.call``;
   openai-agents: ``FunctionTool.on_invoke_tool``; mcp-server: ``MCPServer.call_tool``) minus the
   median of 30 calls of the plain body (``samples_shared.tools.evaluate_expression``) on the
   host: the **overhead** a sandboxed tool call adds in that sample.

quick-demo (complete mode only, no tool) and mcp-client (not sandboxed: the server it launches
is) have nothing to measure here. pysandboxes 0.7.0's samples are not measured (their tests
need the internet), so its column is n/a.

Usage: ``uv run --no-sync python bench/bench_samples.py [NAME ...]`` (default: every sample).
"""

from __future__ import annotations

import json
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
    child_env,
    format_seconds,
)

PROCESSES = 3
CALLS = 30
WARMUP = 5

#: per sample: its tools module and ``caller(module)``, one call of evaluate_expression through
#: the framework's dispatch (what the framework does when the model calls the tool)
SAMPLES: dict[str, dict[str, str]] = {
    "langchain": {
        "module": "langchain_demo.tools",
        "call": """
            def caller(module):
                tool = module.evaluate_expression
                return lambda: tool.invoke({"expression": SANE})
        """,
    },
    "langgraph": {
        "module": "langgraph_demo.tools",
        "call": """
            def caller(module):
                tool = module.evaluate_expression
                return lambda: tool.invoke({"expression": SANE})
        """,
    },
    "agno": {
        "module": "agno_demo.tools",
        "call": """
            from agno.tools.function import FunctionCall

            def caller(module):
                tool = module.evaluate_expression
                return lambda: FunctionCall(function=tool, arguments={"expression": SANE}).execute()
        """,
    },
    "strands": {
        "module": "strands_demo.tools",
        "call": """
            import asyncio

            def caller(module):
                loop = asyncio.new_event_loop()
                tool = module.evaluate_expression
                use = {"toolUseId": "bench", "name": "evaluate_expression", "input": {"expression": SANE}}

                async def once():
                    async for event in tool.stream(use, {}):
                        last = event
                    return last

                return lambda: loop.run_until_complete(once())
        """,
    },
    "google-adk": {
        "module": "google_adk_demo.tools",
        "call": """
            import asyncio
            from unittest import mock

            from google.adk.tools import ToolContext

            def caller(module):
                loop = asyncio.new_event_loop()
                tool = module.evaluate_expression
                context = mock.create_autospec(ToolContext, instance=True)  # what ADK passes
                args = {"expression": SANE}
                return lambda: loop.run_until_complete(tool.run_async(args=args, tool_context=context))
        """,
    },
    "autogen": {
        "module": "autogen_demo.tools",
        "call": """
            import asyncio

            from autogen_core import CancellationToken

            def caller(module):
                loop = asyncio.new_event_loop()
                tool = module.evaluate_expression
                args = {"expression": SANE}
                return lambda: loop.run_until_complete(tool.run_json(args, CancellationToken()))
        """,
    },
    "pydantic-ai": {
        "module": "pydantic_ai_demo.tools",
        "call": """
            import asyncio

            from pysandboxes_pydantic_ai import SandboxedToolset

            def caller(module):  # the toolset build_agent() makes; FunctionSchema.call, as in a run
                loop = asyncio.new_event_loop()
                toolset = SandboxedToolset(module.TOOLS, sandboxes_config=str(module.PROFILE))
                call = toolset.tools["evaluate_expression"].function_schema.call
                return lambda: loop.run_until_complete(call({"expression": SANE}, None))
        """,
    },
    "openai-agents": {
        "module": "openai_agents_demo.tools",
        "call": """
            import asyncio

            def caller(module):  # FunctionTool.on_invoke_tool: a sync tool runs on a worker thread
                from agents import set_tracing_disabled
                from agents.tool_context import ToolContext

                set_tracing_disabled(True)
                loop = asyncio.new_event_loop()
                tool = module.evaluate_expression
                arguments = json.dumps({"expression": SANE})

                def once():
                    context = ToolContext(None, tool_name=tool.name, tool_call_id="bench", tool_arguments=arguments)
                    return loop.run_until_complete(tool.on_invoke_tool(context, arguments))

                return once
        """,
    },
    "mcp-server": {
        "module": "mcp_server.server",
        "call": """
            import asyncio

            def caller(module):  # what a client's tools/call reaches: MCPServer.call_tool
                loop = asyncio.new_event_loop()
                server = module.server
                return lambda: loop.run_until_complete(server.call_tool("evaluate_expression", {"expression": SANE}))
        """,
    },
}
#: the samples with nothing to measure here, and why
NOT_MEASURED = {
    "quick-demo": "complete mode only (python-sb runs the whole script), no tool",
    "mcp-client": "not sandboxed itself: the mcp-server sample it launches is",
}

DRIVER = """
import importlib, json, statistics, sys, time

SANE = "2*(3+4)"
CALLS_SNIPPET

started = time.perf_counter()
module = importlib.import_module(MODULE)
imported = time.perf_counter() - started
from samples_shared.tools import evaluate_expression as plain
from pysandboxes import sandboxes

call = caller(module)


def timed(function, n):
    for _ in range(WARMUP):
        function()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        function()
        out.append(time.perf_counter() - t)
    return out


started = time.perf_counter()
with sandboxes(sandboxes_config=str(module.PROFILE)):
    first = call()
    entered = time.perf_counter() - started
    tool = timed(call, CALLS)
body = timed(lambda: plain(SANE), CALLS)
assert "14" in repr(first), first
print(json.dumps({"import": imported, "enter": entered, "tool": tool, "plain": body}))
"""

#: what every driver gets on top of the bench's environment: telemetry off, a HOME of its own,
#: and the page host on loopback (the profiles' net= line resolves no name then)
ENV = {
    "OTEL_SDK_DISABLED": "true",
    "ANONYMIZED_TELEMETRY": "false",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "AGNO_TELEMETRY": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    "LANGCHAIN_TRACING_V2": "false",
    "LANGSMITH_TRACING": "false",
    "DO_NOT_TRACK": "1",
    "ADK_DISABLE_LOAD_DOTENV": "1",
    "PYTHON_DOTENV_DISABLED": "1",
    "PAGE_HOST": "127.0.0.1",
    "PAGE_PORT": "9",
}


def driver(name: str) -> Path:
    root = WORK_DIR / "samples" / name
    root.mkdir(parents=True, exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    source = SAMPLES[name]
    text = (
        DRIVER.replace("CALLS_SNIPPET", textwrap.dedent(source["call"]).strip())
        .replace("MODULE", repr(source["module"]))
        .replace("WARMUP", str(WARMUP))
        .replace("CALLS", str(CALLS))
    )
    path = root / "driver.py"
    path.write_text("import json\n" + text)
    return path


def run(name: str, python: Path) -> dict[str, object]:
    import subprocess

    path = driver(name)
    env = {**child_env(), **ENV, "HOME": str(path.parent / "home")}
    command = [str(python), str(path)]
    cwd = REPO / "samples" / name
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or [""])[-1]
        raise CommandFailed(f"{python} {path} exited {done.returncode}: {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(name: str, python: Path) -> tuple[Table, dict[str, float]]:
    run(name, python)  # warm-up: every module's bytecode cached, and it works
    reports = [run(name, python) for _ in range(PROCESSES)]
    imported = statistics.median(r["import"] for r in reports)  # type: ignore[misc]
    entered = statistics.median(r["enter"] for r in reports)  # type: ignore[misc]
    tool = statistics.median(t for r in reports for t in r["tool"])  # type: ignore[attr-defined]
    plain = statistics.median(t for r in reports for t in r["plain"])  # type: ignore[attr-defined]
    where = f".venv-samples/{name}/bin/python driver.py in samples/{name}"
    rows = [
        Row("import of the tools module (framework included)", imported, None, where),
        Row("`with sandboxes():` enter + first tool call, through the framework", entered, None, where),
        Row("tool call through the framework's dispatch, p50", tool, None, where),
        Row("the plain body on the host, p50", plain, None, where),
        Row("per-call overhead: dispatch - plain body", tool - plain, None, where),
    ]
    notes = [
        f"medians of {PROCESSES} processes ({CALLS} calls each after {WARMUP} warm-ups, pooled)",
        "the sample's shipped .py-sandboxes (os-sandbox=${OS_SANDBOX:-landlock}: landlock)",
        BYTECODE_NOTE,
    ]
    table = Table(
        f"Sample {name}",
        rows,
        notes,
        reference_missing="pysandboxes 0.7.0's samples are not measured (their tests need the internet)",
    )
    return table, {"enter": entered, "overhead": tool - plain}


def main(argv: list[str]) -> int:
    names = argv or [*SAMPLES, *NOT_MEASURED]
    failed = False
    summary: list[str] = []
    for name in names:
        if name in NOT_MEASURED:
            summary.append(f"| {name} | n/a | n/a | {NOT_MEASURED[name]} |")
            continue
        if name not in SAMPLES:
            print(f"unknown sample {name!r}: one of {', '.join([*SAMPLES, *NOT_MEASURED])}", file=sys.stderr)
            return 2
        python = REPO / ".venv-samples" / name / "bin" / "python"
        if not python.exists():
            print(f"## Sample {name}\n\n- not measured: run scripts/sample-envs.sh {name}\n")
            continue
        try:
            table, figures = measure(name, python)
        except CommandFailed as exc:
            print(f"## Sample {name}\n\n- failed: {exc}\n")
            failed = True
            continue
        print(table.render(), end="\n\n", flush=True)
        enter, overhead = format_seconds(figures["enter"]), format_seconds(figures["overhead"])
        summary.append(f"| {name} | {enter} | {overhead} | |")
    print("## Summary (docs/samples.md)\n")
    print("| sample | enter + first call | per-call overhead | note |")
    print("|---|---|---|---|")
    print("\n".join(summary))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
