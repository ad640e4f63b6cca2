"""Round trips on real agent frameworks: learn from a trusted run, then the same run strictly.

Each framework lives in an environment of its own, ``.venv-fw/<name>`` (pysandboxes, python-sb
and that framework), synced by ``scripts/framework-envs.sh`` (``make test`` runs it first). Two
cases per framework: ``import`` (``python-sb -c "import ..."``, the modules a user imports) and
``agent`` (``programs/<name>_agent.py``: one offline run of the framework's own agent loop with
a scripted model, calling one tool that reads ``data/note.txt`` next to the program).

A case runs in a temporary directory of its own: ``project/`` (the program, its ``data/``, a
``.env`` holding a fake secret, and the learned ``.py-sandboxes``), ``home/`` (``HOME``) and
``tmp/`` (``TMPDIR``). Both runs of a case get the same fixed environment (``ENVIRONMENT``,
with ``HOME``, ``TMPDIR`` and ``CREWAI_STORAGE_DIR`` in the case's directory) and run from
``project/``. Learning runs once per case per session
(``round_trips``); the strict run once too, when a test first asks for it.
"""

from __future__ import annotations

import dataclasses
import functools
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENVS = ROOT / ".venv-fw"
PROGRAMS = Path(__file__).resolve().parent / "programs"
RULES = ".py-sandboxes"
#: a framework's import takes seconds (crewai: 3-8 s, more on a busy machine); learning adds more
TIMEOUT = 300

#: what both runs of every case see, besides HOME, TMPDIR and CREWAI_STORAGE_DIR. Telemetry is
#: off (framework-install.md §5); bytecode is never written, so no run changes what the next
#: one reads (the environments are shared by every case and every session).
ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "OTEL_SDK_DISABLED": "true",
    "AGNO_TELEMETRY": "false",
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
}

#: a secret the programs never read: a learned rule that exposes it is too broad
DOTENV = "FAKE_API_KEY=sk-fake-secret-for-the-round-trip-tests\n"


@dataclasses.dataclass(frozen=True)
class Framework:
    name: str  # the environment's name: .venv-fw/<name>, dependency group fw-<name>
    imports: str  # what a user of the framework imports

    @property
    def program(self) -> str:
        return f"{self.name.replace('-', '_')}_agent.py"


FRAMEWORKS = (
    Framework("mcp", "import mcp; from mcp.server.mcpserver import MCPServer; from mcp import Client"),
    Framework("langchain", "import langchain.agents"),
    Framework("pydantic-ai", "import pydantic_ai"),
    Framework("smolagents", "import smolagents"),
    Framework("openai-agents", "import agents"),
    Framework("crewai", "import crewai"),
)
KINDS = ("import", "agent")
#: every case, as its test id: "<framework>-<kind>"
CASES = tuple(f"{fw.name}-{kind}" for fw in FRAMEWORKS for kind in KINDS)
NOTE = (PROGRAMS / "data" / "note.txt").read_text(encoding="utf-8").strip()


# -- what today's core gets wrong (the reasons of the strict xfails) -------------------------------
# Each names what the learned file lacks or holds, and why. None today: the causes issue 18 §1-§2
# listed, and the two the harness found, are fixed (tests/learning/test_learning_narrow.py).


def because(*causes: str) -> str:
    """One xfail reason for a case failing for several causes, in the order they bite."""
    return " | ".join(causes)


@dataclasses.dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def results(self) -> list[str]:
        """The ``RESULT: ...`` lines the program printed."""
        return [line for line in self.stdout.splitlines() if line.startswith("RESULT: ")]

    def __str__(self) -> str:  # for a failed assertion: the end of stderr tells why
        tail = "\n".join(self.stderr.splitlines()[-25:])
        return f"exit {self.returncode}\n--- stdout:\n{self.stdout}\n--- stderr (end):\n{tail}"


