"""Which Landlock ABI the running kernel offers (0: none)."""

from __future__ import annotations

import os

# landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) returns the ABI version.
_SYSCALL_NUMBERS = {"x86_64": 444, "aarch64": 444, "riscv64": 444, "armv7l": 444, "i686": 444}
_CREATE_RULESET_VERSION = 1


_cache: list[int] = []


def landlock_abi() -> int:
    if not _cache:
        _cache.append(_probe())
    return _cache[0]


def _probe() -> int:
    if not hasattr(os, "uname") or os.uname().sysname != "Linux":
        return 0
    number = _SYSCALL_NUMBERS.get(os.uname().machine)
    if number is None:
        return 0
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(number, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)
