"""The import guard's wrappers of the import system: ``__import__`` and ``_find_and_load``.

They run between a module being imported and its importer, like importlib's own frames, and
must stay as invisible: ``warnings.warn(..., stacklevel=2)`` in a module's top-level code names
the line that imported it. ``warnings`` skips a frame when its file name contains both
``importlib`` and ``_bootstrap`` (``warnings._is_internal_frame``, and the C version in
``_warnings.c``): hence the name of this file, which must hold nothing else. Python code has no
way to call the original ``__import__`` without a frame of its own, and a meta-path finder is
never asked about a module already loaded, so a frame it is, one that does not count.

``tests/guards/test_imports.py`` pins the attribution of import-time warnings.
"""

from __future__ import annotations

import builtins
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: the interpreter's ``exec``, taken when the guards load (before any wrapper replaces it)
_EXEC = builtins.exec


def find_and_load_wrapper(on_import: Callable[[tuple[Any, ...]], None]) -> Callable[..., Any]:
    """``importlib._bootstrap._find_and_load`` judged too: ``importlib.import_module`` loads
    modules without raising the ``import`` audit event."""
    import importlib._bootstrap as bootstrap

    original = bootstrap._find_and_load  # type: ignore[attr-defined]

    def _find_and_load(name: str, import_: Any) -> Any:
        on_import((name,))
        return original(name, import_)

    return _find_and_load


def import_wrapper(
    check: Callable[[tuple[Any, ...]], None],
    ours: tuple[str, ...],
    standard: tuple[str, ...],
    not_standard: tuple[str, ...],
) -> Callable[..., Any]:
    """``builtins.__import__`` that also judges imports of loaded modules, charged as the
    ``import`` event charges the others: to any importer but the sandbox (``ours``) and the
    standard library's own modules (``standard``, minus the ``not_standard`` directories
    under it: site-packages). Whether a module happens to be loaded already (the sandbox's
    runtime holds ``threading`` while learning, not in a strict run) never changes the answer."""
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
            if type(origin) is not str or not (
                origin.startswith(ours)
                or (origin.startswith(standard) and not origin.startswith(not_standard))
            ):
                check((name,))
        if globals is None:
            # No globals: left out, as the caller most likely did. Handed None, the builtin
            # fails a relative import with "globals must be a dict" instead of KeyError.
            return original(name, locals=locals, fromlist=fromlist, level=level)
        return original(name, globals, locals, fromlist, level)

    __import__.__doc__ = original.__doc__
    return __import__


def keep_import_system_exec() -> None:
    """Let the import system run module code with the interpreter's ``exec``.

    importlib and zipimport look ``exec`` up in the builtins; once the program's ``exec`` is
    wrapped (``dynamic-code``), the wrapper would add a frame under every module's code (named
    by ``warnings``' stacklevel) and a check per import that always passes (the import system is
    library code). A module global shadows the builtin. The original is nothing the program
    could not reach already (the wrapper's closure holds it), and given a string it still
    raises the ``compile`` event that the guard judges by its caller."""
    import importlib._bootstrap as bootstrap
    import importlib._bootstrap_external as external

    for module in (bootstrap, external, sys.modules.get("zipimport")):
        if module is not None:
            module.exec = _EXEC  # type: ignore[attr-defined]
