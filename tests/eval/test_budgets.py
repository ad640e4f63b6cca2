"""Budgets and the timeout: each fires, names itself, and cannot be swallowed by the
evaluated code; after it fires the work has stopped (same thread, nothing left running)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pysandboxes.errors import EvalInterrupted, EvalSyntaxRejected

LOOPS = "eval-syntax=arith, compare, conditional, loop, assign, func, exception, context, import, comprehension, yield, subscript"
FAST = f"{LOOPS}\neval-timeout=300ms\neval-max-iterations=100_000_000"


def interrupted(
    run: Any, rules: Any, source: str, mode: str = "exec", namespace: Any = None
) -> EvalInterrupted:
    with pytest.raises(EvalInterrupted) as info:
        run(rules, source, {} if namespace is None else namespace, mode)
    return info.value


def test_the_interrupt_is_not_an_exception() -> None:
    assert issubclass(EvalInterrupted, BaseException)
    assert not issubclass(EvalInterrupted, Exception)


def test_the_timeout_fires(profile: Any, run: Any) -> None:
    e = interrupted(run, profile(FAST), "while True:\n    pass")
    assert e.budget == "timeout"
    assert str(e) == (
        "The evaluated code ran longer than eval-timeout=300ms and was interrupted (eval profile: default)."
    )


def test_the_iteration_budget_fires(profile: Any, run: Any) -> None:
    e = interrupted(run, profile(f"{LOOPS}\neval-max-iterations=1000"), "while True:\n    pass")
    assert e.budget == "iterations"
    assert "eval-max-iterations=1000 " in str(e)


def test_comprehension_items_are_counted(profile: Any, run: Any) -> None:
    rules = profile(f"{LOOPS}\neval-max-iterations=100")
    assert run(rules, "[x for x in xs]", {"xs": list(range(50))}) == list(range(50))
    e = interrupted(run, rules, "[x for x in xs]", "eval", {"xs": list(range(500))})
    assert e.budget == "iterations"


def test_the_call_depth_budget_fires(profile: Any, run: Any) -> None:
    rules = profile(f"{LOOPS}\neval-max-call-depth=5")
    namespace: dict[str, Any] = {}
    run(rules, "def f(n):\n    return n if n == 0 else f(n - 1)\nr = f(4)", namespace, "exec")
    assert namespace["r"] == 0
    e = interrupted(run, rules, "def f(n):\n    return f(n + 1)\nf(0)")
    assert e.budget == "call-depth"


def test_lambdas_are_charged_too(profile: Any, run: Any) -> None:
    rules = profile(f"{LOOPS}\neval-max-call-depth=5")
    e = interrupted(run, rules, "f = lambda g, n: g(g, n + 1)\nf(f, 0)")
    assert e.budget == "call-depth"


def test_deep_recursion_is_bounded_by_default(profile: Any, run: Any) -> None:
    e = interrupted(run, profile(LOOPS), "def f():\n    return f()\nf()")
    assert e.budget == "call-depth"


@pytest.mark.parametrize(
    "source",
    [
        "10**10**10",
        "2 ** 100_000_000",
        "'a' * 10**10",
        "b'a' * 10**10",
        "[0] * 10**9",
        "10**10 * 'ab'",
        "1 << 10**9",
        "'%*d' % (10**9, 1)",
        "'%1000000000d' % 1",
        "f'{1:>{10**10}}'",
        "f'{1.5:.999999999f}'",
    ],
)
def test_allocation_bombs_are_bounded(profile: Any, run: Any, source: str) -> None:
    e = interrupted(run, profile(f"{LOOPS}\neval-syntax=fstring"), source, "eval")
    assert e.budget == "alloc"
    assert "eval-max-alloc=10MB" in str(e)


@pytest.mark.parametrize(
    "source",
    [
        "s = 'ab'\nfor i in range(40):\n    s = s + s",
        "s = ['x']\nfor i in range(40):\n    s += s",
        "s = 'x'\nwhile True:\n    s *= 2",
        "x = [1]\nx[0] = 'ab'\nfor i in range(40):\n    x[0] += x[0]",
        "'a'.ljust(10**10)",
        "('a' * 1000).replace('', 'b' * 100_000)",
        "format(1, '>10000000000')",
        "bytes(10**10)",
        "sum(range(10**12))",
    ],
)
def test_growth_through_loops_and_builtins_is_bounded(profile: Any, run: Any, source: str) -> None:
    rules = profile(f"{LOOPS}\neval-call=range, format, bytes, sum\neval-attribute=ljust, replace")
    e = interrupted(run, rules, source)
    assert e.budget in ("alloc", "iterations")


def test_the_node_budget_is_checked_before_running(profile: Any, run: Any) -> None:
    rules = profile("eval-syntax=arith\neval-max-nodes=50")
    assert run(rules, "+".join(["1"] * 20)) == 20
    with pytest.raises(EvalSyntaxRejected) as info:
        run(rules, "+".join(["1"] * 40))
    assert str(info.value).startswith("The source has 80 syntax nodes, more than eval-max-nodes=50 ")


def test_the_depth_budget_is_checked_before_running(profile: Any, run: Any) -> None:
    rules = profile("eval-syntax=arith\neval-max-depth=6")
    assert run(rules, "[[[1]]]") == [[[1]]]
    with pytest.raises(EvalSyntaxRejected) as info:
        run(rules, "[[[[[[[[1]]]]]]]]")
    assert "more than eval-max-depth=6" in str(info.value)


def test_the_leaked_thread_budget(profile: Any, run: Any) -> None:
    stop = threading.Event()

    def start() -> None:
        threading.Thread(target=stop.wait, daemon=True).start()

    try:
        rules = profile("eval-call=start\neval-max-leaked-threads=0")
        e = interrupted(run, rules, "start()", "eval", {"start": start})
        assert e.budget == "leaked-threads"
    finally:
        stop.set()


# -- the interrupt cannot be swallowed ---------------------------------------------------------

SWALLOWERS = {
    "except BaseException": "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
    "bare except": "while True:\n    try:\n        while True:\n            pass\n    except:\n        pass",
    "except star": "try:\n    while True:\n        pass\nexcept* BaseException:\n    pass\nr = 1",
    "finally loop": "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass",
    "finally return": "def f():\n    try:\n        while True:\n            pass\n    finally:\n        return 1\nr = f()",
    "suppress": "from contextlib import suppress\nwith suppress(BaseException):\n    while True:\n        pass\nr = 1",
    "generator": (
        "def g():\n    while True:\n        try:\n            while True:\n                pass\n"
        "        except BaseException:\n            yield 1\nfor _ in g():\n    pass"
    ),
    "generator finally": (
        "def g():\n    try:\n        yield 1\n    finally:\n        while True:\n            pass\nit = g()\nnext(it)\nit.close()\nr = 1"
    ),
}


@pytest.mark.parametrize("source", list(SWALLOWERS.values()), ids=list(SWALLOWERS))
def test_the_interrupt_cannot_be_swallowed(profile: Any, run: Any, source: str) -> None:
    rules = profile(
        f"{FAST}\neval-syntax=TryStar\neval-import=contextlib\neval-call=next\neval-attribute=close"
    )
    namespace: dict[str, Any] = {}
    started = time.monotonic()
    e = interrupted(run, rules, source, "exec", namespace)
    assert e.budget == "timeout"
    assert time.monotonic() - started < 20  # generous: it stops soon after the 0.3 s timeout
    assert "r" not in namespace or namespace.get("r") == 1  # what ran before the end may stay


def test_host_code_catching_exception_does_not_swallow_it(profile: Any, run: Any) -> None:
    rules = profile(FAST)
    with pytest.raises(EvalInterrupted):
        try:
            run(rules, "while True:\n    pass", {}, "exec")
        except Exception:
            pytest.fail("EvalInterrupted is not an Exception")


def test_after_the_timeout_the_cpu_work_stops(profile: Any, run: Any) -> None:
    threads = threading.active_count()
    interrupted(run, profile(FAST), "while True:\n    x = [1] * 10")
    assert threading.active_count() == threads  # no worker thread was started or left behind
    before = time.process_time()
    time.sleep(0.5)
    assert time.process_time() - before < 0.25  # generous: nothing burns the CPU any more


def test_an_interrupted_evaluation_stays_dead(profile: Any, run: Any) -> None:
    namespace: dict[str, Any] = {}
    source = "def f():\n    while True:\n        pass\ndef g():\n    return 1\nf()"
    interrupted(run, profile(FAST), source, "exec", namespace)
    with pytest.raises(EvalInterrupted):
        namespace["g"]()  # its functions re-raise: the sticky interrupt


def test_functions_called_later_get_a_fresh_budget(profile: Any, run: Any) -> None:
    namespace: dict[str, Any] = {}
    rules = profile(f"{LOOPS}\neval-timeout=300ms")
    run(rules, "def count(n):\n    i = 0\n    while i < n:\n        i += 1\n    return i", namespace, "exec")
    time.sleep(0.4)  # longer than the timeout: the evaluation itself is long over
    assert namespace["count"](1000) == 1000
    assert namespace["count"](10) == 10
    with pytest.raises(EvalInterrupted) as info:
        namespace["count"](10**12)
    assert info.value.budget in ("timeout", "iterations")


def test_regular_expressions_that_backtrack_are_refused(profile: Any, run: Any) -> None:
    rules = profile(f"{LOOPS}\neval-import=re\neval-attribute=group")
    assert run(rules, "import re\nr = re.match('a+b', 'aab').group(0)", ns := {}, "exec") is None
    assert ns["r"] == "aab"
    for pattern in ("(a+)+b", "(a|aa)*c", "(a*)*b", r"(x)\1"):
        with pytest.raises(EvalSyntaxRejected) as info:
            run(rules, f"import re\nre.match({pattern!r}, 'a' * 30)", {}, "exec")
        assert "regular expression" in str(info.value)
    with pytest.raises(EvalSyntaxRejected):
        run(rules, "import re\nre.compile('a').search('a' * 200_000)", {}, "exec")
