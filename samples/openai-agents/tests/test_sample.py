"""The openai-agents sample, strict and offline: pages from a loopback server, the model a scripted
chat-completions server on 127.0.0.1 reached through ``OpenAIChatCompletionsModel``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from agents import Runner, RunResult
from openai_agents_demo import tools
from openai_agents_demo.agent import MAX_TURNS, build_agent, chat_model, client, hooks
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
from pysandboxes_openai_agents import REFUSED

SAMPLE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox(page_env: PageServer) -> Iterator[PageServer]:
    """Partial mode, strict: one sandbox child for the module, under the shipped profile."""
    with sandboxes(sandboxes_config=str(tools.PROFILE)):
        yield page_env


def run(chat: ScriptedChatServer, question: str, **kwargs: object) -> RunResult:
    """One Runner.run against the scripted server, in a loop of its own; the client (and its
    connections) closed before the loop ends."""

    async def main() -> RunResult:
        async with client(chat.base_url, "sk-scripted-not-a-key") as openai_client:
            agent = build_agent(chat_model(openai_client, f"openai:{chat.model}"))
            return await Runner.run(agent, question, hooks=hooks(), max_turns=MAX_TURNS, **kwargs)

    return asyncio.run(main())


def call(tool: object, **arguments: object) -> str:
    """One tool call through the SDK's dispatch (``on_invoke_tool``), what the model reads."""
    import json

    from agents.tool_context import ToolContext

    text = json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="t", tool_arguments=text)  # type: ignore[attr-defined]
    return str(asyncio.run(tool.on_invoke_tool(context, text)))  # type: ignore[attr-defined]


# (1) negative control: the same escape succeeds under plain python, in a process of its own
def test_negative_control_the_escape_runs_without_the_sandbox(home: Path) -> None:
    assert_escape_runs_unsandboxed(home)


# (2) the allowed page, redirect followed, as markdown
def test_the_allowed_page_is_fetched(sandbox: PageServer) -> None:
    text = call(tools.fetch_webpage, url=sandbox.url("/redirect"))
    assert "# Sandboxed pages" in text
    assert "**allowed page**" in text


# (3) another loopback port: refused by the sandbox (the sandboxed body, on_denial="raise"
# semantics through sandbox_denials), and the tool answers it as text
def test_another_loopback_port_is_refused(sandbox: PageServer) -> None:
    from samples_shared import tools as bodies

    from pysandboxes import sandbox as sandboxed

    fetch = sandboxed(bodies.fetch_webpage)
    assert "DENIED" in refusal(fetch, sandbox.other_url())
    text = call(tools.fetch_webpage, url=sandbox.other_url())
    assert text.startswith(REFUSED)
    assert "DENIED" in text


# (4) the calculator computes
def test_the_calculator_computes(sandbox: PageServer) -> None:
    assert call(tools.evaluate_expression, expression=SANE) == "14"


# (5) the eval escape is refused before it runs
def test_the_eval_escape_is_refused(sandbox: PageServer) -> None:
    text = call(tools.evaluate_expression, expression=ESCAPE)
    assert text.startswith(REFUSED)
    assert "EvalSyntaxRejected" in text
    assert "escaped" not in text


def test_documents_are_read_and_nothing_beside_them(sandbox: PageServer) -> None:
    assert call(tools.read_document, name="notes.txt").startswith("Quarterly notes")
    text = call(tools.read_document, name="../env.example")
    assert text.startswith(REFUSED)
    assert "RuleFileNotFoundError" in text


# (6) the real agent loop: the model receives each refusal as text, without the hint; the run
# goes on
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
    result = run(chat_server, "go")
    assert result.final_output == "Two of them were refused."
    sane, port, escape = chat_server.tool_messages()
    assert sane == "14"
    assert "DENIED" in port
    assert "EvalSyntaxRejected" in escape
    assert HINT not in port + escape
    # the tools the model was offered: the plain functions' schemas
    offered = {tool["function"]["name"]: tool["function"] for tool in chat_server.requests[0]["tools"]}
    assert set(offered) == {"fetch_webpage", "evaluate_expression", "read_document"}
    assert list(offered["fetch_webpage"]["parameters"]["properties"]) == ["url"]
    # the history of the next turn: to_input_list() holds the question, the calls, their
    # outputs and the answer
    kinds = [item.get("type", item.get("role")) for item in result.to_input_list()]
    assert kinds.count("function_call_output") == 3
    assert kinds[0] == "user"


# max_turns: a model that keeps calling tools is stopped within the turn's budget
def test_max_turns_ends_a_runaway_turn(sandbox: PageServer, chat_server: ScriptedChatServer) -> None:
    from agents.exceptions import MaxTurnsExceeded

    chat_server.script = [tool_calls(("evaluate_expression", {"expression": SANE}))] * 20
    with pytest.raises(MaxTurnsExceeded):
        run(chat_server, "go")
    assert len(chat_server.requests) == MAX_TURNS


# (7) the shipped profiles hold no broad rule
@pytest.mark.parametrize("profile", [".py-sandboxes", ".py-sandboxes-complete"])
def test_the_shipped_profiles_hold_no_broad_rule(profile: str) -> None:
    assert profile_problems(SAMPLE / profile) == []


# the chat entry point, partial mode: one turn against the scripted model, then a second turn
# that carries the first as history (to_input_list)
def test_the_chat_runs_a_turn(home: Path, pages: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = [*confined_turn_script(pages), reply("again")]
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = plain_python(
        "from openai_agents_demo.chat import main; main()", env=env, cwd=SAMPLE, input="go\nonce more\n"
    )
    assert result.returncode == 0, result.stderr
    assert "assistant> again" in result.stdout
    assert_confined_turn(result.stdout, chat_server)
    last = [m.get("content") for m in chat_server.requests[-1]["messages"] if m.get("role") == "user"]
    assert last == ["go", "once more"]


# (8) complete mode: the chat under python-sb confines the same calls
def test_complete_mode_confines_the_same_calls(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = confined_turn_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = run_python_sb(
        ["--pysandboxes-config=.py-sandboxes-complete", "-m", "openai_agents_demo"],
        env=env,
        cwd=SAMPLE,
        input="go\n",
    )
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)
