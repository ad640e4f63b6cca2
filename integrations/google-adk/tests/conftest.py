"""The google-adk adapter's harness for the conformance suite, and shared fixtures.

No ``from __future__ import annotations``: the suite's driver loads this file outside
``sys.modules`` (and the scripted model is a pydantic model ADK validates).
"""

import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import pydantic
import pytest

# no .env loading, no telemetry, in this process and every process the suite starts
os.environ.setdefault("ADK_DISABLE_LOAD_DOTENV", "1")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import InMemoryRunner
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.function_tool import FunctionTool
from google.genai import types

from pysandboxes.tools import is_sandboxed_tool
from pysandboxes_conformance import Call, Harness, Seen

ENVIRONMENT = {"ADK_DISABLE_LOAD_DOTENV": "1", "OTEL_SDK_DISABLED": "true"}


class ScriptedLlm(BaseLlm):
    """An offline ADK model: one function call per turn, in order, then a final text."""

    model: str = "scripted"
    calls: list[Any] = pydantic.Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        turn = sum(1 for c in llm_request.contents for p in c.parts or () if p.function_response is not None)
        if turn < len(self.calls):
            name, arguments = self.calls[turn]
            call = types.FunctionCall(id=f"call_{turn}", name=name, args=arguments)
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
        else:
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text="done")]))


def tools_of(module: ModuleType) -> list[Any]:
    """The module's tools: ADK tool objects, and the plain functions the adapter made."""
    return [v for v in vars(module).values() if isinstance(v, BaseTool) or is_sandboxed_tool(v)]


def runner(
    module: ModuleType, calls: Sequence[Call], *, plugins: Sequence[BasePlugin] = (), **agent: Any
) -> InMemoryRunner:
    made = LlmAgent(name="agent", model=ScriptedLlm(calls=list(calls)), tools=tools_of(module), **agent)
    return InMemoryRunner(app=App(name="conformance", root_agent=made, plugins=list(plugins)))


def run(made: InMemoryRunner, text: str = "go") -> list[Any]:
    """One invocation with a new session: its events."""
    import asyncio

    session = asyncio.run(made.session_service.create_session(app_name=made.app_name, user_id="user"))
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return list(made.run(user_id="user", session_id=session.id, new_message=message))


def responses(events: Sequence[Any]) -> list[dict[str, Any]]:
    """The function responses of a run, in order."""
    return [r.response or {} for e in events for r in e.get_function_responses()]


def seen(events: Sequence[Any]) -> list[Seen]:
    """What the model was told of each tool call: ``{"error": ...}`` or ``{"result": ...}``."""
    told = []
    for response in responses(events):
        if "error" in response:
            told.append(Seen(str(response["error"]), True))
        else:
            told.append(Seen(str(response.get("result", response))))
    return told


class GoogleAdkHarness(Harness):
    name = "google-adk"
    sandboxed_header = """
        from google.adk.agents.context import Context
        from google.adk.tools import FunctionTool
        from pysandboxes_google_adk import (
            HostFunctionTool,
            SandboxedFunctionTool,
            SandboxPlugin,
            sandboxed_function,
        )

        plugin = SandboxPlugin()
    """
    plain_header = """
        from google.adk.agents.context import Context
        from google.adk.tools import FunctionTool

        plugin = None
    """
    sandboxed = "@SandboxedFunctionTool"
    # the plain-function form, which ADK wraps itself: both forms run through the suite
    sandboxed_raise = '@sandboxed_function(on_denial="raise")'
    host = "@HostFunctionTool"
    plain = "@FunctionTool"
    # ToolContext is Context: the plain tool's context object says "Context"
    context = ("tool_context", "Context")
    environment: ClassVar[Mapping[str, str]] = ENVIRONMENT
    wrong_usages = (
        (
            '@SandboxedFunctionTool\n@FunctionTool\ndef wrapped() -> int:\n    """A tool object made a tool."""\n'
            "    return 3\n",
            "@SandboxedFunctionTool makes a tool of a function, not of a google.adk.tools.function_tool.FunctionTool",
        ),
        (
            '@sandbox\n@SandboxedFunctionTool\ndef twice() -> int:\n    """Sandboxed twice."""\n    return 2\n',
            "@sandbox decorates a function, not a pysandboxes_google_adk._adapter.SandboxedFunctionTool",
        ),
        (
            '@sandbox\n@sandboxed_function\ndef twice_function() -> int:\n    """Sandboxed twice."""\n'
            "    return 2\n",
            "@sandbox: twice_function is already a tool made by pysandboxes-google-adk",
        ),
        (
            "@sandboxed_function\ndef needs_context(text: str, ctx: Context) -> str:\n"
            '    """Needs the context, under another name."""\n    return text\n',
            "its `ctx: Context` (the framework's context object) cannot go",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """``InMemoryRunner(...).run(...)`` with the scripted model (and the module's
        ``SandboxPlugin`` for the lifecycle)."""
        plugins = [module.plugin] if lifecycle and module.plugin is not None else []
        return seen(run(runner(module, calls, plugins=plugins)))

    def schema(self, module: ModuleType, tool: str) -> Any:
        value = getattr(module, tool)
        made = value if isinstance(value, FunctionTool) else FunctionTool(value)
        declaration = made._get_declaration()
        return None if declaration is None else declaration.model_dump(exclude_none=True)


@pytest.fixture(scope="session")
def harness() -> GoogleAdkHarness:
    return GoogleAdkHarness()
