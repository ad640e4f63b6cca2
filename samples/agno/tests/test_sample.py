"""The agno sample, strict and offline: pages from a loopback server, the model a scripted
chat-completions server on 127.0.0.1 reached through agno's OpenAILike."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agno.models.openai.like import OpenAILike
from agno_demo import tools
from agno_demo.agent import ask, build_agent, chat_model
from samples_shared.testing import (
    ESCAPE,
    HINT,
    SANE,
    PageServer,
    ScriptedChatServer,
    assert_confined_turn,
    assert_escape_runs_unsandboxed,
    confined_turn_script,
    plain_python,
    profile_problems,
    refusal,
    reply,
    run_python_sb,
    sample_env,
    tool_calls,
)

from pysandboxes import sandboxes

SAMPLE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox(page_env: PageServer) -> Iterator[PageServer]:
    """Partial mode, strict: one sandbox child for the module, under the shipped profile."""
    with sandboxes(sandboxes_config=str(tools.PROFILE)):
        yield page_env


def model(chat: ScriptedChatServer) -> OpenAILike:
    return chat_model(f"openai:{chat.model}", base_url=chat.base_url, api_key="sk-scripted-not-a-key")


# (1) negative control: the same escape succeeds under plain python, in a process of its own
def test_negative_control_the_escape_runs_without_the_sandbox(home: Path) -> None:
    assert_escape_runs_unsandboxed(home)


# (2) the allowed page, redirect followed, as markdown
def test_the_allowed_page_is_fetched(sandbox: PageServer) -> None:
    text = tools.fetch_webpage.entrypoint(url=sandbox.url("/redirect"))
    assert "# Sandboxed pages" in text
    assert "**allowed page**" in text


# (3) another loopback port: refused by the sandbox (the tool's entrypoint raises it)
def test_another_loopback_port_is_refused(sandbox: PageServer) -> None:
    assert "DENIED" in refusal(tools.fetch_webpage.entrypoint, url=sandbox.other_url())


# (4) the calculator computes
def test_the_calculator_computes(sandbox: PageServer) -> None:
    assert tools.evaluate_expression.entrypoint(expression=SANE) == "14"


# (5) the eval escape is refused before it runs
def test_the_eval_escape_is_refused(sandbox: PageServer) -> None:
    assert "EvalSyntaxRejected" in refusal(tools.evaluate_expression.entrypoint, expression=ESCAPE)


def test_documents_are_read_and_nothing_beside_them(sandbox: PageServer) -> None:
    assert tools.read_document.entrypoint(name="notes.txt").startswith("Quarterly notes")
    assert "RuleFileNotFoundError" in refusal(tools.read_document.entrypoint, name="../env.example")


# (6) the real agent loop: the model receives each refusal as the tool's error text, without the
# hint; the run goes on
def test_the_model_receives_the_refusals_as_text(
    sandbox: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = [
        tool_calls(
            ("evaluate_expression", {"expression": SANE}),
            ("fetch_webpage", {"url": sandbox.other_url()}),
            ("evaluate_expression", {"expression": ESCAPE}),
        ),
        reply("Two of them were refused."),
    ]
    assert ask(build_agent(model(chat_server)), "go") == "Two of them were refused."
    sane, port, escape = chat_server.tool_messages()
    assert sane == "14"
    assert "DENIED" in port
    assert "EvalSyntaxRejected" in escape
    assert HINT not in port + escape


# session history: a second run of the same session sends the first one again, another session not
def test_the_session_is_the_history(sandbox: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = [reply("first answer"), reply("second answer")]
    agent = build_agent(model(chat_server))
    assert ask(agent, "first question") == "first answer"
    assert ask(agent, "second question") == "second answer"
    sent = [m.get("content") for m in chat_server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == ["first question", "first answer", "second question"]
    assert ask(agent, "other session", session="other") == "(end of script)"
    sent = [m.get("content") for m in chat_server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == ["other session"]


# (7) the shipped profiles hold no broad rule
@pytest.mark.parametrize("profile", [".py-sandboxes", ".py-sandboxes-complete"])
def test_the_shipped_profiles_hold_no_broad_rule(profile: str) -> None:
    assert profile_problems(SAMPLE / profile) == []


# the chat entry point, partial mode: one turn against the scripted model
def test_the_chat_runs_a_turn(home: Path, pages: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = confined_turn_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = plain_python("from agno_demo.chat import main; main()", env=env, cwd=SAMPLE, input="go\n")
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)


# (8) complete mode: the chat under python-sb confines the same calls
def test_complete_mode_confines_the_same_calls(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = confined_turn_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = run_python_sb(
        ["--pysandboxes-config=.py-sandboxes-complete", "-m", "agno_demo"],
        env=env,
        cwd=SAMPLE,
        input="go\n",
    )
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)
