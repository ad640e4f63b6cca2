"""The process's own copy of its environment: what ``/proc/PID/environ`` shows.

``os.environ`` and the C library's ``environ`` are what a program normally reads, and
python-sb sets them to the ``env=`` result. The kernel keeps something else: the environment
the process was *started* with, a block of the stack between ``env_start`` and ``env_end``,
shown by ``/proc/self/environ`` (to ``cat``, to native code) whatever ``os.environ`` says. In
a fresh interpreter that block holds the launcher's variables (``PYSANDBOXES_*``, firejail's
``container=`` and ``SHELL``) and the interpreter's configuration (``PYTHON*``, the locale);
when the program runs in the ``python-sb`` process itself (``landlock``, ``none``), the whole
host environment.

:func:`replace` makes the block hold exactly the given environment: it writes it over the old
block (or, when it is longer, into memory of its own), zeroes what is left of the old one, and
moves ``env_start``/``env_end`` with ``prctl(PR_SET_MM, PR_SET_MM_MAP)`` — a request that needs
no privilege while the executable link is left alone (kernels built with
``CONFIG_CHECKPOINT_RESTORE``, as distributions ship them). Where the kernel refuses it, the
old block is still zeroed: nothing of it remains, and ``/proc/self/environ`` reads as the new
variables followed by zero bytes.

Cost: reading ``/proc/self/stat`` and ``/proc/self/maps`` and three C calls (``_native``: no
``ctypes`` import).
"""

from __future__ import annotations

import os
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

_PR_SET_MM = 35
_PR_SET_MM_MAP = 14
#: keeps a block that did not fit in the old one alive for the life of the process
_KEPT: list[Any] = []


def replace(environment: Mapping[str, str]) -> bool:
    """Make this process's environment block exactly ``environment``; True when the kernel
    moved its bounds (False: the old block was only zeroed, or there is no ``/proc``)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = [int(x) for x in f.read().rsplit(b")", 1)[1].split()[23:49]]
        with open("/proc/self/maps", "rb") as f:
            heap = [line for line in f.read().splitlines() if line.endswith(b"[heap]")]
    except (OSError, ValueError):
        return False  # no /proc (unshare.proc=none): nobody reads the block through it
    # fields 26-28 and 45-51 of proc(5): start_code, end_code, start_stack; start_data,
    # end_data, start_brk, arg_start, arg_end, env_start, env_end
    start_code, end_code, start_stack = fields[0:3]
    start_data, end_data, start_brk, arg_start, arg_end, env_start, env_end = fields[19:26]
    brk = int(heap[0].split(b"-", 1)[1].split(b" ", 1)[0], 16) if heap else start_brk
    block = b"".join(os.fsencode(k) + b"=" + os.fsencode(v) + b"\0" for k, v in environment.items())
    from ._native import C

    c = C()
    old_size = env_end - env_start
    if len(block) <= old_size:
        new_start = env_start
    else:
        buffer = c.buffer(len(block))
        _KEPT.append(buffer)
        new_start = c.address(buffer)
    c.memmove(new_start, block, len(block))
    if new_start == env_start:
        c.memset(env_start + len(block), 0, old_size - len(block))
    else:
        c.memset(env_start, 0, old_size)
    mm_map = struct.pack(
        "=11QQII",
        start_code,
        end_code,
        start_data,
        end_data,
        start_brk,
        max(brk, start_brk),
        start_stack,
        arg_start,
        arg_end,
        new_start,
        new_start + len(block),
        0,  # auxv: unchanged
        0,
        0xFFFFFFFF,  # exe_fd: unchanged (changing it would need a privilege)
    )
    return c.prctl(_PR_SET_MM, _PR_SET_MM_MAP, mm_map, len(mm_map), 0) == 0
