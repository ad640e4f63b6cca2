"""The calculator of the seeds: arithmetic and comparisons, nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from pysandboxes.errors import EvalSyntaxRejected, SandBoxError

CALCULATOR = "eval-namespace=closed\neval-syntax=arith, compare\neval-timeout=2s"


def test_the_calculator_computes(profile: Any, run: Any) -> None:
    calc = profile(CALCULATOR)
    assert run(calc, "2*(3+4)") == 14
    assert run(calc, "1 + 2 * 3") == 7
    assert run(calc, "-7 // 2 % 3 ** 2") == -4 % 9
    assert run(calc, "1 < 2 <= 2 and not 3 == 4") is True
    assert run(calc, "  1.5 * 2") == 3.0  # eval strips leading blanks, as CPython does


@pytest.mark.parametrize(
    ("source", "rule"),
    [
        ("sqrt(16)", "eval-call=sqrt"),
        ("len('abc')", "eval-call=len"),
        ("[x for x in (1, 2)]", "eval-syntax=comprehension"),
        ("(1).real", "eval-attribute=real"),
        ("'a'.upper()", "eval-attribute=upper"),
        ("(1).__class__", "eval-magic=__class__"),
        ("1 if 2 else 3", "eval-syntax=conditional"),
        ("(1, 2)[0]", "eval-syntax=subscript"),
        ("lambda: 1", "eval-syntax=func"),
        ("f'{1}'", "eval-syntax=fstring"),
        ("(x := 1)", "eval-syntax=assign"),
        ("abs(-1)", "eval-call=abs"),
    ],
)
def test_the_calculator_refuses_everything_else(profile: Any, run: Any, source: str, rule: str) -> None:
    with pytest.raises(EvalSyntaxRejected) as info:
        run(profile(CALCULATOR), source)
    assert info.value.rules[0] == rule
    assert str(info.value).splitlines()[1] == f"Add `{rule}` to the rule file to allow it."
    assert isinstance(info.value, SyntaxError) and isinstance(info.value, SandBoxError)
    assert (info.value.filename, info.value.lineno) == ("<eval>", 1)


def test_a_rejection_points_at_the_construct(profile: Any, run: Any) -> None:
    with pytest.raises(EvalSyntaxRejected) as info:
        run(profile(CALCULATOR), "(1 +\n2 * [x for x in ()])")
    e = info.value
    assert (e.lineno, e.offset, e.text) == (2, 5, "2 * [x for x in ()])")
    assert str(e).splitlines()[0] == (
        "ListComp is not allowed in evaluated code at line 2 (eval profile: default)."
    )


def test_every_rule_a_source_needs_is_named(profile: Any, run: Any) -> None:
    with pytest.raises(EvalSyntaxRejected) as info:
        run(profile(CALCULATOR), "[len(s.upper()) for s in xs]")
    assert info.value.rules == ("eval-syntax=comprehension", "eval-call=len", "eval-attribute=upper")
    assert str(info.value).endswith("Also needed: `eval-call=len`, `eval-attribute=upper`.")


def test_a_plain_syntax_error_stays_a_syntax_error(profile: Any, run: Any) -> None:
    with pytest.raises(SyntaxError) as info:
        run(profile(CALCULATOR), "1 +")
    assert not isinstance(info.value, EvalSyntaxRejected)
