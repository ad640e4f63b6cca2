"""The chat: ``python -m agno_demo`` or ``agno-demo``; one question a line, an empty line or end
of input ends it. The history is the agent's session (in memory)."""

from __future__ import annotations

from samples_shared.chat import chat_loop, load_env

from pysandboxes import sandboxes

from .agent import ask, build_agent
from .tools import PROFILE, SAMPLE


def main() -> int:
    load_env(SAMPLE)
    agent = build_agent()
    # one sandbox for the whole conversation (the toolkit of each run joins it)
    with sandboxes(sandboxes_config=str(PROFILE)):
        return chat_loop(lambda question: ask(agent, question))
