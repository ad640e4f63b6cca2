"""The refusal family: each is a SandBoxError and the builtin error a caller expects."""

from __future__ import annotations

import pickle

import pytest

from pysandboxes import (
    RuleApiPermissionError,
    RuleFileNotFoundError,
    RuleModuleNotFoundError,
    RulePermissionError,
    RuleSocketConnectionRefusedError,
    SandBoxError,
    SandBoxResourceError,
    SandBoxTimeoutError,
    denial_text,
    sandbox_denials,
)
from pysandboxes.errors import resource_error


@pytest.mark.parametrize(
    ("refusal", "builtin"),
    [
        (RuleFileNotFoundError("Access to '/etc/passwd' must be accepted by a rule."), FileNotFoundError),
        (RulePermissionError("Cannot write to '/x'"), PermissionError),
        (RuleSocketConnectionRefusedError("Connection to [1.2.3.4]:80 DENIED"), ConnectionRefusedError),
        (
            RuleModuleNotFoundError("Module named 'socket' is not allowed by a rule", "socket"),
            ModuleNotFoundError,
        ),
        (RuleApiPermissionError("os.system() is denied", "os.system", "process-exec"), PermissionError),
    ],
)
def test_each_refusal_is_a_sandbox_error_and_its_builtin_twin(refusal, builtin):
    assert isinstance(refusal, SandBoxError)
    assert isinstance(refusal, builtin)
    copy = pickle.loads(pickle.dumps(refusal))  # crosses the partial-mode channel intact
    assert type(copy) is type(refusal) and str(copy) == str(refusal)


def test_an_os_refusal_keeps_its_message_when_a_caller_sets_filename():
    refusal = RuleFileNotFoundError("Access to '/etc/passwd' must be accepted by a rule.", "/etc/passwd")
    refusal.filename = "other"
    assert str(refusal) == "Access to '/etc/passwd' must be accepted by a rule."
    assert refusal.errno == 2


def test_sandbox_denials_lists_refusals_innermost_first_through_cause_and_context():
    try:
        try:
            raise RuleFileNotFoundError("Access to '/a' must be accepted by a rule.")
        except OSError:
            try:
                raise RuleApiPermissionError("os.system() is denied", "os.system", "process-exec")
            except PermissionError as inner:
                raise RuntimeError("tool failed") from inner
    except RuntimeError as outer:
        denials = sandbox_denials(outer)
    assert denials == [
        "RuleFileNotFoundError: Access to '/a' must be accepted by a rule.",
        "RuleApiPermissionError: os.system() is denied",
    ]


def test_sandbox_denials_looks_into_exception_groups_and_is_empty_otherwise():
    group = ExceptionGroup(
        "many", [ValueError("x"), RuleModuleNotFoundError("Module named 'csv' is not allowed by a rule")]
    )
    assert sandbox_denials(group) == ["RuleModuleNotFoundError: Module named 'csv' is not allowed by a rule"]
    assert sandbox_denials(ValueError("plain")) == []
    assert sandbox_denials(None) == []


def test_denial_text_keeps_the_first_line_of_each_refusal_and_logs_the_hint(caplog):
    try:
        try:
            raise RuleFileNotFoundError(
                "Access to '/root/.ssh/id_rsa' must be accepted by a rule.\n"
                "Add `expose-ro=/root/.ssh` to the rule file to allow it."
            )
        except OSError as inner:
            raise RuntimeError("tool failed") from inner
    except RuntimeError as outer:
        with caplog.at_level("WARNING", logger="Pysandboxes"):
            text = denial_text(outer)
    assert text == "RuleFileNotFoundError: Access to '/root/.ssh/id_rsa' must be accepted by a rule."
    assert "expose-ro" not in text
    assert [r.name for r in caplog.records] == ["Pysandboxes"]
    assert "Add `expose-ro=/root/.ssh` to the rule file" in caplog.records[0].getMessage()


def test_denial_text_of_an_error_that_is_no_refusal_is_its_type_and_first_line(caplog):
    assert denial_text(ValueError("bad value\nmore"), log=False) == "ValueError: bad value"
    assert denial_text(KeyError(), log=False) == "KeyError"
    assert caplog.records == []


@pytest.mark.parametrize(
    ("stop", "limit", "builtin"),
    [
        (SandBoxTimeoutError("tools.slow() did not finish within 1 s"), "timeout", TimeoutError),
        (resource_error("timeout", "tools.slow() did not finish within 1 s"), "timeout", TimeoutError),
        (resource_error("limit-cpu", "stopped: limit-cpu=1s exceeded"), "limit-cpu", TimeoutError),
        (resource_error("limit-memory", "stopped: limit-memory=1G exceeded"), "limit-memory", MemoryError),
        (resource_error("limit-processes", "stopped: limit-processes=4 exceeded"), "limit-processes", None),
    ],
)
def test_every_limit_stop_is_a_resource_error(stop, limit, builtin):
    # One class catches every limit stop, timeout= included; each keeps its builtin twin.
    assert isinstance(stop, SandBoxResourceError) and stop.limit == limit
    assert builtin is None or isinstance(stop, builtin)
    assert sandbox_denials(stop) == []  # a limit is not a refusal by a rule
    copy = pickle.loads(pickle.dumps(stop))
    assert (type(copy), copy.limit, str(copy)) == (type(stop), stop.limit, str(stop))
