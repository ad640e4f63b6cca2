"""Singleton keys, extra rules (command line and code), learning, and the learn=false lock."""

from __future__ import annotations

import pytest

from pysandboxes.rules import CODE, COMMAND_LINE, Origin

# -- singletons -----------------------------------------------------------------------------


def test_singleton_set_twice_with_different_values_is_an_error(rules):
    main = rules.write("os-sandbox=bwrap\nos-sandbox=qemu\n")
    problem = rules.problem()
    assert rules.where(problem) == (str(main), 2)
    assert problem.message == (
        f"'os-sandbox=qemu': os-sandbox is already set to another value at {Origin(str(main), 1)}; "
        "set it in one rule file only (the command line or the code may override it)"
    )


def test_singleton_conflict_across_files_is_reported_at_the_second_file(rules):
    other = rules.write("py-sandbox=false\n", "other.rules")
    main = rules.write('py-sandbox=true\ninclude "other.rules"\n')
    problem = rules.problem()
    assert rules.where(problem) == (str(other), 1)
    assert problem.message.startswith(
        f"'py-sandbox=false': py-sandbox is already set to another value at {Origin(str(main), 1)};"
    )


def test_singleton_set_twice_to_the_same_value_is_accepted(rules):
    rules.write("learn=false\n", "other.rules")
    policy = rules.load('learn=false\ninclude "other.rules"\n')
    assert policy.locked_by.origin.path == str(rules.path())


def test_same_value_with_different_spacing_counts_as_the_same(rules):
    policy = rules.load("port=1\nport = 1 \n")
    assert policy.port.value == 1


@pytest.mark.parametrize(
    ("key", "first", "second"),
    [
        ("py-sandbox", "true", "false"),
        ("os-sandbox", "bwrap", "landlock"),
        ("port", "1", "2"),
        ("remote-result-mode", "objects", "data-only"),
        ("remote-result-guard", "true", "false"),
        ("learn", "false", "a.learn"),
    ],
)
def test_every_singleton_key_is_set_once_across_files(rules, key, first, second):
    exc = rules.error(f"{key}={first}\n{key}={second}\n")
    assert any(m.startswith(f"'{key}={second}': {key} is already set") for m in rules.messages(exc))


def test_command_line_overrides_a_singleton_of_the_rule_file(rules):
    policy = rules.load("os-sandbox=landlock\n", extra_rules={"os-sandbox": "bwrap"})
    assert policy.os_sandbox.value == "bwrap"
    assert policy.os_sandbox.rule.origin.source == COMMAND_LINE


def test_code_overrides_a_singleton_with_an_underscore_key(rules):
    policy = rules.load("os-sandbox=landlock\n", extra_rules={"os_sandbox": "qemu"}, extra_source=CODE)
    assert policy.os_sandbox.value == "qemu"
    assert policy.os_sandbox.rule.origin.source == CODE


def test_command_line_singleton_given_twice_with_different_values_is_an_error(rules):
    exc = rules.error("", extra_rules=[("os-sandbox", "bwrap"), ("os-sandbox", "qemu")])
    assert rules.messages(exc) == [
        "os-sandbox is given twice with different values: --os-sandbox=bwrap and --os-sandbox=qemu"
    ]
    assert exc.problems[0].origin.source == COMMAND_LINE
    assert exc.problems[0].origin.line == 2


def test_code_singleton_given_twice_with_different_values_is_spelled_as_code(rules):
    exc = rules.error("", extra_rules=[("port", 1), ("port", 2)], extra_source=CODE)
    assert rules.messages(exc) == ["port is given twice with different values: port='1' and port='2'"]


def test_command_line_singleton_given_twice_with_the_same_value_is_accepted(rules):
    policy = rules.load("", extra_rules=[("os-sandbox", "bwrap"), ("os-sandbox", "bwrap")])
    assert policy.os_sandbox.value == "bwrap"


