"""The autogen adapter's harness for the conformance suite, and shared fixtures.

No ``from __future__ import annotations``: the suite's driver loads this file outside
``sys.modules``. The offline model is autogen-ext's ``ReplayChatCompletionClient``, driven
through agentchat's ``AssistantAgent``.
"""

import asyncio
import inspect
import json
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import ToolCallExecutionEvent
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import CreateResult, ModelInfo, RequestUsage
from autogen_core.tools import BaseTool, FunctionTool
from autogen_ext.models.replay import ReplayChatCompletionClient

from pysandboxes_conformance import Call, Harness, Seen

MODEL_INFO = ModelInfo(
    vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False
)


def client(calls: Sequence[Call]) -> ReplayChatCompletionClient:
    """One function call per model turn, in order, then a final text."""
    turns: list[Any] = [
        CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id=f"call_{index}", name=name, arguments=json.dumps(arguments))],
            usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
            cached=False,
        )
        for index, (name, arguments) in enumerate(calls)
    ]
    return ReplayChatCompletionClient([*turns, "done"], model_info=MODEL_INFO)


def tools_of(module: ModuleType) -> list[Any]:
    """The module's tools: autogen tool objects, and the public functions defined there (which
    ``AssistantAgent`` makes ``FunctionTool``s itself)."""

    def is_tool(name: str, value: Any) -> bool:
        if isinstance(value, BaseTool):
            return True
        return inspect.isfunction(value) and value.__module__ == module.__name__ and not name.startswith("_")

    return [value for name, value in vars(module).items() if is_tool(name, value)]


def agent(module: ModuleType, calls: Sequence[Call], **kwargs: Any) -> AssistantAgent:
    return AssistantAgent(
        "agent",
        model_client=client(calls),
        tools=tools_of(module),
        max_tool_iterations=len(calls) + 1,
        **kwargs,
    )


def run(made: AssistantAgent, cancellation_token: CancellationToken | None = None) -> Any:
    return asyncio.run(made.run(task="go", cancellation_token=cancellation_token))


def seen(result: Any) -> list[Seen]:
    """What the model was told of each tool call: the ``FunctionExecutionResult``s."""
    return [
        Seen(r.content, r.is_error)
        for m in result.messages
        if isinstance(m, ToolCallExecutionEvent)
        for r in m.content
    ]


class AutogenHarness(Harness):
    name = "autogen"
    sandboxed_header = """
        from autogen_core import CancellationToken
        from autogen_core.tools import FunctionTool
        from pysandboxes_autogen import host_tool, sandboxed_tool
    """
    plain_header = """
        from autogen_core import CancellationToken
    """
    sandboxed = "@sandboxed_tool"
    sandboxed_raise = '@sandboxed_tool(on_denial="raise")'
    host = "@host_tool"
    # AssistantAgent makes a plain function a FunctionTool itself (described by its docstring)
    plain = ""
    context = ("cancellation_token", "CancellationToken")
    has_lifecycle = False
    environment: ClassVar[Mapping[str, str]] = {"OTEL_SDK_DISABLED": "true"}
    wrong_usages = (
        (
            'def _wrapped() -> int:\n    """A tool object."""\n    return 3\n\n\n'
            'wrapped = sandboxed_tool(FunctionTool(_wrapped, description="A tool object."))\n',
            "@sandboxed_tool makes a tool of a function, not of a autogen_core.tools._function_tool.FunctionTool",
        ),
        (
            '@sandbox\n@sandboxed_tool\ndef twice() -> int:\n    """Sandboxed twice."""\n    return 2\n',
            "@sandbox decorates a function, not a pysandboxes_autogen._adapter.SandboxedFunctionTool",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """``AssistantAgent(...).run(task=...)`` with the replayed model; autogen has no lifecycle
        hook (the first call opens the sandbox, or an open ``sandboxes()`` block is used)."""
        return seen(run(agent(module, calls)))

    def schema(self, module: ModuleType, tool: str) -> Any:
        value = getattr(module, tool)
        made = value if isinstance(value, BaseTool) else FunctionTool(value, description=value.__doc__ or "")
        return made.schema


@pytest.fixture(scope="session")
def harness() -> AutogenHarness:
    return AutogenHarness()
