"""Each agent's pre-tool-use payload, in the shape its own documentation gives, through the hook
script run as the agent runs it (a child process, JSON on stdin), and the answer that agent reads.

Where each shape comes from (also in coding-agents/README.md):

- Claude Code: code.claude.com/docs/en/hooks (PreToolUse input; hookSpecificOutput.permissionDecision)
- Codex: developers.openai.com/codex/hooks (PreToolUse on Bash, tool_input.command; exit 2 + stderr)
- Gemini CLI: geminicli.com/docs/hooks/reference (BeforeTool; decision/reason on stdout)
- Cursor: cursor.com/docs/agent/hooks (beforeShellExecution; permission/user_message/agent_message)
- Copilot CLI: docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference
  (preToolUse camelCase and PreToolUse VS Code format; permissionDecision on stdout)
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from types import ModuleType

import pytest

from .conftest import HOOK, run_script

PROJECT = "/work/project"
BAD = "cd src && python3 tool.py --in data.csv"
GOOD = "cd src && python-sb tool.py --in data.csv"


def claude(command: str) -> dict[str, object]:
    return {
        "session_id": "abc123",
        "transcript_path": "/home/me/.claude/projects/p/00893aaf.jsonl",
        "cwd": PROJECT,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run the tool", "timeout": 120000},
        "tool_use_id": "toolu_01ABC123",
    }


def codex(command: str) -> dict[str, object]:
    return {
        "session_id": "019a-session",
        "turn_id": "019a-turn",
        "transcript_path": "/home/me/.codex/sessions/rollout.jsonl",
        "cwd": PROJECT,
        "hook_event_name": "PreToolUse",
        "model": "gpt-5",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": "call_1",
    }


def gemini(command: str) -> dict[str, object]:
    return {
        "session_id": "a1b2",
        "transcript_path": "/home/me/.gemini/tmp/chats/session.json",
        "cwd": PROJECT,
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-12-02T08:00:00.000Z",
        "tool_name": "run_shell_command",
        "tool_input": {"command": command, "description": "Run the tool"},
    }


def cursor(command: str) -> dict[str, object]:
    return {
        "conversation_id": "conv-123",
        "generation_id": "gen-456",
        "model": "gpt-5",
        "hook_event_name": "beforeShellExecution",
        "cursor_version": "2.0.77",
        "workspace_roots": [PROJECT],
        "user_email": None,
        "command": command,
        "cwd": PROJECT,
    }


def copilot(command: str) -> dict[str, object]:
    # camelCase format: toolArgs arrives as the JSON text of the arguments
    return {
        "sessionId": "sess-1",
        "timestamp": 1764662400000,
        "cwd": PROJECT,
        "toolName": "bash",
        "toolArgs": json.dumps({"command": command, "description": "Run the tool"}),
    }


def copilot_vscode(command: str) -> dict[str, object]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": "sess-1",
        "timestamp": "2026-12-02T08:00:00.000Z",
        "cwd": PROJECT,
        "tool_name": "bash",
        "tool_input": {"command": command, "description": "Run the tool"},
    }


PAYLOADS: dict[str, tuple[str, Callable[[str], dict[str, object]]]] = {
    "claude": ("claude", claude),
    "codex": ("codex", codex),
    "gemini": ("gemini", gemini),
    "cursor": ("cursor", cursor),
    "copilot": ("copilot", copilot),
    "copilot-vscode": ("copilot", copilot_vscode),
}


def hook_process(payload: object, *args: str):  # type: ignore[no-untyped-def]
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return run_script([sys.executable, str(HOOK), *args], stdin=text)


def assert_denied(agent: str, result) -> str:  # type: ignore[no-untyped-def]
    """The documented deny answer of ``agent``; returns the reason the agent shows."""
    if agent == "codex":
        assert (result.returncode, result.stdout) == (2, "")
        return result.stderr
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = json.loads(result.stdout)
    if agent == "claude":
        assert set(out) == {"hookSpecificOutput"}
        decision = out["hookSpecificOutput"]
        assert decision["hookEventName"] == "PreToolUse"
        assert decision["permissionDecision"] == "deny"
        return decision["permissionDecisionReason"]
    if agent == "gemini":
        assert out["decision"] == "deny"
        return out["reason"]
    if agent == "cursor":
        assert out["permission"] == "deny"
        assert out["user_message"] == out["agent_message"]
        return out["agent_message"]
    assert agent == "copilot"
    assert out["permissionDecision"] == "deny"
    return out["permissionDecisionReason"]


def assert_allowed(agent: str, result) -> None:  # type: ignore[no-untyped-def]
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    if agent in ("gemini", "cursor"):  # stdout must be JSON, and "no decision" is an empty object
        assert json.loads(result.stdout) == {}
    else:  # no output: the agent's own permission flow goes on
        assert result.stdout == ""


@pytest.mark.parametrize("shape", PAYLOADS)
def test_python_without_python_sb_is_denied_in_the_agents_format(shape: str) -> None:
    agent, make = PAYLOADS[shape]
    reason = assert_denied(agent, hook_process(make(BAD), f"--agent={agent}"))
    assert "python3 runs Python without the sandbox" in reason
    assert "Run `python-sb tool.py --in data.csv` instead" in reason


@pytest.mark.parametrize("shape", PAYLOADS)
def test_the_same_command_through_python_sb_is_allowed(shape: str) -> None:
    agent, make = PAYLOADS[shape]
    assert_allowed(agent, hook_process(make(GOOD), f"--agent={agent}"))


@pytest.mark.parametrize("shape", PAYLOADS)
def test_the_payload_shape_alone_names_the_agent(shape: str) -> None:
    agent, make = PAYLOADS[shape]
    assert_denied(agent, hook_process(make(BAD)))
    assert_allowed(agent, hook_process(make(GOOD)))


@pytest.mark.parametrize("shape", PAYLOADS)
def test_python_sb_learning_is_denied_in_the_agents_format(shape: str) -> None:
    agent, make = PAYLOADS[shape]
    reason = assert_denied(agent, hook_process(make("python-sb --learn tool.py"), f"--agent={agent}"))
    assert "learning mode allows every access" in reason


def test_copilot_tool_args_given_as_an_object_are_read_too() -> None:
    payload = {**copilot(BAD), "toolArgs": {"command": BAD}}
    assert_denied("copilot", hook_process(payload, "--agent=copilot"))


def test_cursor_config_outside_the_workspace_root_is_denied() -> None:
    payload = {
        **cursor("python-sb --pysandboxes-config=../other/.py-sandboxes x.py"),
        "cwd": f"{PROJECT}/src",
    }
    reason = assert_denied("cursor", hook_process(payload, "--agent=cursor"))
    assert f"outside the project ({PROJECT})" in reason


@pytest.mark.parametrize(
    ("agent", "payload"),
    [
        (
            "claude",
            {
                **claude("x"),
                "tool_name": "Write",
                "tool_input": {"file_path": "/p/a.sh", "content": "python3 x.py"},
            },
        ),
        ("codex", {**codex("x"), "tool_name": "apply_patch", "tool_input": {"command": "python3 x.py"}}),
        ("gemini", {**gemini("x"), "tool_name": "write_file", "tool_input": {"content": "python3 x.py"}}),
        (
            "copilot",
            {**copilot("x"), "toolName": "edit", "toolArgs": json.dumps({"command": "python3 x.py"})},
        ),
    ],
    ids=["claude-Write", "codex-apply_patch", "gemini-write_file", "copilot-edit"],
)
def test_tools_that_run_no_shell_command_pass(agent: str, payload: dict[str, object]) -> None:
    assert_allowed(agent, hook_process(payload, f"--agent={agent}"))


def test_stdin_that_is_not_json_is_refused_when_it_mentions_python() -> None:
    assert_denied("claude", hook_process("python3 x.py", "--agent=claude"))
    assert_allowed("claude", hook_process("ls -la", "--agent=claude"))


def test_an_unknown_agent_name_is_a_usage_error() -> None:
    result = hook_process(claude(BAD), "--agent=vim")
    assert result.returncode == 1
    assert "--agent must be one of claude, codex, gemini, cursor, copilot" in result.stderr


def test_every_agent_has_an_answer_and_a_payload(hook: ModuleType) -> None:
    assert set(hook.AGENTS) == {agent for agent, _ in PAYLOADS.values()}


@pytest.mark.parametrize("tool", ["Bash", "shell", "exec_command"])
def test_codex_command_given_as_an_argv_list_is_read_as_a_shell_line(tool: str) -> None:
    payload = {**codex("x"), "tool_name": tool, "tool_input": {"command": ["bash", "-lc", BAD]}}
    reason = assert_denied("codex", hook_process(payload, "--agent=codex"))
    assert "python3 runs Python without the sandbox" in reason
    good = {**payload, "tool_input": {"command": ["bash", "-lc", GOOD]}}
    assert_allowed("codex", hook_process(good, "--agent=codex"))
