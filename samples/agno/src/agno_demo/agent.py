"""The agent: an agno ``Agent`` with the sandboxed tools and a ``SandboxToolkit`` (which opens
the sandbox for each run), its sessions in memory (the history of a session is sent again)."""

from __future__ import annotations

import os
from typing import Any

from agno.agent import Agent
from agno.db.in_memory import InMemoryDb
from agno.models.openai.like import OpenAILike

from pysandboxes_agno import SandboxToolkit

from .tools import PROFILE, TOOLS

#: the model when CHAT_MODEL is not set (provider:model)
DEFAULT_MODEL = "openai:gpt-4o-mini"
SYSTEM = (
    "You are a helpful assistant with three tools: fetch_webpage, evaluate_expression and "
    "read_document. When a tool answers with an error, say what was refused."
)
#: tool calls of one run, at most
TOOL_CALL_LIMIT = 12


def chat_model(spec: str | None = None, **settings: Any) -> OpenAILike:
    """The model of ``spec`` (default ``CHAT_MODEL``): ``openai:NAME`` on agno's
    OpenAI-compatible model class, whose endpoint is ``OPENAI_BASE_URL`` when set (OpenAI's
    otherwise) and key ``OPENAI_API_KEY``; ``settings`` go to ``OpenAILike``."""
    spec = spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL
    provider, _, name = spec.partition(":")
    if provider != "openai" or not name:
        raise SystemExit(
            f"CHAT_MODEL={spec!r}: this sample speaks OpenAI-compatible chat completions (openai:NAME)"
        )
    settings.setdefault("base_url", os.getenv("OPENAI_BASE_URL") or "https://api.openai.com/v1")
    settings.setdefault("api_key", os.getenv("OPENAI_API_KEY"))
    return OpenAILike(id=name, **settings)


def build_agent(model: Any = None, **sandbox: Any) -> Agent:
    """The agent. Its ``SandboxToolkit`` opens the sandbox for each run (or joins the one the
    chat keeps open for the whole conversation, opened with the same ``sandbox`` settings:
    ``learn=`` for learn.py); under python-sb it has nothing to open. Its sessions are kept in
    memory, and each run of a session gets that session's earlier runs (session history)."""
    return Agent(
        model=model if model is not None else chat_model(),
        tools=[*TOOLS, SandboxToolkit(sandboxes_config=str(PROFILE), **sandbox)],
        instructions=SYSTEM,
        db=InMemoryDb(),
        add_history_to_context=True,
        tool_call_limit=TOOL_CALL_LIMIT,
        telemetry=False,
    )


def ask(agent: Agent, question: str, session: str = "chat") -> str:
    """One run of the session ``session``: the answer."""
    return str(agent.run(question, session_id=session).content)
