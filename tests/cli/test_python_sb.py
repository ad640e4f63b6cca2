"""`python-sb`: finding and loading the rules, and what happens before the program runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_SB = [sys.executable, "-c", "import sys; from python_sb import main; sys.exit(main())"]


def python_sb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(cwd / "home")}
    env.pop("OS_SANDBOX", None)
    return subprocess.run([*PYTHON_SB, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path


def test_version_names_python_and_python_sb(project: Path) -> None:
    result = python_sb("--version", cwd=project)
    assert result.returncode == 0
    assert result.stdout == f"Python {sys.version.split()[0]}\n"  # as python prints it
    result = python_sb("-VV", cwd=project)
    assert result.stdout.splitlines()[1].startswith("python-sb ")


def test_help_lists_the_sandbox_options(project: Path) -> None:
    result = python_sb("--help", cwd=project)
    assert result.returncode == 0
    assert "--pysandboxes-config" in result.stdout and "--learn" in result.stdout


def test_a_broken_rule_file_next_to_the_script_stops_with_exit_2(project: Path) -> None:
    skill = project / "skill"
    skill.mkdir()
    (skill / ".py-sandboxes").write_text("python-import=json\nnet=ALLOW|tcp\n")
    (skill / "report").write_text("print('hi')\n")  # no .py suffix: still found
    result = python_sb("skill/report", cwd=project)
    assert result.returncode == 2
    assert result.stderr.startswith("skill/.py-sandboxes(2): 'net=ALLOW|tcp' has 2 field(s), expected 5")


def test_the_lock_refuses_a_rule_given_on_the_command_line(project: Path) -> None:
    (project / ".py-sandboxes").write_text("python-import=json\nlearn=false\n")
    (project / "app.py").write_text("print('hi')\n")
    result = python_sb("--expose-ro=/etc", "app.py", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        ".py-sandboxes(2): 'learn=false' locks the rules: the command line cannot add --expose-ro=/etc"
    )


def test_a_valid_program_runs_under_its_rules(project: Path) -> None:
    (project / ".py-sandboxes").write_text(f"expose-rw={project}\nos-sandbox=subprocess\n")
    (project / "app.py").write_text("open('ran', 'w').close()\nopen('/etc/hostname')\n")
    result = python_sb("app.py", cwd=project)
    assert result.returncode == 1
    assert (project / "ran").exists()
    assert result.stderr.endswith(
        "RuleFileNotFoundError: Access to '/etc/hostname' must be accepted by a rule.\n"
        "Add `expose-ro=/etc` to the rule file to allow it.\n"
    )


def test_a_missing_rule_file_learns_a_first_one(project: Path) -> None:
    (project / "app.py").write_text("import json\nopen('ran', 'w').close()\n")
    result = python_sb("app.py", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "LEARNING MODE" in result.stderr
    assert (project / "ran").exists()
    learned = (project / ".py-sandboxes").read_text()
    assert "\nexpose-rw=.\n" in learned and "\npython-import=json\n" in learned
    assert python_sb("app.py", cwd=project).returncode == 0  # the learned file is in force
