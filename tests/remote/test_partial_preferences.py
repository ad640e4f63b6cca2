"""Partial mode end to end: the host's own preferences reach the child where they decide how
the program behaves there (warning filters, the sandbox loggers' levels, ``PYSANDBOXES_DEBUG``),
and what the child logs reaches the host's loggers. Each in a pair: with the preference, and
without it."""

from __future__ import annotations

from .conftest import Project

TOOLS = """
import warnings
from pysandboxes import sandbox

@sandbox
def warn():
    warnings.warn("an old API", DeprecationWarning)
    return "returned"

@sandbox
def peek():
    try:
        with open("/etc/hostname") as f:
            return f.read()
    except OSError as e:
        return type(e).__name__
"""

HOST = """
import sys
if "--info" in sys.argv:
    import logging
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
from pysandboxes import sandboxes
import tools

with sandboxes():
    try:
        print(tools.warn())
    except DeprecationWarning as e:
        print("raised:", e)
    print(tools.peek())
"""


def _project(project: Project, provider: str) -> Project:
    project.rules(provider)
    project.tools(TOOLS)
    project.host(HOST)
    return project


def test_the_hosts_warning_filters_apply_in_the_child(project: Project, provider: str) -> None:
    _project(project, provider)
    assert project.ok(options=["-W", "error::DeprecationWarning"]) == [
        "raised: an old API",
        "RuleFileNotFoundError",
    ]
    assert project.ok(env={"PYTHONWARNINGS": "error::DeprecationWarning"}) == [
        "raised: an old API",
        "RuleFileNotFoundError",
    ]


def test_without_warning_filters_the_child_has_the_default_ones(project: Project, provider: str) -> None:
    _project(project, provider)
    assert project.ok() == ["returned", "RuleFileNotFoundError"]


def test_the_childs_refusals_reach_the_hosts_logger_at_its_level(project: Project, provider: str) -> None:
    _project(project, provider)
    project.host(HOST.replace('if "--info" in sys.argv:', "if True:"))
    outcome = project.run()
    assert (outcome.returncode, outcome.lines) == (0, ["returned", "RuleFileNotFoundError"]), outcome
    lines = outcome.stderr.splitlines()
    assert len(lines) == 2, outcome
    assert lines[0].startswith("INFO Pysandboxes: in the sandbox (pid ")
    assert lines[0].endswith(
        "): refused: RuleFileNotFoundError: Access to '/etc/hostname' must be accepted by a rule."
    )
    assert lines[1] == "Add `expose-ro=/etc` to the rule file to allow it."


def test_at_the_default_level_the_childs_refusals_are_not_logged(project: Project, provider: str) -> None:
    _project(project, provider)
    project.host(
        HOST.replace('if "--info" in sys.argv:', "if True:").replace("logging.INFO", "logging.WARNING")
    )
    assert project.ok() == ["returned", "RuleFileNotFoundError"]


def test_pysandboxes_debug_shows_the_childs_debug_lines_on_the_hosts_stderr(
    project: Project, provider: str
) -> None:
    _project(project, provider)
    outcome = project.run(env={"PYSANDBOXES_DEBUG": "1"})
    assert (outcome.returncode, outcome.lines) == (0, ["returned", "RuleFileNotFoundError"]), outcome
    child = [line for line in outcome.stderr.splitlines() if ": in the sandbox (pid " in line]
    assert any(
        line.startswith("DEBUG pysandboxes.partial: ") and " imported tools in " in line for line in child
    )
    assert any(line.startswith("DEBUG pysandboxes.partial: ") and " ready " in line for line in child)
    assert any(
        line.startswith("INFO Pysandboxes: ") and "refused: RuleFileNotFoundError" in line for line in child
    )


def test_without_pysandboxes_debug_the_child_logs_nothing(project: Project, provider: str) -> None:
    _project(project, provider)
    for env in ({}, {"PYSANDBOXES_DEBUG": "0"}):
        assert project.ok(env=env) == ["returned", "RuleFileNotFoundError"]


FORGER_TOOLS = """
import logging
from pysandboxes import sandbox

@sandbox
def forge():
    logging.getLogger("Pysandboxes").info("%s", "from the program")
    logging.getLogger("myapp.audit").warning("posing as the host's own logger")
    return "done"
"""


def test_what_the_child_logs_cannot_pose_as_another_logger(project: Project, provider: str) -> None:
    # The child is not trusted: its records reach only the sandbox's loggers, marked as its.
    project.rules(provider, "python-import=logging")
    project.tools(FORGER_TOOLS)
    project.host(
        """
        import logging
        logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
        from pysandboxes import sandboxes
        import tools

        with sandboxes():
            print(tools.forge())
        """
    )
    outcome = project.run()
    assert (outcome.returncode, outcome.lines) == (0, ["done"]), outcome
    lines = outcome.stderr.splitlines()
    assert [line.partition(" (pid ")[0] for line in lines if "in the sandbox" in line] == [
        "Pysandboxes: in the sandbox"
    ]
    assert "myapp.audit: posing" not in outcome.stderr


def test_x_importtime_shows_the_childs_imports_too(project: Project, provider: str) -> None:
    # Where the child's start goes: the host's `-X importtime` reaches it (its lines come through
    # the host's stderr), so the sandbox's modules show twice, the host's imports and the child's.
    _project(project, provider)
    outcome = project.run(options=["-X", "importtime"])
    assert (outcome.returncode, outcome.lines) == (0, ["returned", "RuleFileNotFoundError"]), outcome
    lines = outcome.stderr.splitlines()
    child = [
        line
        for line in lines
        if line.startswith("import time:") and line.endswith(" pysandboxes.remote.child")
    ]
    assert len(child) == 2, outcome.stderr


def test_without_x_importtime_the_child_times_no_import(project: Project, provider: str) -> None:
    _project(project, provider)
    assert project.ok() == ["returned", "RuleFileNotFoundError"]
