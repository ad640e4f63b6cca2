"""Learning mode in partial mode (``sandboxes(learn=True | "FILE")``), end to end.

The project (``tools.py`` holding ``@sandbox`` functions, ``shapes.py`` holding a class, a
``host.py`` program) is written by the ``Project`` helper of tests/remote; the home directory is
a separate temporary directory, so that the project is not "too broad to learn". The child
streams what it needed to the host, which writes the rules when the block ends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..remote.conftest import RUN_TIMEOUT, Outcome, Project
from .conftest import RULES, block

BANNER = (
    "pysandboxes: LEARNING MODE: no OS boundary, nothing is refused that a rule could allow; "
    "the rules this run needs go to {target}. Run only trusted code."
)
REVIEW = "pysandboxes: review them before use: git diff {shown}  (or pysandboxes check {shown})"

SHAPES = """
class Point:
    def __init__(self, x):
        self.x = x
"""

TOOLS = """
import os
from pysandboxes import sandbox

@sandbox
def make(x):
    import json, shapes
    return shapes.Point(x + len(json.dumps(os.getenv("TOOL_VAR"))))

@sandbox
def plain(x):
    return {"x": x}

@sandbox
def more():
    import sqlite3
    return "imported"
"""

HOST = """
import sys
from pysandboxes import sandboxes
import shapes, tools

with sandboxes({learn}):
    if "plain" in sys.argv:
        print(tools.plain(1))
    else:
        point = tools.make(3)
        print(type(point).__name__, point.x)
    if "more" in sys.argv:
        print(tools.more())
