"""The files each agent loads: manifests that parse, hook commands that name the script and the
agent, skills whose front matter the agents read, and the CI workflow to copy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import HOOK, KIT, ROOT

HOOK_FILES = {
    "claude": (KIT / "hooks/hooks.json", "PreToolUse", "Bash"),
    "codex": (KIT / "hooks/codex-hooks.json", "PreToolUse", "Bash"),
    "gemini": (KIT / "gemini/hooks/hooks.json", "BeforeTool", "run_shell_command"),
}
SKILLS = ("python-sb", "pysandboxes-rules-from-tests", "pysandboxes-review-rules")


def load(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def test_every_json_file_of_the_kit_parses() -> None:
    files = [*sorted(KIT.rglob("*.json")), ROOT / ".claude-plugin/marketplace.json"]
    assert len(files) >= 8
    for path in files:
        load(path)


@pytest.mark.parametrize("agent", HOOK_FILES)
def test_hook_file_runs_the_script_for_its_agent_on_the_shell_tool(agent: str) -> None:
    path, event, matcher = HOOK_FILES[agent]
    (group,) = load(path)["hooks"][event]  # type: ignore[index]
    assert group["matcher"] == matcher
    (entry,) = group["hooks"]
    assert entry["type"] == "command"
    assert entry["command"].startswith("python3 ")
    assert entry["command"].endswith(f'require_python_sb.py" --agent={agent}')
    assert 0 < entry["timeout"] <= (10_000 if agent == "gemini" else 10)  # Gemini counts milliseconds


def test_cursor_hooks_file_runs_the_script_before_shell_execution() -> None:
    data = load(KIT / "cursor/hooks.json")
    assert data["version"] == 1
    (entry,) = data["hooks"]["beforeShellExecution"]  # type: ignore[index]
    assert re.fullmatch(
        r"python3 /\S+/coding-agents/hooks/require_python_sb\.py --agent=cursor", entry["command"]
    )


def test_copilot_hooks_file_runs_the_script_before_each_tool() -> None:
    data = load(KIT / "copilot/python-sb.json")
    assert data["version"] == 1
    (entry,) = data["hooks"]["preToolUse"]  # type: ignore[index]
    assert entry["type"] == "command"
    assert entry["bash"].endswith("/coding-agents/hooks/require_python_sb.py --agent=copilot")
    assert entry["timeoutSec"] == 10


def test_gemini_extension_links_the_shared_script_and_skills() -> None:
    assert load(KIT / "gemini/gemini-extension.json")["name"] == "python-sb"
    assert (KIT / "gemini/hooks/require_python_sb.py").resolve() == HOOK
    assert (KIT / "gemini/skills").resolve() == KIT / "skills"
    assert (KIT / "gemini/GEMINI.md").is_file()


def test_plugins_and_marketplace_name_the_same_plugin() -> None:
    claude = load(KIT / ".claude-plugin/plugin.json")
    codex = load(KIT / ".codex-plugin/plugin.json")
    (entry,) = load(ROOT / ".claude-plugin/marketplace.json")["plugins"]  # type: ignore[misc]
    assert claude["name"] == codex["name"] == entry["name"] == "python-sb"
    assert claude["version"] == codex["version"] == entry["version"]
    assert (ROOT / entry["source"]).resolve() == KIT
    for key in ("skills", "hooks"):  # Codex resolves them from the plugin root
        assert str(codex[key]).startswith("./")
        assert (KIT / str(codex[key])).exists()
    assert "hooks" not in claude  # hooks/hooks.json is found by convention; naming it loads it twice


def front_matter(path: Path) -> dict[str, str]:
    text = path.read_text()
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, f"{path} has no front matter"
    fields = {}
    for line in match.group(1).splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


@pytest.mark.parametrize("name", SKILLS)
def test_skill_front_matter_names_the_skill_and_says_when_to_use_it(name: str) -> None:
    fields = front_matter(KIT / "skills" / name / "SKILL.md")
    assert fields["name"] == name
    assert re.fullmatch(r"[a-z0-9-]{1,64}", name)
    assert 50 < len(fields["description"]) <= 1024
    assert "Use " in fields["description"]
    assert ":" not in fields["description"].replace("e.g.", "")  # one plain YAML scalar


def test_every_skill_script_has_its_own_locked_rule_file() -> None:
    scripts = sorted((KIT / "skills").rglob("*.py"))
    assert scripts
    for script in scripts:
        profile = script.parent / ".py-sandboxes"
        assert profile.is_file(), f"{script} ships without its rule file"
        text = profile.read_text()
        assert re.search(r"^learn=false$", text, re.M)
        assert not re.search(r'^include(-optional)? "\./', text, re.M)
        assert not re.search(r"^os-sandbox=.*\$\{", text, re.M)


def test_the_ci_workflow_grades_rule_changes_with_the_pinned_release() -> None:
    text = (KIT / "ci/sandbox-rules-review.yml").read_text()
    assert "pull_request:" in text
    assert '- "**/*.py-sandboxes*"' in text
    assert re.search(r"^      PYSANDBOXES: pysandboxes==\d+\.\d+\.\d+$", text, re.M)  # pinned
    assert 'pysandboxes diff --markdown --fail-on=high "$BASE_SHA...$HEAD_SHA" > review.md' in text
    assert 'cat review.md >> "$GITHUB_STEP_SUMMARY"' in text
    assert 'gh pr comment "$PR_NUMBER" --body-file review.md' in text
    assert "persist-credentials: false" in text
    # the revisions reach the shell through variables, never pasted into the script
    assert "BASE_SHA: ${{ github.event.pull_request.base.sha }}" in text
    assert "HEAD_SHA: ${{ github.event.pull_request.head.sha }}" in text
    runs = [line for line in text.splitlines() if "${{" in line and "run:" in line]
    assert runs == []
