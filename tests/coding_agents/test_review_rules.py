"""The rule review script: real rule-file pairs, a branch of a temporary git repository graded
through ``git diff``, under the script's own locked profile, and its lists kept in step with the
core's rule language."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pysandboxes.rules import load_policy
from pysandboxes.rules.api_registry import CATEGORIES, RISKY_CATEGORIES

from .conftest import BIN, REVIEW, ROOT, run_script

PYTHON_SB = str(BIN / "python-sb")


def graded(out: str) -> set[tuple[str, str, str]]:
    return {(x["grade"], x["change"], x["rule"]) for x in json.loads(out)}


def review_files(old: Path, new: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_script([sys.executable, str(REVIEW), *args, str(old), str(new)])


def review_sandboxed(
    diff: str, *args: str, home: Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """The script as the skill and the CI run it: under python-sb, its own rule file, the diff on stdin."""
    return run_script([PYTHON_SB, str(REVIEW), *args], stdin=diff, cwd=cwd, HOME=str(home))


# -- real pairs ---------------------------------------------------------------------------------


@pytest.fixture
def demo_pair(tmp_path: Path) -> tuple[Path, Path]:
    old = tmp_path / "old.py-sandboxes"
    old.write_text((ROOT / "demo/quick/.py-sandboxes").read_text())
    text = old.read_text()
    text = text.replace(
        "python-import=csv, json, os, socket, sys", "python-import=csv, json, os, socket, sys, subprocess"
    )
    text = text.replace("os-sandbox=${OS_SANDBOX:-landlock}", "os-sandbox=none")
    text += "net=ALLOW|tcp|*|443|OUT\nenv=GITHUB_TOKEN=${GITHUB_TOKEN}\nexpose-ro=./data/extra\n"
    new = tmp_path / "new.py-sandboxes"
    new.write_text(text)
    return old, new


def test_demo_profile_widened_is_graded_rule_by_rule(demo_pair: tuple[Path, Path]) -> None:
    result = review_files(*demo_pair, "--json")
    assert result.returncode == 0, result.stderr
    assert graded(result.stdout) == {
        ("high", "added", "python-import=subprocess"),
        ("high", "added", "os-sandbox=none"),
        ("high", "added", "net=ALLOW|tcp|*|443|OUT"),
        ("medium", "added", "env=GITHUB_TOKEN=${GITHUB_TOKEN}"),
        ("low", "added", "expose-ro=./data/extra"),
        ("medium", "removed", "os-sandbox=${OS_SANDBOX:-landlock}"),
    }


def test_a_file_compared_with_itself_has_no_change(tmp_path: Path) -> None:
    path = ROOT / "demo/quick/.py-sandboxes"
    result = review_files(path, path)
    assert (result.returncode, result.stdout) == (0, "No rule added or removed.\n")


def test_the_table_lists_the_riskiest_first_with_where_and_what_to_look_for(
    demo_pair: tuple[Path, Path],
) -> None:
    lines = review_files(*demo_pair).stdout.splitlines()
    assert lines[0].split() == ["grade", "change", "rule", "where", "why", "look", "for"]
    grades = [line.split()[0] for line in lines[2:] if line and line.split()[0] in ("high", "medium", "low")]
    assert grades == sorted(grades, key=["high", "medium", "low"].index)
    assert any("import subprocess" in line and "new.py-sandboxes:" in line for line in lines)
    assert lines[-1] == "6 changes (5 added, 1 removed): 3 high, 2 medium, 1 low"


def test_markdown_names_each_high_risk_change_in_its_own_sentence(demo_pair: tuple[Path, Path]) -> None:
    out = review_files(*demo_pair, "--markdown").stdout
    assert out.startswith("## Sandbox rule changes\n")
    assert "| high | added | `net=ALLOW\\|tcp\\|*\\|443\\|OUT` |" in out
    assert "- `net=ALLOW|tcp|*|443|OUT` (added): opens the network to any host." in out


@pytest.mark.parametrize(("fail_on", "code"), [("high", 1), ("medium", 1)])
def test_fail_on_exits_one_when_a_change_reaches_the_grade(
    demo_pair: tuple[Path, Path], fail_on: str, code: int
) -> None:
    assert review_files(*demo_pair, f"--fail-on={fail_on}").returncode == code


def test_fail_on_high_passes_a_change_without_high_risk(tmp_path: Path) -> None:
    old, new = tmp_path / "a", tmp_path / "b"
    old.write_text("python-import=json\n")
    new.write_text("python-import=json, csv\nnet=ALLOW|tcp|api.example.com|443|OUT\n")
    assert review_files(old, new, "--fail-on=high").returncode == 0
    assert review_files(old, new, "--fail-on=medium").returncode == 1


def test_usage_errors_exit_two(tmp_path: Path) -> None:
    assert run_script([sys.executable, str(REVIEW), "--fail-on=low"]).returncode == 2
    assert run_script([sys.executable, str(REVIEW), "only-one-file"]).returncode == 2
    missing = review_files(tmp_path / "nope", tmp_path / "nope2")
    assert missing.returncode == 2
    assert "cannot read" in missing.stderr


# -- a branch of a temporary git repository ----------------------------------------------------


def git(repo: Path, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout


BASE_APP = """\
include "~/.config/py-sandboxes/user-py-sandboxes.profile"
include "common.py-sandboxes"
learn=false
os-sandbox=bwrap
python-import=csv, json
expose-ro=./data
expose-rw=${REPORT_OUT:-./output}
env=LANG=${LANG:-C.UTF-8}
net=ALLOW|tcp|api.example.com|443|OUT
"""
BASE_COMMON = "python-import=os\nenv=TZ=${TZ:-UTC}\n"
HEAD_APP = """\
include "common.py-sandboxes"
os-sandbox=bwrap
# the same imports, re-ordered, plus one
python-import=json, csv, socket
net=ALLOW|tcp|api.example.com|443|OUT
expose-rw=${REPORT_OUT:-/var/reports}
expose-ro=./data

