"""What one operation on big integers costs, estimated from its operands' sizes before it
runs, so that the eval guard can refuse it when it could not finish within what is left of
``eval-timeout``.

The attack: ``7**1500000 * 7**1500000 // (7**1500000 + 1)`` under ``eval-timeout=2s`` ran
25-46 s. The division is one C call (CPython 3.11 divides in quadratic time) that no tick can
interrupt, and no intermediate is larger than ``eval-max-alloc``. ``int.bit_length()`` costs
nothing, so the price of every superlinear operation is known before it starts.

The model (CPython 3.11, 30-bit digits; ``D`` the longer and ``d`` the shorter operand in
digits, ``K(n) = n**1.585``):

- ``a * b``: Karatsuba, ``D * d**0.585`` (``K(d)`` balanced; a lopsided product is cut into
  ``D/d`` balanced ones), plus a pass over ``D``;
- ``a // b``, ``a % b``, ``divmod``: schoolbook long division, ``q * d`` (``q`` the digits of
  the quotient), plus a pass over the dividend;
- ``a ** e``: a product of two halves of the result (``bits(a) * e`` bits); a
  power of two only shifts;
- ``pow(a, e, m)``: a product and a reduction modulo ``m`` per bit of ``e``;
- ``<<``, repetition and concatenation: linear in the result;
- ``math.factorial``/``perm``/``comb``: a few products of the result's halves (measured);
  ``isqrt``: a division of half the size; ``gcd``/``lcm``: quadratic (Lehmer); ``prod``:
  its products one after the other;
- ``str(int)``/``int(str)``: quadratic in the digits (bounded by CPython's
  ``sys.get_int_max_str_digits()``, see :func:`conversion`).

The constants were measured on the development machine (``python -m
pysandboxes.evaluation.cost`` prints measured and estimated seconds side by side) and are
multiplied by ``MARGIN``: an estimate is about twice what the operation took there. A newer
CPython (3.12 divides and converts huge numbers in subquadratic time) only makes the
estimates more conservative. Functions here are pure and take bit lengths, never the
values themselves.
"""

from __future__ import annotations

import math

#: an estimate is this many times what the operation took on the machine that calibrated it
MARGIN = 2.0
DIGIT_BITS = 30
#: operands (bits, added) below this never get an estimate: the slowest such operation, a
#: division of 16384 bits by 8192, takes about 0.1 ms
SMALL_BITS = 1 << 14
#: a linear operation making more bits than this (1 MB) reads the clock first
LARGE_RESULT_BITS = 1 << 23
#: an estimate below this (seconds) is not held against the clock
QUICK = 50e-6
#: CPython's default ``sys.get_int_max_str_digits()``
DEFAULT_MAX_STR_DIGITS = 4300

_NS = 1e-9 * MARGIN
#: seconds per unit: Karatsuba ``D * d**0.585``; long division ``q * d``, and per digit of
#: the quotient; a pass over one digit; a byte of a repeated or concatenated sequence; the
#: overhead of a step of a modular power
_MUL = 6.0 * _NS
_DIV = 1.3 * _NS
_QUOTIENT = 15.0 * _NS
_PASS = 3.0 * _NS
_BYTE = 0.5 * _NS
_STEP = 60.0 * _NS
#: ``math`` functions, in products of two halves of their result; ``isqrt`` and the
#: conversions per squared digit, ``gcd`` per product of digits
_FACTORIAL, _PERM, _COMB = 2.3, 2.7, 5.7
_ISQRT = 1.0 * _NS
_GCD = 1.3 * _NS
_CONVERT = 1.1 * _NS
#: decimal digits per 30-bit digit
_DECIMAL = DIGIT_BITS * math.log10(2)


def _digits(bits: int) -> int:
    return bits // DIGIT_BITS + 1


def multiply(n: int, m: int) -> float:
    """``a * b`` for operands of ``n`` and ``m`` bits."""
    if not n or not m:
        return 0.0
    big, small = _digits(max(n, m)), _digits(min(n, m))
    return _MUL * big * math.pow(small, 0.585) + _PASS * big


def divide(n: int, m: int) -> float:
    """``a // b``, ``a % b`` or ``divmod(a, b)`` for operands of ``n`` and ``m`` bits."""
    if n < m or not m:
        return 0.0  # the quotient is 0 (or the division fails): no long division
    quotient, divisor = _digits(n - m), _digits(m)
    return (_DIV * divisor + _QUOTIENT) * quotient + _PASS * _digits(n)


