"""The chat: ``python -m pydantic_ai_demo`` or ``pydantic-ai-demo``; one question a line, an
empty line or end of input ends it. The history is the runs' messages (``all_messages()``)."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage
from samples_shared.chat import chat_loop, load_env

from pysandboxes import sandboxes

from .agent import LIMITS, build_agent
from .tools import PROFILE, SAMPLE


def main() -> int:
    load_env(SAMPLE)
    agent = build_agent()
    history: list[ModelMessage] = []

    def turn(question: str) -> str:
        nonlocal history
        result = agent.run_sync(question, message_history=history, usage_limits=LIMITS)
        history = result.all_messages()
        return result.output

    # one sandbox for the whole conversation (the toolset of each run joins it)
    with sandboxes(sandboxes_config=str(PROFILE)):
        return chat_loop(turn)
