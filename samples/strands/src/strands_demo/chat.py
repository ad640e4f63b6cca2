"""The chat: ``python -m strands_demo`` or ``strands-demo``; one question a line, an empty line
or end of input ends it."""

from __future__ import annotations

import sys

from pysandboxes import load_dotenv, sandboxes

from .agent import build_agent
from .tools import PROFILE, SAMPLE


def load_env() -> None:
    """The keys of ``.env``, once, in the host. Under python-sb the program gets only what its
    env= rules forward (the Makefile exports .env first), and reads no file for it."""
    load_dotenv(SAMPLE / ".env")  # in a sandbox: nothing read


def main() -> int:
    load_env()
    agent = build_agent()
    interactive = sys.stdin.isatty()
    # one sandbox for the whole conversation (the hooks of each invocation join it)
    with sandboxes(sandboxes_config=str(PROFILE)):
        while True:
            if interactive:
                print("you> ", end="", flush=True)
            line = sys.stdin.readline()
            if not line.strip():
                return 0
            result = agent(line.strip())
            print(f"assistant> {str(result).strip()}", flush=True)
