"""What rewritten code calls while it runs: budget ticks, the sticky interrupt, attribute and
size checks, and the builtins an evaluation sees.

Every helper is made from a template below by :func:`bind`: a fresh function over globals
whose ``__builtins__`` is empty, its state (the evaluation's budget list, the profile's
decisions, the C functions it uses) bound as positional defaults. A helper reached by
evaluated code would show nothing it can use: its ``__defaults__``, ``__globals__`` and
``__closure__`` are attributes no rule grants (``vocab.ALWAYS_DENIED_ATTRIBUTES``), and the
helpers' names (``@tick``…) cannot be written in source.

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
import operator
import re
import re._constants  # type: ignore[import-not-found]
import re._parser  # type: ignore[import-not-found]
import sys
import time
from types import CodeType, FrameType, FunctionType, ModuleType, TracebackType

from ..errors import EvalInterrupted, EvalSyntaxRejected
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
_SPECIAL_NAMES = frozenset({"format", "format_map"}) | SIZED_METHODS
#: how often a tick reads the clock (a power of two, minus one)
CLOCK_EVERY = 15

_BINDERS: dict[Callable[..., Any], tuple[CodeType, tuple[str, ...], tuple[Any, ...], int]] = {}


def bind(template: Callable[..., Any], **bound: Any) -> Callable[..., Any]:
    """A copy of ``template`` over empty globals, its ``_x`` parameters' defaults from ``bound``."""
    binder = _BINDERS.get(template)
    if binder is None:
        assert isinstance(template, FunctionType) and not template.__code__.co_freevars
        code = template.__code__
        names = code.co_varnames[: code.co_argcount]
        old = template.__defaults__ or ()
        binder = (code, names[len(names) - len(old) :], old, 0)
        _BINDERS[template] = binder
    code, names, old, _ = binder
    defaults = tuple(bound[n] if n.startswith("_") else old[i] for i, n in enumerate(names))
    made = FunctionType(code, _GLOBALS, template.__name__, defaults)
    made.__qualname__ = template.__qualname__
    return made


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


# -- sizes ------------------------------------------------------------------------------------


def _unit(seq, _isinstance=None, _texts=None):  # type: ignore[no-untyped-def]
    return 1 if _isinstance(seq, _texts) else 8


def _mul(  # type: ignore[no-untyped-def]
    a,
    b,
    _isinstance=None,
    _int=None,
    _seqs=None,
    _index=None,
    _len=None,
    _unit=None,
    _limit=0,
    _fire=None,
    _m="",
    _op=None,
):  # type: ignore[no-untyped-def]
    if _isinstance(a, _int) and _isinstance(b, _int):
        if a and b and a.bit_length() + b.bit_length() > 8 * _limit:
            _fire(_m, "alloc")
        return _op(a, b)
    if _isinstance(a, _seqs) or _isinstance(b, _seqs):
        first = _isinstance(a, _seqs)
        seq, count = (a, b) if first else (b, a)
        try:
            n = _index(count)
        except TypeError:
            return _op(a, b)  # the operator's own error
        if n > 0 and _len(seq) * n * _unit(seq) > _limit:
            _fire(_m, "alloc")
        return _op(seq, n) if first else _op(n, seq)
    return _op(a, b)


def _pow(a, b, _isinstance=None, _int=None, _limit=0, _fire=None, _m="", _op=None):  # type: ignore[no-untyped-def]
    big = _isinstance(a, _int) and _isinstance(b, _int) and b > 0 and (a > 1 or a < -1)
    if big and a.bit_length() * b > 8 * _limit:
        _fire(_m, "alloc")
    return _op(a, b)


def _lshift(a, b, _isinstance=None, _int=None, _limit=0, _fire=None, _m="", _op=None):  # type: ignore[no-untyped-def]
    if _isinstance(a, _int) and _isinstance(b, _int) and a and b > 0 and a.bit_length() + b > 8 * _limit:
        _fire(_m, "alloc")
    return _op(a, b)


