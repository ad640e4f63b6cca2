"""The chat: ``python -m autogen_demo`` or ``autogen-demo``; one question a line, an empty line
or end of input ends it. Async throughout: ``pysandboxes.run`` opens the sandbox, then runs the
conversation; the agent keeps its history (its model context) from one question to the next."""

from __future__ import annotations

import sys

from autogen_agentchat.agents import AssistantAgent

import pysandboxes
from pysandboxes import load_dotenv

from .agent import build_agent, chat_model
from .tools import PROFILE, SAMPLE


def load_env() -> None:
    """The keys of ``.env``, once, in the host. Under python-sb the program gets only what its
    env= rules forward (the Makefile exports .env first), and reads no file for it."""
    load_dotenv(SAMPLE / ".env")  # in a sandbox: nothing read


async def ask(agent: AssistantAgent, text: str) -> str:
    """One question: the agent's run (tool calls, then its reflection), its last message's text."""
    result = await agent.run(task=text)
    return str(result.messages[-1].content)


async def chat() -> int:
    client = chat_model()
    agent = build_agent(client)
    interactive = sys.stdin.isatty()
    try:
        while True:
            if interactive:
                print("you> ", end="", flush=True)
            line = sys.stdin.readline()
            if not line.strip():
                return 0
            print(f"assistant> {await ask(agent, line.strip())}", flush=True)
    finally:
        await client.close()


def main() -> int:
    load_env()
    # one sandbox for the whole conversation (under python-sb there is nothing to open)
    return pysandboxes.run(chat(), sandboxes_config=str(PROFILE))
