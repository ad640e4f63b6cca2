"""The agno adapter's harness for the conformance suite, and shared fixtures.

No ``from __future__ import annotations``: the suite's driver loads this file outside
``sys.modules``, where ``dataclass`` cannot resolve string annotations.
"""

import asyncio
import inspect
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, ClassVar

import pytest

os.environ.setdefault("AGNO_TELEMETRY", "false")

from agno.agent import Agent
from agno.models.base import Model
from agno.models.response import ModelResponse
from agno.run.agent import RunOutput
from agno.run.base import RunStatus
from agno.tools.function import Function

from pysandboxes_conformance import Call, Harness, Seen


@dataclass
class ScriptedModel(Model):
    """An offline agno model: one tool call per turn, in order, then a final answer."""

    id: str = "scripted"
    name: str = "ScriptedModel"
    provider: str = "offline"
    calls: list[Call] = field(default_factory=list)

    def _next(self, messages: list[Any]) -> ModelResponse:
        turn = sum(1 for m in messages if m.role == "assistant")
        if turn >= len(self.calls):
            return ModelResponse(role="assistant", content="done")
        name, arguments = self.calls[turn]
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return ModelResponse(role="assistant", content="", tool_calls=[call])

    def invoke(self, messages: list[Any], *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next(messages)

    async def ainvoke(self, messages: list[Any], *args: Any, **kwargs: Any) -> ModelResponse:
        return self._next(messages)

    def invoke_stream(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        yield self._next(messages)

    async def ainvoke_stream(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        yield self._next(messages)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> Any:
        return response

    def _parse_provider_response_delta(self, response: Any) -> Any:
        return response


def tools_of(module: ModuleType) -> list[Function]:
    return [value for value in vars(module).values() if isinstance(value, Function)]


def is_async(tool: Function) -> bool:
    return inspect.iscoroutinefunction(inspect.unwrap(tool.entrypoint))


def seen(run: RunOutput) -> list[Seen]:
    """What the model was told of each tool call of the run; a run that ended in an error (agno
    returns it, with the error as its content) raises it."""
    if run.status == RunStatus.error:
        raise RuntimeError(run.content)
    return [Seen(str(t.result), bool(t.tool_call_error)) for t in run.tools or []]


def agent(
    module: ModuleType,
    calls: Sequence[Call],
    *,
    lifecycle: bool = True,
    use_async: bool = False,
    **kwargs: Any,
) -> Agent:
    """An agent with the module's tools (the sync ones only for a sync run: agno's ``run``
    refuses an agent with an async tool) and, for the lifecycle, its ``SandboxToolkit``."""
    tools: list[Any] = [t for t in tools_of(module) if use_async or not is_async(t)]
    if lifecycle and module.toolkit is not None:
        tools.append(module.toolkit)
    return Agent(model=ScriptedModel(calls=list(calls)), tools=tools, telemetry=False, **kwargs)


class AgnoHarness(Harness):
    name = "agno"
    sandboxed_header = """
        from agno.agent import Agent
        from agno.run import RunContext
        from agno.tools import tool
        from pysandboxes_agno import SandboxToolkit, host_tool, sandboxed_tool

        toolkit = SandboxToolkit()
    """
    plain_header = """
        from agno.run import RunContext
        from agno.tools import tool

        toolkit = None
    """
    sandboxed = "@sandboxed_tool"
    sandboxed_raise = '@sandboxed_tool(on_denial="raise")'
    host = "@host_tool"
    plain = "@tool"
    context = ("run_context", "RunContext")
    environment: ClassVar[Mapping[str, str]] = {"AGNO_TELEMETRY": "false"}
    wrong_usages = (
        (
            '@sandbox\n@tool\ndef plain_tool() -> int:\n    """An agno Function."""\n    return 1\n',
            "@sandbox decorates a function, not a agno.tools.function.Function",
        ),
        (
            '@sandboxed_tool\n@tool\ndef wrapped() -> int:\n    """A Function made a tool."""\n    return 3\n',
            "@sandboxed_tool makes a tool of a function, not of a agno.tools.function.Function",
        ),
        (
            '@sandboxed_tool\ndef needs_agent(text: str, agent) -> str:\n    """Needs the agent."""\n    return text\n',
            "its `agent` (the framework's context object) cannot go",
        ),
        (
            '@tool\ndef on_host() -> int:\n    """A plain tool."""\n    return 4\n\n\nbox = SandboxToolkit([on_host])\n',
            "SandboxToolkit holds the tools made by @sandboxed_tool or @host_tool; 'on_host' is not one",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """``Agent.run`` with the scripted model (and the module's ``SandboxToolkit`` for the
        lifecycle); ``Agent.arun`` when a called tool is ``async def`` (agno's ``run`` refuses
        async tools)."""
        by_name = {t.name: t for t in tools_of(module)}
        use_async = any(is_async(by_name[name]) for name, _ in calls)
        made = agent(module, calls, lifecycle=lifecycle, use_async=use_async)
        return seen(asyncio.run(made.arun("go")) if use_async else made.run("go"))

    def schema(self, module: ModuleType, tool: str) -> Any:
        return getattr(module, tool).to_dict()


@pytest.fixture(scope="session")
def harness() -> AgnoHarness:
    return AgnoHarness()