def _add(a, b, _isinstance=None, _seqs=None, _len=None, _unit=None, _limit=0, _fire=None, _m="", _op=None):  # type: ignore[no-untyped-def]
    if _isinstance(a, _seqs) and _isinstance(b, _seqs) and (_len(a) + _len(b)) * _unit(a) > _limit:
        _fire(_m, "alloc")
    return _op(a, b)


def _mod(  # type: ignore[no-untyped-def]
    a,
    b,
    _isinstance=None,
    _texts=None,
    _str=None,
    _int=None,
    _tuple=None,
    _numbers=None,
    _len=None,
    _limit=0,
    _fire=None,
    _m="",
    _op=None,
):  # type: ignore[no-untyped-def]
    if _isinstance(a, _texts):
        template = a if _isinstance(a, _str) else a.decode("latin-1")
        for digits in _numbers(template):
            if _len(digits) > 18 or _int(digits) > _limit:
                _fire(_m, "alloc")
        if "*" in template:
            for arg in b if _isinstance(b, _tuple) else (b,):
                if _isinstance(arg, _int) and arg > _limit:
                    _fire(_m, "alloc")
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
        if obj is str:  # the unbound method: str.format(template, ...)

            def unbound(template: Any, *args: Any, **kwargs: Any) -> Any:
                check(template)
                return getattr(str, name)(template, *args, **kwargs)

            return unbound

        def bound(*args: Any, **kwargs: Any) -> Any:
            check(obj)
            return getattr(obj, name)(*args, **kwargs)

        return bound

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


# -- builtins ------------------------------------------------------------------------------


# Shims are closures, not templates with bound defaults: evaluated code calls them, and an
# extra argument must never replace their state. ``__closure__`` is always refused.


def _shims(rules: Compiled, rt: _Runtime) -> dict[str, Callable[..., Any]]:
    allowed = rt.name_allowed
    after = rt.after
    refuse = rt.refuse
    chkset = bind(_chkset, _type=type, _module=ModuleType, _refuse=refuse)
    real_getattr, real_hasattr, real_setattr, real_delattr, real_type, real_dir = (
        getattr,
        hasattr,
        setattr,
        delattr,
        type,
        dir,
    )

    def getattr_(obj: Any, name: Any, *default: Any) -> Any:
        allowed(obj, name)
        return after(obj, name, real_getattr(obj, name, *default))

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
        "getattr": getattr_,
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
    m = runtime(rules).messages
    fire, tick, spec, guarded_pow = made["fire"], made["tick"], made["spec"], made["pow"]
    limit, most = p.max_alloc, p.max_iterations
    real_range, real_bytes, real_bytearray, real_iter, real_format, real_pow = (
        range,
        bytes,
        bytearray,
        iter,
        format,
        pow,
    )

    def pow_(base: Any, exp: Any, mod: Any = None) -> Any:
        return guarded_pow(base, exp) if mod is None else real_pow(base, exp, mod)

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
        "range": range_,
        "bytes": sized(real_bytes),
        "bytearray": sized(real_bytearray),
        "format": format_,
        "iter": iter_,
    }
    for name, shim in shims.items():
        shim.__name__ = shim.__qualname__ = name
    return shims


#: builtins replaced by a shim; those needing the evaluation's budget list are made per run
STATELESS_SHIMS = frozenset({"getattr", "hasattr", "setattr", "delattr", "type", "dir"})
STATEFUL_SHIMS = frozenset({"pow", "range", "bytes", "bytearray", "format", "iter"})


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
        check = importer(rules)

        def __import__(
            name: Any, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
        ) -> Any:
            return check(name, fromlist, level)

        table["__import__"] = __import__
    return table, tuple(stateful)


def importer(rules: Compiled) -> Callable[[str, Any, int], Any]:
    """``import`` statements of evaluated code: the ``eval-import`` allow-list, then the real
    import (so ``python-import=`` decides as well); ``from m import x`` gets a module of the
    checked names only."""
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
            setattr(view, member, value)
        return view

    return check


# -- one run ------------------------------------------------------------------------------------


