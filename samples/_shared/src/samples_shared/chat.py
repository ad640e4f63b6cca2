"""What every sample's chat entry point shares: ``.env`` loaded once on the host, and the loop
(one question a line on standard input, an empty line or end of input ends it).

Each sample gives :func:`chat_loop` its own ``turn(question) -> answer``: the framework keeps
the conversation's history its own way (graph state, a session, message lists).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from pysandboxes import load_dotenv

__all__ = ["chat_loop", "load_env"]


def load_env(sample: Path) -> None:
    """The keys of ``sample/.env``, once, in the host. Under python-sb the program gets only
    what its env= rules forward (the Makefile exports .env first), and reads no file for it."""
    load_dotenv(sample / ".env")  # in a sandbox: nothing read


def chat_loop(turn: Callable[[str], str]) -> int:
    """Read questions until an empty line or end of input; print ``assistant> ANSWER`` for each."""
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line.strip():
            return 0
        print(f"assistant> {turn(line.strip())}", flush=True)
