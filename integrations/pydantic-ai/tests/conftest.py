"""The pydantic-ai adapter's harness for the conformance suite, and shared helpers.

No ``from __future__ import annotations``: the suite's driver loads this file outside
``sys.modules``.

The suite writes every tool with one decorator line; pydantic-ai's decorators differ by whether
a tool takes the ``RunContext`` (``agent.tool`` / ``agent.tool_plain``). Both generated modules
therefore add their functions to a toolset with ``add_function``, which infers it from the
first parameter as ``Agent(tools=[...])`` and ``FunctionToolset([...])`` do: the framework's
``FunctionToolset`` for the plain module, the adapter's ``SandboxedToolset`` for the sandboxed
one (so the suite's lifecycle is the toolset's). The decorators ``@sandboxed_tool_plain(agent)``
and ``@sandboxed_tool(agent)`` have tests of their own (test_pydantic_ai.py).
"""

import dataclasses
import os
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import pytest

os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from pydantic_ai import FunctionToolset, models
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pysandboxes_conformance import Call, Harness, Seen

models.ALLOW_MODEL_REQUESTS = False  # no real model, ever


def scripted(calls: Sequence[Call]) -> FunctionModel:
    """An offline model: one tool call per turn, in order, then a final answer."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        turn = sum(1 for m in messages if isinstance(m, ModelResponse))
        if turn >= len(calls):
            return ModelResponse(parts=[TextPart("done")])
        name, arguments = calls[turn]
        return ModelResponse(parts=[ToolCallPart(name, dict(arguments), tool_call_id=f"call_{turn}")])

    return FunctionModel(respond)


def returns(messages: Sequence[ModelMessage]) -> list[Any]:
    """The tool returns (and retry prompts) the model was sent, in order."""
    return [
        part
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
        if isinstance(part, (ToolReturnPart, RetryPromptPart))
    ]


def seen(messages: Sequence[ModelMessage]) -> list[Seen]:
    """What the model was told of each tool call: the text, and whether it was an error (a
    return whose outcome is not ``"success"``, or a retry prompt)."""
    out = []
    for part in returns(messages):
        if isinstance(part, RetryPromptPart):
            out.append(Seen(part.model_response(), True))
        else:
            out.append(Seen(part.model_response_str(wrap_if_error=False), part.outcome != "success"))
    return out


def toolsets(module: ModuleType, *, lifecycle: bool = True) -> list[Any]:
    """The module's toolsets; without the lifecycle, their tools in a plain FunctionToolset."""
    held = list({id(t): t for t in (module.toolset, module.raising)}.values())
    if lifecycle:
        return held
    return [FunctionToolset([tool for t in held for tool in t.tools.values()])]


class PydanticAIHarness(Harness):
    name = "pydantic-ai"
    sandboxed_header = """
        from pydantic_ai import Agent, RunContext
        from pysandboxes_pydantic_ai import SandboxedToolset, host_tool

        agent = Agent()
        toolset = SandboxedToolset()
        raising = SandboxedToolset(on_denial="raise")


        def tool(function):
            toolset.add_function(function)
            return function


        def tool_raising(function):
            raising.add_function(function)
            return function
    """
    plain_header = """
        from pydantic_ai import Agent, FunctionToolset, RunContext

        agent = Agent()
        toolset = raising = FunctionToolset()


        def tool(function):
            toolset.add_function(function)
            return function
    """
    sandboxed = "@tool"
    sandboxed_raise = "@tool_raising"
    host = "@host_tool(agent)"
    plain = "@tool"
    context = ("ctx", "RunContext")
    context_first = True
    environment: ClassVar[Mapping[str, str]] = {"OTEL_SDK_DISABLED": "true"}
    wrong_usages = (
        (
            "from pysandboxes_pydantic_ai import sandboxed_tool\n\n\n@sandboxed_tool(agent)\n"
            'def no_context(text: str) -> str:\n    """No RunContext first."""\n    return text\n',
            "@sandboxed_tool(agent): the first parameter of no_context() must be the `ctx: RunContext[...]` (annotated",
        ),
        (
            "from pysandboxes_pydantic_ai import sandboxed_tool_plain\n\n\n@sandboxed_tool_plain\n"
            'def bare(text: str) -> str:\n    """Without the agent."""\n    return text\n',
            "@sandboxed_tool_plain(agent) registers the tool with an agent",
        ),
        (
            "from pydantic_ai import Tool\n\n\ndef on_host(text: str) -> str:\n"
            '    """A plain function."""\n    return text\n\n\nbox = SandboxedToolset([Tool(on_host)])\n',
            "SandboxedToolset runs its tools' bodies in the sandbox; the Tool 'on_host' wraps",
        ),
        (
            'def untyped(ctx, text: str) -> str:\n    """An unannotated context."""\n    return text\n\n\n'
            "toolset.add_function(untyped, takes_ctx=True)\n",
            "SandboxedToolset: the first parameter of untyped() must be the `ctx: RunContext[...]` (annotated",
        ),
        (
            "import colorsys\n\nbox = SandboxedToolset([colorsys.rgb_to_hsv])\n",
            "which was already imported",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """``agent.run_sync`` with the scripted ``FunctionModel`` and the module's toolsets
        (``SandboxedToolset`` for the lifecycle); sync and async tools run in the same run."""
        result = module.agent.run_sync(
            "go", model=scripted(calls), toolsets=toolsets(module, lifecycle=lifecycle)
        )
        return seen(result.all_messages())

    def schema(self, module: ModuleType, tool: str) -> Any:
        """The ``ToolDefinition`` the model is given (name, description, JSON schema, ...),
        less ``toolset_id``: which toolset holds the tool (the agent's own for ``@host_tool(agent)``,
        the module's toolset for the plain tool), never sent to the model."""
        given: dict[str, Any] = {}

        def look(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            given.update({t.name: t for t in info.function_tools})
            return ModelResponse(parts=[TextPart("done")])

        module.agent.run_sync("go", model=FunctionModel(look), toolsets=toolsets(module))
        return dataclasses.replace(given[tool], toolset_id=None)


@pytest.fixture(scope="session")
def harness() -> PydanticAIHarness:
    return PydanticAIHarness()
