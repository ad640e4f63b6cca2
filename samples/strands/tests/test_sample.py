"""The strands sample, strict and offline: pages from a loopback server, the model a scripted
chat-completions server on 127.0.0.1 reached through strands' OpenAI model provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
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
from strands.models.openai import OpenAIModel
from strands_demo import tools
from strands_demo.agent import build_agent

from pysandboxes import sandbox_denials, sandboxes

SAMPLE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox(page_env: PageServer) -> Iterator[PageServer]:
    """Partial mode, strict: one sandbox child for the module, under the shipped profile."""
    with sandboxes(sandboxes_config=str(tools.PROFILE)):
        yield page_env


def refusal_of(tool: Any, **arguments: Any) -> str:
    """Call the tool directly: the refusal it raises (strands' loop turns it into an error
    toolResult), as sandbox_denials sees it; its message, what the model reads, has no hint."""
    with pytest.raises(Exception) as caught:
        tool(**arguments)
    denials = sandbox_denials(caught.value)
    assert denials, f"not a sandbox refusal: {caught.value!r}"
    assert HINT not in str(caught.value)
    return "\n".join(denials)


def model(chat: ScriptedChatServer) -> OpenAIModel:
    return OpenAIModel(
        client_args={"base_url": chat.base_url, "api_key": "sk-scripted-not-a-key"}, model_id=chat.model
    )


# (1) negative control: the same escape succeeds under plain python, in a process of its own
def test_negative_control_the_escape_runs_without_the_sandbox(home: Path) -> None:
    code = f"{ESCAPE_SETUP}\nfrom samples_shared.tools import evaluate_expression\nprint(evaluate_expression({ESCAPE!r}))"
    result = plain_python(code, env=sample_env(home))
    assert result.returncode == 0, result.stderr
    assert "b'escaped\\n'" in result.stdout


# (2) the allowed page, redirect followed, as markdown
def test_the_allowed_page_is_fetched(sandbox: PageServer) -> None:
    text = tools.fetch_webpage(url=sandbox.url("/redirect"))
    assert "# Sandboxed pages" in text
    assert "**allowed page**" in text


def test_a_long_page_is_truncated(sandbox: PageServer) -> None:
    assert tools.fetch_webpage(url=sandbox.url("/long")).endswith("[truncated at 8000 characters]")


# (3) another loopback port: refused by the sandbox
def test_another_loopback_port_is_refused(sandbox: PageServer) -> None:
    assert "DENIED" in refusal_of(tools.fetch_webpage, url=sandbox.other_url())


# (4) the calculator computes
def test_the_calculator_computes(sandbox: PageServer) -> None:
    assert tools.evaluate_expression(expression=SANE) == "14"


# (5) the eval escape is refused before it runs
def test_the_eval_escape_is_refused(sandbox: PageServer) -> None:
    assert "EvalSyntaxRejected" in refusal_of(tools.evaluate_expression, expression=ESCAPE)


def test_documents_are_read_and_nothing_beside_them(sandbox: PageServer) -> None:
    assert tools.read_document(name="notes.txt").startswith("Quarterly notes")
    assert "RuleFileNotFoundError" in refusal_of(tools.read_document, name="../env.example")


# (6) the real agent loop: the model receives each refusal as text, without the hint (strands'
# OpenAI provider always streams, tool calls included)
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
    result = build_agent(model(chat_server))("go")
    assert str(result).strip() == "Two of them were refused."
    sane, port, escape = chat_server.tool_messages()
    assert sane == "14"
    assert "DENIED" in port
    assert "EvalSyntaxRejected" in escape
    assert HINT not in port + escape
    assert chat_server.requests[0].get("stream") is True


# the hook that caps model calls: the call past the cap is not made, its text ends the turn
def test_the_hook_caps_the_model_calls(sandbox: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = [tool_calls(("evaluate_expression", {"expression": SANE})), reply("never sent")]
    agent = build_agent(model(chat_server), max_model_calls=1)
    assert str(agent("go")).strip() == "(stopped: 1 model calls in one turn)"
    assert len(chat_server.requests) == 1
    # the cap is per invocation: the next one gets its call
    assert str(agent("again")).strip() == "never sent"
    assert len(chat_server.requests) == 2


# (7) the shipped profiles hold no broad rule
@pytest.mark.parametrize("profile", [".py-sandboxes", ".py-sandboxes-complete"])
def test_the_shipped_profiles_hold_no_broad_rule(profile: str) -> None:
    assert profile_problems(SAMPLE / profile) == []


# the chat entry point, partial mode: two questions, the agent's messages the history
def test_the_chat_runs_a_turn(home: Path, pages: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = [*confined_turn_script(pages), reply("second")]
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = plain_python(
        "from strands_demo.chat import main; main()", env=env, cwd=SAMPLE, input="go\nagain\n"
    )
    assert result.returncode == 0, result.stderr
    assert "assistant> second" in result.stdout
    assert_confined_turn(result.stdout, chat_server)
    users = [m["content"] for m in chat_server.requests[-1]["messages"] if m["role"] == "user"]
    assert [u if isinstance(u, str) else "".join(p.get("text", "") for p in u) for u in users] == [
        "go",
        "again",
    ]


# (8) complete mode: the chat under python-sb confines the same calls
def test_complete_mode_confines_the_same_calls(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = confined_turn_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = run_python_sb(
        ["--pysandboxes-config=.py-sandboxes-complete", "-m", "strands_demo"],
        env=env,
        cwd=SAMPLE,
        input="go\n",
    )
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)
