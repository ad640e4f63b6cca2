"""The partial-mode keys: timeout= and remote-max-payload=."""

from __future__ import annotations

import pytest

from pysandboxes.errors import RuleSyntaxError


def test_timeout_is_a_duration_in_seconds(rules):
    assert rules.load("timeout=1.5m\n").timeout.value == 90.0
    assert rules.load("timeout=500ms\n").timeout.value == 0.5
    assert rules.load("").timeout.value is None


def test_remote_max_payload_is_a_size_with_a_generous_default(rules):
    assert rules.load("remote-max-payload=200MB\n").remote_max_payload.value == 200_000_000
    assert rules.load("").remote_max_payload.value == 1 << 30


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "timeout=soon\n",
            "invalid duration 'soon' for timeout: write a number with ms, s or m, e.g. 2s or 500ms",
        ),
        (
            "remote-max-payload=2 parsecs\n",
            "invalid size '2 parsecs' for remote-max-payload: write a number with KB, MB or GB, e.g. 10MB",
        ),
    ],
)
def test_bad_values_are_load_errors_with_file_and_line(rules, text, message):
    with pytest.raises(RuleSyntaxError) as info:
        rules.load(text)
    assert [e.split("/")[-1] for e in info.value.errors] == [f".py-sandboxes(1): {message}"]
