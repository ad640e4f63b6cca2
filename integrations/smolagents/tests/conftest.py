"""The smolagents adapter's harness for the conformance suite, and shared fixtures.

No ``from __future__ import annotations``: the suite's driver loads this file outside
``sys.modules`` (and the scripted models' signatures are smolagents' own).
"""

import os
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import pytest
from smolagents import Tool, ToolCallingAgent
from smolagents.memory import ActionStep
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
    get_tool_json_schema,
)
from smolagents.monitoring import LogLevel

from pysandboxes_conformance import Call, Harness, Seen

ENVIRONMENT: Mapping[str, str] = {"OTEL_SDK_DISABLED": "true", "PYTHON_DOTENV_DISABLED": "1"}
for _name, _value in ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)

#: smolagents builds a tool's schema from its docstring's ``Args:`` section and refuses a tool
#: without one; the suite's bodies have one-line docstrings: both headers complete them the
#: same way before the decorator sees the function (``tool`` here is a function named
#: ``tool``, so smolagents sees no other decorator)
_DESCRIBED = """
import inspect as _inspect


def _described(function):
    if not _inspect.isfunction(function):
        return function  # let the decorator say what is wrong
    names = list(_inspect.signature(function).parameters)
    if names and "Args:" not in (function.__doc__ or ""):
        function.__doc__ += "\\n\\n    Args:\\n" + "".join(f"        {n}: The {n}.\\n" for n in names)
    return function
"""
_SMOLAGENTS_TOOL = """
from smolagents import tool as _smolagents_tool
"""
_TOOL = """

def tool(function):
    return _smolagents_tool(_described(function))
"""
#: the agent of the lifecycle tests, created in the tools module (its rule file is the default)
_AGENT = """


def agent(**kwargs):
    return _Agent(**kwargs)
"""
_SANDBOXED_TOOL = """

def sandboxed_tool(function=None, **kwargs):
    if function is None:
        return lambda f: _sandboxed_tool(_described(f), **kwargs)
    return _sandboxed_tool(_described(function), **kwargs)
"""


class ScriptedToolModel(Model):
    """An offline smolagents model: one tool call per step, in order, then ``final_answer``."""

    def __init__(self, calls: Sequence[Call] = ()) -> None:
        super().__init__(model_id="scripted")
        self.calls = list(calls)
        self.turn = 0

    def generate(
        self,
        messages: Any,
        stop_sequences: Any = None,
        response_format: Any = None,
        tools_to_call_from: Any = None,
        **kwargs: Any,
    ) -> ChatMessage:
        if self.turn < len(self.calls):
            name, arguments = self.calls[self.turn]
        else:
            name, arguments = "final_answer", {"answer": "done"}
        self.turn += 1
        call = ChatMessageToolCall(
            id=f"call_{self.turn}",
            type="function",
            function=ChatMessageToolCallFunction(name=name, arguments=dict(arguments)),
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


class ScriptedCodeModel(Model):
    """An offline smolagents model for a ``CodeAgent``: each step answers one code block, in
    order; what the model read before each (its last message) is kept in ``seen``."""

    def __init__(self, blocks: Sequence[str]) -> None:
        super().__init__(model_id="scripted-code")
        self.blocks = list(blocks)
        self.seen: list[str] = []

    def generate(
        self,
        messages: Any,
        stop_sequences: Any = None,
        response_format: Any = None,
        tools_to_call_from: Any = None,
        **kwargs: Any,
    ) -> ChatMessage:
        assistant = [i for i, m in enumerate(messages) if _role(m) == "assistant"]
        since = messages[assistant[-1] + 1 :] if assistant else messages[-1:]
        self.seen.append("\n".join(_text(m) for m in since))
        block = self.blocks.pop(0) if self.blocks else 'final_answer("out of script")'
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Thought: go\n<code>\n{block}\n</code>")


def _role(message: Any) -> str:
    role = message.role if hasattr(message, "role") else message["role"]
    return str(getattr(role, "value", role))


def _text(message: Any) -> str:
    content = message.content if hasattr(message, "content") else message["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content or "")


def tools_of(module: ModuleType) -> list[Tool]:
    return [value for value in vars(module).values() if isinstance(value, Tool)]


def seen_of(agent: ToolCallingAgent, task: str = "go") -> list[Seen]:
    """Run the agent, streamed: what the model was told of each tool call (the tool's output,
    or the step's error), the final answer's step left out."""
    seen: list[Seen] = []
    output = None
    for event in agent.run(task, stream=True):
        if type(event).__name__ == "ToolOutput":
            output = event
        elif isinstance(event, ActionStep):
            if event.error is not None:
                seen.append(Seen(str(event.error), True))
            elif output is not None and not output.is_final_answer:
                seen.append(Seen(str(output.output)))
            output = None
    return seen


def tool_agent(
    module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = False, **kwargs: Any
) -> ToolCallingAgent:
    """A ToolCallingAgent on the module's tools; ``lifecycle``: the module's ``agent()``
    (a ``SandboxedToolCallingAgent`` in the adapter's tools module)."""
    make = module.agent if lifecycle else ToolCallingAgent
    return make(
        tools=tools_of(module),
        model=ScriptedToolModel(calls),
        max_steps=len(calls) + 2,
        verbosity_level=LogLevel.OFF,
        **kwargs,
    )


class SmolagentsHarness(Harness):
    name = "smolagents"
    sandboxed_header = (
        "from pysandboxes_smolagents import SandboxedToolCallingAgent as _Agent\n"
        "from pysandboxes_smolagents import host_tool, sandboxed_tool as _sandboxed_tool\n"
        + _SMOLAGENTS_TOOL
        + _DESCRIBED
        + _TOOL
        + _SANDBOXED_TOOL
        + _AGENT
    )
    plain_header = (
        "from smolagents import ToolCallingAgent as _Agent\n" + _SMOLAGENTS_TOOL + _DESCRIBED + _TOOL + _AGENT
    )
    sandboxed = "@sandboxed_tool"
    sandboxed_raise = '@sandboxed_tool(on_denial="raise")'
    host = "@host_tool"
    plain = "@tool"
    context = None  # smolagents injects nothing into a tool
    async_tools = False  # smolagents calls forward() synchronously
    environment: ClassVar[Mapping[str, str]] = ENVIRONMENT
    wrong_usages = (
        (
            '@sandboxed_tool\n@tool\ndef wrapped() -> int:\n    """A tool object made a tool."""\n    return 3\n',
            "@sandboxed_tool makes a tool of a function, not of a smolagents.tools",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """A ``ToolCallingAgent`` run with the scripted model, streamed; with the lifecycle, a
        ``SandboxedToolCallingAgent`` (the plain module's ``agent()`` is a ``ToolCallingAgent``)."""
        return seen_of(tool_agent(module, calls, lifecycle=lifecycle))

    def schema(self, module: ModuleType, tool: str) -> Any:
        """What the model gets: the tool-calling schema, the code agent's prompt of the tool."""
        made = getattr(module, tool)
        return (get_tool_json_schema(made), made.to_code_prompt(), made.to_tool_calling_prompt())


@pytest.fixture(scope="session")
def harness() -> SmolagentsHarness:
    return SmolagentsHarness()
