"""``${VAR}`` and ``${VAR:-default}``: values only, after the split into fields."""

from __future__ import annotations

import pytest

from pysandboxes.rules.substitution import SubstitutionError, Unset, split_outside_references, substitute

# -- the substitution function itself -------------------------------------------------------


def test_variable_is_replaced_by_its_value():
    assert substitute("a-${X}-b", {"X": "1"}) == "a-1-b"


def test_text_without_reference_is_returned_unchanged():
    assert substitute("plain $X text}", {}) == "plain $X text}"


def test_dollar_without_braces_is_left_alone():
    assert substitute("$HOME/x", {"HOME": "/h"}) == "$HOME/x"


def test_default_is_used_when_the_variable_is_unset():
    assert substitute("${X:-fallback}", {}) == "fallback"


def test_default_is_used_when_the_variable_is_empty():
    assert substitute("${X:-fallback}", {"X": ""}) == "fallback"


def test_value_wins_over_the_default_when_set():
    assert substitute("${X:-fallback}", {"X": "set"}) == "set"


def test_empty_default_gives_an_empty_string():
    assert substitute("a${X:-}b", {}) == "ab"


def test_nested_default_is_expanded():
    assert substitute("${A:-${B:-deep}}", {}) == "deep"
    assert substitute("${A:-${B:-deep}}", {"B": "b"}) == "b"


def test_unset_variable_in_an_unused_default_is_not_an_error():
    # As in a POSIX shell, the default is only evaluated when it is used.
    assert substitute("${A:-${B}}", {"A": "a"}) == "a"


def test_unset_variable_in_a_used_default_is_an_error():
    with pytest.raises(Unset) as info:
        substitute("${A:-${B}}", {})
    assert info.value.name == "B"


def test_malformed_reference_in_an_unused_default_is_still_an_error():
    with pytest.raises(SubstitutionError):
        substitute("${A:-${B:=x}}", {"A": "a"})


def test_substituted_value_is_never_expanded_again():
    assert substitute("${X}", {"X": "${Y}", "Y": "no"}) == "${Y}"


def test_default_may_hold_text_around_a_reference():
    assert substitute("${A:-pre-${B}-post}", {"B": "mid"}) == "pre-mid-post"


def test_unset_variable_without_default_raises_unset_with_a_hint():
    with pytest.raises(Unset) as info:
        substitute("${NOPE}", {})
    assert str(info.value) == "${NOPE} is not set and has no default: set NOPE, or write ${NOPE:-default}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${A:=x}", "invalid variable reference '${A:=x}': use ${NAME} or ${NAME:-default}"),
        ("${A-x}", "invalid variable reference '${A-x}': use ${NAME} or ${NAME:-default}"),
        ("${}", "invalid variable reference '${}': use ${NAME} or ${NAME:-default}"),
        ("${1A}", "invalid variable reference '${1A}': use ${NAME} or ${NAME:-default}"),
        ("${A", "unclosed '${' in '${A': close it with '}'"),
        ("x${", "unclosed '${' in 'x${': close it with '}'"),
        ("${A:-x", "unclosed '${' in '${A:-x': close it with '}'"),
        ("${A:-${B}", "unclosed '${' in '${A:-${B}': close it with '}'"),
    ],
)
def test_malformed_reference_is_an_error(text, message):
    with pytest.raises(SubstitutionError) as info:
        substitute(text, {"A": "a", "B": "b"})
    assert str(info.value) == message


def test_split_outside_references_keeps_a_separator_inside_a_default():
    assert split_outside_references("a|${X:-b|c}|d", "|") == ["a", "${X:-b|c}", "d"]


# -- substitution in rule files -------------------------------------------------------------


def test_rule_value_takes_a_variable_from_the_given_environment(rules):
    policy = rules.load("os-sandbox=${SB}\n", environ={"SB": "bwrap"})
    assert policy.os_sandbox.value == "bwrap"


def test_rule_value_takes_the_default_when_the_variable_is_unset(rules):
    policy = rules.load("os-sandbox=${SB:-landlock}\n")
    assert policy.os_sandbox.value == "landlock"


def test_nested_default_in_a_rule_value(rules):
    policy = rules.load("os-sandbox=${A:-${B:-qemu}}\n", environ={"B": "firejail"})
    assert policy.os_sandbox.value == "firejail"


def test_set_variable_with_an_unset_fallback_variable_loads(rules):
    policy = rules.load("os-sandbox=${SB:-${DEFAULT_SB}}\n", environ={"SB": "bwrap"})
    assert policy.os_sandbox.value == "bwrap"


def test_unset_variable_without_default_is_an_error_naming_the_rule(rules):
    problem = rules.problem("os-sandbox=${SB}\n")
    assert rules.where(problem) == (str(rules.path()), 1)
    assert problem.message == (
        "in 'os-sandbox=${SB}': ${SB} is not set and has no default: set SB, or write ${SB:-default}"
    )