"""


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    root.mkdir()
    return Project(root)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def setup(project: Project, learn: str) -> None:
    project.write("shapes.py", SHAPES)
    project.tools(TOOLS)
    project.host(HOST.format(learn=learn), "learn.py")
    project.host(HOST.format(learn=""), "host.py")


def test_result_mode_and_every_family_round_trip(project: Project, home: Path) -> None:
    setup(project, "learn=True")
    learned = _run(project, home, "learn.py")
    assert learned.returncode == 0, learned
    assert learned.lines == ["Point 6"]
    assert learned.stderr.splitlines() == [
        BANNER.format(target=project.root / RULES),
        "pysandboxes: learned 5 rules into ./.py-sandboxes (env 1, files 1, imports 2, result 1)",
        REVIEW.format(shown="./.py-sandboxes"),
    ]
    text = (project.root / RULES).read_text()
    assert block(text, "env") == ["env=TOOL_VAR=${TOOL_VAR}"]
    assert block(text, "files") == ["expose-ro=."], text
    assert block(text, "imports") == [
        "# Standard library",
        "python-import=json",
        "# Third-party: check where each one comes from",
        "python-import=shapes",
    ]
    assert block(text, "result") == [
        "# a @sandbox function returned an object, not plain data: the host rebuilds it",
        "remote-result-mode=objects",
    ]
    strict = _run(project, home, "host.py")
    assert (strict.returncode, strict.stderr, strict.lines) == (0, "", ["Point 6"])

    refused = _run(project, home, "host.py", "more")
    assert refused.returncode == 1
    assert refused.lines == ["Point 6"]
    lines = refused.stderr.splitlines()
    at = lines.index(
        "pysandboxes.errors.RuleModuleNotFoundError: Module named 'sqlite3' is not allowed by a rule"
    )
    assert lines[at + 1] == "Add `python-import=sqlite3` to the rule file to allow it."
    assert lines[at + 2 :] == [  # the child's traceback, as the child's text
        "Traceback in the sandbox (most recent call last):",
        f'  File "{project.root}/tools.py", line 15, in more',
        "    import sqlite3",
    ]


def test_plain_data_learns_no_result_mode(project: Project, home: Path) -> None:
    setup(project, "learn=True")
    learned = _run(project, home, "learn.py", "plain")
    assert learned.returncode == 0, learned
    assert learned.lines == ["{'x': 1}"]
    assert learned.stderr.splitlines()[-2:] == [
        "pysandboxes: learning: wrote ./.py-sandboxes from the template; this run needed no other rule",
        "pysandboxes: review it before use: pysandboxes check ./.py-sandboxes",
    ]
    # a first run that needed nothing still leaves a rule file: the next run is strict
    text = (project.root / RULES).read_text()
    assert "\nremote-result-guard=true\n" in text
    assert not [line for line in text.splitlines() if line.startswith("remote-result-mode=")]


def test_a_second_identical_partial_run_adds_nothing(project: Project, home: Path) -> None:
    setup(project, "learn=True")
    assert _run(project, home, "learn.py").returncode == 0
    first = (project.root / RULES).read_bytes()
    again = _run(project, home, "learn.py")
    assert again.returncode == 0
    assert again.stderr.splitlines() == [
        BANNER.format(target=project.root / RULES),
        "pysandboxes: learning: nothing new for ./.py-sandboxes",
    ]
    assert (project.root / RULES).read_bytes() == first
    assert not (project.root / ".py-sandboxes.old").exists()


def test_learn_into_another_file_leaves_the_active_one_alone(project: Project, home: Path) -> None:
    setup(project, 'learn="other.learn"')
    active = project.write(RULES, "os-sandbox=landlock\nremote-result-mode=objects\n")
    before = active.read_bytes()
    learned = _run(project, home, "learn.py")
    assert learned.returncode == 0, learned
    assert learned.stderr.splitlines()[0] == BANNER.format(target=project.root / "other.learn")
    assert learned.stderr.splitlines()[1] == (
        "pysandboxes: learned 4 rules into ./other.learn (env 1, files 1, imports 2)"
    )
    assert active.read_bytes() == before
    text = (project.root / "other.learn").read_text()
    assert block(text, "imports")[-1] == "python-import=shapes"
    assert block(text, "result") == []  # the active file already returns objects


@pytest.mark.parametrize("learn", ["learn=True", 'learn="x.learn"'])
def test_lock_refuses_sandboxes_learn(project: Project, home: Path, learn: str) -> None:
    setup(project, learn)
    active = project.write(RULES, "os-sandbox=landlock\nlearn=false\n")
    before = active.read_bytes()
    outcome = _run(project, home, "learn.py")
    assert (outcome.returncode, outcome.stdout) == (1, "")
    last = outcome.stderr.splitlines()[-1]
    assert last.startswith(
        "pysandboxes.errors.RuleSyntaxError: .py-sandboxes(2): learning mode is forbidden by 'learn=false', "
        "but requested by "
    ), outcome
    assert active.read_bytes() == before
    assert sorted(p.name for p in project.root.iterdir() if p.is_file()) == [
        RULES,
        "host.py",
        "learn.py",
        "shapes.py",
        "tools.py",
    ]


def test_a_module_with_bytecode_round_trips(project: Project, home: Path) -> None:
    setup(project, "learn=True")
    learned = _run(project, home, "learn.py", bytecode=True)
    assert learned.returncode == 0, learned
    strict = _run(project, home, "host.py", bytecode=True)
    assert (strict.returncode, strict.lines) == (0, ["Point 6"]), strict


def test_lock_names_the_code_that_asked(project: Project, home: Path) -> None:
    setup(project, 'learn="x.learn"')
    project.write(RULES, "os-sandbox=landlock\nlearn=false\n")
    outcome = _run(project, home, "learn.py")
    assert outcome.stderr.splitlines()[-1] == (
        "pysandboxes.errors.RuleSyntaxError: .py-sandboxes(2): learning mode is forbidden by 'learn=false', "
        "but requested by learn='x.learn'"
    )


def _run(
    project: Project, home: Path, script: str, *args: str, bytecode: bool = False, stdin: int | None = None
) -> Outcome:
    """``python SCRIPT ARGS`` in the project, with a home of its own and TOOL_VAR set; no
    ``__pycache__`` written unless ``bytecode`` (see the bytecode test)."""
    extra = {} if bytecode else {"PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, script, *args],
        cwd=project.root,
        env=project.environ(HOME=str(home), TOOL_VAR="v", **extra),
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def test_a_missing_rule_file_without_a_terminal_refuses_to_learn(project: Project, home: Path) -> None:
    setup(project, "")
    outcome = _run(project, home, "host.py")
    assert (outcome.returncode, outcome.stdout) == (1, "")
    assert outcome.stderr.splitlines()[-2:] == [
        f"pysandboxes.errors.SandBoxError: No rule file at {project.root / RULES}: partial mode learns, "
        "with no OS boundary, and every access of the sandboxed functions becomes a rule; refused "
        "without a terminal.",
        f"Create the rule file (`pysandboxes init {project.root / RULES}`), or ask for learning: "
        "sandboxes(learn=True).",
    ]
    assert not (project.root / RULES).exists()


def test_a_missing_rule_file_on_a_terminal_learns_and_says_so(project: Project, home: Path) -> None:
    import pty

    setup(project, "")
    leader, follower = pty.openpty()
    try:
        outcome = _run(project, home, "host.py", stdin=follower)
    finally:
        os.close(leader)
        os.close(follower)
    assert (outcome.returncode, outcome.lines) == (0, ["Point 6"]), outcome
    assert outcome.stderr.splitlines()[:2] == [  # the WARNING (logging unconfigured), the banner
        f"no rule file at {project.root / RULES}: partial mode learns, with no OS boundary, "
        "and every access of the sandboxed functions becomes a rule",
        BANNER.format(target=project.root / RULES),
    ]
    assert "remote-result-mode=objects" in (project.root / RULES).read_text()


READS_AT_IMPORT = """
from pysandboxes import sandbox

