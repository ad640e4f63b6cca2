"""What rewritten code calls while it runs: budget ticks, the sticky interrupt, attribute and
size checks, and the builtins an evaluation sees.

Every helper is made from a template below by :func:`prebind` (once per profile, with the
profile's decisions and the C functions it uses) and the maker it returns (per run, with the
evaluation's budget list): a fresh function over globals whose ``__builtins__`` is empty, its
state bound as positional defaults. A run makes only the helpers its code uses. A helper
reached by evaluated code would show nothing it can use: its ``__defaults__``,
``__globals__`` and ``__closure__`` are attributes no rule grants
(``vocab.ALWAYS_DENIED_ATTRIBUTES``), and the helpers' names (``@tick``…) cannot be written
in source.

The budget list of one evaluation (``state``)::

    [0] ticks left (iterations and calls; negative: take the slow path)
    [1] deadline (time.monotonic)
    [2] call depth of functions defined by the evaluated code
    [3] the interrupt that fired, (message, budget), or None: sticky
    [4] True while the entry point runs
    [5] True while a budget window is open (a host calling a function defined by an
        evaluation after it returned opens a fresh window for that call)
"""

from __future__ import annotations

import _string  # type: ignore[import-not-found]
import builtins
import math
import operator
import re
import re._constants  # type: ignore[import-not-found]
import re._parser  # type: ignore[import-not-found]
import sys
import time
from types import CodeType, FrameType, FunctionType, ModuleType, TracebackType

from ..errors import EvalInterrupted, EvalSyntaxRejected
from . import cost
from .profile import Compiled, is_dunder
from .vocab import ALWAYS_DENIED_ATTRIBUTES, NEVER_CALLS, NEVER_IMPORTS, NEVER_MEMBERS, SIZED_METHODS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_GLOBALS: dict[str, Any] = {"__builtins__": {}, "__name__": "pysandboxes.evaluation"}
_SEQUENCES = (str, bytes, bytearray, list, tuple)
_TEXTS = (str, bytes, bytearray)
_SPECIAL_TYPES = frozenset({ModuleType, FrameType, CodeType, TracebackType})

#: C functions that do an operator's work, by identity (``operator.mul`` and its alias
#: ``operator.__mul__``): the operator check they get first
_OPERATOR_CHECKS: dict[Any, str] = {
    operator.mul: "mul",
    operator.imul: "mul",
    operator.pow: "pow",
    operator.ipow: "pow",
    operator.floordiv: "floordiv",
    operator.ifloordiv: "floordiv",
    operator.mod: "mod",
    operator.imod: "mod",
    operator.lshift: "lshift",
    operator.ilshift: "lshift",
    operator.add: "add",
    operator.iadd: "add",
    operator.concat: "add",
    operator.iconcat: "add",
}
#: ``math`` functions whose cost grows faster than their arguments' sizes
_MATH_COSTLY = ("factorial", "comb", "perm", "isqrt", "gcd", "lcm", "prod")
#: id -> (the function, its check): what a guarded attribute read, import or grant wraps
COSTLY: dict[int, tuple[Any, str]] = {id(f): (f, kind) for f, kind in _OPERATOR_CHECKS.items()}
COSTLY.update({id(getattr(math, name)): (getattr(math, name), "math." + name) for name in _MATH_COSTLY})
#: methods of int and the sequences that do an operator's work: the check, and whether the
#: method's own object is the right operand (``a.__rmul__(b)`` is ``b * a``)
_DUNDER_CHECKS = {
    "__mul__": ("mul", False),
    "__rmul__": ("mul", True),
    "__imul__": ("mul", False),
    "__pow__": ("pow", False),
    "__rpow__": ("pow", True),
    "__floordiv__": ("floordiv", False),
    "__rfloordiv__": ("floordiv", True),
    "__mod__": ("mod", False),
    "__rmod__": ("mod", True),
    "__divmod__": ("divmod", False),
    "__rdivmod__": ("divmod", True),
    "__lshift__": ("lshift", False),
    "__rlshift__": ("lshift", True),
    "__add__": ("add", False),
    "__radd__": ("add", True),
    "__iadd__": ("add", False),
    "__round__": ("round", False),
}
_DUNDER_TYPES = (int, str, bytes, bytearray, list, tuple)
#: attribute names under which those functions and methods are found: an attribute read of
#: one of them goes through the run's guard (any other name costs nothing more)
COSTLY_NAMES = (
    frozenset(_DUNDER_CHECKS)
    | frozenset(n for n in dir(operator) if id(getattr(operator, n)) in COSTLY)
    | frozenset(_MATH_COSTLY)
)
_SPECIAL_NAMES = frozenset({"format", "format_map"}) | SIZED_METHODS | COSTLY_NAMES
#: how often a tick reads the clock (a power of two, minus one)
CLOCK_EVERY = 15

_BINDERS: dict[Callable[..., Any], tuple[CodeType, tuple[str, ...], tuple[Any, ...]]] = {}


def prebind(template: Callable[..., Any], **fixed: Any) -> Callable[..., Callable[..., Any]]:
    """A maker of copies of ``template`` over empty globals: the defaults of its ``_x``
    parameters come from ``fixed`` (once) and from the maker's arguments (per copy: what a
    run binds, its budget list). Making a copy costs a list copy and a FunctionType."""
    binder = _BINDERS.get(template)
    if binder is None:
        assert isinstance(template, FunctionType) and not template.__code__.co_freevars
        code = template.__code__
        names = code.co_varnames[: code.co_argcount]
        old = template.__defaults__ or ()
        binder = (code, names[len(names) - len(old) :], old)
        _BINDERS[template] = binder
    code, names, old = binder
    base = [fixed.get(n) if n.startswith("_") else old[i] for i, n in enumerate(names)]
    slots = tuple((i, n) for i, n in enumerate(names) if n.startswith("_") and n not in fixed)
    name, qualname = template.__name__, template.__qualname__

    def make(**bound: Any) -> Callable[..., Any]:
        defaults = base[:]
        for i, n in slots:
            defaults[i] = bound[n]
        made = FunctionType(code, _GLOBALS, name, tuple(defaults))
        made.__qualname__ = qualname
        return made

    return make


def bind(template: Callable[..., Any], **bound: Any) -> Callable[..., Any]:
    """A copy of ``template`` over empty globals, its ``_x`` parameters' defaults from ``bound``."""
    return prebind(template, **bound)()


