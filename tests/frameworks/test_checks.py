"""The checks of learned.py, on hand-written files: each finds the broad rule it is about, and
none finds anything in the narrow rules a fixed core should learn instead. (The framework
tests pass where a check is blind; these prove the checks can see.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import RULES, RoundTrip, Run
from .learned import CHECKS

NARROW = """\
expose-ro=./data
expose-rw=${TMPDIR:-/tmp}
expose-rw=~/.cache/app
net=ALLOW|tcp|127.0.0.1|8080|OUT
env=HOME=${HOME}
#env=LANGUAGE=${LANGUAGE}  # absent while learning
python-import=json, mcp
#python-import=brotli  # tried, absent
python-api=ALLOW:threading.Thread.start
#python-api=ALLOW:builtins.compile
#remote-result-mode=objects
"""

#: check -> (a broad line it must find, what its message says)
BROAD = {
    "device_directories": ("expose-ro=/dev", "exposes the directory /dev"),
    "dotenv_exposures": ("expose-ro=.", "which holds the project's .env"),
    "home_or_root_exposures": ("expose-rw=~", "the whole home directory"),
    "listening_rules": ("net=ALLOW|tcp|::1|*|IN", "a listening right"),
    "absent_variables": (
        "env=LANGUAGE=${LANGUAGE}  # absent while learning",
        "an active grant of an unset variable",
    ),
    "missing_module_imports": ("python-import=json, brotli", "'brotli' is not installed"),
    "wildcard_imports": ("python-import=*", "every module"),
    "compile_grants": ("python-api=ALLOW:builtins.compile", "a grant of raw compile()"),
    "objects_result_mode": ("remote-result-mode=objects", "results as objects"),
}


def written(tmp_path: Path, text: str) -> RoundTrip:
    """A round trip of the mcp environment whose learning run 'wrote' ``text``."""
    round_trip = RoundTrip("mcp-agent", tmp_path)
    (round_trip.home / ".cache" / "app").mkdir(parents=True)
    round_trip.rules.write_text(text, encoding="utf-8")
    round_trip.__dict__["learned"] = Run(0, "", "")  # the learning run, as if it had happened
    return round_trip


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_a_narrow_file_passes_the_check(tmp_path: Path, check: Callable[[RoundTrip], list[str]]) -> None:
    assert check(written(tmp_path, NARROW)) == []


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_the_check_quotes_the_broad_line(tmp_path: Path, check: Callable[[RoundTrip], list[str]]) -> None:
    line, why = BROAD[check.__name__]
    found = check(written(tmp_path, NARROW + line + "\n"))
    number = len(NARROW.splitlines()) + 1
    assert len(found) == 1, found
    assert found[0].startswith(f"{RULES}({number}): {line}: "), found
    assert why in found[0], found
