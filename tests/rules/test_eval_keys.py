"""eval-* keys: the sub-language of code given to eval/exec/compile, and named profiles."""

from __future__ import annotations

import pytest

from pysandboxes.rules import CODE, Origin
from pysandboxes.rules.eval_vocab import EVAL_NAMESPACES, SYNTAX_GROUPS

SYNTAX_GROUP_LIST = ", ".join(SYNTAX_GROUPS)


def test_no_eval_key_means_no_eval_profile(rules):
    assert dict(rules.load("python-import=json\n").eval_profiles) == {}


def test_eval_syntax_groups_allow_their_nodes(rules):
    profile = rules.load("eval-syntax=arith, compare\n").eval_profiles[""]
    assert profile.allows_node("BinOp")
    assert profile.allows_node("Compare")
    assert not profile.allows_node("For")
    assert not profile.allows_node("Call")


def test_core_nodes_are_always_allowed(rules):
    profile = rules.load("eval-syntax=arith\n").eval_profiles[""]
    assert profile.allows_node("Constant")
    assert profile.allows_node("Name")


def test_ast_node_name_is_accepted(rules):
    profile = rules.load("eval-syntax=ListComp\n").eval_profiles[""]
    assert profile.allows_node("ListComp")
    assert not profile.allows_node("DictComp")


def test_group_name_wins_over_an_ast_node_of_the_same_name(rules):
    # 'comprehension' is both a group and an ast node: the group is meant.
    profile = rules.load("eval-syntax=comprehension\n").eval_profiles[""]
    assert profile.allows_node("DictComp")


def test_future_node_names_are_accepted_everywhere(rules):
    profile = rules.load("eval-syntax=tstring, TypeAlias\n").eval_profiles[""]
    assert profile.allows_node("TemplateStr")
    assert profile.allows_node("TypeAlias")


def test_deny_line_removes_a_node_of_an_allowed_group(rules):
    profile = rules.load("eval-syntax=arith\neval-syntax=DENY:Pow\n").eval_profiles[""]
    assert profile.allows_node("Add")
    assert not profile.allows_node("Pow")


def test_deny_line_removes_a_core_node(rules):
    profile = rules.load("eval-syntax=DENY:Dict\n").eval_profiles[""]
    assert not profile.allows_node("Dict")


def test_deny_line_is_case_insensitive(rules):
    profile = rules.load("eval-syntax=arith\neval-syntax=deny:Pow\n").eval_profiles[""]
    assert profile.syntax.deny == {"Pow"}


def test_list_keys_collect_names(rules):
    profile = rules.load(
        "eval-call=len, math.sqrt, math.*\n"
        "eval-call=DENY:math.factorial\n"
        "eval-attribute=str-methods, real\n"
        "eval-import=math\n"
        "eval-magic=__len__, __*__\n"
    ).eval_profiles[""]
    assert profile.calls.allow == {"len", "math.sqrt", "math.*"}
    assert profile.calls.deny == {"math.factorial"}
    assert {"upper", "split", "real"} <= profile.attributes.allow
    assert "format" not in profile.attributes.allow
    assert profile.imports.allow == {"math"}
    assert profile.magic.allow == {"__len__", "__*__"}


def test_granting_format_is_accepted_with_a_note(rules):
    main = rules.write("eval-attribute=format\n")
    policy = rules.load()
    assert "format" in policy.eval_profiles[""].attributes.allow
    assert [(n.origin, n.message) for n in policy.notes] == [
        (
            Origin(str(main), 1),
            "'eval-attribute=format' grants 'format', which reaches attributes through a format string",
        )
    ]


def test_scalar_defaults(rules):
    profile = rules.load("eval-syntax=arith\n").eval_profiles[""]
    assert (profile.namespace, profile.timeout, profile.max_iterations) == ("adaptive", 5.0, 1_000_000)
    assert (profile.max_call_depth, profile.max_depth, profile.max_nodes) == (20, 20, 5_000)
    assert (profile.max_leaked_threads, profile.max_alloc) == (4, 10_000_000)


@pytest.mark.parametrize(
    ("text", "seconds"), [("2s", 2.0), ("500ms", 0.5), ("1.5m", 90.0), ("3", 3.0), ("1_000ms", 1.0)]
)
def test_eval_timeout_durations(rules, text, seconds):
    assert rules.load(f"eval-timeout={text}\n").eval_profiles[""].timeout == seconds


