"""The chat: ``python -m langchain_demo`` or ``langchain-demo``; one question a line, an empty
line or end of input ends it."""

from __future__ import annotations

import sys

from pysandboxes import is_in_sandbox, sandboxes

from .agent import build_agent
from .tools import PROFILE, SAMPLE

#: model calls and tool calls of one turn, at most
RECURSION_LIMIT = 12


def load_env() -> None:
    """The keys of ``.env``, once, in the host. Under python-sb the program gets only what its
    env= rules forward (the Makefile exports .env first), and reads no file for it."""
    if is_in_sandbox():
        return
    from dotenv import load_dotenv

    load_dotenv(SAMPLE / ".env")


def main() -> int:
    load_env()
    agent = build_agent()
    interactive = sys.stdin.isatty()
    history: list[object] = []
    # one sandbox for the whole conversation (the middleware of each run joins it)
    with sandboxes(sandboxes_config=str(PROFILE)):
        while True:
            if interactive:
                print("you> ", end="", flush=True)
            line = sys.stdin.readline()
            if not line.strip():
                return 0
            history.append({"role": "user", "content": line.strip()})
            result = agent.invoke({"messages": history}, {"recursion_limit": RECURSION_LIMIT})
            history = result["messages"]
            print(f"assistant> {history[-1].content}", flush=True)
