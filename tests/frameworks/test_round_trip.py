"""Issue 18 §1: a profile learned from a trusted run passes its first strict run.

For each framework and case: ``python-sb --learn=<project>/.py-sandboxes ...`` succeeds and
prints the result line; then ``python-sb ...`` (no learning: the learned file is the one the
run finds, its ``os-sandbox=${OS_SANDBOX:-landlock}`` the default provider) succeeds and prints
the same line. A case that fails on today's core is a strict xfail naming its cause.
"""

from __future__ import annotations

from .conftest import RoundTrip, cases

#: the causes of each failing strict run, in the order they bite (fixing one shows the next):
#: none today (issue 18 §1 fixed modules the learning runtime holds, file accesses at import
#: time, variables read by name after a scan of os.environ)
STRICT_FAILURES: dict[str, str] = {}


@cases()
def test_learning_run_prints_the_result(round_trip: RoundTrip) -> None:
    learned = round_trip.learned
    assert (learned.returncode, learned.results) == (0, [round_trip.expected]), str(learned)


@cases(STRICT_FAILURES)
def test_strict_run_under_the_learned_rules_prints_the_same_result(round_trip: RoundTrip) -> None:
    strict = round_trip.strict
    assert (strict.returncode, strict.results) == (0, [round_trip.expected]), str(strict)