with open("data/table.txt") as f:
    TABLE = f.read()

@sandbox
def table():
    return TABLE
"""

READS_AT_IMPORT_HOST = """
import sys
from pysandboxes import sandboxes
import tools

with sandboxes(learn="learn" in sys.argv):
    print(tools.table())
"""


def test_what_a_module_reads_at_import_is_learned_for_the_landlock_child(
    project: Project, home: Path
) -> None:
    # A regression test: the landlock child confines itself before it imports the program's
    # modules, so what they read at import needs a rule; the learning child did not record it
    # (the Python layer is armed after those imports), and the strict run could not start.
    project.write("data/table.txt", "1 2 3")
    project.write(RULES, "os-sandbox=landlock\n")
    project.tools(READS_AT_IMPORT)
    project.host(READS_AT_IMPORT_HOST)
    learned = _run(project, home, "host.py", "learn")
    assert (learned.returncode, learned.lines) == (0, ["1 2 3"]), learned
    assert "pysandboxes: learned 1 rule into ./.py-sandboxes (files 1)" in learned.stderr.splitlines()
    assert "expose-ro=./data" in (project.root / RULES).read_text().splitlines()
    strict = _run(project, home, "host.py")
    assert (strict.returncode, strict.stderr, strict.lines) == (0, "", ["1 2 3"])


def test_without_the_learned_rule_what_a_module_reads_at_import_is_refused(
    project: Project, home: Path
) -> None:
    project.write("data/table.txt", "1 2 3")
    project.write(RULES, "os-sandbox=landlock\n")
    project.tools(READS_AT_IMPORT)
    project.host(READS_AT_IMPORT_HOST)
    strict = _run(project, home, "host.py")
    assert strict.returncode == 1
    assert "the sandbox could not start: PermissionError" in strict.stderr
    assert "data/table.txt" in strict.stderr


def test_the_import_systems_own_reads_of_a_src_layout_package_are_no_rule(
    project: Project, home: Path
) -> None:
    # The strict child is granted the import path's directories and the program's modules (the
    # OS plan): learning must not turn the import system's reads of them (the package's
    # __init__.py, its directory listing, the bytecode cache) into rules; what a module's own
    # code reads at import still is (the test above)
    project.write(RULES, "os-sandbox=landlock\n")
    project.write("src/pkg/__init__.py", "")
    project.write(
        "src/pkg/tools.py",
        """
        from pysandboxes import sandbox

        @sandbox
        def add(a, b):
            return a + b
        """,
    )
    project.host(
        """
        import sys
        sys.path.insert(0, "src")
        from pkg.tools import add
        from pysandboxes import sandboxes

        with sandboxes(learn="learn" in sys.argv):
            print(add(1, 2))
        """
    )
    learned = _run(project, home, "host.py", "learn", bytecode=True)
    assert (learned.returncode, learned.lines) == (0, ["3"]), learned
    rules = (project.root / RULES).read_text()
    assert not [line for line in rules.splitlines() if line.startswith("expose")], rules
    strict = _run(project, home, "host.py", bytecode=True)
    assert (strict.returncode, strict.stderr, strict.lines) == (0, "", ["3"])
