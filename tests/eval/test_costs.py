"""One operation on big integers runs in C, where no tick reaches: its cost is estimated from
the operands' bit lengths and held against what is left of ``eval-timeout`` before it runs.
An operation that could not finish in time is refused (``EvalInterrupted``, budget
``timeout``, the message naming the operation and its operand sizes); the same source on
moderate operands evaluates to what plain Python computes."""

from __future__ import annotations

import math
import re
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from pysandboxes.errors import EvalInterrupted

CALCULATOR = "eval-namespace=closed\neval-syntax=arith, compare\neval-timeout=2s"
ISSUE = "7**1500000 * 7**1500000 // (7**1500000 + 1)"
#: where it stops: the product (here), the division on a faster machine, the second power on a
#: slower or busier one (the first, estimated at 0.64 s, always fits in the 2 s)
ISSUE_OPERATIONS = (
    "`*` of a 4211033-bit integer by a 4211033-bit integer",
    "`//` of a 8422065-bit integer by a 4211033-bit integer",
    "`**` of a 3-bit integer to the power 1500000",
)
WIDE = """
eval-syntax=arith, compare, assign, subscript, comprehension, func, class, import, loop, exception
eval-call=divmod, pow, round, getattr, int, str, super, range, math.prod
eval-import=math, operator, functools
eval-magic=__floordiv__, __rfloordiv__, __mul__, __pow__, __round__
eval-attribute=half, format, n
"""
#: the operators, 1 s; the linear ones (a shift, a repetition) can only outlast 1 ms
SLOW = f"{WIDE}\neval-timeout=1s"
FAST = f"{WIDE}\neval-timeout=1ms"

REFUSAL = re.compile(
    r"The evaluated code was interrupted before (?P<operation>.+): it would take about \S+, "
    r"more than is left of eval-timeout=(?P<timeout>\S+) \(eval profile: default\)\."
)


def ones(bits: int) -> int:
    """An integer of exactly ``bits`` bits, made in linear time."""
    return (1 << bits) - 1


def refusal(run: Any, rules: Any, source: str, namespace: dict[str, Any], mode: str = "exec") -> str:
    """The operation a cost refusal names (the message is checked whole)."""
    with pytest.raises(EvalInterrupted) as info:
        run(rules, source, namespace, mode)
    assert info.value.budget == "timeout"
    found = REFUSAL.fullmatch(str(info.value))
    assert found is not None, str(info.value)
    return found["operation"]


def box(n: int) -> SimpleNamespace:
    """An object whose attribute ``n`` an augmented assignment can update."""
    return SimpleNamespace(n=n)


def plain(source: str, namespace: dict[str, Any]) -> Any:
    """What plain Python computes for ``source`` (its ``r``)."""
    scope = {"math": math, "box": box, **namespace}
    exec(source, scope)
    return scope["r"]


def div(bits: int, by: int) -> str:
    return f"of a {bits}-bit integer by a {by}-bit integer"


#: operands refused, operands that pass (a and b)
PRODUCT = ({"a": ones(6_000_000), "b": ones(6_000_000)}, {"a": ones(300_000), "b": ones(300_000)})
QUOTIENT = ({"a": ones(3_000_000), "b": ones(1_500_000)}, {"a": ones(200_000), "b": ones(100_000)})
POWER = ({"a": 7, "b": 5_000_000}, {"a": 7, "b": 100_000})
TIMES = f"`*` {div(6_000_000, 6_000_000)}"
OVER = f"`//` {div(3_000_000, 1_500_000)}"
MODULO = f"`%` {div(3_000_000, 1_500_000)}"
RAISED = "`**` of a 3-bit integer to the power 5000000"
REPEATED = "an operation making 5000000 bytes"
PROD = "`math.prod()` of 2 integers making 12000001 bits"

