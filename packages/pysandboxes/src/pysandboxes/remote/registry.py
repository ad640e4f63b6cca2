"""Which function a call names: filled when ``@sandbox`` decorates, in the host and the child.

A function is found by ``(module, qualname)`` as registered at decoration time, not by
``getattr`` on its module, so a framework decorator stacked on top (``@tool``, ``@mcp.tool``)
does not hide it. In the child, a function of the host's ``__main__`` script is registered
when the script is imported under another name (``__sb_main__``, like multiprocessing's
``__mp_main__``): its ``if __name__ == "__main__":`` block does not run there.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: code flags telling how a function is called (``inspect`` costs milliseconds to import)
CO_GENERATOR = 0x20
CO_COROUTINE = 0x80
CO_ASYNC_GENERATOR = 0x200

#: the module name the host's __main__ script gets in the child
MAIN_ALIAS = "__sb_main__"

_FUNCTIONS: dict[tuple[str, str], Callable[..., Any]] = {}


def code_flags(function: Callable[..., Any]) -> int:
    return int(getattr(getattr(function, "__code__", None), "co_flags", 0))


def key_of(function: Callable[..., Any]) -> tuple[str, str]:
    module = getattr(function, "__module__", None) or "__main__"
    if module == MAIN_ALIAS:
        module = "__main__"
    return module, getattr(function, "__qualname__", getattr(function, "__name__", "?"))


def register(function: Callable[..., Any]) -> tuple[str, str]:
    key = key_of(function)
    _FUNCTIONS[key] = function
    return key


def lookup(key: tuple[str, str]) -> Callable[..., Any] | None:
    return _FUNCTIONS.get(key)


def forget_failed_imports() -> list[tuple[str, str]]:
    """Forget the functions of modules whose import failed after decorating them (the import
    system took the module out of ``sys.modules``): the child would import them again, run
    their top level and fail to start. Their wrappers, if still held, refuse to run."""
    gone = [key for key in _FUNCTIONS if key[0] != "__main__" and key[0] not in sys.modules]
    for key in gone:
        del _FUNCTIONS[key]
    return gone


def functions() -> list[Callable[..., Any]]:
    return list(_FUNCTIONS.values())


def modules() -> list[str]:
    """The modules holding registered functions (the host's ``__main__`` included)."""
    return sorted({module for module, _ in _FUNCTIONS})


def main_file() -> str | None:
    """The host's ``__main__`` script, if it is a file the child can import."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path if isinstance(path, str) and path.endswith(".py") else None
