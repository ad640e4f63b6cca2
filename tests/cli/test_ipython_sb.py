"""`ipython-sb`: IPython as the interactive shell, the session under the rules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent


def run_session(project: Path, rules: str, session: str) -> subprocess.CompletedProcess[str]:
    (project / ".py-sandboxes").write_text(rules)
    env = {**os.environ, "HOME": str(project)}
    return subprocess.run(
        [str(BIN / "ipython-sb"), "-q"],
        input=session,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_ipython_session_runs_under_the_rules(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret")
    session = (
        "print(40 + 2)\n"
        f"try:\n    open({str(secret)!r}).read()\nexcept OSError as e:\n    print(type(e).__name__)\n\n"
        "exit()\n"
    )
    result = run_session(tmp_path, "python-import=*\nos-sandbox=landlock\n", session)
    assert result.returncode == 0, result.stderr
    assert "42" in result.stdout
    assert "RuleFileNotFoundError" in result.stdout
    assert "s3cret" not in result.stdout


def test_the_same_session_reads_the_file_with_a_rule(tmp_path: Path) -> None:
    secret = tmp_path / "data" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("s3cret")
    session = f"print(open({str(secret)!r}).read())\nexit()\n"
    result = run_session(tmp_path, "python-import=*\nexpose-ro=./data\nos-sandbox=landlock\n", session)
    assert result.returncode == 0, result.stderr
    assert "s3cret" in result.stdout
