"""env=NAME=VALUE and unenv=PATTERN: the environment the sandboxed program starts with."""

from __future__ import annotations

from pysandboxes.rules import Origin


def test_nothing_is_forwarded_by_default(rules):
    policy = rules.load("", environ={"SECRET": "s", "PATH": "/bin"})
    assert dict(policy.environment) == {}


def test_variable_copied_from_the_host_is_forwarded(rules):
    policy = rules.load("env=TOKEN=${TOKEN}\n", environ={"TOKEN": "t0k"})
    assert dict(policy.environment) == {"TOKEN": "t0k"}


def test_fixed_value(rules):
    assert dict(rules.load("env=LANG=C.UTF-8\n").environment) == {"LANG": "C.UTF-8"}


def test_copy_from_an_unset_host_variable_leaves_it_undefined(rules):
    policy = rules.load("env=TOKEN=${TOKEN}\n")
    assert "TOKEN" not in policy.environment


def test_copy_from_an_empty_host_variable_leaves_it_undefined(rules):
    policy = rules.load("env=TOKEN=${TOKEN}\n", environ={"TOKEN": ""})
    assert "TOKEN" not in policy.environment


def test_literal_empty_value_defines_the_variable_empty(rules):
    assert dict(rules.load("env=EMPTY=\n").environment) == {"EMPTY": ""}


def test_default_is_used_for_an_unset_host_variable(rules):
    assert dict(rules.load("env=LANG=${LANG:-C.UTF-8}\n").environment) == {"LANG": "C.UTF-8"}


def test_text_around_an_empty_host_variable_is_kept(rules):
    policy = rules.load("env=PATHS=/opt/bin:${EXTRA}\n", environ={"EXTRA": ""})
    assert dict(policy.environment) == {"PATHS": "/opt/bin:"}


def test_value_may_copy_another_host_variable(rules):
    policy = rules.load("env=HOME=${REAL_HOME}\n", environ={"REAL_HOME": "/home/x"})
    assert dict(policy.environment) == {"HOME": "/home/x"}


def test_pattern_copies_every_matching_host_variable(rules):
    policy = rules.load(
        "env=APP_*=${APP_*}\n", environ={"APP_A": "1", "APP_B": "2", "OTHER": "3", "APP_EMPTY": ""}
    )
    assert dict(policy.environment) == {"APP_A": "1", "APP_B": "2"}


def test_pattern_with_a_fixed_value(rules):
    policy = rules.load("env=APP_*=redacted\n", environ={"APP_A": "1"})
    assert dict(policy.environment) == {"APP_A": "redacted"}


def test_pattern_with_a_default(rules):
    policy = rules.load("env=APP_*=${APP_*:-none}\n", environ={"APP_A": "", "APP_B": "b"})
    assert dict(policy.environment) == {"APP_A": "none", "APP_B": "b"}


def test_exact_name_beats_a_pattern(rules):
    policy = rules.load(
        "env=APP_*=${APP_*}\nenv=APP_MODE=safe\n", environ={"APP_MODE": "unsafe", "APP_X": "x"}
    )
    assert dict(policy.environment) == {"APP_MODE": "safe", "APP_X": "x"}


def test_exact_name_beats_a_pattern_even_when_it_leaves_the_variable_undefined(rules):
    policy = rules.load("env=APP_*=fixed\nenv=APP_TOKEN=${NOPE}\n", environ={"APP_TOKEN": "t"})
    assert "APP_TOKEN" not in policy.environment


def test_pattern_with_more_fixed_characters_wins(rules):
    policy = rules.load("env=*=generic\nenv=AWS_*=aws\n", environ={"AWS_KEY": "k", "OTHER": "o"})
    assert dict(policy.environment) == {"AWS_KEY": "aws", "OTHER": "generic", "HOME": "generic"}


def test_equally_specific_patterns_with_different_values_are_an_error(rules):
    main = rules.write("env=A*=one\nenv=*B=two\n")
    problem = rules.problem(environ={"AB": "x"})
    assert rules.where(problem) == (str(main), 2)
    assert problem.message == (
        f"'env=*B=two' and 'env=A*=one' from {Origin(str(main), 1)} give AB different values and are "
        "as specific: make one more specific, or add an exact env=AB=... rule"
    )