def linear(bits: int) -> float:
    """A pass that writes ``bits`` (``<<``, an addition)."""
    return _PASS * _digits(bits)


def sequence(nbytes: int) -> float:
    """Repeating or concatenating sequences into ``nbytes``."""
    return _BYTE * nbytes


def power_bits(n: int, exponent: int) -> int:
    """An upper bound of the bits of ``a ** exponent`` for a base of ``n`` bits."""
    return n * exponent


def power(n: int, exponent: int, two: bool = False) -> float:
    """``a ** exponent`` for a base of ``n`` bits (``two``: a power of two, which only shifts)."""
    result = power_bits(n, exponent)
    if two:  # squarings of one digit followed by zeros: passes over the result
        return 15 * linear(result)
    half = result // 2
    return multiply(half, half) + linear(result)


def modular_power(n: int, e: int, m: int) -> float:
    """``pow(a, b, mod)`` for ``a``, ``b`` and ``mod`` of ``n``, ``e`` and ``m`` bits."""
    step = 0.75 * (multiply(m, m) + divide(2 * m, m)) + _STEP
    return divide(n, m) + max(e, 1) * step


def result_bits(op: str, n: int, m: int) -> int:
    """The bits an integer operator makes from operands of ``n`` and ``m`` bits (``m``: the
    exponent of ``**``, the shift of ``<<``); a division makes no more than it has."""
    if op == "*":
        return n + m if n and m else 0
    if op == "**":
        return power_bits(n, m)
    if op == "<<":
        return n + m
    return 0


def operator(op: str, n: int, m: int, two: bool = False) -> float:
    """The seconds of an integer operator (``*``, ``**``, ``<<``, a division), or 0.0 when it
    is too small to be worth the clock. Call only after ``result_bits`` was found bounded."""
    if op == "*":
        return multiply(n, m) if n + m > SMALL_BITS else 0.0
    if op == "**":
        return power(n, m, two) if power_bits(n, m) > SMALL_BITS else 0.0
    if op == "<<":
        return linear(n + m) if n + m > LARGE_RESULT_BITS else 0.0
    return divide(n, m) if n > SMALL_BITS else 0.0


def factorial_bits(n: int) -> float:
    """The bits of ``n!`` (a float: ``inf`` beyond what a float holds)."""
    if n < 2:
        return 1.0
    if n.bit_length() > 1000:
        return math.inf
    return math.lgamma(n + 1) / math.log(2)


def perm_bits(n: int, k: int) -> float:
    """The bits of ``n! / (n - k)!`` (0 when ``k > n``: CPython answers 0 at once)."""
    if k <= 0 or n <= 0 or k > n:
        return 1.0
    if n.bit_length() > 1000:  # beyond lgamma: at most k factors of n's size
        return float(k * n.bit_length()) if k.bit_length() < 1000 else math.inf
    return (math.lgamma(n + 1) - math.lgamma(n - k + 1)) / math.log(2)


def _products(times: float, result_bits: float) -> float:
    if result_bits == math.inf:
        return math.inf
    half = int(result_bits) // 2
    return times * multiply(half, half) + linear(int(result_bits))


def factorial(n: int) -> float:
    return _products(_FACTORIAL, factorial_bits(n))


def perm(n: int, k: int) -> float:
    return _products(_PERM, perm_bits(n, k))


def comb(n: int, k: int) -> float:
    """``math.comb(n, k)``: CPython works with ``min(k, n - k)``, through partial products."""
    k = min(k, n - k)
    return _products(_COMB, perm_bits(n, k))


def isqrt(n: int) -> float:
    half = _digits(n) / 2
    return _ISQRT * half * half + linear(n)


def gcd(n: int, m: int) -> float:
    return _GCD * _digits(n) * _digits(m) + linear(max(n, m))


def conversion(decimal_digits: int) -> float:
    """``str()`` of an integer of ``decimal_digits`` digits, or ``int()`` of such a string."""
    d = decimal_digits / _DECIMAL + 1
    return _CONVERT * d * d


def max_str_digits(timeout: float) -> int:
    """The largest ``sys.get_int_max_str_digits()`` under which one conversion fits in
    ``timeout`` (CPython's default always does)."""
    d = (timeout / _CONVERT) ** 0.5 - 1
    return max(DEFAULT_MAX_STR_DIGITS, int(d * _DECIMAL))


