"""Issue 18 §2: what a learning run on a real framework writes is narrow and holds no secret.

For each check of learned.py and each case: the file the case learned (the same learning run as
test_round_trip.py) holds none of the broad rules the issue lists; a failure quotes the offending
lines. A case that learns one today is a strict xfail naming the cause.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import (
    ABSENT_VARIABLES,
    ASYNCIO_COMPILE,
    CASES,
    FAILED_IMPORTS,
    IPV6_PROBE,
    REALPATH_PARENTS,
    RoundTrip,
    known_failure,
)
from .learned import CHECKS

AGENTS = [case for case in CASES if case.endswith("-agent")]
#: per check, the cases that learn that broad rule on today's core, with the cause
KNOWN: dict[str, dict[str, str]] = {
    "dotenv_exposures": dict.fromkeys(AGENTS, REALPATH_PARENTS),
    "home_or_root_exposures": dict.fromkeys(AGENTS, REALPATH_PARENTS),
    "listening_rules": dict.fromkeys(
        [case for case in CASES if case.startswith(("langchain-", "smolagents-", "crewai-"))], IPV6_PROBE
    ),
    "absent_variables": dict.fromkeys(CASES, ABSENT_VARIABLES),
    "missing_module_imports": dict.fromkeys(CASES, FAILED_IMPORTS),
    "compile_grants": dict.fromkeys(CASES, ASYNCIO_COMPILE),
}
assert set(KNOWN) <= {check.__name__ for check in CHECKS}, "KNOWN names a check learned.py lacks"


@pytest.mark.parametrize(
    ("check", "round_trip"),
    [
        pytest.param(
            check,
            case,
            id=f"{check.__name__}-{case}",
            marks=known_failure(KNOWN.get(check.__name__, {}).get(case)),
        )
        for check in CHECKS
        for case in CASES
    ],
    indirect=["round_trip"],
)
def test_the_learned_file_holds_no_broad_rule(
    check: Callable[[RoundTrip], list[str]], round_trip: RoundTrip
) -> None:
    offending = check(round_trip)
    assert not offending, "\n".join([f"the learned file holds ({check.__name__}):", *offending])