# fmt: off
#: id -> (rules, source setting r, operands refused, operands that pass, the refused operation)
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, Any], str]] = {
    "mul": (SLOW, "r = a * b", *PRODUCT, TIMES),
    "floordiv": (SLOW, "r = a // b", *QUOTIENT, OVER),
    "mod": (SLOW, "r = a % b", *QUOTIENT, MODULO),
    "pow": (SLOW, "r = a ** b", *POWER, RAISED),
    "lshift": (FAST, "r = a << b", {"a": 1, "b": 50_000_000}, {"a": 1, "b": 1000},
               "`<<` of a 1-bit integer by 50000000 bits"),
    "str repetition": (FAST, "r = s * n", {"s": "ab", "n": 2_500_000}, {"s": "ab", "n": 1000}, REPEATED),
    "bytes repetition": (FAST, "r = n * s", {"s": b"ab", "n": 2_500_000}, {"s": b"ab", "n": 1000}, REPEATED),
    "augmented *=": (SLOW, "r = a\nr *= b", *PRODUCT, TIMES),
    "augmented //=": (SLOW, "r = a\nr //= b", *QUOTIENT, OVER),
    "augmented **=": (SLOW, "r = a\nr **= b", *POWER, RAISED),
    "augmented attribute **=": (SLOW, "o = box(a)\no.n **= b\nr = o.n", *POWER, RAISED),
    "augmented item %=": (SLOW, "r = [a]\nr[0] %= b\nr = r[0]", *QUOTIENT, MODULO),
    "comprehension": (SLOW, "r = [x // b for x in (a,)]", *QUOTIENT, OVER),
    "lambda": (SLOW, "r = (lambda x, y: x // y)(a, b)", *QUOTIENT, OVER),
    "divmod": (SLOW, "r = divmod(a, b)", *QUOTIENT, f"`divmod()` {div(3_000_000, 1_500_000)}"),
    "pow with a modulus": (SLOW, "r = pow(3, e, m)", {"e": ones(16_000_000), "m": ones(64)},
                           {"e": 10**6, "m": 2**61 - 1},
                           "`pow()` of a 2-bit integer to a 16000000-bit exponent modulo a 64-bit integer"),
    "round to tens": (SLOW, "r = round(a, -k)", {"a": 5, "k": 10_000_000}, {"a": 12345, "k": 2},
                      "`round()` of a 3-bit integer to -10000000 digits"),
    "method": (SLOW, "r = a.__floordiv__(b)", *QUOTIENT, OVER),
    "reflected method": (SLOW, "r = b.__rfloordiv__(a)", *QUOTIENT, OVER),
    "unbound method": (SLOW, "r = int.__floordiv__(a, b)", *QUOTIENT, OVER),
    "method by getattr": (SLOW, "r = getattr(a, '__floordiv__')(b)", *QUOTIENT, OVER),
    "method through super": (
        SLOW, "class I(int):\n    def half(self, o):\n        return super().__floordiv__(o)\nr = I(a).half(b)",
        *QUOTIENT, OVER,
    ),
    "operator module": (SLOW, "import operator\nr = operator.floordiv(a, b)", *QUOTIENT, OVER),
    "operator member imported": (SLOW, "from operator import mul\nr = mul(a, b)", *PRODUCT, TIMES),
    "operator dunder alias": (SLOW, "import operator\nr = operator.__mul__(a, b)", *PRODUCT, TIMES),
    "reduce": (SLOW, "import functools, operator\nr = functools.reduce(operator.floordiv, [a, b])", *QUOTIENT, OVER),
    "math.prod": (SLOW, "import math\nr = math.prod([a, b])", *PRODUCT, PROD),
    "math.prod granted by eval-call": (SLOW, "r = math.prod([a, b])", *PRODUCT, PROD),
    "math.factorial": (SLOW, "from math import factorial\nr = factorial(n)", {"n": 500_000}, {"n": 1000},
                       "`math.factorial()` of a 19-bit integer"),
    "math.comb": (SLOW, "import math\nr = math.comb(n, k)", {"n": 2 * 10**6, "k": 2 * 10**5}, {"n": 100, "k": 50},
                  "`math.comb()` of a 21-bit integer and 200000"),
    "math.perm": (SLOW, "import math\nr = math.perm(n, k)", {"n": 4 * 10**6, "k": 4 * 10**5}, {"n": 100, "k": 50},
                  "`math.perm()` of a 22-bit integer and 400000"),
    "math.isqrt": (SLOW, "import math\nr = math.isqrt(a)", {"a": ones(3_000_000)}, {"a": ones(200_000)},
                   "`math.isqrt()` of a 3000000-bit integer"),
    "math.gcd": (SLOW, "import math\nr = math.gcd(a, b)", {"a": ones(3_000_000), "b": 3**600_000},
                 {"a": ones(20_000), "b": 3**6000}, "`math.gcd()` of integers of up to 3000000 bits"),
    "math.lcm": (SLOW, "import math\nr = math.lcm(a, b)", {"a": ones(3_000_000), "b": 3**600_000},
                 {"a": ones(20_000), "b": 3**6000}, "`math.lcm()` of integers of up to 3000000 bits"),
    "% formatting": (SLOW, "r = ('%d' * n) % ((x,) * n)", {"x": 10**4000, "n": 20_000},
                     {"x": 10**4000, "n": 2}, "`%` formatting 20000 fields with integers of up to 13288 bits"),
}
# fmt: on


