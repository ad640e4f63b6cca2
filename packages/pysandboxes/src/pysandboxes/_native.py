"""A few C library calls without ``ctypes``: importing it costs ~4 ms of every start-up.

``_ctypes`` (the C extension underneath, ~1 ms) can look a symbol up and call it; the two
argument types defined here (an ``unsigned long``, a ``char``) are all these calls need. A
``bytes`` argument is passed as a pointer to its contents.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class C:
    """``memmove``, ``memset``, ``prctl``, ``sbrk(0)`` and buffers of the C library."""

    def __init__(self) -> None:
        import _ctypes

        class ULong(_ctypes._SimpleCData):  # type: ignore[misc,name-defined,type-arg]
            _type_ = "L"

        class Char(_ctypes._SimpleCData):  # type: ignore[misc,name-defined,type-arg]
            _type_ = "c"

        self._ctypes = _ctypes
        self.ulong = ULong
        self.char = Char
        libc = _ctypes.dlopen(None, os.RTLD_NOW)  # type: ignore[arg-type] # the program itself
        self._memmove = _ctypes.dlsym(libc, "memmove")
        self._memset = _ctypes.dlsym(libc, "memset")
        self._prctl = _ctypes.dlsym(libc, "prctl")
        # sbrk(0) returns a pointer: a function type whose result is an unsigned long
        sbrk = type(
            "Sbrk",
            (_ctypes.CFuncPtr,),
            {"_argtypes_": (ULong,), "_restype_": ULong, "_flags_": _ctypes.FUNCFLAG_CDECL},
        )
        self._sbrk = sbrk(_ctypes.dlsym(libc, "sbrk"))

    def buffer(self, size: int) -> Any:
        """``size`` bytes of memory, as long as the returned object lives."""
        array = type("Buffer", (self._ctypes.Array,), {"_type_": self.char, "_length_": size})
        return array()

    def address(self, buffer: Any) -> int:
        return int(self._ctypes.addressof(buffer))

    def memmove(self, dest: int, source: bytes, size: int) -> None:
        self._ctypes.call_function(self._memmove, (self.ulong(dest), source, self.ulong(size)))

    def memset(self, dest: int, value: int, size: int) -> None:
        if size > 0:
            self._ctypes.call_function(self._memset, (self.ulong(dest), value, self.ulong(size)))

    def sbrk0(self) -> int:
        """The program break: where the heap ends (``sbrk(0)``)."""
        return int(self._sbrk(0))

    def prctl(self, option: int, *args: int | bytes) -> int:
        """``prctl(option, ...)``: integers go as ``unsigned long``, bytes as pointers."""
        values = tuple(a if isinstance(a, bytes) else self.ulong(a) for a in args)
        return int(self._ctypes.call_function(self._prctl, (option, *values)))
