"""The chat: ``python -m smolagents_demo`` or ``smolagents-demo`` (``--code``: the CodeAgent,
whose model-written code runs in the sandbox); one question a line, an empty line or end of
input ends it. The agent's memory holds the conversation (``run(reset=False)``)."""

from __future__ import annotations

from samples_shared.chat import chat_loop, load_env

from pysandboxes import sandboxes

from .agent import build_agent, build_code_agent
from .tools import PROFILE, SAMPLE


def main(argv: list[str] | None = None) -> int:
    load_env(SAMPLE)
    code = "--code" in (argv or [])
    agent = build_code_agent() if code else build_agent()

    def turn(question: str) -> str:
        return str(agent.run(question, reset=False))

    # one sandbox for the whole conversation (each run, and the code executor, join it)
    with sandboxes(sandboxes_config=str(PROFILE)):
        try:
            return chat_loop(turn)
        finally:
            if code:  # the code executor's state in the child
                agent.cleanup()
