"""The chat: ``python -m openai_agents_demo`` or ``openai-agents-demo``; one question a line, an
empty line or end of input ends it. The history is the previous run's ``to_input_list()``."""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Runner
from samples_shared.chat import chat_loop, load_env

from pysandboxes import sandboxes

from .agent import MAX_TURNS, build_agent, chat_model, client, hooks
from .tools import PROFILE, SAMPLE


def main() -> int:
    load_env(SAMPLE)
    openai_client = client()
    agent = build_agent(chat_model(openai_client))
    run_hooks = hooks()
    history: list[Any] = []

    # one event loop for the whole conversation (the client's connections belong to it), closed
    # after the client
    with asyncio.Runner() as loop:

        def turn(question: str) -> str:
            nonlocal history
            turn_input = [*history, {"role": "user", "content": question}]
            result = loop.run(Runner.run(agent, turn_input, hooks=run_hooks, max_turns=MAX_TURNS))
            history = result.to_input_list()
            return str(result.final_output)

        try:
            # one sandbox for the whole conversation (each run's hooks join it)
            with sandboxes(sandboxes_config=str(PROFILE)):
                return chat_loop(turn)
        finally:
            loop.run(openai_client.close())
