"""The import guard: ``python-import=`` allow-list by top-level name.

A module that is not loaded yet raises the ``import`` audit event before any finder runs, so
its code never executes without a rule, whoever imports it (the reference's behaviour: a
stdlib module's own new imports need rules too, and learning records them). A module that is
already loaded raises no event: ``builtins.__import__`` is wrapped so that *the program's*
``import x`` is judged as well; library code re-importing a loaded module is not charged. The
sandbox's own modules never need a rule.
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


def _on_import(args, _check=None):  # type: ignore[no-untyped-def]
    _check(args[0])


def build(
    policy: Policy, extra: Iterable[str] = ()
) -> tuple[Callable[[str], None], dict[str, Callable[[tuple[Any, ...]], None]]]:
    """``extra``: top-level names that are part of the program itself (``python-sb -m pkg``)."""
    allowed = frozenset(policy.imports) | EXEMPT | frozenset(extra)
    check = seal(
        _check,
        _allowed=allowed,
        _everything="*" in policy.imports,
        _Refused=RuleModuleNotFoundError,
        _str=str,
    )
    return check, {"import": seal(_on_import, _check=check)}


def library_prefixes() -> tuple[str, ...]:
    """Directories whose code is library code: the stdlib, site-packages, the sandbox itself."""
    stdlib = os.path.dirname(os.__file__)
    found = {stdlib, os.path.dirname(os.path.dirname(__file__))}
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")) or entry.startswith(stdlib):
            found.add(entry)
    return tuple(sorted({os.path.realpath(p) + "/" for p in found} | {p + "/" for p in found}))


def import_wrapper(check: Callable[[str], None], library: tuple[str, ...]) -> Callable[..., Any]:
    """``builtins.__import__`` that also judges the program's imports of loaded modules."""
    original = builtins.__import__
    modules = sys.modules

    def __import__(
        name: str,
        globals: dict[str, Any] | None = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> Any:
        if level == 0 and name in modules and globals is not None:
            origin = globals.get("__file__") or ""
            if not (isinstance(origin, str) and origin.startswith(library)):
                check(name)
        return original(name, globals, locals, fromlist, level)

    __import__.__doc__ = original.__doc__
    return __import__