def test_equally_specific_patterns_are_fine_without_a_matching_host_variable(rules):
    assert dict(rules.load("env=A*=one\nenv=*B=two\n", environ={"AC": "x"}).environment) == {"AC": "one"}


def test_equally_specific_patterns_with_the_same_value_are_accepted(rules):
    policy = rules.load("env=A*=same\nenv=*B=same\n", environ={"AB": "x"})
    assert dict(policy.environment) == {"AB": "same"}


def test_exact_name_given_two_different_values_is_an_error(rules):
    exc = rules.error("env=MODE=a\nenv=MODE=b\n")
    assert rules.messages(exc)[0].startswith("'env=MODE=b' and 'env=MODE=a' from ")


def test_exact_name_given_twice_the_same_value_is_accepted(rules):
    rules.write("env=MODE=a\n", "other.rules")
    assert dict(rules.load('env=MODE=a\ninclude "other.rules"\n').environment) == {"MODE": "a"}


def test_unenv_removes_an_exact_variable(rules):
    policy = rules.load("env=TOKEN=${TOKEN}\nunenv=TOKEN\n", environ={"TOKEN": "t"})
    assert dict(policy.environment) == {}


def test_unenv_pattern_beats_exact_and_pattern_rules(rules):
    policy = rules.load(
        "env=*=${*}\nenv=AWS_SECRET=literal\nunenv=AWS_*\n",
        environ={"AWS_SECRET": "s", "AWS_ID": "i", "LANG": "C"},
    )
    assert dict(policy.environment) == {"LANG": "C", "HOME": rules.environ["HOME"]}


def test_unenv_in_an_included_profile_removes_a_project_variable(rules):
    rules.user_profile("unenv=*_TOKEN\n")
    policy = rules.load(
        'env=GH_TOKEN=${GH_TOKEN}\ninclude "~/.config/py-sandboxes/user-py-sandboxes.profile"\n',
        environ={"GH_TOKEN": "t"},
    )
    assert "GH_TOKEN" not in policy.environment


def test_unenv_with_a_variable(rules):
    policy = rules.load("env=A=1\nenv=B=2\nunenv=${DROP}\n", environ={"DROP": "A"})
    assert dict(policy.environment) == {"B": "2"}


def test_sources_name_the_rule_of_each_variable(rules):
    main = rules.write("env=A=1\n")
    policy = rules.load()
    assert policy.env.sources["A"].origin == Origin(str(main), 1)


def test_star_pattern_forwards_the_whole_environment(rules):
    policy = rules.load("env=*=${*}\n", environ={"X": "1", "Y": "2"})
    assert dict(policy.environment) == {"X": "1", "Y": "2", "HOME": rules.environ["HOME"]}


def test_missing_equals_after_the_name_is_an_error(rules):
    problem = rules.problem("env=TOKEN\n")
    assert problem.message == (
        "'env=TOKEN': missing '=' after the variable name: write env=NAME=VALUE, e.g. env=HOME=${HOME}"
    )


def test_invalid_variable_name_is_an_error(rules):
    problem = rules.problem("env=1BAD=x\n")
    assert problem.message == "'env=1BAD=x': '1BAD' is not a valid variable name or pattern"


def test_invalid_unenv_pattern_is_an_error(rules):
    problem = rules.problem("unenv=A B\n")
    assert problem.message == "'unenv=A B': 'A B' is not a valid variable name or pattern"


def test_malformed_reference_in_a_value_is_an_error(rules):
    problem = rules.problem("env=A=${B:=x}\n")
    assert problem.message == (
        "in 'env=A=${B:=x}': invalid variable reference '${B:=x}': use ${NAME} or ${NAME:-default}"
    )


def test_spaces_around_the_name_are_ignored(rules):
    assert dict(rules.load("env= A =1\n").environment) == {"A": "1"}
