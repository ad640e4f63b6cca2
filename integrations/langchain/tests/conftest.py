"""The LangChain adapter's harness for the conformance suite, and shared fixtures."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from pysandboxes_conformance import Call, Harness, Seen


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, able to take tools (the stock one refuses ``bind_tools``):
    it answers with the scripted messages, tool calls included, in order."""

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self


def script(calls: Sequence[Call]) -> ScriptedChatModel:
    """One model turn per tool call, then a final answer."""
    turns = [
        AIMessage(
            content="", tool_calls=[{"name": name, "args": args, "id": f"call_{i}", "type": "tool_call"}]
        )
        for i, (name, args) in enumerate(calls)
    ]
    return ScriptedChatModel(messages=iter([*turns, AIMessage(content="done")]))


def tools_of(module: ModuleType) -> list[BaseTool]:
    return [value for value in vars(module).values() if isinstance(value, BaseTool)]


def run_agent(agent: Any, *, use_async: bool) -> list[Seen]:
    """Invoke the agent; what the model saw of each tool call (its ToolMessages)."""
    request = {"messages": [{"role": "user", "content": "go"}]}
    result = asyncio.run(agent.ainvoke(request)) if use_async else agent.invoke(request)
    return [
        Seen(str(m.content), m.status == "error") for m in result["messages"] if isinstance(m, ToolMessage)
    ]


class LangChainHarness(Harness):
    name = "langchain"
    sandboxed_header = """
        from langchain.tools import ToolRuntime, tool
        from pysandboxes_langchain import SandboxMiddleware, host_tool, sandboxed_tool

        middleware = [SandboxMiddleware()]
    """
    plain_header = """
        from langchain.tools import ToolRuntime, tool

        middleware = []
    """
    sandboxed = "@sandboxed_tool"
    sandboxed_raise = '@sandboxed_tool(on_denial="raise")'
    host = "@host_tool"
    plain = "@tool"
    context = ("runtime", "ToolRuntime")
    wrong_usages = (
        (
            '@sandbox\n@tool\ndef plain_tool() -> int:\n    """A LangChain tool object."""\n    return 1\n',
            "@sandbox decorates a function, not a langchain_core.tools.structured.StructuredTool",
        ),
        (
            '@sandbox\n@sandboxed_tool\ndef twice() -> int:\n    """Sandboxed twice."""\n    return 2\n',
            "@sandbox decorates a function, not a langchain_core.tools.structured.StructuredTool",
        ),
        (
            '@sandboxed_tool\n@tool\ndef wrapped() -> int:\n    """A tool object made a tool."""\n    return 3\n',
            "@sandboxed_tool makes a tool of a function, not of a langchain_core.tools.structured.StructuredTool",
        ),
    )

    def call_tools(self, module: ModuleType, calls: Sequence[Call], *, lifecycle: bool = True) -> list[Seen]:
        """``create_agent`` with the scripted model (and ``SandboxMiddleware`` for the
        lifecycle); ``ainvoke`` when a called tool is ``async def`` only."""
        agent = create_agent(
            script(calls), tools=tools_of(module), middleware=module.middleware if lifecycle else []
        )
        use_async = any(getattr(module, name).func is None for name, _ in calls)
        return run_agent(agent, use_async=use_async)

    def schema(self, module: ModuleType, tool: str) -> Any:
        return convert_to_openai_tool(getattr(module, tool))


@pytest.fixture(scope="session")
def harness() -> LangChainHarness:
    return LangChainHarness()
