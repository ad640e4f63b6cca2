"""What is particular to crewai: a refusal is crewai's declared tool failure reading the denial
text (not crewai's own error text, which carries the hint), in both of crewai's loops (native
function calling and ReAct text); ``on_denial="raise"`` stops the run; ``tool()``'s forms and
arguments. The runs here share one sandbox (``shared``): test_lifecycle.py has the runs that
open and close their own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import ModuleType

import pytest
from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailureReason

from pysandboxes import sandbox_denials, sandboxes
from pysandboxes_conformance import Seen
from pysandboxes_crewai import SandboxedTool, SandboxRefusal, SandboxStop

from ._files import Files, kickoff
from .conftest import CrewaiHarness, crew, crewai_warnings, tool_messages


@pytest.fixture(scope="module", autouse=True)
def shared(files: tuple[Files, ModuleType]) -> Iterator[None]:
    """One sandbox for the module's runs: each run's sandbox_kickoff joins it."""
    made, _ = files
    with sandboxes(sandboxes_config=str(made.root / ".py-sandboxes")):
        yield


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("react", [False, True], ids=["native", "react"])
def test_a_refusal_is_the_tools_result_text_and_the_run_goes_on(
    files: tuple[Files, ModuleType], react: bool
) -> None:
    made, tools = files
    calls = [("read_file", {"path": made.secret}), ("read_file", {"path": made.notes})]
    observed, output = kickoff(tools, calls, [tools.read_file], react=react)
    refusal, allowed = observed
    assert refusal.error and not allowed.error
    assert allowed.text.startswith("one\ntwo")
    if react:  # the ReAct loop appends nothing to an observation; the text is the refusal's
        assert refusal.text.startswith(made.refused)
    else:
        assert refusal.text == made.refused
    assert "Add `" not in refusal.text and "s3cret" not in refusal.text
    assert "Error executing tool" not in refusal.text and "I encountered an error" not in refusal.text
    (record,) = output.tasks_output[0].tool_failures  # crewai knows the call failed
    assert isinstance(record.failure, SandboxRefusal)
    assert (record.tool_name, record.failure.message) == ("read_file", made.refused)
    assert record.failure.reason is ToolFailureReason.TOOL_REPORTED
    assert sandbox_denials(record.failure.exception)
    assert output.raw == "done"  # the model answered last


@pytest.mark.parametrize("react", [False, True], ids=["native", "react"])
def test_a_plain_tool_calling_a_sandbox_function_gives_crewai_the_hint(
    files: tuple[Files, ModuleType], react: bool
) -> None:
    """The control: without the adapter, crewai makes the refusal's whole message the model's
    text, the hint for the developer included (after retrying the call, in the ReAct loop)."""
    made, tools = files
    calls = [("plain_read", {"path": made.secret})]
    observed, _ = kickoff(tools, calls, [tools.plain_read], react=react, lifecycle=False)
    assert observed[-1].error
    assert f"Access to '{made.secret}' must be accepted by a rule." in observed[-1].text
    assert "Add `" in observed[-1].text


@pytest.mark.parametrize("react", [False, True], ids=["native", "react"])
def test_on_denial_raise_stops_the_run_without_the_refusals_text(
    files: tuple[Files, ModuleType], react: bool
) -> None:
    made, tools = files
    calls = [("read_or_stop", {"path": made.secret}), ("read_file", {"path": made.notes})]
    team, llm = crew(tools, calls, tools=[tools.read_or_stop, tools.read_file], react=react)
    with crewai_warnings(), pytest.raises(SandboxStop) as stopped:
        team.kickoff()
    assert stopped.value.reason == made.refused and stopped.value.source == "pysandboxes-crewai"
    assert sandbox_denials(stopped.value) and "Add `" in str(stopped.value.__cause__)
    assert tool_messages(llm.seen[-1], react=react) == []  # the model was not asked again


def test_the_host_tool_runs_on_the_host_and_its_body_in_the_sandbox(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    calls = [("read_on_host", {"path": made.notes}), ("read_on_host", {"path": made.secret})]
    (read, refused), _ = kickoff(tools, calls, [tools.read_on_host])
    assert read == Seen(f"host={os.getpid()} one\ntwo\n", False)
    assert refused == Seen(made.refused, True)


# -- the tool ----------------------------------------------------------------------------------


def test_tools_arguments_and_schema_are_the_plain_tools(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    made, plain = tools.head, tools.plain_head
    assert isinstance(made, SandboxedTool) and isinstance(made, BaseTool)
    assert (made.name, made.result_as_answer, made.max_usage_count) == ("first lines", True, 2)
    assert made.args_schema.model_json_schema() == plain.args_schema.model_json_schema()
    assert made.formatted_description == plain.formatted_description
    assert CrewaiHarness().schema(tools, "head") == CrewaiHarness().schema(tools, "plain_head")
    assert not hasattr(made.func, "__wrapped__")  # nothing leads to the unconfined body


def test_result_as_answer_ends_the_task_with_the_sandboxed_result(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    _, output = kickoff(tools, [("first_lines", {"path": made.notes, "lines": 1})], [tools.head])
    assert output.raw == "one\n"


def test_run_calls_the_body_in_the_sandbox(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    pid = tools.body_pid.run()
    assert pid != os.getpid() and pid == tools.sandbox_pid()
    refusal = tools.read_file.run(path=made.secret)
    assert isinstance(refusal, SandboxRefusal) and refusal.as_agent_message() == made.refused
