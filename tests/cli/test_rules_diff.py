"""``pysandboxes diff BASE..HEAD [PATHS]`` and ``pysandboxes diff OLD NEW``: the rights a change of
rule files adds and removes, graded by the one risk table (``pysandboxes.rules.grading``).

Real git repositories in temporary directories; the command run as CI runs it (a subprocess)
for the exit statuses and the output formats, in-process through its entry point for the
grading table (one call per rule kind)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pysandboxes.cli.tool import main

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


class Repo:
    """A git repository in a temporary directory, committed file by file."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root, self.home = root, home
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **GIT_ENV}
        root.mkdir()
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.root), *args], capture_output=True, text=True, env=self.env, check=True
        )
        return done.stdout

    def write(self, files: dict[str, str | bytes | None]) -> None:
        for name, text in files.items():
            path = self.root / name
            if text is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, bytes):
                path.write_bytes(text)
            else:
                path.write_text(text)

    def commit(self, message: str, files: dict[str, str | bytes | None]) -> None:
        self.write(files)
        self.git("add", "-A")
        self.git("commit", "-qm", message, "--allow-empty")

    def diff(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        """``pysandboxes diff ARGS`` in a subprocess, from the repository (or ``cwd``)."""
        return subprocess.run(
            [sys.executable, "-m", "pysandboxes", "diff", *args],
            cwd=cwd or self.root,
            env={**self.env, "LANG": "C.UTF-8"},
            capture_output=True,
            text=True,
            timeout=60,
        )

    def changes(self, *args: str) -> set[tuple[str, str, str]]:
        done = self.diff(*args, "--json")
        assert done.returncode == 0, done.stderr
        return {(c["grade"], c["change"], c["rule"]) for c in json.loads(done.stdout)["changes"]}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    home = tmp_path / "home"
    home.mkdir()
    return Repo(tmp_path / "repo", home)


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
os-sandbox=none
# the same imports, re-ordered, plus one
python-import=json, csv, socket
net=ALLOW|tcp|api.example.com|443|OUT
expose-rw=${REPORT_OUT:-/var/reports}
expose-rw=./data

# Learned by tests/test_export.py::test_upload
net=ALLOW|tcp|*|*|OUT
"""
# env=LANG moved from the application file into the included file: no change
HEAD_COMMON = "python-import=os\nenv=TZ=${TZ:-UTC}\nenv=LANG=${LANG:-C.UTF-8}\nlimit-memory=1G\n"


@pytest.fixture
def branch(repo: Repo) -> Repo:
    repo.commit(
        "base",
        {
            ".py-sandboxes": BASE_APP,
            "common.py-sandboxes": BASE_COMMON,
            "tools/.py-sandboxes": "learn=false\npython-import=json\n",
            "README": "x\n",
        },
    )
    repo.git("checkout", "-qb", "feature")
    repo.commit(
        "feature",
        {
            ".py-sandboxes": HEAD_APP,
            "common.py-sandboxes": HEAD_COMMON,
            "tools/.py-sandboxes": "learn=false\npython-import=json\npython-api=ALLOW:process-exec\n",
            ".py-sandboxes.learn": "python-import=ctypes\n",  # a candidate: never an active profile
            "README": "changed\n",
        },
    )
    return repo


EXPECTED_BRANCH = {
    ("high", "widened", 'include "~/.config/py-sandboxes/user-py-sandboxes.profile"'),
    ("high", "widened", "os-sandbox=none"),
    ("high", "widened", "learn=false"),
    ("high", "added", "expose-rw=${REPORT_OUT:-/var/reports}"),
    ("high", "added", "net=ALLOW|tcp|*|*|OUT"),
    ("high", "added", "python-api=ALLOW:process-exec"),
    ("medium", "widened", "expose-rw=./data"),
    ("low", "added", "python-import=socket"),
    ("low", "removed", "expose-rw=${REPORT_OUT:-./output}"),
    ("low", "narrowed", "limit-memory=1G"),
}


# -- a branch of a real repository -------------------------------------------------------------


def test_a_branch_is_graded_right_by_right(branch: Repo) -> None:
    assert branch.changes("main..feature") == EXPECTED_BRANCH


def test_each_change_names_its_file_line_side_and_policy(branch: Repo) -> None:
    done = branch.diff("main..feature", "--json")
    body = json.loads(done.stdout)
    by_rule = {c["rule"]: c for c in body["changes"]}
    assert body["range"].startswith("main..feature (")
    assert body["summary"] == "10 changes (8 widening, 2 narrowing): 6 high, 1 medium, 3 low"
    net = by_rule["net=ALLOW|tcp|*|*|OUT"]
    assert (net["file"], net["line"], net["side"], net["policies"]) == (
        ".py-sandboxes",
        10,
        "new",
        [".py-sandboxes"],
    )
    assert net["learned_by"] == "tests/test_export.py::test_upload"
    assert net["widens"] is True
    lock = by_rule["learn=false"]
    assert (lock["file"], lock["line"], lock["side"]) == (".py-sandboxes", 3, "old")  # where it was
    limit = by_rule["limit-memory=1G"]
    assert (limit["file"], limit["line"], limit["widens"]) == ("common.py-sandboxes", 4, False)
    provider = by_rule["os-sandbox=none"]
    assert provider["old"] == "os-sandbox=bwrap"
    assert by_rule["python-api=ALLOW:process-exec"]["file"] == "tools/.py-sandboxes"


def test_the_table_lists_the_riskiest_first(branch: Repo) -> None:
    done = branch.diff("main..feature")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("main..feature (")
    assert lines[1].split() == ["grade", "change", "rule", "where", "why"]
    grades = [line.split()[0] for line in lines[3:] if line.split()[:1] in (["high"], ["medium"], ["low"])]
    assert grades == sorted(grades, key=["high", "medium", "low"].index)
    assert len(grades) == 10
    assert any("os-sandbox=bwrap -> os-sandbox=none" in line for line in lines)
    assert any(".py-sandboxes:3 (before)" in line and "learn=false" in line for line in lines)
    assert lines[-1] == "10 changes (8 widening, 2 narrowing): 6 high, 1 medium, 3 low"


def test_markdown_is_a_pull_request_comment(branch: Repo) -> None:
    out = branch.diff("--markdown", "main...feature").stdout
    assert out.startswith("## Sandbox rule changes\n")
    assert "| high | added | `net=ALLOW\\|tcp\\|*\\|*\\|OUT` | `.py-sandboxes:10` |" in out
    assert "High-risk changes, each to be justified by the code that needs it:" in out
    assert "- `net=ALLOW|tcp|*|*|OUT` (added, .py-sandboxes:10): opens the network to any host." in out


def test_no_change_says_so(branch: Repo) -> None:
    done = branch.diff("feature..feature", "--markdown")
    assert (done.returncode, done.stdout.endswith(": no right added or removed.\n")) == (0, True)
    assert branch.diff("feature..feature").stdout.endswith("no right added or removed\n")


@pytest.mark.parametrize(("fail_on", "code"), [("high", 1), ("medium", 1), ("low", 1)])
def test_fail_on_exits_one_when_a_widening_change_reaches_the_grade(
    branch: Repo, fail_on: str, code: int
) -> None:
    done = branch.diff(f"--fail-on={fail_on}", "main..feature")
    assert done.returncode == code
    assert "## Sandbox" not in done.stdout and "high" in done.stdout  # the table is still printed


def test_fail_on_high_passes_a_medium_change_and_medium_fails_it(repo: Repo) -> None:
    repo.commit("base", {".py-sandboxes": "learn=false\npython-import=json\n"})
    repo.commit(
        "api",
        {".py-sandboxes": "learn=false\npython-import=json, csv\nnet=ALLOW|tcp|api.example.com|443|OUT\n"},
    )
    assert repo.diff("--fail-on=high", "HEAD~1..HEAD").returncode == 0
    assert repo.diff("--fail-on=medium", "HEAD~1..HEAD").returncode == 1
    assert repo.diff("HEAD~1..HEAD").returncode == 0  # without --fail-on: a report only


def test_fail_on_ignores_a_narrowing_change(repo: Repo) -> None:
    repo.commit("base", {".py-sandboxes": "python-import=json, subprocess\nnet=ALLOW|tcp|*|*|OUT\n"})
    repo.commit(
        "tighten", {".py-sandboxes": "python-import=json\nnet=DENY|*|10.0.0.0/8|*|OUT\nlearn=false\n"}
    )
    assert repo.changes("HEAD~1..HEAD") == {
        ("low", "removed", "python-import=subprocess"),
        ("low", "removed", "net=ALLOW|tcp|*|*|OUT"),
        ("low", "narrowed", "net=DENY|*|10.0.0.0/8|*|OUT"),
        ("low", "narrowed", "learn=false"),
    }
    assert repo.diff("--fail-on=low", "HEAD~1..HEAD").returncode == 0


# -- effective policy, not text ------------------------------------------------------------------


def test_moving_reordering_and_rewrapping_rules_is_no_change(branch: Repo) -> None:
    branch.git("checkout", "-q", "main")
    branch.git("checkout", "-qb", "tidy")
    lines = BASE_APP.splitlines()
    lines.remove("env=LANG=${LANG:-C.UTF-8}")
    lines.remove("python-import=csv, json")
    text = "\n".join(reversed(lines)) + "\npython-import=json\npython-import = csv\n"
    text = text.replace(
        "net=ALLOW|tcp|api.example.com|443|OUT", "net = allow | TCP | api.example.com | 443 | out"
    )
    branch.commit(
        "tidy", {".py-sandboxes": text, "common.py-sandboxes": BASE_COMMON + "env=LANG=${LANG:-C.UTF-8}\n"}
    )
    assert branch.git("diff", "main..tidy", "--stat")  # the text changed
    done = branch.diff("main..tidy", "--fail-on=low")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.endswith("no right added or removed\n")


def test_a_changed_variable_default_is_a_change(branch: Repo) -> None:
    branch.git("checkout", "-q", "main")
    branch.git("checkout", "-qb", "default")
    text = BASE_APP.replace("expose-rw=${REPORT_OUT:-./output}", "expose-rw=${REPORT_OUT:-/srv/reports}")
    text = text.replace("os-sandbox=bwrap", "os-sandbox=${OS_SANDBOX:-bwrap}")
    branch.commit("default", {".py-sandboxes": text})
    assert branch.changes("main..default") == {
        ("high", "added", "expose-rw=${REPORT_OUT:-/srv/reports}"),
        ("low", "removed", "expose-rw=${REPORT_OUT:-./output}"),
        ("high", "widened", "os-sandbox=${OS_SANDBOX:-bwrap}"),
    }


def test_a_rule_added_in_an_included_file_counts_for_the_file_that_includes_it(repo: Repo) -> None:
    repo.commit(
        "base",
        {
            "app/.py-sandboxes": 'learn=false\ninclude "shared.profile"\n',
            "app/shared.profile": "python-import=json\n",
            "other/.py-sandboxes": 'learn=false\ninclude "../app/shared.profile"\n',
        },
    )
    repo.commit("widen", {"app/shared.profile": "python-import=json\nexpose-rw=/srv\n"})
    done = repo.diff("HEAD~1..HEAD", "--json")
    (change,) = json.loads(done.stdout)["changes"]
    assert (change["rule"], change["grade"], change["file"], change["line"]) == (
        "expose-rw=/srv",
        "high",
        "app/shared.profile",
        2,
    )
    # the profile is not a *.py-sandboxes* file: it is read because rule files include it, and
    # the change is shown once for both ("../app/shared.profile" has a '/': it is taken from
    # where the program starts, the directory of the rule file for the diff)
    assert change["policies"] == ["app/.py-sandboxes", "other/.py-sandboxes"]


def test_an_included_rule_file_is_not_graded_twice(repo: Repo) -> None:
    repo.commit(
        "base", {".py-sandboxes": 'include "common.py-sandboxes"\n', "common.py-sandboxes": "learn=false\n"}
    )
    repo.commit("widen", {"common.py-sandboxes": "learn=false\npython-import=pickle\n"})
    done = repo.diff("HEAD~1..HEAD", "--json")
    (change,) = json.loads(done.stdout)["changes"]
    assert (change["grade"], change["rule"], change["policies"]) == (
        "high",
        "python-import=pickle",
        [".py-sandboxes"],
    )


def test_a_local_include_added_is_high_and_its_file_is_read_in_the_repository(repo: Repo) -> None:
    repo.commit("base", {".py-sandboxes": "learn=false\n"})
    repo.commit(
        "local",
        {
            ".py-sandboxes": 'learn=false\ninclude "./.local.py-sandboxes"\n',
            ".local.py-sandboxes": "python-import=ctypes\n",
        },
    )
    assert repo.changes("HEAD~1..HEAD") == {
        ("high", "added", 'include "./.local.py-sandboxes"'),
        ("high", "added", "python-import=ctypes"),
    }


def test_includes_outside_the_repository_are_compared_as_lines_never_read(repo: Repo) -> None:
    profile = repo.home / ".config/py-sandboxes/user-py-sandboxes.profile"
    profile.parent.mkdir(parents=True)
    profile.write_text("python-import=ctypes\nnot a rule\n")  # would be an error, and high, if read
    outside = repo.root.parent / "company.profile"
    repo.commit("base", {".py-sandboxes": "learn=false\n"})
    repo.commit(
        "profiles",
        {
            ".py-sandboxes": f'learn=false\ninclude "~/.config/py-sandboxes/user-py-sandboxes.profile"\ninclude "{outside}"\n'
        },
    )
    assert repo.changes("HEAD~1..HEAD") == {
        ("low", "narrowed", 'include "~/.config/py-sandboxes/user-py-sandboxes.profile"'),
        ("medium", "added", f'include "{outside}"'),
    }


def test_a_learned_candidate_file_is_never_an_active_profile(repo: Repo) -> None:
    repo.commit("base", {".py-sandboxes": "learn=false\n"})
    repo.commit(
        "learned",
        {".py-sandboxes.learn": "python-import=ctypes\n", "x.py-sandboxes.old": "python-import=*\n"},
    )
    assert repo.changes("HEAD~1..HEAD") == set()


def test_three_dots_compare_from_the_merge_base(repo: Repo) -> None:
    repo.commit("base", {".py-sandboxes": "learn=false\n"})
    repo.git("checkout", "-qb", "feature")
    repo.commit("feature", {"app.py-sandboxes": "python-import=json\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main moves on", {"main.py-sandboxes": "python-import=socket\n"})
    assert repo.changes("main...feature") == {("low", "added", "python-import=json")}
    assert repo.changes("main..feature") == {
        ("low", "added", "python-import=json"),
        ("low", "removed", "python-import=socket"),
    }


def test_paths_restrict_the_comparison(branch: Repo) -> None:
    assert branch.changes("main..feature", "tools") == {("high", "added", "python-api=ALLOW:process-exec")}
    only_app = branch.changes("main..feature", ".py-sandboxes")
    assert ("high", "added", "python-api=ALLOW:process-exec") not in only_app
    assert ("low", "narrowed", "limit-memory=1G") in only_app  # its include is followed
    # from a subdirectory, paths are taken relative to it
    assert branch.diff("main..feature", ".py-sandboxes", "--json", cwd=branch.root / "tools").returncode == 0


def test_a_path_named_explicitly_is_read_whatever_its_name(repo: Repo) -> None:
    repo.commit("base", {"ci.rules": "learn=false\n"})
    repo.commit("widen", {"ci.rules": "learn=false\nexpose-ro=.\n"})
    assert repo.changes("HEAD~1..HEAD") == set()  # not a *.py-sandboxes* file
    assert repo.changes("HEAD~1..HEAD", "ci.rules") == {
        ("medium", "added", "expose-ro=."),  # the whole repository: its .env and .git
    }


def test_a_file_added_or_deleted_adds_or_removes_all_its_rights(repo: Repo) -> None:
    repo.commit("base", {"old.py-sandboxes": "python-import=json\n"})
    repo.commit("swap", {"old.py-sandboxes": None, "new.py-sandboxes": "python-import=marshal\n"})
    assert repo.changes("HEAD~1..HEAD") == {
        ("low", "removed", "python-import=json"),
        ("high", "added", "python-import=marshal"),
    }


# -- two rule files --------------------------------------------------------------------------------


def test_two_rule_files_are_compared_like_two_revisions(tmp_path: Path, repo: Repo) -> None:
    old, new = tmp_path / "old.py-sandboxes", tmp_path / "new.py-sandboxes"
    old.write_text("learn=false\npython-import=json\n")
    new.write_text("python-import=json, subprocess\n")
    done = repo.diff(str(old), str(new), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    changes = json.loads(done.stdout)["changes"]
    assert {(c["grade"], c["change"], c["rule"], c["file"], c["line"]) for c in changes} == {
        ("high", "widened", "learn=false", "old.py-sandboxes", 1),
        ("high", "added", "python-import=subprocess", "new.py-sandboxes", 1),
    }
    assert repo.diff(str(old), str(new), "--fail-on=high", cwd=tmp_path).returncode == 1


def test_a_learned_candidate_file_keeps_its_meaning(tmp_path: Path, repo: Repo) -> None:
    (tmp_path / ".py-sandboxes").write_text("python-import=json\n")
    (tmp_path / "hand.learn").write_text("python-import=csv, json\n")
    done = repo.diff("hand.learn", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "hand.learn(1): python-import=csv\n")
    two = repo.diff("hand.learn", ".py-sandboxes", cwd=tmp_path)
    assert (two.returncode, two.stdout) == (1, "hand.learn(1): python-import=csv\n")
    refused = repo.diff("hand.learn", "--json", cwd=tmp_path)
    assert refused.returncode == 2
    assert "grade a change of rule files" in refused.stderr


# -- widened and narrowed -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("expose-ro=./data", "expose-rw=./data", ("medium", "widened", "expose-rw=./data")),
        ("expose-rw=./data", "expose-ro=./data", ("low", "narrowed", "expose-ro=./data")),
        ("net=DENY|*|10.0.0.0/8|*|OUT", "", ("medium", "widened", "net=DENY|*|10.0.0.0/8|*|OUT")),
        ("python-api=DENY:threads", "", ("medium", "widened", "python-api=DENY:threads")),
        ("unenv=AWS_*", "", ("medium", "widened", "unenv=AWS_*")),
        ("", "ignore=.env", ("low", "narrowed", "ignore=.env")),
        ("os-sandbox=bwrap", "os-sandbox=subprocess", ("high", "widened", "os-sandbox=subprocess")),
        ("os-sandbox=none", "os-sandbox=bwrap", ("low", "narrowed", "os-sandbox=bwrap")),
        ("os-sandbox=bwrap", "os-sandbox=landlock", ("medium", "widened", "os-sandbox=landlock")),
        ("py-sandbox=true", "py-sandbox=false", ("high", "widened", "py-sandbox=false")),
        ("py-sandbox=false", "py-sandbox=true", ("low", "narrowed", "py-sandbox=true")),
        ("py-sandbox=false", "", ("low", "removed", "py-sandbox=false")),
        ("limit-memory=512M", "limit-memory=2G", ("low", "widened", "limit-memory=2G")),
        ("limit-memory=2G", "limit-memory=512M", ("low", "narrowed", "limit-memory=512M")),
        ("timeout=10", "timeout=1m", ("low", "widened", "timeout=1m")),
        ("limit-cpu=10s", "", ("low", "widened", "limit-cpu=10s")),
        (
            "remote-result-mode=data-only",
            "remote-result-mode=objects",
            ("high", "widened", "remote-result-mode=objects"),
        ),
        ("learn=false", "learn=.py-sandboxes.learn", ("high", "widened", "learn=.py-sandboxes.learn")),
        ("eval-namespace=closed", "eval-namespace=caller", ("high", "widened", "eval-namespace=caller")),
    ],
)
def test_widened_and_narrowed(repo: Repo, old: str, new: str, expected: tuple[str, str, str]) -> None:
    repo.commit("base", {".py-sandboxes": old + "\n"})
    repo.commit("change", {".py-sandboxes": new + "\n"})
    assert repo.changes("HEAD~1..HEAD") == {expected}


# -- the grade of every rule kind (the one table) ------------------------------------------------

GRADED = [
    ("python-import=*", "high"),
    ("python-import=ctypes", "high"),
    ("python-import=subprocess", "high"),
    ("python-import=importlib", "high"),
    ("python-import=pickle", "high"),
    ("python-import=csv", "low"),
    ("python-api=ALLOW:*", "high"),
    ("python-api=ALLOW:process-exec", "high"),
    ("python-api=ALLOW:native", "high"),
    ("python-api=ALLOW:dynamic-code", "high"),
    ("python-api=ALLOW:deserialization", "high"),
    ("python-api=ALLOW:introspection", "high"),
    ("python-api=ALLOW:os.system", "high"),
    ("python-api=ALLOW:threads", "medium"),
    ("python-api=ALLOW:process-control", "medium"),
    ("python-api=ALLOW:privileges", "medium"),
    ("python-api=DENY:process-exec", "low"),
    ("net=ALLOW|tcp|*|443|OUT", "high"),
    ("net=ALLOW|tcp|0.0.0.0/0|443|OUT", "high"),
    ("net=ALLOW|tcp|api.example.com|*|OUT", "high"),
    ("net=ALLOW|tcp|api.example.com|443|OUT", "medium"),
    ("net=ALLOW|tcp|127.0.0.1|8000|IN", "medium"),
    ("net=DENY|*|10.0.0.0/8|*|OUT", "low"),
    ("expose-rw=/", "high"),
    ("expose-rw=~", "high"),
    ("expose-rw=~/.ssh", "high"),
    ("expose-rw=/srv/shared", "high"),
    ("expose-rw=../outside", "high"),
    ("expose-rw=.", "high"),
    ("expose-rw=./.git/hooks", "high"),
    ("expose-rw=${TMPDIR:-/tmp}", "medium"),
    ("expose-rw=./output", "medium"),
    ("expose-rw=${OUT}", "medium"),
    ("expose-ro=/", "high"),
    ("expose-ro=~", "high"),
    ("expose-ro=~/.aws", "high"),
    ("expose-ro=/usr/share/dict", "medium"),
    ("expose-ro=./data", "low"),
    ("expose-ro=..", "medium"),
    ("env=*=${*}", "high"),
    ("env=AWS_*=${AWS_*}", "high"),
    ("env=GITHUB_TOKEN=${GITHUB_TOKEN}", "medium"),
    ("env=LANG=C.UTF-8", "low"),
    ("unenv=AWS_SECRET_ACCESS_KEY", "low"),
    ("ignore=.env", "low"),
    ("learn=./learned.py-sandboxes", "high"),
    ("learn=false", "low"),
    ("py-sandbox=false", "high"),
    ("py-sandbox=true", "low"),
    ("os-sandbox=none", "high"),
    ("os-sandbox=subprocess", "high"),
    ("os-sandbox=${OS_SANDBOX:-landlock}", "high"),
    ("os-sandbox=bwrap", "medium"),
    ("remote-result-mode=objects", "high"),
    ("remote-result-mode=data-only", "low"),
    ("remote-result-guard=false", "high"),
    ("remote-result-guard=true", "low"),
    ("eval-namespace=caller", "high"),
    ("eval-namespace=closed", "low"),
    ("eval-call=print", "medium"),
    ("eval-timeout=2", "low"),
    ('include "./.local.py-sandboxes"', "high"),
    ('include-optional "../shared.py-sandboxes"', "high"),
    ('include "common"', "medium"),
    ("limit-memory=512M", "low"),
    ("limit-processes=8", "low"),
    ("timeout=30", "low"),
    ("remote-max-payload=10MB", "low"),
    ("bwrap.unshare-net=false", "high"),
    ("bwrap.share-net=true", "high"),
    ("bwrap.hostname=box", "medium"),
    ("port=8000", "low"),
]


def _added_grade(tmp_path: Path, capsys: pytest.CaptureFixture[str], rule: str) -> set[tuple[str, str]]:
    (tmp_path / "old.py-sandboxes").write_text("")
    (tmp_path / "app").mkdir(exist_ok=True)
    (tmp_path / "app/new.py-sandboxes").write_text(rule + "\n")
    (tmp_path / "app/common").write_text("")  # what include "common" reads
    code = main(["diff", "old.py-sandboxes", "app/new.py-sandboxes", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {(c["grade"], c["rule"]) for c in json.loads(out)["changes"]}


@pytest.mark.parametrize(("rule", "grade"), GRADED)
def test_the_grade_of_each_rule_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, rule: str, grade: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _added_grade(tmp_path, capsys, rule) == {(grade, rule)}


def test_every_key_of_the_rule_language_is_in_the_grading_test() -> None:
    from pysandboxes.rules.loader import KNOWN_KEYS

    graded_keys = {rule.split("=", 1)[0].split(" ", 1)[0] for rule, _ in GRADED}
    missing = {k for k in KNOWN_KEYS if k not in graded_keys and not k.startswith(("eval-", "limit-"))}
    assert missing == set()


@pytest.mark.parametrize(
    ("rule", "grade"),
    [
        ("learn=false", "high"),
        ('include "~/.config/py-sandboxes/user-py-sandboxes.profile"', "high"),
        ('include "/etc/py-sandboxes/global-py-sandboxes.profile"', "high"),
        ("net=DENY|*|10.0.0.0/8|*|OUT", "medium"),
        ("python-import=socket", "low"),
        ("expose-rw=/", "low"),
    ],
)
def test_the_grade_of_a_removed_rule(repo: Repo, rule: str, grade: str) -> None:
    repo.commit("base", {".py-sandboxes": rule + "\n"})
    repo.commit("drop", {".py-sandboxes": "\n"})
    ((got, _change, _rule),) = repo.changes("HEAD~1..HEAD")
    assert got == grade


# -- errors: clear, exit 2, never a traceback --------------------------------------------------------


def test_a_malformed_file_is_a_clear_error(repo: Repo) -> None:
    repo.commit("base", {".py-sandboxes": "learn=false\n"})
    repo.commit("broken", {".py-sandboxes": "learn=false\nnet=ALLOW|tcp|x\nexpose-ro\npython-import=a.b\n"})
    done = repo.diff("HEAD~1..HEAD", "--markdown")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0].startswith("HEAD:.py-sandboxes(2): 'net=ALLOW|tcp|x' has 3 field(s), expected 5")
    assert lines[-1] == "pysandboxes diff: 3 errors in the rule files; nothing was compared"


def test_a_missing_include_inside_the_repository_is_an_error(repo: Repo) -> None:
    repo.commit("base", {".py-sandboxes": "learn=false\n"})
    repo.commit("broken", {".py-sandboxes": 'learn=false\ninclude "common.profile"\n'})
    done = repo.diff("HEAD~1..HEAD")
    assert done.returncode == 2
    assert done.stderr.startswith("HEAD:.py-sandboxes(2): include 'common.profile' does not exist")


def test_a_file_that_is_not_utf8_is_a_clear_error(repo: Repo) -> None:
    repo.commit("base", {".py-sandboxes": "learn=false\n"})
    repo.commit("binary", {".py-sandboxes": b"learn=false\npython-import=\xff\n"})
    done = repo.diff("HEAD~1..HEAD")
    assert done.returncode == 2
    assert "HEAD:.py-sandboxes(2): not UTF-8 text (byte 0xff); save the file as UTF-8" in done.stderr
    assert "Traceback" not in done.stderr


def test_unset_variables_and_absent_paths_are_not_errors(repo: Repo) -> None:
    """The diff reads no environment and no checkout: what the text says is compared."""
    repo.commit("base", {".py-sandboxes": "learn=false\n"})
    repo.commit(
        "vars", {".py-sandboxes": "learn=false\nexpose-rw=${OUT_DIR}/reports\nexpose-ro=./not-there\n"}
    )
    assert repo.changes("HEAD~1..HEAD") == {
        ("medium", "added", "expose-rw=${OUT_DIR}/reports"),
        ("low", "added", "expose-ro=./not-there"),
    }


def test_an_include_cycle_is_an_error(repo: Repo) -> None:
    repo.commit(
        "cycle",
        {"a.py-sandboxes": 'include "b.py-sandboxes"\n', "b.py-sandboxes": 'include "a.py-sandboxes"\n'},
    )
    done = repo.diff("HEAD..HEAD")
    assert done.returncode == 2
    assert "makes a cycle" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope..HEAD"], "pysandboxes diff: 'nope' is not a commit of this repository"),
        (["HEAD..nope"], "pysandboxes diff: 'nope' is not a commit of this repository"),
        (["HEAD..HEAD", "/elsewhere"], "pysandboxes diff: /elsewhere is outside the repository"),
        (["HEAD..HEAD", "README"], "pysandboxes diff: no rule file under README in HEAD or in HEAD"),
        (
            ["a.py-sandboxes", "b.py-sandboxes", "c"],
            "pysandboxes diff: give BASE..HEAD [PATHS], or two rule files",
        ),
        (
            ["missing.py-sandboxes", "other.py-sandboxes"],
            "pysandboxes diff: cannot read missing.py-sandboxes",
        ),
    ],
)
def test_usage_errors_exit_two(repo: Repo, args: list[str], message: str) -> None:
    repo.commit("base", {"a.py-sandboxes": "learn=false\n", "b.py-sandboxes": "learn=false\n"})
    done = repo.diff(*args)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert "Traceback" not in done.stderr


def test_revisions_outside_a_repository_are_a_clear_error(tmp_path: Path, repo: Repo) -> None:
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    done = repo.diff("main..HEAD", cwd=elsewhere)
    assert done.returncode == 2
    assert (
        "main..HEAD names git revisions, and" in done.stderr and "is not in a git repository" in done.stderr
    )
    bad = repo.diff("--fail-on=critical", "main..HEAD")
    assert bad.returncode == 2 and "invalid choice: 'critical'" in bad.stderr


# -- the table in words ------------------------------------------------------------------------


def test_docs_show_the_grading_table_as_the_code_holds_it() -> None:
    from pysandboxes.rules import grading

    docs = (Path(__file__).resolve().parents[2] / "docs/rules.md").read_text()
    assert grading.table_markdown() in docs
    modules = grading.GRADING_TABLE[0][2].split("(", 1)[1].rstrip(")").split(", ")
    assert set(modules) - {"..."} <= grading.DANGEROUS_MODULES


def _slug(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading (GitHub's rule)."""
    text = heading.strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@pytest.mark.parametrize("page", ["docs/use-cases.md", "docs/faq.md"])
def test_the_use_cases_and_faq_link_only_what_exists(page: str) -> None:
    root = Path(__file__).resolve().parents[2]
    assert f"]({page})" in (root / "README.md").read_text()
    source = root / page
    for target in re.findall(r"\]\(([^)\s]+)\)", source.read_text()):
        if target.startswith(("http://", "https://")):
            continue
        path, _, anchor = target.partition("#")
        file = (source.parent / path).resolve() if path else source
        assert file.exists(), f"{page}: {target}"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", file.read_text(), re.M)
            assert anchor in {_slug(h) for h in headings}, f"{page}: {target}"
