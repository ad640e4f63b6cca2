"""The agent: a ``strands.Agent`` with the sandboxed tools, ``SandboxHooks`` and a hook that caps
the model calls of one invocation."""

from __future__ import annotations

import os
from typing import Any

from strands import Agent
from strands.hooks import BeforeInvocationEvent, BeforeModelCallEvent, HookProvider, HookRegistry
from strands.models.openai import OpenAIModel

from pysandboxes_strands import SandboxHooks

from .tools import PROFILE, TOOLS

#: the model when CHAT_MODEL is not set (provider:model)
DEFAULT_MODEL = "openai:gpt-4o-mini"
SYSTEM = (
    "You are a helpful assistant with three tools: fetch_webpage, evaluate_expression and "
    "read_document. When a tool answers with an error, say what was refused."
)
#: model calls of one invocation, at most
MAX_MODEL_CALLS = 12


class ModelCallCap(HookProvider):
    """At most ``limit`` model calls an invocation: the next one is cancelled (strands'
    ``BeforeModelCallEvent.cancel``), its text the answer, and the invocation ends."""

    def __init__(self, limit: int = MAX_MODEL_CALLS) -> None:
        self.limit = limit
        self.calls = 0

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeInvocationEvent, self._start)
        registry.add_callback(BeforeModelCallEvent, self._count)

    def _start(self, event: BeforeInvocationEvent) -> None:
        self.calls = 0

    def _count(self, event: BeforeModelCallEvent) -> None:
        self.calls += 1
        if self.calls > self.limit:
            event.cancel = f"(stopped: {self.limit} model calls in one turn)"


def chat_model(spec: str | None = None) -> OpenAIModel:
    """The model of ``spec`` (default ``CHAT_MODEL``): ``openai:MODEL``, through strands' OpenAI
    provider, at ``OPENAI_BASE_URL`` when set (any OpenAI-compatible endpoint), with
    ``OPENAI_API_KEY``."""
    provider, _, name = (spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL).partition(":")
    if provider != "openai":
        raise ValueError(f"CHAT_MODEL: openai:MODEL, not {provider}:{name}")
    client_args: dict[str, Any] = {"api_key": os.getenv("OPENAI_API_KEY", "")}
    if base_url := os.getenv("OPENAI_BASE_URL"):
        client_args["base_url"] = base_url
    return OpenAIModel(client_args=client_args, model_id=name)


def build_agent(model: Any = None, *, max_model_calls: int = MAX_MODEL_CALLS, **sandbox: Any) -> Agent:
    """The agent. ``SandboxHooks`` opens the sandbox for each invocation (or joins the one the
    chat keeps open for the whole conversation, opened with the same ``sandbox`` settings:
    ``learn=`` for learn.py); under python-sb it has nothing to open. The agent's messages are
    the conversation's history. No callback handler: the chat prints the answer itself."""
    return Agent(
        model=model if model is not None else chat_model(),
        tools=TOOLS,
        system_prompt=SYSTEM,
        hooks=[SandboxHooks(sandboxes_config=str(PROFILE), **sandbox), ModelCallCap(max_model_calls)],
        callback_handler=None,
    )
