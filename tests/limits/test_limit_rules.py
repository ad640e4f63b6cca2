"""The resource-limit keys as rules: values, units, minimums, exact error messages, the
command-line and ``sandboxes(**rules)`` overrides, the ``learn=false`` lock, and what
``Limits`` makes of them (defaults, how a limit is shown and where to raise it)."""

from __future__ import annotations

import os

import pytest

from pysandboxes.limits import PARTIAL_DEFAULTS, from_policy
from pysandboxes.rules import CODE, COMMAND_LINE

from .conftest import PYTHON_SB, Project

K, M, G, T = 1 << 10, 1 << 20, 1 << 30, 1 << 40


def _value(rules, key: str, text: str) -> object:
    return from_policy(rules.load(f"{key}={text}\n"))[key]


# -- values and units ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("2", 2.0), ("1.5m", 90.0), ("1000ms", 1.0), ("1_500ms", 1.5), (" 45s ", 45.0)],
)
def test_limit_cpu_is_a_duration(rules, text: str, seconds: float) -> None:
    assert _value(rules, "limit-cpu", text) == seconds


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512M", 512 * M),
        ("512m", 512 * M),
        ("2G", 2 * G),
        ("1T", T),
        ("32M", 32 * M),
        ("33554432", 32 * M),
        ("65536K", 64 * M),
        ("1GiB", G),
        ("100MB", 100 * M),  # K, M, G, T are powers of 1024 whatever follows them
        ("1_024M", G),
    ],
)
def test_limit_memory_is_a_binary_size(rules, text: str, size: int) -> None:
    assert _value(rules, "limit-memory", text) == size


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("limit-processes", "64", 64),
        ("limit-processes", "1", 1),
        ("limit-processes", "1_000", 1000),
        ("limit-open-files", "16", 16),
        ("limit-open-files", "256", 256),
        ("limit-file-size", "1", 1),
        ("limit-file-size", "100M", 100 * M),
        ("limit-output", "10M", 10 * M),
        ("limit-output", "1k", K),
        ("timeout", "60s", 60.0),
        ("timeout", "500ms", 0.5),
        ("timeout", "2m", 120.0),
    ],
)
def test_limit_values(rules, key: str, text: str, value: float) -> None:
    assert _value(rules, key, text) == value


def test_policy_holds_each_limit_with_its_rule(rules) -> None:
    main = rules.write("os-sandbox=landlock\nlimit-memory=512M\nlimit-cpu=30s\ntimeout=1m\n")
    policy = rules.load()
    assert policy.limits["limit-memory"].value == 512 * M
    assert policy.limits["limit-memory"].rule.origin.path == str(main)
    assert policy.limits["limit-memory"].rule.origin.line == 2
    assert policy.limits["limit-cpu"].value == 30.0
    assert policy.limits["limit-processes"].value is None
    assert policy.timeout.value == 60.0


# -- errors ------------------------------------------------------------------------------------

SIZE_HINT = "write a number of bytes, or with K, M, G or T (powers of 1024), e.g. 512M or 2G"
DURATION_HINT = "write a number with ms, s or m, e.g. 2s or 500ms"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("limit-cpu=500ms", "limit-cpu must be at least 1s (the kernel counts whole CPU seconds)"),
        ("limit-cpu=0", "limit-cpu must be greater than zero, got '0'"),
        ("limit-cpu=fast", f"invalid duration 'fast' for limit-cpu: {DURATION_HINT}"),
        ("limit-cpu=10h", f"invalid duration '10h' for limit-cpu: {DURATION_HINT}"),
        ("limit-memory=31M", "limit-memory must be at least 32M, got '31M'"),
        ("limit-memory=5M", "limit-memory must be at least 32M, got '5M'"),
        ("limit-memory=0", "limit-memory must be greater than zero, got '0'"),
        ("limit-memory=2 parsecs", f"invalid size '2 parsecs' for limit-memory: {SIZE_HINT}"),
        ("limit-memory=1.5G", f"invalid size '1.5G' for limit-memory: {SIZE_HINT}"),
        ("limit-memory=-1G", f"invalid size '-1G' for limit-memory: {SIZE_HINT}"),
        ("limit-memory=", f"invalid size '' for limit-memory: {SIZE_HINT}"),
        ("limit-processes=0", "limit-processes must be at least 1, got 0"),
        ("limit-processes=lots", "invalid value 'lots' for limit-processes: expected a whole number"),
        ("limit-processes=-3", "invalid value '-3' for limit-processes: expected a whole number"),
        ("limit-open-files=15", "limit-open-files must be at least 16, got 15"),
        ("limit-open-files=1e3", "invalid value '1e3' for limit-open-files: expected a whole number"),
        ("limit-file-size=0", "limit-file-size must be greater than zero, got '0'"),
        ("limit-file-size=1P", f"invalid size '1P' for limit-file-size: {SIZE_HINT}"),
        ("limit-output=0K", "limit-output must be greater than zero, got '0K'"),
        ("limit-output=lots", f"invalid size 'lots' for limit-output: {SIZE_HINT}"),
        ("timeout=soon", f"invalid duration 'soon' for timeout: {DURATION_HINT}"),
        ("timeout=0s", "timeout must be greater than zero, got '0s'"),
    ],
)
def test_invalid_values_are_refused_with_the_exact_message(rules, line: str, message: str) -> None:
    main = rules.write(f"os-sandbox=landlock\n{line}\n")
    problem = rules.problem()
    assert (problem.message, rules.where(problem)) == (message, (str(main), 2))


