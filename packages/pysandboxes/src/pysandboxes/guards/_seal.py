"""Sealed functions: guard code whose state sandboxed code cannot rewrite.

The reference implementation keeps its rules and flags in module globals and closure cells;
sandboxed code reaches them through ``__globals__``, ``__closure__`` or ``sys.modules`` and
switches the guard off. Here every function the audit hook runs is *sealed*:

* it is rebuilt with :func:`seal` over a private globals dict whose ``__builtins__`` is empty,
  so it cannot look up a global or builtin name at all (a name it forgot to bind fails closed
  with ``NameError``, which the hook turns into a refusal);
* everything it needs (decision tables, C functions, other sealed functions, exception
  classes) is bound as a positional default. ``__defaults__`` is a tuple, and replacing it or
  ``__code__`` raises the ``object.__setattr__`` audit event, which the hook refuses for
  sealed functions;
* tables are immutable: ``frozenset``, ``tuple`` (a mapping is a frozenset of keys plus
  aligned tuples, see :func:`frozen_get`: ``MappingProxyType`` is *not* immutable, ``proxy |
  obj`` hands the underlying dict to ``obj.__ror__``), compiled regular expressions, and the
  C ``lru_cache`` wrapper (its cache cannot be written from Python).

So even a frame of the guard reached through a traceback shows only values that cannot be
changed. ``tests/guards/test_sealed.py`` checks the bytecode of every sealed function.

A sealed function must not ask the program's objects about themselves either: ``x.__mro__``,
``isinstance``, ``str(x)`` and operators on a program's object run the program's code, inside
the guard. Bind the builtin's own methods (``str.__str__``, ``int.__index__``…) and ``type``,
and compare with ``type(x) is str`` (``files.py`` gives the attack and the rule).
"""

from __future__ import annotations

from types import FunctionType

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: the globals of every sealed function: no builtins, nothing to look up
SEALED_GLOBALS: dict[str, object] = {"__builtins__": {}, "__name__": "pysandboxes.guards"}

#: every sealed function made in this process (for the bytecode test and for debugging)
_MADE: list[FunctionType] = []


def seal(template: Callable[..., Any], **bound: object) -> Callable[..., Any]:
    """A copy of ``template`` over the sealed globals, its defaults replaced by ``bound``.

    ``template`` declares its state as trailing positional parameters with defaults (by
    convention named ``_x``); each must be given here.
    """
    assert isinstance(template, FunctionType)
    code = template.__code__
    if code.co_freevars:
        raise TypeError(f"{template.__qualname__} uses a closure: bind its state as defaults")
    names = code.co_varnames[: code.co_argcount]
    old = template.__defaults__ or ()
    first = len(names) - len(old)
    defaults: list[object] = []
    for i, name in enumerate(names[first:]):
        if name.startswith("_"):
            if name not in bound:
                raise TypeError(f"{template.__qualname__}: no value for {name}")
            defaults.append(bound.pop(name))
        else:
            defaults.append(old[i])
    if bound:
        raise TypeError(f"{template.__qualname__}: unknown parameters {sorted(bound)}")
    made = FunctionType(code, SEALED_GLOBALS, template.__name__, tuple(defaults))
    made.__qualname__ = template.__qualname__
    made.__module__ = template.__module__
    _MADE.append(made)
    return made


def sealed_functions() -> tuple[FunctionType, ...]:
    return tuple(_MADE)


def c_cache(function: Callable[..., Any], maxsize: int = 4096) -> Callable[..., Any]:
    """``functools.lru_cache(maxsize)(function)`` built from the C type directly.

    The C wrapper keeps its cache out of reach of Python code, and importing ``functools``
    (with ``collections``) costs a millisecond at start-up. ``typed``: a caller handing the
    cached function an object that merely *compares* equal to ``True`` or to a path (a
    program can reach and call it) gets an entry of its own, never one the guard reads.
    """
    try:
        from _functools import _lru_cache_wrapper  # type: ignore[import-not-found]
    except ImportError:  # another interpreter: the public API (a pure-Python cache is weaker)
        import functools

        return functools.lru_cache(maxsize=maxsize, typed=True)(function)
    return _lru_cache_wrapper(function, maxsize, True, tuple)  # type: ignore[no-any-return]


def _frozen_get(key, _keys=None, _index=None, _values=None):  # type: ignore[no-untyped-def]
    if key in _keys:
        return _values[_index(key)]
    return None


def frozen_get(mapping: dict[Any, Any]) -> Callable[[Any], Any]:
    """A sealed ``mapping.get`` over tuples: nothing reachable from it can be changed."""
    keys = tuple(mapping)
    return seal(_frozen_get, _keys=frozenset(keys), _index=keys.index, _values=tuple(mapping.values()))