class RoundTrip:
    """One case: its temporary project, its fixed environment, its two runs."""

    def __init__(self, case: str, base: Path) -> None:
        name, _, self.kind = case.rpartition("-")
        self.framework = next(fw for fw in FRAMEWORKS if fw.name == name)
        self.env_dir = ENVS / name
        self.project = base / "project"
        self.home = base / "home"
        self.tmp = base / "tmp"
        for directory in (self.project, self.home, self.tmp):
            directory.mkdir()
        (self.project / ".env").write_text(DOTENV, encoding="utf-8")
        if self.kind == "agent":
            shutil.copy(PROGRAMS / self.framework.program, self.project)
            shutil.copytree(PROGRAMS / "data", self.project / "data")
            self.args: tuple[str, ...] = (self.framework.program,)
            self.expected = f"RESULT: {NOTE}"
        else:
            self.expected = f"RESULT: imported {name}"
            self.args = ("-c", f"{self.framework.imports}; print({self.expected!r})")
        self.environ = {
            **ENVIRONMENT,
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "CREWAI_STORAGE_DIR": str(self.home / "crewai-storage"),
        }

    @property
    def rules(self) -> Path:
        return self.project / RULES

    @property
    def dotenv(self) -> Path:
        return self.project / ".env"

    def run(self, *options: str) -> Run:
        done = subprocess.run(
            [str(self.env_dir / "bin" / "python-sb"), *options, *self.args],
            cwd=self.project,
            env=self.environ,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    @functools.cached_property
    def learned(self) -> Run:
        return self.run(f"--learn={self.rules}")

    def learned_file(self) -> Path:
        """The learned rule file, once the learning run succeeded."""
        assert self.learned.returncode == 0, f"the learning run failed: {self.learned}"
        return self.rules

    def text(self) -> str:
        return self.learned_file().read_text(encoding="utf-8")

    @functools.cached_property
    def strict(self) -> Run:
        """The strict run, under the learned file (``.py-sandboxes`` in the working directory
        for ``-c``, next to the script otherwise): the default provider, Landlock."""
        self.learned_file()
        return self.run()


class RoundTrips:
    """One ``RoundTrip`` per case, made (and learned) the first time a test asks for it."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.factory = factory
        self.cases: dict[str, RoundTrip] = {}

    def __getitem__(self, case: str) -> RoundTrip:
        if case not in self.cases:
            self.cases[case] = RoundTrip(case, self.factory.mktemp(case, numbered=False))
        return self.cases[case]


def _missing_environments() -> list[str]:
    return [fw.name for fw in FRAMEWORKS if not (ENVS / fw.name / "bin" / "python-sb").is_file()]


@pytest.fixture(scope="session")
def round_trips(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoundTrips]:
    missing = _missing_environments()
    if missing:
        pytest.fail(
            f"framework environments missing: {', '.join(missing)} (under {ENVS}); "
            "create them with: bash scripts/framework-envs.sh",
            pytrace=False,
        )
    yield RoundTrips(tmp_path_factory)


@pytest.fixture
def round_trip(request: pytest.FixtureRequest, round_trips: RoundTrips) -> RoundTrip:
    """The round trip of the case the test is parametrized with (``@cases(...)``)."""
    return round_trips[request.param]


def known_failure(reason: str | None) -> list[pytest.MarkDecorator]:
    """The marks of a case that fails on today's core for ``reason`` (none when None): a strict
    xfail, so a fix turns it into a failure that tells to remove the entry."""
    return [] if reason is None else [pytest.mark.xfail(strict=True, reason=reason)]


def cases(known: Mapping[str, str] | None = None) -> pytest.MarkDecorator:
    """Parametrize a test taking ``round_trip`` over every case; ``known`` maps a case to the
    reason it fails on today's core."""
    known = dict(known or {})
    unknown = set(known) - set(CASES)
    assert not unknown, f"no such case: {sorted(unknown)}"
    params = [pytest.param(case, id=case, marks=known_failure(known.get(case))) for case in CASES]
    return pytest.mark.parametrize("round_trip", params, indirect=True)
