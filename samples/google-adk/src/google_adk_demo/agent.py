"""The agent: an ``LlmAgent`` with the sandboxed tools, run by an ``InMemoryRunner`` whose app
holds ``SandboxPlugin``."""

from __future__ import annotations

import os
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.models.apigee_llm import ApigeeLlm
from google.adk.runners import InMemoryRunner

from pysandboxes_google_adk import SandboxPlugin

from .tools import PROFILE, TOOLS

APP = "google_adk_demo"
#: the model when CHAT_MODEL is not set (provider:model)
DEFAULT_MODEL = "openai:gpt-4o-mini"
OPENAI_URL = "https://api.openai.com/v1"
INSTRUCTION = (
    "You are a helpful assistant with three tools: fetch_webpage, evaluate_expression and "
    "read_document. When a tool answers with an error, say what was refused."
)


def chat_model(spec: str | None = None) -> Any:
    """The model of ``spec`` (default ``CHAT_MODEL``). ``openai:MODEL``: ADK's chat-completions
    client (``ApigeeLlm`` in its ``apigee/openai/`` form, plain httpx), at ``OPENAI_BASE_URL``
    (default OpenAI's) with ``OPENAI_API_KEY``; ``gemini:MODEL``: ADK's Gemini (GOOGLE_API_KEY)."""
    provider, _, name = (spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL).partition(":")
    if provider == "gemini":
        return name
    if provider != "openai":
        raise ValueError(f"CHAT_MODEL: openai:MODEL or gemini:MODEL, not {provider}:{name}")
    return ApigeeLlm(
        model=f"apigee/openai/{name}",
        proxy_url=os.getenv("OPENAI_BASE_URL") or OPENAI_URL,
        custom_headers={"Authorization": f"Bearer {os.getenv('OPENAI_API_KEY', '')}"},
    )


def build_runner(model: Any = None, **sandbox: Any) -> InMemoryRunner:
    """The runner. The plugin opens the sandbox for each run (or joins the one the chat keeps
    open for the whole conversation, opened with the same ``sandbox`` settings: ``learn=`` for
    learn.py); under python-sb it has nothing to open. Sessions live in memory."""
    agent = LlmAgent(
        name="assistant",
        model=model if model is not None else chat_model(),
        instruction=INSTRUCTION,
        tools=TOOLS,
    )
    plugin = SandboxPlugin(sandboxes_config=str(PROFILE), **sandbox)
    return InMemoryRunner(app=App(name=APP, root_agent=agent, plugins=[plugin]))
