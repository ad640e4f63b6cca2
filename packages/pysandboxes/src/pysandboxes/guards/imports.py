"""The import guard: ``python-import=`` allow-list by top-level name.

A module that is not loaded yet raises the ``import`` audit event before any finder runs, so
its code never executes without a rule. The import is charged to the code that asked for it:
the program, a third-party library, code given to ``exec``... The standard library's own
imports (``socket`` importing ``selectors``, ``json`` importing ``_json``) are not charged:
the rule ``python-import=socket`` means the module works. (The reference charges those too;
a profile written for it still works here, with rules to spare.) The import machinery
(``importlib``, ``__import__``) is transparent: ``importlib.import_module("x")`` is charged
to its caller. A module that is already loaded raises no event: ``builtins.__import__`` is
wrapped so that the program's ``import x`` is judged as well. The sandbox's own modules never
need a rule.
"""

from __future__ import annotations

import builtins
import os
import sys

from ..errors import RuleModuleNotFoundError
from ..rules.policy import Policy
from ._seal import seal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

#: never judged: the interpreter's own and ours (``__future__`` is a compiler directive)
EXEMPT = frozenset({"pysandboxes", "python_sb", "sys", "builtins", "__main__", "__future__"})


def _check(name, _allowed=None, _everything=False, _Refused=None, _str=None):  # type: ignore[no-untyped-def]
    top = _str.__str__(name).partition(".")[0]
    if _everything or top in _allowed:
        return
    raise _Refused(
        f"Module named '{top}' is not allowed by a rule\nAdd `python-import={top}` to the rule file to allow it.",
        top,
    )


def _on_import(  # type: ignore[no-untyped-def]
    args,
    _check=None,
    _allowed=None,
    _everything=False,
    _getframe=None,
    _transparent=None,
    _stdlib=None,
    _not_stdlib=None,
    _str=None,
    _type=None,
    _ValueError=None,
):
    name = args[0]
    if _everything or (_type(name) is _str and name.partition(".")[0] in _allowed):
        return
    try:
        frame = _getframe(2)  # 0: this handler, 1: the hook, 2: who raised the event
    except _ValueError:
        frame = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if _type(filename) is not _str or not filename.startswith(_transparent):
            break
        frame = frame.f_back
    if frame is None:
        return  # only the sandbox's own frames: its runtime (a partial-mode worker) importing
    if frame is not None:
        filename = frame.f_code.co_filename
        if _type(filename) is _str and filename.startswith(_stdlib) and not filename.startswith(_not_stdlib):
            return  # the standard library importing what it needs
    _check(name)


def build(
    policy: Policy, extra: Iterable[str] = ()
) -> tuple[Callable[[tuple[Any, ...]], None], dict[str, Callable[[tuple[Any, ...]], None]]]:
    """``extra``: top-level names that are part of the program itself (``python-sb -m pkg``)."""
    allowed = frozenset(policy.imports) | EXEMPT | frozenset(extra)
    check = seal(
        _check,
        _allowed=allowed,
        _everything="*" in policy.imports,
        _Refused=RuleModuleNotFoundError,
        _str=str,
    )
    stdlib = os.path.dirname(os.__file__)
    ours = os.path.dirname(os.path.dirname(__file__))
    site = tuple(
        os.path.realpath(e) + "/" for e in sys.path if e.endswith(("site-packages", "dist-packages"))
    ) + tuple(e + "/" for e in sys.path if e.endswith(("site-packages", "dist-packages")))
    on_import = seal(
        _on_import,
        _check=check,
        _allowed=allowed,
        _everything="*" in policy.imports,
        _getframe=sys._getframe,
        # The import machinery forwarding a request is transparent; the loader's own work
        # (decoding or compiling a module's source, which may import unicodedata or an
        # encoding) happens in _bootstrap_external and is the interpreter's, not the program's.
        _transparent=("<frozen importlib._bootstrap>", stdlib + "/importlib/", ours + "/"),
        _stdlib=(stdlib + "/", "<frozen "),
        _not_stdlib=site or ("\x00",),
        _str=str,
        _type=type,
        _ValueError=ValueError,
    )
    return on_import, {"import": on_import}


def library_prefixes() -> tuple[str, ...]:
    """Directories whose code is library code: the stdlib, site-packages, the sandbox itself."""
    stdlib = os.path.dirname(os.__file__)
    found = {stdlib, os.path.dirname(os.path.dirname(__file__))}
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")) or entry.startswith(stdlib):
            found.add(entry)
    return tuple(sorted({os.path.realpath(p) + "/" for p in found} | {p + "/" for p in found}))


def find_and_load_wrapper(on_import: Callable[[tuple[Any, ...]], None]) -> Callable[..., Any]:
    """``importlib._bootstrap._find_and_load`` judged too: ``importlib.import_module`` loads
    modules without raising the ``import`` audit event."""
    import importlib._bootstrap as bootstrap

    original = bootstrap._find_and_load  # type: ignore[attr-defined]

    def _find_and_load(name: str, import_: Any) -> Any:
        on_import((name,))
        return original(name, import_)

    return _find_and_load


def import_wrapper(check: Callable[[tuple[Any, ...]], None], library: tuple[str, ...]) -> Callable[..., Any]:
    """``builtins.__import__`` that also judges the program's imports of loaded modules."""
    original = builtins.__import__
    modules = sys.modules
    getframe = sys._getframe

    def __import__(
        name: str,
        globals: dict[str, Any] | None = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> Any:
        if level == 0 and name in modules:
            importer = globals if globals is not None else getframe(1).f_globals
            origin = importer.get("__file__") or ""
            if not (isinstance(origin, str) and origin.startswith(library)):
                check((name,))
        if globals is None:
            # No globals: left out, as the caller most likely did. Handed None, the builtin
            # fails a relative import with "globals must be a dict" instead of KeyError.
            return original(name, locals=locals, fromlist=fromlist, level=level)
        return original(name, globals, locals, fromlist, level)

    __import__.__doc__ = original.__doc__
    return __import__