def test_list_keys_are_the_union_of_files_and_extra_rules(rules):
    rules.write("python-import=csv\n", "other.rules")
    policy = rules.load(
        'python-import=json\ninclude "other.rules"\n', extra_rules={"python_import": ["re", "math"]}
    )
    assert set(policy.imports) == {"json", "csv", "re", "math"}


def test_extra_rules_come_after_file_rules_in_policy_rules(rules):
    policy = rules.load("python-import=json\n", extra_rules=[("python-import", "csv")])
    assert [(r.text, r.origin.source) for r in policy.rules] == [
        ("python-import=json", "file"),
        ("python-import=csv", COMMAND_LINE),
    ]


def test_extra_rule_relative_path_resolves_against_cwd(rules):
    rules.mkdir("run/data")
    policy = rules.load("", extra_rules={"expose-ro": "data"}, cwd=rules.root / "run")
    assert policy.decide_open(str(rules.root / "run/data/f")).allowed


def test_extra_rule_boolean_value_becomes_true_or_false(rules):
    policy = rules.load("", extra_rules={"py_sandbox": False}, extra_source=CODE)
    assert policy.py_sandbox.value is False


def test_extra_rule_set_value_gives_sorted_rules(rules):
    policy = rules.load("", extra_rules={"python_import": {"json", "csv"}}, extra_source=CODE)
    assert [r.value for r in policy.rules] == ["csv", "json"]


def test_extra_rule_none_value_is_an_empty_value(rules):
    policy = rules.load("", extra_rules={"py_sandbox": None}, extra_source=CODE)
    assert policy.py_sandbox.value is True


def test_extra_rule_value_with_a_line_break_is_an_error(rules):
    exc = rules.error("", extra_rules={"python_import": "json\npython-import=os"}, extra_source=CODE)
    assert rules.messages(exc) == ["the value of python-import holds a line break or NUL"]


def test_unknown_command_line_key_is_spelled_as_an_option(rules):
    exc = rules.error("", extra_rules={"expose-rox": "/etc"})
    assert rules.messages(exc) == [
        "unknown key 'expose-rox' in --expose-rox=/etc (did you mean 'expose-ro'?)"
    ]


def test_unknown_code_key_is_spelled_as_a_keyword(rules):
    exc = rules.error("", extra_rules={"expose_rox": "/etc"}, extra_source=CODE)
    assert rules.messages(exc) == [
        "unknown key 'expose-rox' in expose_rox='/etc' (did you mean 'expose-ro'?)"
    ]


# -- singleton values -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"), [("true", True), ("YES", True), ("off", False), ("0", False), ("", True)]
)
def test_py_sandbox_accepts_booleans(rules, text, value):
    assert rules.load(f"py-sandbox={text}\n").py_sandbox.value is value


def test_py_sandbox_invalid_value_is_an_error(rules):
    problem = rules.problem("py-sandbox=maybe\n")
    assert problem.message == "invalid value 'maybe' for py-sandbox: use true or false"


def test_os_sandbox_is_case_insensitive(rules):
    assert rules.load("os-sandbox=BWrap\n").os_sandbox.value == "bwrap"


def test_os_sandbox_invalid_value_is_an_error_with_a_suggestion(rules):
    problem = rules.problem("os-sandbox=bwarp\n")
    assert problem.message == (
        "invalid os-sandbox 'bwarp' (did you mean 'bwrap'?): "
        "use one of none, subprocess, landlock, bwrap, unshare, firejail, qemu"
    )


def test_os_sandbox_unset_is_none(rules):
    assert rules.load("").os_sandbox.value is None


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("data-only", "data-only"),
        ("data_only", "data-only"),
        ("default", "data-only"),
        ("Objects", "objects"),
    ],
)
def test_remote_result_mode_values(rules, text, mode):
    assert rules.load(f"remote-result-mode={text}\n").remote_result_mode.value == mode


def test_remote_result_mode_default_is_data_only(rules):
    assert rules.load("").remote_result_mode.value == "data-only"


