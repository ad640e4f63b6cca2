"""The smolagents sample, strict and offline: pages from a loopback server, the model a scripted
chat-completions server on 127.0.0.1 reached through smolagents' OpenAIServerModel.

smolagents hands the model a tool's result (or error) as a user message, not a ``tool`` one:
the checks read the whole conversation of the last request (:func:`conversation`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from samples_shared.testing import (
    DONE,
    ESCAPE,
    HINT,
    SANE,
    PageServer,
    ScriptedChatServer,
    Step,
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
from smolagents import OpenAIServerModel
from smolagents_demo import tools
from smolagents_demo.agent import build_agent, build_code_agent

from pysandboxes import sandboxes

SAMPLE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox(page_env: PageServer) -> Iterator[PageServer]:
    """Partial mode, strict: one sandbox child for the module, under the shipped profile."""
    with sandboxes(sandboxes_config=str(tools.PROFILE)):
        yield page_env


def model(chat: ScriptedChatServer) -> OpenAIServerModel:
    return OpenAIServerModel(model_id=chat.model, api_base=chat.base_url, api_key="sk-scripted-not-a-key")


def told(chat: ScriptedChatServer) -> str:
    """What the model was told, beside its system prompt, in the last request: the task and the
    results of its calls (smolagents merges them into user messages)."""
    messages = chat.requests[-1]["messages"]
    return "\n".join(str(m["content"]) for m in messages if m.get("role") != "system")


def chat_script(pages: PageServer) -> list[Step]:
    """The confined turn's calls, one a step (smolagents reports only the errors of a step whose
    parallel calls partly fail), then smolagents' way to end a run: a final_answer call."""
    (calls, _done) = confined_turn_script(pages)
    return [*(tool_calls(call) for call in calls.calls), tool_calls(("final_answer", {"answer": DONE}))]


def assert_confined(stdout: str, chat: ScriptedChatServer) -> None:
    assert f"assistant> {DONE}" in stdout, stdout
    text = told(chat)
    assert "14" in text
    assert "# Sandboxed pages" in text
    assert "DENIED" in text
    assert "EvalSyntaxRejected" in text
    assert "Quarterly notes" in text
    assert HINT not in text


# (1) negative control: the same escape succeeds under plain python, in a process of its own
def test_negative_control_the_escape_runs_without_the_sandbox(home: Path) -> None:
    assert_escape_runs_unsandboxed(home)


# (2) the allowed page, redirect followed, as markdown
def test_the_allowed_page_is_fetched(sandbox: PageServer) -> None:
    text = tools.fetch_webpage(url=sandbox.url("/redirect"))
    assert "# Sandboxed pages" in text
    assert "**allowed page**" in text


def test_a_long_page_is_truncated(sandbox: PageServer) -> None:
    text = tools.fetch_webpage(url=sandbox.url("/long"))
    assert text.endswith("[truncated at 8000 characters]")


# (3) another loopback port: refused by the sandbox
def test_another_loopback_port_is_refused(sandbox: PageServer) -> None:
    assert "DENIED" in refusal(tools.fetch_webpage, url=sandbox.other_url())


# (4) the calculator computes
def test_the_calculator_computes(sandbox: PageServer) -> None:
    assert tools.evaluate_expression(expression=SANE) == "14"


# (5) the eval escape is refused before it runs
def test_the_eval_escape_is_refused(sandbox: PageServer) -> None:
    assert "EvalSyntaxRejected" in refusal(tools.evaluate_expression, expression=ESCAPE)


def test_documents_are_read_and_nothing_beside_them(sandbox: PageServer) -> None:
    assert tools.read_document(name="notes.txt").startswith("Quarterly notes")
    assert "RuleFileNotFoundError" in refusal(tools.read_document, name="../env.example")


# (6) the real agent loop: the model receives each refusal as text, without the hint
def test_the_model_receives_the_refusals_as_text(
    sandbox: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = [
        # one call a step: smolagents reports only the errors of a step whose calls partly fail
        tool_calls(("evaluate_expression", {"expression": SANE})),
        tool_calls(("fetch_webpage", {"url": sandbox.other_url()})),
        tool_calls(("evaluate_expression", {"expression": ESCAPE})),
        tool_calls(("final_answer", {"answer": "Two of them were refused."})),
    ]
    assert build_agent(model(chat_server)).run("go") == "Two of them were refused."
    text = told(chat_server)
    assert "14" in text
    assert "DENIED" in text
    assert "EvalSyntaxRejected" in text
    assert HINT not in text


def code_step(code: str) -> Step:
    """A CodeAgent's answer: a thought and its code, in smolagents' <code> tags."""
    return reply(f"Thought: I run code.\n<code>\n{code}\n</code>")


# the CodeAgent: the model's code runs in the sandbox's child; a file of data/ is read (the
# tool and pathlib both), one outside the rules is refused and the agent sees the refusal
def test_the_code_agent_reads_a_document(sandbox: PageServer, chat_server: ScriptedChatServer) -> None:
    notes = tools.DATA / "notes.txt"
    chat_server.script = [
        code_step(f"import pathlib\nprint(pathlib.Path({str(notes)!r}).read_text().splitlines()[0])"),
        code_step("final_answer(read_document(name='notes.txt').splitlines()[0])"),
    ]
    with build_code_agent(model(chat_server)) as agent:
        assert agent.run("go") == "Quarterly notes"
    assert "Quarterly notes" in told(chat_server)


def test_the_code_agent_is_refused_a_file_outside_the_rules(
    sandbox: PageServer, chat_server: ScriptedChatServer
) -> None:
    secret = SAMPLE / "env.example"
    chat_server.script = [
        code_step(f"import pathlib\nprint(pathlib.Path({str(secret)!r}).read_text())"),
        code_step("final_answer('refused')"),
    ]
    with build_code_agent(model(chat_server)) as agent:
        assert agent.run("go") == "refused"
    text = told(chat_server)
    assert "RuleFileNotFoundError" in text
    assert "OPENAI_API_KEY" not in text
    assert HINT not in text


# (7) the shipped profiles hold no broad rule
@pytest.mark.parametrize("profile", [".py-sandboxes", ".py-sandboxes-complete"])
def test_the_shipped_profiles_hold_no_broad_rule(profile: str) -> None:
    assert profile_problems(SAMPLE / profile) == []


# the chat entry point, partial mode: one turn against the scripted model
def test_the_chat_runs_a_turn(home: Path, pages: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = chat_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = plain_python("from smolagents_demo.chat import main; main()", env=env, cwd=SAMPLE, input="go\n")
    assert result.returncode == 0, result.stderr
    assert_confined(result.stdout, chat_server)


# (8) complete mode: the chat under python-sb confines the same calls
def test_complete_mode_confines_the_same_calls(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = chat_script(pages)
    env = sample_env(home, **pages.env(), **chat_server.env())
    result = run_python_sb(
        ["--pysandboxes-config=.py-sandboxes-complete", "-m", "smolagents_demo"],
        env=env,
        cwd=SAMPLE,
        input="go\n",
    )
    assert result.returncode == 0, result.stderr
    assert_confined(result.stdout, chat_server)
