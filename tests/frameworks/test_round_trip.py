"""Issue 18 §1: a profile learned from a trusted run passes its first strict run.

For each framework and case: ``python-sb --learn=<project>/.py-sandboxes ...`` succeeds and
prints the result line; then ``python-sb ...`` (no learning: the learned file is the one the
run finds, its ``os-sandbox=${OS_SANDBOX:-landlock}`` the default provider) succeeds and prints
the same line. A case that fails on today's core is a strict xfail naming its cause.
"""

from __future__ import annotations

from .conftest import (
    SCANNED_THEN_READ,
    RoundTrip,
    because,
    cases,
    import_time_files_not_learned,
    loaded_module_not_recorded,
)

SOCKET = loaded_module_not_recorded("socket", "urllib3/exceptions.py:3, through requests")
DOTENV_AT_IMPORT = import_time_files_not_learned(
    "load_dotenv() at import ({}) checks that the working directory exists: "
    "'OSError: Starting path not found'"
)
CREWAI_AT_IMPORT = import_time_files_not_learned(
    "tempfile.gettempdir() writes a probe in TMPDIR (portalocker/utils.py:388), crewai makes "
    "~/.local/share/crewai/credentials{}"
)

#: the causes of each failing strict run, in the order they bite (fixing one shows the next)
STRICT_FAILURES = {
    "mcp-import": loaded_module_not_recorded("threading", "pydantic/main.py:11"),
    "smolagents-import": because(SOCKET, DOTENV_AT_IMPORT.format("smolagents/remote_executors.py")),
    "smolagents-agent": SOCKET,
    "crewai-import": because(
        SCANNED_THEN_READ,
        CREWAI_AT_IMPORT.format(" and CREWAI_STORAGE_DIR, load_dotenv() (crewai/llm.py:83) reads ./.env"),
    ),
    "crewai-agent": because(SCANNED_THEN_READ, CREWAI_AT_IMPORT.format("")),
}


@cases()
def test_learning_run_prints_the_result(round_trip: RoundTrip) -> None:
    learned = round_trip.learned
    assert (learned.returncode, learned.results) == (0, [round_trip.expected]), str(learned)


@cases(STRICT_FAILURES)
def test_strict_run_under_the_learned_rules_prints_the_same_result(round_trip: RoundTrip) -> None:
    strict = round_trip.strict
    assert (strict.returncode, strict.results) == (0, [round_trip.expected]), str(strict)
