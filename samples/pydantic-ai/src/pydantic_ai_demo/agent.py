"""The agent: a pydantic-ai ``Agent`` whose toolset is a ``SandboxedToolset`` of the three tools."""

from __future__ import annotations

import os
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models import Model, infer_model
from pydantic_ai.usage import UsageLimits

from pysandboxes_pydantic_ai import SandboxedToolset

from .tools import PROFILE, TOOLS

#: the model when CHAT_MODEL is not set (provider:model)
DEFAULT_MODEL = "openai:gpt-4o-mini"
SYSTEM = (
    "You are a helpful assistant with three tools: fetch_webpage, evaluate_expression and "
    "read_document. When a tool answers with an error, say what was refused."
)
#: one turn: at most 6 model requests and 12 tool calls
LIMITS = UsageLimits(request_limit=6, tool_calls_limit=12)


def chat_model(spec: str | None = None) -> Model:
    """The model of ``spec`` (default ``CHAT_MODEL``, ``provider:model``). ``openai:NAME`` is
    pydantic-ai's chat-completions model on its OpenAI provider, whose endpoint is
    ``OPENAI_BASE_URL`` when set (any OpenAI-compatible server: a gateway, a local model, the
    tests' scripted server); another provider is pydantic-ai's own (``anthropic:...`` with
    its extra)."""
    spec = spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL
    provider, _, name = spec.partition(":")
    if provider != "openai":
        return infer_model(spec)
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(name, provider=OpenAIProvider(base_url=os.getenv("OPENAI_BASE_URL")))


def build_agent(model: Model | None = None, **sandbox: Any) -> Agent[None, str]:
    """The agent. Its toolset opens the sandbox for each run (or joins the one the chat keeps
    open for the whole conversation, opened with the same ``sandbox`` settings: ``learn=``
    for learn.py); under python-sb it has nothing to open."""
    toolset = SandboxedToolset(TOOLS, sandboxes_config=str(PROFILE), **sandbox)
    return Agent(model if model is not None else chat_model(), instructions=SYSTEM, toolsets=[toolset])
