"""pytest plugin: every test under the strict profile, marked tests learn on demand.

Opt in with ``pytest -p pysandboxes.pytest_plugin``, or ``addopts = "-p pysandboxes.pytest_plugin"``
in the project's pytest configuration (installing pysandboxes does not switch it on: a plugin
that sandboxes every test of every project would surprise). Then:

* every test runs inside ``sandboxes(sandboxes_config=<profile>)``: the ``@sandbox`` functions it
  calls run under the application's rules, the test itself stays on the host;
* a test marked ``@pytest.mark.sandbox_learn`` learns, only when ``SANDBOX_LEARN`` is set (to
  anything but ``""``, ``0``, ``false`` or ``no``), into the candidate file
  (``.py-sandboxes.learn``), never into the active profile. Without the variable it runs strictly.

Options: ``--sandbox-profile=FILE`` (default ``.py-sandboxes`` in pytest's root directory) and
``--sandbox-learn-file=FILE`` (default ``.py-sandboxes.learn`` next to the profile). Under
``python-sb -m pytest`` (full mode) the whole run is already sandboxed: the fixture does nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .api import is_in_sandbox, sandboxes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

MARKER = "sandbox_learn"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pysandboxes")
    group.addoption(
        "--sandbox-profile",
        default=None,
        help="the application's rule file the tests run under (default: .py-sandboxes in the root dir)",
    )
    group.addoption(
        "--sandbox-learn-file",
        default=None,
        help="where marked tests learn when SANDBOX_LEARN is set (default: .py-sandboxes.learn)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: the test may feed the learned candidate rules (only when SANDBOX_LEARN is set)",
    )


def _paths(config: pytest.Config) -> tuple[Path, Path]:
    root = Path(str(config.rootpath))
    profile = config.getoption("--sandbox-profile")
    profile_path = Path(profile) if profile else root / ".py-sandboxes"
    if not profile_path.is_absolute():
        profile_path = Path.cwd() / profile_path
    learn = config.getoption("--sandbox-learn-file")
    learn_path = Path(learn) if learn else profile_path.with_name(profile_path.name + ".learn")
    if not learn_path.is_absolute():
        learn_path = Path.cwd() / learn_path
    return profile_path, learn_path


def learning_requested() -> bool:
    return os.environ.get("SANDBOX_LEARN", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(autouse=True)
def sandbox_profile(request: pytest.FixtureRequest) -> Iterator[None]:
    """Open the sandbox for the test: strict, or learning for a marked test with SANDBOX_LEARN."""
    if is_in_sandbox():  # python-sb -m pytest: the whole run is sandboxed already
        yield
        return
    profile, learned = _paths(request.config)
    learning = learning_requested() and request.node.get_closest_marker(MARKER) is not None
    if learning:
        if learned.resolve() == profile.resolve():
            raise pytest.UsageError(
                f"pysandboxes: the learn file {learned} is the active profile; learn into a candidate "
                "file (--sandbox-learn-file=.py-sandboxes.learn) and promote rules after review"
            )
        with sandboxes(sandboxes_config=str(profile), learn=str(learned)):
            yield
        return
    if not profile.exists():
        pytest.fail(
            f"pysandboxes: no rule file {profile}: the tests run under the application's rules. "
            f"Create it (`pysandboxes init {profile}`), or learn candidates with SANDBOX_LEARN=1 on a "
            f"test marked @pytest.mark.{MARKER}, then review and copy them into it",
            pytrace=False,
        )
    with sandboxes(sandboxes_config=str(profile)):
        yield
