"""python-import= (top-level module names) and python-api= (sensitive calls)."""

from __future__ import annotations

import pytest

from pysandboxes.rules import Origin
from pysandboxes.rules.api_registry import CATEGORIES, CATEGORY_OF, FUNCTIONS_BY_CATEGORY

# -- python-import --------------------------------------------------------------------------


def test_import_is_allowed_by_its_rule(rules):
    main = rules.write("python-import=json\n")
    rule = rules.load().decide_import("json")
    assert rule is not None
    assert rule.origin == Origin(str(main), 1)


def test_import_is_refused_without_a_rule(rules):
    assert rules.load("python-import=csv\n").decide_import("json") is None


def test_import_list_with_spaces_and_a_trailing_comma(rules):
    policy = rules.load("python-import= json ,csv,  re ,\n")
    assert set(policy.imports) == {"json", "csv", "re"}


def test_star_import_allows_every_module(rules):
    policy = rules.load("python-import=*\n")
    assert policy.decide_import("anything_at_all") is not None


def test_empty_import_rule_allows_nothing(rules):
    policy = rules.load("python-import=\n")
    assert dict(policy.imports) == {}


def test_import_names_are_case_sensitive(rules):
    assert rules.load("python-import=json\n").decide_import("JSON") is None


def test_dotted_import_name_is_an_error_naming_the_top_level(rules):
    problem = rules.problem("python-import=os.path\n")
    assert (
        problem.message
        == "'python-import=os.path': python-import takes top-level names: write 'os' (it covers 'os.path')"
    )


@pytest.mark.parametrize("value", ["ALLOW:json", "DENY:os", "allow: json"])
def test_allow_deny_form_of_python_import_is_an_error(rules, value):
    problem = rules.problem(f"python-import={value}\n")
    assert problem.message == (
        f"'python-import={value}': python-import has no ALLOW:/DENY: form; list top-level module "
        "names, e.g. python-import=json, csv"
    )


@pytest.mark.parametrize("name", ["my-module", "1abc", "a b", "json.*"])
def test_invalid_module_name_is_an_error(rules, name):
    problem = rules.problem(f"python-import={name}\n")
    assert problem.message == f"'python-import={name}': '{name}' is not a module name"


def test_every_bad_name_of_one_import_rule_is_reported(rules):
    exc = rules.error("python-import=os.path, my-mod, json\n")
    assert len(exc.problems) == 2


# -- python-api -----------------------------------------------------------------------------


def test_sensitive_call_is_allowed_by_its_category(rules):
    decision = rules.load("python-api=ALLOW:threads\n").decide_api("threading.Thread.start")
    assert decision.allowed
    assert decision.category == "threads"
    assert decision.rule.target == "threads"


def test_sensitive_call_is_refused_without_a_rule(rules):
    decision = rules.load("").decide_api("threading.Thread.start")
    assert decision.allowed is False
    assert decision.rule is None
    assert decision.category == "threads"


def test_import_right_is_not_a_call_right(rules):
    policy = rules.load("python-import=os, subprocess\n")
    assert policy.decide_import("subprocess") is not None
    assert not policy.decide_api("subprocess.run").allowed


def test_function_rule_allows_only_that_function(rules):
    policy = rules.load("python-api=ALLOW:os.system\n")
    assert policy.decide_api("os.system").allowed
    assert not policy.decide_api("os.popen").allowed


def test_function_deny_beats_category_allow(rules):
    policy = rules.load("python-api=ALLOW:process-exec\npython-api=DENY:os.system\n")
    assert not policy.decide_api("os.system").allowed
    assert policy.decide_api("os.popen").allowed


def test_function_allow_beats_category_deny(rules):
    policy = rules.load("python-api=ALLOW:subprocess.run\npython-api=DENY:process-exec\n")
    assert policy.decide_api("subprocess.run").allowed
    assert not policy.decide_api("subprocess.Popen").allowed


def test_category_deny_beats_star_allow(rules):
    policy = rules.load("python-api=ALLOW:*\npython-api=DENY:native\n")
    assert not policy.decide_api("ctypes.CDLL").allowed
    assert policy.decide_api("os.kill").allowed


def test_category_allow_beats_star_deny(rules):
    policy = rules.load("python-api=DENY:*\npython-api=ALLOW:threads\n")
    assert policy.decide_api("_thread.start_new_thread").allowed
    assert not policy.decide_api("os.kill").allowed


def test_deny_wins_a_tie_whatever_the_order_and_file(rules):
    rules.write("python-api=DENY:threads\n", "other.rules")
    policy = rules.load('include "other.rules"\npython-api=ALLOW:threads\n')
    decision = policy.decide_api("threading.Thread.start")
    assert decision.allowed is False
    assert decision.rule.rule.origin.path == str(rules.path("other.rules"))


def test_star_allows_every_registered_function(rules):
    policy = rules.load("python-api=ALLOW:*\n")
    assert all(policy.decide_api(fn).allowed for fn in CATEGORY_OF)


def test_several_targets_on_one_line(rules):
    policy = rules.load("python-api=ALLOW: threads, os.kill\n")
    assert policy.decide_api("threading.stack_size").allowed
    assert policy.decide_api("os.kill").allowed
    assert not policy.decide_api("os.killpg").allowed


def test_action_is_case_insensitive(rules):
    assert rules.load("python-api=allow:threads\n").decide_api("threading.Thread.start").allowed


def test_registry_categories_partition_the_functions():
    assert set(FUNCTIONS_BY_CATEGORY) == set(CATEGORIES)
    assert sum(len(f) for f in FUNCTIONS_BY_CATEGORY.values()) == len(CATEGORY_OF)
    assert CATEGORY_OF["builtins.eval"] == "dynamic-code"


@pytest.mark.parametrize("value", ["threads", "PERMIT:threads", ""])
def test_python_api_without_an_action_is_an_error(rules, value):
    problem = rules.problem(f"python-api={value}\n")
    assert problem.message == (
        f"'python-api={value}': expected python-api=ALLOW:TARGET or python-api=DENY:TARGET, where "
        "TARGET is a category (e.g. threads), a function (e.g. os.system) or *"
    )


def test_empty_api_target_is_an_error(rules):
    problem = rules.problem("python-api=ALLOW:threads,,native\n")
    assert problem.message == "'python-api=ALLOW:threads,,native': empty target in the list"


def test_two_actions_on_one_api_line_is_an_error(rules):
    problem = rules.problem("python-api=ALLOW:threads, DENY:os.kill\n")
    assert problem.message == (
        "'python-api=ALLOW:threads, DENY:os.kill': one action per line: write the ALLOW and DENY "
        "targets on separate lines"
    )


def test_unregistered_function_is_an_error_with_a_suggestion(rules):
    problem = rules.problem("python-api=ALLOW:os.sytem\n")
    assert problem.message == (
        "'python-api=ALLOW:os.sytem': 'os.sytem' is not a registered sensitive function "
        "(did you mean 'os.system'?); see `pysandboxes explain --api` for the list"
    )


def test_unknown_category_is_an_error_with_a_suggestion(rules):
    problem = rules.problem("python-api=ALLOW:thread\n")
    assert problem.message == (
        "'python-api=ALLOW:thread': unknown category 'thread' (did you mean 'threads'?); "
        f"categories: {', '.join(CATEGORIES)}"
    )