@pytest.mark.parametrize("case", list(CASES))
def test_an_operation_too_costly_for_the_time_left_is_refused(profile: Any, run: Any, case: str) -> None:
    rules, source, refused, _passing, operation = CASES[case]
    assert refusal(run, profile(rules), source, {"box": box, **refused}) == operation


@pytest.mark.parametrize("case", list(CASES))
def test_the_same_operation_on_moderate_operands_evaluates(profile: Any, run: Any, case: str) -> None:
    rules, source, _refused, passing, _operation = CASES[case]
    namespace = {"box": box, **passing}
    run(profile(rules), source, namespace, "exec")
    assert namespace["r"] == plain(source, passing)


def test_the_issue_expression_is_refused_before_it_runs(profile: Any, run: Any) -> None:
    assert refusal(run, profile(CALCULATOR), ISSUE, {}, "eval") in ISSUE_OPERATIONS


def test_the_issue_expression_on_moderate_numbers_evaluates(profile: Any, run: Any) -> None:
    source = ISSUE.replace("1500000", "1500")
    assert run(profile(CALCULATOR), source) == 7**1500 * 7**1500 // (7**1500 + 1)


@pytest.mark.parametrize(
    "source",
    [
        "2**100",
        "10**50 // 7",
        "(10**999 + 7) * (10**999 + 9) % 1000000007",
        "-(3**4000) // 7**1000",
        "2**1_000_000 % 1000003",
        "1 << 100_000",
        "7**100_000 // 3**50_000 % 10",
    ],
)
def test_calculator_use_is_not_refused(profile: Any, run: Any, source: str) -> None:
    assert run(profile(CALCULATOR), source) == eval(source)


@pytest.mark.parametrize(
    "source",
    [
        "import math\nr = math.comb(10**400, 2)",
        "import math\nr = math.perm(10**6, 10**7)",
        "import math\nr = math.gcd(10**4000, 6**3000)",
        "import math\nr = math.isqrt(10**4000)",
        "r = pow(7, 10**100, 2**521 - 1)",
    ],
)
def test_cheap_calls_on_big_arguments_are_not_refused(profile: Any, run: Any, source: str) -> None:
    namespace: dict[str, Any] = {}
    run(profile(SLOW), source, namespace, "exec")
    assert namespace["r"] == plain(source, {})


def test_a_factorial_loop_of_modest_size_runs(profile: Any, run: Any) -> None:
    namespace: dict[str, Any] = {}
    run(profile(SLOW), "r = 1\nfor i in range(1, 3001):\n    r *= i", namespace, "exec")
    assert namespace["r"] == math.factorial(3000)


def test_a_refusal_cannot_be_swallowed(profile: Any, run: Any) -> None:
    source = "try:\n    r = a // b\nexcept BaseException:\n    r = 0"
    namespace = {"a": ones(3_000_000), "b": ones(1_500_000)}
    with pytest.raises(EvalInterrupted) as info:
        run(profile(SLOW), source, namespace, "exec")
    assert info.value.budget == "timeout"
    assert str(info.value).startswith(
        f"The evaluated code was interrupted before `//` {div(3_000_000, 1_500_000)}"
    )


