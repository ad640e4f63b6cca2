"""Each grant allows exactly what it names: every construct runs with its rule and is
refused, naming that rule, without it."""

from __future__ import annotations

from typing import Any

import pytest

from pysandboxes.errors import EvalSyntaxRejected

#: eval-syntax group -> (mode, source, expected result or namespace value of `r`, extra rules)
SYNTAX: dict[str, tuple[str, str, Any, str]] = {
    "arith": ("eval", "7 * 6 - 2 ** 3 // 4", 40, ""),
    "compare": ("eval", "1 < 2 and not 2 in (3, 4)", True, ""),
    "conditional": ("eval", "'yes' if 2 else 'no'", "yes", ""),
    "loop": (
        "exec",
        "r = 0\nfor i in (1, 2, 3):\n    r = i\nwhile False:\n    break",
        3,
        "eval-syntax=assign",
    ),
    "comprehension": ("eval", "[x for x in (1, 2) if x]", [1, 2], ""),
    "assign": ("exec", "r = 1\nr += 1\n(q := 3)", 2, "eval-syntax=arith"),
    "func": ("exec", "def f(a, b=2):\n    return a\nr = (lambda: f(5))()", 5, "eval-syntax=assign"),
    "async": ("exec", "async def f():\n    return 1\nr = f\n", "function", "eval-syntax=assign, func"),
    "class": ("exec", "class C:\n    pass\nr = C\n", "type", "eval-syntax=assign"),
    "exception": (
        "exec",
        "try:\n    raise ValueError\nexcept ValueError:\n    r = 4",
        4,
        "eval-syntax=assign",
    ),
    "context": ("exec", "with ctx:\n    r = 5", 5, "eval-syntax=assign"),
    "import": ("exec", "import math\nr = math.floor(2.5)", 2, "eval-syntax=assign\neval-import=math"),
    "subscript": ("eval", "(1, 2, 3)[1:][0]", 2, ""),
    "fstring": ("eval", "f'{6 * 7}!'", "42!", "eval-syntax=arith"),
    "yield": (
        "exec",
        "def g():\n    yield 1\n    yield from (2,)\nr = g\n",
        "function",
        "eval-syntax=assign, func",
    ),
}


class _Context:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


def _outcome(run: Any, rules: Any, mode: str, source: str) -> Any:
    namespace: dict[str, Any] = {"ctx": _Context()}
    value = run(rules, source, namespace, mode)
    if mode == "eval":
        return value
    found = namespace["r"]
    return type(found).__name__ if isinstance(found, type) or callable(found) else found


@pytest.mark.parametrize("group", list(SYNTAX))
def test_a_syntax_group_allows_its_constructs(profile: Any, run: Any, group: str) -> None:
    mode, source, expected, extra = SYNTAX[group]
    rules = profile(f"eval-syntax={group}\n{extra}")
    assert _outcome(run, rules, mode, source) == expected


@pytest.mark.parametrize("group", list(SYNTAX))
def test_a_syntax_group_is_needed(profile: Any, run: Any, group: str) -> None:
    mode, source, _expected, extra = SYNTAX[group]
    rules = profile(f"eval-syntax=Pass\n{extra}")
    with pytest.raises(EvalSyntaxRejected) as info:
        _outcome(run, rules, mode, source)
    assert f"eval-syntax={group}" in info.value.rules


def test_a_node_name_allows_one_construct(profile: Any, run: Any) -> None:
    rules = profile("eval-syntax=BinOp, Add")
    assert run(rules, "1 + 2") == 3
    with pytest.raises(EvalSyntaxRejected) as info:
        run(rules, "1 - 2")
    assert info.value.rules == ("eval-syntax=arith",)


def test_a_syntax_deny_wins(profile: Any, run: Any) -> None:
    rules = profile("eval-syntax=arith\neval-syntax=DENY:Pow")
    assert run(rules, "2 * 3") == 6
    with pytest.raises(EvalSyntaxRejected):
        run(rules, "2 ** 3")


# -- eval-call ----------------------------------------------------------------------------


def test_a_call_grant_allows_that_builtin(profile: Any, run: Any) -> None:
    assert run(profile("eval-call=len"), "len('abc')") == 3
    with pytest.raises(EvalSyntaxRejected) as info:
        run(profile("eval-call=len"), "abs(1)")
    assert info.value.rules == ("eval-call=abs",)


def test_a_call_grant_builds_the_builtins(profile: Any, run: Any) -> None:
    rules = profile("eval-call=sorted")
    assert run(rules, "sorted((3, 1, 2))") == [1, 2, 3]
    with pytest.raises(EvalSyntaxRejected):
        run(rules, "len")


def test_a_call_pattern_and_its_deny(profile: Any, run: Any) -> None:
    rules = profile("eval-call=*\neval-call=DENY:len")
    assert run(rules, "max(abs(3), min(1, 2))") == 3
    with pytest.raises(EvalSyntaxRejected):
        run(rules, "len('x')")


def test_a_dotted_call_grant_names_a_module_function(profile: Any, run: Any) -> None:
    rules = profile("eval-call=math.sqrt")
    assert run(rules, "math.sqrt(16)") == 4.0
    with pytest.raises(EvalSyntaxRejected) as info:
        run(rules, "math.floor(2.5)")
    assert info.value.rules == ("eval-attribute=floor",)


def test_a_namespace_function_needs_a_call_grant_or_func(profile: Any, run: Any) -> None:
    double = {"double": lambda x: 2 * x}
    assert run(profile("eval-call=double"), "double(4)", dict(double)) == 8
    assert run(profile("eval-syntax=func"), "double(4)", dict(double)) == 8
    with pytest.raises(EvalSyntaxRejected) as info:
        run(profile("eval-syntax=arith"), "double(4)", dict(double))
    assert info.value.rules == ("eval-call=double",)


