"""Issue 18 §2: what a learning run on a real framework writes is narrow and holds no secret.

For each check of learned.py and each case: the file the case learned (the same learning run as
test_round_trip.py) holds none of the broad rules the issue lists; a failure quotes the offending
lines. A case that learns one today is a strict xfail naming the cause.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import CASES, RoundTrip, known_failure
from .learned import CHECKS

#: per check, the cases that learn that broad rule on today's core, with the cause: none today
KNOWN: dict[str, dict[str, str]] = {}
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
