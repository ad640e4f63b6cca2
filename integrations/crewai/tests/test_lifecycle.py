"""``sandbox_kickoff``: the sandbox opened for a crew's run and closed at its end (crewai's
execution_end), a failed run's included. Each run here starts its own sandbox child."""

from __future__ import annotations

import asyncio
import os
from types import ModuleType

import pytest
from crewai.hooks import clear_all_hooks

from pysandboxes import sandboxes
from pysandboxes_crewai import SandboxStop, sandbox_kickoff

from ._files import Files, assert_closed, kickoff
from .conftest import crew, crewai_warnings, tool_messages


def test_a_run_stopped_by_a_refusal_closes_the_sandbox(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    team, _ = crew(tools, [("read_or_stop", {"path": made.secret})], tools=[tools.read_or_stop])
    with crewai_warnings(), pytest.raises(SandboxStop):
        team.kickoff()
    assert_closed(tools)


def test_sandbox_kickoff_opens_the_sandbox_for_the_run_and_closes_it(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    assert_closed(tools)
    calls = [("body_pid", {}), ("read_file", {"path": made.notes})]
    (pid, read), _ = kickoff(tools, calls, [tools.body_pid, tools.read_file])
    assert int(pid.text) != os.getpid() and read.text == "one\ntwo\n"
    assert_closed(tools)
    (again, _), _ = kickoff(tools, calls, [tools.body_pid, tools.read_file])  # a new run: a new child
    assert int(again.text) not in (os.getpid(), int(pid.text))
    assert_closed(tools)


def test_a_failed_run_closes_the_sandbox(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    team, llm = crew(tools, [("body_pid", {}), ("explode", {})], tools=[tools.body_pid])
    llm.explode_at = 1  # the model's second call raises: the run fails
    with crewai_warnings(), pytest.raises(RuntimeError, match="the model failed"):
        team.kickoff()
    (pid,) = tool_messages(llm.seen[-1])
    assert int(pid) != os.getpid()  # the tool ran in the sandbox of that run
    assert_closed(tools)


def test_async_kickoffs_open_and_close_the_sandbox(files: tuple[Files, ModuleType]) -> None:
    _, tools = files
    for start in ("kickoff_async", "akickoff"):
        team, llm = crew(tools, [("body_pid", {})], tools=[tools.body_pid])
        with crewai_warnings():
            asyncio.run(getattr(team, start)())
        (pid,) = tool_messages(llm.seen[-1])
        assert int(pid) != os.getpid(), start
        assert_closed(tools)


def test_an_open_sandboxes_block_outlives_the_run(files: tuple[Files, ModuleType]) -> None:
    made, tools = files
    with sandboxes(sandboxes_config=str(made.root / ".py-sandboxes")):
        outer = tools.sandbox_pid()
        (pid,), _ = kickoff(tools, [("body_pid", {})], [tools.body_pid])
        assert int(pid.text) == outer == tools.sandbox_pid()  # the run joined the open sandbox
    assert_closed(tools)


def test_the_hooks_come_back_after_clear_all_hooks(files: tuple[Files, ModuleType]) -> None:
    """An application clearing crewai's hooks (its tests do) loses the adapter's too: the
    callback registers them again and finds the crew of the kickoff without execution_start."""
    _, tools = files
    clear_all_hooks()
    (pid,), _ = kickoff(tools, [("body_pid", {})], [tools.body_pid])
    assert int(pid.text) != os.getpid()
    assert_closed(tools)


def test_sandbox_kickoff_outside_a_kickoff_says_how_to_use_it() -> None:
    with pytest.raises(RuntimeError, match=r"before_kickoff_callbacks=\[sandbox_kickoff\]"):
        sandbox_kickoff({})
