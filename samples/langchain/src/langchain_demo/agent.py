"""The agent: ``create_agent`` with the sandboxed tools and ``SandboxMiddleware``."""

from __future__ import annotations

import os
from typing import Any

from langchain.agents import create_agent
from langchain.chat_models import init_chat_model

from pysandboxes_langchain import SandboxMiddleware

from .tools import PROFILE, TOOLS

#: the model when CHAT_MODEL is not set (provider:model, as init_chat_model reads it)
DEFAULT_MODEL = "openai:gpt-4o-mini"
SYSTEM = (
    "You are a helpful assistant with three tools: fetch_webpage, evaluate_expression and "
    "read_document. When a tool answers with an error, say what was refused."
)


def chat_model(spec: str | None = None) -> Any:
    """The model of ``spec`` (default ``CHAT_MODEL``): ``openai:gpt-4o-mini``,
    ``anthropic:claude-...`` (with its package). An OpenAI-compatible endpoint is
    ``OPENAI_BASE_URL``, read by the OpenAI client."""
    return init_chat_model(spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL)


def build_agent(model: Any = None, **sandbox: Any) -> Any:
    """The agent. The middleware opens the sandbox for each run (or joins the one the chat
    keeps open for the whole conversation, opened with the same ``sandbox`` settings:
    ``learn=`` for learn.py); under python-sb it has nothing to open."""
    return create_agent(
        model if model is not None else chat_model(),
        tools=TOOLS,
        system_prompt=SYSTEM,
        middleware=[SandboxMiddleware(sandboxes_config=str(PROFILE), **sandbox)],
    )