def test_assign_default_form_is_an_error(rules):
    problem = rules.problem("os-sandbox=${SB:=bwrap}\n")
    assert problem.message == (
        "in 'os-sandbox=${SB:=bwrap}': invalid variable reference '${SB:=bwrap}': "
        "use ${NAME} or ${NAME:-default}"
    )


def test_unclosed_reference_is_an_error(rules):
    problem = rules.problem("os-sandbox=${SB\n")
    assert problem.message == "in 'os-sandbox=${SB': unclosed '${' in '${SB': close it with '}'"


def test_variable_cannot_provide_a_key(rules):
    problem = rules.problem("${KEY}=json\n", environ={"KEY": "python-import"})
    assert problem.message == "invalid rule '${KEY}=json': '${KEY}' is not a key"


def test_variable_holding_a_pipe_cannot_create_net_fields(rules):
    problem = rules.problem("net=${RULE}|tcp|127.0.0.1|80|OUT\n", environ={"RULE": "ALLOW|tcp|*|*|OUT"})
    assert problem.message == (
        "'net=${RULE}|tcp|127.0.0.1|80|OUT': action 'ALLOW|tcp|*|*|OUT' must be ALLOW or DENY"
    )


def test_net_rule_made_entirely_of_one_variable_has_one_field(rules):
    problem = rules.problem("net=${RULE}\n", environ={"RULE": "ALLOW|tcp|*|*|OUT"})
    assert problem.message.startswith("'net=${RULE}' has 1 field(s), expected 5")


def test_variable_holding_a_comma_cannot_add_imports(rules):
    problem = rules.problem("python-import=${MODS}\n", environ={"MODS": "json,os"})
    assert problem.message == "'python-import=${MODS}': 'json,os' is not a module name"


def test_variable_fills_one_import_name(rules):
    policy = rules.load("python-import=csv, ${MOD}\n", environ={"MOD": "json"})
    assert set(policy.imports) == {"csv", "json"}


def test_variable_holding_a_comma_cannot_add_api_targets(rules):
    problem = rules.problem("python-api=ALLOW:${T}\n", environ={"T": "threads,native"})
    assert problem.message.startswith("'python-api=ALLOW:${T}': unknown category 'threads,native'")


def test_variable_fills_one_api_target(rules):
    policy = rules.load("python-api=ALLOW:${T}\n", environ={"T": "threads"})
    assert policy.decide_api("threading.Thread.start").allowed


def test_variable_cannot_provide_the_api_action(rules):
    problem = rules.problem("python-api=${GRANT}\n", environ={"GRANT": "ALLOW:threads"})
    assert problem.message.startswith("'python-api=${GRANT}': expected python-api=ALLOW:TARGET")


def test_variable_holding_a_comma_cannot_add_eval_names(rules):
    problem = rules.problem("eval-syntax=${S}\n", environ={"S": "arith,loop"})
    assert problem.message.startswith("'eval-syntax=${S}': unknown syntax 'arith,loop'")


def test_variable_fills_one_eval_name(rules):
    policy = rules.load("eval-syntax=compare, ${S}\n", environ={"S": "loop"})
    assert policy.eval_profiles[""].allows_node("For")


def test_variable_holding_a_comma_stays_inside_one_expose_path(rules):
    rules.mkdir("a,b")
    policy = rules.load("expose-ro=${D}\n", environ={"D": "./a,b"})
    assert policy.decide_open(str(rules.root / "a,b" / "f")).allowed


def test_variable_holding_a_newline_cannot_create_a_rule(rules):
    policy = rules.load("env=MSG=${M}\n", environ={"M": "x\npython-import=os"})
    assert policy.environment == {"MSG": "x\npython-import=os"}
    assert policy.decide_import("os") is None


def test_unset_variable_in_unenv_is_an_error(rules):
    problem = rules.problem("unenv=${PATTERN}\n")
    assert problem.message.startswith("in 'unenv=${PATTERN}': ${PATTERN} is not set")


def test_substitution_uses_the_given_environ_not_the_process_environment(rules, monkeypatch):
    monkeypatch.setenv("PYSB_TEST_ONLY_IN_PROCESS", "bwrap")
    problem = rules.problem("os-sandbox=${PYSB_TEST_ONLY_IN_PROCESS}\n")
    assert "${PYSB_TEST_ONLY_IN_PROCESS} is not set" in problem.message


def test_learn_refuses_variables(rules):
    problem = rules.problem("learn=${LEARN_FILE}\n", environ={"LEARN_FILE": "x.learn"})
    assert problem.message == (
        "'learn=${LEARN_FILE}': learn= takes a literal file name; variables are not expanded "
        "here so that the environment cannot switch learning on"
    )


def test_nul_from_a_variable_in_a_path_is_an_error(rules):
    problem = rules.problem("expose-ro=${D}\n", environ={"D": "a\x00b"})
    assert problem.message == "in 'expose-ro=${D}': the path holds a NUL character"


def test_unknown_user_home_in_a_path_is_an_error(rules):
    problem = rules.problem("expose-ro=~no-such-user-pysb/x\n")
    assert problem.message == (
        "in 'expose-ro=~no-such-user-pysb/x': cannot expand '~': the home directory is unknown"
    )
