"""The google-adk sample, strict and offline: pages from a loopback server, the model a scripted
chat-completions server on 127.0.0.1 reached through ADK's own chat-completions client."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("ADK_DISABLE_LOAD_DOTENV", "1")

from google.adk.agents.run_config import RunConfig, StreamingMode
from google.genai import types
from google_adk_demo import tools
from google_adk_demo.agent import APP, build_runner, chat_model
from samples_shared.testing import (
    ESCAPE,
    ESCAPE_SETUP,
    HINT,
    SANE,
    PageServer,
    ScriptedChatServer,
    assert_confined_turn,
    confined_turn_script,
    plain_python,
    profile_problems,
    reply,
    run_python_sb,
    sample_env,
    tool_calls,
)

from pysandboxes import sandboxes

SAMPLE = Path(__file__).resolve().parents[1]
#: ADK loads no .env of its own (only its CLI would), in every process a test starts
ADK = {"ADK_DISABLE_LOAD_DOTENV": "1"}


@pytest.fixture(scope="module")
def sandbox(page_env: PageServer) -> Iterator[PageServer]:
    """Partial mode, strict: one sandbox child for the module, under the shipped profile."""
    with sandboxes(sandboxes_config=str(tools.PROFILE)):
        yield page_env


def call(tool: Any, **arguments: Any) -> Any:
    """The tool's wrapper, called as ADK's FunctionTool calls it: the result, or ``{"error": ...}``."""
    return tool.func(**arguments)


def refusal_of(tool: Any, **arguments: Any) -> str:
    """The refusal as ADK's tool-error response, ``{"error": "ExcName: message"}``: the adapter's
    text form (on_denial="text") gives the model the refusal's class and message, never an
    exception, so the text is what is asserted (the denial's class names the rule family)."""
    result = call(tool, **arguments)
    assert isinstance(result, dict) and set(result) == {"error"}, result
    assert HINT not in result["error"]
    return result["error"]


# (1) negative control: the same escape succeeds under plain python, in a process of its own
def test_negative_control_the_escape_runs_without_the_sandbox(home: Path) -> None:
    code = f"{ESCAPE_SETUP}\nfrom samples_shared.tools import evaluate_expression\nprint(evaluate_expression({ESCAPE!r}))"
    result = plain_python(code, env=sample_env(home, **ADK))
    assert result.returncode == 0, result.stderr
    assert "b'escaped\\n'" in result.stdout


# (2) the allowed page, redirect followed, as markdown
def test_the_allowed_page_is_fetched(sandbox: PageServer) -> None:
    text = call(tools.fetch_webpage, url=sandbox.url("/redirect"))
    assert "# Sandboxed pages" in text
    assert "**allowed page**" in text


def test_a_long_page_is_truncated(sandbox: PageServer) -> None:
    assert call(tools.fetch_webpage, url=sandbox.url("/long")).endswith("[truncated at 8000 characters]")


# (3) another loopback port: refused by the sandbox
def test_another_loopback_port_is_refused(sandbox: PageServer) -> None:
    assert "DENIED" in refusal_of(tools.fetch_webpage, url=sandbox.other_url())


# (4) the calculator computes
def test_the_calculator_computes(sandbox: PageServer) -> None:
    assert call(tools.evaluate_expression, expression=SANE) == "14"


# (5) the eval escape is refused before it runs
def test_the_eval_escape_is_refused(sandbox: PageServer) -> None:
    assert "EvalSyntaxRejected" in refusal_of(tools.evaluate_expression, expression=ESCAPE)


def test_documents_are_read_and_nothing_beside_them(sandbox: PageServer) -> None:
    assert call(tools.read_document, name="notes.txt").startswith("Quarterly notes")
    assert "RuleFileNotFoundError" in refusal_of(tools.read_document, name="../env.example")


async def one_run(chat: ScriptedChatServer, streaming: StreamingMode) -> list[Any]:
    env = {"OPENAI_BASE_URL": chat.base_url, "OPENAI_API_KEY": "sk-scripted-not-a-key"}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        runner = build_runner(chat_model(f"openai:{chat.model}"))
    try:
        session = await runner.session_service.create_session(app_name=APP, user_id="user")
        message = types.Content(role="user", parts=[types.Part(text="go")])
        config = RunConfig(streaming_mode=streaming, max_llm_calls=4)
        return [
            event
            async for event in runner.run_async(
                user_id="user", session_id=session.id, new_message=message, run_config=config
            )
        ]
    finally:
        await runner.close()


# (6) the real agent loop: the model receives each refusal as text, without the hint (the
# answers streamed, tool calls included, and not)
@pytest.mark.parametrize("streaming", [StreamingMode.NONE, StreamingMode.SSE], ids=["whole", "streamed"])
def test_the_model_receives_the_refusals_as_text(
    streaming: StreamingMode, sandbox: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = [
        tool_calls(
            ("evaluate_expression", {"expression": SANE}),
            ("fetch_webpage", {"url": sandbox.other_url()}),
            ("evaluate_expression", {"expression": ESCAPE}),
        ),
        reply("Two of them were refused."),
    ]
    events = asyncio.run(one_run(chat_server, streaming))
    final = [p.text for e in events if e.is_final_response() and e.content for p in e.content.parts if p.text]
    assert "".join(final) == "Two of them were refused."
    sane, port, escape = chat_server.tool_messages()
    assert '"14"' in sane
    assert "DENIED" in port and '"error"' in port
    assert "EvalSyntaxRejected" in escape
    assert HINT not in port + escape
    assert bool(chat_server.requests[0].get("stream")) is (streaming == StreamingMode.SSE)


# (7) the shipped profiles hold no broad rule
@pytest.mark.parametrize("profile", [".py-sandboxes", ".py-sandboxes-complete"])
def test_the_shipped_profiles_hold_no_broad_rule(profile: str) -> None:
    assert profile_problems(SAMPLE / profile) == []


# the chat entry point, partial mode: one turn against the scripted model, in one ADK session
def test_the_chat_runs_a_turn(home: Path, pages: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = [*confined_turn_script(pages), reply("second")]
    env = sample_env(home, **pages.env(), **chat_server.env(), **ADK)
    result = plain_python(
        "from google_adk_demo.chat import main; main()", env=env, cwd=SAMPLE, input="go\nagain\n"
    )
    assert result.returncode == 0, result.stderr
    assert "assistant> second" in result.stdout
    # the second turn's request holds the first (the session is the history)
    assert_confined_turn(result.stdout, chat_server)
    assert [m["content"] for m in chat_server.requests[-1]["messages"] if m["role"] == "user"] == [
        "go",
        "again",
    ]


# (8) complete mode: the chat under python-sb confines the same calls
def test_complete_mode_confines_the_same_calls(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = confined_turn_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env(), **ADK)
    result = run_python_sb(
        ["--pysandboxes-config=.py-sandboxes-complete", "-m", "google_adk_demo"],
        env=env,
        cwd=SAMPLE,
        input="go\n",
    )
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)
