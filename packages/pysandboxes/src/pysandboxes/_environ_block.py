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
``CONFIG_CHECKPOINT_RESTORE``, as distributions ship them). It sets every bound of the memory
map at once, the heap's end (``brk``) among them: that one is asked of the C library
(``sbrk(0)``, exact), and the request is made only while the process runs one thread (no other
``malloc`` can move it meanwhile). Where the kernel refuses it, or threads run, the old block is
still zeroed: nothing of it remains, and ``/proc/self/environ`` reads as the new variables
followed by zero bytes.

Cost: reading ``/proc/self/stat`` and four C calls (``_native``: no
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
            fields = [int(x) for x in f.read().rsplit(b")", 1)[1].split()[17:49]]
    except (OSError, ValueError):
        return False  # no /proc (unshare.proc=none): nobody reads the block through it
    # fields 20, 26-28 and 45-51 of proc(5): num_threads; start_code, end_code, start_stack;
    # start_data, end_data, start_brk, arg_start, arg_end, env_start, env_end
    threads = fields[0]
    start_code, end_code, start_stack = fields[6:9]
    start_data, end_data, start_brk, arg_start, arg_end, env_start, env_end = fields[25:32]
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
    if threads != 1:
        # PR_SET_MM_MAP sets the heap's end too: another thread's malloc could move it between
        # reading it and setting it. The old block is zeroed all the same.
        return False
    brk = c.sbrk0()  # exact: the heap's mapping may end further (an adjacent mapping merged)
    mm_map = struct.pack(
        "=11QQII",
        start_code,
        end_code,
        start_data,
        end_data,
        start_brk,
        brk,
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