def test_a_function_the_host_calls_later_is_checked_too(profile: Any, run: Any) -> None:
    namespace: dict[str, Any] = {}
    run(profile(SLOW), "def half(x, y):\n    return x // y", namespace, "exec")
    assert namespace["half"](ones(200_000), ones(100_000)) == ones(200_000) // ones(100_000)
    with pytest.raises(EvalInterrupted) as info:
        namespace["half"](ones(3_000_000), ones(1_500_000))
    assert REFUSAL.fullmatch(str(info.value))


# -- integers and decimal text -------------------------------------------------------------------


def test_int_and_str_conversions_stay_within_cpythons_limit(profile: Any, run: Any) -> None:
    rules = profile(SLOW)
    assert run(rules, "str(10**4000)", {}, "eval") == "1" + "0" * 4000
    assert run(rules, "int('9' * 4000)", {}, "eval") == int("9" * 4000)
    for source in ("str(10**5000)", "int('9' * 5000)"):
        with pytest.raises(ValueError, match="Exceeds the limit"):
            run(rules, source, {}, "eval")


@pytest.fixture
def str_digits_limit() -> Any:
    """``set(n)`` changes CPython's int/str conversion limit for the test."""
    before = sys.get_int_max_str_digits()
    yield sys.set_int_max_str_digits
    sys.set_int_max_str_digits(before)


def test_code_that_converts_does_not_run_with_cpythons_limit_off(
    profile: Any, run: Any, str_digits_limit: Any
) -> None:
    rules = profile(SLOW)
    str_digits_limit(0)
    with pytest.raises(EvalInterrupted) as info:
        run(rules, "str(10**4000)", {}, "eval")
    assert info.value.budget == "timeout"
    assert str(info.value).startswith(
        "The evaluated code was not run: CPython's limit on conversions between integers and "
        "decimal text is off (sys.get_int_max_str_digits())"
    )
    assert run(rules, "10**4000 > 0", {}, "eval") is True  # nothing to convert: it runs
    str_digits_limit(4300)
    assert run(rules, "str(10**4000)", {}, "eval") == "1" + "0" * 4000


def test_str_format_with_many_fields_is_refused(profile: Any, run: Any) -> None:
    rules = profile(SLOW)
    namespace = {"x": 10**4000}
    assert run(rules, "'{0}-{0}'.format(x)", dict(namespace), "eval") == f"{10**4000}-{10**4000}"
    with pytest.raises(EvalInterrupted) as info:
        run(rules, "('{0}' * 20_000).format(x)", dict(namespace), "eval")
    assert REFUSAL.fullmatch(str(info.value))
    assert "`str.format()` of 20000 fields with integers of up to 13288 bits" in str(info.value)


# -- a count is judged once --------------------------------------------------------------------


class Flip:
    """An ``__index__`` that answers ``first`` once, then ``then``."""

    def __init__(self, first: int, then: int) -> None:
        self.answers = [first]
        self.then = then

    def __index__(self) -> int:
        return self.answers.pop() if self.answers else self.then


@pytest.mark.parametrize(
    "source", ["import operator\nr = operator.mul(s, n)", "r = s.__mul__(n)", "r = str.__mul__(s, n)"]
)
def test_a_repetition_count_is_judged_once(profile: Any, run: Any, source: str) -> None:
    rules = profile(SLOW)
    namespace: dict[str, Any] = {"s": "ab", "n": 3}
    run(rules, source, namespace, "exec")
    assert namespace["r"] == "ababab"
    namespace = {"s": "ab", "n": Flip(1, 10**7)}  # 20 MB the second time, past eval-max-alloc
    run(rules, source, namespace, "exec")
    assert namespace["r"] == "ab"


def test_the_digits_of_round_are_judged_once(profile: Any, run: Any) -> None:
    rules = profile(SLOW)
    namespace: dict[str, Any] = {"n": -1}
    run(rules, "r = round(15, n)", namespace, "exec")
    assert namespace["r"] == 20
    namespace = {"n": Flip(-1, -(10**6))}  # 10**1000000 the second time
    run(rules, "r = round(15, n)", namespace, "exec")
    assert namespace["r"] == 20
