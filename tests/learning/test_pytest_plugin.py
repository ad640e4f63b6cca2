"""Learning from tests: the pytest plugin in a sample project, and ``pysandboxes diff``.

pytest runs in a subprocess on a temporary project whose ``@sandbox`` function writes a CSV.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

EXPORT = """
from pysandboxes import sandbox


@sandbox
def to_csv(rows):
    import csv, io

    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue()
"""

TESTS = """
import pytest

from app.export import to_csv


@pytest.mark.sandbox_learn
def test_export_to_csv():
    assert to_csv([[1, 2]]) == "1,2\\r\\n"


def test_unmarked():
    assert to_csv([]) == ""
"""

PYPROJECT = """
[tool.pytest.ini_options]
addopts = "-p pysandboxes.pytest_plugin -p no:cacheprovider"
pythonpath = ["."]
"""


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__init__.py").write_text("")
    (tmp_path / "app" / "export.py").write_text(EXPORT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_export.py").write_text(TESTS)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    subprocess.run([BIN / "pysandboxes", "init", "--os-sandbox=subprocess"], cwd=tmp_path, check=True)
    return tmp_path


def pytest_in(project: Path, *args: str, learn: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SANDBOX_LEARN"))}
    if learn:
        env["SANDBOX_LEARN"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_tests_run_strictly_under_the_profile(sample: Path) -> None:
    result = pytest_in(sample)
    assert result.returncode == 1, result.stdout
    assert "2 failed" in result.stdout
    assert "RuleModuleNotFoundError: Module named 'csv' is not allowed by a rule" in result.stdout
    assert not (sample / ".py-sandboxes.learn").exists()


def test_a_marked_test_learns_candidates_only_with_sandbox_learn(sample: Path) -> None:
    profile = (sample / ".py-sandboxes").read_text()
    result = pytest_in(sample, "tests/test_export.py::test_export_to_csv", learn=True)
    assert result.returncode == 0, result.stdout + result.stderr
    learned = (sample / ".py-sandboxes.learn").read_text()
    assert "\npython-import=csv, io\n" in learned
    assert (sample / ".py-sandboxes").read_text() == profile  # never the active profile

    # the unmarked test does not learn, even with SANDBOX_LEARN set
    unmarked = pytest_in(sample, "tests/test_export.py::test_unmarked", learn=True)
    assert unmarked.returncode == 1 and "Module named 'csv'" in unmarked.stdout

    diff = subprocess.run(
        [BIN / "pysandboxes", "diff", ".py-sandboxes.learn"], cwd=sample, capture_output=True, text=True
    )
    assert diff.returncode == 1
    (line,) = diff.stdout.splitlines()
    assert line.endswith("): python-import=csv, io") and line.startswith(".py-sandboxes.learn(")

    # promoted by hand: the whole suite passes strictly, diff has nothing left
    with (sample / ".py-sandboxes").open("a") as f:
        f.write("python-import=csv, io\n")
    assert pytest_in(sample).returncode == 0
    diff = subprocess.run(
        [BIN / "pysandboxes", "diff", ".py-sandboxes.learn"], cwd=sample, capture_output=True, text=True
    )
    assert (diff.returncode, diff.stdout) == (0, "")


def test_a_missing_profile_fails_each_strict_test_with_what_to_do(sample: Path) -> None:
    (sample / ".py-sandboxes").unlink()
    result = pytest_in(sample)
    assert result.returncode == 1
    assert "pysandboxes: no rule file" in result.stdout and "pysandboxes init" in result.stdout
    assert not (sample / ".py-sandboxes").exists()  # nothing learned into the active profile


def test_the_learn_file_cannot_be_the_active_profile(sample: Path) -> None:
    result = pytest_in(sample, "--sandbox-learn-file=.py-sandboxes", learn=True)
    assert result.returncode != 0
    assert "is the active profile" in result.stdout + result.stderr


def test_diff_of_an_unreadable_candidate_file(sample: Path) -> None:
    diff = subprocess.run(
        [BIN / "pysandboxes", "diff", "nowhere.learn"], cwd=sample, capture_output=True, text=True
    )
    assert diff.returncode == 2
    assert diff.stderr.startswith("pysandboxes diff: cannot read nowhere.learn: No such file or directory")


def test_diff_lists_rules_outside_learning_blocks_when_the_file_has_none(sample: Path) -> None:
    (sample / "hand.learn").write_text(
        textwrap.dedent(
            """\
            expose-ro=./app
            # a comment
            python-import=csv, json
            """
        )
    )
    with (sample / ".py-sandboxes").open("a") as f:
        f.write("python-import=json\n")
    diff = subprocess.run(
        [BIN / "pysandboxes", "diff", "hand.learn"], cwd=sample, capture_output=True, text=True
    )
    assert diff.stdout.splitlines() == ["hand.learn(1): expose-ro=./app", "hand.learn(3): python-import=csv"]
