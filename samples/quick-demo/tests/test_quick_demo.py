"""quick-demo under python-sb, strict and offline: the job works, each attempt of --evil is
refused (and succeeds under plain python), the shipped profile holds no broad rule."""

from __future__ import annotations

from pathlib import Path

import pytest
from samples_shared.testing import PageServer, plain_python, profile_problems, run_python_sb, sample_env

SAMPLE = Path(__file__).resolve().parents[1]
DEMO = SAMPLE / "demo.py"


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_demo").write_text("not a real key\n")
    return sample_env(home, DEMO_API_KEY="sk-demo-0123", DEMO_SECRET="s3cret")


def attempts(output: str) -> dict[str, str]:
    """Each attempt of --evil (its title line) -> the verdict line below it."""
    lines = output.splitlines()
    return {line[2:]: lines[i + 1].strip() for i, line in enumerate(lines[:-1]) if line.startswith("- ")}


def test_negative_control_every_attempt_succeeds_without_the_sandbox(env, pages: PageServer) -> None:
    code = f"import runpy, sys; sys.argv = ['demo.py', '--evil', '{pages.other_port}']; runpy.run_path({str(DEMO)!r}, run_name='__main__')"
    result = plain_python(code, env=env)
    assert result.returncode == 0, result.stderr
    verdicts = attempts(result.stdout)
    assert len(verdicts) == 4
    assert all(v.startswith("it worked") for v in verdicts.values()), result.stdout
    assert "s3cret" in result.stdout


def test_the_job_fetches_the_allowed_page_lists_data_and_reads_its_key(env, pages: PageServer) -> None:
    result = run_python_sb([str(DEMO), pages.url("/redirect")], env={**env, **pages.env()})
    assert result.returncode == 0, result.stderr
    assert "starting 'Sandboxed pages'" in result.stdout
    assert "data/ holds: notes.txt, sales.csv" in result.stdout
    assert "DEMO_API_KEY: set, 12 characters" in result.stdout


def test_the_job_is_refused_a_page_of_another_port(env, pages: PageServer) -> None:
    result = run_python_sb([str(DEMO), pages.other_url()], env={**env, **pages.env()})
    assert result.returncode != 0
    assert "DENIED" in result.stderr


def test_evil_is_refused_each_attempt_with_its_message(env, pages: PageServer) -> None:
    result = run_python_sb([str(DEMO), "--evil", str(pages.other_port)], env={**env, **pages.env()})
    assert result.returncode == 0, result.stderr
    verdicts = attempts(result.stdout)
    ssh, shell, port, secret = verdicts.values()
    assert ssh.startswith("refused by the sandbox: RuleFileNotFoundError: Access to"), ssh
    assert ".ssh' must be accepted by a rule" in ssh
    assert shell.startswith("refused by the sandbox: RuleApiPermissionError: os.system()"), shell
    assert port.startswith("refused by the sandbox: ConnectError"), port
    assert "DENIED" in port
    assert secret.startswith("not there: DEMO_SECRET"), secret
    assert "s3cret" not in result.stdout


def test_the_shipped_profile_holds_no_broad_rule() -> None:
    assert profile_problems(SAMPLE / ".py-sandboxes") == []


def test_the_profile_check_catches_each_broad_rule(tmp_path: Path) -> None:
    broad = [
        "python-import=json, *",
        "learn=./candidates",
        "python-api=ALLOW:process-exec",
        "python-api=ALLOW:*",
        "expose-ro=.",
        "expose-rw=/dev",
    ]
    profile = tmp_path / ".py-sandboxes"
    profile.write_text("# learn=x (a comment)\nexpose-ro=./data  # fine\n" + "\n".join(broad) + "\n")
    assert [p.split(": ", 1)[1] for p in profile_problems(profile)] == broad