def test_scalar_values_are_parsed(rules):
    profile = rules.load(
        "eval-namespace=closed\neval-max-iterations=1_000\neval-max-call-depth=5\neval-max-depth=7\n"
        "eval-max-nodes=100\neval-max-leaked-threads=0\neval-max-alloc=2MB\n"
    ).eval_profiles[""]
    assert profile.namespace == "closed"
    assert profile.max_iterations == 1000
    assert (profile.max_call_depth, profile.max_depth, profile.max_nodes) == (5, 7, 100)
    assert profile.max_leaked_threads == 0
    assert profile.max_alloc == 2_000_000


def test_named_profile_is_independent_of_the_default_one(rules):
    policy = rules.load(
        "eval-syntax=arith\neval-call:llm=len\neval-syntax:llm=compare\neval-timeout:llm=1s\n"
    )
    default, llm = policy.eval_profiles[""], policy.eval_profiles["llm"]
    assert llm.calls.allow == {"len"}
    assert default.calls.allow == frozenset()
    assert llm.allows_node("Compare") and not llm.allows_node("BinOp")
    assert default.allows_node("BinOp") and not default.allows_node("Compare")
    assert (default.timeout, llm.timeout) == (5.0, 1.0)


def test_named_profile_alone_creates_no_default_profile(rules):
    assert set(rules.load("eval-call:llm=len\n").eval_profiles) == {"llm"}


def test_named_profile_from_code_keeps_underscores_in_its_name(rules):
    policy = rules.load(
        "eval-call:my_profile=len\n", extra_rules={"eval_call:my_profile": "abs"}, extra_source=CODE
    )
    assert set(policy.eval_profiles) == {"my_profile"}
    assert policy.eval_profiles["my_profile"].calls.allow == {"len", "abs"}


def test_invalid_profile_name_from_code_is_an_error(rules):
    exc = rules.error("", extra_rules={"eval_call:bad name": "len"}, extra_source=CODE)
    assert rules.messages(exc) == ["'eval-call:bad name': a profile name uses letters, digits, '-' and '_'"]


def test_scalar_set_twice_in_one_profile_is_an_error(rules):
    main = rules.write("eval-timeout=2s\neval-timeout=3s\n")
    problem = rules.problem()
    assert rules.where(problem) == (str(main), 2)
    assert problem.message == (
        f"'eval-timeout=3s': eval-timeout is already set to another value in this profile at "
        f"{Origin(str(main), 1)}; it takes one value"
    )


def test_same_scalar_in_two_profiles_is_accepted(rules):
    policy = rules.load("eval-timeout=2s\neval-timeout:llm=3s\n")
    assert (policy.eval_profiles[""].timeout, policy.eval_profiles["llm"].timeout) == (2.0, 3.0)


def test_same_scalar_twice_with_the_same_value_is_accepted(rules):
    assert rules.load("eval-timeout=2s\neval-timeout=2s\n").eval_profiles[""].timeout == 2.0


def test_code_overrides_an_eval_scalar_of_the_rule_file(rules):
    policy = rules.load("eval-timeout=2s\n", extra_rules={"eval_timeout": "3s"}, extra_source=CODE)
    assert policy.eval_profiles[""].timeout == 3.0


def test_code_eval_scalar_given_twice_with_different_values_is_an_error(rules):
    exc = rules.error("", extra_rules=[("eval_timeout", "2s"), ("eval_timeout", "3s")], extra_source=CODE)
    assert rules.messages(exc)[0].startswith(
        "'eval-timeout=3s': eval-timeout is already set to another value"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "eval-namespace=open",
            f"invalid value 'open' for eval-namespace: use one of {', '.join(EVAL_NAMESPACES)}",
        ),
        (
            "eval-timeout=2h",
            "invalid duration '2h' for eval-timeout: write a number with ms, s or m, e.g. 2s or 500ms",
        ),
        (
            "eval-timeout=1__0s",
            "invalid duration '1__0s' for eval-timeout: write a number with ms, s or m, e.g. 2s or 500ms",
        ),
        ("eval-timeout=0s", "eval-timeout must be greater than zero, got '0s'"),
        (
            "eval-max-alloc=10MiB",
            "invalid size '10MiB' for eval-max-alloc: write a number with KB, MB or GB, e.g. 10MB",
        ),
        ("eval-max-alloc=0", "eval-max-alloc must be greater than zero, got '0'"),
        ("eval-max-depth=0", "eval-max-depth must be at least 1, got 0"),
        ("eval-max-nodes=many", "invalid value 'many' for eval-max-nodes: expected a whole number"),
        (
            "eval-max-leaked-threads=-1",
            "invalid value '-1' for eval-max-leaked-threads: expected a whole number",
        ),
    ],
)
def test_invalid_scalar_value_is_an_error(rules, line, message):
    assert rules.problem(line + "\n").message == message


