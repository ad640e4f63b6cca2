"""The agent: an ``AssistantAgent`` with the sandboxed tools, reflecting on their results."""

from __future__ import annotations

import os
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.openai import OpenAIChatCompletionClient

from .tools import TOOLS

#: the model when CHAT_MODEL is not set (provider:model)
DEFAULT_MODEL = "openai:gpt-4o-mini"
SYSTEM = (
    "You are a helpful assistant with three tools: fetch_webpage, evaluate_expression and "
    "read_document. When a tool answers with an error, say what was refused."
)
#: what AutoGen must be told of a model it does not know (an OpenAI-compatible endpoint's)
OTHER_MODEL = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "structured_output": False,
    "family": "unknown",
}


def chat_model(spec: str | None = None) -> OpenAIChatCompletionClient:
    """The client of ``spec`` (default ``CHAT_MODEL``): ``openai:MODEL``, at ``OPENAI_BASE_URL``
    when set (any OpenAI-compatible endpoint: AutoGen is then told the model calls functions),
    with ``OPENAI_API_KEY``."""
    provider, _, name = (spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL).partition(":")
    if provider != "openai":
        raise ValueError(f"CHAT_MODEL: openai:MODEL, not {provider}:{name}")
    base_url = os.getenv("OPENAI_BASE_URL")
    if not base_url:
        return OpenAIChatCompletionClient(model=name, api_key=os.getenv("OPENAI_API_KEY", ""))
    return OpenAIChatCompletionClient(
        model=name, base_url=base_url, api_key=os.getenv("OPENAI_API_KEY", ""), model_info=OTHER_MODEL
    )


def build_agent(model_client: Any = None, **agent: Any) -> AssistantAgent:
    """The agent: after its tool calls, one more model call turns their results into the answer
    (``reflect_on_tool_use``). The sandbox is not its business: the chat (or learn.py) opens it
    around the runs (AutoGen has no run hook)."""
    return AssistantAgent(
        "assistant",
        model_client=model_client if model_client is not None else chat_model(),
        tools=TOOLS,
        system_message=SYSTEM,
        reflect_on_tool_use=True,
        **agent,
    )
