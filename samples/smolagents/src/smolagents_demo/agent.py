"""The agents: a ``SandboxedToolCallingAgent`` (its tools' bodies in the sandbox) and a
``SandboxedCodeAgent`` (the code the model writes runs in the sandbox's executor too)."""

from __future__ import annotations

import os
from typing import Any

from smolagents import OpenAIServerModel

from pysandboxes_smolagents import SandboxedCodeAgent, SandboxedToolCallingAgent

from .tools import PROFILE, TOOLS

#: the model when CHAT_MODEL is not set (provider:model)
DEFAULT_MODEL = "openai:gpt-4o-mini"
#: steps of one run, at most (a step is one model call and its tool calls or code)
MAX_STEPS = 8
#: what the CodeAgent's code may import (smolagents' check; the rule file decides too)
CODE_IMPORTS = ["pathlib"]


def chat_model(spec: str | None = None) -> OpenAIServerModel:
    """The model of ``spec`` (default ``CHAT_MODEL``): ``openai:NAME`` is smolagents'
    ``OpenAIServerModel``, at ``OPENAI_BASE_URL`` when set (any OpenAI-compatible endpoint)."""
    spec = spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL
    provider, _, name = spec.partition(":")
    if provider != "openai" or not name:
        raise ValueError(f"CHAT_MODEL={spec!r}: this sample speaks openai:NAME (chat completions)")
    return OpenAIServerModel(
        model_id=name, api_base=os.getenv("OPENAI_BASE_URL") or None, api_key=os.getenv("OPENAI_API_KEY")
    )


def build_agent(model: Any = None, **sandbox: Any) -> SandboxedToolCallingAgent:
    """The tool-calling agent; each ``run()`` opens the sandbox (or joins the one the chat keeps
    open, opened with the same settings: ``learn=`` for learn.py)."""
    return SandboxedToolCallingAgent(
        tools=TOOLS,
        model=model if model is not None else chat_model(),
        max_steps=MAX_STEPS,
        verbosity_level=0,
        sandboxes_kwargs={"sandboxes_config": str(PROFILE), **sandbox},
    )


def build_code_agent(model: Any = None, **sandbox: Any) -> SandboxedCodeAgent:
    """The code agent: the model's code runs in the sandbox's child (smolagents' interpreter,
    under the rule file), the tools it calls too. Close it (``with agent:``) to stop the child."""
    return SandboxedCodeAgent(
        tools=TOOLS,
        model=model if model is not None else chat_model(),
        max_steps=MAX_STEPS,
        verbosity_level=0,
        additional_authorized_imports=CODE_IMPORTS,
        executor_kwargs={"sandboxes_config": str(PROFILE), **sandbox},
    )