def test_remote_result_mode_invalid_value_is_an_error(rules):
    problem = rules.problem("remote-result-mode=pickles\n")
    assert problem.message == "invalid remote-result-mode 'pickles': use data-only or objects"


def test_remote_result_guard_can_be_turned_off(rules):
    assert rules.load("remote-result-guard=false\n").remote_result_guard.value is False


def test_remote_result_guard_invalid_value_is_an_error(rules):
    problem = rules.problem("remote-result-guard=sometimes\n")
    assert problem.message == "invalid value 'sometimes' for remote-result-guard: use true or false"


def test_port_is_accepted_with_a_note(rules):
    policy = rules.load("port=8_080\n")
    assert policy.port.value == 8080
    assert [n.message for n in policy.notes] == [
        "port= has no effect: the sandbox talks over a private channel, not TCP"
    ]


def test_port_invalid_value_is_an_error(rules):
    problem = rules.problem("port=http\n")
    assert problem.message == "invalid value 'http' for port: expected a whole number"


# -- learning -------------------------------------------------------------------------------


def test_empty_learn_learns_into_the_rule_file(rules):
    policy = rules.load("learn=\n")
    assert policy.learning
    assert policy.learn_target == str(rules.path())


def test_learn_file_is_relative_to_the_rule_file(rules):
    rules.mkdir("conf")
    rules.write('include "conf/learn.rules"\n')
    rules.write("learn=out.learn\n", "conf/learn.rules")
    policy = rules.load()
    assert policy.learn_target == str(rules.root / "conf/out.learn")


def test_learn_from_the_command_line_learns_into_the_given_file(rules):
    policy = rules.load("", extra_rules={"learn": "x.learn"})
    assert policy.learn_target == str(rules.root / "x.learn")


def test_learn_into_a_missing_directory_is_an_error(rules):
    problem = rules.problem("learn=nowhere/x.learn\n")
    assert problem.message == (
        f"'learn=nowhere/x.learn': the directory '{rules.root / 'nowhere'}' does not exist; create it first"
    )


def test_learn_into_a_directory_is_an_error(rules):
    rules.mkdir("adir")
    problem = rules.problem("learn=adir\n")
    assert problem.message == f"'learn=adir': '{rules.root / 'adir'}' is a directory; name a file"


def test_learn_true_in_a_rule_file_is_an_error_with_a_hint(rules):
    problem = rules.problem("learn=true\n")
    assert problem.message == (
        "invalid learn=true: in a rule file, learn=false locks learning; to learn, give the file "
        "that receives the rules, e.g. learn=.py-sandboxes.learn"
    )


def test_learn_false_on_the_command_line_is_an_error(rules):
    exc = rules.error("", extra_rules={"learn": "false"})
    assert rules.messages(exc) == [
        "invalid learn=false: to learn, give the file that receives the rules, e.g. learn=.py-sandboxes.learn"
    ]


def test_learning_with_py_sandbox_false_is_an_error(rules):
    main = rules.write("py-sandbox=false\nlearn=\n")
    problem = rules.problem()
    assert rules.where(problem) == (str(main), 1)
    assert problem.message == (
        "learning needs the Python layer, but py-sandbox=false turns it off: "
        "remove py-sandbox=false while learning"
    )


def test_missing_rule_file_in_learn_mode_uses_the_template_and_learns_into_it(rules):
    missing = rules.path("absent.rules")
    policy = rules.load(name="absent.rules", missing_file="learn")
    assert policy.main_file is None
    assert policy.learn_target == str(missing)
    assert policy.os_sandbox.value == "subprocess"
    assert str(missing) in policy.files_policy.protected


def test_missing_rule_file_in_learn_mode_takes_os_sandbox_from_the_environment(rules):
    policy = rules.load(name="absent.rules", missing_file="learn", environ={"OS_SANDBOX": "bwrap"})
    assert policy.os_sandbox.value == "bwrap"