class _Lazy(dict):  # type: ignore[type-arg]
    """Helpers made on first use (a run binds only the operators its code reaches)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[str], Any]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: str) -> Any:
        value = self[key] = self.make(key)
        return value


# -- messages -----------------------------------------------------------------------------


def duration(seconds: float) -> str:
    return f"{seconds * 1000:g}ms" if seconds < 1 else f"{seconds:g}s"


def size(n: int) -> str:
    for unit, factor in (("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if n >= factor and n % factor == 0:
            return f"{n // factor}{unit}"
    return str(n)


def budget_messages(rules: Compiled) -> dict[str, str]:
    p = rules.profile
    where = f"(eval profile: {rules.label})"
    return {
        "timeout": f"The evaluated code ran longer than eval-timeout={duration(p.timeout)} and was "
        f"interrupted {where}.",
        "iterations": f"The evaluated code exceeded eval-max-iterations={p.max_iterations} (loop "
        f"iterations, comprehension items, calls and range() lengths) and was interrupted {where}.",
        "call-depth": f"The evaluated code nested its own functions deeper than "
        f"eval-max-call-depth={p.max_call_depth} and was interrupted {where}.",
        "alloc": f"The evaluated code would allocate more than eval-max-alloc={size(p.max_alloc)} "
        f"and was interrupted {where}.",
        "leaked-threads": f"The evaluated code left more than eval-max-leaked-threads="
        f"{p.max_leaked_threads} threads running {where}.",
    }


def refusal(rules: Compiled, what: str, rule: str = "") -> EvalSyntaxRejected:
    hint = f"Add `{rule}` to the rule file to allow it." if rule else "No eval-* rule allows it."
    return EvalSyntaxRejected(
        f"{what[0].upper()}{what[1:]} is denied by the eval guard (eval profile: {rules.label}).\n{hint}",
        None,
        (rule,) if rule else (),
        rules.profile.name,
    )


# -- budget templates -----------------------------------------------------------------------


def _fire(message, budget, _s=None, _Interrupted=None):  # type: ignore[no-untyped-def]
    _s[3] = (message, budget)
    _s[0] = -(1 << 62)
    raise _Interrupted(message, budget)


def _slow(_s=None, _clock=None, _max=0, _timeout=0.0, _fire=None, _Interrupted=None, _m_it="", _m_time=""):  # type: ignore[no-untyped-def]
    fired = _s[3]
    if fired is not None:
        raise _Interrupted(fired[0], fired[1])
    if not _s[5]:  # a host calls evaluated code after the evaluation: a fresh window
        _s[5] = True
        _s[1] = _clock() + _timeout
        _s[0] = _max
        return
    if _s[0] < 0:
        _fire(_m_it, "iterations")
    if _clock() > _s[1]:
        _fire(_m_time, "timeout")


def _tick(_s=None, _slow=None, _every=15):  # type: ignore[no-untyped-def]
    n = _s[0] - 1
    _s[0] = n
    if n < 0 or not n & _every:
        _slow()
    return True


def _enter(_s=None, _slow=None, _every=15, _max_depth=0, _fire=None, _m_depth=""):  # type: ignore[no-untyped-def]
    depth = _s[2] + 1
    _s[2] = depth
    n = _s[0] - 1
    _s[0] = n
    if n < 0 or not n & _every:
        _slow()
    if depth > _max_depth:
        _fire(_m_depth, "call-depth")


def _leave(_s=None, _Interrupted=None):  # type: ignore[no-untyped-def]
    depth = _s[2] - 1
    _s[2] = depth
    if depth <= 0 and not _s[4]:  # the host's call of an evaluated function returns
        _s[2] = 0
        _s[5] = False
        fired = _s[3]
        if fired is not None:
            raise _Interrupted(fired[0], fired[1])
        _s[0] = -1


def _check(_s=None, _Interrupted=None, _current=None, _isinstance=None):  # type: ignore[no-untyped-def]
    # An interrupt raised by a shared wrapper (a sized str method, a format spec) becomes
    # sticky when evaluated code catches it. Outside a run or a window (a finished
    # evaluation's generator closed by the garbage collector) there is nothing to stop.
    handled = _current()
    if _isinstance(handled, _Interrupted) and _s[3] is None:
        _s[3] = (handled.message, handled.budget)
        _s[0] = -(1 << 62)
    fired = _s[3]
    if fired is not None and (_s[4] or _s[5]):
        raise _Interrupted(fired[0], fired[1])


def _fn(f, _enter=None, _leave=None):  # type: ignore[no-untyped-def]
    def charged(*args, **kwargs):  # type: ignore[no-untyped-def]
        try:
            _enter()
            return f(*args, **kwargs)
        finally:
            _leave()

    charged.__name__ = charged.__qualname__ = f.__name__
    return charged


# -- sizes and costs ------------------------------------------------------------------------
#
# An operation on big integers runs in C, where no tick reaches: ``_afford`` refuses it before
# it starts when its estimated time (``cost.py``, from bit lengths: ``int.bit_length`` is
# called unbound, so a subclass cannot lie about its size) exceeds what is left of the
# timeout. Operands smaller than ``_gate`` bits in all skip ``_big``, and ``_big`` reads the
# clock only when ``cost.operator`` finds them worth it. A template bound with
# ``_op=_ignore`` only checks: it guards a method or a function that does
# the operation itself (``int.__mul__``, ``operator.mul``).


def _ignore(a, b):  # type: ignore[no-untyped-def]
    return None


def _afford(  # type: ignore[no-untyped-def]
    seconds,
    op,
    sizes,
    bits=0,
    _s=None,
    _clock=None,
    _timeout=0.0,
    _limit=0,
    _fire=None,
    _Interrupted=None,
    _m="",
    _refused=None,
):  # type: ignore[no-untyped-def]
    if bits > 8 * _limit:
        _fire(_m, "alloc")
    running = _s[4] or _s[5]
    left = _s[1] - _clock() if running else _timeout  # outside a run: a fresh window's worth
    if seconds > left:  # past the deadline too: the message names what was not run
        message = _refused(op, sizes, seconds)
        if running:
            _fire(message, "timeout")
        raise _Interrupted(message, "timeout")


def _big(op, n, m, two=False, _limit=0, _fire=None, _m="", _afford=None, _result=None, _seconds=None):  # type: ignore[no-untyped-def]
    # an integer operator whose operands passed the gate: what it makes, then what it costs
    if _result(op, n, m) > 8 * _limit:
        _fire(_m, "alloc")
    seconds = _seconds(op, n, m, two)
    if seconds:
        _afford(seconds, op, (n, m))


def _grow(total, _limit=0, _large=0, _fire=None, _m="", _afford=None, _cost=None):  # type: ignore[no-untyped-def]
    # a sequence repeated or concatenated into ``total`` bytes
    if total > _limit:
        _fire(_m, "alloc")
    if total > _large:
        _afford(_cost(total), "bytes", (total,))


def _unit(seq, _isinstance=None, _texts=None):  # type: ignore[no-untyped-def]
    return 1 if _isinstance(seq, _texts) else 8


def _mul(  # type: ignore[no-untyped-def]
    a,
    b,
    _isinstance=None,
    _int=None,
    _bits=None,
    _gate=0,
    _big=None,
    _seqs=None,
    _index=None,
    _len=None,
    _unit=None,
    _grow=None,
    _op=None,
):  # type: ignore[no-untyped-def]
    if _isinstance(a, _int) and _isinstance(b, _int):
        n = _bits(a)
        m = _bits(b)
        if n + m > _gate:
            _big("*", n, m)
        return _op(a, b)
    if _isinstance(a, _seqs) or _isinstance(b, _seqs):
        first = _isinstance(a, _seqs)
        seq, count = (a, b) if first else (b, a)
        try:
            n = _index(count)
        except TypeError:
            return _op(a, b)  # the operator's own error
        if n > 0:
            _grow(_len(seq) * n * _unit(seq))
        return _op(seq, n) if first else _op(n, seq)
    return _op(a, b)


def _pow(a, b, _isinstance=None, _int=None, _bits=None, _gate=0, _big=None, _op=None):  # type: ignore[no-untyped-def]
    if _isinstance(a, _int) and _isinstance(b, _int) and b > 0 and (a > 1 or a < -1):
        n = _bits(a)
        if n * b > _gate:
            magnitude = a if a > 0 else -a
            _big("**", n, b, not magnitude & (magnitude - 1))
    return _op(a, b)


def _lshift(a, b, _isinstance=None, _int=None, _bits=None, _gate=0, _big=None, _op=None):  # type: ignore[no-untyped-def]
    if _isinstance(a, _int) and _isinstance(b, _int) and a and b > 0:
        n = _bits(a)
        if n + b > _gate:
            _big("<<", n, b)
    return _op(a, b)


def _add(a, b, _isinstance=None, _seqs=None, _len=None, _unit=None, _grow=None, _op=None):  # type: ignore[no-untyped-def]
    if _isinstance(a, _seqs) and _isinstance(b, _seqs):
        _grow((_len(a) + _len(b)) * _unit(a))
    return _op(a, b)


def _floordiv(a, b, _isinstance=None, _int=None, _bits=None, _gate=0, _big=None, _symbol="", _op=None):  # type: ignore[no-untyped-def]
    if _isinstance(a, _int) and _isinstance(b, _int):
        n = _bits(a)
        if n > _gate:
            _big(_symbol, n, _bits(b))
    return _op(a, b)


def _mod(  # type: ignore[no-untyped-def]
    a,
    b,
    _isinstance=None,
    _texts=None,
    _str=None,
    _int=None,
    _bits=None,
    _gate=0,
    _big=None,
    _tuple=None,
    _numbers=None,
    _len=None,
    _limit=0,
    _fire=None,
    _m="",
    _afford=None,
    _conversions=None,
    _op=None,
):  # type: ignore[no-untyped-def]
    if _isinstance(a, _int) and _isinstance(b, _int):
        n = _bits(a)
        if n > _gate:
            _big("%", n, _bits(b))
        return _op(a, b)
    if _isinstance(a, _texts):
        template = a if _isinstance(a, _str) else a.decode("latin-1")
        for digits in _numbers(template):
            if _len(digits) > 18 or _int(digits) > _limit:
                _fire(_m, "alloc")
        if "*" in template:
            for arg in b if _isinstance(b, _tuple) else (b,):
                if _isinstance(arg, _int) and arg > _limit:
                    _fire(_m, "alloc")
        fields = template.count("%")
        if fields > 16:  # many integers turned into decimal text in one C call
            seconds, widest = _conversions(fields, b)
            _afford(seconds, "%-format", (fields, widest))
    return _op(a, b)


def _spec(spec, _numbers=None, _len=None, _int=None, _limit=0, _fire=None, _m=""):  # type: ignore[no-untyped-def]
    for digits in _numbers(spec):
        if _len(digits) > 18 or _int(digits) > _limit:
            _fire(_m, "alloc")


def _fmt(value, conversion, spec, _str=None, _repr=None, _ascii=None, _format=None, _spec=None):  # type: ignore[no-untyped-def]
    if conversion == 115:
        value = _str(value)
    elif conversion == 114:
        value = _repr(value)
    elif conversion == 97:
        value = _ascii(value)
    _spec(spec)
    return _format(value, spec)


def _iop(a, b, op, _ops=None):  # type: ignore[no-untyped-def]
    return _ops[op](a, b)


def _iattr(obj, name, value, op, _chkset=None, _getattr=None, _setattr=None, _iop=None):  # type: ignore[no-untyped-def]
    _chkset(obj)
    _setattr(obj, name, _iop(_getattr(obj, name), value, op))


def _isub(container, key, value, op, _iop=None):  # type: ignore[no-untyped-def]
    container[key] = _iop(container[key], value, op)


# -- attributes -------------------------------------------------------------------------------


def _attr(obj, name, _getattr=None, _type=None, _special_types=None, _special_names=None, _after=None):  # type: ignore[no-untyped-def]
    value = _getattr(obj, name)
    if _type(value) in _special_types or name in _special_names:
        return _after(obj, name, value)
    return value


def _modattr(obj, name, _module=None, _type=None, _getattr=None, _attr=None, _granted=None, _member=None):  # type: ignore[no-untyped-def]
    if _granted(name) or _type(obj) is not _module:
        return _attr(obj, name) if _granted(name) else _member(obj, name, None)
    return _member(obj, name, _getattr(obj, "__name__", ""))


def _chkset(obj, _type=None, _module=None, _refuse=None):  # type: ignore[no-untyped-def]
    if _type(obj) is _module:
        _refuse("changing an attribute of a module", "")
    return obj


def _refuse_template(what, rule, _rules=None, _refusal=None):  # type: ignore[no-untyped-def]
    raise _refusal(_rules, what, rule)


class _Runtime:
    """Builds the helpers of one profile's evaluations (ordinary code: it runs in the host,
    never handed to evaluated code)."""

    def __init__(self, rules: Compiled) -> None:
        self.rules = rules
        self.messages = budget_messages(rules)
        self.limit = rules.profile.max_alloc
        self.numbers = re.compile(r"\d+").findall
        self.refuse = bind(_refuse_template, _rules=rules, _refusal=refusal)
        self.after = self._after_function()
        self.safe_re: ModuleType | None = None
        self.makers = _makers(rules, self)

    # -- run-time attribute decisions (host code: helpers call these bound methods) ----------

    def name_allowed(self, obj: Any, name: Any) -> None:
        """``getattr``/``setattr``/``hasattr`` with a computed name: the rules of a written one."""
        if not isinstance(name, str):
            raise TypeError(f"attribute name must be string, not '{type(name).__name__}'")
        rules = self.rules
        if name in ALWAYS_DENIED_ATTRIBUTES:
            raise refusal(rules, f"the attribute '{name}'")
        if is_dunder(name):
            if not rules.magic(name):
                raise refusal(rules, f"the attribute '{name}'", f"eval-magic={name}")
            return
        if rules.attributes(name):
            return
        if type(obj) is ModuleType:
            self.member(obj, name, getattr(obj, "__name__", ""), read=False)
            return
        raise refusal(rules, f"the attribute '{name}'", f"eval-attribute={name}")

    def member(self, obj: Any, name: str, module: str | None, read: bool = True) -> Any:
        """A public member of a module the code imported (``import math; math.sqrt``)."""
        rules = self.rules
        if module is None:
            raise refusal(rules, f"the attribute '{name}'", f"eval-attribute={name}")
        if (module, name) in NEVER_MEMBERS:
            raise refusal(rules, f"'{module}.{name}'")
        if name.startswith("_") and not rules.attributes(name):
            raise refusal(rules, f"the attribute '{name}'", f"eval-attribute={name}")
        if not (rules.import_granted(module) or rules.import_granted(f"{module}.{name}")):
            raise refusal(rules, f"'{module}.{name}'", f"eval-import={module}")
        if not read:
            return None
        return self.after(obj, name, getattr(obj, name))

    def module_result(self, value: ModuleType) -> ModuleType:
        name = getattr(value, "__name__", "")
        if not isinstance(name, str) or name.partition(".")[0] in NEVER_IMPORTS:
            raise refusal(self.rules, f"the module '{name}'")
        if not self.rules.import_granted(name):
            raise refusal(self.rules, f"the module '{name}'", f"eval-import={name}")
        if name == "re":
            return self.regex()
        return value

    def _after_function(self) -> Callable[[Any, str, Any], Any]:
        def after(obj: Any, name: str, value: Any) -> Any:
            kind = type(value)
            if kind is ModuleType:
                return self.module_result(value)
            if kind in (FrameType, CodeType, TracebackType):
                raise refusal(self.rules, f"a {kind.__name__} object")
            if name in ("format", "format_map") and (isinstance(obj, str) or obj is str):
                return self.formatter(obj, name)
            if name in SIZED_METHODS and (isinstance(obj, _TEXTS) or obj in _TEXTS):
                return self.sized(obj, name, value)
            return value

        return after

    # -- format strings -----------------------------------------------------------------------

    def check_template(self, template: Any, depth: int = 0) -> None:
        if not isinstance(template, str):
            return
        if depth > 2:
            raise refusal(self.rules, "a format specification nested this deep")
        subscript = "Subscript" in self.rules.nodes
        for _literal, field, spec, _conversion in _string.formatter_parser(template):
            if field is None:
                continue
            _first, rest = _string.formatter_field_name_split(field)
            for is_attribute, key in rest:
                if is_attribute:
                    self.name_allowed(None, key)
                elif not subscript:
                    raise refusal(self.rules, "indexing in a format field", "eval-syntax=subscript")
            if spec:
                self.spec(spec)
                self.check_template(spec, depth + 1)

    def spec(self, spec: str) -> None:
        for digits in self.numbers(spec):
            if len(digits) > 18 or int(digits) > self.limit:
                raise EvalInterrupted(self.messages["alloc"], "alloc")

    def formatter(self, obj: Any, name: str) -> Callable[..., Any]:
        check = self.check_template
        convert = self.check_conversions
        if obj is str:  # the unbound method: str.format(template, ...)

            def unbound(template: Any, *args: Any, **kwargs: Any) -> Any:
                check(template)
                convert(template, args, kwargs)
                return getattr(str, name)(template, *args, **kwargs)

            return unbound

        def bound(*args: Any, **kwargs: Any) -> Any:
            check(obj)
            convert(obj, args, kwargs)
            return getattr(obj, name)(*args, **kwargs)

        return bound

    def check_conversions(self, template: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A template with many fields can turn large integers into decimal text many times
        in one C call: refused when that could outlast the whole timeout (this wrapper is
        shared by the profile's runs, it does not know the clock of one)."""
        fields = template.count("{") if isinstance(template, str) else 0
        if fields > 16:
            mapping = args[0] if len(args) == 1 and isinstance(args[0], dict) else {}
            values = (*args, *kwargs.values(), *mapping.values())
            seconds, widest = self.conversions(fields, values)
            if seconds > self.rules.profile.timeout:
                message = self.cost_message("{}-format", (fields, widest), seconds)
                raise EvalInterrupted(message, "timeout")

    def sized(self, obj: Any, name: str, method: Any) -> Callable[..., Any]:
        limit = self.limit
        message = self.messages["alloc"]

        def checked(*args: Any, **kwargs: Any) -> Any:
            target = obj
            values = list(args)
            if obj in _TEXTS:  # unbound: str.ljust(s, n)
                target = values.pop(0) if values else ""
            if name in ("ljust", "rjust", "center", "zfill") and values:
                width = values[0]
                if isinstance(width, int) and width > limit:
                    raise EvalInterrupted(message, "alloc")
            elif name == "expandtabs":
                tab = values[0] if values else kwargs.get("tabsize", 8)
                if isinstance(tab, int) and len(target) * max(tab, 1) > limit:
                    raise EvalInterrupted(message, "alloc")
            elif name == "replace" and len(values) >= 2:
                old, new = values[0], values[1]
                grows = isinstance(old, _TEXTS) and isinstance(new, _TEXTS) and len(new) > len(old)
                if grows and (len(target) // max(len(old), 1) + 1) * len(new) > limit:
                    raise EvalInterrupted(message, "alloc")
            return method(*args, **kwargs)

        return checked

    # -- costs --------------------------------------------------------------------------------

    def digits_message(self, digits: int) -> str:
        state = "off" if not digits else f"{digits} digits"
        return (
            f"The evaluated code was not run: CPython's limit on conversions between integers and "
            f"decimal text is {state} (sys.get_int_max_str_digits()), and one conversion could then "
            f"outlast eval-timeout={duration(self.rules.profile.timeout)}. Restore the limit "
            f"(sys.set_int_max_str_digits({cost.DEFAULT_MAX_STR_DIGITS}), or unset "
            f"PYTHONINTMAXSTRDIGITS and -X int_max_str_digits), at most "
            f"{self.rules.max_str_digits} digits (eval profile: {self.rules.label})."
        )

    def cost_message(self, op: str, sizes: tuple[int, ...], seconds: float) -> str:
        return (
            f"The evaluated code was interrupted before {cost.describe(op, sizes)}: it would take "
            f"about {cost.seconds(seconds)}, more than is left of eval-timeout="
            f"{duration(self.rules.profile.timeout)} (eval profile: {self.rules.label})."
        )

    def conversions(self, fields: int, args: Any) -> tuple[float, int]:
        """``%`` formatting with ``fields`` conversions of ``args``: the time to turn the widest
        integer among them into decimal text that many times, and its bits."""
        values = args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else (args,)
        widest = max((int.bit_length(v) for v in values if isinstance(v, int)), default=0)
        limit = sys.get_int_max_str_digits() or self.rules.max_str_digits
        return fields * cost.conversion(min(int(widest * LOG10_2) + 1, limit)), widest

    def modular_power_check(self, afford: Callable[..., None]) -> Callable[[Any, Any, Any], None]:
        def check(base: Any, exp: Any, mod: Any) -> None:
            if isinstance(base, int) and isinstance(exp, int) and isinstance(mod, int) and mod:
                sizes = (int.bit_length(base), int.bit_length(exp), int.bit_length(mod))
                seconds = cost.modular_power(*sizes)
                if seconds > cost.QUICK:
                    afford(seconds, "pow()", sizes)

        return check

    def round_check(self, afford: Callable[..., None]) -> Callable[[Any, Any], None]:
        # round(n, -k) of an int computes 10**k whatever the size of n
        def check(number: Any, ndigits: Any) -> None:
            if ndigits is None or not isinstance(number, int):
                return
            try:
                places = operator.index(ndigits)
            except TypeError:
                return  # round's own error
            if places < 0:
                ten = cost.power_bits(4, -places)
                if ten > cost.SMALL_BITS:
                    n = int.bit_length(number)
                    seconds = cost.power(4, -places) + cost.divide(max(n, ten), ten)
                    afford(seconds, "round()", (n, places), ten)

        return check

    def guard(self, checks: dict[str, Any]) -> Callable[[Any, str, Any], Any]:
        """The run's guard of values handed to evaluated code (an attribute read, a member
        imported or granted): a function or method in ``COSTLY``/``_DUNDER_CHECKS`` comes
        back wrapped in the check of its operation; anything else as it is."""
        wrapped: dict[int, Any] = {}

        def guard(obj: Any, name: str, value: Any) -> Any:
            found = COSTLY.get(id(value))
            if found is not None and found[0] is value:
                made = wrapped.get(id(value))
                if made is None:
                    made = wrapped[id(value)] = _wrap_function(found[1], value, checks, self.rules)
                return made
            check = _DUNDER_CHECKS.get(name)
            if check is not None:
                if type(obj) is super:  # super().__mul__: the method of the instance behind it
                    obj = obj.__self__  # type: ignore[attr-defined]
                unbound = issubclass(type(obj), type)
                if issubclass(obj if unbound else type(obj), _DUNDER_TYPES):
                    return _wrap_method(value, checks, check[0], check[1], _UNBOUND if unbound else obj)
            return value

        return guard

    # -- regular expressions ------------------------------------------------------------------

    def regex(self) -> ModuleType:
        if self.safe_re is None:
            self.safe_re = safe_regex_module(self.rules)
        return self.safe_re


# -- regular expressions: patterns that cannot backtrack exponentially, inputs of bounded size ----

#: longest string a granted ``re`` function searches
MAX_REGEX_INPUT = 100_000


def _regex_problem(pattern: Any) -> str | None:
    c: Any = re._constants  # type: ignore[attr-defined]
    p: Any = re._parser  # type: ignore[attr-defined]

    try:
        parsed = p.parse(pattern if isinstance(pattern, (str, bytes)) else pattern.pattern)
    except Exception as exc:  # the re module's own error, raised by the real call
        del exc
        return None
    repeats = (c.MAX_REPEAT, c.MIN_REPEAT)

    def walk(items: Any, inside_repeat: bool) -> str | None:
        for op, av in items:
            if op in repeats:
                _low, high, sub = av
                repeating = high > 1
                if inside_repeat and repeating:
                    return "a repetition inside a repetition"
                found = walk(sub, inside_repeat or repeating)
                if found:
                    return found
            elif op is c.SUBPATTERN:
                found = walk(av[3], inside_repeat)
                if found:
                    return found
            elif op is c.BRANCH:
                if inside_repeat:
                    return "alternatives inside a repetition"
                for branch in av[1]:
                    found = walk(branch, inside_repeat)
                    if found:
                        return found
            elif op in (c.GROUPREF, c.GROUPREF_EXISTS):
                return "a back reference"
            elif op in (c.ASSERT, c.ASSERT_NOT):
                found = walk(av[1], inside_repeat)
                if found:
                    return found
        return None

    return walk(parsed, False)


def safe_regex_module(rules: Compiled) -> ModuleType:
    """``re`` as evaluated code sees it: patterns that could backtrack exponentially are
    refused, searched strings are bounded; compiled patterns are wrapped the same way."""
    module = ModuleType("re")
    module.__doc__ = (
        "re under the eval guard: no nested repetitions, alternatives in repetitions or back references."
    )

    def check_pattern(pattern: Any) -> None:
        problem = _regex_problem(pattern)
        if problem:
            raise refusal(rules, f"a regular expression with {problem} (it can backtrack without bound)")

    def check_input(text: Any) -> None:
        if isinstance(text, (str, bytes, bytearray)) and len(text) > MAX_REGEX_INPUT:
            raise refusal(
                rules, f"a regular expression over more than {MAX_REGEX_INPUT} characters (it may never end)"
            )

    class Pattern:
        __slots__ = ("_p",)

        _p: Any

        def __init__(self, compiled: re.Pattern[Any]) -> None:
            object.__setattr__(self, "_p", compiled)

        def __setattr__(self, name: str, value: Any) -> None:
            raise AttributeError("read-only")

        def __repr__(self) -> str:
            return repr(self._p)

        pattern = property(lambda self: self._p.pattern)
        flags = property(lambda self: self._p.flags)
        groups = property(lambda self: self._p.groups)
        groupindex = property(lambda self: dict(self._p.groupindex))

    def method(name: str) -> Callable[..., Any]:
        def call(self: Any, string: Any, *args: Any, **kwargs: Any) -> Any:
            check_input(string)
            return getattr(self._p, name)(string, *args, **kwargs)

        call.__name__ = name
        return call

    for name in ("match", "search", "fullmatch", "findall", "finditer", "split"):
        setattr(Pattern, name, method(name))

    def substitute(name: str) -> Callable[..., Any]:
        def call(self: Any, repl: Any, string: Any, *args: Any, **kwargs: Any) -> Any:
            check_input(string)
            return getattr(self._p, name)(repl, string, *args, **kwargs)

        call.__name__ = name
        return call

    for name in ("sub", "subn"):
        setattr(Pattern, name, substitute(name))

    def compile(pattern: Any, flags: int = 0) -> Pattern:
        check_pattern(pattern)
        return Pattern(re.compile(pattern, flags))

    def function(name: str) -> Callable[..., Any]:
        def call(pattern: Any, string: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(compile(pattern), name)(string, *args, **kwargs)

        call.__name__ = name
        return call

    def substitute_function(name: str) -> Callable[..., Any]:
        def call(pattern: Any, repl: Any, string: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(compile(pattern), name)(repl, string, *args, **kwargs)

        call.__name__ = name
        return call

    module.compile = compile  # type: ignore[attr-defined]
    for name in ("match", "search", "fullmatch", "findall", "finditer", "split"):
        setattr(module, name, function(name))
    for name in ("sub", "subn"):
        setattr(module, name, substitute_function(name))
    module.escape = re.escape  # type: ignore[attr-defined]
    module.error = re.error  # type: ignore[attr-defined]
    for flag in ("IGNORECASE", "I", "MULTILINE", "M", "DOTALL", "S", "VERBOSE", "X", "ASCII", "A"):
        setattr(module, flag, getattr(re, flag))
    return module


# -- functions and methods that do costly work themselves ----------------------------------------
#
# Closures, as the shims below: evaluated code calls them. Each judges the arguments it passes
# on (``operator.index`` once), then calls the real function with them.

LOG10_2 = math.log10(2)
_UNBOUND = object()


def _judged(kind: str, operands: tuple[Any, ...]) -> tuple[Any, ...]:
    """The operands with a count (``'ab' * n``) or a number of digits (``round(x, n)``) turned
    into an int once: the check and the call then see the same value, whatever ``__index__``
    answers the second time."""
    if len(operands) < 2:
        return operands
    a, b = operands[0], operands[1]
    if kind == "mul":
        if isinstance(a, _SEQUENCES) and not isinstance(b, int):
            b = _index_or_same(b)
        elif isinstance(b, _SEQUENCES) and not isinstance(a, int):
            a = _index_or_same(a)
    elif kind == "round" and b is not None and not isinstance(b, int):
        b = _index_or_same(b)
    return (a, b, *operands[2:])


def _index_or_same(value: Any) -> Any:
    try:
        return operator.index(value)
    except TypeError:
        return value  # the operation's own error


def _wrap_method(method: Any, checks: dict[str, Any], kind: str, reflected: bool, owner: Any) -> Any:
    """``int.__mul__`` (``owner`` is ``_UNBOUND``) or ``(5).__mul__``, checked as ``*`` is."""
    check = checks[kind]
    powmod = checks["powmod"]

    def checked(*args: Any) -> Any:
        full = _judged(kind, args if owner is _UNBOUND else (owner, *args))
        if kind == "round":
            if full:
                check(full[0], full[1] if len(full) > 1 else None)
        elif len(full) >= 2:
            a, b = (full[1], full[0]) if reflected else (full[0], full[1])
            if kind == "pow" and len(full) > 2 and full[2] is not None:
                powmod(a, b, full[2])
            else:
                check(a, b)
        return method(*(full if owner is _UNBOUND else full[1:]))

    checked.__name__ = checked.__qualname__ = getattr(method, "__name__", kind)
    return checked


def _wrap_function(kind: str, function: Any, checks: dict[str, Any], rules: Compiled) -> Any:
    """``operator.mul`` or a ``math`` function, checked before it runs."""
    if not kind.startswith("math."):
        check = checks[kind]

        def operation(*args: Any) -> Any:
            args = _judged(kind, args)
            if len(args) == 2:
                check(args[0], args[1])
            return function(*args)

        operation.__name__ = operation.__qualname__ = function.__name__
        return operation
    made = _MATH_WRAPPERS[kind](function, checks["afford"], rules.profile.timeout)
    made.__name__ = made.__qualname__ = function.__name__
    return made


def _indexes(values: tuple[Any, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        return None  # the function's own error


def _factorial(function: Any, afford: Any, timeout: float) -> Any:
    def factorial(n: Any) -> Any:
        judged = _indexes((n,))
        if judged is None:
            return function(n)
        (k,) = judged
        bits = cost.factorial_bits(k)
        if bits > cost.SMALL_BITS:
            afford(cost.factorial(k), "math.factorial()", (int.bit_length(k),), bits)
        return function(k)

    return factorial


def _perm_comb(function: Any, afford: Any, timeout: float, comb: bool) -> Any:
    def perm_comb(n: Any, k: Any = None) -> Any:
        judged = _indexes((n,) if k is None else (n, k))
        if judged is None or min(judged) < 0:
            return function(n) if k is None else function(n, k)
        top = judged[0]
        chosen = judged[1] if len(judged) > 1 else top
        if comb:
            bits = cost.perm_bits(top, min(chosen, top - chosen)) - cost.factorial_bits(
                min(chosen, top - chosen)
            )
            seconds = cost.comb(top, chosen)
        else:
            bits = cost.perm_bits(top, chosen)
            seconds = cost.perm(top, chosen)
        if bits > cost.SMALL_BITS:
            name = "math.comb()" if comb else "math.perm()"
            afford(seconds, name, (int.bit_length(top), chosen), bits)
        return function(*judged)

    return perm_comb


def _isqrt(function: Any, afford: Any, timeout: float) -> Any:
    def isqrt(n: Any) -> Any:
        judged = _indexes((n,))
        if judged is None:
            return function(n)
        bits = int.bit_length(judged[0])
        if bits > cost.SMALL_BITS:
            afford(cost.isqrt(bits), "math.isqrt()", (bits,))
        return function(judged[0])

    return isqrt


def _gcd_lcm(function: Any, afford: Any, timeout: float, lcm: bool) -> Any:
    def gcd_lcm(*integers: Any) -> Any:
        judged = _indexes(integers)
        if judged is None:
            return function(*integers)
        sizes = [int.bit_length(v) for v in judged]
        if sum(sizes) > cost.SMALL_BITS:
            seconds, acc = 0.0, sizes[0]
            for bits in sizes[1:]:  # one after the other, as CPython does
                seconds += cost.gcd(acc, bits)
                if lcm:
                    seconds += cost.multiply(acc, bits) + cost.divide(acc + bits, bits)
                    acc += bits
                else:
                    acc = max(acc, bits)
            name = "math.lcm()" if lcm else "math.gcd()"
            afford(seconds, name, (max(sizes), min(sizes)))
        return function(*judged)

    return gcd_lcm


def _prod(function: Any, afford: Any, timeout: float) -> Any:
    def prod(iterable: Any, *, start: Any = 1) -> Any:
        items = list(iterable)
        if isinstance(start, int):
            acc = int.bit_length(start)
            try:
                total = acc + sum(map(int.bit_length, items))
            except TypeError:  # not only integers: the products stop being big at the first
                total = cost.SMALL_BITS + 1
            if total > cost.SMALL_BITS:
                seconds, count = 0.0, 0
                for item in items:
                    if not isinstance(item, int) or seconds > timeout:
                        break
                    bits = int.bit_length(item)
                    seconds += cost.multiply(acc, bits)
                    acc += bits
                    count += 1
                afford(seconds, "math.prod()", (acc, count), acc)
        return function(items, start=start)

    return prod


_MATH_WRAPPERS: dict[str, Callable[[Any, Any, float], Any]] = {
    "math.factorial": _factorial,
    "math.perm": lambda f, a, t: _perm_comb(f, a, t, comb=False),
    "math.comb": lambda f, a, t: _perm_comb(f, a, t, comb=True),
    "math.isqrt": _isqrt,
    "math.gcd": lambda f, a, t: _gcd_lcm(f, a, t, lcm=False),
    "math.lcm": lambda f, a, t: _gcd_lcm(f, a, t, lcm=True),
    "math.prod": _prod,
}


# -- builtins ------------------------------------------------------------------------------


# Shims are closures, not templates with bound defaults: evaluated code calls them, and an
# extra argument must never replace their state. ``__closure__`` is always refused.


def _shims(rules: Compiled, rt: _Runtime) -> dict[str, Callable[..., Any]]:
    allowed = rt.name_allowed
    refuse = rt.refuse
    chkset = bind(_chkset, _type=type, _module=ModuleType, _refuse=refuse)
    real_hasattr, real_setattr, real_delattr, real_type, real_dir = (hasattr, setattr, delattr, type, dir)

    def hasattr_(obj: Any, name: Any) -> bool:
        allowed(obj, name)
        return real_hasattr(obj, name)

    def setattr_(obj: Any, name: Any, value: Any) -> None:
        allowed(obj, name)
        real_setattr(chkset(obj), name, value)

    def delattr_(obj: Any, name: Any) -> None:
        allowed(obj, name)
        real_delattr(chkset(obj), name)

    def type_(*args: Any) -> Any:
        if len(args) != 1:
            refuse("type() with three arguments (it creates a class)", "")
        kind = real_type(args[0])
        if issubclass(kind, real_type):
            refuse("the type of a class (a metaclass)", "")
        return kind

    def dir_(*args: Any) -> Any:
        if not args:
            refuse("dir() without an argument (it lists the evaluation's namespace)", "")
        return real_dir(*args)

    shims: dict[str, Callable[..., Any]] = {
        "hasattr": hasattr_,
        "setattr": setattr_,
        "delattr": delattr_,
        "type": type_,
        "dir": dir_,
    }
    for name, shim in shims.items():
        shim.__name__ = shim.__qualname__ = name
    return shims


def _stateful_shims(rules: Compiled, made: dict[str, Any]) -> dict[str, Any]:
    p = rules.profile
    rt = runtime(rules)
    m = rt.messages
    fire, tick, spec, guarded_pow = made["fire"], made["tick"], made["spec"], made["pow"]
    checks, guard = made["checks"], made["guard"]
    powmod, divmod_check, round_check = checks["powmod"], checks["divmod"], checks["round"]
    limit, most = p.max_alloc, p.max_iterations
    allowed, after = rt.name_allowed, rt.after
    real_range, real_bytes, real_bytearray, real_iter, real_format, real_pow = (
        range,
        bytes,
        bytearray,
        iter,
        format,
        pow,
    )
    real_divmod, real_round, real_getattr = divmod, round, getattr

    def pow_(base: Any, exp: Any, mod: Any = None) -> Any:
        if mod is None:
            return guarded_pow(base, exp)
        powmod(base, exp, mod)
        return real_pow(base, exp, mod)

    def divmod_(a: Any, b: Any) -> Any:
        divmod_check(a, b)
        return real_divmod(a, b)

    def round_(number: Any, ndigits: Any = None) -> Any:
        number, ndigits = _judged("round", (number, ndigits))
        round_check(number, ndigits)
        return real_round(number, ndigits)

    def getattr_(obj: Any, name: Any, *default: Any) -> Any:
        allowed(obj, name)
        return guard(obj, name, after(obj, name, real_getattr(obj, name, *default)))

    def range_(*args: Any) -> range:
        made = real_range(*args)
        try:
            n = len(made)
        except OverflowError:
            n = most + 1
        if n > most:
            fire(m["iterations"], "iterations")
        return made

    def sized(make: Any) -> Callable[..., Any]:
        def create(*args: Any, **kwargs: Any) -> Any:
            if args and isinstance(args[0], int) and args[0] > limit:
                fire(m["alloc"], "alloc")
            return make(*args, **kwargs)

        return create

    def format_(value: Any, format_spec: str = "") -> str:
        spec(format_spec)
        return real_format(value, format_spec)

    def iter_(*args: Any) -> Any:
        if len(args) == 2:  # iter(callable, sentinel): a loop in C, ticked through the callable
            function = args[0]
            return real_iter(lambda: tick() and function(), args[1])
        return real_iter(*args)

    shims: dict[str, Callable[..., Any]] = {
        "pow": pow_,
        "divmod": divmod_,
        "round": round_,
        "getattr": getattr_,
        "range": range_,
        "bytes": sized(real_bytes),
        "bytearray": sized(real_bytearray),
        "format": format_,
        "iter": iter_,
    }
    if IMPORT in rules.stateful:
        check = importer(rules, guard)

        def __import__(
            name: Any, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
        ) -> Any:
            return check(name, fromlist, level)

        shims[IMPORT] = __import__
    for name, shim in shims.items():
        shim.__name__ = shim.__qualname__ = name
    return shims


#: builtins replaced by a shim; those needing the evaluation's budget list are made per run
STATELESS_SHIMS = frozenset({"hasattr", "setattr", "delattr", "type", "dir"})
STATEFUL_SHIMS = frozenset(
    {"pow", "divmod", "round", "getattr", "range", "bytes", "bytearray", "format", "iter"}
)
#: the import statement's builtin: made per run (the members it hands over are guarded)
IMPORT = "__import__"


def runtime(rules: Compiled) -> _Runtime:
    made = getattr(rules, "_runtime", None)
    if made is None:
        made = _Runtime(rules)
        rules._runtime = made  # type: ignore[attr-defined]
    return made


def build_builtins(rules: Compiled) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The shared builtins of a profile, and the granted names that need a per-run shim."""
    from .profile import ALWAYS_NAMES

    rt = runtime(rules)
    table: dict[str, Any] = {n: getattr(builtins, n) for n in ALWAYS_NAMES}
    stateful: list[str] = []
    shims = _shims(rules, rt)
    for name in dir(builtins):
        if name in NEVER_CALLS or name.startswith("_") or not rules.calls(name):
            continue
        if name in STATEFUL_SHIMS:
            stateful.append(name)
        else:
            table[name] = shims.get(name) or getattr(builtins, name)
    if "ClassDef" in rules.nodes:
        table["__build_class__"] = builtins.__build_class__
    if "Import" in rules.nodes or "ImportFrom" in rules.nodes:
        stateful.append(IMPORT)
    return table, tuple(stateful)


def importer(rules: Compiled, guard: Callable[[Any, str, Any], Any]) -> Callable[[str, Any, int], Any]:
    """``import`` statements of evaluated code: the ``eval-import`` allow-list, then the real
    import (so ``python-import=`` decides as well); ``from m import x`` gets a module of the
    checked names only, each passed through the run's ``guard`` (``from math import prod``)."""
    rt = runtime(rules)

    def check(name: Any, fromlist: Any, level: int) -> Any:
        if level or not isinstance(name, str):
            raise refusal(rules, "a relative import")
        if name.partition(".")[0] in NEVER_IMPORTS:
            raise refusal(rules, f"importing '{name}'")
        if not rules.import_granted(name):
            raise refusal(rules, f"importing '{name}'", f"eval-import={name}")
        module = builtins.__import__(name, None, None, ("__name__",) if fromlist else (), 0)
        if not fromlist:
            top = name.partition(".")[0]
            found = sys.modules.get(top)
            if rules.import_granted(top) and top == "re":
                return rt.regex()
            return found
        if name == "re":
            module = rt.regex()
        view = ModuleType(name)
        for member in fromlist:
            if member == "*":
                raise refusal(rules, "'from … import *'")
            try:
                value = getattr(module, member)
            except AttributeError:
                submodule = f"{name}.{member}"
                if not rules.import_granted(submodule):
                    raise refusal(rules, f"importing '{submodule}'", f"eval-import={submodule}") from None
                builtins.__import__(submodule, None, None, ("__name__",), 0)
                value = getattr(module, member)
            if type(value) is ModuleType:
                value = rt.module_result(value)
            else:
                rt.member(module, member, name, read=False)
                value = guard(module, member, value)
            setattr(view, member, value)
        return view

    return check


# -- one run ------------------------------------------------------------------------------------


def _makers(rules: Compiled, rt: _Runtime) -> dict[str, Callable[..., Any]]:
    """The helper templates of a profile, pre-bound with everything but what a run binds."""
    p = rules.profile
    m = rt.messages
    sizes = {"_limit": p.max_alloc, "_m": m["alloc"]}
    unit = bind(_unit, _isinstance=isinstance, _texts=_TEXTS)
    ints = {
        "_isinstance": isinstance,
        "_int": int,
        "_bits": int.bit_length,
        "_gate": min(cost.SMALL_BITS, 8 * p.max_alloc),
    }
    seqs = {"_seqs": _SEQUENCES, "_len": len, "_unit": unit}
    makers = {
        "fire": prebind(_fire, _Interrupted=EvalInterrupted),
        "slow": prebind(
            _slow,
            _clock=time.monotonic,
            _max=p.max_iterations,
            _timeout=p.timeout,
            _Interrupted=EvalInterrupted,
            _m_it=m["iterations"],
            _m_time=m["timeout"],
        ),
        "tick": prebind(_tick, _every=CLOCK_EVERY),
        "enter": prebind(_enter, _every=CLOCK_EVERY, _max_depth=p.max_call_depth, _m_depth=m["call-depth"]),
        "leave": prebind(_leave, _Interrupted=EvalInterrupted),
        "fn": prebind(_fn),
        "check": prebind(
            _check, _Interrupted=EvalInterrupted, _current=sys.exception, _isinstance=isinstance
        ),
        "afford": prebind(
            _afford,
            _clock=time.monotonic,
            _timeout=p.timeout,
            _Interrupted=EvalInterrupted,
            _refused=rt.cost_message,
            **sizes,
        ),
        "big": prebind(_big, _result=cost.result_bits, _seconds=cost.operator, **sizes),
        "grow": prebind(_grow, _large=cost.LARGE_RESULT_BITS // 8, _cost=cost.sequence, **sizes),
        # the operators: a run binds _fire, _big, _grow, _afford and _op (plain, in-place, _ignore)
        "mul": prebind(_mul, **ints, **seqs, _index=operator.index),
        "pow": prebind(_pow, **ints),
        "lshift": prebind(_lshift, **ints),
        "add": prebind(_add, **seqs, _isinstance=isinstance),
        "mod": prebind(
            _mod,
            **ints,
            **sizes,
            _conversions=rt.conversions,
            _texts=_TEXTS,
            _str=str,
            _tuple=tuple,
            _numbers=rt.numbers,
            _len=len,
        ),
        "floordiv": prebind(_floordiv, **ints, _symbol="//"),
        "divmod": prebind(_floordiv, **ints, _symbol="divmod()"),
        "iop": prebind(_iop),
        "chkset": prebind(_chkset, _type=type, _module=ModuleType, _refuse=rt.refuse),
        "iattr": prebind(_iattr, _getattr=getattr, _setattr=setattr),
        "isub": prebind(_isub),
        "attr": prebind(
            _attr,
            _getattr=getattr,
            _type=type,
            _special_types=_SPECIAL_TYPES,
            _special_names=_SPECIAL_NAMES,
        ),
        "modattr": prebind(
            _modattr, _module=ModuleType, _type=type, _getattr=getattr, _granted=rules.attribute_granted
        ),
        "spec": prebind(_spec, _numbers=rt.numbers, _len=len, _int=int, **sizes),
        "fmt": prebind(_fmt, _str=str, _repr=repr, _ascii=ascii, _format=format),
    }
    return makers


#: the operators' helpers (``@mul``…), and their in-place forms (``operator.imul``…)
OPERATORS = ("mul", "pow", "lshift", "add", "mod", "floordiv")
_PLAIN = {name: getattr(operator, name) for name in OPERATORS}
_INPLACE = {name: getattr(operator, "i" + name) for name in OPERATORS}


def helpers(rules: Compiled, state: list[Any], wanted: frozenset[str]) -> dict[str, Any]:
    """The helpers rewritten code uses (``wanted``), bound to one run's budget list; the
    operators and the checks are made on first use."""
    rt = runtime(rules)
    mk = rt.makers
    fire = mk["fire"](_s=state)
    slow = mk["slow"](_s=state, _fire=fire)
    afford = mk["afford"](_s=state, _fire=fire)
    bound = {
        "_fire": fire,
        "_afford": afford,
        "_big": mk["big"](_fire=fire, _afford=afford),
        "_grow": mk["grow"](_fire=fire, _afford=afford),
    }
    tick = mk["tick"](_s=state, _slow=slow)
    made = _Lazy(lambda name: mk[name](**bound, _op=_PLAIN[name]))
    made.update(fire=fire, tick=tick, afford=afford)
    inplace = _Lazy(lambda name: mk[name](**bound, _op=_INPLACE[name]))

    def check(name: str) -> Any:
        if name == "powmod":
            return rt.modular_power_check(afford)
        if name == "round":
            return rt.round_check(afford)
        if name == "afford":
            return afford
        return mk[name](**bound, _op=_ignore)

    checks = made["checks"] = _Lazy(check)
    made["guard"] = guard = rt.guard(checks)
    if "enter" in wanted or "fn" in wanted:
        enter = made["enter"] = mk["enter"](_s=state, _slow=slow, _fire=fire)
        leave = made["leave"] = mk["leave"](_s=state)
        made["fn"] = mk["fn"](_enter=enter, _leave=leave)
    made["check"] = mk["check"](_s=state)
    if wanted & _UPDATES:
        iop = made["iop"] = mk["iop"](_ops=inplace)
        chkset = made["chkset"] = mk["chkset"]()
        made["iattr"] = mk["iattr"](_chkset=chkset, _iop=iop)
        made["isub"] = mk["isub"](_iop=iop)
        made["slice"] = slice
    elif "chkset" in wanted:
        made["chkset"] = mk["chkset"]()
    if "attr" in wanted or "modattr" in wanted:
        rt_after, rt_member = rt.after, rt.member

        def after(obj: Any, name: str, value: Any) -> Any:
            return guard(obj, name, rt_after(obj, name, value))

        def member(obj: Any, name: str, module: str | None) -> Any:
            return guard(obj, name, rt_member(obj, name, module))

        attr = made["attr"] = mk["attr"](_after=after)
        made["modattr"] = mk["modattr"](_attr=attr, _member=member)
    spec = made["spec"] = mk["spec"](_fire=fire)
    if "fmt" in wanted:
        made["fmt"] = mk["fmt"](_spec=spec)
    return made


#: augmented assignments to a name, an attribute or an item
_UPDATES = frozenset({"iop", "iattr", "isub"})


def stateful_builtins(rules: Compiled, made: dict[str, Any]) -> dict[str, Any]:
    shims = _stateful_shims(rules, made)
    return {name: shims[name] for name in rules.stateful}
