"""The hook's verdict on shell commands: a table of what an agent types, and the unparsable case.

Each command goes through the whole hook (``run``: a Claude Code payload in, the documented
answer out), in a project at ``/work/project``."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

PROJECT = "/work/project"
D, A = "deny", "allow"

TABLE = [
    # the interpreter itself, by name or path
    ("python x.py", D),
    ("python3 x.py", D),
    ("python3.12 -m http.server 8000", D),
    ("pypy3 bench.py", D),
    ("/usr/bin/python3 -V", D),
    (".venv/bin/python -m pytest -q", D),
    ("./venv/bin/python3.11 app.py", D),
    ("python", D),
    ("python3t x.py", D),
    ("python3 - <<'EOF'\nprint(1)\nEOF", D),
    # reached through a launcher
    ("env python3 x.py", D),
    ("env -i PATH=/usr/bin python3 x.py", D),
    ("/usr/bin/env python3 x.py", D),
    ('env -S "python3 -u" x.py', D),
    ("sudo python3 x.py", D),
    ("sudo -u nobody python3 x.py", D),
    ("nohup python3 server.py &", D),
    ("timeout 10 python3 x.py", D),
    ("timeout -s KILL 5s python3 x.py", D),
    ("FOO=1 BAR=2 python3 x.py", D),
    ("nice -n 10 python3 x.py", D),
    ("exec python3 x.py", D),
    ("time python3 x.py", D),
    ("command python3 x.py", D),
    ("xargs -n1 python3 < files.txt", D),
    ("uv run python x.py", D),
    ("uv run --with rich --python 3.12 python x.py", D),
    ("uv run --frozen x.py", D),
    ("uv run -m pytest", D),
    ("uv run -- python3 x.py", D),
    ("uv --directory sub run python x.py", D),
    ("uvx --python 3.12 python", D),
    ("uvx --from . python3 -c 1", D),
    ("uv tool run python -V", D),
    ("poetry run python x.py", D),
    # inside a list, a pipe, a substitution or another shell
    ("ls && python3 x.py", D),
    ("make build; python3 x.py", D),
    ("cat data.csv | python3 filter.py", D),
    ("false || python3 x.py", D),
    ("echo $(python3 -c 'print(1)')", D),
    ("echo `python3 -V`", D),
    ('X="$(python3 -c 1)" ls', D),
    ("diff <(python3 a.py) b.txt", D),
    ('sh -c "python3 x.py"', D),
    ("bash -lc 'cd src && python3 x.py'", D),
    ("bash -c \"sh -c 'python3 x.py'\"", D),
    ("(cd src && python3 x.py)", D),
    ("{ python3 x.py; }", D),
    ("if true; then python3 x.py; fi", D),
    ('for f in *.py; do python3 "$f"; done', D),
    ("bash <<'EOF'\npython3 x.py\nEOF", D),
    ("sh <<< 'python3 x.py'", D),
    ('eval "python3 x.py"', D),
    ("ls \\\n && python3 x.py", D),
    # python-sb told to stop confining
    ("python-sb --learn x.py", D),
    ("python-sb --learn=audit.py-sandboxes x.py", D),
    ("python-sb --learn=true x.py", D),
    ("python-sb --py-sandbox=false x.py", D),
    ("python-sb --os-sandbox=none x.py", D),
    ("python-sb --os_sandbox=none x.py", D),
    ("python-sb -u --learn -m app", D),
    ("python-sb --pysandboxes-config=/etc/other.py-sandboxes x.py", D),
    ("python-sb --pysandboxes-config ../elsewhere/.py-sandboxes x.py", D),
    ("python-sb --pysandboxes-config=~/.py-sandboxes x.py", D),
    ("uv run python-sb --learn x.py", D),
    ("sh -c 'python-sb --os-sandbox=none x.py'", D),
    # python-sb as meant
    ("python-sb x.py", A),
    ("python-sb -m pytest -q", A),
    ("uv run python-sb x.py", A),
    ("uvx --from pysandboxes python-sb x.py", A),
    ("python-sb --pysandboxes-config=ci.py-sandboxes -m pytest", A),
    ("python-sb --pysandboxes-config ./config/ci.py-sandboxes x.py", A),
    (f"python-sb --pysandboxes-config={PROJECT}/ci.py-sandboxes x.py", A),
    ("python-sb --learn=false x.py", A),
    ("python-sb --os-sandbox=bwrap x.py", A),
    ("python-sb x.py --learn", A),  # an argument of the script
    ('python-sb -c "import sys" --learn', A),  # an argument of the program text
    ("cat data.csv | python-sb filter.py", A),
    ('sh -c "python-sb x.py"', A),
    # everything else
    ("ls -la", A),
    ('git commit -m "run python3 x.py"', A),
    ("grep -rn python3 src/", A),
    ("echo python3", A),
    ("pip install python-dotenv", A),
    ("uv sync --locked", A),
    ("uv pip install requests", A),
    ("uv run pytest -q", A),  # a console script: a stated limit
    ("pytest -q", A),
    ("make test", A),
    ("sh scripts/build.sh", A),
    ("which python3", A),
    ("command -v python3", A),
    ("type python3", A),
    ("ls /usr/bin/python3*", A),
    ("cat <<'EOF' > notes.md\npython3 is fun\nEOF", A),
    ("echo 'python3 x.py' > run.sh", A),
    ("export PYTHONPATH=src", A),
    ("sudo apt-get install python3-venv", A),
    ("docker run --rm python:3.12 python -V", A),  # another boundary: the container
    ('sh -c "ls -la"', A),
    ("timeout 5 curl -s http://127.0.0.1:8000/", A),
    ("ls 2>&1 | grep -c python", A),
    ("echo $((1 + 2))", A),
]

UNPARSABLE = [
    ('echo "unterminated python3', D),
    ("python3 'x", D),
    ("echo $(python3 -V", D),
    ('echo "unterminated', A),
    ("ls $(echo", A),
    ("echo `date", A),
]


def verdict(hook: ModuleType, command: str) -> str:
    payload = {
        "session_id": "s",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": PROJECT,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run"},
        "tool_use_id": "toolu_1",
    }
    answer = hook.run(json.dumps(payload), "claude")
    assert answer.exit_code == 0
    if not answer.stdout:
        return A
    decision = json.loads(answer.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert decision["permissionDecisionReason"].startswith("Refused by the python-sb hook")
    return D


def test_the_table_holds_at_least_sixty_commands_of_each_kind_together() -> None:
    assert len(TABLE) >= 60
    assert {v for _, v in TABLE} == {A, D}


@pytest.mark.parametrize(("command", "expected"), TABLE, ids=[c for c, _ in TABLE])
def test_command_verdict(hook: ModuleType, command: str, expected: str) -> None:
    assert verdict(hook, command) == expected


@pytest.mark.parametrize(("command", "expected"), UNPARSABLE, ids=[c for c, _ in UNPARSABLE])
def test_unparsable_command_is_refused_only_when_it_mentions_python(
    hook: ModuleType, command: str, expected: str
) -> None:
    with pytest.raises(hook.Unparsable):
        hook.parse(command)
    assert verdict(hook, command) == expected


def test_unparsable_refusal_says_why(hook: ModuleType) -> None:
    reason = hook.judge_command('echo "python3', PROJECT).reason
    assert "could not be parsed (unterminated double quote)" in reason


def test_shells_nested_too_deep_are_unparsable(hook: ModuleType) -> None:
    inner = "python3 x.py"
    for _ in range(12):
        inner = "sh -c " + hook._quote(inner)
    assert verdict(hook, inner) == D
    assert "nested too deep" in hook.judge_command(inner, PROJECT).reason


def test_refusal_proposes_the_same_command_with_python_sb(hook: ModuleType) -> None:
    reason = hook.judge_command("FOO=1 uv run --with rich python3 -m app --port 8000", PROJECT).reason
    assert "Run `FOO=1 uv run --with rich python-sb -m app --port 8000` instead" in reason
    assert "do not fall back to python" in reason


def test_uv_run_script_refusal_keeps_the_uv_options(hook: ModuleType) -> None:
    reason = hook.judge_command("uv run --frozen tool.py a", PROJECT).reason
    assert "Run `uv run --frozen python-sb tool.py a` instead" in reason


def test_config_outside_the_project_names_the_project(hook: ModuleType) -> None:
    reason = hook.judge_command("python-sb --pysandboxes-config=/etc/x x.py", PROJECT).reason
    assert f"outside the project ({PROJECT})" in reason


def test_config_through_a_symlink_out_of_the_project_is_refused(hook: ModuleType, tmp_path) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "elsewhere.py-sandboxes").write_text("python-import=*\n")
    (project / "rules.py-sandboxes").symlink_to(tmp_path / "elsewhere.py-sandboxes")
    (project / "own.py-sandboxes").write_text("python-import=json\n")
    assert not hook.judge_command(
        "python-sb --pysandboxes-config=rules.py-sandboxes x.py", str(project)
    ).allowed
    assert hook.judge_command("python-sb --pysandboxes-config=own.py-sandboxes x.py", str(project)).allowed


def test_a_failure_of_the_hook_itself_refuses_only_commands_that_mention_python(
    hook: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(text: str) -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr(hook, "parse", broken)
    assert verdict(hook, "python3 x.py") == D
    assert verdict(hook, "ls -la") == A
