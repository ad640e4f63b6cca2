"""The agent: an Agents SDK ``Agent`` with the three sandboxed tools, its model
``OpenAIChatCompletionsModel`` (chat completions, which every OpenAI-compatible server speaks),
tracing off."""

from __future__ import annotations

import os
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled
from openai import AsyncOpenAI

from pysandboxes_openai_agents import SandboxRunHooks

from .tools import PROFILE, TOOLS

# no trace exporter: the SDK would otherwise send each run's spans to OpenAI's tracing endpoint
# (OPENAI_AGENTS_DISABLE_TRACING=1 in the environment says the same, for every process)
set_tracing_disabled(True)

#: the model when CHAT_MODEL is not set (provider:model)
DEFAULT_MODEL = "openai:gpt-4o-mini"
SYSTEM = (
    "You are a helpful assistant with three tools: fetch_webpage, evaluate_expression and "
    "read_document. When a tool answers with an error, say what was refused."
)
#: one turn: at most 6 model calls (Runner.run's max_turns)
MAX_TURNS = 6


def client(base_url: str | None = None, api_key: str | None = None) -> AsyncOpenAI:
    """The OpenAI client of the model: ``OPENAI_BASE_URL`` when set (any OpenAI-compatible
    server: a gateway, a local model, the tests' scripted server), ``OPENAI_API_KEY``."""
    return AsyncOpenAI(base_url=base_url or os.getenv("OPENAI_BASE_URL"), api_key=api_key)


def chat_model(openai_client: AsyncOpenAI, spec: str | None = None) -> OpenAIChatCompletionsModel:
    """The model of ``spec`` (default ``CHAT_MODEL``, ``openai:NAME``): chat completions through
    ``openai_client``. The SDK's default model speaks the Responses API, which compatible
    servers mostly lack."""
    spec = spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL
    provider, _, name = spec.partition(":")
    if provider != "openai" or not name:
        raise ValueError(f"CHAT_MODEL={spec!r}: expected openai:NAME (an OpenAI-compatible endpoint)")
    return OpenAIChatCompletionsModel(model=name, openai_client=openai_client)


def build_agent(model: OpenAIChatCompletionsModel) -> Agent[Any]:
    """The agent: the three tools, each sandboxed by its decorator."""
    return Agent(name="assistant", instructions=SYSTEM, tools=list(TOOLS), model=model)


def hooks(**sandbox: Any) -> SandboxRunHooks:
    """The run hooks: each run opens the sandbox when its agent starts and leaves it when its
    output is produced (or joins the one the chat keeps open for the whole conversation, opened
    with the same ``sandbox`` settings: ``learn=`` for learn.py); under python-sb they do
    nothing."""
    return SandboxRunHooks(sandboxes_config=str(PROFILE), **sandbox)