def describe(op: str, sizes: tuple[int, ...]) -> str:
    """The refused operation, for the message: the operator or function and its sizes."""
    if op == "pow()":
        return "`pow()` of a {}-bit integer to a {}-bit exponent modulo a {}-bit integer".format(*sizes)
    if op == "**":
        return "`**` of a {}-bit integer to the power {}".format(*sizes)
    if op == "<<":
        return "`<<` of a {}-bit integer by {} bits".format(*sizes)
    if op == "%-format":
        return "`%` formatting {} fields with integers of up to {} bits".format(*sizes)
    if op == "{}-format":
        return "`str.format()` of {} fields with integers of up to {} bits".format(*sizes)
    if op in ("math.factorial()", "math.isqrt()"):
        return f"`{op}` of a {sizes[0]}-bit integer"
    if op in ("math.comb()", "math.perm()"):
        return "`{}` of a {}-bit integer and {}".format(op, *sizes)
    if op in ("math.gcd()", "math.lcm()"):
        return f"`{op}` of integers of up to {sizes[0]} bits"
    if op == "math.prod()":
        return "`math.prod()` of {1} integers making {0} bits".format(*sizes)
    if op == "round()":
        return "`round()` of a {}-bit integer to {} digits".format(*sizes)
    if op == "bytes":
        return f"an operation making {sizes[0]} bytes"
    return "`{}` of a {}-bit integer by a {}-bit integer".format(op, *sizes)


def seconds(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}s"
    return f"{value:.2g}s" if value >= 1 else f"{value * 1000:.2g}ms"


# -- calibration ------------------------------------------------------------------------------


def _calibrate() -> None:  # pragma: no cover - a one-off measurement, run by hand
    """Print measured and estimated seconds of each operation (best of three)."""
    import time

    def best(f: object) -> float:
        times = []
        for _ in range(3):
            start = time.perf_counter()
            f()  # type: ignore[operator]
            times.append(time.perf_counter() - start)
        return min(times)

    def ones(bits: int) -> int:
        return (1 << bits) - 12345

    cases: list[tuple[str, object, float]] = []
    for n, m in ((300_000, 300_000), (3_000_000, 3_000_000), (3_000_000, 30_000), (3_000_000, 600)):
        a, b = ones(n), ones(m)
        cases.append((f"{n} * {m} bits", lambda a=a, b=b: a * b, multiply(n, m)))
    for n, m in ((200_000, 100_000), (1_000_000, 500_000), (3_000_000, 60_000), (3_000_000, 60)):
        a, b = ones(n), ones(m)
        cases.append((f"{n} // {m} bits", lambda a=a, b=b: a // b, divide(n, m)))
    for base, e in ((7, 500_000), (7, 1_500_000), ((1 << 3000) - 1, 1000), (2, 10_000_000)):
        n = base.bit_length()
        two = base & (base - 1) == 0
        cases.append((f"{n}-bit ** {e}", lambda b=base, e=e: b**e, power(n, e, two)))
    for e, m in ((1000, 2048), (1_000_000, 64), (100, 30_000)):
        x, y = ones(e), ones(m)
        cases.append((f"pow(3, {e} bits, {m} bits)", lambda x=x, y=y: pow(3, x, y), modular_power(2, e, m)))
    for n in (10**5, 3 * 10**5):
        cases.append((f"factorial({n})", lambda n=n: math.factorial(n), factorial(n)))
    for n, k in ((10**6, 10**5), (10**5, 5 * 10**4)):
        cases.append((f"comb({n}, {k})", lambda n=n, k=k: math.comb(n, k), comb(n, k)))
        cases.append((f"perm({n}, {k})", lambda n=n, k=k: math.perm(n, k), perm(n, k)))
    for bits in (1_000_000,):
        x = ones(bits)
        cases.append((f"isqrt({bits} bits)", lambda x=x: math.isqrt(x), isqrt(bits)))
    a, b = 3**200_000, 5**130_000
    cases.append(("gcd(317000, 302000 bits)", lambda: math.gcd(a, b), gcd(a.bit_length(), b.bit_length())))
    print(f"{'operation':<32} {'measured':>10} {'estimated':>10} {'ratio':>6}")
    for label, f, estimate in cases:
        took = best(f)
        print(f"{label:<32} {took:>10.4f} {estimate:>10.4f} {estimate / took:>6.2f}")


if __name__ == "__main__":  # pragma: no cover
    _calibrate()
