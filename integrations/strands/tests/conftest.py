"""The strands adapter's harness for the conformance suite, and shared fixtures.

No ``from __future__ import annotations``: the suite's driver loads this file outside
``sys.modules`` (and the scripted model's signature is strands' own).
"""

import json
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import pytest

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from strands import Agent
from strands.models.model import Model
from strands.types.tools import AgentTool

from pysandboxes_conformance import Call, Harness, Seen


class ScriptedModel(Model):
    """An offline strands model streaming Bedrock-style events: one tool use per turn, in
    order, then a final text."""

    def __init__(self, calls: Sequence[Call] = ()) -> None:
        self.calls = list(calls)
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **config: Any) -> None:
        self.config.update(config)

    def get_config(self) -> Any:
        return self.config

    async def structured_output(
        self, output_model: Any, prompt: Any, system_prompt: Any = None, **kwargs: Any
    ) -> Any:
        raise NotImplementedError
        yield

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        turn = sum(1 for m in messages if m["role"] == "assistant")
        yield {"messageStart": {"role": "assistant"}}
        if turn < len(self.calls):
            name, arguments = self.calls[turn]
            yield {"contentBlockStart": {"start": {"toolUse": {"toolUseId": f"call_{turn}", "name": name}}}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(arguments)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": "done"}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}


def tools_of(module: ModuleType) -> list[AgentTool]:
    return [value for value in vars(module).values() if isinstance(value, AgentTool)]


def results(agent: Agent) -> list[dict[str, Any]]:
    """The tool results of the agent's conversation, in order."""
    return [block["toolResult"] for m in agent.messages for block in m["content"] if "toolResult" in block]


def seen(agent: Agent) -> list[Seen]:
    """What the model was told of each tool call."""
    return [
        Seen("".join(c.get("text", "") for c in r["content"]), r["status"] == "error") for r in results(agent)
    ]


def agent(module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True, **kwargs: Any) -> Agent:
    hooks = [module.hooks] if lifecycle and module.hooks is not None else []
    return Agent(
        model=ScriptedModel(calls), tools=tools_of(module), hooks=hooks, callback_handler=None, **kwargs
    )


class StrandsHarness(Harness):
    name = "strands"
    sandboxed_header = """
        from strands import tool
        from strands.types.tools import ToolContext
        from pysandboxes_strands import SandboxHooks, host_tool, sandboxed_tool

        hooks = SandboxHooks()
    """
    plain_header = """
        from strands import tool
        from strands.types.tools import ToolContext

        hooks = None
    """
    sandboxed = "@sandboxed_tool(context=True)"
    sandboxed_raise = '@sandboxed_tool(context=True, on_denial="raise")'
    host = "@host_tool(context=True)"
    plain = "@tool(context=True)"
    context = ("tool_context", "ToolContext")
    environment: ClassVar[Mapping[str, str]] = {"OTEL_SDK_DISABLED": "true"}
    wrong_usages = (
        (
            '@sandboxed_tool\n@tool\ndef wrapped() -> int:\n    """A tool object made a tool."""\n    return 3\n',
            "@sandboxed_tool makes a tool of a function, not of a strands.tools.decorator.DecoratedFunctionTool",
        ),
        (
            '@sandbox\n@sandboxed_tool\ndef twice() -> int:\n    """Sandboxed twice."""\n    return 2\n',
            "@sandbox: twice is already a tool made by pysandboxes-strands",
        ),
        (
            '@sandboxed_tool\ndef needs_agent(text: str, agent) -> str:\n    """Needs the agent."""\n    return text\n',
            "its `agent` (the framework's context object) cannot go",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """``Agent(...)("go")`` with the scripted model (and the module's ``SandboxHooks`` for the
        lifecycle); strands runs sync and async tools alike in one invocation."""
        made = agent(module, calls, lifecycle=lifecycle)
        made("go")
        return seen(made)

    def schema(self, module: ModuleType, tool: str) -> Any:
        return getattr(module, tool).tool_spec


@pytest.fixture(scope="session")
def harness() -> StrandsHarness:
    return StrandsHarness()