def test_empty_name_in_an_eval_list_is_an_error(rules):
    problem = rules.problem("eval-call=len,,abs\n")
    assert problem.message == "'eval-call=len,,abs': empty name in the list"


def test_unknown_syntax_is_an_error_with_a_suggestion(rules):
    problem = rules.problem("eval-syntax=arithm\n")
    assert problem.message == (
        f"'eval-syntax=arithm': unknown syntax 'arithm' (did you mean 'arith'?); groups: "
        f"{SYNTAX_GROUP_LIST}, or an ast node name such as ListComp"
    )


def test_misspelt_ast_node_is_an_error_with_a_suggestion(rules):
    problem = rules.problem("eval-syntax=Listcomp\n")
    assert problem.message.startswith(
        "'eval-syntax=Listcomp': unknown syntax 'Listcomp' (did you mean 'ListComp'?)"
    )


def test_unknown_attribute_group_is_an_error_with_a_suggestion(rules):
    problem = rules.problem("eval-attribute=str-method\n")
    assert problem.message == (
        "'eval-attribute=str-method': unknown attribute group 'str-method' (did you mean 'str-methods'?)"
    )


@pytest.mark.parametrize(
    ("key", "item"),
    [
        ("eval-attribute", "a.b"),
        ("eval-call", "math..sqrt"),
        ("eval-import", "1json"),
        ("eval-magic", "__a b__"),
    ],
)
def test_invalid_name_in_an_eval_list_is_an_error(rules, key, item):
    problem = rules.problem(f"{key}={item}\n")
    assert problem.message == f"'{key}={item}': '{item}' is not a valid name or * pattern"


def test_eval_magic_refuses_a_plain_name(rules):
    problem = rules.problem("eval-magic=len\n")
    assert problem.message == "'eval-magic=len': eval-magic grants dunder names such as __len__, not 'len'"


def test_unknown_eval_key_is_an_error(rules):
    problem = rules.problem("eval-syntaxe=arith\n")
    assert (
        problem.message == "unknown key 'eval-syntaxe' in 'eval-syntaxe=arith' (did you mean 'eval-syntax'?)"
    )


# -- eval-* against python-api grants --------------------------------------------------------


@pytest.mark.parametrize(
    ("grant", "function"),
    [
        ("ALLOW:dynamic-code", "builtins.eval"),
        ("ALLOW:*", "builtins.eval"),
        ("ALLOW:builtins.eval", "builtins.eval"),
        ("ALLOW:builtins.exec", "builtins.exec"),
        ("ALLOW:builtins.compile", "builtins.compile"),
    ],
)
def test_eval_keys_with_an_api_grant_of_eval_are_an_error(rules, grant, function):
    main = rules.write(f"python-api={grant}\neval-syntax=arith\n")
    problem = rules.problem()
    assert rules.where(problem) == (str(main), 2)
    assert problem.message == (
        f"'eval-syntax=arith' is never applied: 'python-api={grant}' from {Origin(str(main), 1)} lets "
        f"{function}() run unguarded; remove the eval-* lines or the python-api grant"
    )


def test_eval_keys_in_a_named_profile_with_an_api_grant_of_eval_are_an_error(rules):
    exc = rules.error("eval-call:llm=len\n", extra_rules={"python-api": "ALLOW:dynamic-code"})
    assert rules.messages(exc)[0].startswith("'eval-call:llm=len' is never applied: ")


def test_eval_keys_with_star_grant_minus_dynamic_code_are_accepted(rules):
    policy = rules.load("python-api=ALLOW:*\npython-api=DENY:dynamic-code\neval-syntax=arith\n")
    assert not policy.decide_api("builtins.eval").allowed
    assert "" in policy.eval_profiles


def test_api_grant_of_eval_without_eval_keys_is_accepted(rules):
    assert rules.load("python-api=ALLOW:dynamic-code\n").decide_api("builtins.exec").allowed
