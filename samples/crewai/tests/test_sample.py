"""The crewai sample, strict and offline: pages from a loopback server, the model a scripted
chat-completions server on 127.0.0.1 reached through crewai's native OpenAI provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from crewai import LLM
from crewai_demo import tools
from crewai_demo.crew import build_crew
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
    reply,
    run_python_sb,
    sample_env,
    tool_calls,
)

from pysandboxes import sandbox_denials, sandboxes
from pysandboxes_crewai import SandboxRefusal

SAMPLE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def sandbox(page_env: PageServer) -> Iterator[PageServer]:
    """Partial mode, strict: one sandbox child for the module, under the shipped profile."""
    with sandboxes(sandboxes_config=str(tools.PROFILE)):
        yield page_env


def refused(tool: Any, **arguments: Any) -> str:
    """The tool, called through crewai's dispatch (``run``), returns a refusal: crewai's declared
    tool failure, whose message (what the model reads) has no hint; its denials, one a line."""
    result = tool.run(**arguments)
    assert isinstance(result, SandboxRefusal), result
    assert HINT not in result.message
    return "\n".join(sandbox_denials(result.exception))


def model(chat: ScriptedChatServer) -> LLM:
    return LLM(model=f"openai/{chat.model}", base_url=chat.base_url, api_key="sk-scripted-not-a-key")


def crewai_env(home: Path, **extra: str) -> dict[str, str]:
    """A run's environment: crewai's tracing off too, the sandboxed code's home inside ``home``."""
    child = home / "child"
    child.mkdir(exist_ok=True)
    return sample_env(home, CREWAI_TRACING_ENABLED="false", SANDBOX_HOME=str(child), **extra)


# (1) negative control: the same escape succeeds under plain python, in a process of its own
def test_negative_control_the_escape_runs_without_the_sandbox(home: Path) -> None:
    assert_escape_runs_unsandboxed(home)


# (2) the allowed page, redirect followed, as markdown
def test_the_allowed_page_is_fetched(sandbox: PageServer) -> None:
    text = tools.fetch_webpage.run(url=sandbox.url("/redirect"))
    assert "# Sandboxed pages" in text
    assert "**allowed page**" in text


def test_a_long_page_is_truncated(sandbox: PageServer) -> None:
    text = tools.fetch_webpage.run(url=sandbox.url("/long"))
    assert text.endswith("[truncated at 8000 characters]")


# (3) another loopback port: refused by the sandbox
def test_another_loopback_port_is_refused(sandbox: PageServer) -> None:
    assert "DENIED" in refused(tools.fetch_webpage, url=sandbox.other_url())


# (4) the calculator computes
def test_the_calculator_computes(sandbox: PageServer) -> None:
    assert tools.evaluate_expression.run(expression=SANE) == "14"


# (5) the eval escape is refused before it runs
def test_the_eval_escape_is_refused(sandbox: PageServer) -> None:
    assert "EvalSyntaxRejected" in refused(tools.evaluate_expression, expression=ESCAPE)


def test_documents_are_read_and_nothing_beside_them(sandbox: PageServer) -> None:
    assert tools.read_document.run(name="notes.txt").startswith("Quarterly notes")
    assert "RuleFileNotFoundError" in refused(tools.read_document, name="../env.example")


# (6) the real crew loop: the model receives each refusal as text, without the hint
def test_the_model_receives_the_refusals_as_text(
    sandbox: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = [
        tool_calls(("evaluate_expression", {"expression": SANE})),
        tool_calls(("fetch_webpage", {"url": sandbox.other_url()})),
        tool_calls(("evaluate_expression", {"expression": ESCAPE})),
        reply("Two of them were refused."),
    ]
    result = build_crew("go", llm=model(chat_server)).kickoff()
    assert result.raw == "Two of them were refused."
    sane, port, escape = chat_server.tool_messages()
    assert sane == "14"
    assert "DENIED" in port
    assert "EvalSyntaxRejected" in escape
    assert HINT not in port + escape
    # crewai records the refusals as the task's tool failures
    assert len(result.tasks_output[0].tool_failures) == 2


# (7) the shipped profiles hold no broad rule
@pytest.mark.parametrize("profile", [".py-sandboxes", ".py-sandboxes-complete"])
def test_the_shipped_profiles_hold_no_broad_rule(profile: str) -> None:
    assert profile_problems(SAMPLE / profile) == []


# the chat entry point, partial mode: one turn against the scripted model
def test_the_chat_runs_a_turn(home: Path, pages: PageServer, chat_server: ScriptedChatServer) -> None:
    chat_server.script = confined_turn_script(pages)
    env = crewai_env(home, **pages.env(), **chat_server.env())
    result = plain_python("from crewai_demo.chat import main; main()", env=env, cwd=SAMPLE, input="go\n")
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)


# (8) complete mode: the chat under python-sb confines the same calls
def test_complete_mode_confines_the_same_calls(
    home: Path, pages: PageServer, chat_server: ScriptedChatServer
) -> None:
    chat_server.script = confined_turn_script(pages)
    env = crewai_env(home, **pages.env(), **chat_server.env())
    result = run_python_sb(
        ["--pysandboxes-config=.py-sandboxes-complete", "-m", "crewai_demo"],
        env=env,
        cwd=SAMPLE,
        input="go\n",
    )
    assert result.returncode == 0, result.stderr
    assert_confined_turn(result.stdout, chat_server)
