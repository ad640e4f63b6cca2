"""The crew: one Agent with the sandboxed tools, one Task per question, ``sandbox_kickoff``."""

from __future__ import annotations

import os
import warnings
from typing import Any

with warnings.catch_warnings():
    # importing crewai warns "Cannot set an attribute on 'crewai.rag' for child module
    # 'embeddings'" (an ImportWarning)
    warnings.simplefilter("ignore", ImportWarning)
    from crewai import LLM, Agent, Crew, Task

from pysandboxes_crewai import sandbox_kickoff

from .tools import PROFILE, TOOLS

#: the model when CHAT_MODEL is not set (provider:model; crewai spells it provider/model)
DEFAULT_MODEL = "openai:gpt-4o-mini"
#: model calls of one task, at most
MAX_ITER = 12


#: the settings of the sandbox each kickoff opens, beside the profile (learn.py adds ``learn=``)
SANDBOX: dict[str, Any] = {}


def open_sandbox(inputs: dict[str, Any] | None) -> dict[str, Any] | None:
    """The crew's before_kickoff callback: the adapter's ``sandbox_kickoff`` with the sample's
    profile (a module-level function, as crewai wants of a callback)."""
    return sandbox_kickoff(inputs, sandboxes_config=str(PROFILE), **SANDBOX)


def chat_model(spec: str | None = None) -> LLM:
    """crewai's ``LLM`` of ``spec`` (default ``CHAT_MODEL``): ``openai:gpt-4o-mini`` (or
    crewai's own ``openai/gpt-4o-mini``). An OpenAI-compatible endpoint is ``OPENAI_BASE_URL``
    (crewai's native OpenAI provider, the openai client)."""
    spec = spec or os.getenv("CHAT_MODEL") or DEFAULT_MODEL
    provider, sep, name = spec.partition(":")
    model = f"{provider}/{name}" if sep and "/" not in provider else spec
    base_url = os.getenv("OPENAI_BASE_URL") or None
    return LLM(model=model, base_url=base_url, api_key=os.getenv("OPENAI_API_KEY") or None)


def build_crew(question: str, *, llm: Any = None, history: str = "") -> Crew:
    """A crew of one agent and one task (``question``, after the conversation so far). The
    sandbox is opened for its kickoff (or the run joins the one the chat keeps open)."""
    assistant = Agent(
        role="assistant",
        goal="Answer the user's question, with the tools when they help.",
        backstory=(
            "You have three tools: fetch_webpage, evaluate_expression and read_document. "
            "When a tool answers with an error, say what was refused."
        ),
        llm=llm if llm is not None else chat_model(),
        tools=TOOLS,
        max_iter=MAX_ITER,
        verbose=False,
    )
    context = f"The conversation so far:\n{history}\n\n" if history else ""
    task = Task(
        description=f"{context}The user asks: {question}",
        expected_output="The answer to the user.",
        agent=assistant,
    )
    return Crew(agents=[assistant], tasks=[task], before_kickoff_callbacks=[open_sandbox], verbose=False)
