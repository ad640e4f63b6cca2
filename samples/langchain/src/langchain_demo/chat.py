"""The chat: ``python -m langchain_demo`` or ``langchain-demo``; one question a line, an empty
line or end of input ends it."""

from __future__ import annotations

from samples_shared.chat import chat_loop, load_env

from pysandboxes import sandboxes

from .agent import build_agent
from .tools import PROFILE, SAMPLE

#: model calls and tool calls of one turn, at most
RECURSION_LIMIT = 12


def main() -> int:
    load_env(SAMPLE)
    agent = build_agent()
    history: list[object] = []

    def turn(question: str) -> str:
        nonlocal history
        history.append({"role": "user", "content": question})
        result = agent.invoke({"messages": history}, {"recursion_limit": RECURSION_LIMIT})
        history = result["messages"]
        return str(history[-1].content)

    # one sandbox for the whole conversation (the middleware of each run joins it)
    with sandboxes(sandboxes_config=str(PROFILE)):
        return chat_loop(turn)
