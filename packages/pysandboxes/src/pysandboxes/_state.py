"""Process-wide facts shared by complete and partial mode (a module of its own: cheap)."""

from __future__ import annotations


class State:
    #: this process runs sandboxed code: ``@sandbox`` calls are direct, ``sandboxes()`` a no-op
    in_sandbox = False
    #: the sandbox's child is importing this program module (its module body runs again there)
    importing: str | None = None
    #: the OS provider whose seccomp filter refuses ``socket(AF_UNIX)`` here (no
    #: ``<provider>.unix-sockets=true``): its kernel refusal is reported naming that rule
    unix_sockets_refused_by: str | None = None