# Learned by tests/test_export.py::test_upload
net=ALLOW|tcp|*|*|OUT
"""
# env=LANG moved from the application file into common: no change
HEAD_COMMON = "python-import=os\nenv=TZ=${TZ:-UTC}\nenv=LANG=${LANG:-C.UTF-8}\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".py-sandboxes").write_text(BASE_APP)
    (repo / "common.py-sandboxes").write_text(BASE_COMMON)
    (repo / "tools/.py-sandboxes").write_text("learn=false\npython-import=json\n")
    (repo / "README").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "checkout", "-qb", "feature")
    (repo / ".py-sandboxes").write_text(HEAD_APP)
    (repo / "common.py-sandboxes").write_text(HEAD_COMMON)
    (repo / "tools/.py-sandboxes").write_text(
        "learn=false\npython-import=json\npython-api=ALLOW:process-exec\n"
    )
    (repo / ".py-sandboxes.learn").write_text("python-import=ctypes\n")  # a candidate: never active
    (repo / "README").write_text("changed\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "feature")
    return repo


EXPECTED_BRANCH = {
    ("high", "added", "net=ALLOW|tcp|*|*|OUT"),
    ("high", "added", "expose-rw=${REPORT_OUT:-/var/reports}"),
    ("high", "added", "python-api=ALLOW:process-exec"),
    ("high", "removed", 'include "~/.config/py-sandboxes/user-py-sandboxes.profile"'),
    ("high", "removed", "learn=false"),
    ("low", "added", "python-import=socket"),
    ("low", "removed", "expose-rw=${REPORT_OUT:-./output}"),
}


def test_a_branch_is_graded_through_git_diff_under_the_locked_profile(repo: Path, tmp_path: Path) -> None:
    diff = git(repo, "diff", "main...feature", "--", "*.py-sandboxes*")
    result = review_sandboxed(diff, "--json", home=tmp_path, cwd=repo)
    assert result.returncode == 0, result.stderr
    assert graded(result.stdout) == EXPECTED_BRANCH


def test_the_learned_by_comment_attributes_the_rule_below_it(repo: Path, tmp_path: Path) -> None:
    diff = git(repo, "diff", "main...feature", "--", "*.py-sandboxes*")
    found = json.loads(review_sandboxed(diff, "--json", home=tmp_path, cwd=repo).stdout)
    by_rule = {x["rule"]: x for x in found}
    assert by_rule["net=ALLOW|tcp|*|*|OUT"]["learned_by"] == "tests/test_export.py::test_upload"
    assert by_rule["net=ALLOW|tcp|*|*|OUT"]["file"] == ".py-sandboxes"
    assert by_rule["python-import=socket"]["learned_by"] == ""


def test_fail_on_high_gates_the_branch_in_ci(repo: Path, tmp_path: Path) -> None:
    diff = git(repo, "diff", "main...feature", "--", "*.py-sandboxes*")
    assert review_sandboxed(diff, "--fail-on=high", home=tmp_path, cwd=repo).returncode == 1


def test_moving_and_reordering_rules_is_no_change(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-qb", "tidy")
    app = (repo / ".py-sandboxes").read_text()
    lines = app.splitlines()
    env_line = "env=LANG=${LANG:-C.UTF-8}"
    lines.remove(env_line)
    (repo / ".py-sandboxes").write_text("\n".join(reversed(lines)).replace("csv, json", "json,csv") + "\n")
    (repo / "common.py-sandboxes").write_text(BASE_COMMON + env_line + "\n")
    git(repo, "commit", "-qam", "tidy")
    diff = git(repo, "diff", "main...tidy", "--", "*.py-sandboxes*")
    assert diff  # the text changed
    result = review_sandboxed(diff, home=tmp_path, cwd=repo)
    assert (result.returncode, result.stdout) == (0, "No rule added or removed.\n")


def test_a_changed_variable_default_is_a_change(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "main")
    git(repo, "checkout", "-qb", "default")
    app = (repo / ".py-sandboxes").read_text().replace("os-sandbox=bwrap", "os-sandbox=${OS_SANDBOX:-bwrap}")
    (repo / ".py-sandboxes").write_text(app)
    git(repo, "commit", "-qam", "default")
    diff = git(repo, "diff", "main...default", "--", "*.py-sandboxes*")
    assert graded(review_sandboxed(diff, "--json", home=tmp_path).stdout) == {
        ("high", "added", "os-sandbox=${OS_SANDBOX:-bwrap}"),
        ("medium", "removed", "os-sandbox=bwrap"),
    }


# -- the locked profile: security pairs ----------------------------------------------------------


def test_the_locked_script_reads_no_file_it_is_given(demo_pair: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = demo_pair
    assert review_files(old, new).returncode == 0  # without the sandbox, the files are read
    confined = run_script([PYTHON_SB, str(REVIEW), str(old), str(new)], HOME=str(tmp_path))
    assert confined.returncode == 2
    assert f"cannot read {old}: Access to '{old}' must be accepted by a rule." in confined.stderr


def test_the_locked_profile_refuses_learning(tmp_path: Path) -> None:
    assert review_sandboxed("", home=tmp_path).returncode == 0
    result = run_script([PYTHON_SB, "--learn", str(REVIEW)], HOME=str(tmp_path))
    assert result.returncode != 0
    assert "learning mode is forbidden by 'learn=false'" in result.stderr


def test_a_local_rule_file_in_the_working_directory_changes_nothing(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".local.py-sandboxes").write_text("expose-ro=/\npython-import=*\n")
    (work / ".py-sandboxes").write_text("expose-ro=/\npython-import=*\n")
    target = work / "rules"
    target.write_text("learn=false\n")
    result = run_script([PYTHON_SB, str(REVIEW), str(target), str(target)], cwd=work, HOME=str(tmp_path))
    assert result.returncode == 2
    assert "must be accepted by a rule" in result.stderr


def test_the_skill_profile_passes_pysandboxes_check_and_is_locked(tmp_path: Path) -> None:
    profile = REVIEW.parent / ".py-sandboxes"
    result = run_script([str(BIN / "pysandboxes"), "check", str(profile)], HOME=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "error" not in result.stdout
    policy = load_policy(profile, environ={"HOME": str(tmp_path)}, cwd=str(tmp_path))
    assert policy.locked_by is not None
    assert {(r.key, r.value) for r in policy.rules if r.origin.is_file} >= {
        ("learn", "false"),
        ("os-sandbox", "landlock"),
        ("python-import", "json, re"),
    }


# -- in step with the core --------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "demo/quick/.py-sandboxes",
        "demo/partial/.py-sandboxes",
        "bench/compat/landlock.py-sandboxes",
        "bench/compat/subprocess.py-sandboxes",
        "coding-agents/skills/pysandboxes-review-rules/scripts/.py-sandboxes",
        "packages/pysandboxes/src/pysandboxes/rules/py-sandboxes.template",
    ],
)
def test_the_script_reads_the_rules_the_core_loads(review: ModuleType, path: str, tmp_path: Path) -> None:
    file = ROOT / path
    policy = load_policy(
        file, environ={"HOME": str(tmp_path), "OS_SANDBOX": "landlock"}, cwd=str(file.parent)
    )
    core: list[tuple[str, str]] = []
    for rule in policy.rules:
        if not rule.origin.is_file:
            continue
        if rule.key == "python-import":
            core += [(rule.key, name.strip()) for name in rule.value.split(",") if name.strip()]
        else:
            core.append((rule.key, rule.value))
    includes = [("include", inc.written) for inc in policy.includes if inc.origin.is_file]
    ours = [r.identity for r in review.read_text(file.read_text(), path)]
    assert sorted(ours) == sorted(core + includes)


def test_every_api_category_of_the_core_has_a_grade(review: ModuleType) -> None:
    assert set(CATEGORIES) == (set(review.HIGH_API) - {"*"}) | set(review.MEDIUM_API)
    assert RISKY_CATEGORIES - {"privileges"} <= set(review.HIGH_API)


@pytest.mark.parametrize("module", ["ctypes", "subprocess", "importlib", "pickle", "marshal", "inspect"])
def test_dangerous_modules_are_high(review: ModuleType, module: str) -> None:
    finding = review.grade_added(review.Rule("python-import", module, ".py-sandboxes", 1))
    assert finding.grade == "high"
    assert review.grade_added(review.Rule("python-import", "csv", ".py-sandboxes", 1)).grade == "low"


@pytest.mark.parametrize(
    ("rule", "grade"),
    [
        ("python-import=*", "high"),
        ("python-api=ALLOW:*", "high"),
        ("python-api=ALLOW:native", "high"),
        ("python-api=ALLOW:deserialization", "high"),
        ("python-api=ALLOW:os.system", "high"),
        ("python-api=ALLOW:threads", "medium"),
        ("python-api=DENY:process-exec", "low"),
        ("net=ALLOW|tcp|0.0.0.0/0|443|OUT", "high"),
        ("net=ALLOW|tcp|api.example.com|*|OUT", "high"),
        ("net=ALLOW|tcp|api.example.com|443|OUT", "medium"),
        ("net=DENY|*|10.0.0.0/8|*|OUT", "low"),
        ("expose-rw=/", "high"),
        ("expose-rw=~", "high"),
        ("expose-rw=/srv/shared", "high"),
        ("expose-rw=../../outside", "high"),
        ("expose-rw=${TMPDIR:-/tmp}", "medium"),
        ("expose-rw=./output", "medium"),
        ("expose-ro=/", "high"),
        ("expose-ro=/usr/share/dict", "medium"),
        ("expose-ro=./data", "low"),
        ("env=*=${*}", "high"),
        ("env=AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}", "medium"),
        ("env=LANG=C.UTF-8", "low"),
        ("learn=true", "high"),
        ("learn=./learned.py-sandboxes", "high"),
        ("learn=false", "low"),
        ("py-sandbox=false", "high"),
        ("os-sandbox=none", "high"),
        ("os-sandbox=subprocess", "high"),
        ("os-sandbox=${OS_SANDBOX:-landlock}", "high"),
        ("os-sandbox=bwrap", "medium"),
        ("remote-result-mode=objects", "high"),
        ("remote-result-guard=false", "high"),
        ("eval-namespace=caller", "high"),
        ('include "./.local.py-sandboxes"', "high"),
        ('include-optional "../shared.py-sandboxes"', "high"),
        ('include "common"', "medium"),
        ("limit-memory=512M", "low"),
    ],
)
def test_grade_of_an_added_rule(review: ModuleType, rule: str, grade: str) -> None:
    (parsed,) = review.read_line(rule, "app/.py-sandboxes", 1)
    assert review.grade_added(parsed).grade == grade


@pytest.mark.parametrize(
    ("rule", "grade"),
    [
        ("learn=false", "high"),
        ('include "/etc/py-sandboxes/global-py-sandboxes.profile"', "high"),
        ("net=DENY|*|10.0.0.0/8|*|OUT", "medium"),
        ("unenv=AWS_*", "medium"),
        ("ignore=.env", "medium"),
        ("python-import=socket", "low"),
    ],
)
def test_grade_of_a_removed_rule(review: ModuleType, rule: str, grade: str) -> None:
    (parsed,) = review.read_line(rule, ".py-sandboxes", 1)
    assert review.grade_removed(parsed).grade == grade


# -- one grading table: the core's ---------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "python-import=ctypes",
        "python-api=ALLOW:threads",
        "net=ALLOW|tcp|api.example.com|443|OUT",
        "expose-rw=.",
        "expose-ro=~/.ssh",
        "env=GITHUB_TOKEN=${GITHUB_TOKEN}",
        "os-sandbox=firejail",
        "bwrap.share-net=true",
        'include "./.local.py-sandboxes"',
        "learn=false",
    ],
)
def test_the_script_grades_with_the_core_table(review: ModuleType, line: str) -> None:
    from pysandboxes.rules import grading

    (rule,) = review.read_line(line, ".py-sandboxes", 1)
    core_added = grading.grade_added(rule.key, rule.value, ".py-sandboxes")
    core_removed = grading.grade_removed(rule.key, rule.value)
    ours_added, ours_removed = review.grade_added(rule), review.grade_removed(rule)
    assert (ours_added.grade, ours_added.why) == (core_added.grade, core_added.why)
    assert (ours_removed.grade, ours_removed.why) == (core_removed.grade, core_removed.why)


def test_the_script_holds_no_grading_of_its_own() -> None:
    source = REVIEW.read_text()
    assert "from pysandboxes.rules import grading" in source
    assert "frozenset(" not in source  # the module lists and categories live in the core
