"""The langgraph sample, strict and offline: pages from a loopback server, the model a scripted
chat-completions server on 127.0.0.1 reached through langchain-openai."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI
from langgraph_demo import tools
from langgraph_demo.graph import ask, build_graph
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


def model(chat: ScriptedChatServer) -> ChatOpenAI:
    return ChatOpenAI(model=chat.model, base_url=chat.base_url, api_key="sk-scripted-not-a-key")


# (1) negative control: the same escape succeeds under plain python, in a process of its own
def test_negative_control_the_escape_runs_without_the_sandbox(home: Path) -> None:
    assert_escape_runs_unsandboxed(home)


# (2) the allowed page, redirect followed, as markdown
def test_the_allowed_page_is_fetched(sandbox: PageServer) -> None:
    text = tools.fetch_webpage.invoke({"url": sandbox.url("/redirect")})
    assert "# Sandboxed pages" in text
    assert "**allowed page**" in text


# (3) another loopback port: refused by the sandbox (the tool's host wrapper raises it)
def test_another_loopback_port_is_refused(sandbox: PageServer) -> None:
    assert "DENIED" in refusal(tools.fetch_webpage.func, url=sandbox.other_url())


# (4) the calculator computes
def test_the_calculator_computes(sandbox: PageServer) -> None:
    assert tools.evaluate_expression.invoke({"expression": SANE}) == "14"


# (5) the eval escape is refused before it runs
def test_the_eval_escape_is_refused(sandbox: PageServer) -> None:
    assert "EvalSyntaxRejected" in refusal(tools.evaluate_expression.func, expression=ESCAPE)


def test_documents_are_read_and_nothing_beside_them(sandbox: PageServer) -> None:
    assert tools.read_document.invoke({"name": "notes.txt"}).startswith("Quarterly notes")
    assert "RuleFileNotFoundError" in refusal(tools.read_document.func, name="../env.example")


# (6) the real graph: the ToolNode hands the model each refusal as text, without the hint
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
    assert ask(build_graph(model(chat_server)), "go") == "Two of them were refused."
    sane, port, escape = chat_server.tool_messages()
    assert sane == "14"
    assert "DENIED" in port
    assert "EvalSyntaxRejected" in escape
    assert HINT not in port + escape


# the graph's state is the history: a second turn of the same thread sends the first one again
def test_the_graph_state_is_the_history(sandbox: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = [reply("first answer"), reply("second answer")]
    graph = build_graph(model(chat_server))
    assert ask(graph, "first question") == "first answer"
    assert ask(graph, "second question") == "second answer"
    sent = [m.get("content") for m in chat_server.requests[-1]["messages"]]
    assert sent[1:] == ["first question", "first answer", "second question"]
    assert ask(graph, "other thread", thread="other") == "(end of script)"
    assert len(chat_server.requests[-1]["messages"]) == 2  # the system message and the question


# (7) the shipped profiles hold no broad rule
@pytest.mark.parametrize("profile", [".py-sandboxes", ".py-sandboxes-complete"])
def test_the_shipped_profiles_hold_no_broad_rule(profile: str) -> None:
    assert profile_problems(SAMPLE / profile) == []


# the chat entry point, partial mode: one turn against the scripted model
def test_the_chat_runs_a_turn(home: Path, pages: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = confined_turn_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = plain_python("from langgraph_demo.chat import main; main()", env=env, cwd=SAMPLE, input="go\n")
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)


# (8) complete mode: the chat under python-sb confines the same calls
def test_complete_mode_confines_the_same_calls(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = confined_turn_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = run_python_sb(
        ["--pysandboxes-config=.py-sandboxes-complete", "-m", "langgraph_demo"],
        env=env,
        cwd=SAMPLE,
        input="go\n",
    )
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)