def helpers(rules: Compiled, state: list[Any], wanted: frozenset[str]) -> dict[str, Any]:
    """The helpers rewritten code uses (``wanted``), bound to one run's budget list."""
    rt = runtime(rules)
    p = rules.profile
    m = rt.messages
    fire = bind(_fire, _s=state, _Interrupted=EvalInterrupted)
    slow = bind(
        _slow,
        _s=state,
        _clock=time.monotonic,
        _max=p.max_iterations,
        _timeout=p.timeout,
        _fire=fire,
        _Interrupted=EvalInterrupted,
        _m_it=m["iterations"],
        _m_time=m["timeout"],
    )
    made: dict[str, Any] = {"fire": fire}
    tick = made["tick"] = bind(_tick, _s=state, _slow=slow, _every=CLOCK_EVERY)
    if "enter" in wanted or "fn" in wanted:
        made["enter"] = bind(
            _enter,
            _s=state,
            _slow=slow,
            _every=CLOCK_EVERY,
            _max_depth=p.max_call_depth,
            _fire=fire,
            _m_depth=m["call-depth"],
        )
        made["leave"] = bind(_leave, _s=state, _Interrupted=EvalInterrupted)
        made["fn"] = bind(_fn, _enter=made["enter"], _leave=made["leave"])
    made["check"] = bind(
        _check, _s=state, _Interrupted=EvalInterrupted, _current=sys.exception, _isinstance=isinstance
    )
    sizes = {"_limit": p.max_alloc, "_fire": fire, "_m": m["alloc"]}
    if wanted & {"add", "mul", "pow", "lshift", "mod", "iop", "iattr", "isub"} or rules.stateful:
        unit = bind(_unit, _isinstance=isinstance, _texts=_TEXTS)
        kinds: dict[str, tuple[Any, dict[str, Any]]] = {
            "mul": (
                _mul,
                {"_int": int, "_seqs": _SEQUENCES, "_index": operator.index, "_len": len, "_unit": unit},
            ),
            "pow": (_pow, {"_int": int}),
            "lshift": (_lshift, {"_int": int}),
            "add": (_add, {"_seqs": _SEQUENCES, "_len": len, "_unit": unit}),
            "mod": (
                _mod,
                {
                    "_texts": _TEXTS,
                    "_str": str,
                    "_int": int,
                    "_tuple": tuple,
                    "_numbers": rt.numbers,
                    "_len": len,
                },
            ),
        }
        inplace = {}
        for name, (template, extra) in kinds.items():
            plain, augmented = getattr(operator, name), getattr(operator, "i" + name)
            made[name] = bind(template, _isinstance=isinstance, _op=plain, **extra, **sizes)
            inplace[name] = bind(template, _isinstance=isinstance, _op=augmented, **extra, **sizes)
        made["iop"] = bind(_iop, _ops=inplace)
        chkset = bind(_chkset, _type=type, _module=ModuleType, _refuse=rt.refuse)
        made["chkset"] = chkset
        made["iattr"] = bind(_iattr, _chkset=chkset, _getattr=getattr, _setattr=setattr, _iop=made["iop"])
        made["isub"] = bind(_isub, _iop=made["iop"])
        made["slice"] = slice
    if "chkset" in wanted and "chkset" not in made:
        made["chkset"] = bind(_chkset, _type=type, _module=ModuleType, _refuse=rt.refuse)
    if "attr" in wanted or "modattr" in wanted:
        attr = made["attr"] = bind(
            _attr,
            _getattr=getattr,
            _type=type,
            _special_types=_SPECIAL_TYPES,
            _special_names=_SPECIAL_NAMES,
            _after=rt.after,
        )
        made["modattr"] = bind(
            _modattr,
            _module=ModuleType,
            _type=type,
            _getattr=getattr,
            _attr=attr,
            _granted=rules.attribute_granted,
            _member=rt.member,
        )
    spec = bind(_spec, _numbers=rt.numbers, _len=len, _int=int, **sizes)
    if "fmt" in wanted:
        made["fmt"] = bind(_fmt, _str=str, _repr=repr, _ascii=ascii, _format=format, _spec=spec)
    made["spec"] = spec
    made["tick"] = tick
    return made


def stateful_builtins(rules: Compiled, made: dict[str, Any]) -> dict[str, Any]:
    shims = _stateful_shims(rules, made)
    return {name: shims[name] for name in rules.stateful}