# -- eval-attribute -------------------------------------------------------------------------


def test_an_attribute_grant_allows_that_attribute(profile: Any, run: Any) -> None:
    assert run(profile("eval-attribute=upper"), "'a'.upper()") == "A"
    with pytest.raises(EvalSyntaxRejected) as info:
        run(profile("eval-attribute=upper"), "'a'.lower()")
    assert info.value.rules == ("eval-attribute=lower",)


@pytest.mark.parametrize(
    ("group", "source", "expected", "outside"),
    [
        ("str-methods", "' a '.strip().title()", "A", "'a'.format()"),
        ("list-methods", "[3, 1].copy().index(1)", 1, "[].__len__()"),
        ("dict-methods", "{'a': 1}.get('a')", 1, "{}.__len__"),
        ("set-methods", "{1}.union({2})", {1, 2}, "{1}.copy().__len__"),
        ("tuple-methods", "(1, 1).count(1)", 2, "(1,).index.__self__"),
        ("num-methods", "(10).bit_length()", 4, "(1).__abs__()"),
        ("bytes-methods", "b'ab'.hex()", "6162", "b''.decode.__name__"),
    ],
)
def test_an_attribute_group_allows_its_methods(
    profile: Any, run: Any, group: str, source: str, expected: Any, outside: str
) -> None:
    rules = profile(f"eval-attribute={group}\neval-syntax=subscript")
    assert run(rules, source) == expected
    with pytest.raises(EvalSyntaxRejected):
        run(rules, outside)


def test_format_is_granted_by_name_only(profile: Any, run: Any) -> None:
    with pytest.raises(EvalSyntaxRejected):
        run(profile("eval-attribute=*"), "'{}'.format(1)")
    assert run(profile("eval-attribute=format"), "'{}!'.format(1)") == "1!"


def test_a_pattern_never_grants_private_attributes(profile: Any, run: Any) -> None:
    with pytest.raises(EvalSyntaxRejected):
        run(profile("eval-attribute=*"), "(1)._x")


# -- eval-import ------------------------------------------------------------------------------


def test_an_import_grant_allows_that_module(profile: Any, run: Any) -> None:
    rules = profile("eval-syntax=import, assign\neval-import=math")
    ns: dict[str, Any] = {}
    run(rules, "import math\nr = math.pi", ns, "exec")
    assert ns["r"] > 3
    with pytest.raises(EvalSyntaxRejected) as info:
        run(rules, "import json", {}, "exec")
    assert info.value.rules == ("eval-import=json",)


def test_from_import_gives_checked_names(profile: Any, run: Any) -> None:
    rules = profile("eval-syntax=import, assign\neval-import=math")
    ns: dict[str, Any] = {}
    run(rules, "from math import floor as f\nr = f(2.5)", ns, "exec")
    assert ns["r"] == 2


def test_a_module_member_that_is_a_module_needs_its_own_grant(profile: Any, run: Any) -> None:
    rules = profile("eval-syntax=import, assign\neval-import=fractions")
    ns: dict[str, Any] = {}
    run(rules, "import fractions\nr = fractions.Fraction(1, 2)", ns, "exec")
    assert str(ns["r"]) == "1/2"
    with pytest.raises(EvalSyntaxRejected) as info:
        run(rules, "import fractions\nr = fractions.math", {}, "exec")
    assert info.value.rules == ("eval-import=math",)


# -- eval-magic -------------------------------------------------------------------------------


def test_a_magic_grant_allows_that_dunder(profile: Any, run: Any) -> None:
    rules = profile("eval-syntax=class, func, assign\neval-magic=__len__\neval-call=len")
    ns: dict[str, Any] = {}
    run(rules, "class C:\n    def __len__(self):\n        return 3\nr = len(C())", ns, "exec")
    assert ns["r"] == 3
    with pytest.raises(EvalSyntaxRejected) as info:
        run(rules, "class C:\n    def __iter__(self):\n        return 3", {}, "exec")
    assert info.value.rules == ("eval-magic=__iter__",)


def test_a_magic_grant_never_reaches_the_always_denied(profile: Any, run: Any) -> None:
    with pytest.raises(EvalSyntaxRejected) as info:
        run(profile("eval-magic=*"), "(1).__class__.__subclasses__")
    assert info.value.rules == ()
    assert "is never allowed" in str(info.value)


@pytest.mark.parametrize("name", ["__defaults__", "__kwdefaults__"])
def test_a_magic_grant_never_reaches_a_functions_defaults(profile: Any, run: Any, name: str) -> None:
    rules = profile(f"eval-magic={name}, __name__")
    assert run(rules, "f.__name__", {"f": len}) == "len"
    with pytest.raises(EvalSyntaxRejected) as info:
        run(rules, f"f.{name}", {"f": lambda x=1: x})
    assert "is never allowed" in str(info.value)


# -- learning --------------------------------------------------------------------------------


def test_needed_rules_names_groups_and_names() -> None:
    from pysandboxes.evaluation import needed_rules

    assert needed_rules("[len(s.upper()) for s in xs if s.__len__()]") == [
        "eval-syntax=comprehension",
        "eval-call=len",
        "eval-attribute=upper",
        "eval-magic=__len__",
    ]
    assert needed_rules("import math\nx = math.pi * 2", "exec") == [
        "eval-syntax=arith, assign, import",
        "eval-import=math",
    ]
