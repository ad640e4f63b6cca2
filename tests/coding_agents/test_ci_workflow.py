"""The CI workflow's grading step, run as the runner runs it: its shell script, on a pull request
branch of a temporary git repository, with ``uvx`` standing for the pinned release (the
``pysandboxes`` of this environment) and the job summary and step outputs in files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .conftest import BIN, KIT

WORKFLOW = KIT / "ci/sandbox-rules-review.yml"
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


def step_script(step_id: str) -> str:
    """The ``run: |`` block of the step with this id (the workflow's only YAML shape here)."""
    lines = WORKFLOW.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == f"id: {step_id}")
    run = next(i for i in range(start, len(lines)) if lines[i].strip() == "run: |")
    indent = len(lines[run + 1]) - len(lines[run + 1].lstrip())
    body = []
    for line in lines[run + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) < indent:
            break
        body.append(line[indent:])
    return "\n".join(body) + "\n"


@pytest.fixture
def runner(tmp_path: Path) -> dict[str, str]:
    """A PATH whose ``uvx --from SPEC pysandboxes ...`` runs this environment's pysandboxes."""
    shims = tmp_path / "shims"
    shims.mkdir()
    uvx = shims / "uvx"
    uvx.write_text(f'#!/bin/sh\n[ "$1" = --from ] && shift 2\nexec "{BIN}/$@"\n')
    uvx.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": f"{shims}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PYSANDBOXES": "pysandboxes==0.1.0",
        **GIT_ENV,
    }


def make_pr(tmp_path: Path, env: dict[str, str], head_rules: str) -> tuple[Path, str, str]:
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    (repo / ".py-sandboxes").write_text("learn=false\npython-import=json\n")
    git("add", "-A")
    git("commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    git("checkout", "-qb", "pr")
    (repo / ".py-sandboxes").write_text(head_rules)
    git("commit", "-qam", "pr")
    return repo, base, git("rev-parse", "HEAD")


def run_step(tmp_path: Path, env: dict[str, str], head_rules: str) -> tuple[str, str, str]:
    repo, base, head = make_pr(tmp_path, env, head_rules)
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    done = subprocess.run(
        ["bash", "-e", "-c", step_script("grade")],
        cwd=repo,
        env={
            **env,
            "BASE_SHA": base,
            "HEAD_SHA": head,
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(output),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # the step itself never fails: the last one does
    return summary.read_text(), output.read_text(), (repo / "review.md").read_text()


def test_a_high_risk_pull_request_gets_the_table_and_fails_the_last_step(
    tmp_path: Path, runner: dict[str, str]
) -> None:
    summary, output, review = run_step(tmp_path, runner, "python-import=json, subprocess\n")
    assert review == summary
    assert review.startswith("## Sandbox rule changes\n")
    assert "| high | added | `python-import=subprocess` | `.py-sandboxes:1` |" in review
    assert "| high | widened | `learn=false` | `.py-sandboxes:1 (before)` |" in review
    assert output == "status=1\n"


def test_a_low_risk_pull_request_passes(tmp_path: Path, runner: dict[str, str]) -> None:
    summary, output, _review = run_step(tmp_path, runner, "learn=false\npython-import=json, csv\n")
    assert "| low | added | `python-import=csv` |" in summary
    assert output == "status=0\n"


def test_a_broken_rule_file_is_reported_in_the_summary_and_fails(
    tmp_path: Path, runner: dict[str, str]
) -> None:
    summary, output, _review = run_step(tmp_path, runner, "learn=false\nnet=ALLOW|tcp\n")
    assert "pysandboxes diff could not compare the rule files (exit 2):" in summary
    assert ".py-sandboxes(2): 'net=ALLOW|tcp' has 2 field(s), expected 5" in summary
    assert output == "status=2\n"


def test_the_workflow_names_no_revision_inside_a_script() -> None:
    script = step_script("grade")
    assert "${{" not in script
    assert os.path.basename(WORKFLOW) == "sandbox-rules-review.yml"