def test_a_misspelt_limit_key_is_named(rules) -> None:
    problem = rules.problem("limit-mem=1G\n")
    assert problem.message == "unknown key 'limit-mem' in 'limit-mem=1G' (did you mean 'limit-memory'?)"


@pytest.mark.parametrize(
    ("key", "first", "second"),
    [
        ("limit-cpu", "1s", "2s"),
        ("limit-memory", "1G", "2G"),
        ("limit-processes", "10", "20"),
        ("limit-open-files", "64", "128"),
        ("limit-file-size", "1M", "2M"),
        ("limit-output", "1M", "2M"),
        ("timeout", "1s", "2s"),
    ],
)
def test_each_limit_is_a_singleton(rules, key: str, first: str, second: str) -> None:
    main = rules.write(f"{key}={first}\n{key}={second}\n")
    problem = rules.problem()
    assert problem.message == (
        f"'{key}={second}': {key} is already set to another value at {main}(1); "
        "set it in one rule file only (the command line or the code may override it)"
    )


def test_the_same_limit_set_twice_to_the_same_value_is_accepted(rules) -> None:
    assert _value(rules, "limit-memory", "1G\nlimit-memory=1G") == G


# -- overrides -----------------------------------------------------------------------------


def test_command_line_overrides_the_rule_file(rules) -> None:
    policy = rules.load("limit-memory=512M\n", extra_rules={"limit-memory": "1G"})
    limits = from_policy(policy)
    assert limits["limit-memory"] == G
    assert policy.limits["limit-memory"].rule.origin.source == COMMAND_LINE
    assert limits.shown("limit-memory") == "limit-memory=1G"
    assert limits.where("limit-memory") == "raise it on the command line (--limit-memory=)"


def test_code_overrides_the_rule_file_with_underscores(rules) -> None:
    policy = rules.load(
        "limit-memory=512M\ntimeout=5s\n",
        extra_rules={"limit_memory": "1G", "limit_open_files": 64, "timeout": "10s"},
        extra_source=CODE,
    )
    limits = from_policy(policy, partial=True)
    assert (limits["limit-memory"], limits["limit-open-files"], limits["timeout"]) == (G, 64, 10.0)
    assert limits.where("limit-memory") == "raise it in the sandboxes() call (limit_memory=)"
    assert limits.where("limit-open-files") == "raise it in the sandboxes() call (limit_open_files=)"


def test_invalid_value_from_the_code_is_refused(rules) -> None:
    problem = rules.problem("", extra_rules={"limit_memory": "5M"}, extra_source=CODE)
    assert problem.message == "limit-memory must be at least 32M, got '5M'"


@pytest.mark.parametrize(
    ("extra", "source", "spelled"),
    [
        ({"limit-memory": "1G"}, None, "the command line cannot add --limit-memory=1G"),
        ({"timeout": "5s"}, None, "the command line cannot add --timeout=5s"),
        ({"limit_cpu": "5s"}, CODE, "the code cannot add limit_cpu='5s'"),
        ({"limit_output": "1M"}, CODE, "the code cannot add limit_output='1M'"),
    ],
)
def test_learn_false_refuses_limits_added_from_outside(rules, extra, source, spelled: str) -> None:
    kwargs = {"extra_source": source} if source is not None else {}
    problem = rules.problem("learn=false\nlimit-memory=512M\n", extra_rules=extra, **kwargs)
    assert problem.message == f"'learn=false' locks the rules: {spelled}"


# -- Limits --------------------------------------------------------------------------------


def test_complete_mode_has_no_default_limit(rules) -> None:
    limits = from_policy(rules.load("os-sandbox=landlock\n"))
    assert limits.values == dict.fromkeys(
        (
            "limit-cpu",
            "limit-memory",
            "limit-processes",
            "limit-open-files",
            "limit-file-size",
            "limit-output",
            "timeout",
        )
    )
    assert (limits.kernel(), limits.supervised()) == (False, False)