def test_missing_rule_file_without_learn_mode_is_an_error(rules):
    exc = rules.error(name="absent.rules")
    assert rules.messages(exc) == [f"rule file '{rules.path('absent.rules')}' does not exist"]


# -- the lock -------------------------------------------------------------------------------


def test_learn_false_locks_the_rules(rules):
    main = rules.write("learn=false\n")
    policy = rules.load()
    assert policy.locked_by.text == "learn=false"
    assert policy.lock_origin.path == str(main)
    assert policy.learning is False


def test_lock_is_case_insensitive(rules):
    assert rules.load("learn=FALSE\n").locked_by is not None


def test_without_lock_the_command_line_may_add_rules(rules):
    policy = rules.load("python-import=json\n", extra_rules={"expose-ro": "/etc"})
    assert policy.decide_open("/etc/hostname").allowed


def test_lock_refuses_a_command_line_rule(rules):
    main = rules.write("python-import=json\nlearn=false\n")
    problem = rules.problem(extra_rules={"expose-ro": "/etc"})
    assert rules.where(problem) == (str(main), 2)
    assert problem.message == "'learn=false' locks the rules: the command line cannot add --expose-ro=/etc"


def test_lock_refuses_a_code_rule(rules):
    problem = rules.problem("learn=false\n", extra_rules={"expose_ro": "/etc"}, extra_source=CODE)
    assert problem.message == "'learn=false' locks the rules: the code cannot add expose_ro='/etc'"


def test_lock_refuses_a_command_line_override_of_a_singleton(rules):
    problem = rules.problem("learn=false\nos-sandbox=bwrap\n", extra_rules={"os-sandbox": "none"})
    assert problem.message == "'learn=false' locks the rules: the command line cannot add --os-sandbox=none"


def test_lock_reports_every_refused_extra_rule(rules):
    exc = rules.error("learn=false\n", extra_rules=[("python-import", "os"), ("python-api", "ALLOW:*")])
    assert rules.messages(exc) == [
        "'learn=false' locks the rules: the command line cannot add --python-api=ALLOW:*",
        "'learn=false' locks the rules: the command line cannot add --python-import=os",
    ]


def test_lock_in_an_included_profile_locks_the_project(rules):
    profile = rules.user_profile("learn=false\n")
    problem = rules.problem(
        'include "~/.config/py-sandboxes/user-py-sandboxes.profile"\n', extra_rules={"expose-ro": "/etc"}
    )
    assert rules.where(problem) == (str(profile), 1)


def test_lock_refuses_learning_from_the_command_line(rules):
    problem = rules.problem("learn=false\n", extra_rules={"learn": "x.learn"})
    assert problem.message == "learning mode is forbidden by 'learn=false', but requested by --learn=x.learn"


def test_lock_refuses_learning_into_the_rule_file_from_the_command_line(rules):
    problem = rules.problem("learn=false\n", extra_rules=[("learn", "")])
    assert problem.message == "learning mode is forbidden by 'learn=false', but requested by --learn"


def test_lock_refuses_learning_from_code(rules):
    problem = rules.problem("learn=false\n", extra_rules={"learn": "x.learn"}, extra_source=CODE)
    assert problem.message == "learning mode is forbidden by 'learn=false', but requested by learn='x.learn'"


def test_lock_from_the_user_profile_refuses_learning_for_a_missing_rule_file(rules):
    profile = rules.user_profile("learn=false\n")
    missing = rules.path("absent.rules")
    problem = rules.problem(name="absent.rules", missing_file="learn")
    assert rules.where(problem) == (str(profile), 1)
    assert problem.message == (
        f"learning mode is forbidden by 'learn=false', but requested by the missing rule file "
        f"'{missing}'; create it, or point to it"
    )


def test_lock_does_not_refuse_a_file_without_extra_rules(rules):
    policy = rules.load("learn=false\npython-import=json\n", extra_rules={})
    assert set(policy.imports) == {"json"}
