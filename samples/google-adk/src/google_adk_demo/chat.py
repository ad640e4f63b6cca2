"""The chat: ``python -m google_adk_demo`` or ``google-adk-demo``; one question a line, an empty
line or end of input ends it. The conversation is one ADK session: its history is the session's."""

from __future__ import annotations

import asyncio
import os
import sys

from google.adk.agents.run_config import RunConfig
from google.genai import types

from pysandboxes import load_dotenv, sandboxes

from .agent import APP, build_runner
from .tools import PROFILE, SAMPLE

USER = "user"
#: model calls of one turn, at most (ADK's RunConfig.max_llm_calls)
MAX_LLM_CALLS = 12


def load_env() -> None:
    """The keys of ``.env``, once, in the host. ADK itself loads a ``.env`` only when its CLI
    (``adk run``, ``adk web``) loads an agent: ADK_DISABLE_LOAD_DOTENV=1 keeps that off too, so
    the variables are the ones read here. Under python-sb the program gets only what its env=
    rules forward (the Makefile exports .env first), and reads no file for it."""
    os.environ.setdefault("ADK_DISABLE_LOAD_DOTENV", "1")
    load_dotenv(SAMPLE / ".env")  # in a sandbox: nothing read


def answer(events: list[object]) -> str:
    """The text of the run's final response."""
    texts = [
        part.text
        for event in events
        if event.is_final_response() and event.content
        for part in event.content.parts or ()
        if part.text
    ]
    return "".join(texts)


async def turn(runner, session_id: str, text: str) -> str:
    message = types.Content(role=USER, parts=[types.Part(text=text)])
    events = [
        event
        async for event in runner.run_async(
            user_id=USER,
            session_id=session_id,
            new_message=message,
            run_config=RunConfig(max_llm_calls=MAX_LLM_CALLS),
        )
    ]
    return answer(events)


async def chat() -> int:
    runner = build_runner()
    interactive = sys.stdin.isatty()
    session = await runner.session_service.create_session(app_name=APP, user_id=USER)
    # one sandbox for the whole conversation (the plugin of each run joins it)
    async with sandboxes(sandboxes_config=str(PROFILE)):
        try:
            while True:
                if interactive:
                    print("you> ", end="", flush=True)
                line = sys.stdin.readline()
                if not line.strip():
                    return 0
                print(f"assistant> {await turn(runner, session.id, line.strip())}", flush=True)
        finally:
            await runner.close()


def main() -> int:
    load_env()
    return asyncio.run(chat())