def test_partial_mode_defaults(rules) -> None:
    limits = from_policy(rules.load("os-sandbox=landlock\n"), partial=True)
    assert PARTIAL_DEFAULTS == {"limit-memory": 8 * G, "limit-open-files": 4096, "limit-output": 100 * M}
    for key, value in PARTIAL_DEFAULTS.items():
        assert limits[key] == value
    assert (limits["limit-cpu"], limits["limit-processes"], limits["timeout"]) == (None, None, None)
    assert limits.shown("limit-memory") == "limit-memory=8G (the default)"
    assert limits.shown("limit-output") == "limit-output=100M (the default)"
    assert limits.where("limit-memory") == "set limit-memory= in the rule file to change it"


def test_rule_file_replaces_a_partial_default(rules) -> None:
    limits = from_policy(rules.load("limit-open-files=64\n"), partial=True)
    assert limits["limit-open-files"] == 64
    assert limits.shown("limit-open-files") == "limit-open-files=64"


def test_only_output_and_timeout_need_no_kernel_limit(rules) -> None:
    limits = from_policy(rules.load("limit-output=1M\ntimeout=5s\n"))
    assert (limits.kernel(), limits.supervised()) == (False, True)
    limits = from_policy(rules.load("limit-file-size=1M\n"))
    assert (limits.kernel(), limits.supervised()) == (True, True)


def test_messages_show_the_value_as_written(rules, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(rules.root)  # the rule file is shown relative to the working directory
    rules.write("os-sandbox=landlock\nlimit-memory = 1024M \ntimeout=1500ms\n")
    limits = from_policy(rules.load())
    assert limits.message("limit-memory", "MemoryError") == (
        "python-sb: stopped: limit-memory=1024M exceeded (MemoryError); raise it in .py-sandboxes line 2"
    )
    assert limits.message("timeout", "still running after 1.5s", tool="pysandboxes") == (
        "pysandboxes: timed out: timeout=1500ms exceeded (still running after 1.5s); "
        "raise it in .py-sandboxes line 3"
    )


# -- python-sb's command line --------------------------------------------------------------


def test_python_sb_reports_an_invalid_command_line_limit(project: Project) -> None:
    project.rules("os-sandbox=landlock")
    script = project.write("hi.py", "print('hi')\n")
    run = project.run([PYTHON_SB, "--limit-memory=5M", str(script)])
    assert (run.returncode, run.stdout, run.stderr) == (
        2,
        "",
        "<command line>: limit-memory must be at least 32M, got '5M'\n",
    )


def test_python_sb_refuses_a_command_line_limit_under_learn_false(project: Project) -> None:
    project.rules("os-sandbox=landlock", "learn=false")
    script = project.write("hi.py", "print('hi')\n")
    run = project.run([PYTHON_SB, "--limit-memory=200M", str(script)])
    assert (run.returncode, run.stdout, run.stderr) == (
        2,
        "",
        ".py-sandboxes(2): 'learn=false' locks the rules: the command line cannot add --limit-memory=200M\n",
    )


def test_python_sb_refuses_an_invalid_limit_in_the_rule_file(project: Project) -> None:
    project.rules("os-sandbox=landlock", "limit-open-files=8")
    script = project.write("hi.py", "print('hi')\n")
    run = project.run([PYTHON_SB, str(script)])
    assert (run.returncode, run.stdout, run.stderr) == (
        2,
        "",
        ".py-sandboxes(2): limit-open-files must be at least 16, got 8\n",
    )


def test_empty_cgroups_of_a_killed_host_are_swept_by_the_next_sandbox() -> None:
    # a host killed with SIGKILL cannot remove its cgroup; the next sandbox removes it, and
    # only what is certainly stale: named like ours, its pid gone, no process in it
    import subprocess

    from pysandboxes.limits import Cgroup, Limits

    from .conftest import _cgroup_parents

    parent = next(p for p in _cgroup_parents() if "/memory" in p or p.endswith("unified"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = os.path.join(parent, f"pysandboxes-{dead.pid}-1")
    alive = os.path.join(parent, f"pysandboxes-{os.getppid()}-77")  # pytest's parent: alive
    foreign = os.path.join(parent, "pysandboxes-not-ours")
    for d in (stale, alive, foreign):
        os.mkdir(d)
    try:
        Cgroup._counter = 0  # the first cgroup of a process sweeps
        made = Cgroup.create(Limits(values={"limit-memory": 64 << 20}, rules={}))
        assert made is not None
        made.kill()
        made.remove()
        assert (os.path.exists(stale), os.path.exists(alive), os.path.exists(foreign)) == (False, True, True)
    finally:
        for d in (stale, alive, foreign):
            if os.path.exists(d):
                os.rmdir(d)
